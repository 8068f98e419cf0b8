"""Losses that turn (human labels, judge predictions) into a fitness value.

Each loss declares its direction with ``higher_is_better``; the optimizer maximises or minimises
accordingly. Losses are called with keywords only — ``loss(y_true=..., y_pred=...)`` — so an
asymmetric loss can never receive its arguments swapped. Both arrays have shape ``(n,)``.
Values are computed with scikit-learn.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import accuracy_score, f1_score, mean_squared_error

__all__ = ["BinaryMetricLoss", "ClassificationLoss", "Loss", "MSELoss", "check_loss_fits", "loss_label"]


def loss_label(description: Mapping[str, Any]) -> str:
    """The human name of a loss from its ``describe()`` block (result.json's ``loss``):
    ``accuracy``, ``F1``, ``MSE`` or ``sum of squared errors``; never a class name where a
    known loss is meant (an unknown one keeps its ``name``)."""
    metric = description.get("metric")
    if metric:
        return {"f1_score": "F1", "macro_f1": "macro F1"}.get(str(metric), str(metric))
    if description.get("name") == "MSELoss":
        return "sum of squared errors" if description.get("reduction") == "sum" else "MSE"
    return str(description.get("name") or "fitness")


class Loss(ABC):
    """A scalar score of predictions against human labels.

    Attributes:
        higher_is_better: True when larger values are better (accuracy), False for errors (MSE).
    """

    higher_is_better: bool
    #: The best value the loss can take (None if unbounded); reaching it on train ends a search.
    best_possible: float | None = None

    def __call__(
        self, *, y_true: ArrayLike, y_pred: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> float:
        """Score ``y_pred`` against ``y_true`` (equal-length, non-empty, shape ``(n,)``).

        ``sample_weight`` (shape ``(n,)``, positive): how many samples each one stands for, as in
        scikit-learn's metrics (a stratified subset's estimate of the whole, see
        :mod:`promptevolver.optimizers._focus`).

        Raises:
            ValueError: unequal lengths, empty input, or values the loss does not accept.
        """
        t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
        if t.ndim != 1 or p.ndim != 1:
            raise ValueError(f"y_true and y_pred must be 1-D, got shapes {t.shape} and {p.shape}")
        if len(t) != len(p):
            raise ValueError(f"y_true and y_pred differ in length: {len(t)} != {len(p)}")
        if len(t) == 0:
            raise ValueError("y_true and y_pred are empty")
        if not (np.isfinite(t).all() and np.isfinite(p).all()):
            raise ValueError("y_true and y_pred must be finite (no NaN or inf)")
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if w is not None and w.shape != t.shape:
            raise ValueError(f"sample_weight must have shape {t.shape}, got {w.shape}")
        if w is None or not self.supports_weights:
            return float(self._compute(t, p))
        return float(self._compute(t, p, w))

    #: Whether :meth:`_compute` takes a third argument, the sample weights (a loss of your own
    #: written with two arguments is called unweighted: its estimates from a focus set are then
    #: plain means over the judged samples).
    supports_weights: bool = False

    @abstractmethod
    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float: ...

    def per_sample_correct(self, *, y_true: ArrayLike, y_pred: ArrayLike) -> np.ndarray:
        """Per-sample quality (1 = perfect, higher is better), shape ``(n,)``: used for Pareto
        fronts, complementary parents and the paired final choice. Binary: 1.0 where the
        prediction equals the label, else 0.0."""
        t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
        return (t == p).astype(np.float64)

    def better(self, a: float, b: float) -> bool:
        """True when score ``a`` is strictly better than ``b`` in this loss's direction."""
        return a > b if self.higher_is_better else a < b

    def worst(self) -> float:
        """A value worse than any real score (used for a candidate with nothing measured)."""
        return float("-inf") if self.higher_is_better else float("inf")

    def describe(self) -> dict[str, Any]:
        """The ``loss`` block of result.json."""
        return {"name": type(self).__name__, "higher_is_better": self.higher_is_better}


