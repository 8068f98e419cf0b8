"""Annotation JSON is read strictly: a key given twice in one object is an error naming the key and
where it is (file, metric, sample index, field path), and nesting too deep for Python's JSON
reader is an error naming the file, never a RecursionError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver.annotations import MetricAnnotation, SingleMetricAnnotation
from promptevolver.annotations import _io as io
from promptevolver.errors import AnnotationError

from .test_annotations import AC_FILE, HELP_FILE, sample_dict

SETTINGS = settings(max_examples=60, deadline=None)
Trail = tuple[str | int, ...]


def dumps(value: Any, repeat: tuple[Trail, str, Any] | None = None, trail: Trail = ()) -> str:
    """JSON text of ``value``; ``repeat = (trail, key, value)`` adds ``key`` a second time to the
    object at ``trail`` (after the first one), which ``json.dumps`` cannot write."""
    if isinstance(value, dict):
        pairs = [(k, dumps(v, repeat, (*trail, k))) for k, v in value.items()]
        if repeat is not None and repeat[0] == trail:
            pairs.append((repeat[1], json.dumps(repeat[2])))
        return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v, repeat, (*trail, i)) for i, v in enumerate(value)) + "]"
    return json.dumps(value)


def error_of(path: Path, loader: Any = SingleMetricAnnotation.from_json, **kwargs: Any) -> AnnotationError:
    with pytest.raises(AnnotationError) as info:
        loader(path, **kwargs)
    err = info.value
    assert err.path == str(path) and str(path) in str(err)
    assert "\n" not in str(err) and len(str(err)) < 400
    return err


def items() -> list[dict[str, Any]]:
    prompt = {"prompt_input": {"user_input": "q"}, "prompt_output": {"reason": "r", "verdict": 1}}
    return [sample_dict(i % 2, i=i) | {"prompts": {"p": prompt}} for i in range(4)]


# --- Repeated keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize("loader", [SingleMetricAnnotation.from_json, MetricAnnotation.from_json])
def test_a_metric_given_twice_is_an_error(tmp_path: Path, loader: Any) -> None:
    """Before: the last list won and the first metric's samples vanished without a word."""
    path = tmp_path / "twice.json"
    path.write_text(dumps({"m": items()}, repeat=((), "m", items()[:3])), encoding="utf-8")
    err = error_of(path, loader)
    assert "metric 'm' is given twice" in str(err)


@pytest.mark.parametrize(
    ("trail", "key", "field"),
    [
        (("m", 2), "metric_output", "metric_output"),
        (("m", 0), "is_accepted", "is_accepted"),
        (("m", 3, "metric_input"), "user_input", "metric_input.user_input"),
        (("m", 1, "prompts", "p", "prompt_output"), "verdict", "prompts.p.prompt_output.verdict"),
        (("m", 1, "prompts"), "p", "prompts.p"),
    ],
)
def test_a_field_given_twice_is_named_with_its_sample(
    tmp_path: Path, trail: Trail, key: str, field: str
) -> None:
    path = tmp_path / "fields.json"
    path.write_text(dumps({"m": items()}, repeat=(trail, key, 0)), encoding="utf-8")
    for loader in (SingleMetricAnnotation.from_json, MetricAnnotation.from_json):
        err = error_of(path, loader)
        assert (err.metric, err.sample_index, err.field) == ("m", trail[1], field)
        assert f"key {key!r} is given twice" in str(err)


def test_repeated_keys_in_the_named_shape(tmp_path: Path) -> None:
    named = {"name": "m", "samples": items()}
    path = tmp_path / "named.json"
    path.write_text(dumps(named, repeat=(("samples", 2), "target", 1)), encoding="utf-8")
    err = error_of(path)
    assert (err.metric, err.sample_index, err.field) == ("m", 2, "target")
    path.write_text(dumps(named, repeat=((), "samples", [])), encoding="utf-8")
    err = error_of(path)
    assert (err.sample_index, err.field) == (None, "samples")


