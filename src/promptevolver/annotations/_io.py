"""Reading, validating and writing annotation files (JSON and JSONL).

Validation errors become :class:`~promptevolver.errors.AnnotationError` located by file, metric,
sample index and field path; loading pauses the cyclic garbage collector (:func:`_gc_paused`).
A key given twice in one JSON object (a metric name, a sample field, a nested key) is such an
error too, where a plain JSON reader would keep the last value silently; so is a path that is a
directory, and nesting too deep for Python's JSON reader. Files are parsed by jiter when they
are valid (:func:`_parse_bytes`), else by Python's reader, which locates the problem.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jiter
from pydantic import TypeAdapter, ValidationError

from promptevolver.annotations._labels import LABEL_KINDS, LabelKind, check_label_values
from promptevolver.annotations._models import SampleAnnotation
from promptevolver.errors import AnnotationError, AnnotationFileNotFoundError
from promptevolver.rundir import not_a_file, write_atomic

_SAMPLES: TypeAdapter[list[SampleAnnotation]] = TypeAdapter(list[SampleAnnotation])

#: A metric's validated samples and the kind of its labels.
Metric = tuple[list[SampleAnnotation], LabelKind]
#: The ``kind`` argument of the loaders: one kind for every metric, or metric name → kind.
KindOption = LabelKind | dict[str, LabelKind] | None


class _DuplicateKey(Exception):
    """Raised by :func:`_unique_pairs` at the first JSON object that holds a key twice."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of Python's reader: the object as a dict, unless a key repeats."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey
    return obj


class _Repeated(dict[str, Any]):
    """An object holding a repeated key, as the locating read builds it."""

    key: str
    count: int


def _marking_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of the locating read: objects with a repeated key are marked."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = _Repeated(obj)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.key = key
            break
        seen.add(key)
    marked.count = sum(key == marked.key for key, _ in pairs)
    return marked


def _parse(text: str, path: Path, *, line: int | None = None, sample_index: int | None = None) -> Any:
    """One JSON text (a whole file, or with ``line`` and ``sample_index`` one JSONL sample); a
    repeated key or too deep nesting is an AnnotationError naming where."""
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except _DuplicateKey:
        marked = json.loads(text, object_pairs_hook=_marking_pairs)
        raise _repeated_key_error(marked, path, line=line, sample_index=sample_index) from None
    except RecursionError:
        where = f" on line {line}" if line is not None else ""
        raise AnnotationError(
            f"JSON nested too deeply{where} to read (more than about {sys.getrecursionlimit()} levels)",
            path=path,
            sample_index=sample_index,
        ) from None


def read_file(path: Path, *, jsonl: bool | None = None) -> Any:
    """The parsed file: its JSON value, or for JSONL (``jsonl``; None: a ``.jsonl`` suffix) the
    list of its lines' values.

    Raises:
        AnnotationFileNotFoundError: no such file (also a FileNotFoundError).
        AnnotationError: a directory, unreadable bytes, invalid JSON (names the line).
    """
    if path.is_dir():
        raise AnnotationError("is a directory, not an annotation file", path=path)
    if path.exists() and not path.is_file():  # a fifo or a device (/dev/zero): never opened
        raise AnnotationError(not_a_file(path), path=path)
    if not path.is_file():
        raise AnnotationFileNotFoundError("file not found", path=path)
    if jsonl is None:
        jsonl = path.suffix.lower() == ".jsonl"
    try:
        data = path.read_bytes()
        return _read_jsonl(data, path) if jsonl else _parse_bytes(data, path)
    except AnnotationError:
        raise
    except json.JSONDecodeError as exc:
        raise AnnotationError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path=path
        ) from exc
    except UnicodeDecodeError as exc:
        raise AnnotationError(f"not UTF-8 text ({exc.reason})", path=path) from exc
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise AnnotationError(f"not valid JSON ({exc})", path=path) from exc
    except OSError as exc:
        raise AnnotationError(f"cannot be read ({exc.strerror})", path=path) from exc


def _parse_bytes(data: bytes, path: Path, *, line: int | None = None, sample_index: int | None = None) -> Any:
    """A JSON file's value (or with ``line`` and ``sample_index`` a JSONL sample's); a repeated key
    or too deep nesting is an AnnotationError naming where.

    Fast path: jiter (Rust; parses the bytes without decoding them to a str first) with its
    duplicate-key check: on the 20,000-sample file of ``benchmarks/perf/annotations.py`` a load
    takes 6–12 % less CPU time, and 80 MB less peak memory, than decoding and ``json.loads``
    without any check did, where Python's reader with a checking hook takes 4–10 % more (JSON and
    JSONL, measured in alternating processes on a loaded machine). jiter is stricter than Python's
    reader (it refuses lone surrogate escapes and nesting deeper than 200 levels), so on any error
    the file is read again by Python's reader (:func:`_parse`), which names the problem as before,
    or reads what jiter refused.
    """
    try:
        return jiter.from_json(data, catch_duplicate_keys=True)
    except ValueError:
        pass
    # As a text-mode read would give it: Python's reader counts lines by "\n".
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return _parse(text, path, line=line, sample_index=sample_index)


def _read_jsonl(data: bytes, path: Path) -> list[Any]:
    """The values of a JSONL file's lines (split as a text-mode read splits them; blank lines skipped)."""
    samples: list[Any] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            samples.append(_parse_bytes(line, path, line=number, sample_index=len(samples)))
        except json.JSONDecodeError as exc:
            raise AnnotationError(
                f"not valid JSON on line {number} (column {exc.colno}: {exc.msg})",
                path=path,
                sample_index=len(samples),
            ) from exc
    return samples


