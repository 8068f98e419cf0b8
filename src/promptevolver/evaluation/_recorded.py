"""The recorded judge, measured with no LLM call (``promptevolver agreement FILE_OR_CONFIG``, the
report's "Recorded judge" section, ``estimate``'s disagreement line).

An annotation file already holds what its judge answered beside what the humans said. The
**recorded verdict** of a sample (:func:`recorded_verdict`) is the label its only prompt trace
answered (``prompt_output.verdict`` or ``.score``; a label's name such as ``"tie"`` read through
the metric's label space) — in a Ragas export whose human edited the verdict, ``metric_output``
already holds the corrected value — else ``metric_output``; the human label is ``target``, the
annotators' majority, or the accepted / flipped verdict. :func:`recorded_agreement` compares the
two, sample by sample,
as the field reports a judge's alignment (MLflow's judge alignment, hamelsmu's validate-evaluator,
Arize, Latitude):

* accuracy with its Wilson interval, Cohen's kappa with a bootstrap interval **beside the base
  rate** (a judge answering the most common label always scores the base rate, and kappa 0), the
  true positive / negative rates of a binary metric or each class's precision / recall / F1, the
  confusion matrix (figures: :mod:`promptevolver.evaluation._agreement`);
* every disagreement, with the sample's ``id`` (else its position) and the judge's reason;
* with several annotators (``annotator_labels``): their agreement with each other — Cohen's kappa
  of every pair, Fleiss' kappa — the ceiling beside the judge; the judge's soft accuracy (the
  share of annotators who gave its verdict); split items (annotators not unanimous) kept, dropped
  or down-weighted (``split_items``);
* for a pairwise judge whose verdict is also recorded with the responses swapped
  (``metric_output_swapped``, in the same a / b terms): position consistency, first-position
  preference, and the figures on the pairs both orders agree on.

A sample with a human label but no recorded verdict (``metric_output`` NaN: the judge's answer
named none) is counted, never scored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from promptevolver.annotations import LabelScale, SampleAnnotation, SingleMetricAnnotation
from promptevolver.evaluation._agreement import (
    RESAMPLED,
    Agreement,
    AnnotatorAgreement,
    PositionBias,
    agreement,
    annotator_agreement,
    position_bias,
)
from promptevolver.evaluation._intervals import bootstrap_interval, wilson_interval

__all__ = ["SPLIT_ITEMS", "SWAPPED_FIELD", "RecordedAgreement", "recorded_agreement", "recorded_verdict"]

#: What to do with items the annotators did not label alike.
SPLIT_ITEMS = ("keep", "drop", "weight")
#: The sample field holding a pairwise judge's verdict given with the responses swapped.
SWAPPED_FIELD = "metric_output_swapped"
#: Disagreements listed in the text output (every one in the JSON).
SHOWN = 10


@dataclass(frozen=True)
class RecordedAgreement:
    """How the verdicts an annotation file records agree with its human labels.

    Attributes:
        metric, source: the metric's name and file.
        scale: its labels (names in figures and disagreements).
        figures: the agreement (:class:`~promptevolver.evaluation._agreement.Agreement`; its
            ``failures`` are the samples with a label but no recorded verdict).
        intervals: figure → (low, high) at 95 %: accuracy (Wilson; bootstrap when weighted),
            cohen_kappa / weighted_kappa (percentile bootstrap); None where undefined.
        without_verdict: positions of samples with a human label and no recorded verdict.
        without_label: samples with no human label (not scored).
        split_items: ``keep``, ``drop`` or ``weight``; dropped: the split items left out.
        soft_accuracy: the mean share of annotators who gave the judge's verdict (None without
            annotators).
        disagreements: each scored sample whose verdict differs from its label: ``id``,
            ``position``, ``human``, ``judge`` (label names) and ``reason`` (the recorded one).
        annotators: the humans' agreement with each other (None with fewer than two annotators).
        position: position consistency of a pairwise judge recorded in both orders (None
            without ``metric_output_swapped``).
        agreed_only: the figures on the pairs whose two orders agree (None as ``position``).
    """

    metric: str
    source: str | None
    scale: LabelScale
    figures: Agreement
    intervals: dict[str, tuple[float, float] | None]
    without_verdict: list[int]
    without_label: int
    split_items: str = "keep"
    dropped: int = 0
    soft_accuracy: float | None = None
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    annotators: AnnotatorAgreement | None = None
    position: PositionBias | None = None
    agreed_only: Agreement | None = None

    @property
    def disagreement_rate(self) -> float | None:
        """The share of scored samples whose recorded verdict differs from the human label."""
        n = self.figures.n
        return None if n == 0 else len(self.disagreements) / n

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``agreement --json``: every figure, every disagreement."""
        return {
            "metric": self.metric,
            "source": self.source,
            "llm_calls": 0,
            "labels": [{"value": c.value, "name": c.name} for c in self.scale.label_space() or ()],
            **self.figures.to_dict(),
            "intervals": {k: list(v) if v else None for k, v in self.intervals.items()},
            "without_verdict": self.without_verdict,
            "without_label": self.without_label,
            "split_items": self.split_items,
            "dropped": self.dropped,
            "soft_accuracy": self.soft_accuracy,
            "disagreement_rate": self.disagreement_rate,
            "disagreements": self.disagreements,
            "annotators": None if self.annotators is None else self.annotators.to_dict(),
            "position": None if self.position is None else self.position.to_dict(),
            "agreed_only": None if self.agreed_only is None else self.agreed_only.to_dict(),
        }

    def lines(self) -> list[str]:
        """What ``promptevolver agreement`` prints."""
        a = self.figures
        head = (
            f"recorded judge of {self.metric!r} ({self.source or 'in memory'}): 0 LLM calls, the verdicts "
            "the file records against the human labels"
        )
        counted = f"  {a.n} scored; {len(self.without_verdict)} with a human label and no recorded verdict"
        counted += f"; {self.without_label} without a human label"
        if self.split_items == "drop":
            counted += f"; {self.dropped} split items dropped (the annotators disagreed)"
        elif self.split_items == "weight":
            counted += "; split items weighted by the share of annotators behind their label"
        lines = [head, counted]
        if a.n == 0:
            return [*lines, "  nothing to score: n/a"]
        lines += _figure_lines(a, self.intervals, self.scale)
        if self.soft_accuracy is not None:
            lines.append(
                f"  soft accuracy {self.soft_accuracy:.4f} (the mean share of annotators giving its verdict)"
            )
        if self.annotators is not None:
            lines.append("  " + _annotator_line(self.annotators))
        if self.position is not None:
            lines.append("  " + _position_line(self.position, self.agreed_only))
        lines.append(_disagreement_lines(self.disagreements, a.n))
        lines += [
            f"    {d['id']}: human {d['human']}, judge {d['judge']}"
            + (f" ({_short(d['reason'])})" if d["reason"] else "")
            for d in self.disagreements[:SHOWN]
        ]
        return lines


