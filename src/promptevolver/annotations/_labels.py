"""The kind of a metric's labels, binary, numeric or nominal, the labels a human can give (the
**label space**), and the check that every label fits it.

A metric is **binary** (its judge gives verdicts 0 or 1), **numeric** (it gives scores: a 0–1
score, a 1–5 rubric) or **nominal** (one of named classes, in no order: a pairwise verdict a / b /
tie, a category). The kind decides the human label of a rejected sample (the flipped verdict for a
binary metric, none for the others) and which loss and figures apply.

**The label space** — what a human can answer for a metric — has one home: the metric's
:class:`LabelScale` (``label_scale`` of a judge, read with
:func:`~promptevolver.judge._protocol.label_scale_of`). :meth:`LabelScale.label_space` lists the
:class:`LabelChoice` values a person can pick (the number the annotation file holds, and its name:
``1 "yes"`` / ``0 "no"`` for an aspect critic, ``1 "a"`` / ``0 "b"`` / ``0.5 "tie"`` for a
pairwise judge, each class of a classification judge, each level of a discrete rubric), or None
for a score that can be any number in its range. Review pages, reports and the agreement figures
read names from here, never from the judge's type.

The kind comes from the metric, not from a guess. As in Ragas, the annotation models accept any
finite number as a ``metric_output`` or ``target``; until a metric says otherwise a set's kind is:

1. the ``kind`` passed to the loader or the set (``"binary"`` or ``"numeric"``), checked: a
   declared binary metric's values must all be 0 or 1;
2. the ``"kind"`` key of a ``{"name", "kind", "samples"}`` file (what ``to_json`` writes), checked
   the same way;
3. else read off the values, never raising: ``"binary"`` when there are label values (every
   ``metric_output`` and ``target``, NaN outputs aside) and all of them are 0 or 1, ``"numeric"``
   otherwise (a 0–2 rubric ``[1, 1, 1, 0, 0, 0, 2, 2, 2]`` is numeric, not a binary set with a bad 2).

When a run starts, the metric's own :class:`LabelScale` decides
(:meth:`SingleMetricAnnotation.with_scale
<promptevolver.annotations._single.SingleMetricAnnotation.with_scale>`, before any LLM call): an
aspect critic is binary and every value must be 0 or 1; a rubric judge is numeric and every value
must lie in its ``score_range``; a supported fraction lies in [0, 1]. A value that does not fit is
an :class:`~promptevolver.errors.AnnotationError` naming the file, the sample and the field.

A ``metric_output`` of NaN (how Ragas records a failed judge call) fits either kind: it is no
label (the sample is unusable unless ``target`` is set) and does not count in the inference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from promptevolver.annotations._models import ANNOTATOR_FIELD, SampleAnnotation, UnusableSample
from promptevolver.errors import AnnotationError

__all__ = [
    "LABEL_KINDS",
    "PAIRWISE",
    "PAIRWISE_BINARY",
    "check_annotator_labels",
    "LabelChoice",
    "LabelKind",
    "LabelScale",
    "check_inputs",
    "check_label_values",
    "check_labels",
    "check_recorded_verdicts",
    "infer_kind",
    "unusable_samples",
]

#: What a metric's labels are: 0/1 verdicts, scores, or named classes.
LabelKind = Literal["binary", "numeric", "nominal"]
#: The label kinds, as accepted by ``kind`` arguments.
LABEL_KINDS: tuple[LabelKind, ...] = get_args(LabelKind)


@dataclass(frozen=True)
class LabelChoice:
    """One label a human can give: ``value``, the number an annotation file holds
    (``metric_output`` or ``target``), and ``name``, what a person reads (``"yes"``, ``"a"``,
    ``"tie"``, a class name, ``"4"``)."""

    value: float
    name: str


#: An aspect critic's verdicts.
YES_NO = (LabelChoice(0.0, "no"), LabelChoice(1.0, "yes"))


@dataclass(frozen=True)
class LabelScale:
    """What a metric's labels are, and the labels a human can give (:meth:`label_space`).

    Attributes:
        kind: ``"binary"`` (verdicts 0 or 1), ``"numeric"`` (scores) or ``"nominal"`` (named
            classes, in no order).
        low, high: a numeric scale's closed range (None: any finite number).
        discrete: a numeric scale of whole numbers from ``low`` to ``high`` (a 1–5 rubric).
        choices: the values and their names: a binary scale's 0 and 1 (default ``no`` / ``yes``),
            a nominal scale's classes (required, at least two; values and names distinct).

    A judge declares it as its ``label_scale`` attribute.

    Raises:
        ValueError: an unknown kind, a range on a scale that is not numeric, ``low > high``, a
            discrete scale without a whole-number range, binary choices that are not 0 and 1, or
            nominal choices missing, fewer than two, or repeated.
    """

    kind: LabelKind
    low: float | None = None
    high: float | None = None
    discrete: bool = False
    choices: tuple[LabelChoice, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in LABEL_KINDS:
            raise ValueError(f"kind must be one of {list(LABEL_KINDS)}, got {self.kind!r}")
        if (self.low is None) != (self.high is None) or (self.kind != "numeric" and self.low is not None):
            raise ValueError("a range is (low, high) together, and only on a numeric scale")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low must be <= high, got [{self.low:g}, {self.high:g}]")
        ends = self.value_range
        if self.discrete and not (ends is not None and all(float(v).is_integer() for v in ends)):
            raise ValueError("a discrete scale needs a whole-number range (low, high)")
        if self.kind == "numeric" and self.choices is not None:
            raise ValueError("a numeric scale's labels are its range, not choices")
        values = sorted(c.value for c in self.choices or ())
        if self.kind == "binary" and self.choices is not None and values != [0.0, 1.0]:
            raise ValueError("a binary scale's choices are the values 0 and 1")
        if self.kind == "nominal":
            choices = self.choices or ()
            if len(choices) < 2:
                raise ValueError("a nominal scale needs at least two choices (its classes)")
            if len(set(values)) < len(choices) or len({c.name for c in choices}) < len(choices):
                raise ValueError("a nominal scale's choices need distinct values and names")

    @property
    def value_range(self) -> tuple[float, float] | None:
        """``(low, high)``, or None when any finite number fits."""
        return None if self.low is None or self.high is None else (self.low, self.high)

    def label_space(self) -> tuple[LabelChoice, ...] | None:
        """The labels a human can give for this metric, in the order to offer them: the two
        verdicts (``0 no``, ``1 yes`` unless named otherwise), the nominal classes, or each level
        of a discrete scale; None for a score that can be any number in :attr:`value_range`."""
        if self.kind == "binary":
            return tuple(sorted(self.choices or YES_NO, key=lambda c: c.value))
        if self.kind == "nominal":
            return self.choices
        if self.discrete and self.low is not None and self.high is not None:
            return tuple(LabelChoice(float(v), str(v)) for v in range(int(self.low), int(self.high) + 1))
        return None

    @property
    def values(self) -> tuple[float, ...] | None:
        """The label values a human can give (:meth:`label_space`'s), or None for any number."""
        space = self.label_space()
        return None if space is None else tuple(c.value for c in space)

    def name_of(self, value: float) -> str:
        """The name of label ``value`` (``"tie"``); the number as text when it has none."""
        for choice in self.label_space() or ():
            if choice.value == value:
                return choice.name
        return f"{value:g}"


def _present(outputs: Sequence[float], targets: Sequence[float | None]) -> list[float]:
    """The label values: outputs without NaN, then the targets that are set."""
    return [v for v in outputs if v == v] + [t for t in targets if t is not None]  # v != v: NaN


def _count_binary(values: list[float]) -> int:
    return values.count(0.0) + values.count(1.0)  # list.count compares in C; 1 == 1.0


def _kind_of(values: list[float]) -> LabelKind:
    return "binary" if values and _count_binary(values) == len(values) else "numeric"


def infer_kind(samples: Sequence[SampleAnnotation]) -> LabelKind:
    """``"binary"`` when there are label values (``metric_output`` without NaN, and ``target``) and
    every one is exactly 0 or 1, else ``"numeric"`` (also for no values). Never raises: a value
    that is not 0 or 1 makes the set numeric until a metric says it is binary."""
    return _kind_of(_present([s.metric_output for s in samples], [s.target for s in samples]))


def check_labels(
    samples: Sequence[SampleAnnotation],
    kind: LabelKind | None = None,
    *,
    path: str | Path | None = None,
    metric: str | None = None,
) -> LabelKind:
    """The kind of the metric's labels (``kind``, else :func:`infer_kind`), once every label fits it.

    Raises:
        AnnotationError: ``kind`` is not a label kind; or ``kind`` is ``"binary"`` and a
            ``metric_output`` (NaN aside) or ``target`` is not 0 or 1 — the first such sample,
            named with its file, metric, index and field.
    """
    outputs = [s.metric_output for s in samples]
    targets = [s.target for s in samples]
    return check_label_values(outputs, targets, kind, path=path, metric=metric)


def check_label_values(
    outputs: Sequence[float],
    targets: Sequence[float | None],
    kind: LabelKind | None = None,
    *,
    value_range: tuple[float, float] | None = None,
    allowed: tuple[LabelChoice, ...] | None = None,
    path: str | Path | None = None,
    metric: str | None = None,
    declared_by: str = "declared binary",
    remedy: str = (
        'declare the metric numeric (kind=\'numeric\', or "kind": "numeric" in a {name, kind, samples} file)'
    ),
) -> LabelKind:
    """:func:`check_labels` on the validated samples' ``metric_output`` and ``target`` values
    (None: no target), aligned with the samples: what a loader checks without reading the
    sample objects again. ``value_range``: a numeric metric's ``(low, high)``, every value within
    it; ``allowed``: a nominal metric's classes, every value one of theirs; ``declared_by`` says
    in the error who made the metric binary, ``remedy`` the way out besides fixing the value.

    Raises:
        AnnotationError: as :func:`check_labels`, a value outside ``value_range``, or a nominal
            value that is no class of ``allowed`` (the first, named with its file, metric, sample
            index and field, and the classes).
    """
    if kind is not None and kind not in LABEL_KINDS:
        message = f"kind must be one of {list(LABEL_KINDS)}, got {kind!r}"
        raise AnnotationError(message, path=path, metric=metric)
    values = _present(outputs, targets)
    resolved = kind or _kind_of(values)
    if resolved == "binary" and _count_binary(values) != len(values):
        index, field, value = _first(outputs, targets, lambda v: v in (0.0, 1.0))
        raise AnnotationError(
            f"{_show(value)} is not a binary label (0 or 1) of this metric, {declared_by}; "
            f"fix the value, or {remedy}",
            path=path,
            metric=metric,
            sample_index=index,
            field=field,
        )
    if resolved == "nominal" and allowed is not None:
        codes = {c.value for c in allowed}
        if not all(v in codes for v in values):
            index, field, value = _first(outputs, targets, lambda v: v in codes)
            shown = ", ".join(f"{_show(c.value)} ({c.name})" for c in allowed)
            raise AnnotationError(
                f"{_show(value)} is not a label of this metric, whose labels are {shown}; fix the value",
                path=path,
                metric=metric,
                sample_index=index,
                field=field,
            )
    if resolved == "numeric" and value_range is not None:
        low, high = value_range
        if not all(low <= v <= high for v in values):
            index, field, value = _first(outputs, targets, lambda v: low <= v <= high)
            raise AnnotationError(
                f"{_show(value)} is outside this metric's score range [{_show(low)}, {_show(high)}]; "
                "fix the value, or the metric's score_range",
                path=path,
                metric=metric,
                sample_index=index,
                field=field,
            )
    return resolved


def _first(
    outputs: Sequence[float], targets: Sequence[float | None], fits: Callable[[float], bool]
) -> tuple[int, str, float]:
    """(sample index, field, value) of the first label value that does not fit (NaN outputs aside)."""
    for index, (output, target) in enumerate(zip(outputs, targets, strict=True)):
        if output == output and not fits(output):
            return index, "metric_output", output
        if target is not None and not fits(target):
            return index, "target", target
    raise AssertionError("called only when a value does not fit")


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) and value.is_integer() else repr(value)


