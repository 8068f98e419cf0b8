"""A pool of traces to annotate: metric inputs without labels (``promptevolver suggest --pool``).

:func:`read_pool` reads either

* JSONL (or a JSON list) of Ragas evaluation-dataset rows: one object per trace holding its
  input fields (``user_input``, ``response``, ``reference``, ``retrieved_contexts``…; other
  libraries' names are renamed as in :data:`~promptevolver.annotations._models.FIELD_ALIASES`),
  or rows that carry them under ``metric_input`` (annotation samples);
* a Ragas annotation file (``{metric name: [sample, ...]}`` or ``{"name", "samples"}``): each
  sample's ``metric_input``. Its labels, verdicts and reasons are ignored.

Only the fields are checked here (a JSON object per trace); whether a trace has the fields a judge
needs is checked by the caller, which knows the judge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from promptevolver.annotations._io import _metric_groups, read_file
from promptevolver.annotations._models import normalize_metric_input
from promptevolver.errors import AnnotationError

__all__ = ["read_pool"]


def read_pool(path: str | Path, *, metric_name: str | None = None) -> list[dict[str, Any]]:
    """The traces of a pool file, in file order: one metric input (field name → value) each.

    Args:
        path: a ``.jsonl`` file (one trace per line), or a ``.json`` list of traces or annotation file.
        metric_name: the metric to take from an annotation file holding several (its only metric
            otherwise).

    Returns:
        ``list[dict[str, Any]]``, one entry per trace (field names normalised to Ragas').

    Raises:
        AnnotationError: unreadable or malformed file, no trace in it, a trace that is not a JSON
            object (or whose ``metric_input`` is not one), a field given under two names, or an
            annotation file without the metric (the message names file, sample index and field).
    """
    file = Path(path)
    raw = read_file(file)
    rows = raw if isinstance(raw, list) else _annotation_rows(raw, file, metric_name)
    traces = [_trace(row, file, i) for i, row in enumerate(rows)]
    if not traces:
        raise AnnotationError("no trace in the pool", path=file)
    return traces


def _annotation_rows(raw: Any, path: Path, metric_name: str | None) -> list[Any]:
    groups = _metric_groups(raw, path, metric_name)
    if metric_name is not None and metric_name in groups:
        name = metric_name
    elif len(groups) == 1:
        name = next(iter(groups))
    else:
        wanted = f"metric {metric_name!r} not in the file" if metric_name else "several metrics"
        raise AnnotationError(f"{wanted}; metrics present: {sorted(groups)}", path=path)
    rows = groups[name][0]
    if not isinstance(rows, list):
        raise AnnotationError("expected a list of samples", path=path, metric=name)
    return rows


def _trace(row: Any, path: Path, index: int) -> dict[str, Any]:
    field = None
    if isinstance(row, dict) and "metric_input" in row:
        row, field = row["metric_input"], "metric_input"
    if not isinstance(row, dict) or not row:
        got = type(row).__name__ if not isinstance(row, dict) else "an empty object"
        raise AnnotationError(
            f"expected a JSON object of input fields, got {got}", path=path, sample_index=index, field=field
        )
    try:
        return normalize_metric_input(row)
    except ValueError as exc:
        raise AnnotationError(str(exc), path=path, sample_index=index, field=field) from exc
