"""Losses that turn (human labels, judge predictions) into a fitness value.

Each loss declares its direction with ``higher_is_better``; the optimizer maximises or minimises
accordingly. Both arrays have shape ``(n,)``; values are computed with scikit-learn.

Two call shapes, the same value:

* ours, by keyword: ``loss(y_true=labels, y_pred=predictions)`` (scikit-learn's names; the order
  of keywords is irrelevant, so an asymmetric loss never receives its arguments swapped);
* Ragas': ``loss(predictions, labels)`` positionally, or ``loss(predicted=..., actual=...)``.
  The positional order is Ragas' — predictions first —, the reverse of scikit-learn's
  ``(y_true, y_pred)``: write keywords where an asymmetric loss could be misread.

A loss of your own either implements ``_compute(y_true, y_pred[, weight])`` (called with
validated float arrays) or, as in Ragas, overrides ``__call__(self, predicted, actual)``: such a
subclass is called with two lists of floats, predictions first, and must declare
``higher_is_better`` before an optimizer uses it (Ragas maximised every loss, the wrong way
for an error).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema
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


def _one(ragas: ArrayLike | None, ours: ArrayLike | None, ragas_name: str, our_name: str) -> ArrayLike:
    """The one value given for an argument that has a Ragas name and ours."""
    if ragas is not None and ours is not None:
        raise TypeError(f"{our_name} is given twice: as {our_name}= and as {ragas_name} (Ragas' name)")
    given = ours if ragas is None else ragas
    if given is None:
        raise TypeError(f"the loss needs {our_name}= (or {ragas_name}, Ragas' name)")
    return given


def _choice(owner: str, name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` when it is one of ``allowed``; else a ValueError naming the option."""
    if value not in allowed:
        names = " or ".join(repr(a) for a in allowed)
        raise ValueError(f"{owner}.{name} must be {names}, got {value!r}")
    return str(value)


