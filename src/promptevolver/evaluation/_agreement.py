"""How well a judge agrees with the humans: the figures reports and ``evaluate`` print.

* **Binary** metrics: accuracy, F1 of class 1 and Cohen's kappa, with the confusion matrix, the
  true positive and true negative rates, and the base rate beside kappa (the share of the most
  common human label: what a judge answering it always would score).
* **Nominal** metrics (named classes in no order: a pairwise verdict a / b / tie, a category):
  accuracy, unweighted Cohen's kappa, macro F1, precision / recall / F1 of every class and the
  k×k confusion matrix over the metric's classes (its label space), the base rate beside kappa.
  Never within-one or a squared error: class codes are names, not distances.
* **Numeric** metrics (regression-style): mean squared and mean absolute error; on an **ordinal**
  scale (every label and score a whole number, e.g. a 1–5 rubric) also the exact agreement, the
  share within one level (|score − label| ≤ 1) and Cohen's kappa with quadratic weights over the
  levels from the lowest to the highest value seen (Cohen 1968; levels no one used add nothing).

Beside the judge: :func:`annotator_agreement` — how the humans agree with each other (Cohen's kappa
of every pair of annotators, Fleiss' kappa of all: the ceiling a judge can be held to), and
:func:`position_bias` — a pairwise judge asked in both orders: how often it names the same response
(position consistency) and how often it prefers the response shown first.

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
    precision_recall_fscore_support,
)

from promptevolver.annotations import LabelChoice, LabelScale
from promptevolver.judge import Judgement

__all__ = [
    "PROPORTIONS",
    "RESAMPLED",
    "Agreement",
    "AnnotatorAgreement",
    "ClassFigures",
    "PositionBias",
    "agreement",
    "agreement_of",
    "annotator_agreement",
    "fleiss_kappa",
    "is_ordinal",
    "order_swap_bias",
    "position_bias",
]


@dataclass(frozen=True)
class ClassFigures:
    """Precision, recall and F1 of one class (judge answers of the class vs human labels of it),
    each in [0, 1] (0 where undefined: no answer or no label of the class), and ``support``, the
    human labels of the class."""

    value: float
    name: str
    precision: float
    recall: float
    f1: float
    support: int


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
        nominal: True for named classes (a pairwise verdict, a category): accuracy, cohen_kappa
            (unweighted), macro_f1, per_class and confusion over ``classes``.
        classes: the names of the confusion matrix's rows and columns, in order (binary and
            nominal; e.g. ``["no", "yes"]``, ``["a", "b", "tie"]``).
        per_class: precision / recall / F1 of every class (binary and nominal).
        macro_f1: the unweighted mean of the classes' F1 (nominal).
        tpr, tnr: true positive rate (recall of human 1s) and true negative rate (of human 0s),
            in [0, 1] (binary; None where the humans gave no such label).
        base_rate: the share of the most common human label, in [0, 1]: the accuracy of a judge
            that always answers it, to read kappa beside (binary and nominal).
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
    nominal: bool = False
    classes: list[str] | None = None
    per_class: list[ClassFigures] | None = None
    macro_f1: float | None = None
    tpr: float | None = None
    tnr: float | None = None
    base_rate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line: ``accuracy 0.900 | F1 0.923 | Cohen's kappa 0.78 | n 10, 0 failed``, or for a
        numeric metric ``MSE 0.4000 | MAE 0.4000 | within one 1.000 | weighted kappa 0.81 | ...``."""
        if self.binary:
            kappa = _f(self.cohen_kappa, 2)
            figures = f"accuracy {_f(self.accuracy)} | F1 {_f(self.f1)} | Cohen's kappa {kappa}"
        elif self.nominal:
            kappa = _f(self.cohen_kappa, 2)
            figures = f"accuracy {_f(self.accuracy)} | macro F1 {_f(self.macro_f1)} | Cohen's kappa {kappa}"
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
    scale: LabelScale | None = None,
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
        scale: the metric's labels (:class:`~promptevolver.annotations._labels.LabelScale`): a
            nominal scale gives the nominal figures over its classes whatever ``binary`` says;
            a binary scale names the two classes. None: binary or numeric as ``binary`` says.

    Raises:
        ValueError: unequal lengths, or no samples.
    """
    t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if len(t) != len(p) or len(t) == 0 or (w is not None and len(w) != len(t)):
        raise ValueError(f"need equal, non-empty y_true and y_pred, got {len(t)} and {len(p)}")
    if scale is not None and scale.kind == "nominal":
        return _nominal(t, p, failures, scale.label_space() or (), w)
    if not binary:
        return _numeric(t, p, failures, is_ordinal(t, p) if ordinal is None else ordinal, w)
    choices = (scale or LabelScale("binary")).label_space() or ()
    matrix = confusion_matrix(t, p, labels=[0.0, 1.0])
    per_class = _per_class(t, p, choices, w)
    return Agreement(
        binary=True,
        n=len(t),
        failures=failures,
        accuracy=float(accuracy_score(t, p, sample_weight=w)),
        f1=float(f1_score(t, p, zero_division=1.0, sample_weight=w)),
        cohen_kappa=_kappa(t, p, sample_weight=w),
        confusion=[[int(v) for v in row] for row in matrix],
        classes=[c.name for c in choices],
        per_class=per_class,
        tpr=_rate(t, p, 1.0, w),
        tnr=_rate(t, p, 0.0, w),
        base_rate=_base_rate(t, w),
    )


def _nominal(
    t: np.ndarray, p: np.ndarray, failures: int, choices: Sequence[LabelChoice], w: np.ndarray | None
) -> Agreement:
    t, p = _codes(t, choices), _codes(p, choices)  # class values may be any numbers (0.5: a tie)
    values = list(range(len(choices)))
    matrix = confusion_matrix(t, p, labels=values)
    per_class = _per_class(t, p, choices, w, coded=True)
    return Agreement(
        binary=False,
        nominal=True,
        n=len(t),
        failures=failures,
        accuracy=float(accuracy_score(t, p, sample_weight=w)),
        cohen_kappa=_kappa(t, p, levels=np.asarray(values), sample_weight=w),
        confusion=[[int(v) for v in row] for row in matrix],
        classes=[c.name for c in choices],
        per_class=per_class,
        macro_f1=float(np.mean([c.f1 for c in per_class])),
        base_rate=_base_rate(t, w),
    )


def _codes(values: np.ndarray, choices: Sequence[LabelChoice]) -> np.ndarray:
    """Each value's position among ``choices`` (scikit-learn reads 0.5 as a continuous target).

    Raises:
        ValueError: a value that is no class.
    """
    index = {c.value: k for k, c in enumerate(choices)}
    unknown = sorted({float(v) for v in values} - index.keys())
    if unknown:
        raise ValueError(f"{unknown[0]:g} is not a class of this metric ({[c.name for c in choices]})")
    return np.array([index[float(v)] for v in values], dtype=np.int64)


def _per_class(
    t: np.ndarray, p: np.ndarray, choices: Sequence[LabelChoice], w: np.ndarray | None, *, coded: bool = False
) -> list[ClassFigures]:
    values = list(range(len(choices))) if coded else [c.value for c in choices]
    precision, recall, f1, _ = precision_recall_fscore_support(
        t, p, labels=values, zero_division=0.0, sample_weight=w
    )
    support = [int(np.sum(t == v)) for v in values]
    return [
        ClassFigures(c.value, c.name, float(pr), float(re), float(f), n)
        for c, pr, re, f, n in zip(choices, precision, recall, f1, support)
    ]


def _rate(t: np.ndarray, p: np.ndarray, value: float, w: np.ndarray | None) -> float | None:
    """The share of human ``value`` labels the judge gave too (recall of the class); None: none."""
    mask = t == value
    if not mask.any():
        return None
    return float(np.average(p[mask] == value, weights=None if w is None else w[mask]))


def _base_rate(t: np.ndarray, w: np.ndarray | None) -> float:
    """The (weighted) share of the most common human label."""
    weights = np.ones_like(t) if w is None else w
    totals = {float(v): float(weights[t == v].sum()) for v in np.unique(t)}
    return max(totals.values()) / float(weights.sum())


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
    scale: LabelScale | None = None,
) -> Agreement:
    """:func:`agreement` of ``judgements`` (position → judgement) at ``positions`` against the
    human ``labels`` (indexed by position; every one at ``positions`` must be set). Failed
    evaluations are left out and counted by cause; when every one failed, ``n`` is 0 and every
    figure None. ``weights``: position → how many samples it stands for; ``scale``: the metric's
    labels (see :func:`agreement`).

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
    nominal = scale is not None and scale.kind == "nominal"
    if not y_true:
        return Agreement(
            binary=binary and not nominal, nominal=nominal, n=0, failures=failures, failure_causes=found
        )
    figures = agreement(
        y_true,
        y_pred,
        binary=binary,
        failures=failures,
        ordinal=ordinal,
        sample_weight=None if weights is None else w,
        scale=scale,
    )
    return replace(figures, failure_causes=found)


