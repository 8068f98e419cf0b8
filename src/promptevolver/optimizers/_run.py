"""One search in progress: a frozen :class:`RunContext` beside its mutable state.

:class:`SearchRun` is what the generation loop (:mod:`._genetic`) and the pipeline's steps
(:mod:`._phases`) work on. It owns two things:

* :attr:`SearchRun.context`, a :class:`RunContext`: what is fixed from the run's construction to
  its end (metric, loss, config, dataset, the split and focus sets, the evidence, the clients and
  the decorators stacked on them, the events bus, the breeder, the journal, the in-flight limit,
  the budget meter, the evaluator, the start time). It is a frozen dataclass: no field is ever
  reassigned (the objects some fields name keep their own counters: the meter, the evaluator's
  memo, the limit). Functions that read only the fixed part take the context (:mod:`._reporting`,
  :func:`._views.meta_context`, :func:`prepare_examples`, the pipeline's read-only helpers);
* :attr:`SearchRun.state`, a :class:`~promptevolver.optimizers._state.SearchState`: what the search
  has done (population, candidates, history, usage before a resume, stage records), the only
  thing a checkpoint saves.

Besides these the run keeps the current step's failure tally (:meth:`SearchRun.begin_step`) and
the calls a resume replays. It registers no candidate itself (:mod:`._adoption` does); it judges
candidates through the context's evaluator and totals the run's usage. The context's fields are
read as ``run.context.<name>`` (one home for the list of them). What operators, strategies and
the pipeline's stages see is built in :mod:`._views` (a stage: a
:class:`~._views.StageView`): never the run, never the context whole to a strategy or operator.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from promptevolver.annotations import (
    SingleMetricAnnotation,
    group_keys,
    stratified_group_kfold,
    stratified_split,
)
from promptevolver.config import GeneticConfig
from promptevolver.errors import LLMError, LLMUnusableError, NotSentError, PermanentLLMError
from promptevolver.evaluation import Evaluator, Loss, Score, score
from promptevolver.judge import ExampleStore, Metric
from promptevolver.llm import (
    ClientWrapper,
    Completion,
    InFlightLimit,
    Journal,
    LLMClient,
    LLMRequest,
    Usage,
    watched,
)
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._cost import PhaseCalls, phase_calls
from promptevolver.optimizers._distill import SampleFacts, sample_facts
from promptevolver.optimizers._evidence import Evidence, classify, evidence_prompt
from promptevolver.optimizers._focus import Focus, make_focus
from promptevolver.optimizers._split import Split, make_split, refits
from promptevolver.optimizers._state import SearchState
from promptevolver.optimizers.events import EventBus
from promptevolver.optimizers.operators._breeder import Breeder
from promptevolver.optimizers.strategies._budget import BudgetMeter
from promptevolver.optimizers.strategies._failures import FailureTally, ServerWatch
from promptevolver.optimizers.strategies._final_choice import PairedRule

__all__ = ["RunContext", "SearchRun"]


@dataclass(frozen=True, slots=True, eq=False)
class RunContext:
    """What one search holds fixed from its construction to its end; built by :class:`SearchRun`.

    Frozen: assigning a field raises :class:`dataclasses.FrozenInstanceError`. The objects some
    fields name keep their own state (``meter`` counts what was sent, ``evaluator`` memoises
    judgements, ``limit`` counts requests in flight, ``examples`` may fall back to TF-IDF); which
    object each field names never changes. Compared by identity.

    Attributes:
        metric: the judge (its instructions are read, never changed).
        loss: what candidates are scored by (its direction: :meth:`Loss.better`).
        config: the optimizer config.
        dataset: the annotations (labels checked against the metric's scale).
        events: where the run's events go.
        breeder: plans and runs the operators.
        journal: where answers are recorded as they arrive and replayed from on resume (None: none).
        clients: the distinct clients as given (the judge's first), whose usage the run totals.
        usage_start: each client's usage when the run was built (aligned with ``clients``).
        llm, reflection_llm: the clients judge and meta calls go through: the budget meter, the
            attempt watch, the in-flight limit and the journal stacked on the given clients
            (innermost first), and the ``llm_call`` announcer when the events have callbacks.
        meter: the budget meter every request passes as it is sent.
        watch: sees every attempt (retries included): a dead server stops the run in seconds.
        limit: the one cap on the run's requests in flight (the evaluator and the operators
            send through it).
        started: :func:`time.perf_counter` when the run was built, in seconds.
        labels: each sample's human label, aligned with ``dataset.samples`` (None: none).
        evidence: usable sample position → what its annotation says (:mod:`._evidence`).
        split: the train and validation parts (or out of bag).
        train_focus, validation_focus: the judged samples of each part and their weights
            (:mod:`._focus`).
        prompt_corrections: for a metric of several prompts, prompt name → train positions whose
            output of that prompt a human edited; empty for one prompt.
        folds: out of bag, each usable train position's fold (0 … ``cv_folds`` − 1; stratified like the
            split); empty when held out.
        examples: the teaching examples' pool (the annotated train samples; None: the run
            considers no example).
        evaluator: memoised judging through ``llm`` (behind ``limit``: no second limit).
        min_coverage: share of its evaluations, in [0, 1], a candidate needs measured to be
            ranked on its score (1 − ``max_failure_rate``).
    """

    metric: Metric
    loss: Loss
    config: GeneticConfig
    dataset: SingleMetricAnnotation
    events: EventBus
    breeder: Breeder
    journal: Journal | None
    clients: tuple[LLMClient, ...]
    usage_start: tuple[Usage, ...]
    llm: LLMClient
    reflection_llm: LLMClient
    meter: BudgetMeter
    watch: ServerWatch
    limit: InFlightLimit
    started: float
    labels: list[float | None]
    evidence: dict[int, Evidence]
    split: Split
    train_focus: Focus
    validation_focus: Focus
    prompt_corrections: dict[str, frozenset[int]]
    folds: dict[int, int]
    examples: ExampleStore | None
    evaluator: Evaluator
    min_coverage: float
    #: Derived values computed once on first use (the fingerprint, the sample facts).
    _once: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def train(self) -> list[int]:
        """The train samples candidates are judged on (the train focus set)."""
        return self.train_focus.positions

    @property
    def evidence_pool(self) -> list[int]:
        """Train samples whose annotation corrects the recorded judge (verdict or reason)."""
        return [p for p in self.split.train if self.evidence[p].kind != "agree"]

    @property
    def sample_facts(self) -> SampleFacts:
        """What a lesson must not quote: names, numbers and phrases only one sample holds
        (:func:`~promptevolver.optimizers._distill.sample_facts`), computed once."""
        if "sample_facts" not in self._once:
            self._once["sample_facts"] = sample_facts([_texts(s) for s in self.dataset.samples])
        return cast(SampleFacts, self._once["sample_facts"])

    @property
    def calls(self) -> PhaseCalls:
        """Upper bounds on each phase's calls (the cost model)."""
        prompts = len(self.metric.get_prompts())
        return phase_calls(
            self.config,
            n_train=len(self.train_focus.positions),
            n_val=len(self.validation_focus.positions),
            prompts=prompts,
            calls_per_evaluation=self.metric.calls_per_evaluation,
            meta_calls_per_offspring=self.breeder.meta_calls_per_offspring(prompts),
            ladders=self.config.cv_folds + 1 if self.refit else 1 if self.split.regime.held_out else 2,
            refit=self.refit,
        )

    @property
    def rule(self) -> PairedRule:
        """The run's one decision rule ("better with probability ``confidence``"), at the config's
        ``confidence`` and the run's ``min_coverage``."""
        return PairedRule(confidence=self.config.confidence, min_coverage=self.min_coverage)

    @property
    def refit(self) -> bool:
        """Whether the run cross-validates its distillation recipe and refits it on every
        correction (out of bag, :func:`._split.refits`; :mod:`._refit`)."""
        return not self.split.regime.held_out and refits(self.split.n_usable, self.config)

    def fingerprint(self) -> str:
        """sha256 of the dataset's samples and the loss (what a checkpoint belongs to), computed once:
        the digest of their sorted-key JSON, fed to the hash piece by piece as it is encoded (the
        same bytes as one ``json.dumps``, without a second copy of the whole file in memory: 37 MiB
        at 20,000 annotations, the run's peak)."""
        if "fingerprint" not in self._once:
            digest = hashlib.sha256()
            payload = [self.dataset.model_dump(mode="json"), self.loss.describe()]
            for piece in json.JSONEncoder(sort_keys=True).iterencode(payload):
                digest.update(piece.encode())
            self._once["fingerprint"] = digest.hexdigest()
        return cast(str, self._once["fingerprint"])


