"""How well a judge agrees with the humans: the figures reports and ``evaluate`` print.

Binary metrics get accuracy, F1 of class 1 and Cohen's kappa, with the confusion matrix; numeric
metrics get mean squared and mean absolute error. All come from :mod:`sklearn.metrics`. A failed
evaluation is no verdict: it is left out of every figure and counted in ``failures``, by cause
(``failure_causes``); when every evaluation failed, the figures are None (``n/a``), never a
score. (Fitness, which must rank candidates, scores a failure as wrong; agreement, which
reports what was measured, does not.)
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
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
        n: samples measured (a verdict to compare with the human's); 0 when every evaluation failed,
            and then every figure is None.
        failures: evaluations that failed, left out of ``n`` and of every figure.
        failure_causes: cause → count of those failures (``parse``, ``timeout``, ``http 503``...).
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
    failure_causes: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line: ``accuracy 0.900 | F1 0.923 | Cohen's kappa 0.78 | n 10, 0 failed``; a figure
        that was not measured reads ``n/a``, and failures are followed by their causes."""
        if self.binary:
            kappa = _f(self.cohen_kappa, 2)
            figures = f"accuracy {_f(self.accuracy, 3)} | F1 {_f(self.f1, 3)} | Cohen's kappa {kappa}"
        else:
            figures = f"MSE {_f(self.mse, 4)} | MAE {_f(self.mae, 4)}"
        return f"{figures} | n {self.n}, {self.failures} failed{self.causes_text()}"

    def causes_text(self) -> str:
        """`` (parse 2, timeout 1)`` — the failures by cause, most frequent first; empty without any."""
        if not self.failure_causes:
            return ""
        ranked = sorted(self.failure_causes.items(), key=lambda kv: (-kv[1], kv[0]))
        return " (" + ", ".join(f"{cause} {count}" for cause, count in ranked) + ")"


def _f(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


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
    human ``labels`` (indexed by position; every one at ``positions`` must be set). Failed
    evaluations are left out and counted by cause (see the module docstring).

    Raises:
        KeyError: a position without a judgement.
        ValueError: no positions, or a position without a human label.
    """
    if not positions:
        raise ValueError("no positions to score")
    y_true, y_pred, causes = [], [], Counter[str]()
    for p in positions:
        label = labels[p]
        if label is None:
            raise ValueError(f"sample {p} has no human label")
        judged = judgements[p]
        if judged.score is None:
            causes[judged.cause or "error"] += 1
            continue
        y_true.append(float(label))
        y_pred.append(judged.score)
    failures = sum(causes.values())
    if not y_true:
        return Agreement(binary=binary, n=0, failures=failures, failure_causes=dict(causes))
    figures = agreement(y_true, y_pred, binary=binary, failures=failures)
    return Agreement(**{**asdict(figures), "failure_causes": dict(causes)})
