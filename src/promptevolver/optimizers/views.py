"""What operators and strategies see of a search in progress, built here from the run.

The operators (:mod:`.operators`) and strategies (:mod:`.strategies`) never hold the
:class:`~promptevolver.optimizers.run.SearchRun`; the generation loop hands them these views: the
breeding view and the meta-call context (operators), the distillation view, the screening view
and the budget view (what :mod:`.strategies.screening` and :mod:`.strategies.budget` read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.cost import minibatch_size
from promptevolver.optimizers.distill import DistillView
from promptevolver.optimizers.operators.base import BreedingView, MetaContext
from promptevolver.optimizers.strategies.budget import BudgetView, price_of
from promptevolver.optimizers.strategies.screening import ScreeningView

if TYPE_CHECKING:
    from promptevolver.optimizers.run import SearchRun

__all__ = ["breeding_view", "budget_view", "distill_view", "judge_outputs", "meta_context", "screening_view"]


def breeding_view(run: SearchRun) -> BreedingView:
    """The population, train part, labels, evidence and folds that operators plan offspring from."""
    return BreedingView(
        run.state.population,
        run.train,
        run.labels,
        run.loss,
        run.config,
        run.evidence,
        run.evidence_pool,
        run.folds,
        run.prompt_corrections,
        run.examples.positions_for("static", {}) if run.examples is not None else (),
    )


def distill_view(run: SearchRun) -> DistillView:
    """The corrections, agreeing samples, evidence and folds the distillation stage learns from:
    every train sample (not only the judged focus set), as no judge call is needed to learn."""
    pool = run.evidence_pool
    names = list(run.metric.get_prompts())
    corrections = {
        name: sorted(run.prompt_corrections.get(name) or pool) if run.prompt_corrections else pool
        for name in names
    }
    agreeing = [p for p in run.split.train if run.evidence[p].kind == "agree"]
    return DistillView(
        run.state.seed, corrections, agreeing, run.evidence, run.labels, run.folds, run.sample_facts
    )


def meta_context(run: SearchRun, parents: Sequence[Candidate] = ()) -> MetaContext:
    """The reflection client, metric, data and config a meta call needs, with what the judge
    answered under each parent's instructions (:func:`judge_outputs`)."""
    judged = {c.id: judge_outputs(run, c) for c in parents}
    facts = None if run.config.strategy == "genetic" else run.sample_facts
    return MetaContext(run.reflection_llm, run.metric, run.dataset, run.labels, run.config, judged, facts)


def judge_outputs(run: SearchRun, candidate: Candidate) -> dict[int, dict[str, Any]]:
    """Train position → what the judge answered with ``candidate``'s instructions (``reason`` and
    ``verdict`` or ``score``, or ``error`` for a failed evaluation); for the seed, the
    annotation's recorded output where it was not judged (marked ``recorded``)."""
    out: dict[int, dict[str, Any]] = {}
    if candidate.is_seed:
        for p in run.split.train:
            recorded = run.evidence[p].recorded
            if recorded is not None:
                out[p] = {**recorded, "recorded": True}
    key = "verdict" if run.dataset.is_binary else "score"
    for p in run.train:
        j = run.evaluator.lookup(candidate.instructions, p)
        if j is not None:
            out[p] = {"reason": j.reason, key: j.score} if not j.failed else {"error": j.error}
    return out


def screening_view(run: SearchRun) -> ScreeningView:
    """The minibatch size, train part, labels, loss, generator and judging that screening reads."""
    return ScreeningView(
        minibatch_size(run.config, len(run.train)),
        run.train,
        run.labels,
        run.loss,
        run.state.rng,
        run.judge_each,
        run.score_on,
    )


def budget_view(run: SearchRun) -> BudgetView:
    """The budget, meter, call bounds and usage the budget checks read, with what a judge call
    costs (the metric, the first train sample, the judge client's price) and the final choice's
    judge calls already made (the seed's validation evaluation, when judged with the seed)."""
    judged_with_seed = bool(run.state.candidates) and run.state.seed.validation is not None
    judged_final = len(run.validation_focus.positions) * run.metric.calls_per_evaluation
    return BudgetView(
        run.config.budget,
        run.meter,
        run.calls,
        run.usage,
        judged_final if judged_with_seed else 0,
        run.metric,
        run.dataset.samples[run.train[0]] if run.train else None,
        price_of(run.clients[0]),
    )
