"""How well a judge agrees with the humans: the figures reports and ``evaluate`` print.

Binary metrics get accuracy, F1 of class 1 and Cohen's kappa, with the confusion matrix; numeric
metrics get mean squared and mean absolute error. All come from :mod:`sklearn.metrics`. A failed
evaluation counts as the worst prediction for its sample (as in fitness: the opposite binary
label, or the end of [0, 1] farthest from a numeric label) and is counted in ``failures``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    mean_absolute_error,
    mean_squared_error,
)

from promptevolver.judge.protocol import Judgement

__all__ = ["Agreement", "agreement", "agreement_of"]


@dataclass(frozen=True)
class Agreement:
    """Agreement of judge predictions with human labels on ``n`` samples.

    Attributes:
        binary: True for 0/1 verdicts (accuracy, F1, kappa, confusion), False for numeric scores.
        n: samples scored; failures: of them, failed evaluations (scored as the worst prediction).
        accuracy: share of equal verdicts, in [0, 1] (binary; higher is better).
        f1: F1 of class 1, in [0, 1] (binary; 1.0 when neither side has a positive).
        cohen_kappa: chance-corrected agreement in [-1, 1] (binary); None when undefined (every
            label and prediction in one class).
        confusion: ``[[tn, fp], [fn, tp]]`` — rows human 0/1, columns judge 0/1 (binary).
        mse, mae: mean squared / absolute error (numeric; lower is better).
    """

    binary: bool
    n: int
    failures: int
    accuracy: float | None = None
    f1: float | None = None
    cohen_kappa: float | None = None
    confusion: list[list[int]] | None = None
    mse: float | None = None
    mae: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line: ``accuracy 0.900 | F1 0.923 | Cohen's kappa 0.78 | n 10, 0 failed``."""
        if self.binary:
            kappa = "n/a" if self.cohen_kappa is None else f"{self.cohen_kappa:.2f}"
            figures = f"accuracy {self.accuracy:.3f} | F1 {self.f1:.3f} | Cohen's kappa {kappa}"
        else:
            figures = f"MSE {self.mse:.4f} | MAE {self.mae:.4f}"
        return f"{figures} | n {self.n}, {self.failures} failed"


def agreement(
    y_true: Sequence[float], y_pred: Sequence[float], *, binary: bool, failures: int = 0
) -> Agreement:
    """Agreement figures of predictions ``y_pred`` against labels ``y_true`` (equal lengths).

    Raises:
        ValueError: unequal lengths, or no samples.
    """
    t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    if len(t) != len(p) or len(t) == 0:
        raise ValueError(f"need equal, non-empty y_true and y_pred, got {len(t)} and {len(p)}")
    if not binary:
        mse, mae = float(mean_squared_error(t, p)), float(mean_absolute_error(t, p))
        return Agreement(binary=False, n=len(t), failures=failures, mse=mse, mae=mae)
    matrix = confusion_matrix(t, p, labels=[0.0, 1.0])
    return Agreement(
        binary=True,
        n=len(t),
        failures=failures,
        accuracy=float(accuracy_score(t, p)),
        f1=float(f1_score(t, p, zero_division=1.0)),
        cohen_kappa=_kappa(t, p),
        confusion=[[int(v) for v in row] for row in matrix],
    )


def _kappa(t: np.ndarray, p: np.ndarray) -> float | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(cohen_kappa_score(t, p))
    return None if math.isnan(value) else value


def agreement_of(
    judgements: Mapping[int, Judgement],
    positions: Sequence[int],
    labels: Sequence[float | None],
    *,
    binary: bool,
) -> Agreement:
    """:func:`agreement` of ``judgements`` (position → judgement) at ``positions`` against the
    human ``labels`` (indexed by position; every one at ``positions`` must be set).

    Raises:
        KeyError: a position without a judgement.
        ValueError: no positions, or a position without a human label.
    """
    y_true, y_pred, failures = [], [], 0
    for p in positions:
        label = labels[p]
        if label is None:
            raise ValueError(f"sample {p} has no human label")
        score = judgements[p].score
        if score is None:
            failures += 1
            score = 0.0 if label >= 0.5 else 1.0
        y_true.append(float(label))
        y_pred.append(score)
    return agreement(y_true, y_pred, binary=binary, failures=failures)
