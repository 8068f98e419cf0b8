"""``promptevolver import``: human labels of a judge's verdicts, from where teams keep them, into a
Ragas annotation file that every other command reads.

Sources:

* ``csv`` / ``jsonl`` — one judged sample a row (a line): columns named after the judge's inputs
  (``user_input``, ``response``, ``reference``, ``retrieved_contexts``, any other field) plus
  :data:`JUDGE_VERDICT` (or ``judge_score``), ``judge_reason``, :data:`HUMAN_VERDICT` (or
  ``human_score``), ``human_reason``, ``annotator`` and ``trace_id`` (kept, never shown to the
  judge). ``columns`` (``--column TARGET=SOURCE``) reads another name. A CSV cell of a contexts
  column holding a JSON list is read as that list. Empty cells are absent fields.
* ``mlflow`` — every trace of an experiment that carries an LLM judge's ``Feedback`` and a
  human's ``Feedback`` of one name (:func:`promptevolver.integrations.mlflow.read_feedback`):
  the root span's inputs and outputs become the judge's inputs by name (an output that is one
  value is the ``response``), the trace's expectations too (MLflow's ``expected_response`` is
  the ``reference``); ``fields`` (``--field TARGET=SOURCE``) renames; the judge's value and
  rationale become the verdict and the judge's reason, the human's the label and corrected
  reason, the human's source id the annotator. A judge feedback that failed (value None, an
  error) is a failed judge call (``metric_output`` NaN, the human label as ``target``).

Labels: a **binary** judge's values are verdicts (booleans, 0/1, yes/no, true/false, pass/fail,
any case), a **numeric** one's are scores (numbers). The kind is given (``--kind``) or read off
the values (binary when every value is a verdict). Each sample is written as Ragas writes one:
``metric_output`` the judge's value, ``is_accepted`` whether the human agreed; a rejected score
carries the human's as ``target``; the prompt trace (``prompts[prompt_name]``) holds the judge's
reason and value as ``prompt_output`` and, when the human gave a reason, the human's reason and
label as ``edited_output``. ``annotator`` and ``source`` (file and row, or experiment and trace
ids) are kept as extra keys of the sample.

Nothing is dropped silently: a row (trace) without the judge's value or without a human's is
not a sample, and the summary counts them (:class:`Imported`). Bad input stops the import before
anything is written, with one line naming the file, the row (line, trace) and the column: a
missing column, a label that is not a verdict or score, a duplicate row (the same inputs and
annotator twice). The output file is refused when it exists, unless ``force``.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from promptevolver.annotations import FIELD_ALIASES, LabelKind, MetricAnnotation, sample_key
from promptevolver.errors import AnnotationError, PromptEvolverError
from promptevolver.judge import AspectCritic, RubricJudge
from promptevolver.rundir import write_json

__all__ = [
    "HUMAN_VERDICT",
    "JUDGE_VERDICT",
    "Imported",
    "Judged",
    "import_mlflow",
    "import_table",
    "parse_pairs",
]

#: The column of the judge's verdict (a score judge's may be named ``judge_score``).
JUDGE_VERDICT = "judge_verdict"
#: The column of the human's label (a score judge's may be named ``human_score``).
HUMAN_VERDICT = "human_verdict"
_ALTERNATIVES = {JUDGE_VERDICT: "judge_score", HUMAN_VERDICT: "human_score"}
_JUDGE_REASON, _HUMAN_REASON, _ANNOTATOR, _TRACE_ID = "judge_reason", "human_reason", "annotator", "trace_id"
#: Columns that are not the judge's inputs.
_RESERVED = (
    JUDGE_VERDICT,
    "judge_score",
    _JUDGE_REASON,
    HUMAN_VERDICT,
    "human_score",
    _HUMAN_REASON,
    _ANNOTATOR,
    _TRACE_ID,
)
_LIST_FIELDS = ("retrieved_contexts", "reference_contexts")
_YES = {"1", "1.0", "true", "yes", "y", "pass", "passed"}
_NO = {"0", "0.0", "false", "no", "n", "fail", "failed"}
_VERDICTS = "true/false, yes/no, pass/fail or 1/0"
#: MLflow's expectation names → the judge's field names.
_EXPECTATIONS = {"expected_response": "reference"}

Source = Literal["csv", "jsonl"]


@dataclass(frozen=True)
class Judged:
    """One judgement of the judge and one human's label of it, as a source holds them.

    ``where`` names it in messages (``row 7``, ``line 3``, ``trace tr-1``), ``columns`` the
    columns (or feedback) the two values came from. ``judge`` is None when the judge's call
    failed (``judge_error`` says why); values are raw (a string, a boolean, a number).
    """

    where: str
    inputs: dict[str, Any]
    judge: Any
    human: Any
    judge_reason: str | None = None
    human_reason: str | None = None
    annotator: str | None = None
    source: dict[str, Any] = field(default_factory=dict)
    columns: tuple[str, str] = (JUDGE_VERDICT, HUMAN_VERDICT)
    judge_error: str | None = None


@dataclass(frozen=True)
class Imported:
    """What an import wrote: the file, the metric's name and label kind, the samples (accepted,
    rejected, failed judge calls), the annotators, and what was not imported: the rows (traces)
    with only the judge's value or only a human's, named by ``where``."""

    path: Path
    metric: str
    kind: LabelKind
    samples: int
    accepted: int
    failed_judge_calls: int
    annotators: tuple[str, ...]
    judge_only: tuple[str, ...] = ()
    human_only: tuple[str, ...] = ()
    several_humans: int = 0
    searched: int | None = None
    carrying: int | None = None
    what: str = "rows"

    @property
    def rejected(self) -> int:
        return self.samples - self.accepted - self.failed_judge_calls

    def summary(self) -> list[str]:
        """The lines ``promptevolver import`` prints: what was written, what was not."""
        n = len(self.annotators)
        who = f"{n} annotator{'s' * (n != 1)}" if n else "no annotator named"
        failed = f", {self.failed_judge_calls} failed judge calls" if self.failed_judge_calls else ""
        lines = [
            f"imported {self.samples} samples of {self.metric!r} ({self.kind}: {self.accepted} accepted, "
            f"{self.rejected} rejected{failed}; {who}) to {self.path}"
        ]
        if self.searched is not None:
            lines.append(f"searched {self.searched} traces; {self.carrying} carry feedback of that name")
        for names, side in ((self.judge_only, "the judge's"), (self.human_only, "a human's")):
            if names:
                shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                what = self.what if len(names) != 1 else self.what.rstrip("s")
                lines.append(f"not imported: {len(names)} {what} with only {side} label ({shown})")
        if n := self.several_humans:
            noun = "trace" if self.what == "traces" else "input"
            lines.append(
                f"{n} {noun}{' is' if n == 1 else 's are'} labelled by several humans: one sample "
                "each, annotator named (they stay together when the samples are split)"
            )
        return lines


# --- command-line pairs ----------------------------------------------------------------------------


def parse_pairs(pairs: Iterable[str], option: str) -> dict[str, str]:
    """``TARGET=SOURCE`` pairs (``--column``, ``--field``) as target → source.

    Raises:
        ValueError: a pair without ``=``, an empty side, or a target given twice.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        target, sep, source = pair.partition("=")
        if not sep or not target.strip() or not source.strip():
            raise ValueError(f"{option} {pair!r}: expected TARGET=SOURCE, e.g. {option} user_input=question")
        if target.strip() in out:
            raise ValueError(f"{option}: {target.strip()!r} is given twice")
        out[target.strip()] = source.strip()
    return out


