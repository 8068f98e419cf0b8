"""Human labels written into an annotation file, in Ragas' format: what a review page gives.

:class:`AnnotationDocument` holds a file as it was read (every key, its order, the other metrics
and the file's shape: ``{metric: [...]}``, ``{"name", "samples"}``, a JSON list or JSONL) and the
samples of one metric as plain JSON objects; :meth:`AnnotationDocument.dumps` gives the text to
write back, in the same shape. The caller writes it (atomically, holding the file's lock:
:func:`promptevolver.rundir.write_atomic`, :func:`promptevolver.rundir.locked_file`).

A label (:class:`HumanLabel`) goes into a sample as Ragas' annotation app wrote one
(:func:`labelled_sample`):

* ``is_accepted``: whether the human's value equals the judge's ``metric_output``;
* ``prompts.<prompt>``: ``is_accepted`` alike, and ``edited_output`` (the judge's output with the
  human's value and reason) when the human rejected the verdict or wrote another reason; None
  when they accepted it as it was;
* ``target``: the human's value, where the rule of the package docstring would not give it
  otherwise (a rejected score, a sample without a judge verdict) or where the sample had one;
* ``annotator`` and ``annotated_at`` (UTC, ISO 8601): who gave the label, and when (extra keys,
  which Ragas' loader ignores and ours keeps).

A verdict in a prompt's output is written as the judge answers it (:meth:`LabelTarget.answer`):
``1`` for an aspect critic, ``"tie"`` for a pairwise judge, ``"refund"`` for a classification,
as its ``prompt_output`` holds it.

**A metric of several prompts** (statement support: an extractor and a verifier; an ensemble of
one) has no prompt whose output is its score (:attr:`LabelTarget.prompt_name` None): its label is
the sample's own, ``is_accepted`` and ``target`` as above, the reason under the sample's
:data:`HUMAN_REASON` key, and no prompt is touched. A prompt's ``edited_output`` there is a
correction of that prompt's own output (the statements, their verdicts) which the optimizer reads
as that prompt's evidence; a score given on a page says nothing about which prompt erred, so it
adds none and keeps the ones there.

A trace without a sample yet (from a pool) becomes one (:func:`new_sample`): its input, the
judge's verdict as ``metric_output`` (NaN when no judge verdict is known: then ``target`` carries
the label) and the judge's reason as the prompt's ``prompt_output``. Every sample written is
validated as a :class:`~promptevolver.annotations._models.SampleAnnotation` first: a label never
makes a file the loaders refuse.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from promptevolver.annotations._io import _SAMPLES, _is_named, _located, read_file
from promptevolver.annotations._models import HUMAN_REASON, SampleAnnotation
from promptevolver.errors import AnnotationError

__all__ = [
    "AnnotationDocument",
    "HumanLabel",
    "LabelTarget",
    "labelled_sample",
    "new_sample",
    "recorded_label",
]

Shape = Literal["metrics", "named", "list", "jsonl"]


@dataclass(frozen=True)
class HumanLabel:
    """A label a human gave: ``value`` (a verdict 0/1 or a score), the ``reason`` they wrote
    (None or empty: none), the ``annotator``'s name and ``at``, when (UTC, ISO 8601)."""

    value: float
    reason: str | None
    annotator: str
    at: str


@dataclass(frozen=True)
class LabelTarget:
    """Where a label goes in a sample (see the module docstring).

    Attributes:
        prompt_name: the prompt whose output holds the judge's verdict; None for a metric of
            several prompts, whose label is the sample's alone.
        label_field: the field of that output holding the verdict (``verdict``, ``score``,
            ``label``).
        binary: whether the metric is binary (its human label of a rejected verdict is then the
            flip, with no ``target``).
        names: label value → the name the judge answers for it, for a judge that answers names
            (a pairwise judge's ``a`` / ``b`` / ``tie``, a classification's classes); empty when it
            answers the number.
    """

    prompt_name: str | None
    label_field: str
    binary: bool
    names: tuple[tuple[float, str], ...] = ()

    def answer(self, value: float) -> float | int | str:
        """Label ``value`` as the judge's output holds it: its name, else the number (a whole
        one as an int)."""
        for known, name in self.names:
            if known == value:
                return name
        return _number(value)


