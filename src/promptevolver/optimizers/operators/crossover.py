"""Crossover: merge two complementary parents into one child, prompt by prompt.

The parents are drawn by :func:`~promptevolver.optimizers.strategies.selection.complementary_parents`
(a tournament winner and the fitter candidate that differs from it on the most train samples),
never a candidate with itself (Ragas pairs every candidate with candidate 0, itself included).
One meta call per prompt; a prompt whose merge is rejected keeps parent A's instruction, and a
child equal to a parent is rejected as ``no change``.
"""

from __future__ import annotations

import numpy as np

from promptevolver.optimizers.operators import demos
from promptevolver.optimizers.operators import meta_prompts as ops
from promptevolver.optimizers.operators.base import BreedingView, Child, MetaContext, Plan
from promptevolver.optimizers.strategies import selection

__all__ = ["Crossover"]


class Crossover:
    """Merges two parents (see the module docstring).

    Args:
        weight: relative odds of being drawn for an offspring (0 switches it off).
    """

    name = "crossover"

    def __init__(self, *, weight: float = 1.0) -> None:
        if weight < 0:
            raise ValueError(f"weight must be >= 0, got {weight}")
        self.weight = weight

    def meta_calls(self, prompts: int) -> int:
        return prompts

    def plan(self, view: BreedingView, rng: np.random.Generator) -> Plan | None:
        pair = selection.complementary_parents(view.population, view.loss, rng, view.config.tournament_size)
        if pair is None:
            return None
        fold = pair[0].fold if pair[0].fold == pair[1].fold else None
        return Plan(self.name, pair, fold=fold, examples=demos.mixed(pair[0], pair[1], view, rng))

    async def run(self, plan: Plan, ctx: MetaContext) -> Child:
        a, b = plan.parents
        instructions = {}
        for name in a.instructions:
            out = await ops.crossover(
                ctx.llm,
                parent_a=a.instructions[name],
                parent_b=b.instructions[name],
                temperature=ctx.config.meta_temperature,
                sample_index=plan.slot,
            )
            instructions[name] = a.instructions[name] if out.value is None else str(out.value)
        if (instructions, plan.examples) in ((a.instructions, a.examples), (b.instructions, b.examples)):
            return Child(plan, None, rejected="no change")
        return Child(plan, instructions)