def check_recorded_verdicts(
    samples: Sequence[SampleAnnotation],
    *,
    path: str | Path | None = None,
    metric: str | None = None,
    scale: LabelScale | None = None,
) -> None:
    """Every ``verdict`` recorded in a binary metric's prompt traces (``prompt_output`` and
    ``edited_output`` of each prompt) is 0 or 1 (a whole number; not a string, a boolean or null),
    or the name of one of ``scale``'s labels when it names them otherwise than ``no`` / ``yes``
    (a pairwise judge's ``"a"`` / ``"b"``).

    A sample whose one prompt's ``edited_output`` gives a verdict other than the label its
    ``is_accepted`` and ``metric_output`` say (rejected, ``metric_output`` 1, edited verdict 1) says
    two things: refused too, as neither can be taken for the other.

    Raises:
        AnnotationError: the first other value, naming the sample and the field
            (``prompts.NAME.prompt_output.verdict``).
    """
    names = {c.name for c in (scale.label_space() if scale else None) or ()} - {"no", "yes"}
    for index, sample in enumerate(samples):
        _check_edited_verdict(sample, index, path, metric)
        for name, prompt in sample.prompts.items():
            for part in ("prompt_output", "edited_output"):
                output = getattr(prompt, part)
                if not isinstance(output, dict) or "verdict" not in output:
                    continue
                verdict = output["verdict"]
                if isinstance(verdict, str) and verdict in names:
                    continue
                if isinstance(verdict, bool) or not isinstance(verdict, int | float) or verdict not in (0, 1):
                    raise AnnotationError(
                        f"{verdict!r} is not a verdict (0 or 1) of this binary metric; fix the recorded "
                        "output, or leave the verdict out",
                        path=path,
                        metric=metric,
                        sample_index=index,
                        field=f"prompts.{name}.{part}.verdict",
                    )