# --- resampled forms: arrays of shape (resamples, n) -> shape (resamples,), NaN where undefined ---
def _f1_resampled(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """F1 of class 1 per row (1.0 when neither side has a positive, as ``zero_division=1.0``)."""
    tp = np.sum((t == 1) & (p == 1), axis=1)
    wrong = np.sum(t != p, axis=1)
    return np.where(2 * tp + wrong == 0, 1.0, 2 * tp / np.maximum(2 * tp + wrong, 1))


def _kappa_resampled(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Cohen's (unweighted) kappa per row, for verdicts or nominal classes: observed agreement
    against chance, the sum over classes of P(human = c) · P(judge = c); NaN when chance
    agreement is 1 (one class)."""
    observed = np.mean(t == p, axis=1)
    chance = np.zeros(len(t))
    for value in np.unique(np.concatenate([t.ravel(), p.ravel()])):
        chance += np.mean(t == value, axis=1) * np.mean(p == value, axis=1)
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


# --- the humans among themselves, and a pairwise judge's position -------------------------------


@dataclass(frozen=True)
class AnnotatorAgreement:
    """How the annotators agree with each other: the ceiling a judge can be held to.

    Attributes:
        annotators: their names (keys of the samples' ``annotator_labels``), in order.
        items: items labelled by at least two annotators (the figures' base).
        pairwise_kappa: Cohen's kappa of each pair of annotators on the items both labelled
            (``{"a1 / a2": 0.85}``; None where undefined).
        fleiss_kappa: Fleiss' kappa over the items every annotator labelled (None when fewer than
            two, or undefined: one class only).
        unanimous: the share of items on which every annotator gave the same label.
    """

    annotators: list[str]
    items: int
    pairwise_kappa: dict[str, float | None]
    fleiss_kappa: float | None
    unanimous: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' kappa (Fleiss 1971) of an items × classes table of rating counts, every item rated
    by the same number of raters (at least 2); None when undefined (one class only). Equal to
    ``statsmodels.stats.inter_rater.fleiss_kappa`` (tested)."""
    table = np.asarray(counts, dtype=np.float64)
    raters = table.sum(axis=1)
    if table.size == 0 or raters.min() < 2 or np.ptp(raters) != 0:
        return None
    n = raters[0]
    p_class = table.sum(axis=0) / table.sum()
    agreement_per_item = (np.square(table).sum(axis=1) - n) / (n * (n - 1))
    observed, chance = agreement_per_item.mean(), np.square(p_class).sum()
    return None if chance >= 1.0 else float((observed - chance) / (1.0 - chance))


def annotator_agreement(
    ratings: Sequence[Mapping[str, float]], values: Sequence[float] | None = None
) -> AnnotatorAgreement | None:
    """:class:`AnnotatorAgreement` of per-item ratings (annotator → label, one mapping per item;
    items may miss annotators); ``values``: the metric's label values (default: those seen).
    None when no item has two annotators."""
    names = sorted({a for item in ratings for a in item})
    rated = [item for item in ratings if len(item) >= 2]
    if len(names) < 2 or not rated:
        return None
    classes = sorted({v for item in rated for v in item.values()} | set(values or ()))
    code = {c: k for k, c in enumerate(classes)}  # scikit-learn reads 0.5 as continuous
    kappas: dict[str, float | None] = {}
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            both = [(item[first], item[second]) for item in rated if first in item and second in item]
            if both:
                a, b = zip(*both)
                coded = [code[v] for v in a], [code[v] for v in b]
                kappas[f"{first} / {second}"] = _kappa(np.asarray(coded[0]), np.asarray(coded[1]))
    full = [item for item in rated if len(item) == len(names)]
    table = np.array([[list(item.values()).count(c) for c in classes] for item in full])
    unanimous = float(np.mean([len(set(item.values())) == 1 for item in rated]))
    return AnnotatorAgreement(
        annotators=names,
        items=len(rated),
        pairwise_kappa=kappas,
        fleiss_kappa=fleiss_kappa(table) if len(full) else None,
        unanimous=unanimous,
    )


@dataclass(frozen=True)
class PositionBias:
    """A pairwise judge asked in both orders (its verdicts in the same a / b terms).

    Attributes:
        pairs: pairs with a verdict in both orders.
        consistency: the share of them with the same verdict in both orders, in [0, 1] (1: no
            position bias).
        first_position: the share of a / b verdicts (ties left out) that name the response shown
            first, in [0, 1] (0.5: no preference); None without such verdicts.
    """

    pairs: int
    consistency: float | None
    first_position: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def position_bias(
    shown_first: Sequence[float], swapped: Sequence[float], *, a: float = 1.0, b: float = 0.0
) -> PositionBias:
    """:class:`PositionBias` of verdicts given with response a shown first (``shown_first``) and
    with b shown first (``swapped``), aligned, both in a / b terms (``a`` and ``b`` their values;
    anything else, e.g. a tie, names neither); NaN marks a missing verdict (left out)."""
    first, second = np.asarray(shown_first, dtype=np.float64), np.asarray(swapped, dtype=np.float64)
    both = ~np.isnan(first) & ~np.isnan(second)
    if not both.any():
        return PositionBias(0, None, None)
    first, second = first[both], second[both]
    decided = int(np.isin(first, (a, b)).sum() + np.isin(second, (a, b)).sum())
    first_shown = int((first == a).sum() + (second == b).sum())
    return PositionBias(
        pairs=int(both.sum()),
        consistency=float(np.mean(first == second)),
        first_position=first_shown / decided if decided else None,
    )


def order_swap_bias(judgements: Sequence[Judgement]) -> PositionBias | None:
    """:class:`PositionBias` of a pairwise judge's order-swapped judgements (their
    ``details["order_swap"]``, :class:`~promptevolver.judge._pairwise.PairwiseJudge`); failed and
    other judgements left out; None without any."""
    from promptevolver.judge import ORDER_SWAP

    values = {"a": 1.0, "b": 0.0, "tie": 0.5}
    pairs = [j.details[ORDER_SWAP] for j in judgements if j.details and ORDER_SWAP in j.details]
    if not pairs:
        return None
    return position_bias([values[p["a_first"]] for p in pairs], [values[p["b_first"]] for p in pairs])
