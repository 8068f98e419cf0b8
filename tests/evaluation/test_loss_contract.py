"""The Loss contract suite (promptevolver.testing.contracts) on every loss we ship: binary
accuracy and F1, the mean squared error (mean and sum) on a 1-5 scale, accuracy and macro F1 of
named classes (a / b / tie), and a loss written as in Ragas (its own
``__call__(predicted, actual)``)."""

from __future__ import annotations

import numpy as np
import pytest

from promptevolver.evaluation._losses import BinaryMetricLoss, ClassificationLoss, Loss, MSELoss
from promptevolver.testing.contracts import LossContract


class TestAccuracy(LossContract):
    def make_loss(self) -> BinaryMetricLoss:
        return BinaryMetricLoss(metric="accuracy")


class TestF1(LossContract):
    def make_loss(self) -> BinaryMetricLoss:
        return BinaryMetricLoss(metric="f1_score")


class TestMSE(LossContract):
    y_true = (1, 2, 3, 4, 5, 5, 3, 2, 1, 4)
    y_wrong = (1, 3, 3, 2, 5, 4, 3, 2, 2, 4)

    def make_loss(self) -> MSELoss:
        return MSELoss()


class TestMSESum(TestMSE):
    def make_loss(self) -> MSELoss:
        return MSELoss(reduction="sum")


class TestClassificationAccuracy(LossContract):
    y_true = (1, 0, 0.5, 1, 0, 0.5, 1, 0, 1, 0)  # a pairwise a / b / tie
    y_wrong = (1, 1, 0.5, 0, 0, 1, 1, 0.5, 1, 0)

    def make_loss(self) -> ClassificationLoss:
        return ClassificationLoss()


class TestClassificationMacroF1(TestClassificationAccuracy):
    def make_loss(self) -> ClassificationLoss:
        return ClassificationLoss(metric="macro_f1")


class RagasStyleAccuracy(Loss):
    """A loss of one's own written as in Ragas (``__call__(predicted, actual)``), with a direction."""

    higher_is_better = True
    best_possible = 1.0

    def __call__(self, predicted: list[float], actual: list[float]) -> float:  # type: ignore[override]
        return sum(p == a for p, a in zip(predicted, actual)) / len(actual)


class TestRagasStyleLoss(LossContract):
    def make_loss(self) -> Loss:
        return RagasStyleAccuracy()


class _Backwards(Loss):
    """Says higher is better but is an error: the suite must catch the wrong direction."""

    higher_is_better = True

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float:
        return float(np.mean((y_true - y_pred) ** 2))


class _BackwardsContract(LossContract):
    def make_loss(self) -> Loss:
        return _Backwards()


def test_the_suite_fails_a_loss_with_the_wrong_direction() -> None:
    with pytest.raises(AssertionError, match="does not beat wrong"):
        _BackwardsContract().test_perfect_predictions_score_best_and_beat_wrong_ones()
