"""Reverse engineering: infer an instruction from a stratified batch of annotated examples.

It seeds the initial population (Ragas' GeneticOptimizer does the same): each reverse-engineering
call sees ``num_demonstrations`` train samples with the human's verdict (and reason, when one was
written or accepted) and writes an instruction that would produce them. One meta call per prompt.
With a weight above 0 it can also inject fresh candidates in later generations.
"""

from __future__ import annotations

import numpy as np

from promptevolver.annotations import stratified_batches
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.operators import _meta_prompts as ops
from promptevolver.optimizers.operators._base import BreedingView, Child, MetaContext, Plan, Weighted

__all__ = ["ReverseEngineering"]


class ReverseEngineering(Weighted):
    """Instructions inferred from examples (see the module docstring).

    Args:
        weight: odds of being drawn for an offspring in a generation (0: initial population only).
    """

    name = "reverse_engineer"
    arity = 0

    def __init__(self, *, weight: float = 0.0) -> None:
        super().__init__(weight=weight)

    def meta_calls(self, prompts: int) -> int:
        return prompts

    def plan_many(self, view: BreedingView, count: int, rng: np.random.Generator) -> list[Plan]:
        """``count`` plans, each showing a different stratified batch of train samples (fewer when
        train has fewer batches)."""
        if count <= 0 or not view.train:
            return []
        keys = [view.labels[p] for p in view.train]
        batches = stratified_batches(keys, view.config.num_demonstrations, rng)
        order = rng.permutation(len(batches))[:count].tolist()
        return [Plan(self.name, (), positions=tuple(view.train[i] for i in batches[b])) for b in order]

    def plan(
        self, view: BreedingView, parents: tuple[Candidate, ...], rng: np.random.Generator
    ) -> Plan | None:
        plans = self.plan_many(view, 1, rng)
        return plans[0] if plans else None

    async def run(self, plan: Plan, ctx: MetaContext) -> Child:
        instructions = {}
        prompts = ctx.metric.get_prompts()
        for name, prompt in prompts.items():
            out = await ops.reverse_engineer(
                ctx.llm,
                metric_name=ctx.metric.name,
                examples=[ctx.example(p, name) for p in plan.positions],
                temperature=ctx.config.meta_temperature,
                sample_index=plan.slot,
                prompt_name=name if len(prompts) > 1 else None,
                output=ops.describe_output(prompt.json_schema()) if len(prompts) > 1 else ops.BINARY_OUTPUT,
            )
            if out.value is None:
                return Child(plan, None, rejected=out.rejected, error=out.error)
            instructions[name] = str(out.value)
        return Child(plan, instructions)