class SearchRun:
    """A search's fixed context and its state (see the module docstring).

    Args:
        metric: the judge; llm / reflection_llm: clients for judge and meta calls.
        dataset, loss, config: the annotations, the loss, the optimizer config.
        events: where events go; breeder: plans and runs the operators.
        journal: where answers are recorded as they arrive and replayed from on resume (None: none).
        limit: the run-wide cap on requests in flight that every phase sends through (a job's
            :meth:`InFlightLimit.share <promptevolver.llm._concurrency.InFlightLimit.share>`);
            None: one of ``config.max_concurrency`` for this run alone.

    Attributes:
        context: what is fixed for the whole run (:class:`RunContext`; frozen).
        state: what the search has done so far (:class:`SearchState`; a resume replaces it).
        tally: the current step's failure tally (:meth:`begin_step`).

    Raises:
        InsufficientDataError, AnnotationError: from the split (before any LLM call).
    """

    __slots__ = ("context", "replayed", "state", "tally")

    def __init__(
        self,
        *,
        metric: Metric,
        llm: LLMClient,
        reflection_llm: LLMClient,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: GeneticConfig,
        events: EventBus,
        breeder: Breeder,
        journal: Journal | None = None,
        limit: InFlightLimit | None = None,
    ) -> None:
        started = time.perf_counter()
        clients = _distinct([llm, reflection_llm])
        meter = BudgetMeter(config.budget, self.usage)  # every request checked as it is sent
        llm, reflection_llm = meter.wrap(llm), meter.wrap(reflection_llm)
        watch = ServerWatch(on_dead=self._dead_server, on_wait=self._waiting)
        llm, reflection_llm = watched(llm, watch), watched(reflection_llm, watch)
        limit = InFlightLimit(config.max_concurrency) if limit is None else limit
        llm, reflection_llm = limit.wrap(llm), limit.wrap(reflection_llm)
        if journal is not None:  # answers recorded as they arrive, replayed on resume: a replay
            llm, reflection_llm = journal.wrap(llm), journal.wrap(reflection_llm)  # takes no slot
        if events.callbacks:  # an ``llm_call`` event after each answered call
            llm, reflection_llm = _Announced(llm, self), _Announced(reflection_llm, self)
        usage_start = tuple(c.usage.copy() for c in clients)
        rng = np.random.default_rng(config.random_seed)
        labels = dataset.labels()
        usable = [i for i, y in enumerate(labels) if y is not None]
        evidence = classify(dataset, labels, usable, evidence_prompt(metric))
        strata = {p: (labels[p], evidence[p].kind) for p in usable}
        split = make_split(dataset, labels, metric, config, rng, strata)
        train_focus = make_focus(split.train, evidence, labels, config.max_train_samples, rng)
        validation_focus = make_focus(split.validation, evidence, labels, config.max_validation_samples, rng)
        k = config.cv_folds if refits(split.n_usable, config) else 2
        folds = {} if split.regime.held_out else _folds(split, strata, dataset, k, rng)
        examples = _example_store(dataset, labels, split.train, metric, config, evidence)
        self.context = RunContext(
            metric=metric,
            loss=loss,
            config=config,
            dataset=dataset,
            events=events,
            breeder=breeder,
            journal=journal,
            clients=tuple(clients),
            usage_start=usage_start,
            llm=llm,
            reflection_llm=reflection_llm,
            meter=meter,
            watch=watch,
            limit=limit,
            started=started,
            labels=labels,
            evidence=evidence,
            split=split,
            train_focus=train_focus,
            validation_focus=validation_focus,
            prompt_corrections=_prompt_corrections(dataset, split.train, metric),
            folds=folds,
            examples=examples,
            evaluator=Evaluator(metric=metric, llm=llm, dataset=dataset, examples=examples),
            min_coverage=1.0 - config.max_failure_rate,
        )
        self.state = SearchState(rng=rng, best_so_far=loss.worst())
        self.tally = FailureTally(max_failure_rate=config.max_failure_rate, step="the run")
        #: After a resume: the interrupted step's calls (answered, cached or failed), which the
        #: journal replays instead of sending; :meth:`stage_start` gives them to their stage.
        self.replayed = Usage()

    # --- steps and the failure policy ------------------------------------------------------------
    def begin_step(self, step: str, *, count_parse: bool = False) -> None:
        """Count this step's evaluations and failures afresh (see :mod:`.strategies.failures`).

        Raises:
            LLMUnusableError: the policy said stop since the last step ended.
        """
        if self.tally.stopped is not None:
            raise self.tally.stopped
        rate = self.context.config.max_failure_rate
        self.tally = FailureTally(
            max_failure_rate=rate, step=step, count_parse=count_parse, on_stop=self._stop_sending
        )
        self.context.evaluator.observer = self.tally

    def _stop_sending(self, error: LLMUnusableError) -> None:
        self.context.limit.close(StoppedError(f"not sent: the run is stopping ({error.cause})"))
        self.context.watch.stop()

    def _dead_server(self, what: str, cause: str, count: int, of: int, example: str) -> None:
        self.tally.stop(what, cause, count, of, example)

    def stop_step(self, what: str, cause: str, count: int, of: int, example: str) -> None:
        """The failure policy says stop for a reason the step saw itself (``what``; ``count`` of
        ``of`` failures had the dominant ``cause``; ``example`` one's error text): requests not yet
        sent are refused and :meth:`end_step` raises."""
        self.tally.stop(what, cause, count, of, example)

    def end_step(self) -> None:
        """Apply the failure policy to the whole step.

        Raises:
            LLMUnusableError: more than ``max_failure_rate`` of the step's calls failed.
        """
        self.tally.check()

    # --- judging ---------------------------------------------------------------------------------
    async def judge(
        self, candidates: Sequence[Candidate], positions: Sequence[int], split: str
    ) -> list[Score]:
        """Score ``candidates`` on ``positions`` (memoised judgements; events per candidate)."""
        return await self.judge_each([(c, positions) for c in candidates], split)

    async def judge_each(self, items: Sequence[tuple[Candidate, Sequence[int]]], split: str) -> list[Score]:
        """Score each candidate on its own positions, all at once; events in item order."""
        ctx = self.context
        results = await asyncio.gather(
            *(ctx.evaluator.evaluate(c.instructions, pos, c.examples) for c, pos in items)
        )
        scores = [score(ctx.loss, judged, pos, ctx.labels) for (_, pos), judged in zip(items, results)]
        for (c, _), s in zip(items, scores):
            ctx.events.emit(
                "candidate_evaluated",
                self.state.generation,
                candidate=c.id,
                split=split,
                score=s.value,
                failures=s.failures,
            )
        return scores

    async def judge_train(self, candidates: Sequence[Candidate]) -> None:
        """Judge ``candidates`` on every train sample and record their train scores."""
        for c, s in zip(candidates, await self.judge(candidates, self.context.train, "train")):
            c.train = s

    async def judge_validation(self, candidates: Sequence[Candidate]) -> None:
        """Judge ``candidates`` on every validation sample and record their validation scores
        (memoised: a candidate judged there before costs no call)."""
        positions = self.context.validation_focus.positions
        for c, s in zip(candidates, await self.judge(candidates, positions, "validation")):
            c.validation = s

    async def score_on(self, candidate: Candidate, positions: Sequence[int]) -> Score:
        """``candidate``'s score on ``positions`` from memoised judgements (no calls when it was
        judged there already; no events)."""
        ctx = self.context
        judged = await ctx.evaluator.evaluate(candidate.instructions, positions, candidate.examples)
        return score(ctx.loss, judged, positions, ctx.labels)

    def has_unseen_evidence(self) -> bool:
        """Whether a population member's lineage has not yet been shown some correction."""
        pool = self.context.evidence_pool
        return any(p not in c.seen for c in self.state.population for p in pool)

    def _waiting(self, seconds: float, in_backoff: int, cause: str) -> None:
        """A call waits ``seconds`` before its retry (see :class:`ServerWatch`): a ``waiting`` event."""
        generation = self.state.generation if hasattr(self, "state") else 0
        self.context.events.emit("waiting", generation, seconds=seconds, in_backoff=in_backoff, cause=cause)

    def next_generation_fits(self) -> bool:
        """Whether one more generation fits in the budget (with the final validation reserved)."""
        meter, calls = self.context.meter, self.context.calls
        return not meter.spent and meter.allows(calls.generation, reserve=meter.reserve.calls)

    def usage(self) -> Usage:
        """LLM usage of this run (before a resume included); its failures include the judge
        evaluations that failed on answered calls (:attr:`Evaluator.failures`)."""
        ctx = self.context
        total = self.state.usage_before + ctx.evaluator.failures
        for client, before in zip(ctx.clients, ctx.usage_start):
            total = total + (client.usage - before)
        return total

    def stage_start(self) -> Usage:
        """The usage a pipeline stage starting now counts from: the run's so far, less the calls
        of the step a resume interrupted (:attr:`replayed`, counted once): the first stage to
        start after a resume is the one that was interrupted, and the journal replays those
        calls instead of sending them, so without this its figures would leave them out."""
        before, self.replayed = self.usage() - self.replayed, Usage()
        return before

    def elapsed(self) -> float:
        """Wall-clock seconds spent on this run, including before a resume."""
        return self.state.elapsed_before + time.perf_counter() - self.context.started


