"""The annotation records: :class:`PromptAnnotation` and :class:`SampleAnnotation`, other
libraries' field names (:data:`FIELD_ALIASES`) and the human label rule (see the package docstring).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from promptevolver.errors import AnnotationKeyError

#: Input field names of other evaluation libraries → Ragas' names.
FIELD_ALIASES: dict[str, str] = {
    "input": "user_input",
    "actual_output": "response",
    "expected_output": "reference",
    "retrieved_context": "retrieved_contexts",
    "retrieval_context": "retrieved_contexts",
    "expected_context": "reference_contexts",
}
_LIST_FIELDS = ("retrieved_contexts", "reference_contexts")


#: The sample field holding each annotator's label (annotator → label, or a list of labels): the
#: human label is their majority when the sample has no ``target``.
ANNOTATOR_FIELD = "annotator_labels"
#: The sample key holding the reason of a label that no prompt's output holds (a metric of several
#: prompts: :mod:`._labelling`); an extra key, which Ragas' loader ignores and ours keeps.
HUMAN_REASON = "human_reason"


class UnusableSamplesWarning(UserWarning):
    """Loaded samples without a human label; see :meth:`SingleMetricAnnotation.unusable_samples`."""


class UnusableSample(NamedTuple):
    """A sample without a human label: its position in the set and the reason."""

    sample_index: int
    reason: str


def normalize_metric_input(data: dict[str, Any]) -> dict[str, Any]:
    """Rename other libraries' field names to Ragas' and wrap a string context in a list.

    Raises:
        ValueError: one field given under two names (e.g. both ``input`` and ``user_input``).
    """
    if FIELD_ALIASES.keys().isdisjoint(data) and not any(isinstance(data.get(f), str) for f in _LIST_FIELDS):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = FIELD_ALIASES.get(key, key)
        if name in out:
            raise ValueError(f"{name!r} is given twice (also as {key!r})")
        out[name] = [value] if name in _LIST_FIELDS and isinstance(value, str) else value
    return out


def _normalized(value: Any) -> Any:
    return normalize_metric_input(value) if isinstance(value, dict) else value


def _item(model: BaseModel, key: str) -> Any:
    """``model[key]`` for a declared or an extra field."""
    extra = model.model_extra or {}
    if key in type(model).model_fields or key in extra:
        return getattr(model, key)
    known = sorted([*type(model).model_fields, *extra])
    raise AnnotationKeyError(f"unknown field of {type(model).__name__}; fields: {known}", field=key)


class PromptAnnotation(BaseModel):
    """One prompt's trace inside a sample: what it was given, what it answered, the human's edit.

    ``is_accepted`` is the optional prompt-level verdict real exports contain. ``prompt_input``
    field names of other libraries are renamed as in metric inputs. Extra keys are kept.
    """

    model_config = ConfigDict(extra="allow")

    prompt_input: dict[str, Any]
    prompt_output: dict[str, Any] | None = None
    edited_output: dict[str, Any] | None = None
    is_accepted: bool | None = None

    @field_validator("prompt_input", mode="before")
    @classmethod
    def _normalize_input(cls, value: Any) -> Any:
        return _normalized(value)

    def __getitem__(self, key: str) -> Any:
        """Any declared or extra field. Raises AnnotationKeyError for an unknown one."""
        return _item(self, key)


class SampleAnnotation(BaseModel):
    """One judged sample: the metric's input and output, the human's verdict, the prompt traces.

    ``metric_output`` is a number (0/1 for a binary metric; NaN marks a failed judge call);
    ``target``, a finite number when given, overrides it as the human label. Numbers and
    ``is_accepted`` are strict: a string or a boolean is not a number, a number or a string not a
    boolean. Whether the values fit the metric's kind (binary or numeric) is checked for the whole
    set (:mod:`~promptevolver.annotations._labels`). Extra keys are kept.
    """

    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")

    metric_input: dict[str, Any]
    metric_output: float = Field(strict=True)
    prompts: dict[str, PromptAnnotation] = Field(default_factory=dict)
    is_accepted: bool = Field(strict=True)
    target: float | None = Field(default=None, allow_inf_nan=False, strict=True)

    @field_validator("metric_input", mode="before")
    @classmethod
    def _normalize_input(cls, value: Any) -> Any:
        return _normalized(value)

    @field_validator("metric_output")
    @classmethod
    def _not_infinite(cls, value: float) -> float:
        if math.isinf(value):
            raise ValueError("metric_output must be finite (NaN marks a failed judge call)")
        return value

    def __getitem__(self, key: str) -> Any:
        """Any declared or extra field. Raises AnnotationKeyError for an unknown one."""
        return _item(self, key)

    def annotator_labels(self) -> dict[str, float]:
        """Each annotator's label (annotator → label) from the sample's ``annotator_labels``
        field: a mapping annotator name → label, or a list of labels (named ``annotator 1``, …);
        null entries left out. Empty when the sample has none. Values are checked at load
        (:func:`~promptevolver.annotations._labels.check_annotator_labels`)."""
        raw = (self.model_extra or {}).get(ANNOTATOR_FIELD)
        if isinstance(raw, list):
            raw = {f"annotator {i + 1}": v for i, v in enumerate(raw)}
        if not isinstance(raw, dict):
            return {}
        return {str(k): float(v) for k, v in raw.items() if v is not None}

    def annotator_majority(self) -> float | None:
        """The label most annotators gave (more than any other), or None: no annotator labels,
        or the most given labels tie."""
        votes = Counter(self.annotator_labels().values()).most_common(2)
        if not votes or (len(votes) == 2 and votes[0][1] == votes[1][1]):
            return None
        return votes[0][0]

    def human_label(self, *, binary: bool) -> float | None:
        """The human label (rule in the package docstring); None when the sample has none."""
        if self.target is not None:
            return self.target
        if (self.model_extra or {}).get(ANNOTATOR_FIELD) is not None:
            return self.annotator_majority()
        if math.isnan(self.metric_output):
            return None
        if self.is_accepted:
            return self.metric_output
        return 1.0 - self.metric_output if binary else None

    def unusable_reason(self, *, binary: bool) -> str | None:
        """Why the sample has no human label; None when it has one."""
        if self.human_label(binary=binary) is not None:
            return None
        if (self.model_extra or {}).get(ANNOTATOR_FIELD) is not None:
            return "the annotators' labels tie (no majority) and there is no target"
        if math.isnan(self.metric_output):
            return "metric_output is NaN (failed judge call) and there is no target"
        return "rejected sample of a non-binary metric without a target"

    def human_reason(self, prompt_name: str) -> str | None:
        """The human's reason for the sample's label: the reason of ``prompt_name``'s approved
        output (:meth:`expected_output`), else the one a label of a metric of several prompts
        keeps under :data:`HUMAN_REASON` (no prompt's output holds it); None when there is none."""
        reason = (self.expected_output(prompt_name) or {}).get("reason")
        return str(reason) if reason else self.label_reason

    @property
    def label_reason(self) -> str | None:
        """The reason of a label given to the whole sample (a metric of several prompts, under
        :data:`HUMAN_REASON`); None when there is none."""
        given = (self.model_extra or {}).get(HUMAN_REASON)
        return given if isinstance(given, str) and given.strip() else None

    def expected_output(self, prompt_name: str) -> dict[str, Any] | None:
        """The human-approved output of ``prompt_name``: edited, else accepted, else None."""
        prompt = self.prompts.get(prompt_name)
        if prompt is None:
            return None
        if prompt.edited_output is not None:
            return prompt.edited_output
        return prompt.prompt_output if self.is_accepted else None


def sample_key(inputs: Mapping[str, Any]) -> str:
    """A sample's identity by content: sha256 (hex) of its input fields as JSON with sorted keys
    (None and empty values ignored), so the same sample is found in another file or order."""
    import hashlib
    import json

    shown = {k: v for k, v in inputs.items() if v not in (None, "", [])}
    return hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
