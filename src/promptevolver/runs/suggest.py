"""Which traces to annotate next: ``promptevolver suggest RUN_DIR --pool FILE -n N``.

:func:`suggest` ranks a pool of unlabelled traces by how much a human label would teach the judge
a finished run optimized, read through the run directory's saved files only: its config.yaml
(judge, LLM, annotations), result.json (chosen candidate, final choice, lineage) and
checkpoint.json (the judgements behind the Pareto front).

1. **The committee** (:func:`committee_of`): the chosen instructions, the final choice's finalists
   (largest gain over the seed first), the seed, then the Pareto front of every fully judged
   candidate over the train samples (:func:`~promptevolver.optimizers.strategies._selection.front_rows`;
   best train score first), each instruction once, at most ``committee_size``.
2. **Judge calls**, in this order, each step as far as ``max_calls`` allows: the chosen and the
   runner-up instructions on every trace (traces least like the annotated samples first);
   ``reasks`` more answers of the chosen instructions at ``reask_temperature``; the same three
   kinds of answers on up to ``calibration`` annotated samples (the run's held-out ones first;
   at most a quarter of ``max_calls``), to fit the error model; then the other members. The
   re-asks and the other members take the traces that look most informative so far first, so
   the calls go where the ranking is decided.
   A step's evaluations are sent in rounds that fit the calls left even if every answer needs a
   re-ask, and every request passes the budget meter the optimizer uses
   (:class:`~promptevolver.optimizers.strategies._budget.BudgetMeter`): no more than ``max_calls``
   answered calls are made. A failed evaluation is no verdict: it is left out and counted.
3. **Ranking** (:mod:`promptevolver.runs._suggest_rank`): the estimated chance that the chosen
   verdict is wrong (how its re-asks and the runner-up vote against it, weighed by what the
   calibration samples say, from the run's own error rate: :func:`_prior_error`) and novelty,
   then a greedy diverse pick (maximal marginal relevance); disagreement and instability are
   reported beside them.

The LLM is the run's (config.yaml ``llm``, cache included). When the run used the simulated LLM
(``provider: fake``) so does this, over the run's annotations: a trace it has no annotation of gets
a hash-drawn verdict, so its suggestions there rest on novelty and noise only (:attr:`Suggestions.llm`
says so).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from promptevolver import rundir
from promptevolver.annotations import read_pool
from promptevolver.config import (
    BudgetConfig,
    RunConfig,
    build_llm,
    build_metric,
    load_dataset,
    resolve_prompt,
)
from promptevolver.errors import AnnotationError, CheckpointError, LLMUnusableError
from promptevolver.evaluation import candidate_key
from promptevolver.judge import Judgement, Metric, label_scale_of
from promptevolver.llm import InFlightLimit, LLMClient, preflight
from promptevolver.optimizers import load_judgements
from promptevolver.optimizers.strategies import BudgetMeter, front_rows
from promptevolver.runs import _suggest_rank as rank

__all__ = [
    "ChosenJudge",
    "Member",
    "Suggestion",
    "Suggestions",
    "ajudge_chosen",
    "asuggest",
    "committee_of",
    "judge_chosen",
    "suggest",
]

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Member:
    """A committee member: a candidate of the run, why it is in the committee, its instructions.

    ``role`` is ``chosen``, ``finalist``, ``seed`` or ``Pareto front``.
    """

    candidate: int
    role: str
    instructions: dict[str, str]

    @property
    def label(self) -> str:
        """How a ``why`` line names it: ``the chosen (candidate 7)``, ``candidate 4 (finalist)``."""
        if self.role == "chosen":
            return "the seed (chosen)" if self.candidate == 0 else f"the chosen (candidate {self.candidate})"
        return "the seed" if self.candidate == 0 else f"candidate {self.candidate} ({self.role})"


@dataclass(frozen=True)
class Suggestion:
    """One trace to annotate, as ``suggest`` writes it (one JSON line each, best first).

    Attributes:
        rank: 1 for the best.
        index: the trace's 0-based position in the pool file.
        metric_input: the trace's input fields.
        score: its maximal-marginal-relevance value when picked, in [-1, 1], non-increasing down
            the list (:func:`~promptevolver.runs._suggest_rank.pick`).
        informativeness: disagreement, instability and novelty weighted, in [0, 1].
        signals: ``{"disagreement", "instability", "novelty"}``, each in [0, 1] or None (not measured).
        why: the reason in words.
        verdicts: committee member label → verdict (None: not judged or failed), chosen first.
        reasks: the chosen judge's other answers (re-asks, ensemble judges).
        nearest_annotated: ``{"index", "cosine"}`` of the most similar annotated sample (its
            position in the run's annotation file), or None.
        reason: the chosen judge's reason for its verdict (None: not judged, or failed).
        simulated: whether the simulated LLM answered (``llm.provider: fake``), not a model.
    """

    rank: int
    index: int
    metric_input: dict[str, Any]
    score: float
    informativeness: float
    signals: dict[str, float | None]
    why: str
    verdicts: dict[str, float | None]
    reasks: list[float]
    nearest_annotated: dict[str, float] | None
    reason: str | None = None
    simulated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON line: every attribute, ``metric_input`` and ``score`` first."""
        return {
            "metric_input": self.metric_input,
            "score": round(self.score, 6),
            "why": self.why,
            "reason": self.reason,
            "simulated": self.simulated,
            "rank": self.rank,
            "index": self.index,
            "informativeness": round(self.informativeness, 6),
            "signals": {k: None if v is None else round(v, 6) for k, v in self.signals.items()},
            "verdicts": self.verdicts,
            "reasks": self.reasks,
            "nearest_annotated": self.nearest_annotated,
        }


@dataclass(frozen=True)
class Suggestions:
    """What :func:`suggest` returns: the suggestions and what they cost.

    Attributes:
        suggestions: best first, at most ``n``.
        committee: the members, chosen first.
        pool_size: traces in the pool; judged: traces with a verdict of the chosen instructions.
        judge_calls: answered LLM calls made (cache hits excluded); max_calls: the bound, or None.
        failed: evaluations that failed (left out); already_annotated: pool traces whose text equals
            an annotated sample's.
        llm: which LLM answered, in words (the simulated one is named as such).
        calibration: ``{"samples", "wrong", "prior"}``: the annotated samples the error model was
            fitted on, how many of them the chosen judge got wrong, and the error rate it started
            from (:func:`_prior_error`).
        usage: the client's usage (:meth:`~promptevolver.llm._base.Usage.to_dict`).
    """

    suggestions: list[Suggestion]
    committee: list[Member]
    pool_size: int
    judged: int
    judge_calls: int
    max_calls: int | None
    failed: int
    already_annotated: int
    llm: str
    calibration: dict[str, float] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict, compare=False)

    def summary(self) -> str:
        """One line: how many suggested, from what, at what cost."""
        bound = "" if self.max_calls is None else f" of at most {self.max_calls}"
        return (
            f"suggested {len(self.suggestions)} of {self.pool_size} traces; committee of "
            f"{len(self.committee)} instructions; {self.judged} traces judged; {self.judge_calls} judge "
            f"calls{bound}; {self.failed} evaluations failed; {self.already_annotated} traces already "
            f"annotated; {self._calibrated()}; LLM: {self.llm}"
        )

    def _calibrated(self) -> str:
        c = self.calibration
        if not c:
            return "no error model"
        prior = f"prior error rate {c['prior']:.2f}"
        if not c["samples"]:
            return f"error model from the votes alone ({prior}; no annotated sample judged)"
        return (
            f"error model fitted on {c['samples']:.0f} annotated samples (the chosen judge wrong on "
            f"{c['wrong']:.0f}; {prior})"
        )