def _check_edited_verdict(
    sample: SampleAnnotation, index: int, path: str | Path | None, metric: str | None
) -> None:
    """Refuse a one-prompt sample whose edited verdict contradicts the label ``is_accepted`` and
    ``metric_output`` give (no ``target`` or annotators' labels, which would say which is meant)."""
    if len(sample.prompts) != 1 or sample.target is not None or sample.annotator_labels():
        return
    ((name, prompt),) = sample.prompts.items()
    edited = prompt.edited_output.get("verdict") if isinstance(prompt.edited_output, dict) else None
    label = sample.human_label(binary=True)
    if isinstance(edited, bool) or edited not in (0, 1) or label is None or edited == label:
        return
    said = "accepted" if sample.is_accepted else "rejected"
    raise AnnotationError(
        f"the edited verdict {edited:g} contradicts the sample's label: {said} with metric_output "
        f"{sample.metric_output:g} means the human's verdict is {label:g}; fix is_accepted or the edited "
        "verdict (or give the label as target)",
        path=path,
        metric=metric,
        sample_index=index,
        field=f"prompts.{name}.edited_output.verdict",
    )


#: Text fields of a metric's input (Ragas' single-turn sample): a string each, when present.
_TEXT_INPUTS = ("user_input", "response", "reference")