class _Announced(ClientWrapper):
    """Emits an ``llm_call`` event (calls so far, the cost model's bound) after each answer."""

    def __init__(self, inner: LLMClient, run: SearchRun) -> None:
        super().__init__(inner)
        self.run = run

    async def complete(self, request: LLMRequest) -> Completion:
        completion = await self.inner.complete(request)
        run = self.run
        usage = run.usage()
        calls = usage.total_calls
        bound = max(calls, run.context.calls.total(run.context.config.generations))
        run.context.events.emit(
            "llm_call",
            run.state.generation,
            operation=request.operation,
            calls=calls,
            bound=bound,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=usage.cost_usd,
        )
        return completion


def shows_examples(metric: Metric) -> bool:
    """Whether ``metric`` can be shown teaching examples: one prompt, ``demonstrations`` and an
    ``ajudge`` that takes ``examples`` (AspectCritic, RubricJudge, a Ragas metric's adapter), or a
    judge whose ``shows_examples()`` says so (StatementSupport: each prompt its own examples; an
    ensemble of such a judge); not a user's judge whose ``ajudge`` takes none."""
    own = getattr(metric, "shows_examples", None)  # a judge that says (several prompts, an ensemble)
    if callable(own):
        if not own():
            return False
    elif not hasattr(metric, "demonstrations") or len(metric.get_prompts()) != 1:
        return False
    try:
        return "examples" in inspect.signature(metric.ajudge).parameters
    except (TypeError, ValueError):
        return False