async def asuggest(
    run_dir: str | Path,
    pool: str | Path | Sequence[Mapping[str, Any]],
    *,
    n: int,
    max_calls: int | None = None,
    reasks: int = 2,
    reask_temperature: float = 1.0,
    committee_size: int = 6,
    diversity: float = 0.3,
    calibration: int = 60,
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Suggestions:
    """The ``n`` traces of ``pool`` whose human labels would teach the run's judge most (see the
    module docstring).

    Args:
        run_dir: a finished run directory (config.yaml, result.json; checkpoint.json for the
            Pareto front: without it the committee has no Pareto members).
        pool: a pool file (:func:`~promptevolver.annotations._pool.read_pool`: JSONL of metric
            inputs, or an annotation file whose labels are ignored) or the metric inputs themselves.
        n: traces to suggest (≥ 1).
        max_calls: answered LLM calls allowed (≥ 0; None: no bound). 0 ranks on novelty alone.
        reasks: extra answers of the chosen instructions per trace (≥ 0), at ``reask_temperature``.
        committee_size: most committee members (≥ 2).
        diversity: MMR weight of dissimilarity to traces picked before, in [0, 1].
        calibration: most annotated samples judged to learn which votes point at the chosen
            judge's mistakes (≥ 0; 0: none, the votes alone decide;
            :class:`~promptevolver.runs._suggest_rank.ErrorModel`).
        edit: changes the run's parsed config.yaml before validation (the CLI's ``--set``, e.g.
            another ``llm.base_url``; :func:`promptevolver.rundir.read_config`).

    Returns:
        :class:`Suggestions`, best first.

    Raises:
        ValueError: an argument out of range.
        RunDirError: not a finished run directory (no config.yaml or result.json).
        ConfigError: its config.yaml is invalid, or its OpenAI key is not set.
        AnnotationError: the pool or the run's annotations are malformed, or a trace lacks a field
            the judge needs (naming the file, trace index and field), before any LLM call.
        LLMUnusableError: the LLM fails its preflight, or every evaluation failed.
    """
    _check_args(n, max_calls, reasks, committee_size, diversity)
    if calibration < 0:
        raise ValueError(f"calibration must be >= 0, got {calibration}")
    config = rundir.read_config(run_dir, edit=edit)
    result = rundir.read_result(run_dir)
    data = load_dataset(config)
    prompt = resolve_prompt(config, data).rename
    metric = build_metric(config.metric, temperature=config.llm.temperature, prompt_name=prompt)
    traces, source = _traces(pool, config)
    shown = [_shown(metric, t, source, i) for i, t in enumerate(traces)]
    annotated = [" ".join(_text(metric.prompt_inputs(s.metric_input)).split()) for s in data.samples]
    committee = committee_of(run_dir, result, data.labels(), size=committee_size, scale=_scale(config))
    within, against = rank.similarities(shown, annotated)
    llm = build_llm(
        config.llm,
        dataset=data,
        random_seed=config.effective_optimizer().random_seed,
        prompt_name=prompt,
        scale=label_scale_of(metric),
    )
    judge = _Judge(metric, llm, traces, max_calls, config.llm.max_concurrency)
    if max_calls != 0:
        await preflight(llm)
    binary, scale = config.metric.is_binary, _scale(config)
    in_pool = {" ".join(t.split()) for t in shown}
    labels_for_calibration = [  # a trace of the pool is never its own calibration sample
        None if text in in_pool else label for text, label in zip(annotated, data.labels())
    ]
    positions = _calibration_positions(
        result, labels_for_calibration, calibration, config.effective_optimizer().random_seed
    )
    checker = _Judge(
        metric, llm, [data.samples[p].metric_input for p in positions], max_calls, config.llm.max_concurrency
    )
    steps = _Steps(judge, checker, committee, against, reasks, reask_temperature, binary=binary, scale=scale)
    votes, model = await steps.vote([data.labels()[p] for p in positions], _prior_error(result))
    if judge.done and judge.failed == len(judge.done):
        causes = sorted({j.cause or "llm" for j in judge.done.values()})
        raise LLMUnusableError(
            f"every one of the {judge.failed} evaluations failed (cause {', '.join(causes)}): the traces "
            "cannot be ranked and nothing was written; fix the LLM, then suggest again",
            cause=causes[0],
            failures=judge.failed,
            attempted=len(judge.done),
        )
    signals = [
        _signals(v, 1.0 - _max(against[i]), model, binary=binary, scale=scale) for i, v in enumerate(votes)
    ]
    picked = rank.pick([rank.informativeness(s) for s in signals], within, n, diversity=diversity)
    labels = [m.label for m in committee]

    def evidence(i: int) -> str | None:
        return model.evidence(rank.features_of(votes[i], binary=binary, scale=scale))

    first = {text: i for i, text in reversed(list(enumerate(annotated)))}
    duplicates = [first.get(" ".join(t.split())) for t in shown]
    names = _label_names(metric)
    out = [
        _suggestion(
            r, i, g, traces[i], votes[i], signals[i], labels, against[i], duplicates[i], evidence(i), names
        )
        for r, (i, g) in enumerate(picked, 1)
    ]
    fake = config.llm.provider == "fake"
    out = [replace(s, reason=_reason(judge.done.get((0, s.index, 0))), simulated=fake) for s in out]
    return Suggestions(
        suggestions=out,
        committee=committee,
        pool_size=len(traces),
        judged=sum(v.verdicts[0] is not None for v in votes),
        judge_calls=llm.usage.judge_calls,
        max_calls=max_calls,
        failed=judge.failed + checker.failed,
        already_annotated=sum(d is not None for d in duplicates),
        llm=_llm_words(config),
        calibration={
            "samples": model.wrong + model.right,
            "wrong": model.wrong,
            "prior": round(model.prior, 4),
        },
        usage=llm.usage.to_dict(),
    )


def _reason(judgement: Judgement | None) -> str | None:
    return None if judgement is None or judgement.failed else judgement.reason


@dataclass(frozen=True)
class ChosenJudge:
    """A finished run's chosen judge and what it said of some traces (:func:`ajudge_chosen`).

    Attributes:
        metric: the run's judge (its prompts named as in the run's annotation file).
        judgements: one per trace, in order (a failed one carries its cause).
        binary: whether its verdicts are 0/1.
        llm: which LLM answered, in words (the simulated one is named as such).
        simulated: whether that is the simulated LLM (``llm.provider: fake``).
        judge_calls: answered LLM calls made (cache hits excluded).
    """

    metric: Metric
    judgements: list[Judgement]
    binary: bool
    llm: str
    simulated: bool
    judge_calls: int


async def ajudge_chosen(
    run_dir: str | Path,
    traces: Sequence[Mapping[str, Any]],
    *,
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> ChosenJudge:
    """The verdict and reason of the run's chosen instructions on each of ``traces`` (metric
    inputs), with the run's judge and LLM, as :func:`asuggest` judges a pool (one call each when
    the answer parses; the run's cache answers what it holds).

    Raises:
        RunDirError, ConfigError, AnnotationError, LLMUnusableError: as :func:`asuggest`.
    """
    config = rundir.read_config(run_dir, edit=edit)
    result = rundir.read_result(run_dir)
    data = load_dataset(config)
    prompt = resolve_prompt(config, data).rename
    metric = build_metric(config.metric, temperature=config.llm.temperature, prompt_name=prompt)
    for i, trace in enumerate(traces):
        _shown(metric, trace, "the items to review", i)
    llm = build_llm(
        config.llm,
        dataset=data,
        random_seed=config.effective_optimizer().random_seed,
        prompt_name=prompt,
        scale=label_scale_of(metric),
    )
    judge = _Judge(metric, llm, traces, None, config.llm.max_concurrency)
    if traces:
        await preflight(llm)
    chosen = _instructions(int(result.get("best_id", 0)), {}, result)
    await judge.run([(chosen, 0, t, 0, None) for t in range(len(traces))])
    return ChosenJudge(
        metric=metric,
        judgements=[judge.done[(0, t, 0)] for t in range(len(traces))],
        binary=config.metric.is_binary,
        llm=_llm_words(config),
        simulated=config.llm.provider == "fake",
        judge_calls=llm.usage.judge_calls,
    )


def _synchronous(function: Callable[P, Coroutine[Any, Any, T]], name: str) -> Callable[P, T]:
    """``function`` as a synchronous function ``name``: the same arguments, run to completion
    with :func:`asyncio.run` (so not callable inside a running event loop)."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return asyncio.run(function(*args, **kwargs))

    run.__name__ = run.__qualname__ = name
    run.__doc__ = (
        f"The synchronous :func:`{function.__name__}` (same arguments and result); do not call it "
        "inside a running event loop."
    )
    return run


#: The ``n`` traces of ``pool`` whose human labels would teach the run's judge most: :func:`asuggest`
#: run to completion (same arguments and result).
suggest = _synchronous(asuggest, "suggest")

#: The run's chosen judge on some traces: :func:`ajudge_chosen` run to completion.
judge_chosen = _synchronous(ajudge_chosen, "judge_chosen")


def _check_args(n: int, max_calls: int | None, reasks: int, committee_size: int, diversity: float) -> None:
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if max_calls is not None and max_calls < 0:
        raise ValueError(f"max_calls must be >= 0, got {max_calls}")
    if reasks < 0:
        raise ValueError(f"reasks must be >= 0, got {reasks}")
    if committee_size < 2:
        raise ValueError(f"committee_size must be >= 2, got {committee_size}")
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be in [0, 1], got {diversity}")


def _traces(
    pool: str | Path | Sequence[Mapping[str, Any]], config: RunConfig
) -> tuple[list[dict[str, Any]], str]:
    if isinstance(pool, (str, Path)):
        return read_pool(pool, metric_name=config.metric_name or config.metric.name), str(pool)
    traces = [dict(t) for t in pool]
    if not traces:
        raise AnnotationError("no trace in the pool")
    return traces, "the pool"


def _shown(metric: Metric, trace: Mapping[str, Any], source: str, index: int) -> str:
    """The text the judge is shown of a trace; a missing field is an AnnotationError naming it."""
    try:
        return _text(metric.prompt_inputs(trace))
    except AnnotationError as exc:
        field = exc.field.removeprefix("metric_input.") if exc.field else None
        reason = str(exc).rsplit(": ", 1)[-1]  # without the inner error's own "field ...:" prefix
        raise AnnotationError(
            f"the trace cannot be judged: {reason}", path=source, sample_index=index, field=field
        ) from exc


def _text(fields: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for value in fields.values():
        parts.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    return "\n".join(parts)


def _scale(config: RunConfig) -> float:
    """The score range of a rubric (highest − lowest; its default ``[1, 5]`` when not set); 1.0
    for a verdict or a supported fraction."""
    if config.metric.type != "rubric":
        return 1.0
    low, high = config.metric.score_range or (1.0, 5.0)
    return float(high - low)


def _max(row: Any) -> float:
    return float(row.max()) if len(row) else 0.0


def _llm_words(config: RunConfig) -> str:
    if config.llm.provider == "fake":
        return (
            "the simulated LLM (llm.provider: fake), as the run used: it knows the run's annotations "
            "only, and draws the verdict of any other trace by a hash"
        )
    return f"{config.llm.provider} model {config.llm.model}"


# --- the committee -------------------------------------------------------------------------------


def committee_of(
    run_dir: str | Path,
    result: Mapping[str, Any],
    labels: Sequence[float | None],
    *,
    size: int,
    scale: float = 1.0,
) -> list[Member]:
    """The run's committee, chosen first (see the module docstring).

    Args:
        result: the run's result.json (:func:`promptevolver.rundir.read_result`).
        labels: the human labels of the run's annotations, by position (for the Pareto front).
        size: most members (≥ 2).
        scale: score range of a numeric metric (per-sample quality is ``1 - |error| / scale``).
    """
    lineage = {int(c["id"]): c for c in result.get("lineage", [])}
    chosen = int(result.get("best_id", 0))
    choice = result.get("final_choice") or {}
    finalists = sorted(choice.get("finalists", []), key=lambda f: -(f.get("delta") or 0.0))
    order = [(chosen, "chosen"), *((int(f["id"]), "finalist") for f in finalists), (0, "seed")]
    order += [(i, "Pareto front") for i in _pareto(run_dir, result, lineage, labels, scale)]
    members: dict[Any, Member] = {}
    for cid, role in order:
        instructions = _instructions(cid, lineage, result)
        key = candidate_key(instructions)
        if key not in members and len(members) < size:
            members[key] = Member(cid, role, instructions)
    return list(members.values())


def _instructions(cid: int, lineage: Mapping[int, Any], result: Mapping[str, Any]) -> dict[str, str]:
    if cid in lineage:
        return dict(lineage[cid]["instructions"])
    return dict(result["best_instructions"] if cid == result.get("best_id") else result["seed_instructions"])


def _pareto(
    run_dir: str | Path,
    result: Mapping[str, Any],
    lineage: Mapping[int, Any],
    labels: Sequence[float | None],
    scale: float,
) -> list[int]:
    """Ids of the Pareto front over the train samples of every candidate judged on them (best
    train score first); none without a checkpoint."""
    try:
        judgements = load_judgements(run_dir)
    except CheckpointError:
        return []
    held_out = set((result.get("split") or {}).get("validation_positions") or [])
    ids = [i for i, c in lineage.items() if c.get("train") is not None and not c.get("screened_out")]
    keys = {candidate_key(lineage[i]["instructions"]): i for i in ids}
    positions = sorted(
        {p for (_, p) in judgements if p not in held_out and p < len(labels) and labels[p] is not None}
    )
    if len(ids) < 2 or not positions:
        return []
    column = {p: j for j, p in enumerate(positions)}
    rows = {i: r for r, i in enumerate(ids)}
    matrix = np.full((len(ids), len(positions)), np.nan)
    for (key, p), judgement in judgements.items():
        i = keys.get(key)
        if i is not None and p in column and judgement.score is not None:
            matrix[rows[i], column[p]] = 1.0 - min(
                1.0, abs(judgement.score - float(labels[p] or 0.0)) / scale
            )
    front = [ids[r] for r in front_rows(matrix)]
    return sorted(front, key=lambda i: -float(lineage[i]["train"]))


# --- judging -------------------------------------------------------------------------------------


class _Judge:
    """Judges (member, trace, answer number) jobs within the call bound, each at most once."""

    def __init__(
        self,
        metric: Metric,
        llm: LLMClient,
        traces: Sequence[Mapping[str, Any]],
        max_calls: int | None,
        concurrency: int,
    ) -> None:
        self.metric, self.llm, self.traces, self.max_calls = metric, llm, traces, max_calls
        # max_calls 0: nothing is sent (room() is 0), the meter has no bound to hold
        meter = BudgetMeter(BudgetConfig(max_calls=max_calls or None), lambda: llm.usage)
        self.client = InFlightLimit(concurrency).wrap(meter.wrap(llm))
        self.worst = 2 * metric.calls_per_evaluation  # every answer re-asked once
        self.done: dict[tuple[int, int, int], Judgement] = {}
        self.failed = 0

    def room(self) -> int | None:
        return None if self.max_calls is None else self.max_calls - self.llm.usage.total_calls

    async def run(self, jobs: Sequence[tuple[Mapping[str, str], int, int, int, float | None]]) -> None:
        """Judge ``(instructions, member, trace, answer, temperature)`` jobs in order, in rounds
        that fit the calls left; stops when the next evaluation may not fit."""
        todo = [j for j in jobs if (j[1], j[2], j[3]) not in self.done]
        while todo:
            room = self.room()
            k = len(todo) if room is None else room // self.worst
            if k == 0 and room is not None and room >= self.metric.calls_per_evaluation:
                k = 1
            if k <= 0:
                return
            batch, todo = todo[:k], todo[k:]
            await asyncio.gather(*(self._one(*job) for job in batch))

    async def _one(
        self, instructions: Mapping[str, str], member: int, trace: int, answer: int, temperature: float | None
    ) -> None:
        judgement = await self.metric.ajudge(
            self.traces[trace],
            llm=self.client,
            instructions=instructions,
            sample_index=answer,
            temperature=temperature,
        )
        self.done[(member, trace, answer)] = judgement
        self.failed += judgement.failed

    def verdict(self, member: int, trace: int, answer: int = 0) -> float | None:
        j = self.done.get((member, trace, answer))
        return None if j is None else j.score


class _Steps:
    """The judge calls of step 2 (module docstring), in order, each as far as the bound allows:
    the pool's first verdicts, its re-asks, the calibration set, the other members."""

    def __init__(
        self,
        judge: _Judge,
        checker: _Judge,
        committee: Sequence[Member],
        against: Any,
        reasks: int,
        temperature: float,
        *,
        binary: bool,
        scale: float,
    ) -> None:
        self.judge, self.checker, self.committee, self.against = judge, checker, committee, against
        self.reasks, self.temperature, self.binary, self.scale = reasks, temperature, binary, scale
        self.first_done = False

    async def calibrate(self, labels: Sequence[float | None], prior: float) -> rank.ErrorModel:
        """The error model (prior error rate ``prior``), fitted on the calibration samples
        (``labels``: their human labels) that the chosen and runner-up instructions judged, with
        the chosen one's re-asks, within what the bound leaves and at most a quarter of it."""
        traces = range(len(self.checker.traces))
        room, bound = self.checker.room(), self.checker.max_calls
        if room is not None and bound is not None:
            per_sample = (2 + self.reasks) * self.checker.metric.calls_per_evaluation
            traces = range(min(len(traces), min(room, bound // 4) // per_sample))
        pairs = self.committee[:2]
        await self.checker.run([(m.instructions, i, t, 0, None) for t in traces for i, m in enumerate(pairs)])
        chosen = self.committee[0].instructions
        await self.checker.run(
            [(chosen, 0, t, k, self.temperature) for t in traces for k in range(1, self.reasks + 1)]
        )
        rows = []
        for t, votes in enumerate(_votes(self.checker, self.committee[:2], self.reasks)):
            label = labels[t]
            if label is None or votes.verdicts[0] is None:
                continue
            wrong = rank.differs(votes.verdicts[0], label, binary=self.binary, scale=self.scale)
            rows.append((rank.features_of(votes, binary=self.binary, scale=self.scale), wrong))
        return rank.ErrorModel.fit(rows, prior=prior)

    async def _first_verdicts(self) -> None:
        if self.first_done:
            return
        self.first_done = True
        n = len(self.judge.traces)
        order = sorted(range(n), key=lambda t: (_max(self.against[t]), t))  # least like the annotated first
        await self.judge.run(
            [(m.instructions, i, t, 0, None) for t in order for i, m in enumerate(self.committee[:2])]
        )

    async def vote(
        self, labels: Sequence[float | None], prior: float
    ) -> tuple[list[rank.TraceVotes], rank.ErrorModel]:
        """Every pool trace's votes and the error model: first verdicts, re-asks of the chosen
        instructions (the traces the votes alone make most doubtful first), the calibration set
        (:meth:`calibrate`), then the other members (the traces most informative so far first)."""
        await self._first_verdicts()
        alone = rank.ErrorModel.fit([], prior=prior)
        chosen = self.committee[0].instructions
        order = self._most_informative(0, alone)
        await self.judge.run(
            [(chosen, 0, t, k, self.temperature) for t in order for k in range(1, self.reasks + 1)]
        )
        model = await self.calibrate(labels, prior)
        order = self._most_informative(self.reasks, model)
        await self.judge.run(
            [(m.instructions, i, t, 0, None) for t in order for i, m in enumerate(self.committee) if i >= 2]
        )
        return _votes(self.judge, self.committee, self.reasks), model

    def _most_informative(self, reasks: int, model: rank.ErrorModel | None) -> list[int]:
        """The traces with a verdict of the chosen instructions, most informative so far first
        (novelty included; ties: file order): where the calls left are spent, so that a trace the
        budget cuts short is one that looked uninformative, not one that looked informative on
        fewer verdicts."""
        votes = _votes(self.judge, self.committee, reasks)
        value = [
            rank.informativeness(
                _signals(v, 1.0 - _max(self.against[t]), model, binary=self.binary, scale=self.scale)
            )
            for t, v in enumerate(votes)
        ]
        judged = (t for t in range(len(votes)) if votes[t].verdicts[0] is not None)
        return sorted(judged, key=lambda t: (-value[t], t))


def _signals(
    votes: rank.TraceVotes, novelty: float, model: rank.ErrorModel | None, *, binary: bool, scale: float
) -> rank.Signals:
    signals = rank.signals_of(votes, novelty, binary=binary, scale=scale)
    if model is None:
        return signals
    error = model.probability(rank.features_of(votes, binary=binary, scale=scale))
    return replace(signals, error=error)


def _prior_error(result: Mapping[str, Any]) -> float:
    """The chosen judge's error rate before any calibration sample: 1 - the held-out accuracy of
    the chosen instructions the run measured, else of its seed (an accuracy loss only), within
    [0.02, 0.5]; 0.25 when the run measured neither."""
    loss = result.get("loss") or {}
    if loss.get("metric") == "accuracy":
        scores = result.get("scores") or {}
        for who in ("best", "seed"):
            figure = (scores.get(who) or {}).get("validation")
            if isinstance(figure, int | float):
                return min(0.5, max(0.02, 1.0 - float(figure)))
    return 0.25


def _calibration_positions(
    result: Mapping[str, Any], labels: Sequence[float | None], size: int, seed: int
) -> list[int]:
    """Up to ``size`` annotated positions with a human label (``labels``; None: not to use) to
    fit the error model on: the run's held-out (validation) samples first, then the others, each
    group in a seeded random order (the run's ``random_seed``)."""
    labelled = [p for p, label in enumerate(labels) if label is not None]
    held = set((result.get("split") or {}).get("validation_positions") or [])
    rng = np.random.default_rng(seed)
    first = [p for p in labelled if p in held]
    rest = [p for p in labelled if p not in held]
    ordered = [first[i] for i in rng.permutation(len(first))] + [rest[i] for i in rng.permutation(len(rest))]
    return sorted(ordered[:size])


def _votes(judge: _Judge, committee: Sequence[Member], reasks: int) -> list[rank.TraceVotes]:
    out = []
    for t in range(len(judge.traces)):
        verdicts = tuple(judge.verdict(i, t) for i in range(len(committee)))
        others = [judge.verdict(0, t, k) for k in range(1, reasks + 1)]
        first = judge.done.get((0, t, 0))
        others += _ensemble_judges(first)
        out.append(rank.TraceVotes(verdicts, tuple(v for v in others if v is not None)))
    return out


def _ensemble_judges(judgement: Judgement | None) -> list[float | None]:
    """The individual judges' scores of an ensemble's evaluation (none for a single judge)."""
    scores = ((judgement.details or {}).get("scores") or {}) if judgement is not None else {}
    return [v for k, v in scores.items() if "_judge_" in str(k)]


def _label_names(metric: Metric) -> Any:
    """How the why names a verdict: by its label's name for a judge whose label space names its
    labels otherwise than no / yes (``a`` / ``b`` / ``tie``, a class); None: as a number."""
    scale = label_scale_of(metric)
    space = [c.name for c in (scale.label_space() if scale is not None else None) or ()]
    if scale is None or scale.kind == "numeric" or space == ["no", "yes"]:
        return None
    return scale.name_of


def _suggestion(
    rank_: int,
    index: int,
    score: float,
    trace: dict[str, Any],
    votes: rank.TraceVotes,
    signals: rank.Signals,
    labels: Sequence[str],
    against: Any,
    duplicate: int | None,
    evidence: str | None = None,
    names: Any = None,
) -> Suggestion:
    nearest = None
    if len(against):
        j = int(against.argmax())
        nearest = (j, float(against[j]))
    return Suggestion(
        rank=rank_,
        index=index,
        metric_input=trace,
        score=score,
        informativeness=rank.informativeness(signals),
        signals={
            "disagreement": signals.disagreement,
            "instability": signals.instability,
            "novelty": signals.novelty,
            "error": signals.error,
        },
        why=rank.why(
            votes,
            signals,
            labels,
            nearest=nearest,
            duplicate=duplicate,
            evidence=evidence,
            fmt=names,
        ),
        verdicts=dict(zip(labels, votes.verdicts)),
        reasks=list(votes.others),
        nearest_annotated=None if nearest is None else {"index": nearest[0], "cosine": round(nearest[1], 4)},
    )