# --- labels ----------------------------------------------------------------------------------------


def _verdict(value: Any) -> int | None:
    """A binary verdict (0 or 1), or None when ``value`` is not one."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        text = value.strip().lower()
        return 1 if text in _YES else 0 if text in _NO else None
    return None


def _score(value: Any) -> float | None:
    """A finite number, or None when ``value`` is not one (a boolean is a verdict, not a score)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _infer_kind(rows: Sequence[Judged], origin: str) -> LabelKind:
    """Binary when every value is a verdict, numeric when every value is a number.

    Raises:
        AnnotationError: a value that is neither, or verdict words beside scores (names the row
            and column).
    """
    values = [(r, c, v) for r in rows for c, v in zip(r.columns, (r.judge, r.human)) if v is not None]
    for r, column, value in values:
        if _verdict(value) is None and _score(value) is None:
            message = f"{_shown(value)} is neither a verdict ({_VERDICTS}) nor a number (a score)"
            raise _bad(origin, r.where, column, message)
    if all(_verdict(v) is not None for _, _, v in values):
        return "binary"
    word = next(((r, c, v) for r, c, v in values if _score(v) is None), None)
    if word is not None:
        r, column, value = word
        other, other_column, score = next((r, c, v) for r, c, v in values if _verdict(v) is None)
        raise _bad(
            origin,
            r.where,
            column,
            f"{_shown(value)} is a verdict, but {other.where}, column {other_column!r} holds the score "
            f"{_shown(score)}: say which with --kind binary or --kind numeric",
        )
    return "numeric"


