"""Agreement figures of nominal labels (named classes: never within-one or a squared error), the
base rate beside kappa and TPR/TNR of binary verdicts, the annotators' agreement (Cohen's kappa of
every pair, Fleiss' kappa, checked against statsmodels) and a pairwise judge's position bias."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, f1_score

from promptevolver import SingleMetricAnnotation
from promptevolver.annotations import LabelChoice, LabelScale
from promptevolver.annotations._labels import PAIRWISE, check_annotator_labels
from promptevolver.errors import AnnotationError
from promptevolver.evaluation._agreement import (
    RESAMPLED,
    agreement,
    annotator_agreement,
    fleiss_kappa,
    position_bias,
)

THREE = LabelScale("nominal", choices=(LabelChoice(0, "x"), LabelChoice(1, "y"), LabelChoice(2, "z")))


def test_nominal_figures_are_sklearns_on_any_class_values():
    t = [1, 1, 0, 0.5, 0.5, 1, 0, 0]
    p = [1, 0, 0, 0.5, 1, 1, 0.5, 0]
    a = agreement(t, p, binary=False, scale=PAIRWISE)
    codes = {1: 0, 0: 1, 0.5: 2}
    tc, pc = [codes[v] for v in t], [codes[v] for v in p]
    assert a.nominal and not a.binary and a.mse is None and a.within_one is None
    assert a.accuracy == pytest.approx(5 / 8)
    assert a.cohen_kappa == pytest.approx(cohen_kappa_score(tc, pc))
    assert a.macro_f1 == pytest.approx(f1_score(tc, pc, average="macro"))
    assert a.classes == ["a", "b", "tie"]
    assert a.confusion == [[2, 1, 0], [0, 2, 1], [1, 0, 1]]
    assert [c.support for c in a.per_class] == [3, 3, 2]
    assert a.base_rate == pytest.approx(3 / 8)
    assert "macro F1" in a.summary() and "MSE" not in a.summary()


def test_a_prediction_outside_the_classes_is_an_error():
    with pytest.raises(ValueError, match="not a class"):
        agreement([0, 1], [0, 7], binary=False, scale=THREE)


def test_binary_figures_carry_the_base_rate_and_the_true_rates():
    a = agreement([1, 1, 1, 0], [1, 0, 1, 0], binary=True)
    assert a.tpr == pytest.approx(2 / 3) and a.tnr == 1.0 and a.base_rate == 0.75
    assert a.classes == ["no", "yes"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=40), st.integers(0, 99))
def test_the_resampled_kappa_is_sklearns_on_every_row(pairs, seed):
    rng = np.random.default_rng(seed)
    t = np.array([p[0] for p in pairs], dtype=float)
    p = np.array([p[1] for p in pairs], dtype=float)
    draws = rng.integers(0, len(t), size=(5, len(t)))
    rows = RESAMPLED["cohen_kappa"](t[draws], p[draws])
    for row, d in zip(rows, draws):
        expected = cohen_kappa_score(t[d], p[d]) if len(set(t[d]) | set(p[d])) > 1 else np.nan
        assert (np.isnan(row) and np.isnan(expected)) or row == pytest.approx(expected)


def test_fleiss_kappa_is_statsmodels():
    from statsmodels.stats import inter_rater  # the test extra installs it: never skipped

    rng = np.random.default_rng(0)
    ratings = rng.integers(0, 3, size=(50, 4))
    table, _ = inter_rater.aggregate_raters(ratings)
    assert fleiss_kappa(table) == pytest.approx(inter_rater.fleiss_kappa(table))
    assert fleiss_kappa(np.array([[3, 0], [3, 0]])) is None  # one class: undefined


def test_annotator_agreement_pairs_every_annotator():
    items = [
        {"ann": 1.0, "bob": 1.0, "cy": 0.0},
        {"ann": 0.0, "bob": 0.0, "cy": 0.0},
        {"ann": 1.0, "bob": 0.0},
    ]
    h = annotator_agreement(items)
    assert h is not None and h.annotators == ["ann", "bob", "cy"] and h.items == 3
    assert set(h.pairwise_kappa) == {"ann / bob", "ann / cy", "bob / cy"}
    assert h.unanimous == pytest.approx(1 / 3)
    assert annotator_agreement([{"ann": 1.0}]) is None


def test_position_bias_counts_consistency_and_first_position():
    # a shown first: a, a, b, tie; b shown first (in a/b terms): a, b, a, tie
    bias = position_bias([1, 1, 0, 0.5], [1, 0, 1, 0.5])
    assert bias.pairs == 4 and bias.consistency == 0.5
    # first-shown verdicts: a (1st order) x2, then in the swapped order b (= shown first) x1
    assert bias.first_position == pytest.approx(3 / 6)
    assert position_bias([1, np.nan], [np.nan, 1]).pairs == 0


def _samples(*votes, target=None):
    rows = [
        {
            "metric_input": {"user_input": "q", "response": "r"},
            "metric_output": 1,
            "is_accepted": True,
            "annotator_labels": v,
            **({"target": target} if target is not None else {}),
        }
        for v in votes
    ]
    return SingleMetricAnnotation.model_validate({"name": "m", "samples": rows, "kind": "binary"})


def test_the_annotators_majority_is_the_human_label_and_a_tie_leaves_none():
    data = _samples({"a": 0, "b": 0, "c": 1}, [1, 0], {"a": 1, "b": None})
    assert data.labels() == [0.0, None, 1.0]
    assert "annotators' labels tie" in data.unusable_samples()[0].reason
    assert _samples({"a": 0, "b": 0}, target=1).labels() == [1.0]  # target first


def test_bad_annotator_labels_name_the_sample_and_annotator():
    data = _samples({"a": 0}, {"a": "yes"})
    with pytest.raises(AnnotationError, match=r"sample 1.*annotator_labels\.a.*not a number"):
        check_annotator_labels(data.samples)
    with pytest.raises(AnnotationError, match=r"annotator_labels\.a.*not a label of this metric"):
        check_annotator_labels(_samples({"a": 2}).samples, LabelScale("binary"))


def test_the_classification_loss_is_sklearns_on_class_codes_and_checks_its_metric():
    from promptevolver import ClassificationLoss

    t, p = [1, 0, 0.5, 0.5, 1, 0], [1, 0.5, 0.5, 0, 1, 0]
    codes = {0: 0, 0.5: 1, 1: 2}
    tc, pc = [codes[v] for v in t], [codes[v] for v in p]
    assert ClassificationLoss()(y_true=t, y_pred=p) == pytest.approx(4 / 6)
    assert ClassificationLoss(metric="macro_f1")(y_true=t, y_pred=p) == pytest.approx(
        f1_score(tc, pc, average="macro")
    )
    loss = ClassificationLoss()
    loss.metric = "f1_score"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="ClassificationLoss.metric must be 'accuracy' or 'macro_f1'"):
        loss(y_true=t, y_pred=p)