def new_sample(
    metric_input: Mapping[str, Any],
    *,
    judge_value: float | None,
    judge_reason: str | None,
    target: LabelTarget,
    prompt_input: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A sample for a trace that has none yet, before any label: the trace's input, the judge's
    verdict (``metric_output``; NaN when unknown) and, when known, its output under the prompt
    (none for a metric of several prompts: ``target.prompt_name`` None)."""
    output = None
    if judge_value is not None:
        output = {"reason": judge_reason or "", target.label_field: target.answer(judge_value)}
    prompts = {}
    if target.prompt_name is not None:  # several prompts: no one prompt's output is the verdict
        prompts[target.prompt_name] = {
            "prompt_input": dict(prompt_input if prompt_input is not None else metric_input),
            "prompt_output": output,
            "edited_output": None,
            "is_accepted": False,
        }
    return {
        "metric_input": dict(metric_input),
        "metric_output": math.nan if judge_value is None else _number(judge_value),
        "prompts": prompts,
        "is_accepted": False,
    }


def labelled_sample(sample: Mapping[str, Any], label: HumanLabel, target: LabelTarget) -> dict[str, Any]:
    """``sample`` (a JSON object of an annotation file) with ``label`` written into it (see the
    module docstring); ``sample`` itself is not changed. Every key the label does not concern
    stays as it was.

    Raises:
        AnnotationError: the labelled sample is not a valid annotation sample (naming the field).
    """
    out = json.loads(json.dumps(sample))  # a deep copy, NaN included
    judged = out.get("metric_output")
    known = isinstance(judged, int | float) and not isinstance(judged, bool) and not math.isnan(judged)
    accepted = known and float(judged) == label.value
    reason = (label.reason or "").strip() or None
    if target.prompt_name is None:
        _sample_reason(out, reason)
    else:
        _prompt_label(out, target, label.value, reason, accepted)
    out["is_accepted"] = accepted
    if "target" in out or not known or not (accepted or target.binary):
        out["target"] = _number(label.value)
    out["annotator"] = label.annotator
    out["annotated_at"] = label.at
    _validate_one(out, index=None)
    return out


def _prompt_label(
    out: dict[str, Any], target: LabelTarget, value: float, reason: str | None, accepted: bool
) -> None:
    """The label in the output of the judge's one prompt (``target.prompt_name``): its
    ``edited_output`` (the judge's output with the human's verdict and reason) and ``is_accepted``."""
    assert target.prompt_name is not None
    prompts = out.setdefault("prompts", {})
    prompt = prompts.setdefault(
        target.prompt_name, {"prompt_input": dict(out.get("metric_input") or {}), "prompt_output": None}
    )
    given = prompt.get("prompt_output") if isinstance(prompt.get("prompt_output"), dict) else None
    edited = None
    if not accepted or (reason is not None and reason != (given or {}).get("reason")):
        edited = {**(given or {}), target.label_field: target.answer(value)}
        edited["reason"] = reason if reason is not None else (given or {}).get("reason", "")
    prompt["edited_output"] = edited
    prompt["is_accepted"] = accepted


def _sample_reason(out: dict[str, Any], reason: str | None) -> None:
    """The reason of a label no prompt holds (a metric of several prompts), as the sample's
    :data:`HUMAN_REASON`; a label without one leaves none (it replaces the earlier label)."""
    if reason is None:
        out.pop(HUMAN_REASON, None)
    else:
        out[HUMAN_REASON] = reason


def recorded_label(
    sample: SampleAnnotation, *, prompt_name: str | None, binary: bool
) -> dict[str, Any] | None:
    """The human label a sample holds, as a review page shows it: ``value``, ``reason`` (the
    edited reason of prompt ``prompt_name``; for a metric of several prompts, ``prompt_name``
    None, the sample's :data:`HUMAN_REASON`; or None), ``accepted``, ``annotator`` and ``at``
    (None when not recorded); None when the sample has no human label."""
    value = sample.human_label(binary=binary)
    if value is None:
        return None
    extra = sample.model_extra or {}
    reason = extra.get(HUMAN_REASON) if prompt_name is None else None
    prompt = sample.prompts.get(prompt_name) if prompt_name else None
    if prompt is not None and isinstance(prompt.edited_output, dict):
        reason = prompt.edited_output.get("reason")
    return {
        "value": value,
        "reason": reason if isinstance(reason, str) else None,
        "accepted": sample.is_accepted,
        "annotator": extra.get("annotator") if isinstance(extra.get("annotator"), str) else None,
        "at": extra.get("annotated_at") if isinstance(extra.get("annotated_at"), str) else None,
    }


def _number(value: float) -> float | int:
    """A whole number as an int (``1``, not ``1.0``, as Ragas' exports write verdicts)."""
    return int(value) if float(value).is_integer() else float(value)


class AnnotationDocument:
    """One annotation file's JSON, kept as read, and the samples of one of its metrics.

    Attributes:
        path: the file. metric: the metric whose samples these are.
        samples: its samples, as JSON objects (file order); replace or append through
            :meth:`replace` and :meth:`append`.
        validated: the same samples as :class:`SampleAnnotation` (for reading labels).
    """

    def __init__(
        self, path: Path, metric: str, raw: Any, shape: Shape, samples: list[dict[str, Any]]
    ) -> None:
        self.path, self.metric, self._raw, self._shape = path, metric, raw, shape
        self.samples = samples
        self.validated = _validate(samples, path, metric)

    @classmethod
    def open(
        cls, path: str | Path, *, metric_name: str | None = None, create: bool = False
    ) -> AnnotationDocument:
        """The file at ``path``; with ``create``, a file that does not exist yet is an empty one of
        metric ``metric_name`` (``{metric: []}``, Ragas' shape; written on the first label).

        Raises:
            AnnotationError: unreadable or malformed (naming the file, sample and field), several
                metrics and no ``metric_name``, or ``metric_name`` not in it.
        """
        file = Path(path)
        if create and not file.exists():
            if metric_name is None:
                raise AnnotationError("a new annotation file needs its metric's name", path=file)
            return cls(file, metric_name, {metric_name: []}, "metrics", [])
        raw = read_file(file)
        shape: Shape
        if file.suffix.lower() == ".jsonl":
            shape, name, samples = "jsonl", metric_name or file.stem, raw
        elif isinstance(raw, list):
            shape, name, samples = "list", metric_name or file.stem, raw
        elif isinstance(raw, dict) and _is_named(raw):
            shape, name = "named", str(raw["name"])
            if metric_name is not None and metric_name != name:
                raise AnnotationError(
                    f"metric {metric_name!r} not in file; metrics present: ['{name}']", path=file
                )
            samples = raw["samples"]
        elif isinstance(raw, dict):
            shape = "metrics"
            if metric_name is None and len(raw) != 1:
                raise AnnotationError(f"file holds {len(raw)} metrics {sorted(raw)}; name one", path=file)
            name = metric_name or next(iter(raw))
            if name not in raw:
                raise AnnotationError(
                    f"metric {name!r} not in file; metrics present: {sorted(raw)}", path=file
                )
            samples = raw[name]
        else:
            raise AnnotationError(
                f"expected a JSON object of metric name → samples, got {type(raw).__name__}", path=file
            )
        if not isinstance(samples, list) or not all(isinstance(s, dict) for s in samples):
            raise AnnotationError("expected a list of samples (JSON objects)", path=file, metric=name)
        return cls(file, name, raw, shape, samples)

    def replace(self, index: int, sample: dict[str, Any]) -> None:
        """Put ``sample`` (validated) at ``index``."""
        self.validated[index] = _validate_one(sample, index=index, path=self.path, metric=self.metric)
        self.samples[index] = sample

    def append(self, sample: dict[str, Any]) -> int:
        """Add ``sample`` (validated) at the end; returns its index."""
        index = len(self.samples)
        self.validated.append(_validate_one(sample, index=index, path=self.path, metric=self.metric))
        self.samples.append(sample)
        return len(self.samples) - 1

    def dumps(self) -> str:
        """The file's text with the samples as they are now, in the shape it was read in (JSON
        with a 2-space indent, or one sample a line for JSONL); NaN is written as ``NaN``, as
        Ragas writes a failed judge call."""
        if self._shape == "jsonl":
            return "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in self.samples)
        if self._shape == "list":
            data: Any = self.samples
        elif self._shape == "named":
            data = {**self._raw, "samples": self.samples}
        else:
            data = {**self._raw, self.metric: self.samples}
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _validate(samples: list[dict[str, Any]], path: Path, metric: str) -> list[SampleAnnotation]:
    try:
        return _SAMPLES.validate_python(samples)
    except ValidationError as exc:
        raise _located(exc, path=path, metric=metric) from exc


def _validate_one(
    sample: dict[str, Any], *, index: int | None, path: Path | None = None, metric: str | None = None
) -> SampleAnnotation:
    """``sample`` validated; an AnnotationError naming the sample (``index``) and the field."""
    try:
        return SampleAnnotation.model_validate(sample)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise AnnotationError(
            first["msg"], path=path, metric=metric, sample_index=index, field=field
        ) from exc