def _label(value: Any, kind: LabelKind, origin: str, where: str, column: str) -> float:
    got = _verdict(value) if kind == "binary" else _score(value)
    if got is None:
        expected = f"a verdict ({_VERDICTS})" if kind == "binary" else "a score (a number)"
        hint = "; scores: --kind numeric" if kind == "binary" and _score(value) is not None else ""
        raise _bad(origin, where, column, f"{_shown(value)} is not {expected}{hint}")
    return float(got)


def _bad(origin: str, where: str, column: str, message: str) -> AnnotationError:
    return AnnotationError(f"{where}, column {column!r}: {message}", path=origin)


# --- samples ---------------------------------------------------------------------------------------


def _sample(r: Judged, kind: LabelKind, prompt_name: str, origin: str) -> dict[str, Any]:
    """One Ragas sample of ``r`` (see the module docstring)."""
    key = AspectCritic.LABEL_FIELD if kind == "binary" else RubricJudge.LABEL_FIELD
    human = _label(r.human, kind, origin, r.where, r.columns[1])
    judge = math.nan if r.judge is None else _label(r.judge, kind, origin, r.where, r.columns[0])

    def number(x: float) -> float | int:
        return int(x) if x.is_integer() else x

    accepted = not math.isnan(judge) and judge == human
    prompt: dict[str, Any] = {"prompt_input": dict(r.inputs)}
    if r.judge is not None:
        prompt["prompt_output"] = {
            **({"reason": r.judge_reason} if r.judge_reason else {}),
            key: number(judge),
        }
    if r.human_reason:
        prompt["edited_output"] = {"reason": r.human_reason, key: number(human)}
    prompt["is_accepted"] = accepted
    sample: dict[str, Any] = {
        "metric_input": dict(r.inputs),
        "metric_output": judge if math.isnan(judge) else number(judge),
        "is_accepted": accepted,
    }
    if not accepted and (kind == "numeric" or math.isnan(judge)):
        sample["target"] = number(human)
    sample["prompts"] = {prompt_name: prompt}
    if r.annotator:
        sample["annotator"] = r.annotator
    if r.judge_error:
        sample["judge_error"] = r.judge_error
    sample["source"] = r.source
    return sample


def _write(
    rows: Sequence[Judged],
    *,
    origin: str,
    output: Path,
    metric: str,
    kind: LabelKind | None,
    prompt_name: str | None,
    force: bool,
    **counts: Any,
) -> Imported:
    """Validate ``rows`` as samples of ``metric`` and write them to ``output`` (atomically)."""
    _check_output(output, force=force)
    if not rows:
        raise AnnotationError(
            "nothing to import: no row holds both the judge's and a human's label", path=origin
        )
    kind = kind or _infer_kind(rows, origin)
    name = prompt_name or (AspectCritic.PROMPT_NAME if kind == "binary" else RubricJudge.PROMPT_NAME)
    samples = [_sample(r, kind, name, origin) for r in rows]
    try:
        annotations = MetricAnnotation.model_validate({"root": {metric: samples}})  # as a load checks
    except ValidationError as exc:
        raise _invalid(exc, rows, origin) from None
    write_json(output, annotations.to_json_value(), indent=2)
    accepted = sum(s["is_accepted"] for s in samples)
    failed = sum(isinstance(s["metric_output"], float) and math.isnan(s["metric_output"]) for s in samples)
    return Imported(
        path=output,
        metric=metric,
        kind=kind,
        samples=len(samples),
        accepted=accepted,
        failed_judge_calls=failed,
        annotators=tuple(sorted({r.annotator for r in rows if r.annotator})),
        **counts,
    )