def check_inputs(
    samples: Sequence[SampleAnnotation], *, path: str | Path | None = None, metric: str | None = None
) -> None:
    """The text fields of every ``metric_input`` (:data:`_TEXT_INPUTS`) are strings (or null),
    and ``retrieved_contexts`` / ``reference_contexts`` lists of strings: a number would reach
    the judge's prompt as if it were the text.

    Raises:
        AnnotationError: the first other value, naming the sample and the field.
    """
    for index, sample in enumerate(samples):
        for key, value in sample.metric_input.items():
            if key in _TEXT_INPUTS:
                bad = value is not None and not isinstance(value, str)
            elif key.endswith("_contexts"):
                bad = value is not None and not (
                    isinstance(value, list) and all(isinstance(v, str) for v in value)
                )
            else:
                continue
            if bad:
                kind = "a string" if key in _TEXT_INPUTS else "a list of strings"
                raise AnnotationError(
                    f"{str(value)[:40]!r} ({type(value).__name__}) is not {kind}",
                    path=path,
                    metric=metric,
                    sample_index=index,
                    field=f"metric_input.{key}",
                )


def unusable_samples(samples: list[SampleAnnotation], *, binary: bool) -> list[UnusableSample]:
    """(position, reason) of every sample without a human label, in sample order; ``binary``:
    the metric's labels are verdicts (a rejected verdict is then flipped into a label)."""
    return [
        UnusableSample(i, s.unusable_reason(binary=binary))  # type: ignore[arg-type]
        for i, s in enumerate(samples)
        if s.target is None and s.human_label(binary=binary) is None
    ]


