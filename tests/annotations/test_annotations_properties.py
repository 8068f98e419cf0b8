"""Rules of the annotation API that hold for every annotation set: labels, round trips, sampling,
batches, splits, field names and error locations (hypothesis)."""

from __future__ import annotations

import json
import tempfile
import warnings
from collections import Counter
from collections.abc import Hashable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver.annotations import (
    FIELD_ALIASES,
    MetricAnnotation,
    SampleAnnotation,
    SingleMetricAnnotation,
    UnusableSamplesWarning,
)
from promptevolver.annotations._labels import LabelKind
from promptevolver.annotations._sampling import split_count
from promptevolver.errors import AnnotationError

SETTINGS = settings(max_examples=80, deadline=None)
FILE_SETTINGS = settings(max_examples=40, deadline=None)
KEYS = [None, "label", "metric_output", "is_accepted", "target", "metric_input.topic"]

texts = st.text(st.characters(codec="utf-8"), max_size=12)
outputs = st.fixed_dictionaries({"reason": texts, "verdict": st.sampled_from([0, 1])})
prompts = st.fixed_dictionaries(
    {"prompt_input": st.fixed_dictionaries({"user_input": texts})},
    optional={
        "prompt_output": outputs,
        "edited_output": st.none() | outputs,
        "is_accepted": st.booleans(),
    },
)


@st.composite
def raw_sample(draw: st.DrawFn, binary: bool) -> dict[str, Any]:
    value = st.sampled_from([0, 1]) if binary else st.floats(0, 1) | st.sampled_from([0, 1])
    item: dict[str, Any] = {
        "metric_input": {"user_input": draw(texts), "topic": draw(st.sampled_from(["a", "b", "c"]))},
        "metric_output": draw(value),
        "is_accepted": draw(st.booleans()),
    }
    if draw(st.booleans()):
        item["target"] = draw(st.none() | value)
    if draw(st.booleans()):
        item["prompts"] = draw(st.dictionaries(st.sampled_from(["p", "q"]), prompts, max_size=2))
    if draw(st.booleans()):
        item["annotator"] = draw(texts)
    return item


@st.composite
def raw_samples(draw: st.DrawFn, min_size: int = 0, max_size: int = 30) -> list[dict[str, Any]]:
    binary = draw(st.booleans())
    return draw(st.lists(raw_sample(binary), min_size=min_size, max_size=max_size))


def kind_of(items: list[dict[str, Any]]) -> LabelKind:
    """The kind a generated set is: binary when it has label values and all are 0 or 1."""
    values = [i["metric_output"] for i in items] + [i["target"] for i in items if i.get("target") is not None]
    return "binary" if values and all(v in (0, 1) for v in values) else "numeric"


def build(items: list[dict[str, Any]]) -> SingleMetricAnnotation:
    return SingleMetricAnnotation.model_validate({"name": "m", "samples": items, "kind": kind_of(items)})


def positions(subset: SingleMetricAnnotation, full: SingleMetricAnnotation) -> list[int]:
    index = {id(s): i for i, s in enumerate(full)}
    return [index[id(s)] for s in subset]


def oracle_label(item: dict[str, Any], binary: bool) -> float | None:
    if item.get("target") is not None:
        return float(item["target"])
    if item["is_accepted"]:
        return float(item["metric_output"])
    return 1.0 - item["metric_output"] if binary else None


def quota_ok(counts: Counter[Hashable], sizes: Counter[Hashable], n: int, total: int) -> bool:
    """Each class's count is its proportional quota ±1 (exact arithmetic)."""
    return all(abs(counts[c] - Fraction(n * size, total)) < 1 for c, size in sizes.items())


# --- Labels -------------------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(items=raw_samples())
def test_labels_follow_the_rule_and_unusable_samples_are_the_rest(items: list[dict[str, Any]]) -> None:
    dataset = build(items)
    binary = kind_of(items) == "binary"
    assert dataset.is_binary == binary
    assert dataset.labels() == [oracle_label(item, binary) for item in items]
    unusable = [u.sample_index for u in dataset.unusable_samples()]
    assert sorted(unusable + dataset.usable_indices()) == list(range(len(items)))
    assert all(dataset.labels()[i] is None for i in unusable)


# --- Round trips --------------------------------------------------------------------------------