def _invalid(exc: ValidationError, rows: Sequence[Judged], origin: str) -> AnnotationError:
    """The first problem of samples that do not validate, at its row and input field (e.g. one
    field under two names: ``input`` and ``user_input``)."""
    first = exc.errors(include_url=False)[0]
    loc = list(first["loc"])  # root, metric, sample index, field...
    where = rows[loc[2]].where if len(loc) > 2 and isinstance(loc[2], int) else "a row"
    fields = [str(part) for part in loc[3:] if part not in ("metric_input", "prompt_input")]
    message = first["msg"].removeprefix("Value error, ")
    return AnnotationError(
        f"{where}, column {fields[0]!r}: {message}" if fields else f"{where}: {message}", path=origin
    )


def _check_output(output: Path, *, force: bool) -> None:
    if output.is_dir():
        raise PromptEvolverError(f"--output {output} is a directory; give the annotation file to write")
    if output.exists() and not force:
        raise PromptEvolverError(f"--output {output} exists; pass --force to replace it")


# --- CSV and JSONL ---------------------------------------------------------------------------------


def import_table(
    path: str | Path,
    *,
    source: Source,
    output: str | Path,
    metric: str | None = None,
    kind: LabelKind | None = None,
    columns: Mapping[str, str] | None = None,
    prompt_name: str | None = None,
    force: bool = False,
) -> Imported:
    """Import a CSV or JSONL file of judged samples (see the module docstring) into ``output``,
    metric ``metric`` (default: the file's stem).

    Raises:
        AnnotationError: a missing column or file, a bad label, a duplicate row (one line naming
            the file, the row or line and the column), or no row holding both labels.
        PromptEvolverError: ``output`` exists (without ``force``) or is a directory.
    """
    file = Path(path)
    origin = str(file)
    records = _csv_rows(file) if source == "csv" else _jsonl_rows(file)
    header, body = next(records), list(records)
    wanted = _columns(header, dict(columns or {}), origin, source)
    rows, judge_only, human_only = [], [], []
    for where, record in body:
        r = _judged(record, wanted, where, origin, source)
        if r.judge is None and r.human is None:
            continue
        if r.human is None:
            judge_only.append(where)
        elif r.judge is None:
            human_only.append(where)
        else:
            rows.append(r)
    _check_duplicates(rows, origin)
    several = Counter(sample_key(r.inputs) for r in rows)
    return _write(
        rows,
        origin=origin,
        output=Path(output),
        metric=metric or file.stem,
        kind=kind,
        prompt_name=prompt_name,
        force=force,
        judge_only=tuple(judge_only),
        human_only=tuple(human_only),
        several_humans=sum(1 for n in several.values() if n > 1),
        what="rows" if source == "csv" else "lines",
    )


def _csv_rows(file: Path) -> Iterator[Any]:
    """The header (a list of names), then (``row N``, {column: cell}) per record; N counts as a
    spreadsheet does (the header is row 1)."""
    text = _text(file)
    reader = csv.reader(text.splitlines(keepends=True))
    try:
        header = next(reader)
    except StopIteration:
        raise AnnotationError("empty file: expected a header row of column names", path=file) from None
    except csv.Error as exc:
        raise AnnotationError(f"row 1: not CSV ({exc})", path=file) from None
    header = [h.strip().lstrip("\ufeff") for h in header]
    twice = [h for h, n in Counter(header).items() if n > 1]
    if twice:
        raise AnnotationError(f"row 1, column {twice[0]!r}: the header names it twice", path=file)
    yield header
    number = 1
    try:
        for cells in reader:
            number += 1
            if not any(c.strip() for c in cells):
                continue
            if len(cells) > len(header):
                raise AnnotationError(
                    f"row {number}: {len(cells)} cells, the header names {len(header)} columns "
                    "(a comma inside a value needs quotes)",
                    path=file,
                )
            yield f"row {number}", {h: c for h, c in zip(header, cells) if c.strip()}
    except csv.Error as exc:
        raise AnnotationError(f"row {number + 1}: not CSV ({exc})", path=file) from None


