"""Reading, validating and writing annotation files (JSON and JSONL).

Validation errors become :class:`~promptevolver.errors.AnnotationError` located by file, metric,
sample index and field path; loading pauses the cyclic garbage collector (:func:`_gc_paused`).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from promptevolver.annotations.models import SampleAnnotation
from promptevolver.errors import AnnotationError

_SAMPLES: TypeAdapter[list[SampleAnnotation]] = TypeAdapter(list[SampleAnnotation])


def _read(path: Path) -> Any:
    """The parsed file: its JSON value, or for ``.jsonl`` the list of its lines' values."""
    if not path.is_file():
        raise AnnotationError("file not found", path=path)
    try:
        with path.open(encoding="utf-8") as fh:
            return _read_jsonl(fh, path) if path.suffix.lower() == ".jsonl" else json.load(fh)
    except json.JSONDecodeError as exc:
        raise AnnotationError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path=path
        ) from exc
    except UnicodeDecodeError as exc:
        raise AnnotationError(f"not UTF-8 text ({exc.reason})", path=path) from exc
    except OSError as exc:
        raise AnnotationError(f"cannot be read ({exc.strerror})", path=path) from exc


def _read_jsonl(lines: Iterable[str], path: Path) -> list[Any]:
    samples: list[Any] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            samples.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise AnnotationError(
                f"not valid JSON on line {number} (column {exc.colno}: {exc.msg})",
                path=path,
                sample_index=len(samples),
            ) from exc
    return samples


def _metric_groups(raw: Any, path: Path, metric_name: str | None) -> dict[str, Any]:
    """Any supported file shape → {metric name: raw samples}, only ``metric_name`` when given."""
    if isinstance(raw, list):
        return {metric_name or path.stem: raw}
    if not isinstance(raw, dict):
        raise AnnotationError(
            f"expected a JSON object of metric name → samples, got {type(raw).__name__}", path=path
        )
    groups = {raw["name"]: raw["samples"]} if isinstance(raw.get("name"), str) and "samples" in raw else raw
    if metric_name is None:
        return groups
    if metric_name not in groups:
        raise AnnotationError(
            f"metric {metric_name!r} not in file; metrics present: {sorted(groups)}", path=path
        )
    return {metric_name: groups[metric_name]}


def _load(path: Path, metric_name: str | None, *, single: bool) -> dict[str, list[SampleAnnotation]]:
    """Metric name → validated samples of a file; with ``single``, exactly one metric."""
    with _gc_paused():
        groups = _metric_groups(_read(path), path, metric_name)
        if single and len(groups) != 1:
            names = sorted(groups)
            raise AnnotationError(f"file holds {len(names)} metrics {names}; pass metric_name", path=path)
        return {name: _validate_samples(raw, path=path, metric=name) for name, raw in groups.items()}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file's objects are built (restored after).

    Loading builds millions of dicts and strings, none of them cyclic; with the collector on,
    ever larger collections keep traversing them, which doubles the load time of a 20,000-sample
    file. Reference counting still frees memory meanwhile.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _validate_samples(raw: Any, *, path: Path, metric: str) -> list[SampleAnnotation]:
    """All samples of one metric, validated in one pass (pydantic-core, no Python loop)."""
    if not isinstance(raw, list):
        raise AnnotationError(
            f"expected a list of samples, got {type(raw).__name__}", path=path, metric=metric
        )
    try:
        return _SAMPLES.validate_python(raw)
    except ValidationError as exc:
        raise _located(exc, path=path, metric=metric) from exc


def _located(
    exc: ValidationError, *, path: str | Path | None, metric: str | None, prefix: str = ""
) -> AnnotationError:
    """Our error for the first of a list validation's errors: sample index and field path."""
    first = exc.errors(include_url=False)[0]
    loc = first["loc"]
    index = loc[0] if loc and isinstance(loc[0], int) else None
    field = ".".join(str(part) for part in ([prefix] if prefix else []) + list(loc[1:])) or "<sample>"
    more = exc.error_count() - 1
    message = f"{first['msg']} (input: {repr(first.get('input'))[:80]})"
    if more:
        message += f"; {more} more error(s) after this one"
    return AnnotationError(message, path=path, metric=metric, sample_index=index, field=field)


def _dump_samples(samples: list[SampleAnnotation]) -> list[dict[str, Any]]:
    """JSON-ready samples; fields that were absent when loaded stay absent."""
    return _SAMPLES.dump_python(samples, mode="json", exclude_unset=True)


def _write_json(path: str | Path, data: Any) -> None:
    with Path(path).open("w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=2)
