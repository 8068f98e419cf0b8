"""Labels are checked: a number is a number at load (any finite one, as in Ragas); a metric declared
binary (``kind``, or a run's judge through its ``label_scale``) has labels 0 or 1, a numeric one
with a range has labels in it; and the kind of a set follows the documented rule
(``annotations/_labels.py``), never a majority guess that raises."""

from __future__ import annotations

import json
import math
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from promptevolver.annotations import MetricAnnotation, SingleMetricAnnotation, UnusableSamplesWarning
from promptevolver.annotations._labels import LabelKind, LabelScale
from promptevolver.errors import AnnotationError

from .test_annotations import sample_dict, write_json

SETTINGS = settings(max_examples=60, deadline=None)
LOADERS = {
    "single": SingleMetricAnnotation.from_json,
    "multi": lambda path, **kw: MetricAnnotation.from_json(path, **kw)["m"],
}


def binary_items(n: int = 10) -> list[dict[str, Any]]:
    return [sample_dict(i % 2, is_accepted=i % 3 != 0, i=i) for i in range(n)]


def write(tmp_path: Path, items: list[Any], shape: str = "ragas") -> Path:
    """``items`` as a Ragas file (``{"m": items}``) or a JSONL file named ``m.jsonl``."""
    if shape == "jsonl":
        path = tmp_path / "m.jsonl"
        path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
        return path
    return write_json(tmp_path / "m.json", {"m": items})


def load_error(path: Path, loader: str = "single", **kwargs: Any) -> AnnotationError:
    with pytest.raises(AnnotationError) as info:
        LOADERS[loader](path, **kwargs)
    return info.value


def assert_located(err: AnnotationError, path: Path, index: int, field: str) -> None:
    assert (err.path, err.sample_index, err.field) == (str(path), index, field), str(err)
    message = str(err)
    assert str(path) in message and f"sample {index}" in message and f"field {field!r}" in message
    assert "\n" not in message and len(message) < 400


# --- One bad value among binary verdicts ------------------------------------------------------------

BAD_NUMBERS = [0.5, 2, -1, 1e308, -1e308, 5e-324, 0.999999, 1.0000001, 3]