def _example_store(
    dataset: SingleMetricAnnotation,
    labels: Sequence[float | None],
    train: Sequence[int],
    metric: Metric,
    config: GeneticConfig,
    evidence: dict[int, Any],
) -> ExampleStore | None:
    """The pool of teaching examples: the annotated train samples (the learning part, never a
    held-out one); None when the run considers no example (policy ``none``, ``strategy:
    genetic``) or the metric cannot show them (no ``demonstrations``: several prompts, or a
    user's judge)."""
    if config.strategy == "genetic" or config.examples.policy == "none":
        return None
    if not shows_examples(metric):
        return None
    pool = [p for p in train if labels[p] is not None]
    embeddings = config.examples.embeddings if config.examples.similarity == "embeddings" else None
    return ExampleStore(
        [dataset.samples[p] for p in pool],
        pool,
        k=config.examples.k,
        min_similarity=config.examples.min_similarity,
        binary=dataset.is_binary,
        prompt_name=evidence_prompt(metric),
        corrections=[i for i, p in enumerate(pool) if evidence[p].kind == "verdict"],
        embedder=None if embeddings is None else embeddings.build(),
    )


async def prepare_examples(context: RunContext) -> None:
    """Embed every sample of the run once, before any judge call, when retrieval compares
    embeddings (``optimizer.examples.similarity: embeddings``; a no-op otherwise): the pool and
    every sample a step may judge. An endpoint that cannot embed them stops the run with one line
    (:class:`~promptevolver.errors.PermanentLLMError` naming the setting and the cause), or, when
    the user asked for it (``on_failure: tfidf``), the store retrieves by TF-IDF from then on and
    records why (``examples.store.similarity.fallback``)."""
    store = context.examples
    if store is None or store.similarity != "embeddings":
        return
    try:
        await store.prepare([s.metric_input for s in context.dataset.samples])
    except LLMError as exc:
        settings = context.config.examples.embeddings
        if settings is not None and settings.on_failure == "tfidf":
            store.use_tfidf(str(exc))
            warnings.warn(
                f"retrieval compares TF-IDF, as optimizer.examples.embeddings.on_failure asks: {exc}",
                stacklevel=2,
            )
            return
        raise PermanentLLMError(
            f"optimizer.examples.similarity is 'embeddings' but the endpoint cannot embed the samples "
            f"({exc}); fix the endpoint, or set optimizer.examples.embeddings.on_failure: tfidf"
        ) from None