def test_a_repeated_key_in_a_jsonl_line_names_the_line_and_sample(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    lines = [json.dumps(item) for item in items()]
    lines[2] = dumps(items()[2], repeat=(("metric_input",), "response", "x"))
    path.write_text(lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")  # a blank line 2
    err = error_of(path)
    assert (err.sample_index, err.field) == (2, "metric_input.response")
    assert "on line 4" in str(err)


def test_a_key_repeated_three_times_says_so(tmp_path: Path) -> None:
    path = tmp_path / "three.json"
    text = dumps({"m": items()}, repeat=(("m", 0), "metric_output", 1))
    path.write_text(text.replace('"metric_output": 1', '"metric_output": 1, "metric_output": 0', 1), "utf-8")
    assert "is given 3 times" in str(error_of(path))


@pytest.mark.parametrize("path", [AC_FILE, HELP_FILE], ids=["answer_correctness", "helpfulness"])
def test_files_without_repeated_keys_load(path: Path, tmp_path: Path) -> None:
    SingleMetricAnnotation.from_json(path)
    quoted = items()
    quoted[0]["metric_input"]["response"] = '{"a": 1, "a": 2}'  # a repeated key inside a string is text
    copy = tmp_path / "quoted.json"
    copy.write_text(json.dumps({"m": quoted}), encoding="utf-8")
    assert SingleMetricAnnotation.from_json(copy)[0].metric_input["response"] == '{"a": 1, "a": 2}'


def objects(value: Any, trail: Trail = ()) -> list[tuple[Trail, list[str]]]:
    """(trail, keys) of every non-empty object in ``value``."""
    found: list[tuple[Trail, list[str]]] = []
    if isinstance(value, dict):
        if value:
            found.append((trail, list(value)))
        for key, child in value.items():
            found += objects(child, (*trail, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += objects(child, (*trail, index))
    return found


texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
extras = st.recursive(
    st.none() | st.integers() | texts,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3),
    max_leaves=6,
)


@st.composite
def annotation_file(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(["m", "n", "o"]), min_size=1, max_size=3, unique=True))
    result: dict[str, Any] = {}
    for name in names:
        samples = []
        for i in range(draw(st.integers(1, 4))):
            sample = sample_dict(draw(st.sampled_from([0, 1])), is_accepted=draw(st.booleans()), i=i)
            sample["metric_input"]["extra"] = draw(extras)
            if draw(st.booleans()):
                sample["prompts"] = {"p": {"prompt_input": {"user_input": draw(texts)}, "note": draw(extras)}}
            samples.append(sample)
        result[name] = samples
    return result


@pytest.mark.slow
@SETTINGS
@given(raw=annotation_file(), data=st.data())
def test_any_repeated_key_is_named_where_it_is(raw: dict[str, Any], data: st.DataObject) -> None:
    trail, keys = data.draw(st.sampled_from(objects(raw)))
    key = data.draw(st.sampled_from(keys))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.json"
        path.write_text(dumps(raw, repeat=(trail, key, data.draw(extras))), encoding="utf-8")
        err = error_of(path, MetricAnnotation.from_json)
    if not trail:
        assert f"metric {key!r} is given twice" in str(err)
        return
    assert (err.metric, err.sample_index) == (trail[0], trail[1])
    assert err.field == ".".join(str(part) for part in (*trail[2:], key))


# --- Nesting --------------------------------------------------------------------------------------

DEPTH = 100_000


def test_nesting_too_deep_names_the_file(tmp_path: Path) -> None:
    whole = tmp_path / "deep.json"
    whole.write_text("[" * DEPTH + "]" * DEPTH, encoding="utf-8")
    inside = tmp_path / "deep_inside.json"
    inside.write_text('{"m": [{"metric_input": {"x": ' + "[" * DEPTH + "]" * DEPTH + "}}]}", encoding="utf-8")
    objects_deep = tmp_path / "deep_objects.json"
    objects_deep.write_text('{"a": ' * DEPTH + "1" + "}" * DEPTH, encoding="utf-8")
    for path in (whole, inside, objects_deep):
        for loader in (SingleMetricAnnotation.from_json, MetricAnnotation.from_json):
            assert "nested too deeply" in str(error_of(path, loader))


def test_nesting_too_deep_in_a_jsonl_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    deep = (
        '{"metric_input": {"x": ' + "[" * DEPTH + "]" * DEPTH + '}, "metric_output": 1, "is_accepted": true}'
    )
    path.write_text(json.dumps(items()[0]) + "\n" + deep + "\n", encoding="utf-8")
    err = error_of(path)
    assert err.sample_index == 1 and "on line 2" in str(err)


def test_ordinary_nesting_loads(tmp_path: Path) -> None:
    """500 levels: more than the fast reader takes (200), well within Python's."""
    path = tmp_path / "nested.json"
    item = sample_dict(1) | {"trace": json.loads("[" * 500 + "]" * 500)}
    path.write_text(json.dumps({"m": [item]}), encoding="utf-8")
    assert len(SingleMetricAnnotation.from_json(path)) == 1


# --- The fast reader reads as Python's does -----------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats()
    | st.text(st.characters(codec="utf-8"), max_size=10),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=4), c, max_size=4),
    max_leaves=20,
)


@pytest.mark.slow
@SETTINGS
@given(value=json_values, ascii_only=st.booleans(), indent=st.sampled_from([None, 2]))
def test_the_fast_reader_gives_what_pythons_reader_gives(
    value: Any, ascii_only: bool, indent: int | None
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    got = io._parse_bytes(text.encode("utf-8"), Path("v.json"))
    assert json.dumps(got) == json.dumps(json.loads(text))  # NaN-safe equality, types included
    assert type(got) is type(json.loads(text))


def test_what_the_fast_reader_refuses_python_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.json"
    item = sample_dict(1)
    item["metric_input"]["response"] = "\ud800"  # a lone surrogate: valid for Python's reader
    path.write_text(json.dumps({"m": [item]}), encoding="utf-8")
    assert SingleMetricAnnotation.from_json(path)[0].metric_input["response"] == "\ud800"


def test_errors_of_the_fallback_reader_name_the_file_and_line(tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.json"
    crlf.write_bytes(b'{"m": [\r\n  {"metric_input": {},\r\n   "metric_output": 1,,\r\n}]}')
    assert "line 3" in str(error_of(crlf))
    huge = tmp_path / "huge_int.json"
    huge.write_text('{"m": [{"metric_input": {}, "metric_output": ' + "1" * 5000 + "}]}", encoding="utf-8")
    assert "not valid JSON" in str(error_of(huge))


@pytest.mark.parametrize(
    ("index", "change", "shown"),
    [
        (1, lambda s: s.pop("is_accepted"), None),  # missing: its "input" is the whole sample
        (2, lambda s: s.pop("metric_input"), None),
        (0, lambda s: s.update(is_accepted="maybe"), "'maybe'"),  # a wrong value is shown
        (3, lambda s: s.update(is_accepted="x" * 200), "'" + "x" * 79 + "…"),  # cut, and says so
    ],
)
def test_a_bad_field_is_one_line_showing_the_value_only_when_there_is_one(
    tmp_path: Path, index: int, change: Any, shown: str | None
) -> None:
    samples = items()
    change(samples[index])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"m": samples}), encoding="utf-8")
    err = error_of(path)
    assert err.sample_index == index and "\n" not in str(err)
    if shown is None:
        assert "Field required" in str(err) and "(input:" not in str(err)
    else:
        assert f"(input: {shown}" in str(err)
