"""The helpers SingleMetricAnnotation's methods delegate to, called directly: subsets (sample,
batches, stratified batches, split) and usable samples (reasons, warning, label arrays)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from promptevolver.annotations import (
    SampleAnnotation,
    SingleMetricAnnotation,
    UnusableSamplesWarning,
    subsets,
    usable,
)
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
    a = subsets.sample(binary, 6, "label", 7)
    assert inputs(a) == inputs(subsets.sample(binary, 6, "label", 7)) == inputs(binary.sample(6, "label", 7))
    positions = [inputs(binary).index(x) for x in inputs(a)]
    assert positions == sorted(set(positions)) and len(positions) == 6
    labels = binary.labels()
    assert sorted(labels[i] for i in positions).count(1.0) == round(6 * labels.count(1.0) / len(labels))
    assert a.name == binary.name and a.kind == binary.kind and a[0] is binary[positions[0]]


def test_errors_come_in_the_documented_order(binary: SingleMetricAnnotation) -> None:
    with pytest.raises(AnnotationKeyError):
        subsets.sample(binary, 99, "no_such_key", 0)  # the key is checked before n
    with pytest.raises(ValueError, match="n must be in"):
        subsets.sample(binary, 99, None, 0)
    with pytest.raises(ValueError, match="test_size"):
        subsets.train_test_split(binary, 1.5, 0, "no_such_key")  # test_size before the key
    with pytest.raises(ValueError, match="batch_size"):
        subsets.batches(binary, 0, False, 0)
    with pytest.raises(AnnotationKeyError):
        subsets.stratified_batches(binary, 0, "no_such_key", False, False, 0)


def test_batches_and_split_cover_every_sample_once(binary: SingleMetricAnnotation) -> None:
    for cut in (
        subsets.batches(binary, 6, False, 3),
        subsets.stratified_batches(binary, 6, None, False, False, 3),
    ):
        assert sorted(x for batch in cut for x in inputs(batch)) == sorted(inputs(binary))
        assert [len(b) for b in cut] in ([6, 6, 6, 2], [5, 5, 5, 5])
    assert [len(b) for b in subsets.batches(binary, 6, True, 3)] == [6, 6, 6]
    train, test = subsets.train_test_split(binary, 0.25, 1, None)
    assert len(test) == 5 and sorted(inputs(train) + inputs(test)) == sorted(inputs(binary))


def test_unusable_samples_depend_on_the_kind_of_label() -> None:
    samples = [
        SampleAnnotation.model_validate(
            {"metric_input": {}, "metric_output": y, "is_accepted": a, "prompts": {}}
        )
        for y, a in ((1, False), (0.5, False), (math.nan, True), (1, True))
    ]
    # a rejected verdict flips into a label; a rejected score gives none
    assert [u.sample_index for u in usable.unusable_samples(samples, binary=True)] == [2]
    assert [u.sample_index for u in usable.unusable_samples(samples, binary=False)] == [0, 1, 2]


def test_the_warning_names_the_set_and_points_at_the_caller() -> None:
    ds = make_set([0.5, 0.2, 0.9], [True, False, False])
    with pytest.warns(UnusableSamplesWarning, match=r"2 of 3 samples.*\[1, 2\]") as record:
        usable.warn_unusable(ds)
    assert "'m'" in str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        usable.warn_unusable(make_set([0.5, 0.2]))  # all usable: silent


def test_usable_label_array_keeps_positions_and_labels_of_labelled_samples() -> None:
    idx, labels = usable.usable_label_array(make_set([0.5, 0.2, 0.9], [True, False, True]))
    assert idx.dtype == np.int64 and labels.dtype == np.float64
    assert idx.tolist() == [0, 2] and labels.tolist() == [0.5, 0.9]
