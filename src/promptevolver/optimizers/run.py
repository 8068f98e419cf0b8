"""One search in progress: its fixed context (split, evaluator, cost bounds) and its state.

:class:`SearchRun` is what the generation loop (:mod:`.genetic`) works on. It registers new
candidates (dropping duplicates), judges candidates through the run's one evaluator and totals
the run's usage. What operators and strategies see of it is built in :mod:`.views`; its history
in :mod:`.history`. Its :attr:`~SearchRun.state` is a
:class:`~promptevolver.optimizers.state.SearchState`, the only thing a checkpoint saves.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import json
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation, sampling
from promptevolver.config.models import GeneticConfig
from promptevolver.errors import LLMError, LLMUnusableError, NotSentError, PermanentLLMError
from promptevolver.evaluation.evaluator import Evaluator, Score, score
from promptevolver.evaluation.losses import Loss
from promptevolver.judge.examples import ExampleStore
from promptevolver.judge.protocol import Metric
from promptevolver.llm.attempts import watched
from promptevolver.llm.base import Completion, LLMClient, LLMRequest, Usage
from promptevolver.llm.concurrency import InFlightLimit
from promptevolver.llm.journal import Journal
from promptevolver.llm.wrapper import ClientWrapper
from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.cost import PhaseCalls, phase_calls
from promptevolver.optimizers.distill import SampleFacts, sample_facts
from promptevolver.optimizers.events import EventBus
from promptevolver.optimizers.evidence import classify
from promptevolver.optimizers.focus import make_focus
from promptevolver.optimizers.operators.breeder import Breeder
from promptevolver.optimizers.split import Split, make_split
from promptevolver.optimizers.state import SearchState
from promptevolver.optimizers.strategies.budget import BudgetMeter
from promptevolver.optimizers.strategies.failures import FailureTally, ServerWatch

__all__ = ["SearchRun"]


class SearchRun:
    """A search's context and state (see the module docstring).

    Args:
        metric: the judge; llm / reflection_llm: clients for judge and meta calls.
        dataset, loss, config: the annotations, the loss, the optimizer config.
        events: where events go; breeder: plans and runs the operators.
        journal: where answers are recorded as they arrive and replayed from on resume (None: none).
        limit: the run-wide cap on requests in flight that every phase sends through (a job's
            :meth:`InFlightLimit.share <promptevolver.llm.concurrency.InFlightLimit.share>`);
            None: one of ``config.max_concurrency`` for this run alone.

    Raises:
        InsufficientDataError, AnnotationError: from the split (before any LLM call).
    """

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
        self.started = time.perf_counter()
        self.metric, self.loss, self.config, self.dataset, self.events = metric, loss, config, dataset, events
        self.breeder = breeder
        self.clients = _distinct([llm, reflection_llm])
        self.journal = journal
        self.meter = BudgetMeter(config.budget, self.usage)  # every request checked as it is sent
        llm, reflection_llm = self.meter.wrap(llm), self.meter.wrap(reflection_llm)
        #: Sees every attempt (retries included): a dead server stops the run in seconds.
        self.watch = ServerWatch(on_dead=self._dead_server, on_wait=self._waiting)
        llm, reflection_llm = watched(llm, self.watch), watched(reflection_llm, self.watch)
        #: The one cap on the run's requests in flight (the evaluator and the operators send through it).
        self.limit = InFlightLimit(config.max_concurrency) if limit is None else limit
        llm, reflection_llm = self.limit.wrap(llm), self.limit.wrap(reflection_llm)
        if journal is not None:  # answers recorded as they arrive, replayed on resume: a replay
            llm, reflection_llm = journal.wrap(llm), journal.wrap(reflection_llm)  # takes no slot
        self.llm, self.reflection_llm = llm, reflection_llm
        if events.callbacks:  # an ``llm_call`` event after each answered call
            self.llm, self.reflection_llm = _Announced(self.llm, self), _Announced(self.reflection_llm, self)
        self.usage_start = [c.usage.copy() for c in self.clients]
        rng = np.random.default_rng(config.random_seed)
        self.labels = dataset.labels()
        usable = [i for i, y in enumerate(self.labels) if y is not None]
        self.evidence = classify(dataset, self.labels, usable, _only_prompt(metric))
        strata = {p: (self.labels[p], self.evidence[p].kind) for p in usable}
        self.split: Split = make_split(dataset, self.labels, metric, config, rng, strata)
        self.train_focus = make_focus(
            self.split.train, self.evidence, self.labels, config.max_train_samples, rng
        )
        self.validation_focus = make_focus(
            self.split.validation, self.evidence, self.labels, config.max_validation_samples, rng
        )
        #: Prompt name → train positions whose output of that prompt a human edited (several prompts).
        self.prompt_corrections = _prompt_corrections(dataset, self.split.train, metric)
        #: Out-of-bag runs: each usable sample's fold (stratified like the split); else empty.
        self.folds = _folds(self.split, strata, rng) if self.split.regime == "out-of-bag" else {}
        self.state = SearchState(rng=rng, best_so_far=loss.worst())
        #: The teaching examples' pool (the annotated train samples), when examples are considered.
        self.examples = _example_store(dataset, self.labels, self.split.train, metric, config, self.evidence)
        self.evaluator = Evaluator(
            metric=metric,
            llm=self.llm,
            dataset=dataset,
            examples=self.examples,  # self.llm is behind self.limit: no second limit
        )
        self._fingerprint: str | None = None
        #: Share of its evaluations a candidate needs measured to be ranked on its score.
        self.min_coverage = 1.0 - config.max_failure_rate
        self.tally = FailureTally(max_failure_rate=config.max_failure_rate, step="the run")
        #: How the final choice was made (``PairedChoice.report``), once it was.
        self.final_choice: dict[str, Any] = {}

    # --- steps and the failure policy ------------------------------------------------------------
    def begin_step(self, step: str, *, count_parse: bool = False) -> None:
        """Count this step's evaluations and failures afresh (see :mod:`.strategies.failures`).

        Raises:
            LLMUnusableError: the policy said stop since the last step ended.
        """
        if self.tally.stopped is not None:
            raise self.tally.stopped
        rate = self.config.max_failure_rate
        self.tally = FailureTally(
            max_failure_rate=rate, step=step, count_parse=count_parse, on_stop=self._stop_sending
        )
        self.evaluator.observer = self.tally

    def _stop_sending(self, error: LLMUnusableError) -> None:
        self.limit.close(StoppedError(f"not sent: the run is stopping ({error.cause})"))
        self.watch.stop()

    def _dead_server(self, what: str, cause: str, count: int, of: int, example: str) -> None:
        self.tally.stop(what, cause, count, of, example)

    def end_step(self) -> None:
        """Apply the failure policy to the whole step.

        Raises:
            LLMUnusableError: more than ``max_failure_rate`` of the step's calls failed.
        """
        self.tally.check()

    @property
    def train(self) -> list[int]:
        """The train samples candidates are judged on (the train focus set)."""
        return self.train_focus.positions

    @property
    def evidence_pool(self) -> list[int]:
        """Train samples whose annotation corrects the recorded judge (verdict or reason)."""
        return [p for p in self.split.train if self.evidence[p].kind != "agree"]

    @functools.cached_property
    def sample_facts(self) -> SampleFacts:
        """What a lesson must not quote: names, numbers and phrases only one sample holds
        (:func:`~promptevolver.optimizers.distill.sample_facts`), computed once."""
        return sample_facts([_texts(s) for s in self.dataset.samples])

    @property
    def calls(self) -> PhaseCalls:
        """Upper bounds on each phase's calls (the cost model)."""
        return phase_calls(
            self.config,
            n_train=len(self.train_focus.positions),
            n_val=len(self.validation_focus.positions),
            prompts=len(self.metric.get_prompts()),
            calls_per_evaluation=self.metric.calls_per_evaluation,
            meta_calls_per_offspring=self.breeder.meta_calls_per_offspring(len(self.metric.get_prompts())),
            ladders=2 if self.split.regime == "out-of-bag" else 1,
        )

    def fingerprint(self) -> str:
        """sha256 of the dataset's samples and the loss (what a checkpoint belongs to), computed once."""
        if self._fingerprint is None:
            payload = json.dumps([self.dataset.model_dump(mode="json"), self.loss.describe()], sort_keys=True)
            self._fingerprint = hashlib.sha256(payload.encode()).hexdigest()
        return self._fingerprint

    # --- judging ---------------------------------------------------------------------------------
    async def judge(
        self, candidates: Sequence[Candidate], positions: Sequence[int], split: str
    ) -> list[Score]:
        """Score ``candidates`` on ``positions`` (memoised judgements; events per candidate)."""
        return await self.judge_each([(c, positions) for c in candidates], split)

    async def judge_each(self, items: Sequence[tuple[Candidate, Sequence[int]]], split: str) -> list[Score]:
        """Score each candidate on its own positions, all at once; events in item order."""
        results = await asyncio.gather(
            *(self.evaluator.evaluate(c.instructions, pos, c.examples) for c, pos in items)
        )
        scores = [score(self.loss, judged, pos, self.labels) for (_, pos), judged in zip(items, results)]
        for (c, _), s in zip(items, scores):
            self.events.emit(
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
        for c, s in zip(candidates, await self.judge(candidates, self.train, "train")):
            c.train = s

    async def judge_validation(self, candidates: Sequence[Candidate]) -> None:
        """Judge ``candidates`` on every validation sample and record their validation scores
        (memoised: a candidate judged there before costs no call)."""
        for c, s in zip(
            candidates, await self.judge(candidates, self.validation_focus.positions, "validation")
        ):
            c.validation = s

    async def score_on(self, candidate: Candidate, positions: Sequence[int]) -> Score:
        """``candidate``'s score on ``positions`` from memoised judgements (no calls when it was
        judged there already; no events)."""
        judged = await self.evaluator.evaluate(candidate.instructions, positions, candidate.examples)
        return score(self.loss, judged, positions, self.labels)

    def has_unseen_evidence(self) -> bool:
        """Whether a population member's lineage has not yet been shown some correction."""
        pool = self.evidence_pool
        return any(p not in c.seen for c in self.state.population for p in pool)

    def _waiting(self, seconds: float, in_backoff: int, cause: str) -> None:
        """A call waits ``seconds`` before its retry (see :class:`ServerWatch`): a ``waiting`` event."""
        generation = self.state.generation if hasattr(self, "state") else 0
        self.events.emit("waiting", generation, seconds=seconds, in_backoff=in_backoff, cause=cause)

    def next_generation_fits(self) -> bool:
        """Whether one more generation fits in the budget (with the final validation reserved)."""
        calls = self.calls
        return not self.meter.spent and self.meter.allows(calls.generation, reserve=self.meter.reserve.calls)

    def usage(self) -> Usage:
        """LLM usage of this run (before a resume included); its failures include the judge
        evaluations that failed on answered calls (:attr:`Evaluator.failures`)."""
        total = self.state.usage_before + self.evaluator.failures
        for client, before in zip(self.clients, self.usage_start):
            total = total + (client.usage - before)
        return total

    def elapsed(self) -> float:
        """Wall-clock seconds spent on this run, including before a resume."""
        return self.state.elapsed_before + time.perf_counter() - self.started


class _Announced(ClientWrapper):
    """Emits an ``llm_call`` event (calls so far, the cost model's bound) after each answer."""

    def __init__(self, inner: LLMClient, run: SearchRun) -> None:
        super().__init__(inner)
        self.run = run

    async def complete(self, request: LLMRequest) -> Completion:
        completion = await self.inner.complete(request)
        run = self.run
        calls = run.usage().total_calls
        bound = max(calls, run.calls.total(run.config.generations))
        run.events.emit(
            "llm_call", run.state.generation, operation=request.operation, calls=calls, bound=bound
        )
        return completion


#: Folds of an out-of-bag run: each offspring learns from the others and is checked on its own.
OUT_OF_BAG_FOLDS = 2


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
        prompt_name=_only_prompt(metric),
        corrections=[i for i, p in enumerate(pool) if evidence[p].kind == "verdict"],
        embedder=None if embeddings is None else embeddings.build(),
    )


