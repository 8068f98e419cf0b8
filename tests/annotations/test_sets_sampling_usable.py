"""SingleMetricAnnotation's sampling methods over :mod:`~promptevolver.annotations._sampling`
(sample, batches, stratified batches, split: seeded, in order, errors in the documented order)
and usable samples (reasons, the loader's warning, label arrays)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from promptevolver.annotations import (
    SampleAnnotation,
    SingleMetricAnnotation,
    UnusableSamplesWarning,
)
from promptevolver.annotations import _sampling as sampling
from promptevolver.annotations._labels import unusable_samples
from promptevolver.annotations._single import usable_label_array
from promptevolver.errors import AnnotationKeyError


def make_set(outputs: list[float], accepted: list[bool] | None = None) -> SingleMetricAnnotation:
    accepted = accepted or [True] * len(outputs)
    samples = [
        {"metric_input": {"user_input": f"q{i}"}, "metric_output": y, "is_accepted": a, "prompts": {}}
        for i, (y, a) in enumerate(zip(outputs, accepted))
    ]
    return SingleMetricAnnotation.model_validate({"name": "m", "samples": samples})


@pytest.fixture
def binary() -> SingleMetricAnnotation:
    return make_set([1, 0] * 10, [True, True, False] * 6 + [True, False])


def inputs(ds: SingleMetricAnnotation) -> list[str]:
    return [s.metric_input["user_input"] for s in ds]


def test_sample_is_seeded_distinct_in_order_and_stratified(binary: SingleMetricAnnotation) -> None:
    a = binary.sample(6, "label", 7)
    assert inputs(a) == inputs(binary.sample(6, "label", 7)) != inputs(binary.sample(6, "label", 8))
    keys = binary.stratify_keys("label")
    assert inputs(a) == [inputs(binary)[i] for i in sampling.sample_positions(keys, 6, 7)]
    positions = [inputs(binary).index(x) for x in inputs(a)]
    assert positions == sorted(set(positions)) and len(positions) == 6
    labels = binary.labels()
    assert sorted(labels[i] for i in positions).count(1.0) == round(6 * labels.count(1.0) / len(labels))
    assert a.name == binary.name and a.kind == binary.kind and a[0] is binary[positions[0]]


def test_errors_come_in_the_documented_order(binary: SingleMetricAnnotation) -> None:
    with pytest.raises(AnnotationKeyError):
        binary.sample(99, "no_such_key", 0)  # the key is checked before n
    with pytest.raises(ValueError, match="n must be in"):
        binary.sample(99, None, 0)
    with pytest.raises(ValueError, match="test_size"):
        binary.train_test_split(1.5, 0, "no_such_key")  # test_size before the key
    with pytest.raises(ValueError, match="batch_size"):
        binary.batch(0, False, 0)
    with pytest.raises(AnnotationKeyError):
        binary.stratified_batches(0, "no_such_key", False, False, 0)


def test_batches_and_split_cover_every_sample_once(binary: SingleMetricAnnotation) -> None:
    for cut in (
        binary.batch(6, False, 3),
        binary.stratified_batches(6, None, False, False, 3),
    ):
        assert sorted(x for batch in cut for x in inputs(batch)) == sorted(inputs(binary))
        assert [len(b) for b in cut] in ([6, 6, 6, 2], [5, 5, 5, 5])
    assert [len(b) for b in binary.batch(6, True, 3)] == [6, 6, 6]
    train, test = binary.train_test_split(0.25, 1, None)
    assert len(test) == 5 and sorted(inputs(train) + inputs(test)) == sorted(inputs(binary))


def test_unusable_samples_depend_on_the_kind_of_label() -> None:
    samples = [
        SampleAnnotation.model_validate(
            {"metric_input": {}, "metric_output": y, "is_accepted": a, "prompts": {}}
        )
        for y, a in ((1, False), (0.5, False), (math.nan, True), (1, True))
    ]
    # a rejected verdict flips into a label; a rejected score gives none
    assert [u.sample_index for u in unusable_samples(samples, binary=True)] == [2]
    assert [u.sample_index for u in unusable_samples(samples, binary=False)] == [0, 1, 2]


def test_the_warning_names_the_set_and_points_at_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    make_set([0.5, 0.2, 0.9], [True, False, False]).to_json(path)
    with pytest.warns(UnusableSamplesWarning, match=r"2 of 3 samples.*\[1, 2\]") as record:
        SingleMetricAnnotation.from_json(path)
    assert "'m'" in str(record[0].message) and str(path) in str(record[0].message)
    assert record[0].filename == __file__
    make_set([0.5, 0.2]).to_json(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SingleMetricAnnotation.from_json(path)  # all usable: silent


def test_usable_label_array_keeps_positions_and_labels_of_labelled_samples() -> None:
    idx, labels = usable_label_array(make_set([0.5, 0.2, 0.9], [True, False, True]))
    assert idx.dtype == np.int64 and labels.dtype == np.float64
    assert idx.tolist() == [0, 2] and labels.tolist() == [0.5, 0.9]