class BinaryMetricLoss(Loss):
    """Agreement of binary verdicts with binary human labels (higher is better).

    Args:
        metric: ``accuracy`` (fraction of equal verdicts) or ``f1_score`` (F1 of class 1,
            ``sklearn.metrics.f1_score``). When F1 is undefined — no positive label and no positive
            prediction anywhere — it is **1.0** (nothing to find and nothing falsely found:
            ``zero_division=1.0``); a positive on only one side gives 0.0 as usual.

    Raises:
        ValueError: unknown ``metric``; at call time, a value other than 0 or 1.
    """

    higher_is_better = True
    best_possible = 1.0
    supports_weights = True

    def __init__(self, *, metric: Literal["accuracy", "f1_score"] = "accuracy") -> None:
        if metric not in ("accuracy", "f1_score"):
            raise ValueError(f"metric must be 'accuracy' or 'f1_score', got {metric!r}")
        self.metric = metric

    def __repr__(self) -> str:
        return f"BinaryMetricLoss(metric={self.metric!r})"

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float:
        for name, values in (("y_true", y_true), ("y_pred", y_pred)):
            bad = values[(values != 0) & (values != 1)]
            if bad.size:
                raise ValueError(f"{name} must hold only 0 and 1, found {bad[0]!r}")
        if self.metric == "accuracy":
            return float(accuracy_score(y_true, y_pred, sample_weight=weight))
        return float(f1_score(y_true, y_pred, zero_division=1.0, sample_weight=weight))

    def describe(self) -> dict[str, Any]:
        return {"name": "BinaryMetricLoss", "metric": self.metric, "higher_is_better": True}


class MSELoss(Loss):
    """Squared error of numeric scores (lower is better; ``sklearn.metrics.mean_squared_error``).

    Args:
        reduction: ``mean`` (mean squared error) or ``sum`` (sum of squared errors = mean × n).
    """

    higher_is_better = False
    best_possible = 0.0
    supports_weights = True

    def __init__(self, *, reduction: Literal["mean", "sum"] = "mean") -> None:
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        self.reduction = reduction

    def __repr__(self) -> str:
        return f"MSELoss(reduction={self.reduction!r})"

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float:
        mse = float(mean_squared_error(y_true, y_pred, sample_weight=weight))
        total = len(y_true) if weight is None else float(weight.sum())
        return mse * total if self.reduction == "sum" else mse

    def per_sample_correct(self, *, y_true: ArrayLike, y_pred: ArrayLike) -> np.ndarray:
        """1 − squared error, shape ``(n,)`` (1 = perfect; below 0 for errors above 1, unclipped).

        Its mean is 1 − MSE, so comparing two candidates' per-sample quality on the same samples
        (the paired final choice, screening) compares their squared errors: a candidate better
        there has the lower MSE. (A clipped 1 − |error| would score a miss by one level and by
        four alike on a 1–5 scale.)"""
        t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
        return 1.0 - (t - p) ** 2

    def describe(self) -> dict[str, Any]:
        return {"name": "MSELoss", "reduction": self.reduction, "higher_is_better": False}


class ClassificationLoss(Loss):
    """Agreement of named classes (a nominal metric: a pairwise a / b / tie, a category) with the
    human labels (higher is better). The class values are names, not distances: a wrong class is
    wrong by one whatever its number (never a squared error or "within one").

    Args:
        metric: ``accuracy`` (the share of equal classes) or ``macro_f1`` (the unweighted mean of
            the classes' F1, ``sklearn.metrics.f1_score(average="macro")`` over the classes
            present in either array; a class nobody gave nor predicted adds nothing). Macro F1
            weighs a rare class (a tie) as much as a common one.

    Raises:
        ValueError: unknown ``metric``.
    """

    higher_is_better = True
    best_possible = 1.0
    supports_weights = True

    def __init__(self, *, metric: Literal["accuracy", "macro_f1"] = "accuracy") -> None:
        if metric not in ("accuracy", "macro_f1"):
            raise ValueError(f"metric must be 'accuracy' or 'macro_f1', got {metric!r}")
        self.metric = metric

    def __repr__(self) -> str:
        return f"ClassificationLoss(metric={self.metric!r})"

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float:
        # class values may be any numbers (0.5: a tie), which scikit-learn reads as continuous
        _, codes = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
        t, p = codes[: len(y_true)], codes[len(y_true) :]
        if self.metric == "accuracy":
            return float(accuracy_score(t, p, sample_weight=weight))
        return float(f1_score(t, p, average="macro", zero_division=0.0, sample_weight=weight))

    def describe(self) -> dict[str, Any]:
        return {"name": "ClassificationLoss", "metric": self.metric, "higher_is_better": True}


def check_loss_fits(loss: Loss, kind: str | None, *, judge: str = "the judge") -> None:
    """Refuse a loss that reads labels of ``kind`` (a label scale's: ``binary``, ``numeric``,
    ``nominal``; None: unknown, anything goes) as what they are not, before any call: named
    classes are no numbers (a squared error between "a" and "tie" means nothing) nor 0/1 verdicts.

    Raises:
        ValueError: naming the judge, its labels and the loss to use.
    """
    if kind == "nominal" and isinstance(loss, BinaryMetricLoss | MSELoss):
        raise ValueError(
            f"{judge} answers named classes, which {type(loss).__name__} would read as numbers: use "
            "ClassificationLoss (accuracy or macro_f1)"
        )
