"""Crossover: merge two complementary parents into one child, prompt by prompt.

The two parents come from the breeder's selector (by default
:func:`~promptevolver.optimizers.strategies._selection.complementary_parents`: a tournament winner
and the fitter candidate that differs from it on the most train samples), never a candidate with
itself (Ragas pairs every candidate with candidate 0, itself included).
One meta call per prompt; a prompt whose merge is rejected keeps parent A's instruction, and a
child equal to a parent is rejected as ``no change``.
"""

from __future__ import annotations

import numpy as np

from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.operators import _demos as demos
from promptevolver.optimizers.operators import _meta_prompts as ops
from promptevolver.optimizers.operators._base import BreedingView, Child, MetaContext, Plan, Weighted

__all__ = ["Crossover"]


class Crossover(Weighted):
    """Merges two parents (see the module docstring).
    ``weight``: its odds of being drawn for an offspring (:class:`Weighted`)."""

    name = "crossover"
    arity = 2

    def meta_calls(self, prompts: int) -> int:
        return prompts

    def plan(
        self, view: BreedingView, parents: tuple[Candidate, ...], rng: np.random.Generator
    ) -> Plan | None:
        a, b = parents
        fold = a.fold if a.fold == b.fold else None
        return Plan(self.name, (a, b), fold=fold, examples=demos.mixed(a, b, view, rng))

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
