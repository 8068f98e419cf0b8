"""The kind of a metric's labels, binary or numeric, and the check that every label fits it.

A metric is **binary** (its judge gives verdicts 0 or 1) or **numeric** (it gives scores: a 0–1
score, a 1–5 rubric). The kind decides the human label of a rejected sample (the flipped verdict
for a binary metric, none for a numeric one) and which loss can learn from the labels.

How the kind is decided, in this order:

1. the ``kind`` passed to the loader or the set (``"binary"`` or ``"numeric"``);
2. the ``"kind"`` key of a ``{"name", "kind", "samples"}`` file (what ``to_json`` writes);
3. inferred from the label values (every ``metric_output`` and ``target``, NaN outputs aside):
   binary when more than half of them are exactly 0 or 1, numeric otherwise (also when there
   are none).

A binary metric's label values must all be 0 or 1: one 0.5, 2, −1 or 1e308 among verdicts is an
:class:`~promptevolver.errors.AnnotationError` naming the sample and the field, raised at load,
not a metric quietly taken for numeric. A numeric metric's label values are finite numbers of
any scale (checked by :class:`~promptevolver.annotations.models.SampleAnnotation`, as is the type:
a string or a boolean is never a number). A score metric whose values are mostly exactly 0 or 1
(a faithfulness score that is often 1.0) is inferred binary: pass ``kind="numeric"``.

A ``metric_output`` of NaN (how Ragas records a failed judge call) fits either kind: it is no
label (the sample is unusable unless ``target`` is set) and does not count in the inference.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from promptevolver.annotations.models import SampleAnnotation
from promptevolver.errors import AnnotationError

__all__ = [
    "LABEL_KINDS",
    "LabelKind",
    "check_inputs",
    "check_label_values",
    "check_labels",
    "check_recorded_verdicts",
    "infer_kind",
]

LabelKind = Literal["binary", "numeric"]
#: The label kinds, as accepted by ``kind`` arguments.
LABEL_KINDS: tuple[LabelKind, ...] = get_args(LabelKind)


def _present(outputs: Sequence[float], targets: Sequence[float | None]) -> list[float]:
    """The label values: outputs without NaN, then the targets that are set."""
    return [v for v in outputs if v == v] + [t for t in targets if t is not None]  # v != v: NaN


def _count_binary(values: list[float]) -> int:
    return values.count(0.0) + values.count(1.0)  # list.count compares in C; 1 == 1.0


def _kind_of(values: list[float]) -> LabelKind:
    return "binary" if 2 * _count_binary(values) > len(values) else "numeric"


def infer_kind(samples: Sequence[SampleAnnotation]) -> LabelKind:
    """``"binary"`` when more than half of the label values (``metric_output`` without NaN, and
    ``target``) are exactly 0 or 1, else ``"numeric"`` (also for no values)."""
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
        AnnotationError: ``kind`` is not a label kind; or the metric is binary and a
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
    path: str | Path | None = None,
    metric: str | None = None,
) -> LabelKind:
    """:func:`check_labels` on the validated samples' ``metric_output`` and ``target`` values
    (None: no target), aligned with the samples: what a loader checks without reading the
    sample objects again."""
    if kind is not None and kind not in LABEL_KINDS:
        message = f"kind must be one of {list(LABEL_KINDS)}, got {kind!r}"
        raise AnnotationError(message, path=path, metric=metric)
    values = _present(outputs, targets)
    resolved = kind or _kind_of(values)
    if resolved == "binary" and _count_binary(values) != len(values):
        index, field, value = _first_non_binary(outputs, targets)
        why = "declared binary" if kind else _majority(values)
        raise AnnotationError(
            f"{_show(value)} is not a binary label (0 or 1) of this metric, {why}; fix the value, or "
            'declare the metric numeric (kind=\'numeric\', or "kind": "numeric" in a '
            "{name, kind, samples} file)",
            path=path,
            metric=metric,
            sample_index=index,
            field=field,
        )
    return resolved


def _first_non_binary(outputs: Sequence[float], targets: Sequence[float | None]) -> tuple[int, str, float]:
    """(sample index, field, value) of the first label value that is not 0 or 1 (NaN outputs aside)."""
    for index, (output, target) in enumerate(zip(outputs, targets, strict=True)):
        if output == output and output not in (0.0, 1.0):
            return index, "metric_output", output
        if target is not None and target not in (0.0, 1.0):
            return index, "target", target
    raise AssertionError("called only when a value is not 0 or 1")


def _majority(values: list[float]) -> str:
    return f"binary by its values ({_count_binary(values)} of {len(values)} are 0 or 1)"


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) and value.is_integer() else repr(value)


def check_recorded_verdicts(
    samples: Sequence[SampleAnnotation], *, path: str | Path | None = None, metric: str | None = None
) -> None:
    """Every ``verdict`` recorded in a binary metric's prompt traces (``prompt_output`` and
    ``edited_output`` of each prompt) is 0 or 1 (a whole number; not a string, a boolean or null).

    Raises:
        AnnotationError: the first other value, naming the sample and the field
            (``prompts.NAME.prompt_output.verdict``).
    """
    for index, sample in enumerate(samples):
        for name, prompt in sample.prompts.items():
            for part in ("prompt_output", "edited_output"):
                output = getattr(prompt, part)
                if not isinstance(output, dict) or "verdict" not in output:
                    continue
                verdict = output["verdict"]
                if isinstance(verdict, bool) or not isinstance(verdict, int | float) or verdict not in (0, 1):
                    raise AnnotationError(
                        f"{verdict!r} is not a verdict (0 or 1) of this binary metric; fix the recorded "
                        "output, or leave the verdict out",
                        path=path,
                        metric=metric,
                        sample_index=index,
                        field=f"prompts.{name}.{part}.verdict",
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
