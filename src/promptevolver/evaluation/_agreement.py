"""How well a judge agrees with the humans: the figures reports and ``evaluate`` print.

* **Binary** metrics: accuracy, F1 of class 1 and Cohen's kappa, with the confusion matrix.
* **Numeric** metrics (regression-style): mean squared and mean absolute error; on an **ordinal**
  scale (every label and score a whole number, e.g. a 1–5 rubric) also the exact agreement, the
  share within one level (|score − label| ≤ 1) and Cohen's kappa with quadratic weights over the
  levels from the lowest to the highest value seen (Cohen 1968; levels no one used add nothing).

All figures come from :mod:`sklearn.metrics`. Their resampled forms (:data:`RESAMPLED`: one figure
over many bootstrap resamples at once, for confidence intervals) live here too, beside them, with
:data:`PROPORTIONS` (the figures that are shares of samples); tests check the two forms agree.
A failed evaluation is not a prediction: it is left
out of every figure and counted in ``failures``, by cause (``failure_causes``); when every
evaluation failed, every figure is None (``n/a``), never a score.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
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

from promptevolver.judge._protocol import Judgement

__all__ = ["PROPORTIONS", "RESAMPLED", "Agreement", "agreement", "agreement_of", "is_ordinal"]


@dataclass(frozen=True)
class Agreement:
    """Agreement of judge predictions with human labels on ``n`` samples.

    Attributes:
        binary: True for 0/1 verdicts (accuracy, F1, kappa, confusion), False for numeric scores.
        n: samples scored (failed evaluations excluded); failures: failed evaluations left out.
        failure_causes: cause → count of those failures (``parse``, ``timeout``, ``http 503``...).
        accuracy: share of equal verdicts, in [0, 1] (binary; higher is better).
        f1: F1 of class 1, in [0, 1] (binary; 1.0 when neither side has a positive).
        cohen_kappa: chance-corrected agreement in [-1, 1] (binary); None when undefined (every
            label and prediction in one class).
        confusion: ``[[tn, fp], [fn, tp]]`` — rows human 0/1, columns judge 0/1 (binary).
        mse, mae: mean squared / absolute error (numeric; lower is better).
        ordinal: True when every label and score is a whole number (numeric only).
        exact: share of scores equal to the label, in [0, 1] (ordinal).
        within_one: share of scores at most one level from the label, in [0, 1] (ordinal).
        weighted_kappa: Cohen's kappa with quadratic weights, in [-1, 1] (ordinal); None when
            undefined (one level only).
        levels: the ordinal levels, lowest to highest (ordinal).
        Every figure is None when nothing was measured (``n`` 0).
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
    ordinal: bool = False
    exact: float | None = None
    within_one: float | None = None
    weighted_kappa: float | None = None
    levels: list[float] | None = None
    failure_causes: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line: ``accuracy 0.900 | F1 0.923 | Cohen's kappa 0.78 | n 10, 0 failed``, or for a
        numeric metric ``MSE 0.4000 | MAE 0.4000 | within one 1.000 | weighted kappa 0.81 | ...``."""
        if self.binary:
            kappa = _f(self.cohen_kappa, 2)
            figures = f"accuracy {_f(self.accuracy)} | F1 {_f(self.f1)} | Cohen's kappa {kappa}"
        else:
            figures = f"MSE {_f(self.mse, 4)} | MAE {_f(self.mae, 4)}"
            if self.ordinal:
                figures += (
                    f" | exact {_f(self.exact)} | within one {_f(self.within_one)}"
                    f" | weighted kappa {_f(self.weighted_kappa, 2)}"
                )
        return f"{figures} | n {self.n}, {self.failures} failed{self.causes_text()}"

    def causes_text(self) -> str:
        """`` (parse 2, timeout 1)`` — the failures by cause, most frequent first; empty without any."""
        if not self.failure_causes:
            return ""
        ranked = sorted(self.failure_causes.items(), key=lambda kv: (-kv[1], kv[0]))
        return " (" + ", ".join(f"{cause} {count}" for cause, count in ranked) + ")"


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def is_ordinal(*values: np.ndarray) -> bool:
    """True when every value of every array is a whole number (an ordinal scale)."""
    return all(bool(np.all(np.mod(v, 1.0) == 0.0)) for v in values)


def agreement(
    y_true: Sequence[float],
    y_pred: Sequence[float],
    *,
    binary: bool,
    failures: int = 0,
    ordinal: bool | None = None,
    sample_weight: Sequence[float] | None = None,
) -> Agreement:
    """Agreement figures of predictions ``y_pred`` against labels ``y_true`` (equal lengths).

    Args:
        binary: 0/1 verdicts (binary figures) or numeric scores.
        failures: failed evaluations left out of ``y_pred`` (reported, never scored).
        ordinal: numeric only: whether the scale is ordinal; None decides from the values
            (:func:`is_ordinal`).
        sample_weight: how many samples each one stands for (a focus set's weights, shape
            ``(n,)``): every figure is then an estimate for the samples they stand for; the
            confusion matrix still counts the samples judged. None: all 1.

    Raises:
        ValueError: unequal lengths, or no samples.
    """
    t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if len(t) != len(p) or len(t) == 0 or (w is not None and len(w) != len(t)):
        raise ValueError(f"need equal, non-empty y_true and y_pred, got {len(t)} and {len(p)}")
    if not binary:
        return _numeric(t, p, failures, is_ordinal(t, p) if ordinal is None else ordinal, w)
    matrix = confusion_matrix(t, p, labels=[0.0, 1.0])
    return Agreement(
        binary=True,
        n=len(t),
        failures=failures,
        accuracy=float(accuracy_score(t, p, sample_weight=w)),
        f1=float(f1_score(t, p, zero_division=1.0, sample_weight=w)),
        cohen_kappa=_kappa(t, p, sample_weight=w),
        confusion=[[int(v) for v in row] for row in matrix],
    )


def _numeric(t: np.ndarray, p: np.ndarray, failures: int, ordinal: bool, w: np.ndarray | None) -> Agreement:
    mse = float(mean_squared_error(t, p, sample_weight=w))
    mae = float(mean_absolute_error(t, p, sample_weight=w))
    if not ordinal:
        return Agreement(binary=False, n=len(t), failures=failures, mse=mse, mae=mae)
    levels = np.arange(min(t.min(), p.min()), max(t.max(), p.max()) + 1.0)
    error = np.abs(t - p)
    return Agreement(
        binary=False,
        n=len(t),
        failures=failures,
        mse=mse,
        mae=mae,
        ordinal=True,
        exact=float(np.average(error == 0.0, weights=w)),
        within_one=float(np.average(error <= 1.0, weights=w)),
        weighted_kappa=_kappa(t, p, levels=levels, weights="quadratic", sample_weight=w),
        levels=[float(v) for v in levels],
    )


def _kappa(
    t: np.ndarray,
    p: np.ndarray,
    *,
    levels: np.ndarray | None = None,
    weights: str | None = None,
    sample_weight: np.ndarray | None = None,
) -> float | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(cohen_kappa_score(t, p, labels=levels, weights=weights, sample_weight=sample_weight))
    return None if math.isnan(value) else value


def agreement_of(
    judgements: Mapping[int, Judgement],
    positions: Sequence[int],
    labels: Sequence[float | None],
    *,
    binary: bool,
    ordinal: bool | None = None,
    weights: Mapping[int, float] | None = None,
) -> Agreement:
    """:func:`agreement` of ``judgements`` (position → judgement) at ``positions`` against the
    human ``labels`` (indexed by position; every one at ``positions`` must be set). Failed
    evaluations are left out and counted by cause; when every one failed, ``n`` is 0 and every
    figure None. ``weights``: position → how many samples it stands for (see :func:`agreement`).

    Raises:
        KeyError: a position without a judgement.
        ValueError: no positions, or a position without a human label.
    """
    if not positions:
        raise ValueError("no positions to score")
    y_true, y_pred, w, causes = [], [], [], Counter[str]()
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
        w.append(1.0 if weights is None else float(weights[p]))
    failures, found = sum(causes.values()), dict(causes)
    if not y_true:
        return Agreement(binary=binary, n=0, failures=failures, failure_causes=found)
    figures = agreement(
        y_true,
        y_pred,
        binary=binary,
        failures=failures,
        ordinal=ordinal,
        sample_weight=None if weights is None else w,
    )
    return replace(figures, failure_causes=found)


# --- resampled forms: arrays of shape (resamples, n) -> shape (resamples,), NaN where undefined ---
def _f1_resampled(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """F1 of class 1 per row (1.0 when neither side has a positive, as ``zero_division=1.0``)."""
    tp = np.sum((t == 1) & (p == 1), axis=1)
    wrong = np.sum(t != p, axis=1)
    return np.where(2 * tp + wrong == 0, 1.0, 2 * tp / np.maximum(2 * tp + wrong, 1))


def _kappa_resampled(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Cohen's kappa of 0/1 verdicts per row; NaN when chance agreement is 1 (one class)."""
    observed = np.mean(t == p, axis=1)
    rt, rp = t.mean(axis=1), p.mean(axis=1)
    chance = rt * rp + (1 - rt) * (1 - rp)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def _weighted_kappa_resampled(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Quadratic-weighted kappa over equally spaced levels per row: 1 - E[(t-p)^2] / E[(t-p')^2],
    p' independent of t (levels nobody used add nothing to either sum); NaN for one level."""
    apart = np.mean((t - p) ** 2, axis=1)
    chance = t.var(axis=1) + p.var(axis=1) + (t.mean(axis=1) - p.mean(axis=1)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance > 0, 1 - apart / chance, np.nan)


#: Figure name → its resampled form: given labels and predictions of shape (resamples, n), the
#: figure of each row, shape (resamples,), NaN where undefined. Equal to the :class:`Agreement`
#: figure of the same name on each row (closed forms of sklearn's). For the bootstrap intervals of
#: :func:`promptevolver.evaluation._intervals.bootstrap_interval`.
RESAMPLED: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "f1": _f1_resampled,
    "cohen_kappa": _kappa_resampled,
    "weighted_kappa": _weighted_kappa_resampled,
}

#: :class:`Agreement` figures that are shares of samples (proportions: the Wilson interval applies).
PROPORTIONS = ("accuracy", "exact", "within_one")
