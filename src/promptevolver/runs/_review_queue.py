"""What a review page shows and writes: the queue of items, their labels, the agreement so far.

:func:`build_queue` reads the annotation file the labels go into (created on the first label when
it does not exist and a pool is given), adds the traces of a pool that the file does not hold yet
(a JSONL of metric inputs, or ``suggest``'s output with its order and ``why``; with a run, a plain
pool is ranked by :func:`~promptevolver.runs.suggest.asuggest` first) and, with a run, the chosen
judge's verdict and reason on every item of the file
(:func:`~promptevolver.runs.suggest.ajudge_chosen`).

:class:`ReviewQueue` holds them, one :class:`ReviewItem` each, in queue order: a pool's ranked
traces first, then the file's other samples in file order. An item's ``id`` is its content (the
sha256 of its input fields, 12 hex digits; ``-2``, ``-3``… for repeats), so it is the same after a
restart and for a pool trace once it is in the file. :meth:`ReviewQueue.label` writes one label
into the file at once (:mod:`promptevolver.annotations._labelling`: Ragas' format, atomically,
the whole file each time) and only then changes the queue: a label the page shows as saved is in
the file. A file changed by another program since the queue read or last wrote it is not
overwritten (:class:`ReviewConflict`). The caller holds the file's lock
(:func:`promptevolver.rundir.locked_file`) while the queue lives.

The labels a human can give come from the one place that answers it, the metric's
:class:`~promptevolver.annotations._labels.LabelScale` (``label_scale_of(metric).label_space()``):
the run's judge's when a run is given, else a scale read off the file's values (0/1 verdicts, or
the scores seen). The page gets them with a key each (:func:`page_labels`).
"""

from __future__ import annotations

import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from promptevolver import rundir
from promptevolver.annotations import (
    AnnotationDocument,
    HumanLabel,
    LabelScale,
    LabelTarget,
    infer_kind,
    labelled_sample,
    new_sample,
    normalize_metric_input,
    read_file,
    read_pool,
    recorded_label,
    sample_key,
)
from promptevolver.errors import AnnotationError, PromptEvolverError
from promptevolver.evaluation import agreement
from promptevolver.judge import Judgement, Metric, label_scale_of, label_target_of

__all__ = ["ReviewConflict", "ReviewError", "ReviewItem", "ReviewQueue", "build_queue"]

#: Longest reason and annotator name a label may carry (characters).
MAX_REASON, MAX_ANNOTATOR = 20_000, 200


class ReviewError(PromptEvolverError):
    """A label the queue refuses (unknown item, a value outside the label space...): nothing was
    written. ``status`` is the HTTP status a server answers with."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ReviewConflict(ReviewError):
    """The file changed on disk since the queue read or wrote it (another program): nothing was
    written."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=409)


