"""What operators and strategies see of a search in progress, built here.

The operators (:mod:`.operators`) and strategies (:mod:`.strategies`) never hold the
:class:`~promptevolver.optimizers._run.SearchRun` nor its whole
:class:`~promptevolver.optimizers._run.RunContext`; the generation loop hands them these views: the
breeding view and the meta-call context (operators), the distillation view, the screening view,
the budget view and the search view (what :mod:`.strategies.screening`, :mod:`.strategies.budget`
and the stop conditions of :mod:`.strategies.stopping` read). Views of the fixed part are built
from the context (with the piece of the state they show, if any); the screening, budget and
search views from the run, whose judging, usage and budget checks they carry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from promptevolver.judge import label_entry
from promptevolver.optimizers import _adoption, _history
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._cost import minibatch_size
from promptevolver.optimizers._distill import DistillView
from promptevolver.optimizers.operators._base import BreedingView, MetaContext
from promptevolver.optimizers.strategies._budget import BudgetView, price_of
from promptevolver.optimizers.strategies._screening import ScreeningView
from promptevolver.optimizers.strategies._stopping import SearchView

if TYPE_CHECKING:
    from promptevolver.evaluation import Score
    from promptevolver.llm import Usage
    from promptevolver.optimizers._run import RunContext, SearchRun
    from promptevolver.optimizers._state import SearchState
    from promptevolver.optimizers.operators._base import Child

__all__ = [
    "StageView",
    "breeding_view",
    "budget_view",
    "distill_view",
    "judge_outputs",
    "meta_context",
    "screening_view",
    "search_view",
    "stage_view",
]


def breeding_view(ctx: RunContext, population: list[Candidate]) -> BreedingView:
    """The ``population`` (the state's, best-ranked first), train part, labels, evidence and folds
    that operators plan offspring from."""
    return BreedingView(
        population,
        ctx.train,
        ctx.labels,
        ctx.loss,
        ctx.config,
        ctx.evidence,
        ctx.evidence_pool,
        ctx.folds,
        ctx.prompt_corrections,
        ctx.examples.positions_for("static", {}) if ctx.examples is not None else (),
    )


def distill_view(ctx: RunContext, seed: Candidate) -> DistillView:
    """The corrections, agreeing samples, evidence and folds the distillation stage learns from,
    its ladders climbing from ``seed``: every train sample (not only the judged focus set), as
    no judge call is needed to learn."""
    pool = ctx.evidence_pool
    names = list(ctx.metric.get_prompts())
    corrections = {
        name: sorted(ctx.prompt_corrections.get(name) or pool) if ctx.prompt_corrections else pool
        for name in names
    }
    agreeing = [p for p in ctx.split.train if ctx.evidence[p].kind == "agree"]
    refit = ctx.refit
    return DistillView(
        seed, corrections, agreeing, ctx.evidence, ctx.labels, ctx.folds, ctx.sample_facts, refit
    )


def meta_context(ctx: RunContext, parents: Sequence[Candidate] = ()) -> MetaContext:
    """The reflection client, metric, data and config a meta call needs, with what the judge
    answered under each parent's instructions (:func:`judge_outputs`)."""
    judged = {c.id: judge_outputs(ctx, c) for c in parents}
    facts = None if ctx.config.strategy == "genetic" else ctx.sample_facts
    return MetaContext(ctx.reflection_llm, ctx.metric, ctx.dataset, ctx.labels, ctx.config, judged, facts)


def judge_outputs(ctx: RunContext, candidate: Candidate) -> dict[int, dict[str, Any]]:
    """Train position → what the judge answered with ``candidate``'s instructions (``reason`` and
    ``verdict`` or ``score``, or ``error`` for a failed evaluation); for the seed, the
    annotation's recorded output where it was not judged (marked ``recorded``)."""
    out: dict[int, dict[str, Any]] = {}
    if candidate.is_seed:
        for p in ctx.split.train:
            recorded = ctx.evidence[p].recorded
            if recorded is not None:
                out[p] = {**recorded, "recorded": True}
    binary = ctx.dataset.is_binary
    for p in ctx.train:
        j = ctx.evaluator.lookup(candidate.instructions, p)
        if j is not None and j.score is not None:
            key, shown = label_entry(ctx.metric, j.score, binary=binary)  # as the judge answered
            out[p] = {"reason": j.reason, key: shown if isinstance(shown, str) else j.score}
        elif j is not None:
            out[p] = {"error": j.error}
    return out


def screening_view(run: SearchRun) -> ScreeningView:
    """The minibatch size, train part, labels, loss, generator and judging that screening reads."""
    return ScreeningView(
        minibatch_size(run.context.config, len(run.context.train)),
        run.context.train,
        run.context.labels,
        run.context.loss,
        run.state.rng,
        run.judge_each,
        run.score_on,
    )


def budget_view(run: SearchRun) -> BudgetView:
    """The budget, meter, call bounds and usage the budget checks read, with what a judge call
    costs (the metric, the first train sample, the judge client's price) and the final choice's
    judge calls already made (the seed's validation evaluation, when judged with the seed)."""
    judged_with_seed = bool(run.state.candidates) and run.state.seed.validation is not None
    judged_final = len(run.context.validation_focus.positions) * run.context.metric.calls_per_evaluation
    return BudgetView(
        run.context.config.budget,
        run.context.meter,
        run.context.calls,
        run.usage,
        judged_final if judged_with_seed else 0,
        run.context.metric,
        run.context.dataset.samples[run.context.train[0]] if run.context.train else None,
        price_of(run.context.clients[0]),
    )


def search_view(run: SearchRun) -> SearchView:
    """The config, loss and state the stop conditions read, with the run's budget check and its
    unseen-evidence check (asked only when a condition calls them)."""
    return SearchView(
        run.context.config, run.context.loss, run.state, run.next_generation_fits, run.has_unseen_evidence
    )


@dataclass(frozen=True, eq=False)
class StageView:
    """What a stage of the pipeline (:mod:`._stages`) works on: the run's fixed context and its
    state, and the run's services a stage calls — judging (memoised, events per candidate), the
    failure policy's steps, usage, adopting operator answers as candidates, recording a
    generation, the budget, screening and search views, and a checkpoint. Never the run itself:
    not its step tally, its replayed calls or its wrappers.

    Attributes:
        context: what the run holds fixed (:class:`~._run.RunContext`).
        state: what the run has done (:class:`~._state.SearchState`; a resume replaces the run's
            state before any view is made).
        judge, judge_each, judge_train, judge_validation: :class:`~._run.SearchRun`'s judging.
        begin_step, end_step: a failure-policy step (:meth:`~._run.SearchRun.begin_step`).
        stop: the failure policy says stop (``what``, dominant ``cause``, ``count`` of ``of``
            failures, an ``example`` error text); the step's :attr:`end_step` raises it.
        usage: the run's LLM usage so far; stage_start: the usage a stage starting now counts from.
        adopt: register operator answers as candidates (:func:`._adoption.adopt`).
        record_generation: record a generation with that many offspring (:mod:`._history`).
        budget, screening, search: the budget, screening and search views, made when asked.
        checkpoint: save the run's checkpoint (a no-op without a run directory).
        evolve: the optimizer's generation loop: generations until a stop condition holds, each
            checkpointed; returns the condition's reason.
    """

    context: RunContext
    state: SearchState
    judge: Callable[[Sequence[Candidate], Sequence[int], str], Awaitable[list[Score]]]
    judge_each: Callable[[Sequence[tuple[Candidate, Sequence[int]]], str], Awaitable[list[Score]]]
    judge_train: Callable[[Sequence[Candidate]], Awaitable[None]]
    judge_validation: Callable[[Sequence[Candidate]], Awaitable[None]]
    begin_step: Callable[..., None]
    end_step: Callable[[], None]
    stop: Callable[[str, str, int, int, str], None]
    usage: Callable[[], Usage]
    stage_start: Callable[[], Usage]
    adopt: Callable[[Sequence[Child]], list[Candidate]]
    record_generation: Callable[[int], Any]
    budget: Callable[[], BudgetView]
    screening: Callable[[], ScreeningView]
    search: Callable[[], SearchView]
    checkpoint: Callable[[], None]
    evolve: Callable[[], Awaitable[str]]


def stage_view(
    run: SearchRun, checkpoint: Callable[[], None], evolve: Callable[[StageView], Awaitable[str]]
) -> StageView:
    """The view the pipeline's stages work on (:class:`StageView`), with ``checkpoint`` saving
    the run's checkpoint and ``evolve`` the optimizer's generation loop (given the view)."""
    view = StageView(
        context=run.context,
        state=run.state,
        judge=run.judge,
        judge_each=run.judge_each,
        judge_train=run.judge_train,
        judge_validation=run.judge_validation,
        begin_step=run.begin_step,
        end_step=run.end_step,
        stop=run.stop_step,
        usage=run.usage,
        stage_start=run.stage_start,
        adopt=lambda children: _adoption.adopt(run, children),
        record_generation=lambda offspring: _history.record_generation(run, offspring=offspring),
        budget=lambda: budget_view(run),
        screening=lambda: screening_view(run),
        search=lambda: search_view(run),
        checkpoint=checkpoint,
        evolve=lambda: evolve(view),
    )
    return view
