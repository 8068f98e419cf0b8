"""Grouped, duplicate-aware splits (annotations/_sampling.py): samples sharing their input but for
the response are one group, and no split, K-fold split or run's train/validation split puts one
group on both sides; duplicates with conflicting labels are found; ``evaluate`` scores exactly the
samples the run held out."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver import AspectCritic, SingleMetricAnnotation
from promptevolver.annotations import conflicting_duplicates, group_keys, stratified_group_kfold
from promptevolver.annotations._sampling import stratified_split
from promptevolver.config._models import GeneticConfig
from promptevolver.errors import AnnotationKeyError
from promptevolver.optimizers._split import make_split

SETTINGS = settings(max_examples=80, deadline=None)
#: A run that holds a validation part out at 80 samples (small data refits below 100 by default).
HELD_OUT = GeneticConfig(refit_below=0)


def _set(rows: Sequence[tuple[str, str, int]], **extra_fields: list[object]) -> SingleMetricAnnotation:
    """(question, response, label) rows as accepted binary samples."""
    samples = []
    for i, (question, response, label) in enumerate(rows):
        sample = {
            "metric_input": {"user_input": question, "response": response, "reference": f"ref {question}"},
            "metric_output": label,
            "is_accepted": True,
        }
        sample.update({k: v[i] for k, v in extra_fields.items()})
        samples.append(sample)
    return SingleMetricAnnotation.model_validate({"name": "m", "samples": samples, "kind": "binary"})


def _many_responses(n_questions: int = 40, per_question: int = 4) -> SingleMetricAnnotation:
    """Several responses to each question (as a model-comparison export holds), labels mixed."""
    rows = [
        (f"question {q}", f"response {r} to {q}", (q + r) % 2)
        for q in range(n_questions)
        for r in range(per_question)
    ]
    return _set(rows)


def _straddling(groups: Sequence[Hashable], first: Sequence[int], second: Sequence[int]) -> set[Hashable]:
    return {groups[i] for i in first} & {groups[i] for i in second}


# --- group keys -------------------------------------------------------------------------------------


def test_the_default_group_is_the_input_without_the_response():
    data = _set([("q1", "a", 1), ("q1", "b", 0), ("q2", "a", 1)])
    keys = data.group_keys()
    assert keys[0] == keys[1] != keys[2]
    assert len(set(data.group_keys("sample"))) == 3


def test_pairwise_responses_are_left_out_of_the_group_too():
    samples = [
        {
            "metric_input": {"user_input": "q", "response_a": a, "response_b": b},
            "metric_output": 1,
            "is_accepted": True,
        }
        for a, b in (("x", "y"), ("y", "z"))
    ]
    keys = group_keys(
        [SingleMetricAnnotation.model_validate({"name": "p", "samples": samples})[i] for i in (0, 1)]
    )
    assert keys[0] == keys[1]


def test_a_named_key_groups_by_its_value_and_a_sample_without_it_is_alone():
    data = _set([("q1", "a", 1), ("q2", "b", 0), ("q3", "c", 1)], item_id=["x", "x", None])
    keys = data.group_keys("item_id")
    assert keys[0] == keys[1] and keys[2] not in (keys[0],)
    by_field = data.group_keys("metric_input.reference")
    assert len(set(by_field)) == 3


def test_an_unknown_group_key_names_the_valid_forms():
    data = _set([("q1", "a", 1), ("q2", "b", 0)])
    with pytest.raises(AnnotationKeyError, match=r"unknown group_key 'nope'.*'input'.*'sample'"):
        data.group_keys("nope")
    with pytest.raises(AnnotationKeyError, match=r"unknown group_key 'metric_input.nope'"):
        data.group_keys("metric_input.nope")


def test_duplicates_with_conflicting_labels_are_found():
    data = _set([("q1", "a", 1), ("q1", "a", 0), ("q1", "b", 1), ("q2", "a", 1), ("q2", "a", 1)])
    assert data.conflicting_duplicates() == [[0, 1]]
    assert conflicting_duplicates(data.samples, [1, None, 1, 1, 1]) == []


# --- the arithmetic -----------------------------------------------------------------------------------

labelled_groups = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9)), min_size=2, max_size=60)


@pytest.mark.slow
@SETTINGS
@given(rows=labelled_groups, fraction=st.floats(0.1, 0.9), seed=st.integers(0, 2**32 - 1))
def test_a_grouped_split_never_straddles_a_group(rows, fraction, seed):
    keys, groups = [r[0] for r in rows], [r[1] for r in rows]
    if len(set(groups)) < 2:
        with pytest.raises(ValueError, match="one group"):
            stratified_split(keys, 1, np.random.default_rng(seed), groups)
        return
    n_test = min(max(1, round(fraction * len(keys))), len(keys) - 1)
    train, test = stratified_split(keys, n_test, np.random.default_rng(seed), groups)
    assert sorted(train + test) == list(range(len(keys)))
    assert train and test
    assert not _straddling(groups, train, test)


def test_without_shared_groups_the_split_is_the_ungrouped_one():
    keys = [i % 3 for i in range(50)]
    grouped = stratified_split(keys, 15, np.random.default_rng(7), list(range(50)))
    assert grouped == stratified_split(keys, 15, np.random.default_rng(7))
    assert len(grouped[1]) == 15


def test_a_grouped_split_keeps_near_the_size_and_the_classes():
    keys = [i % 2 for i in range(200)]
    groups = [i // 4 for i in range(200)]
    train, test = stratified_split(keys, 60, np.random.default_rng(3), groups)
    assert abs(len(test) - 60) <= 4
    assert abs(sum(keys[i] for i in test) / len(test) - 0.5) < 0.1


@pytest.mark.slow
@SETTINGS
@given(rows=labelled_groups, n_splits=st.integers(2, 5), seed=st.integers(0, 2**32 - 1))
def test_kfold_test_parts_cover_every_item_once_and_keep_groups_whole(rows, n_splits, seed):
    keys, groups = [r[0] for r in rows], [r[1] for r in rows]
    if len(set(groups)) < n_splits:
        with pytest.raises(ValueError, match="folds of"):
            stratified_group_kfold(keys, groups, n_splits, np.random.default_rng(seed))
        return
    folds = stratified_group_kfold(keys, groups, n_splits, np.random.default_rng(seed))
    assert len(folds) == n_splits
    tests = [i for _, test in folds for i in test]
    assert sorted(tests) == list(range(len(keys)))
    for train, test in folds:
        assert sorted(train + test) == list(range(len(keys)))
        assert not _straddling(groups, train, test)


def test_kfold_is_seeded():
    keys = [i % 2 for i in range(60)]
    groups = [i // 3 for i in range(60)]
    a = stratified_group_kfold(keys, groups, 4, np.random.default_rng(1))
    assert a == stratified_group_kfold(keys, groups, 4, np.random.default_rng(1))
    assert a != stratified_group_kfold(keys, groups, 4, np.random.default_rng(2))


def test_the_sets_split_and_folds_keep_responses_to_one_question_together():
    data = _many_responses(20, 3)
    train, test = data.train_test_split(test_size=0.3, random_seed=5)
    questions = lambda part: {s.metric_input["user_input"] for s in part}  # noqa: E731
    assert not questions(train) & questions(test)
    assert len(train) + len(test) == len(data)
    folds = data.kfold(n_splits=4, random_seed=5)
    assert sum(len(test) for _, test in folds) == len(data)
    assert all(not questions(tr) & questions(te) for tr, te in folds)
    ungrouped_train, ungrouped_test = data.train_test_split(test_size=0.3, random_seed=5, group_key="sample")
    assert len(ungrouped_test) == 18


# --- the run's split ------------------------------------------------------------------------------------


@pytest.mark.parametrize("per_question", [2, 4])
def test_no_validation_sample_shares_its_input_with_a_train_sample(per_question):
    data = _many_responses(40, per_question)
    metric = AspectCritic(name="m", definition="d")
    split = make_split(data, data.labels(), metric, HELD_OUT, np.random.default_rng(0))
    prompts = data.group_keys()
    assert not _straddling(prompts, split.train, split.validation)
    assert split.n_groups == 40
    assert abs(len(split.validation) - 0.3 * len(data)) <= per_question
    record = split.to_dict(data)
    assert record["group_key"] == "input" and record["groups"] == 40
    assert record["conflicting_duplicates"] == []


def test_group_key_sample_gives_the_ungrouped_split():
    data = _many_responses(40, 2)
    metric = AspectCritic(name="m", definition="d")
    split = make_split(
        data,
        data.labels(),
        metric,
        GeneticConfig(group_key="sample", refit_below=0),
        np.random.default_rng(0),
    )
    assert len(split.validation) == round(0.3 * len(data))
    assert _straddling(data.group_keys(), split.train, split.validation)  # what grouping prevents


def test_the_run_records_conflicting_duplicates():
    rows = [(f"q{i}", "r", i % 2) for i in range(50)] + [("q0", "r", 1)]
    data = _set(rows)
    metric = AspectCritic(name="m", definition="d")
    with pytest.warns(
        UserWarning, match=r"1 inputs appear more than once with different human labels \(samples \[0, 50\]\)"
    ):
        split = make_split(data, data.labels(), metric, GeneticConfig(), np.random.default_rng(0))
    assert split.to_dict(data)["conflicting_duplicates"] == [[0, 50]]