@dataclass
class ReviewItem:
    """One item of the queue (see the module docstring).

    Attributes:
        id: its content id. metric_input: the trace's input fields (the judge's inputs).
        judge: the verdict under review: ``{"verdict", "reason", "source"}`` (verdict None when
            the judge gave none, e.g. a plain pool trace), or None.
        chosen: with a run, its chosen judge's ``{"verdict", "reason", "error"}`` on a file
            sample (a pool trace's verdict under review is already the chosen judge's).
        why: ``suggest``'s reason to label it; rank: its rank there (1: best), or None.
        position: its sample's index in the file; None until a pool trace is labelled.
        label: the human label in the file (:func:`~promptevolver.annotations._labelling.recorded_label`),
            or None.
    """

    id: str
    metric_input: dict[str, Any]
    judge: dict[str, Any] | None
    chosen: dict[str, Any] | None = None
    why: str | None = None
    rank: int | None = None
    position: int | None = None
    label: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The item as ``GET /api/items`` lists it (docs/review.md)."""
        return {("inputs" if name == "metric_input" else name): value for name, value in asdict(self).items()}


@dataclass
class ReviewQueue:
    """The items of one annotation file under review, and the one writer of that file.

    Attributes:
        document: the file (:class:`~promptevolver.annotations._labelling.AnnotationDocument`).
        target: where a label goes in a sample. scale: the metric's labels (its
            :meth:`~promptevolver.annotations._labels.LabelScale.label_space`: what a human can give).
        items: in queue order. run: the run directory whose chosen judge is shown, or None.
        llm: which LLM answered for the run (None without LLM calls). simulated: the simulated
            LLM answered for the run, or for ``suggest`` when it judged the pool.
        write: writes the file's text (atomically); replaced in tests.
    """

    document: AnnotationDocument
    target: LabelTarget
    scale: LabelScale
    items: list[ReviewItem]
    run: Path | None = None
    llm: str | None = None
    simulated: bool = False
    write: Callable[[Path, str], object] = rundir.write_atomic
    _by_id: dict[str, ReviewItem] = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _stamp: tuple[int, int, int] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self._by_id = {item.id: item for item in self.items}
        self._stamp = _stamp(self.document.path)

    @property
    def path(self) -> Path:
        return self.document.path

    def item(self, item_id: str) -> ReviewItem:
        """The item ``item_id``. Raises ReviewError (404) for an unknown one."""
        found = self._by_id.get(item_id)
        if found is None:
            raise ReviewError(f"no item {item_id!r} in this review", status=404)
        return found

    def label(self, item_id: str, body: Any, *, now: datetime | None = None) -> ReviewItem:
        """Write the label ``body`` (``{"verdict", "reason", "annotator"}``) of item ``item_id``
        into the file, then into the queue; returns the item.

        Raises:
            ReviewError: an unknown item (404), or a body that is not a label of this metric or
                would make an invalid sample (400, naming the item, its sample and the field);
                ReviewConflict (409): the file changed on disk.
            OSError: the file cannot be written (the queue is then unchanged).
        """
        item = self.item(item_id)
        try:
            label = self._parse(body, now or datetime.now(timezone.utc))
        except ReviewError as exc:
            raise ReviewError(f"item {item.id}: {exc}; nothing was written", status=exc.status) from exc
        with self._lock:
            if _stamp(self.path) != self._stamp:
                raise ReviewConflict(
                    f"{self.path} was changed by another program since this review read it; nothing "
                    "was written. Stop the review and start it again to load the file as it is now"
                )
            doc = self.document
            if item.position is None:
                judge = item.judge or {}
                base = new_sample(
                    item.metric_input,
                    judge_value=judge.get("verdict"),
                    judge_reason=judge.get("reason"),
                    target=self.target,
                )
                position, old = len(doc.samples), None
            else:
                position, old = item.position, doc.samples[item.position]
                base = old
            try:
                sample = labelled_sample(base, label, self.target)
            except AnnotationError as exc:  # a label must never make a file the loaders refuse
                where = "a new sample" if old is None else f"sample {position}"
                raise ReviewError(
                    f"item {item.id} ({where} of {self.document.metric!r} in {self.path}): {exc}; "
                    "nothing was written"
                ) from exc
            if old is None:
                doc.append(sample)
            else:
                doc.replace(position, sample)
            try:
                self.write(self.path, doc.dumps())
            except BaseException:
                if old is None:
                    doc.samples.pop()
                    doc.validated.pop()
                else:
                    doc.replace(position, old)
                raise
            self._stamp = _stamp(self.path)
            item.position = position
            item.label = recorded_label(
                doc.validated[position], prompt_name=self.target.prompt_name, binary=self.target.binary
            )
            return item

    def _parse(self, body: Any, now: datetime) -> HumanLabel:
        if not isinstance(body, Mapping):
            raise ReviewError("the body must be a JSON object {verdict, reason, annotator}")
        unknown = sorted(set(body) - {"verdict", "reason", "annotator"})
        if unknown:
            raise ReviewError(f"unknown field(s) {unknown}; a label has verdict, reason and annotator")
        value = body.get("verdict")
        if not fits(self.scale, value):
            raise ReviewError(
                f"verdict {value!r} is not a label of this metric; labels: {_labels(self.scale)}"
            )
        reason = body.get("reason")
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
            raise ReviewError(f"reason must be a string of at most {MAX_REASON} characters, or null")
        annotator = body.get("annotator")
        if not isinstance(annotator, str) or not annotator.strip() or len(annotator) > MAX_ANNOTATOR:
            raise ReviewError(f"annotator must be a name (1 to {MAX_ANNOTATOR} characters)")
        stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return HumanLabel(float(value), reason, annotator.strip(), stamp)  # type: ignore[arg-type]

    def resume_id(self) -> str | None:
        """Where a page opens: the first item without a label, else the one after the latest
        label given on a page, else the first; None for an empty queue."""
        if not self.items:
            return None
        for item in self.items:
            if item.label is None:
                return item.id
        dated = [(item.label or {}).get("at") or "" for item in self.items]
        latest = max(range(len(dated)), key=lambda i: (dated[i], i))  # same second: the later item
        return self.items[(latest + 1) % len(self.items) if dated[latest] else 0].id

    def status(self) -> dict[str, Any]:
        """Progress, the agreement so far and what the page needs to know (``GET /api/status``)."""
        labelled = [i for i in self.items if i.label is not None]
        return {
            "file": str(self.path),
            "metric": self.document.metric,
            "labels": page_labels(self.scale),
            "progress": {
                "labelled": len(labelled),
                "reviewed": sum(bool((i.label or {}).get("at")) for i in labelled),
                "total": len(self.items),
            },
            "agreement": {
                "judge": self._agreement(labelled, lambda i: (i.judge or {}).get("verdict")),
                "chosen": self._agreement(labelled, lambda i: (i.chosen or {}).get("verdict"))
                if any(i.chosen is not None for i in self.items)
                else None,
            },
            "run": None if self.run is None else str(self.run),
            "llm": self.llm,
            "simulated": self.simulated,
            "resume": self.resume_id(),
        }

    def _agreement(
        self, labelled: Sequence[ReviewItem], verdict: Callable[[ReviewItem], float | None]
    ) -> dict[str, Any]:
        """The judge's agreement with the human labels on the labelled items it has a verdict of:
        ``n``, accuracy and Cohen's kappa (binary) or exact agreement, within one and weighted
        kappa (scores), beside the base rate (the share of the most common human label: what a
        judge always giving it would score)."""
        pairs = [(i.label["value"], v) for i in labelled if i.label and (v := verdict(i)) is not None]
        if not pairs:
            return {"n": 0}
        human = [h for h, _ in pairs]
        common, count = Counter(human).most_common(1)[0]
        kind = self.scale.kind
        binary = kind == "binary"
        judged = [v for _, v in pairs]
        if kind == "nominal":  # named classes, in no order: the share of equal labels, Cohen's kappa
            return {
                **_base_rate(human, common, count),
                "accuracy": _share_equal(human, judged),
                "kappa": _kappa(human, judged),
            }
        a = agreement(human, judged, binary=binary)
        out = _base_rate(human, common, count)
        out["positive_share"] = sum(h == 1.0 for h in human) / len(human) if binary else None
        if binary:
            out.update(accuracy=a.accuracy, kappa=a.cohen_kappa)
        else:
            out.update(exact=a.exact, within_one=a.within_one, kappa=a.weighted_kappa, mae=a.mae)
        return out


def _base_rate(human: Sequence[float], common: float, count: int) -> dict[str, Any]:
    return {"n": len(human), "base_rate": {"label": common, "share": count / len(human)}}


def _share_equal(human: Sequence[float], judged: Sequence[float]) -> float:
    return sum(h == j for h, j in zip(human, judged)) / len(human)


def _kappa(human: Sequence[float], judged: Sequence[float]) -> float | None:
    """Cohen's kappa of nominal labels (None when undefined: one class only)."""
    from sklearn.metrics import cohen_kappa_score

    if len(set(human) | set(judged)) < 2:
        return None
    value = float(cohen_kappa_score([str(h) for h in human], [str(j) for j in judged]))
    return None if math.isnan(value) else value