def _f(value: float | None, digits: int = 4) -> str:
    return (
        "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"
    )


def _ci(interval: tuple[float, float] | None, how: str) -> str:
    return "" if interval is None else f" (95% CI {interval[0]:.3f} to {interval[1]:.3f}, {how})"


def _figure_lines(
    a: Agreement, intervals: dict[str, tuple[float, float] | None], scale: LabelScale
) -> list[str]:
    if not (a.binary or a.nominal):
        return ["  " + a.summary()]
    base = next(
        (c.name for c in a.per_class or () if c.support == max(x.support for x in a.per_class or ())), ""
    )
    lines = [
        f"  accuracy {_f(a.accuracy)}{_ci(intervals.get('accuracy'), 'Wilson')} | Cohen's kappa "
        f"{_f(a.cohen_kappa)}{_ci(intervals.get('cohen_kappa'), 'bootstrap')} beside a base rate of "
        f"{_f(a.base_rate)} (always '{base}')"
    ]
    if a.binary:
        lines.append(f"  TPR {_f(a.tpr)} | TNR {_f(a.tnr)} | F1 {_f(a.f1)}")
    else:
        lines.append(f"  macro F1 {_f(a.macro_f1)}")
    lines += [
        f"    {c.name}: precision {c.precision:.3f}, recall {c.recall:.3f}, F1 {c.f1:.3f} (human {c.support})"
        for c in a.per_class or ()
    ]
    names = a.classes or []
    width = max([len(n) for n in names] + [5])
    lines.append("  confusion (rows: human, columns: judge): " + " ".join(n.rjust(width) for n in names))
    lines += [
        f"    {name.rjust(width)} " + " ".join(str(v).rjust(width) for v in row)
        for name, row in zip(names, a.confusion or [])
    ]
    return lines