class Loss(ABC):
    """A scalar score of predictions against human labels.

    Attributes:
        higher_is_better: True when larger values are better (accuracy), False for errors (MSE).
    """

    higher_is_better: bool
    #: The best value the loss can take (None if unbounded); reaching it on train ends a search.
    best_possible: float | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass written as Ragas' (its own ``__call__(self, predicted, actual)``, no
        ``_compute``) keeps that method as its computation and gets the base's ``__call__``, so
        it is called in every shape, validated, and what it returns is checked."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__call__")
        if own is not None and getattr(cls._compute, "__isabstractmethod__", False):
            cls._ragas_call = own  # type: ignore[attr-defined]
            cls.__call__ = Loss.__call__  # type: ignore[method-assign]
            cls._compute = Loss._compute_ragas_call  # type: ignore[method-assign]

    def __call__(
        self,
        predicted: ArrayLike | None = None,
        actual: ArrayLike | None = None,
        *,
        y_true: ArrayLike | None = None,
        y_pred: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> float:
        """Score the predictions against the human labels (equal-length, non-empty, shape ``(n,)``).

        Give the predictions once, as ``y_pred=`` or ``predicted`` (Ragas' first positional
        argument), and the labels once, as ``y_true=`` or ``actual`` (the second).

        ``sample_weight`` (shape ``(n,)``, positive): how many samples each one stands for, as in
        scikit-learn's metrics (a stratified subset's estimate of the whole, see
        :mod:`promptevolver.optimizers._focus`).

        Raises:
            TypeError: predictions or labels missing, or each given twice (``predicted`` and
                ``y_pred``; ``actual`` and ``y_true``).
            ValueError: unequal lengths, empty input, or values the loss does not accept.
        """
        p_in = _one(predicted, y_pred, "predicted", "y_pred")
        t_in = _one(actual, y_true, "actual", "y_true")
        t, p = np.asarray(t_in, dtype=np.float64), np.asarray(p_in, dtype=np.float64)
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

    def _compute_ragas_call(
        self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None
    ) -> float:
        """A Ragas-style subclass's own ``__call__(predicted, actual)``, with lists of floats in
        that order (Ragas' GeneticOptimizer passed the labels first, against its signature)."""
        value = self._ragas_call(y_pred.tolist(), y_true.tolist())  # type: ignore[attr-defined]
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            raise ValueError(f"{type(self).__name__}.__call__ returned {value!r}, not a finite number")
        return number

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """A pydantic model may hold a loss (``loss: Loss``), as Ragas' declares: any instance of
        the class is accepted as is (Ragas' hook called ``Loss(value)`` and refused every one)."""
        return core_schema.is_instance_schema(cls)

    @property
    def _direction(self) -> bool:
        """``higher_is_better``, or a clear error for a loss that never declared it."""
        try:
            return bool(self.higher_is_better)
        except AttributeError:
            raise TypeError(
                f"{type(self).__name__} declares no direction: set higher_is_better = True (a score such "
                "as accuracy) or False (an error such as MSE) in the class (Ragas maximised every loss)"
            ) from None

    def per_sample_correct(self, *, y_true: ArrayLike, y_pred: ArrayLike) -> np.ndarray:
        """Per-sample quality (1 = perfect, higher is better), shape ``(n,)``: used for Pareto
        fronts, complementary parents and the paired final choice. Binary: 1.0 where the
        prediction equals the label, else 0.0."""
        t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
        return (t == p).astype(np.float64)

    def from_mean_quality(self, mean: float) -> float | None:
        """The loss's value when the mean per-sample quality (:meth:`per_sample_correct`,
        weighted) is ``mean``, for a loss that is such a mean (accuracy; ``1 − mean`` for a mean
        squared error); None for one that is not (F1, kappa, a loss of your own). What a
        prediction-powered estimate (:mod:`promptevolver.evaluation._prediction_powered`) is
        computed through: clipped to the loss's range, as an estimate may leave it."""
        return None

    def better(self, a: float, b: float) -> bool:
        """True when score ``a`` is strictly better than ``b`` in this loss's direction."""
        return a > b if self._direction else a < b

    def worst(self) -> float:
        """A value worse than any real score (used for a candidate with nothing measured)."""
        return float("-inf") if self._direction else float("inf")

    def describe(self) -> dict[str, Any]:
        """The ``loss`` block of result.json."""
        return {"name": type(self).__name__, "higher_is_better": self._direction}


class _OneSetting(Loss):
    """A loss with one named setting, as Ragas' (``metric`` or ``reduction``): a class attribute
    that a subclass or an assignment may change, checked at construction and at each call (a
    ValueError naming it), shown by ``repr`` and :meth:`describe`."""

    #: The class a user names (in ``repr``, ``describe`` and errors), the setting and its values.
    _owner: ClassVar[str]
    _setting: ClassVar[str]
    _allowed: ClassVar[tuple[str, ...]]

    def _set(self, value: str | None) -> None:
        if value is not None:
            setattr(self, self._setting, value)
        self._checked()

    def _checked(self) -> str:
        return _choice(self._owner, self._setting, getattr(self, self._setting), self._allowed)

    def __repr__(self) -> str:
        return f"{self._owner}({self._setting}={getattr(self, self._setting)!r})"

    def describe(self) -> dict[str, Any]:
        checked = self._checked()
        return {"name": self._owner, self._setting: checked, "higher_is_better": self.higher_is_better}


class BinaryMetricLoss(_OneSetting):
    """Agreement of binary verdicts with binary human labels (higher is better).

    Args:
        metric: ``accuracy`` (fraction of equal verdicts) or ``f1_score`` (F1 of class 1,
            ``sklearn.metrics.f1_score``). When F1 is undefined — no positive label and no positive
            prediction anywhere — it is **1.0** (nothing to find and nothing falsely found:
            ``zero_division=1.0``); a positive on only one side gives 0.0 as usual. Ragas gives 0
            there, which ranks a judge that agrees on every sample of a minibatch without
            positives as the worst (docs/ragas.md, "Differences from Ragas").

    Raises:
        ValueError: unknown ``metric`` (given, set as an attribute, or a subclass's: at
            construction or at the next call); at call time, a value other than 0 or 1.
    """

    higher_is_better = True
    best_possible = 1.0
    supports_weights = True
    #: ``accuracy`` or ``f1_score`` (a class attribute, as in Ragas: a subclass may set it, and
    #: so may an assignment to an instance; another value raises ValueError at the next call).
    metric: Literal["accuracy", "f1_score"] = "accuracy"
    _owner, _setting, _allowed = "BinaryMetricLoss", "metric", ("accuracy", "f1_score")

    def __init__(self, *, metric: Literal["accuracy", "f1_score"] | None = None) -> None:
        self._set(metric)

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float:
        for name, values in (("y_true", y_true), ("y_pred", y_pred)):
            bad = values[(values != 0) & (values != 1)]
            if bad.size:
                raise ValueError(f"{name} must hold only 0 and 1, found {bad[0]!r}")
        if self._checked() == "accuracy":
            return float(accuracy_score(y_true, y_pred, sample_weight=weight))
        return float(f1_score(y_true, y_pred, zero_division=1.0, sample_weight=weight))

    def from_mean_quality(self, mean: float) -> float | None:
        """Accuracy is the mean per-sample quality (F1 is none)."""
        return min(1.0, max(0.0, mean)) if self._checked() == "accuracy" else None


class MSELoss(_OneSetting):
    """Squared error of numeric scores (lower is better; ``sklearn.metrics.mean_squared_error``).

    Args:
        reduction: ``mean`` (mean squared error) or ``sum`` (sum of squared errors = mean × n).

    Raises:
        ValueError: unknown ``reduction`` (given, set as an attribute, or a subclass's: at
            construction or at the next call, as Ragas raised at the call).
    """

    higher_is_better = False
    best_possible = 0.0
    supports_weights = True
    #: ``mean`` or ``sum`` (a class attribute, as in Ragas: a subclass may set it, and so may an
    #: assignment to an instance; another value raises ValueError at the next call).
    reduction: Literal["mean", "sum"] = "mean"
    _owner, _setting, _allowed = "MSELoss", "reduction", ("mean", "sum")

    def __init__(self, *, reduction: Literal["mean", "sum"] | None = None) -> None:
        self._set(reduction)

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float:
        mse = float(mean_squared_error(y_true, y_pred, sample_weight=weight))
        total = len(y_true) if weight is None else float(weight.sum())
        return mse * total if self._checked() == "sum" else mse

    def per_sample_correct(self, *, y_true: ArrayLike, y_pred: ArrayLike) -> np.ndarray:
        """1 − squared error, shape ``(n,)`` (1 = perfect; below 0 for errors above 1, unclipped).

        Its mean is 1 − MSE, so comparing two candidates' per-sample quality on the same samples
        (the paired final choice, screening) compares their squared errors: a candidate better
        there has the lower MSE. (A clipped 1 − |error| would score a miss by one level and by
        four alike on a 1–5 scale.)"""
        t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
        return 1.0 - (t - p) ** 2

    def from_mean_quality(self, mean: float) -> float | None:
        """The mean squared error is ``1 − mean`` quality (a sum of them is none)."""
        return max(0.0, 1.0 - mean) if self._checked() == "mean" else None


class ClassificationLoss(_OneSetting):
    """Agreement of named classes (a nominal metric: a pairwise a / b / tie, a category) with the
    human labels (higher is better). The class values are names, not distances: a wrong class is
    wrong by one whatever its number (never a squared error or "within one").

    Args:
        metric: ``accuracy`` (the share of equal classes) or ``macro_f1`` (the unweighted mean of
            the classes' F1, ``sklearn.metrics.f1_score(average="macro")`` over the classes
            present in either array; a class nobody gave nor predicted adds nothing). Macro F1
            weighs a rare class (a tie) as much as a common one.

    Raises:
        ValueError: unknown ``metric`` (given, or set as an attribute: at construction or at the
            next call).
    """

    higher_is_better = True
    best_possible = 1.0
    supports_weights = True
    #: ``accuracy`` or ``macro_f1`` (a class attribute, as the other losses': another value
    #: raises ValueError at construction or at the next call).
    metric: Literal["accuracy", "macro_f1"] = "accuracy"
    _owner, _setting, _allowed = "ClassificationLoss", "metric", ("accuracy", "macro_f1")

    def __init__(self, *, metric: Literal["accuracy", "macro_f1"] | None = None) -> None:
        self._set(metric)

    def _compute(self, y_true: np.ndarray, y_pred: np.ndarray, weight: np.ndarray | None = None) -> float:
        # class values may be any numbers (0.5: a tie), which scikit-learn reads as continuous
        _, codes = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
        t, p = codes[: len(y_true)], codes[len(y_true) :]
        if self._checked() == "accuracy":
            return float(accuracy_score(t, p, sample_weight=weight))
        return float(f1_score(t, p, average="macro", zero_division=0.0, sample_weight=weight))

    def from_mean_quality(self, mean: float) -> float | None:
        """Accuracy is the mean per-sample quality (macro F1 is none)."""
        return min(1.0, max(0.0, mean)) if self._checked() == "accuracy" else None


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