#: Most labels a page offers as buttons with a key each; a longer discrete scale is a number box.
MOST_KEYS = 10


def page_labels(scale: LabelScale) -> dict[str, Any]:
    """The labels a human can give, as the page shows them: ``kind``, ``choices`` (the scale's
    :meth:`~promptevolver.annotations._labels.LabelScale.label_space`, each with its ``value``,
    ``name`` and a keyboard ``key``: the value itself where every value is one digit, else 1…9, 0
    in order; none for a free score or more than ten levels), ``low``, ``high`` and ``step`` (1 on
    a discrete scale) for a number box."""
    space = scale.label_space() or ()
    if len(space) > MOST_KEYS:
        space = ()
    digits = all(float(c.value).is_integer() and 0 <= c.value <= 9 for c in space)
    keys = [str(int(c.value)) if digits else str((i + 1) % 10) for i, c in enumerate(space)]
    if scale.kind == "binary":  # yes first, as a judge's question is asked
        order = sorted(range(len(space)), key=lambda i: -space[i].value)
        space, keys = tuple(space[i] for i in order), [keys[i] for i in order]
    return {
        "kind": scale.kind,
        "choices": [{"value": c.value, "name": c.name, "key": k} for c, k in zip(space, keys)],
        "low": scale.low,
        "high": scale.high,
        "step": 1 if scale.discrete else None,
    }