def _first_repeated(value: Any) -> tuple[tuple[str | int, ...], _Repeated] | None:
    """(key path, object) of the first marked object, depth first in file order (no recursion)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        trail, item = stack.pop()
        if isinstance(item, _Repeated):
            return trail, item
        if isinstance(item, dict | list):
            children = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend(reversed([((*trail, key), child) for key, child in children]))
    return None


def _repeated_key_error(
    marked: Any, path: Path, *, line: int | None, sample_index: int | None
) -> AnnotationError:
    """The error for the first repeated key of a text read by the locating read: its metric,
    sample index and field path when it is inside a sample. ``sample_index`` is given when the
    text is one sample (a JSONL line)."""
    found = _first_repeated(marked)
    assert found is not None, "the fast read found a repeated key, so the locating read marks one"
    trail, obj = found
    times = "twice" if obj.count == 2 else f"{obj.count} times"
    metric: str | None = None
    if sample_index is None and isinstance(marked, dict):
        if not _is_named(marked):  # metric name → samples
            if not trail:
                return AnnotationError(f"metric {obj.key!r} is given {times} (remove the others)", path=path)
            metric, trail = str(trail[0]), trail[1:]
        elif trail[:1] == ("samples",):
            metric, trail = str(marked["name"]), trail[1:]
    if sample_index is None and trail and isinstance(trail[0], int):
        sample_index, trail = trail[0], trail[1:]
    on_line = f" on line {line}" if line is not None else ""
    return AnnotationError(
        f"key {obj.key!r} is given {times} in one object{on_line} (a JSON reader keeps only the last; "
        "remove the others)",
        path=path,
        metric=metric,
        sample_index=sample_index,
        field=".".join(str(part) for part in (*trail, obj.key)),
    )


def _is_named(raw: dict[str, Any]) -> bool:
    """Whether ``raw`` is a ``{"name", "samples"}`` file rather than metric name → samples."""
    return isinstance(raw.get("name"), str) and "samples" in raw


def _metric_groups(raw: Any, path: Path, metric_name: str | None) -> dict[str, tuple[Any, LabelKind | None]]:
    """Any supported file shape → {metric name: (raw samples, kind the file declares)}."""
    if isinstance(raw, list):
        return {metric_name or path.stem: (raw, None)}
    if not isinstance(raw, dict):
        raise AnnotationError(
            f"expected a JSON object of metric name → samples, got {type(raw).__name__}", path=path
        )
    if not _is_named(raw):
        return {name: (samples, None) for name, samples in raw.items()}
    declared = raw.get("kind")
    if declared is not None and declared not in LABEL_KINDS:
        message = f"must be one of {list(LABEL_KINDS)}, got {declared!r}"
        raise AnnotationError(message, path=path, metric=raw["name"], field="kind")
    return {raw["name"]: (raw["samples"], declared)}


def _load(path: Path, metric_name: str | None, *, single: bool, kind: KindOption) -> dict[str, Metric]:
    """Metric name → (validated samples, label kind) of a file; with ``single``, exactly one
    metric. The kind of a metric: ``kind`` (for it), else the file's, else inferred
    (:func:`~promptevolver.annotations._labels.check_labels`)."""
    with _gc_paused():
        groups = _metric_groups(read_file(path), path, metric_name)
        if isinstance(kind, dict) and not kind.keys() <= groups.keys():
            raise AnnotationError(
                f"kind names metrics not in the file: {sorted(kind.keys() - groups.keys())}; "
                f"metrics present: {sorted(groups)}",
                path=path,
            )
        if metric_name is not None:
            if metric_name not in groups:
                raise AnnotationError(
                    f"metric {metric_name!r} not in file; metrics present: {sorted(groups)}", path=path
                )
            groups = {metric_name: groups[metric_name]}
        if single and len(groups) != 1:
            names = sorted(groups)
            raise AnnotationError(f"file holds {len(names)} metrics {names}; pass metric_name", path=path)
        loaded: dict[str, Metric] = {}
        for name, (raw, declared) in groups.items():
            samples = _validate_samples(raw, path=path, metric=name)
            wanted = (kind.get(name) if isinstance(kind, dict) else kind) or declared
            # The validated raw dicts hold the same numbers as the samples, and read faster.
            outputs, targets = [d["metric_output"] for d in raw], [d.get("target") for d in raw]
            loaded[name] = samples, check_label_values(outputs, targets, wanted, path=path, metric=name)
        return loaded


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
    message = first["msg"]
    if first["type"] != "missing":  # a missing field's "input" is the whole sample around it
        shown = repr(first.get("input"))
        message += f" (input: {shown[:80]}{'…' if len(shown) > 80 else ''})"
    if more:
        message += f"; {more} more error(s) after this one"
    return AnnotationError(message, path=path, metric=metric, sample_index=index, field=field)


def _dump_samples(samples: list[SampleAnnotation]) -> list[dict[str, Any]]:
    """JSON-ready samples; fields that were absent when loaded stay absent."""
    return _SAMPLES.dump_python(samples, mode="json", exclude_unset=True)


def _write_json(path: str | Path, data: Any) -> None:
    """``data`` as indented UTF-8 JSON, written atomically, never through a symbolic link
    (:func:`promptevolver.rundir.write_atomic`)."""
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2))


def _write_jsonl(path: str | Path, records: list[dict[str, Any]]) -> None:
    """One JSON record a line (UTF-8, non-ASCII kept), written as :func:`_write_json` writes."""
    write_atomic(path, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
