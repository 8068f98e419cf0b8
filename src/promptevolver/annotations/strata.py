"""Class keys for stratified sampling: which class each sample belongs to for a ``stratify_key``."""

from __future__ import annotations

import json
import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from promptevolver.errors import AnnotationKeyError

if TYPE_CHECKING:
    from promptevolver.annotations.single import SingleMetricAnnotation

__all__ = ["KEY_FIELDS", "class_key", "stratify_keys"]

#: Sample fields usable as a ``stratify_key`` besides the label and extra fields.
KEY_FIELDS = ("metric_output", "is_accepted", "target")


def stratify_keys(dataset: SingleMetricAnnotation, stratify_key: str | None) -> list[Hashable]:
    """The class key of every sample of ``dataset`` for ``stratify_key``; shape ``(len(dataset),)``.

    See :meth:`SingleMetricAnnotation.stratify_keys` for the keys understood.

    Raises:
        AnnotationKeyError: an unknown key (the message names it and the valid forms).
    """
    if stratify_key is None or stratify_key == "label":
        return [class_key(label) for label in dataset.labels()]
    samples = dataset.samples
    if stratify_key in KEY_FIELDS or any(stratify_key in (s.model_extra or {}) for s in samples):
        return [class_key(getattr(s, stratify_key, None)) for s in samples]
    if stratify_key.startswith("metric_input."):
        return _input_keys(dataset, stratify_key.split(".", 1)[1])
    raise _unknown_key(dataset, stratify_key)


def _input_keys(dataset: SingleMetricAnnotation, field: str) -> list[Hashable]:
    samples = dataset.samples
    if samples and not any(field in s.metric_input for s in samples):
        present = sorted({k for s in samples for k in s.metric_input})
        raise AnnotationKeyError(
            f"unknown stratify_key 'metric_input.{field}': no sample has metric_input.{field}; "
            f"metric_input fields: {present}",
            path=dataset.source,
            metric=dataset.name,
        )
    return [class_key(s.metric_input.get(field)) for s in samples]


def _unknown_key(dataset: SingleMetricAnnotation, key: str) -> AnnotationKeyError:
    hint = ""
    if any(key in s.metric_input for s in dataset.samples):
        hint = f" (did you mean 'metric_input.{key}'?)"
    return AnnotationKeyError(
        f"unknown stratify_key {key!r}{hint}; use 'label', 'metric_output', 'is_accepted', "
        "'target', an extra sample field or 'metric_input.<field>'",
        path=dataset.source,
        metric=dataset.name,
    )


def class_key(value: Any) -> Hashable:
    """A hashable class key for a field value: NaN → None, lists and dicts → their JSON text."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value
