"""``promptevolver agreement FILE_OR_CONFIG``: the annotations and their label scale to measure
the recorded judge on (:func:`load_recorded`); the figures are
:func:`promptevolver.evaluation.recorded_agreement`'s (:mod:`promptevolver.evaluation._recorded`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

from promptevolver.annotations import (
    LabelScale,
    SampleAnnotation,
    SingleMetricAnnotation,
    check_recorded_verdicts,
)
from promptevolver.errors import ConfigError

__all__ = ["load_recorded"]


def load_recorded(
    path: Path,
    *,
    metric_name: str | None = None,
    scale_name: str = "auto",
    classes: Sequence[str] | None = None,
) -> tuple[SingleMetricAnnotation, LabelScale]:
    """The annotations and their label scale from a run config (its judge's scale; its dataset as
    a run loads it) or an annotation file (``scale_name``: ``binary``, ``numeric``, ``pairwise``
    (a / b / tie), ``pairwise_binary`` (is a better), or ``auto``: pairwise when the samples hold
    ``response_a`` and ``response_b``, else the file's kind; ``classes``: a classification
    metric's class names, value i the i-th).

    Raises:
        ConfigError, AnnotationError: as loading a config or a file does; an unknown scale name.
    """
    from promptevolver.annotations import PAIRWISE, PAIRWISE_BINARY
    from promptevolver.judge import label_scale_of

    if path.suffix in (".yaml", ".yml"):
        from promptevolver.config import build_judge, load_dataset, load_run_config

        config = load_run_config(path)
        dataset = load_dataset(config)
        found = label_scale_of(build_judge(config.metric))
        return dataset, found or LabelScale(dataset.kind or "numeric")
    if classes:
        from promptevolver.annotations import LabelChoice

        scale = LabelScale("nominal", choices=tuple(LabelChoice(float(i), n) for i, n in enumerate(classes)))
        return SingleMetricAnnotation.from_json(path, metric_name, scale=scale, judge="--classes"), scale
    named = {
        "pairwise": PAIRWISE,
        "pairwise_binary": PAIRWISE_BINARY,
        "binary": LabelScale("binary"),
        "numeric": LabelScale("numeric"),
    }
    if scale_name not in (*named, "auto"):
        raise ConfigError(f"--scale {scale_name!r}: use one of {['auto', *named]}")
    if scale_name != "auto":
        return SingleMetricAnnotation.from_json(
            path, metric_name, scale=named[scale_name], judge=f"--scale {scale_name}"
        ), named[scale_name]
    with warnings.catch_warnings(record=True) as said:  # read as it will be taken, then said
        warnings.simplefilter("always")
        dataset = SingleMetricAnnotation.from_json(path, metric_name)
    if dataset.samples and all(
        {"response_a", "response_b"} <= s.metric_input.keys() for s in dataset.samples
    ):
        scale = PAIRWISE_BINARY if dataset.kind == "binary" else PAIRWISE
        return dataset.with_scale(scale, judge="a pairwise judge"), scale
    # a stray label is refused alone: the warning a numeric reading gives (rejected samples of a
    # non-binary metric have no label) would only mislead before it
    _check_stray_label(dataset, path)
    if dataset.kind == "binary":
        check_recorded_verdicts(dataset.samples, path=path, metric=dataset.name)
    for w in said:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return dataset, LabelScale(dataset.kind or "numeric")


#: Share of a file's labels that must be 0 or 1 for one that is not to read as a slip, not a score.
BINARY_SHARE = 0.9


def _check_stray_label(dataset: SingleMetricAnnotation, path: Path) -> None:
    """Refuse a file read as numeric only because of a few labels: every recorded verdict is 0 or
    1 and at least :data:`BINARY_SHARE` of the labels are, so the others are slips in a binary
    judge's file (a 2 among verdicts), not scores — measured as numeric they would make one
    "disagreement" of a typo and change every figure's kind.

    Raises:
        AnnotationError: naming the file, the first such sample and its field.
    """
    from promptevolver.errors import AnnotationError
    from promptevolver.evaluation import recorded_verdict

    if dataset.kind != "numeric" or not dataset.samples:
        return
    numeric = LabelScale("numeric")
    recorded = [recorded_verdict(s, numeric) for s in dataset.samples if len(s.prompts) == 1]
    if not recorded or any(v not in (0.0, 1.0) for v in recorded):
        return
    values = [(i, field, v) for i, s in enumerate(dataset.samples) for field, v in _labels_of(s)]
    stray = [(i, field, v) for i, field, v in values if v not in (0.0, 1.0)]
    if stray and len(values) - len(stray) >= BINARY_SHARE * len(values):
        i, field, v = stray[0]
        raise AnnotationError(
            f"sample {i}, field '{field}': {v:g} is not 0 or 1, while every recorded verdict and "
            f"{len(values) - len(stray)} of the {len(values)} labels are (a binary judge's file); fix it, "
            "or pass --scale numeric if the labels are scores",
            path=path,
        )


def _labels_of(sample: SampleAnnotation) -> list[tuple[str, float]]:
    """A sample's label values: ``metric_output`` (NaN aside) and ``target`` (when set)."""
    output, target = float(sample.metric_output), sample.target
    out = [("metric_output", output)] if output == output else []  # NaN: no label there
    return out + ([("target", float(target))] if target is not None else [])