def _jsonl_rows(file: Path) -> Iterator[Any]:
    """The names of every key (the header), then (``line N``, object) per non-blank line."""
    records = []
    for number, line in enumerate(_text(file).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AnnotationError(
                f"line {number}: not valid JSON (column {exc.colno}: {exc.msg})", path=file
            ) from None
        if not isinstance(value, dict):
            raise AnnotationError(
                f"line {number}: expected a JSON object, got {type(value).__name__}", path=file
            )
        records.append((f"line {number}", {k: v for k, v in value.items() if v not in (None, "")}))
    yield list(dict.fromkeys(k for _, record in records for k in record))
    yield from records


def _text(file: Path) -> str:
    if file.is_dir():
        raise AnnotationError("is a directory, not a file to import", path=file)
    try:
        return file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise AnnotationError("file not found", path=file) from None
    except UnicodeDecodeError as exc:
        raise AnnotationError(f"not UTF-8 text ({exc.reason})", path=file) from None


def _columns(header: Sequence[str], renames: dict[str, str], origin: str, source: Source) -> dict[str, str]:
    """Our name → the file's column for the labels and reasons, and for every input.

    Raises:
        AnnotationError: a renamed column the file lacks, or a label column missing.
    """
    noun = "column" if source == "csv" else "key"
    for target, column in renames.items():
        if column not in header:
            raise AnnotationError(
                f"--column {target}={column}: no {noun} {column!r} in the file ({noun}s: {list(header)})",
                path=origin,
            )
    taken = set(renames.values())
    wanted: dict[str, str] = {}
    missing: list[str] = []
    for ours in (JUDGE_VERDICT, HUMAN_VERDICT):
        other = _ALTERNATIVES[ours]
        given = renames.get(ours) or renames.get(other)
        found = given or next((c for c in (ours, other) if c in header and c not in taken), None)
        if found is None:
            missing.append(ours)
        else:
            wanted[ours] = found
    if missing:  # every missing label column in one line, not one a run
        names = " and ".join(map(repr, missing))
        fix = " ".join(f"--column {m}=YOUR_{noun.upper()}" for m in missing)
        plural = "s" if len(missing) > 1 else ""
        message = f"{noun}{plural} {names} missing ({noun}s: {list(header)}); name yours with {fix}"
        raise _header_error(source, origin, message)
    for ours in (_JUDGE_REASON, _HUMAN_REASON, _ANNOTATOR, _TRACE_ID):
        optional = renames.get(ours) or (ours if ours in header and ours not in taken else None)
        if optional is not None:
            wanted[ours] = optional
    used = set(wanted.values())
    for target, column in renames.items():
        if target not in _RESERVED:
            wanted[f"input:{target}"] = column
    for column in header:
        if column not in used and column not in _RESERVED and column not in taken:
            wanted.setdefault(f"input:{column}", column)
    _one_column_per_field(wanted, origin, noun, source)
    return wanted


def _one_column_per_field(wanted: Mapping[str, str], origin: str, noun: str, source: Source) -> None:
    """Two columns that are one judge field (``input`` and ``user_input``: other libraries' names,
    :data:`~promptevolver.annotations.FIELD_ALIASES`) would make every row an error: say it once.

    Raises:
        AnnotationError: naming both columns and the field.
    """
    seen: dict[str, str] = {}
    for ours, column in wanted.items():
        if not ours.startswith("input:"):
            continue
        name = ours.removeprefix("input:")
        field = FIELD_ALIASES.get(name, name)
        if field in seen:
            raise _header_error(
                source,
                origin,
                f"{noun}s {seen[field]!r} and {column!r} are both the judge's {field!r} "
                f"(one is another library's name for it); drop one, or rename it with --column",
            )
        seen[field] = column


def _header_error(source: Source, origin: str, message: str) -> AnnotationError:
    """An error of the file's header: a CSV's row 1, a JSONL file's or MLflow's keys."""
    return AnnotationError(("row 1, " if source == "csv" else "") + message, path=origin)


def _judged(
    record: Mapping[str, Any], wanted: Mapping[str, str], where: str, origin: str, source: Source
) -> Judged:
    def text(ours: str) -> str | None:
        value = record.get(wanted.get(ours, ""))
        return None if value is None else str(value)

    inputs = {}
    for ours, column in wanted.items():
        if ours.startswith("input:") and column in record:
            name = ours.removeprefix("input:")
            inputs[name] = _input_value(record[column], name, source, origin, where, column)
    return Judged(
        where=where,
        inputs=inputs,
        judge=record.get(wanted[JUDGE_VERDICT]),
        human=record.get(wanted[HUMAN_VERDICT]),
        judge_reason=text(_JUDGE_REASON),
        human_reason=text(_HUMAN_REASON),
        annotator=text(_ANNOTATOR),
        source={"file": Path(origin).name, where.split()[0]: int(where.split()[1])}
        | ({"trace_id": t} if (t := text(_TRACE_ID)) else {}),
        columns=(wanted[JUDGE_VERDICT], wanted[HUMAN_VERDICT]),
    )


def _input_value(value: Any, name: str, source: Source, origin: str, where: str, column: str) -> Any:
    """A CSV cell of a contexts column holding a JSON list is that list."""
    if source == "csv" and name in _LIST_FIELDS and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _bad(origin, where, column, f"starts like a JSON list but is not one ({exc.msg})") from None
        if not isinstance(parsed, list):
            raise _bad(origin, where, column, "expected a JSON list of strings")
        return parsed
    return value


def _check_duplicates(rows: Sequence[Judged], origin: str) -> None:
    """The same inputs labelled twice by the same annotator: which one counts is unknowable.

    Raises:
        AnnotationError: names both rows and the input columns.
    """
    seen: dict[tuple[str, str | None], Judged] = {}
    for r in rows:
        key = (sample_key(r.inputs), r.annotator)
        if key in seen:
            first = seen[key]
            who = f"annotator {r.annotator!r}" if r.annotator else "no annotator"
            columns = ", ".join(r.inputs)
            raise AnnotationError(
                f"{r.where} repeats {first.where}: the same inputs (columns {columns}) and {who}; "
                "remove one, or name each row's annotator",
                path=origin,
            )
        seen[key] = r


# --- MLflow ----------------------------------------------------------------------------------------


def import_mlflow(
    *,
    tracking_uri: str | None,
    experiment: str,
    assessment: str,
    output: str | Path,
    metric: str | None = None,
    kind: LabelKind | None = None,
    fields: Mapping[str, str] | None = None,
    prompt_name: str | None = None,
    max_traces: int | None = None,
    force: bool = False,
) -> Imported:
    """Import the traces of ``experiment`` carrying an LLM judge's and a human's feedback named
    ``assessment`` (see the module docstring) into ``output``, metric ``metric`` (default: the
    assessment's name).

    Raises:
        TrackingError: the server cannot be reached, or has no such experiment.
        AnnotationError: a ``fields`` source absent from a trace, two sources of one field, a bad
            label (each naming the trace and the field), or no trace holding both feedbacks.
        PromptEvolverError: ``output`` exists (without ``force``) or is a directory.
        ImportError: MLflow is not installed.
    """
    from promptevolver.integrations.mlflow import read_feedback, shown_uri

    _check_output(Path(output), force=force)
    traces, searched = read_feedback(tracking_uri, experiment, assessment, max_traces=max_traces)
    origin = f"MLflow {shown_uri(tracking_uri)} experiment {experiment!r}"
    rows, judge_only, human_only, several = [], [], [], 0
    for t in traces:
        where = f"trace {t.trace_id}"
        if not t.human:
            judge_only.append(where)
            continue
        if not t.judge:
            human_only.append(where)
            continue
        judge = t.judge[-1]  # the latest verdict of the judge (a human may have overridden it)
        inputs = _trace_inputs(t, dict(fields or {}), origin, where)
        several += len(t.human) > 1
        for human in t.human:
            rows.append(
                Judged(
                    where=where,
                    inputs=inputs,
                    judge=judge.value,
                    human=human.value,
                    judge_reason=judge.rationale,
                    human_reason=human.rationale,
                    annotator=human.source_id,
                    source={
                        "mlflow_experiment": experiment,
                        "trace_id": t.trace_id,
                        "judge_assessment_id": judge.assessment_id,
                        "human_assessment_id": human.assessment_id,
                    },
                    columns=(f"LLM_JUDGE feedback {assessment!r}", f"HUMAN feedback {assessment!r}"),
                    judge_error=judge.error if judge.value is None else None,
                )
            )
    return _write(
        rows,
        origin=origin,
        output=Path(output),
        metric=metric or assessment,
        kind=kind,
        prompt_name=prompt_name,
        force=force,
        judge_only=tuple(judge_only),
        human_only=tuple(human_only),
        several_humans=several,
        searched=searched,
        carrying=len(traces),
        what="traces",
    )


def _trace_inputs(t: Any, renames: dict[str, str], origin: str, where: str) -> dict[str, Any]:
    """The judge's inputs of trace ``t``: ``renames`` (target → ``[inputs.|outputs.|expectations.]
    name``) first, then every other root-span input and output and trace expectation by name (an
    input or output that is one value is ``user_input`` or ``response``; MLflow's
    ``expected_response`` is ``reference``).

    Raises:
        AnnotationError: a renamed source the trace lacks or holds in two places, or one name
            given by two places (each naming the trace).
    """

    def named(value: Any, single: str) -> dict[str, Any]:
        return dict(value) if isinstance(value, Mapping) else {} if value is None else {single: value}

    parts = {
        "inputs": named(t.inputs, "user_input"),
        "outputs": named(t.outputs, "response"),
        "expectations": dict(t.expectations),
    }
    inputs: dict[str, Any] = {}
    for target, spec in renames.items():
        part, dot, name = spec.partition(".")
        places = [part] if dot and part in parts else [p for p in parts if spec in parts[p]]
        name = name if dot and part in parts else spec
        if len(places) != 1 or name not in parts[places[0]]:
            have = {p: sorted(v) for p, v in parts.items()}
            why = (
                f"is in {' and '.join(places)}: say which, e.g. {places[0]}.{spec}"
                if places
                else "is not in it"
            )
            raise AnnotationError(
                f"{where}, --field {target}={spec}: {spec!r} {why} (it has {have})", path=origin
            )
        inputs[target] = parts[places[0]].pop(name)
    given: dict[str, str] = {target: "--field" for target in inputs}
    for part, values in parts.items():
        for raw, value in values.items():
            name = _EXPECTATIONS.get(raw, raw) if part == "expectations" else raw
            if name in given:
                raise AnnotationError(
                    f"{where}: {name!r} comes from both {given[name]} and the trace's {part}; "
                    f"rename one with --field NEW_NAME={part}.{raw}",
                    path=origin,
                )
            inputs[name], given[name] = value, part
    return inputs


# --- the command -----------------------------------------------------------------------------------


def run_import(args: Any) -> list[str]:
    """``promptevolver import``'s work, from its parsed arguments: the summary lines.

    Raises:
        ValueError: options that do not fit the source (a usage error), or a malformed pair.
        PromptEvolverError: as :func:`import_table` and :func:`import_mlflow`.
    """
    common = {
        "output": args.output,
        "metric": args.metric,
        "kind": args.kind,
        "prompt_name": args.prompt_name,
    }
    if args.source == "mlflow":
        if args.file is not None or args.column:
            raise ValueError("mlflow reads no FILE and no --column (rename a trace's fields with --field)")
        if not args.experiment or not args.assessment:
            raise ValueError("mlflow needs --experiment NAME and --assessment NAME (the feedback's name)")
        try:
            imported = _import_mlflow_command(args, common)
        except ImportError as exc:  # MLflow is not installed: one line naming the extra
            raise PromptEvolverError(str(exc)) from exc
    else:
        if args.file is None:
            raise ValueError(f"{args.source} needs FILE")
        unused = [
            o
            for o, v in (
                ("--tracking-uri", args.tracking_uri),
                ("--experiment", args.experiment),
                ("--assessment", args.assessment),
                ("--field", args.field),
                ("--max-traces", args.max_traces),
            )
            if v
        ]
        if unused:
            raise ValueError(
                f"{', '.join(unused)}: for mlflow only (a {args.source} file names columns: --column)"
            )
        imported = import_table(
            args.file,
            source=args.source,
            columns=parse_pairs(args.column, "--column"),
            force=args.force,
            **common,
        )
    return imported.summary()


def _import_mlflow_command(args: Any, common: dict[str, Any]) -> Imported:
    return import_mlflow(
        tracking_uri=args.tracking_uri,
        experiment=args.experiment,
        assessment=args.assessment,
        fields=parse_pairs(args.field, "--field"),
        max_traces=args.max_traces,
        force=args.force,
        **common,
    )