def _annotator_line(h: AnnotatorAgreement) -> str:
    pairs = ", ".join(f"{k} {_f(v, 3)}" for k, v in h.pairwise_kappa.items())
    return (
        f"annotators ({len(h.annotators)}, {h.items} items): Cohen's kappa {pairs}; Fleiss' kappa "
        f"{_f(h.fleiss_kappa, 3)}; unanimous on {_f(h.unanimous, 3)}: the ceiling beside the judge"
    )


def _position_line(p: PositionBias, agreed: Agreement | None) -> str:
    line = (
        f"both orders: the same verdict on {_f(p.consistency, 3)} of {p.pairs} pairs (position consistency); "
        f"the response shown first chosen in {_f(p.first_position, 3)} of its verdicts"
    )
    if agreed is not None and agreed.n:
        line += f"; on the {agreed.n} pairs both orders agree on: accuracy {_f(agreed.accuracy)}"
    return line


def _disagreement_lines(found: list[dict[str, Any]], n: int) -> str:
    more = f" (first {SHOWN}; all of them: --json)" if len(found) > SHOWN else ""
    return f"  disagreements: {len(found)} of {n}{more}"


def _short(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def recorded_agreement(
    dataset: SingleMetricAnnotation,
    scale: LabelScale,
    *,
    split_items: Literal["keep", "drop", "weight"] = "keep",
    random_seed: int = 0,
    resamples: int = 2000,
) -> RecordedAgreement:
    """The agreement of ``dataset``'s recorded verdicts (``metric_output``) with its human labels
    (see the module docstring); ``dataset`` bound to ``scale`` already (its labels checked).
    The bootstrap intervals draw ``resamples`` resamples (0: no intervals) from
    ``numpy.random.default_rng(random_seed)``.

    Raises:
        ValueError: an unknown ``split_items``.
    """
    if split_items not in SPLIT_ITEMS:
        raise ValueError(f"split_items must be one of {list(SPLIT_ITEMS)}, got {split_items!r}")
    labels = dataset.labels()
    verdicts = [recorded_verdict(s, scale) for s in dataset.samples]
    ratings = [s.annotator_labels() for s in dataset.samples]
    weights = [_weight(r, labels[i]) for i, r in enumerate(ratings)]
    chosen, without, dropped = [], [], 0
    for i in range(len(dataset.samples)):
        if labels[i] is None:
            continue
        if split_items == "drop" and weights[i] < 1.0:
            dropped += 1
            continue
        if math.isnan(verdicts[i]):
            without.append(i)
            continue
        chosen.append(i)
    y_true = [float(labels[i]) for i in chosen]  # type: ignore[arg-type]
    y_pred = [verdicts[i] for i in chosen]
    w = [weights[i] for i in chosen] if split_items == "weight" else None
    binary = scale.kind == "binary"
    figures = (
        agreement(y_true, y_pred, binary=binary, failures=len(without), sample_weight=w, scale=scale)
        if chosen
        else Agreement(binary=binary, nominal=scale.kind == "nominal", n=0, failures=len(without))
    )
    position, agreed = _order_swap(dataset, chosen, y_true, y_pred, scale)
    return RecordedAgreement(
        metric=dataset.name,
        source=dataset.source,
        scale=scale,
        figures=figures,
        intervals=_intervals(figures, y_true, y_pred, w, random_seed, resamples),
        without_verdict=without,
        without_label=sum(label is None for label in labels),
        split_items=split_items,
        dropped=dropped,
        soft_accuracy=_soft(ratings, chosen, y_pred),
        disagreements=_disagreements(dataset, chosen, y_true, y_pred, scale),
        annotators=annotator_agreement([r for r in ratings if r], scale.values),
        position=position,
        agreed_only=agreed,
    )


def recorded_verdict(sample: SampleAnnotation, scale: LabelScale) -> float:
    """The verdict the judge recorded for ``sample`` (see the module docstring): the label field
    (``verdict``, else ``score``) of its only prompt trace's ``prompt_output`` — a number, or the
    name of a label of ``scale`` — else ``metric_output``; NaN when it names none."""
    if len(sample.prompts) == 1:
        output = next(iter(sample.prompts.values())).prompt_output or {}
        names = {c.name: c.value for c in scale.label_space() or ()}
        for key in ("verdict", "score"):
            value = output.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            if isinstance(value, str) and value in names:
                return names[value]
    return sample.metric_output


def _weight(ratings: dict[str, float], label: float | None) -> float:
    """The share of annotators who gave ``label`` (1.0 without annotators)."""
    if len(ratings) < 2 or label is None:
        return 1.0
    return sum(v == label for v in ratings.values()) / len(ratings)


def _soft(ratings: list[dict[str, float]], chosen: list[int], y_pred: list[float]) -> float | None:
    shares = [
        sum(v == verdict for v in ratings[i].values()) / len(ratings[i])
        for i, verdict in zip(chosen, y_pred)
        if ratings[i]
    ]
    return float(np.mean(shares)) if shares else None


def _intervals(
    a: Agreement,
    y_true: list[float],
    y_pred: list[float],
    w: list[float] | None,
    random_seed: int,
    resamples: int,
) -> dict[str, tuple[float, float] | None]:
    if a.n == 0 or resamples == 0:
        return {}
    rng = np.random.default_rng(random_seed)
    out: dict[str, tuple[float, float] | None] = {}
    if a.accuracy is not None and w is None:
        out["accuracy"] = wilson_interval(sum(t == p for t, p in zip(y_true, y_pred)), len(y_true))
    kappa = "weighted_kappa" if a.ordinal else "cohen_kappa"
    if (a.binary or a.nominal or a.ordinal) and w is None:
        out[kappa] = bootstrap_interval(RESAMPLED[kappa], y_true, y_pred, rng=rng, resamples=resamples)
    return out


def _disagreements(
    dataset: SingleMetricAnnotation,
    chosen: list[int],
    y_true: list[float],
    y_pred: list[float],
    scale: LabelScale,
) -> list[dict[str, Any]]:
    out = []
    for i, t, p in zip(chosen, y_true, y_pred):
        if t == p:
            continue
        sample = dataset.samples[i]
        out.append(
            {
                "id": _identity(sample, i),
                "position": i,
                "human": scale.name_of(t),
                "judge": scale.name_of(p),
                "reason": _reason(sample),
            }
        )
    return out


def _identity(sample: Any, position: int) -> str:
    extra = sample.model_extra or {}
    for key in ("id", "sample_id", "trace_id"):
        if extra.get(key) not in (None, ""):
            return str(extra[key])
    return f"#{position}"


def _reason(sample: Any) -> str | None:
    """The recorded judge's reason (its only prompt's ``prompt_output.reason``), if any."""
    if len(sample.prompts) != 1:
        return None
    output = next(iter(sample.prompts.values())).prompt_output or {}
    reason = output.get("reason")
    return reason if isinstance(reason, str) and reason.strip() else None


def _order_swap(
    dataset: SingleMetricAnnotation,
    chosen: list[int],
    y_true: list[float],
    y_pred: list[float],
    scale: LabelScale,
) -> tuple[PositionBias | None, Agreement | None]:
    swapped = [(dataset.samples[i].model_extra or {}).get(SWAPPED_FIELD) for i in chosen]
    if all(v is None for v in swapped):
        return None, None
    other = [math.nan if v is None else float(v) for v in swapped]
    bias = position_bias(y_pred, other)
    same = [k for k, (p, o) in enumerate(zip(y_pred, other)) if p == o]
    if not same:
        return bias, None
    figures = agreement(
        [y_true[k] for k in same], [y_pred[k] for k in same], binary=scale.kind == "binary", scale=scale
    )
    return bias, figures