@pytest.mark.slow
@FILE_SETTINGS
@given(items=raw_samples())
def test_files_round_trip_exactly(items: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        source = Path(tmp) / "source.json"
        source.write_text(json.dumps({"m": items}), encoding="utf-8")
        kind = kind_of(items)
        loaded = MetricAnnotation.from_json(source, kind={"m": kind})
        out = Path(tmp) / "out.json"
        loaded.to_json(out)
        assert json.loads(out.read_text(encoding="utf-8")) == {"m": items}  # same JSON value
        assert MetricAnnotation.from_json(out, kind=kind) == loaded

        single = loaded["m"]
        assert single.kind == kind
        single.to_json(out)
        assert json.loads(out.read_text(encoding="utf-8")) == {"name": "m", "kind": kind, "samples": items}
        assert SingleMetricAnnotation.from_json(out) == single  # the file holds the kind
        jsonl = Path(tmp) / "m.jsonl"
        single.to_jsonl(jsonl)
        assert SingleMetricAnnotation.from_json(jsonl, kind=kind) == single


# --- Sampling -----------------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(items=raw_samples(), key=st.sampled_from(KEYS), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_sample_draws_exactly_n_stratified(
    items: list[dict[str, Any]], key: str | None, data: st.DataObject, seed: int
) -> None:
    dataset = build(items)
    n = data.draw(st.integers(0, len(items)))
    chosen = positions(dataset.sample(n, stratify_key=key, random_seed=seed), dataset)
    assert len(chosen) == n == len(set(chosen))
    assert chosen == positions(dataset.sample(n, stratify_key=key, random_seed=seed), dataset)
    if key is None:
        return
    classes = dataset.stratify_keys(key)
    sizes, counts = Counter(classes), Counter(classes[i] for i in chosen)
    if n >= len(sizes):
        assert set(counts) == set(sizes)
    if n < len(sizes) or all(Fraction(n * s, len(items)) >= 1 for s in sizes.values()):
        assert quota_ok(counts, sizes, n, len(items))


@pytest.mark.slow
@SETTINGS
@given(items=raw_samples(), extra=st.integers(1, 5))
def test_sample_sizes_out_of_range_are_errors(items: list[dict[str, Any]], extra: int) -> None:
    dataset = build(items)
    for n in (-extra, len(items) + extra):
        with pytest.raises(ValueError, match="n must be in"):
            dataset.sample(n, random_seed=0)