def fits(scale: LabelScale, value: object) -> bool:
    """Whether ``value`` is a label of ``scale``: one of its label space's values, or a number in
    its range (a whole number on a discrete scale); never a boolean or a string."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    values = scale.values
    if values is not None:
        return value in values
    if scale.discrete and not float(value).is_integer():
        return False
    return scale.value_range is None or scale.value_range[0] <= value <= scale.value_range[1]


def _labels(scale: LabelScale) -> str:
    if scale.values is not None:
        return ", ".join(f"{v:g} ({scale.name_of(v)})" for v in scale.values)
    if scale.value_range is not None:
        return f"a number in [{scale.value_range[0]:g}, {scale.value_range[1]:g}]"
    return "a number"


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, modification time in ns) of ``path``; None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


# --- building the queue --------------------------------------------------------------------------


@dataclass
class _PoolTrace:
    metric_input: dict[str, Any]
    judge: dict[str, Any] | None = None
    why: str | None = None
    rank: int | None = None
    simulated: bool = False


def build_queue(
    file: str | Path,
    *,
    pool: str | Path | None = None,
    run: str | Path | None = None,
    metric_name: str | None = None,
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> ReviewQueue:
    """The queue of ``file`` (see the module docstring).

    Args:
        file: the annotation file the labels go into; with ``pool``, it may not exist yet.
        pool: traces to label (JSONL of metric inputs, ``suggest``'s output, or an annotation
            file whose labels are ignored).
        run: a finished run directory: its chosen judge's verdicts are shown, its judge decides
            the labels a human can give, and a plain pool is ranked by ``suggest``.
        metric_name: the metric of a file holding several (default: the run's, else its only one).
        edit: changes the run's config before use (``--set``, e.g. ``llm.base_url``).
        log: receives a line before each step that makes LLM calls.

    Raises:
        AnnotationError: a malformed file or pool (naming file, sample and field), or a file
            missing without a pool; RunDirError, ConfigError, LLMUnusableError: from the run.
    """
    from promptevolver.runs import suggest as _suggest

    path = Path(file)
    config = None if run is None else rundir.read_config(run, edit=edit)
    metric_name = metric_name or (None if config is None else config.metric_name or config.metric.name)
    if not path.exists() and pool is None:
        raise AnnotationError(
            "file not found (give --pool to start a new file from a pool of traces)", path=path
        )
    traces = [] if pool is None else _pool_traces(Path(pool), metric_name)
    if metric_name is None and not path.exists():
        metric_name = path.stem
    if path.is_file():
        _refuse_a_pool(path)
    document = AnnotationDocument.open(path, metric_name=metric_name, create=pool is not None)
    chosen, metric = None, None
    if run is not None and traces and all(t.rank is None for t in traces):
        log(f"ranking {len(traces)} pool traces with suggest (the run's judge and LLM)")
        found = _suggest.suggest(run, [t.metric_input for t in traces], n=len(traces), edit=edit)
        traces = [_from_suggestion(s.to_dict(), traces[s.index]) for s in found.suggestions]
    if run is not None:
        inputs = [s.metric_input for s in document.validated]
        if inputs:
            log(f"judging the file's {len(inputs)} samples with the run's chosen instructions")
        chosen = _suggest.judge_chosen(run, inputs, edit=edit)
        metric = chosen.metric
    scale, target = _scale_and_target(document, metric)
    items = _items(document, traces, target, chosen, run)
    return ReviewQueue(
        document=document,
        target=target,
        scale=scale,
        items=items,
        run=None if run is None else Path(run),
        llm=None if chosen is None else chosen.llm,
        simulated=(chosen is not None and chosen.simulated) or any(t.simulated for t in traces),
    )


def _refuse_a_pool(path: Path) -> None:
    """A pool of traces (rows without a judge's ``metric_output``: ``suggest``'s output, metric
    inputs) given where the annotation file goes is one error saying what to type instead."""
    raw = read_file(path)
    if isinstance(raw, list) and raw and all(isinstance(r, dict) and "metric_output" not in r for r in raw):
        raise AnnotationError(
            "a pool of traces (no metric_output), not an annotation file: give the file the labels go "
            f"into, and this one as the pool: promptevolver review LABELS.json --pool {path}",
            path=path,
        )


def _pool_traces(pool: Path, metric_name: str | None) -> list[_PoolTrace]:
    """The pool's traces in order: ``suggest``'s output (rows with ``why`` and ``verdicts``) in
    its rank order, with the chosen judge's verdict and reason; else each trace's input alone."""
    raw = read_file(pool)
    rows = raw if isinstance(raw, list) else []
    if rows and all(isinstance(r, dict) and "why" in r and "verdicts" in r for r in rows):
        traces = []
        for i, row in enumerate(rows):
            if not isinstance(row.get("metric_input"), dict):
                raise AnnotationError(
                    "a suggestion without its metric_input object", path=pool, sample_index=i
                )
            traces.append(_from_suggestion(row, _PoolTrace(normalize_metric_input(row["metric_input"]))))
        return sorted(traces, key=lambda t: t.rank if t.rank is not None else math.inf)
    return [_PoolTrace(t) for t in read_pool(pool, metric_name=metric_name)]


def _from_suggestion(row: Mapping[str, Any], trace: _PoolTrace) -> _PoolTrace:
    verdicts = row.get("verdicts") or {}
    first = next(iter(verdicts.items()), (None, None))
    judge = {"verdict": first[1], "reason": row.get("reason"), "source": f"{first[0]}, by suggest"}
    rank = row.get("rank")
    ranked = rank if isinstance(rank, int) else None
    return _PoolTrace(trace.metric_input, judge, row.get("why"), ranked, row.get("simulated") is True)


def _scale_and_target(document: AnnotationDocument, metric: Metric | None) -> tuple[LabelScale, LabelTarget]:
    """The metric's labels and the label's place in a sample: the run's judge's
    (:func:`~promptevolver.judge.label_target_of`), else read off the file (0/1 verdicts; else
    the scores seen, whole numbers a discrete scale; a file whose samples hold several prompts
    is a metric of several prompts, whose label no one prompt holds)."""
    if metric is not None and (scale := label_scale_of(metric)) is not None:
        target = label_target_of(metric)
        assert target is not None  # it has a scale
        return scale, target
    samples = document.validated
    several = any(len(s.prompts) > 1 for s in samples)  # no one prompt's output is the verdict
    found = next((name for s in samples for name in s.prompts), None)
    if not samples or infer_kind(samples) == "binary":
        prompt = None if several else found or "single_turn_aspect_critic_prompt"
        return LabelScale("binary"), LabelTarget(prompt, "verdict", True)
    values = sorted({v for s in samples for v in (s.metric_output, s.target) if v is not None and v == v})
    whole = all(float(v).is_integer() for v in values)
    scale = LabelScale("numeric", values[0], values[-1], discrete=whole)
    fields = {k for s in samples for p in s.prompts.values() for k in (p.prompt_output or {})}
    field_name = "score" if "score" in fields or "verdict" not in fields else "verdict"
    prompt = None if several else found or "single_turn_simple_criteria_prompt"
    return scale, LabelTarget(prompt, field_name, False)


def _items(
    document: AnnotationDocument,
    traces: Sequence[_PoolTrace],
    target: LabelTarget,
    chosen: Any,
    run: str | Path | None,
) -> list[ReviewItem]:
    ids: Counter[str] = Counter()

    def content_id(inputs: Mapping[str, Any]) -> str:
        key = sample_key(inputs)[:12]
        ids[key] += 1
        return key if ids[key] == 1 else f"{key}-{ids[key]}"

    file_items = []
    for position, sample in enumerate(document.validated):
        judge = _recorded_judge(sample, target)
        item = ReviewItem(
            content_id(sample.metric_input), dict(document.samples[position]["metric_input"]), judge
        )
        item.position = position
        item.label = recorded_label(sample, prompt_name=target.prompt_name, binary=target.binary)
        if chosen is not None:
            item.chosen = _judged(chosen.judgements[position])
        file_items.append(item)
    by_content: dict[str, list[ReviewItem]] = {}
    for item in file_items:
        by_content.setdefault(item.id.split("-")[0], []).append(item)
    queue: list[ReviewItem] = []
    taken: set[str] = set()
    for trace in traces:
        key = sample_key(trace.metric_input)[:12]
        match = next((i for i in by_content.get(key, []) if i.id not in taken), None)
        if match is not None:
            match.why, match.rank = trace.why, trace.rank
            taken.add(match.id)
            queue.append(match)
            continue
        item = ReviewItem(
            content_id(trace.metric_input), trace.metric_input, trace.judge, why=trace.why, rank=trace.rank
        )
        taken.add(item.id)
        queue.append(item)
    queue += [i for i in file_items if i.id not in taken]
    return queue


def _recorded_judge(sample: Any, target: LabelTarget) -> dict[str, Any] | None:
    """The verdict the file records: ``metric_output`` (None when NaN) and the prompt's reason."""
    value = sample.metric_output
    prompt = sample.prompts.get(target.prompt_name) if target.prompt_name else None
    output = prompt.prompt_output if prompt is not None else None
    reason = output.get("reason") if isinstance(output, dict) else None
    verdict = None if math.isnan(value) else value
    return {
        "verdict": verdict,
        "reason": reason if isinstance(reason, str) else None,
        "source": "recorded in the file",
    }


def _judged(judgement: Judgement) -> dict[str, Any]:
    return {"verdict": judgement.score, "reason": judgement.reason, "error": judgement.error}