async def prepare_examples(run: SearchRun) -> None:
    """Embed every sample of the run once, before any judge call, when retrieval compares
    embeddings (``optimizer.examples.similarity: embeddings``; a no-op otherwise): the pool and
    every sample a step may judge. An endpoint that cannot embed them stops the run with one line
    (:class:`~promptevolver.errors.PermanentLLMError` naming the setting and the cause), or, when
    the user asked for it (``on_failure: tfidf``), the store retrieves by TF-IDF from then on and
    records why (``examples.store.similarity.fallback``)."""
    store = run.examples
    if store is None or store.similarity != "embeddings":
        return
    try:
        await store.prepare([s.metric_input for s in run.dataset.samples])
    except LLMError as exc:
        settings = run.config.examples.embeddings
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


def _folds(split: Split, strata: dict[int, Any], rng: np.random.Generator) -> dict[int, int]:
    """Position → fold, stratified on ``strata`` (label and kind of correction), folds as equal
    as possible (a stratified split of the train part into halves)."""
    keys = [strata[p] for p in split.train]
    first, second = sampling.stratified_split(keys, len(keys) // OUT_OF_BAG_FOLDS, rng)
    return {**{split.train[i]: 0 for i in first}, **{split.train[i]: 1 for i in second}}


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


def _only_prompt(metric: Metric) -> str | None:
    """The metric's prompt name when it has exactly one (whose annotations are evidence)."""
    names = list(metric.get_prompts())
    return names[0] if len(names) == 1 else None


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