@pytest.mark.slow
@SETTINGS
@given(
    items=raw_samples(),
    key=st.sampled_from(KEYS),
    batch_size=st.integers(1, 12),
    drop_last=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_stratified_batches_partition_and_mirror_the_classes(
    items: list[dict[str, Any]], key: str | None, batch_size: int, drop_last: bool, seed: int
) -> None:
    dataset = build(items)
    n = len(items)
    batches = dataset.stratified_batches(batch_size, key, drop_last_batch=drop_last, random_seed=seed)
    assert [positions(b, dataset) for b in batches] == [
        positions(b, dataset)
        for b in dataset.stratified_batches(batch_size, key, drop_last, random_seed=seed)
    ]
    flat = [i for b in batches for i in positions(b, dataset)]
    assert len(flat) == len(set(flat))  # disjoint
    if drop_last:
        assert len(batches) == n // batch_size and all(len(b) == batch_size for b in batches)
    else:
        assert len(batches) == -(-n // batch_size)
        assert sorted(flat) == list(range(n))  # every sample exactly once
        assert all(0 < len(b) <= batch_size for b in batches)
    classes = dataset.stratify_keys(key)
    kept = Counter(classes[i] for i in flat)
    for batch in batches:
        counts = Counter(classes[i] for i in positions(batch, dataset))
        assert all(abs(counts[c] - Fraction(size, len(batches))) < 1 for c, size in kept.items())
        assert all(counts[c] >= 1 for c, size in kept.items() if size >= len(batches))


@pytest.mark.slow
@SETTINGS
@given(items=raw_samples(), batch_size=st.integers(1, 12), drop_last=st.booleans(), seed=st.integers(0, 99))
def test_replace_fills_every_batch(
    items: list[dict[str, Any]], batch_size: int, drop_last: bool, seed: int
) -> None:
    dataset = build(items)
    n = len(items)
    batches = dataset.stratified_batches(batch_size, "label", drop_last, True, random_seed=seed)
    for batch in batches:
        pos = positions(batch, dataset)
        assert len(pos) == min(batch_size, n) == len(set(pos))
    if not drop_last:
        assert {i for b in batches for i in positions(b, dataset)} == set(range(n))


@pytest.mark.slow
@SETTINGS
@given(items=raw_samples(), batch_size=st.integers(1, 12), drop_last=st.booleans(), seed=st.integers(0, 99))
def test_batch_shuffles_and_partitions(
    items: list[dict[str, Any]], batch_size: int, drop_last: bool, seed: int
) -> None:
    dataset = build(items)
    batches = dataset.batch(batch_size, drop_last, random_seed=seed)
    flat = [i for b in batches for i in positions(b, dataset)]
    assert len(flat) == len(set(flat))
    full, rest = divmod(len(items), batch_size)
    assert [len(b) for b in batches] == [batch_size] * full + ([rest] if rest and not drop_last else [])
    assert [positions(b, dataset) for b in dataset.batch(batch_size, drop_last, seed)] == [
        positions(b, dataset) for b in batches
    ]


@pytest.mark.slow
@SETTINGS
@given(items=raw_samples(min_size=2), key=st.sampled_from(KEYS), data=st.data(), seed=st.integers(0, 99))
def test_train_test_split_is_disjoint_covering_and_stratified(
    items: list[dict[str, Any]], key: str | None, data: st.DataObject, seed: int
) -> None:
    dataset = build(items)
    n = len(items)
    test_size = data.draw(st.integers(1, n - 1) | st.floats(0.01, 0.99))
    ungrouped = {"stratify_key": key, "group_key": "sample"}  # exact sizes: no two samples grouped
    train, test = dataset.train_test_split(test_size=test_size, random_seed=seed, **ungrouped)
    tr, te = positions(train, dataset), positions(test, dataset)
    assert sorted(tr + te) == list(range(n)) and not set(tr) & set(te)
    assert tr == sorted(tr) and te == sorted(te)
    assert len(te) == split_count(test_size, n)
    again = dataset.train_test_split(test_size=test_size, random_seed=seed, **ungrouped)
    assert (positions(again[0], dataset), positions(again[1], dataset)) == (tr, te)
    classes = dataset.stratify_keys(key)
    sizes, counts = Counter(classes), Counter(classes[i] for i in te)
    if len(te) >= len(sizes):
        assert set(counts) == set(sizes)
    if len(te) < len(sizes) or all(Fraction(len(te) * s, n) >= 1 for s in sizes.values()):
        assert quota_ok(counts, sizes, len(te), n)


# --- Field names and errors ---------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(
    chosen=st.dictionaries(st.sampled_from(sorted(FIELD_ALIASES)), texts | st.lists(texts, max_size=3)),
    others=st.dictionaries(st.sampled_from(["notes", "score", "rubrics"]), texts),
)
def test_other_libraries_field_names(chosen: dict[str, Any], others: dict[str, Any]) -> None:
    targets = [FIELD_ALIASES[k] for k in chosen]
    inputs = {**chosen, **others}
    item = {"metric_input": inputs, "metric_output": 1, "is_accepted": True, "prompts": {}}
    if len(set(targets)) < len(targets):  # two aliases of one field
        with pytest.raises(ValueError, match="given twice"):
            SampleAnnotation.model_validate(item)
        return
    got = SampleAnnotation.model_validate(item).metric_input
    assert set(got) == set(targets) | set(others)
    for alias, value in chosen.items():
        name = FIELD_ALIASES[alias]
        wrapped = name.endswith("_contexts") and isinstance(value, str)
        assert got[name] == ([value] if wrapped else value)
    assert all(got[k] == v for k, v in others.items())


BREAKS = {
    "metric_output": "high",
    "is_accepted": "maybe",
    "metric_input": 3,
    "target": "x",
    "prompts": [1],
}


@pytest.mark.slow
@FILE_SETTINGS
@given(items=raw_samples(min_size=1), data=st.data())
def test_every_malformed_sample_is_located(items: list[dict[str, Any]], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(items) - 1))
    field = data.draw(st.sampled_from(sorted(BREAKS)))
    items[index] = {**items[index], field: BREAKS[field]}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "broken.jsonl"
        path.write_text("\n".join(json.dumps(item) for item in items), encoding="utf-8")
        with pytest.raises(AnnotationError) as info:
            SingleMetricAnnotation.from_json(path, kind=kind_of(items))
    err = info.value
    assert (err.path, err.metric, err.sample_index) == (str(path), "broken", index)
    assert err.field is not None and err.field.split(".")[0] == field
    assert all(part in str(err) for part in (str(path), f"sample {index}", field))
    assert len(str(err)) < 400  # a located message, not a raw validation dump