@pytest.mark.parametrize("value", BAD_NUMBERS, ids=repr)
@pytest.mark.parametrize("field", ["metric_output", "target"])
@pytest.mark.parametrize("shape", ["ragas", "jsonl"])
@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_one_non_binary_number_among_verdicts_loads_and_fails_a_binary_metric(
    tmp_path: Path, value: float, field: str, shape: str, loader: str
) -> None:
    items = binary_items(20)
    items[13][field] = value
    path = write(tmp_path, items, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        loaded = LOADERS[loader](path)  # any finite number, as in Ragas: the set reads as numeric
    assert loaded.kind == "numeric" and loaded.samples[13][field] == value
    for err in (load_error(path, loader, kind="binary"), _scale_error(loaded, LabelScale("binary"))):
        assert_located(err, path, 13, field)
        assert "not a binary label" in str(err)
        assert "kind='numeric'" in str(err) or "metric type: rubric" in str(err)  # the way out
        assert f"{value:g}" in str(err) or repr(value) in str(err)


def _scale_error(dataset: SingleMetricAnnotation, scale: LabelScale) -> AnnotationError:
    with pytest.raises(AnnotationError) as info:
        dataset.with_scale(scale, judge="AspectCritic")
    return info.value


WRONG_TYPES: dict[str, list[Any]] = {
    "metric_output": ["1", "0.5", "yes", True, False, None, [1], {"v": 1}, "NaN", 10**400],
    "target": ["1", "x", True, False, [0], {"v": 0}, float("nan"), float("inf"), -float("inf")],
    "is_accepted": [1, 0, "true", "yes", None, 1.0, [True]],
}


@pytest.mark.parametrize(
    ("field", "value"),
    [(field, value) for field, values in WRONG_TYPES.items() for value in values],
    ids=lambda v: repr(v)[:20],
)
@pytest.mark.parametrize("shape", ["ragas", "jsonl"])
def test_a_value_of_the_wrong_type_is_a_located_error(
    tmp_path: Path, field: str, value: Any, shape: str
) -> None:
    """Strings are not numbers, booleans are not numbers, numbers are not booleans (no coercion)."""
    items = binary_items(8)
    items[5][field] = value
    path = write(tmp_path, items, shape)
    for loader in sorted(LOADERS):
        assert_located(load_error(path, loader), path, 5, field)


def test_an_infinite_metric_output_is_a_located_error(tmp_path: Path) -> None:
    items = binary_items(6)
    items[2]["metric_output"] = float("inf")  # json.dumps writes Infinity, which JSON readers accept
    path = write(tmp_path, items)
    assert_located(load_error(path), path, 2, "metric_output")


def test_the_first_offending_sample_is_named(tmp_path: Path) -> None:
    items = binary_items(30)
    for index, value in ((21, 0.3), (7, 2), (9, 0.5)):
        items[index]["metric_output"] = value
    items[4]["target"] = -1
    path = write(tmp_path, items)
    assert_located(load_error(path, kind="binary"), path, 4, "target")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        err = _scale_error(SingleMetricAnnotation.from_json(path), LabelScale("binary"))
    assert_located(err, path, 4, "target")
    assert "binary as AspectCritic gives verdicts 0 or 1" in str(err)


def test_nan_metric_output_is_the_failed_call_marker_not_a_label(tmp_path: Path) -> None:
    """Ragas records a failed judge call as NaN: the sample has no label (warned), the rest load."""
    items = binary_items(6)
    items[1]["metric_output"] = float("nan")
    items[3] = {**items[3], "metric_output": float("nan"), "target": 1}
    path = write(tmp_path, items)
    with pytest.warns(UnusableSamplesWarning, match=r"\[1\]"):
        dataset = SingleMetricAnnotation.from_json(path)
    assert dataset.is_binary and dataset.labels()[1] is None and dataset.labels()[3] == 1.0
    assert [u.sample_index for u in dataset.unusable_samples()] == [1]


# --- Binary or numeric ----------------------------------------------------------------------------


def test_a_rubric_and_a_score_metric_load_as_numeric(tmp_path: Path) -> None:
    rubric = [sample_dict(v, i=i) for i, v in enumerate([1, 3, 5, 4, 2, 5, 1])]
    scores = [sample_dict(v, i=i) for i, v in enumerate([0.25, 1, 0.8, 0, 0.5, 0.75])]
    for items in (rubric, scores):
        dataset = SingleMetricAnnotation.from_json(write(tmp_path, items))
        assert dataset.kind == "numeric" and not dataset.is_binary
        assert dataset.labels() == [float(i["metric_output"]) for i in items]


def test_a_score_metric_of_mostly_ones_loads_as_numeric(tmp_path: Path) -> None:
    """A faithfulness-like score that is often exactly 1.0 is numeric: no guess from the majority."""
    items = [sample_dict(v, i=i) for i, v in enumerate([1, 1, 1, 0.67, 1, 0, 0.5])]
    path = write(tmp_path, items)
    assert SingleMetricAnnotation.from_json(path).kind == "numeric"
    for loader in sorted(LOADERS):
        dataset = LOADERS[loader](path, kind="numeric")
        assert dataset.kind == "numeric" and dataset.labels()[3] == 0.67
    assert MetricAnnotation.from_json(path, kind={"m": "numeric"}).kinds == {"m": "numeric"}


def test_kind_binary_refuses_numeric_labels(tmp_path: Path) -> None:
    path = write(tmp_path, [sample_dict(v, i=i) for i, v in enumerate([0.2, 0.4, 0.9])])
    assert SingleMetricAnnotation.from_json(path).kind == "numeric"
    err = load_error(path, kind="binary")
    assert_located(err, path, 0, "metric_output")
    assert "declared binary" in str(err)


def test_the_kind_decides_the_label_of_a_rejected_sample(tmp_path: Path) -> None:
    items = [sample_dict(1, i=0), sample_dict(0, is_accepted=False, i=1), sample_dict(1, i=2)]
    path = write(tmp_path, items)
    assert SingleMetricAnnotation.from_json(path).labels() == [1.0, 1.0, 1.0]
    with pytest.warns(UnusableSamplesWarning):
        numeric = SingleMetricAnnotation.from_json(path, kind="numeric")
    assert numeric.labels() == [1.0, None, 1.0]


def test_a_subset_keeps_the_kind_of_its_set() -> None:
    """Labels do not change with the selection: a subset of 0/1 scores of a numeric set stays numeric."""
    items = [sample_dict(0.5, i=0), sample_dict(1, is_accepted=False, i=1), sample_dict(0.25, i=2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        dataset = SingleMetricAnnotation.model_validate({"name": "m", "samples": items})
    subset = dataset.select([1])
    assert (dataset.kind, subset.kind) == ("numeric", "numeric")
    assert subset.labels() == [dataset.labels()[1]] == [None]
    assert dataset.sample(2, random_seed=0).kind == dataset.train_test_split(1, random_seed=0)[1].kind


def test_the_kind_round_trips_through_to_json(tmp_path: Path) -> None:
    items = [sample_dict(v, i=i) for i, v in enumerate([1, 1, 0, 0.5])]
    dataset = SingleMetricAnnotation.from_json(write(tmp_path, items), kind="numeric")
    out = tmp_path / "out.json"
    dataset.to_json(out)
    assert json.loads(out.read_text(encoding="utf-8"))["kind"] == "numeric"
    assert SingleMetricAnnotation.from_json(out) == dataset


@pytest.mark.parametrize("kind", ["scores", 1, None])
def test_a_bad_kind_is_an_error(tmp_path: Path, kind: Any) -> None:
    path = write_json(tmp_path / "named.json", {"name": "m", "kind": kind, "samples": binary_items(3)})
    if kind is None:  # null: infer
        assert SingleMetricAnnotation.from_json(path).kind == "binary"
        return
    err = load_error(path)
    assert (err.path, err.field) == (str(path), "kind")
    with pytest.raises(AnnotationError, match="kind must be one of"):
        SingleMetricAnnotation.from_json(write(tmp_path, binary_items(3)), kind=kind)


def test_kind_for_a_metric_not_in_the_file_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, binary_items(3))
    with pytest.raises(AnnotationError, match=r"kind names metrics not in the file: \['mm'\]"):
        MetricAnnotation.from_json(path, kind={"mm": "numeric"})


def test_sets_built_in_memory_are_checked_against_a_declared_kind() -> None:
    items = binary_items(9)
    items[6]["metric_output"] = 0.5
    with pytest.raises(ValidationError, match=r"sample 6, field 'metric_output': 0.5 is not a binary label"):
        SingleMetricAnnotation.model_validate({"name": "m", "samples": items, "kind": "binary"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        assert SingleMetricAnnotation.model_validate({"name": "m", "samples": items}).kind == "numeric"
        assert MetricAnnotation.model_validate({"root": {"m": items}}).kinds == {"m": "numeric"}


RUBRIC_0_2 = [1, 1, 1, 0, 0, 0, 2, 2, 2]


@pytest.mark.parametrize("accepted", [True, False])
def test_a_0_2_rubric_of_mostly_0_and_1_is_a_numeric_set_not_an_error(tmp_path: Path, accepted: bool) -> None:
    """The issue's case: most labels are 0/1, the metric is a 0-2 rubric; no kind is guessed from that."""
    items = [sample_dict(v, is_accepted=accepted or i % 2 == 0, i=i) for i, v in enumerate(RUBRIC_0_2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        built = SingleMetricAnnotation(name="m", samples=items)  # type: ignore[arg-type]
        loaded = {name: load(write(tmp_path, items)) for name, load in LOADERS.items()}
    for dataset in (built, *loaded.values()):
        assert dataset.kind == "numeric" and [s.metric_output for s in dataset] == RUBRIC_0_2
        rubric = dataset.with_scale(LabelScale("numeric", 0, 2), judge="RubricJudge")
        assert rubric.kind == "numeric" and rubric.labels() == dataset.labels()


@pytest.mark.parametrize(
    ("scale", "values", "bad"),
    [
        (LabelScale("numeric", 1, 5), [1, 3, 5, 4, 7, 2], (4, 7)),
        (LabelScale("numeric", 1, 5), [1, 3, 5, 0.5, 2], (3, 0.5)),
        (LabelScale("numeric", 0, 1), [0, 0.25, 1, 1.5], (3, 1.5)),
        (LabelScale("numeric", 0, 2), RUBRIC_0_2 + [-1], (9, -1)),
        (LabelScale("binary"), RUBRIC_0_2, (6, 2)),
    ],
)
def test_a_value_outside_the_metrics_scale_is_a_located_error(
    tmp_path: Path, scale: LabelScale, values: list[float], bad: tuple[int, float]
) -> None:
    path = write(tmp_path, [sample_dict(v, i=i) for i, v in enumerate(values)])
    dataset = SingleMetricAnnotation.from_json(path)
    err = _scale_error(dataset, scale)
    assert_located(err, path, bad[0], "metric_output")
    assert f"{bad[1]:g}" in str(err)
    assert ("score range" in str(err)) == (scale.kind == "numeric")


def test_a_target_out_of_range_is_named_and_a_scale_without_range_takes_any_number(tmp_path: Path) -> None:
    items = [sample_dict(v, i=i) for i, v in enumerate([1, 2, 3, 4])]
    items[2]["target"] = 9
    path = write(tmp_path, items)
    dataset = SingleMetricAnnotation.from_json(path)
    assert_located(_scale_error(dataset, LabelScale("numeric", 1, 5)), path, 2, "target")
    assert dataset.with_scale(LabelScale("numeric")).labels() == [1.0, 2.0, 9.0, 4.0]


def test_binding_to_a_binary_metric_gives_rejected_samples_their_flipped_label() -> None:
    items = [sample_dict(v, is_accepted=i != 2, i=i) for i, v in enumerate([0, 1, 1])]
    numeric = SingleMetricAnnotation(name="m", samples=items, kind="numeric")  # type: ignore[arg-type]
    assert numeric.labels() == [0.0, 1.0, None]
    assert numeric.with_scale(LabelScale("binary")).labels() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("args", [("scores",), ("binary", 0, 1), ("numeric", 1, None), ("numeric", 5, 1)])
def test_a_bad_label_scale_is_refused(args: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError):
        LabelScale(*args)


# --- The whole class of inputs (hypothesis) -------------------------------------------------------

bad_numbers = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda v: v not in (0, 1)
) | st.integers(-(2**53), 2**53).filter(lambda v: v not in (0, 1))
wrong_types = st.one_of(
    st.text(max_size=5),
    st.booleans(),
    st.lists(st.integers(0, 1), max_size=2),
    st.dictionaries(st.sampled_from(["v"]), st.integers(0, 1), max_size=1),
)


@st.composite
def binary_set_with_one_bad_label(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int, str, Any]:
    n = draw(st.integers(3, 25))
    items = [
        sample_dict(draw(st.sampled_from([0, 1])), is_accepted=draw(st.booleans()), i=i) for i in range(n)
    ]
    for item in items:
        if draw(st.booleans()):
            item["target"] = draw(st.none() | st.sampled_from([0, 1]))
    index = draw(st.integers(0, n - 1))
    field = draw(st.sampled_from(["metric_output", "target"]))
    value = draw(bad_numbers | wrong_types | (st.just(None) if field == "metric_output" else st.nothing()))
    items[index][field] = value
    return items, index, field, value


@pytest.mark.slow
@SETTINGS
@given(case=binary_set_with_one_bad_label(), shape=st.sampled_from(["ragas", "jsonl"]))
def test_any_bad_label_among_binary_samples_is_named(
    case: tuple[list[dict[str, Any]], int, str, Any], shape: str
) -> None:
    """A wrong type at load whatever the kind; a number other than 0/1 once the metric is binary."""
    items, index, field, value = case
    wrong_type = not isinstance(value, (int, float)) or isinstance(value, bool)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        path = write(Path(tmp), items, shape)
        for loader in sorted(LOADERS):
            assert_located(load_error(path, loader, kind="binary"), path, index, field)
            if wrong_type:
                assert_located(load_error(path, loader), path, index, field)
            else:
                err = _scale_error(LOADERS[loader](path), LabelScale("binary"))
                assert_located(err, path, index, field)


label_values = st.sampled_from([0, 1, 0.0, 1.0]) | st.floats(-10, 10, allow_nan=False)


@pytest.mark.slow
@SETTINGS
@given(
    outputs=st.lists(label_values | st.just(math.nan), max_size=20),
    targets=st.lists(st.none() | label_values, max_size=20),
    kind=st.sampled_from([None, "binary", "numeric"]),
)
def test_the_kind_rule(outputs: list[float], targets: list[float | None], kind: LabelKind | None) -> None:
    """Given kind, else binary iff there are values and every one is 0 or 1; only a declared
    binary kind with another value is an error."""
    items = [sample_dict(i=i) | {"metric_output": v} for i, v in enumerate(outputs)]
    for item, target in zip(items, targets, strict=False):
        item["target"] = target
    values = [v for v in outputs if not math.isnan(v)] + [t for t in targets[: len(outputs)] if t is not None]
    binary_values = sum(v in (0, 1) for v in values)
    expected = kind or ("binary" if values and binary_values == len(values) else "numeric")
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), items)
        if expected == "binary" and binary_values < len(values):
            err = load_error(path, kind=kind)
            first = next(
                i
                for i, item in enumerate(items)
                if any(
                    item.get(f) is not None and not math.isnan(item[f]) and item[f] not in (0, 1)
                    for f in ("metric_output", "target")
                )
            )
            assert err.sample_index == first
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnusableSamplesWarning)
            dataset = SingleMetricAnnotation.from_json(path, kind=kind)
        assert dataset.kind == expected and dataset.is_binary == (expected == "binary")
