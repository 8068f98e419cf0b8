"""Mutation: feedback on samples the parent gets wrong, then a rewrite that applies it.

The parent is a tournament winner among the improvable candidates of the Pareto front (those
that still get some train sample wrong); the feedback call is shown up to ``sample_size`` of its
failing train samples (a stratified draw, in random order) with the judge's output beside the
human's. Two meta calls per prompt: feedback, then rewrite (as Ragas' feedback mutation).
"""

from __future__ import annotations

import numpy as np

from promptevolver.annotations import sampling
from promptevolver.optimizers.operators import meta_prompts as ops
from promptevolver.optimizers.operators.base import BreedingView, Child, MetaContext, Plan
from promptevolver.optimizers.strategies import selection

__all__ = ["Mutation"]


class Mutation:
    """Feedback-guided rewrite of one parent (see the module docstring).

    Args:
        weight: relative odds of being drawn for an offspring (0 switches it off).
    """

    name = "mutation"

    def __init__(self, *, weight: float = 1.0) -> None:
        if weight < 0:
            raise ValueError(f"weight must be >= 0, got {weight}")
        self.weight = weight

    def meta_calls(self, prompts: int) -> int:
        return 2 * prompts

    def plan(self, view: BreedingView, rng: np.random.Generator) -> Plan | None:
        improvable = [c for c in view.population if (c.train_correct() < 1.0).any()]
        if not improvable:
            return None
        front = [c for c in selection.pareto_front(view.population) if c in improvable] or improvable
        parent = selection.tournament(front, view.loss, rng, view.config.tournament_size)
        failing = [p for p, ok in zip(view.train, parent.train_correct()) if ok < 1.0]
        n = min(view.config.sample_size, len(failing))
        chosen = sampling.stratified_sample([view.labels[p] for p in failing], n, rng)
        shown = tuple(failing[i] for i in rng.permutation(chosen).tolist())
        return Plan(self.name, (parent,), positions=shown)

    async def run(self, plan: Plan, ctx: MetaContext) -> Child:
        (parent,) = plan.parents
        judged = ctx.judged.get(parent.id, {})
        instructions, notes = dict(parent.instructions), list[str]()
        for name, instruction in parent.instructions.items():
            fb = await ops.feedback(
                ctx.llm,
                instruction=instruction,
                failures=[ctx.example(p, name, judged.get(p)) for p in plan.positions],
                max_feedbacks=ctx.config.max_feedbacks,
                temperature=ctx.config.meta_temperature,
                sample_index=plan.slot,
            )
            if fb.value is None:
                return Child(plan, None, rejected=fb.rejected)
            items = list(fb.value)
            out = await ops.rewrite(
                ctx.llm,
                instruction=instruction,
                feedback_items=items,
                temperature=ctx.config.meta_temperature,
                sample_index=plan.slot,
            )
            if out.value is None:
                return Child(plan, None, items, rejected=out.rejected)
            instructions[name], notes = str(out.value), notes + items
        return Child(plan, instructions, notes)
