"""Which samples of a set can be learnt from: those with a human label (the label rule is in
:mod:`~promptevolver.annotations.models`). The unusable ones with their reasons, the loaders'
warning about them, and the usable labels as arrays."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from promptevolver.annotations.models import SampleAnnotation, UnusableSample, UnusableSamplesWarning

if TYPE_CHECKING:
    from promptevolver.annotations.single import SingleMetricAnnotation

__all__ = ["unusable_samples", "usable_label_array", "warn_unusable"]


def unusable_samples(samples: list[SampleAnnotation], *, binary: bool) -> list[UnusableSample]:
    """(position, reason) of every sample without a human label, in sample order; ``binary``:
    the metric's labels are verdicts (a rejected verdict is then flipped into a label)."""
    return [
        UnusableSample(i, s.unusable_reason(binary=binary))  # type: ignore[arg-type]
        for i, s in enumerate(samples)
        if s.target is None and (math.isnan(s.metric_output) or not (binary or s.is_accepted))
    ]


def warn_unusable(dataset: SingleMetricAnnotation) -> None:
    """Warn (:class:`UnusableSamplesWarning`, attributed to the loader's caller) when samples of
    ``dataset`` have no human label: how many, grouped by reason, the first 10 positions of each."""
    unusable = dataset.unusable_samples()
    if not unusable:
        return
    by_reason: dict[str, list[int]] = {}
    for sample_index, reason in unusable:
        by_reason.setdefault(reason, []).append(sample_index)
    details = "; ".join(
        f"{reason}: samples {indices[:10]}{' …' if len(indices) > 10 else ''}"
        for reason, indices in by_reason.items()
    )
    warnings.warn(
        f"file {dataset.source}, metric {dataset.name!r}: {len(unusable)} of {len(dataset)} samples have "
        f"no human label and cannot be learned from ({details}); see unusable_samples()",
        UnusableSamplesWarning,
        stacklevel=3,
    )


def usable_label_array(dataset: SingleMetricAnnotation) -> tuple[np.ndarray, np.ndarray]:
    """(positions, labels) of usable samples as arrays of shape ``(n_usable,)``."""
    labels = dataset.labels()
    idx = np.array([i for i, y in enumerate(labels) if y is not None], dtype=np.int64)
    return idx, np.array([labels[i] for i in idx], dtype=np.float64)