def _folds(
    split: Split, strata: dict[int, Any], dataset: SingleMetricAnnotation, k: int, rng: np.random.Generator
) -> dict[int, int]:
    """Position → fold (``k`` folds, ``cv_folds``), stratified on ``strata`` (label and kind of
    correction), folds as equal as possible, a group of samples sharing their input
    (``split.group_key``, :func:`promptevolver.annotations.group_keys`) in one fold: two folds are
    a stratified split of the train part into halves; more, each stratum's shuffled positions
    dealt round the folds, each stratum starting where the last one stopped (so fold sizes differ
    by at most one), or with shared inputs a stratified group K-fold
    (:func:`promptevolver.annotations.stratified_group_kfold`)."""
    keys = [strata[p] for p in split.train]
    every = group_keys(dataset.samples, split.group_key, path=dataset.source, metric=dataset.name)
    groups = [every[p] for p in split.train]
    shared = len(set(groups)) < len(groups)
    if k == 2:
        kept = groups if shared and len(set(groups)) >= 2 else None  # one group cannot be halved
        first, second = stratified_split(keys, len(keys) // 2, rng, kept)
        return {**{split.train[i]: 0 for i in first}, **{split.train[i]: 1 for i in second}}
    if shared and len(set(groups)) >= k:
        found = stratified_group_kfold(keys, groups, k, rng)
        return {split.train[i]: fold for fold, (_, test) in enumerate(found) for i in test}
    out: dict[int, int] = {}
    turn = 0
    for key in sorted(set(keys), key=repr):
        members = [i for i, x in enumerate(keys) if x == key]
        for i in rng.permutation(members).tolist():
            out[split.train[int(i)]] = turn % k
            turn += 1
    return out


def _prompt_corrections(
    dataset: SingleMetricAnnotation, train: Sequence[int], metric: Metric
) -> dict[str, frozenset[int]]:
    """For a metric of several prompts: prompt name → train positions where the human edited that
    prompt's output; empty for one prompt."""
    names = list(metric.get_prompts())
    if len(names) < 2:
        return {}
    out = {}
    for name in names:
        edited = [
            p for p in train if (a := dataset.samples[p].prompts.get(name)) and a.edited_output is not None
        ]
        out[name] = frozenset(edited)
    return out


def _texts(sample: Any) -> list[str]:
    """A sample's strings: its inputs and every prompt's recorded and edited reasons."""
    out = [v for v in sample.metric_input.values() if isinstance(v, str)]
    for prompt in sample.prompts.values():
        for output in (prompt.prompt_output, prompt.edited_output):
            if isinstance(output, dict) and isinstance(output.get("reason"), str):
                out.append(output["reason"])
    return out


class StoppedError(NotSentError):
    """A request not sent because the run is stopping (cause ``stopped``)."""

    @property
    def cause(self) -> str:
        return "stopped"


def _distinct(clients: Sequence[LLMClient]) -> list[LLMClient]:
    out: list[LLMClient] = []
    for c in clients:
        if all(c is not o for o in out):
            out.append(c)
    return out
