"""What operators see of a search in progress: the breeding view and the meta-call context.

The operators (:mod:`.operators`) never hold the :class:`~promptevolver.optimizers.run.SearchRun`;
the generation loop hands them these read-only views, built here from the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.distill import DistillView
from promptevolver.optimizers.operators.base import BreedingView, MetaContext

if TYPE_CHECKING:
    from promptevolver.optimizers.run import SearchRun

__all__ = ["breeding_view", "distill_view", "judge_outputs", "meta_context"]


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