def check_annotator_labels(
    samples: Sequence[SampleAnnotation],
    scale: LabelScale | None = None,
    *,
    path: str | Path | None = None,
    metric: str | None = None,
) -> None:
    """Every sample's ``annotator_labels`` (when present) is a mapping annotator → label or a
    list of labels, each a number (or null), and one of the metric's labels when ``scale`` lists
    them (:meth:`LabelScale.label_space`).

    Raises:
        AnnotationError: the first other value, naming the sample and the field
            (``annotator_labels.<annotator>``).
    """
    allowed = None if scale is None else scale.values
    for index, sample in enumerate(samples):
        raw = (sample.model_extra or {}).get(ANNOTATOR_FIELD)
        if raw is None:
            continue
        if not isinstance(raw, (dict, list)):
            raise AnnotationError(
                f"{_show(raw)} is not a mapping annotator -> label nor a list of labels",
                path=path,
                metric=metric,
                sample_index=index,
                field=ANNOTATOR_FIELD,
            )
        items = raw.items() if isinstance(raw, dict) else enumerate(raw)
        for who, value in items:
            bad_type = value is not None and (isinstance(value, bool) or not isinstance(value, int | float))
            outside = not bad_type and value is not None and allowed is not None and value not in allowed
            if bad_type or outside:
                why = "not a number" if bad_type else f"not a label of this metric ({_labels_text(scale)})"
                raise AnnotationError(
                    f"{_show(value)} is {why}",
                    path=path,
                    metric=metric,
                    sample_index=index,
                    field=f"{ANNOTATOR_FIELD}.{who}",
                )


def _labels_text(scale: LabelScale | None) -> str:
    return ", ".join(f"{_show(c.value)} ({c.name})" for c in (scale.label_space() if scale else None) or ())


#: The verdict of a pairwise judge that may call a tie: response a better (1), b better (0), or
#: a tie (0.5): the preference for a, as a win, a loss and a draw are scored in paired comparisons.
PAIRWISE = LabelScale(
    "nominal", choices=(LabelChoice(1.0, "a"), LabelChoice(0.0, "b"), LabelChoice(0.5, "tie"))
)
#: The verdict of a pairwise judge without ties: is response a better (1) or b (0)?
PAIRWISE_BINARY = LabelScale("binary", choices=(LabelChoice(0.0, "b"), LabelChoice(1.0, "a")))
