"""The breeder: draws which operator makes each offspring, numbers the plans, runs them.

Planning an offspring: one uniform draw picks an operator by the weights (cumulative, in list
order); if it has nothing to offer (no plan, or a plan already made before: the tabu list), the
other operators with a weight above 0 are tried in list order. Plans are numbered with run-unique
slots as they are accepted. Running: all plans concurrently, children in plan order, rejections
counted by the caller.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

import numpy as np

from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.operators.base import BreedingView, Child, MetaContext, Operator, Plan
from promptevolver.optimizers.operators.reverse_engineer import ReverseEngineering
from promptevolver.optimizers.state import PlanKey

__all__ = ["Breeder"]


class Breeder:
    """Plans and runs offspring with the given operators.

    Args:
        operators: offspring operators, drawn by their ``weight`` (e.g. mutation and crossover).
        reverse_engineering: the operator that seeds the initial population.

    Raises:
        ValueError: two operators with the same name.
    """

    def __init__(self, operators: Sequence[Operator], reverse_engineering: ReverseEngineering) -> None:
        names = [op.name for op in operators]
        if len(set(names)) != len(names):
            raise ValueError(f"operator names must be unique, got {names}")
        self.operators = list(operators)
        self.reverse_engineering = reverse_engineering
        self._by_name: dict[str, Operator] = {op.name: op for op in [*operators, reverse_engineering]}

    def meta_calls_per_offspring(self, prompts: int) -> int:
        """The most meta calls an offspring of any operator with a weight above 0 makes."""
        return max((op.meta_calls(prompts) for op in self.operators if op.weight > 0), default=0)

    def plan_initial(
        self, view: BreedingView, seed: Candidate, count: int, rng: np.random.Generator, first_slot: int
    ) -> list[Plan]:
        """``count`` plans for the initial population, numbered from ``first_slot`` + 1: mutations
        of the ``seed`` from the annotations' corrections when there are any and an operator can
        learn from them (``plan_from_evidence``), else reverse engineering from examples."""
        learner = next(
            (op for op in self.operators if op.weight > 0 and hasattr(op, "plan_from_evidence")), None
        )
        if learner is not None and view.evidence_pool:
            plans = learner.plan_from_evidence(seed, view, count, rng)
        else:
            plans = self.reverse_engineering.plan_many(view, count, rng)
        return _numbered(plans, first_slot)

    def plan_offspring(
        self,
        view: BreedingView,
        count: int,
        rng: np.random.Generator,
        *,
        tried: set[PlanKey],
        first_slot: int,
    ) -> list[Plan]:
        """Up to ``count`` plans never made before (``tried`` is read, not changed), numbered from
        ``first_slot`` + 1; empty when every operator is off or has nothing new to offer."""
        weights = np.array([op.weight for op in self.operators], dtype=np.float64)
        if weights.sum() == 0:
            return []
        bounds = np.cumsum(weights) / weights.sum()
        seen, plans = set(tried), []
        for _ in range(count):
            first = int(np.searchsorted(bounds, rng.random(), side="right"))
            order = [first] + [i for i in range(len(self.operators)) if i != first and weights[i] > 0]
            for i in order:
                plan = self.operators[i].plan(view, rng)
                if plan is not None and plan.key not in seen:
                    seen.add(plan.key)
                    plans.append(plan)
                    break
        return _numbered(plans, first_slot)

    async def run(self, plans: Sequence[Plan], ctx: MetaContext) -> list[Child]:
        """Run ``plans`` concurrently; children in plan order."""
        return list(await asyncio.gather(*(self._by_name[p.operator].run(p, ctx) for p in plans)))


def _numbered(plans: Sequence[Plan], first_slot: int) -> list[Plan]:
    return [dataclasses.replace(p, slot=first_slot + i + 1) for i, p in enumerate(plans)]
