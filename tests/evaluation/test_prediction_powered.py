"""The prediction-powered figure (``evaluation/_prediction_powered.py``): a few fresh judgements
correct the verdicts a file records, and the figure is unbiased whatever those verdicts are."""

from __future__ import annotations

import numpy as np
import pytest

from promptevolver.evaluation import (
    BinaryMetricLoss,
    ClassificationLoss,
    MSELoss,
    PredictionPoweredScore,
    prediction_powered,
)

N, DRAWN = 30, 10


def _world(rng: np.random.Generator, flip: float) -> tuple[list[float], list[float], dict[int, float]]:
    """(labels, fresh verdicts right on ~70 %, recorded verdicts: the fresh ones with a share
    ``flip`` of them flipped)."""
    labels = rng.integers(0, 2, N).astype(float)
    fresh = np.where(rng.random(N) < 0.7, labels, 1 - labels)
    recorded = np.where(rng.random(N) < flip, 1 - fresh, fresh)
    return labels.tolist(), fresh.tolist(), {p: float(v) for p, v in enumerate(recorded)}


@pytest.mark.parametrize("flip", [0.0, 0.2, 1.0])
def test_the_estimate_is_unbiased_whatever_the_recorded_verdicts_are(flip):
    """Over many random draws the mean estimate is the accuracy of judging every sample afresh:
    recorded verdicts equal to the fresh ones, a fifth of them off, every one wrong."""
    rng = np.random.default_rng(7)
    labels, fresh, recorded = _world(rng, flip)
    truth = float(np.mean(np.array(fresh) == np.array(labels)))
    loss, positions = BinaryMetricLoss(), list(range(N))
    estimates = []
    for _ in range(3000):
        drawn = sorted(rng.choice(N, DRAWN, replace=False).tolist())
        s = prediction_powered(loss, {p: fresh[p] for p in drawn}, recorded, positions, labels)
        estimates.append(float(np.mean(s.correct)))  # the unclipped estimate
    spread = float(np.std(estimates)) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) < 4 * spread + 1e-9
    if flip == 0.0:  # nothing to correct: every draw gives the fresh figure itself
        assert np.std(estimates) == pytest.approx(0.0, abs=1e-12)
    else:
        recorded_only = float(np.mean(np.array(list(recorded.values())) == np.array(labels)))
        assert recorded_only != pytest.approx(truth)  # the recorded figure alone would be biased


def test_the_score_s_figures_are_the_estimate_and_a_failed_evaluation_is_left_out():
    labels = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    recorded = {0: 1.0, 1: 0.0, 2: 0.0, 3: 1.0, 4: 1.0, 5: 1.0}  # right on 4 of 6
    fresh = {0: 1.0, 2: 1.0, 4: None}  # drawn 3 of 6: 0 agrees, 2 fixes a recorded error, 4 failed
    s = prediction_powered(BinaryMetricLoss(), fresh, recorded, list(range(6)), labels)
    assert isinstance(s, PredictionPoweredScore) and s.share == pytest.approx(0.5)
    assert s.failures == 1 and not s.measured[4] and np.isnan(s.correct[4])
    assert s.fresh.tolist() == [True, False, True, False, True, False]
    assert s.y_pred[2] == 1.0 and s.y_pred[1] == 0.0  # fresh where judged, recorded elsewhere
    # z: 1, 1, 0 + (1 - 0) / 0.5 = 2, 1, —, 1: the mean over the 5 measured is 1.2, clipped to 1
    assert s.correct[2] == pytest.approx(2.0) and np.nanmean(s.correct) == pytest.approx(1.2)
    assert s.value == 1.0 and s.estimate(BinaryMetricLoss(), None) == 1.0
    mask = np.array([False, True, False, True, True, True])  # the failed one is left out
    assert s.value_on(BinaryMetricLoss(), mask) == pytest.approx(1.0)
    weights = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 3.0])
    assert s.value_on(BinaryMetricLoss(), ~mask, weights) == 1.0  # (1 + 2) / 2, clipped
    assert s.agreement == pytest.approx(0.5)  # of the two measured fresh verdicts, one equals its record


def test_an_estimate_is_clipped_to_the_loss_s_range():
    labels = [1.0] * 4
    recorded = {p: 0.0 for p in range(4)}
    s = prediction_powered(BinaryMetricLoss(), {0: 1.0, 1: 1.0}, recorded, list(range(4)), labels)
    assert np.mean(s.correct) == pytest.approx(1.0) and s.value == 1.0
    s = prediction_powered(BinaryMetricLoss(), {0: 1.0}, recorded, list(range(4)), labels)
    assert np.mean(s.correct) == pytest.approx(1.0)  # 4 / 4: one fresh fix stands for four samples
    labels = [0.0, 0.0, 1.0, 1.0]
    recorded = {0: 0.0, 1: 0.0, 2: 1.0, 3: 1.0}
    s = prediction_powered(BinaryMetricLoss(), {0: 1.0}, recorded, list(range(4)), labels)
    assert np.mean(s.correct) == pytest.approx(0.0) and s.value == 0.0  # 1 + 1 + 1 - 3, clipped at 0


def test_only_a_loss_that_is_a_mean_of_per_sample_quality_has_an_estimate():
    assert BinaryMetricLoss().from_mean_quality(1.2) == 1.0
    assert ClassificationLoss().from_mean_quality(0.4) == 0.4
    assert MSELoss().from_mean_quality(0.75) == pytest.approx(0.25)
    for loss in (
        BinaryMetricLoss(metric="f1_score"),
        ClassificationLoss(metric="macro_f1"),
        MSELoss(reduction="sum"),
    ):
        assert loss.from_mean_quality(0.5) is None
        with pytest.raises(ValueError, match="not a mean of per-sample quality"):
            prediction_powered(loss, {0: 1.0}, {0: 1.0, 1: 0.0}, [0, 1], [1.0, 0.0])


def test_bad_input_is_refused_naming_what_is_wrong():
    loss = BinaryMetricLoss()
    with pytest.raises(ValueError, match="no recorded verdict at position 1"):
        prediction_powered(loss, {0: 1.0}, {0: 1.0, 1: float("nan")}, [0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="fresh positions"):
        prediction_powered(loss, {5: 1.0}, {0: 1.0, 1: 0.0}, [0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="fresh positions"):
        prediction_powered(loss, {}, {0: 1.0, 1: 0.0}, [0, 1], [1.0, 0.0])


def test_a_mean_squared_error_is_estimated_through_its_per_sample_quality():
    labels = [1.0, 3.0, 5.0, 2.0]
    recorded = {0: 2.0, 1: 3.0, 2: 4.0, 3: 2.0}
    fresh = {p: recorded[p] for p in (1, 2)}  # equal to the record: the estimate is the recorded MSE
    s = prediction_powered(MSELoss(), fresh, recorded, list(range(4)), labels)
    assert s.value == pytest.approx(np.mean([(1 - 2) ** 2, 0, (5 - 4) ** 2, 0]))
