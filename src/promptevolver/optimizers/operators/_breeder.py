"""The breeder: draws which operator makes each offspring, numbers the plans, runs them.

Planning an offspring: one uniform draw picks an operator by the weights (cumulative, in list
order); the parent selector (:class:`~promptevolver.optimizers.strategies._selection.ParentSelector`)
chooses its parents and the operator plans from them (:meth:`Breeder.plan_one`); if it has
nothing to offer (no parents, no plan, or a plan already made before: the tabu list), the other
operators with a weight above 0 are tried in list order. Plans are numbered with run-unique
slots as they are accepted. Running: all plans concurrently, children in plan order, rejections
counted by the caller.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from promptevolver.config import GeneticConfig
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._state import PlanKey
from promptevolver.optimizers.operators._base import BreedingView, Child, MetaContext, Operator, Plan
from promptevolver.optimizers.operators._crossover import Crossover
from promptevolver.optimizers.operators._mutation import Mutation
from promptevolver.optimizers.operators._reverse_engineer import ReverseEngineering
from promptevolver.optimizers.strategies._selection import ParentSelector, ParetoTournament, Pool

__all__ = ["Breeder", "default_operators"]


def default_operators(config: GeneticConfig) -> list[Operator]:
    """The offspring operators of a run that names none: mutation and crossover, weighted by the
    config's ``mutation_weight`` and ``crossover_weight`` (the optimizer and ``estimate`` both)."""
    return [Mutation(weight=config.mutation_weight), Crossover(weight=config.crossover_weight)]


class Breeder:
    """Plans and runs offspring with the given operators.

    Args:
        operators: offspring operators, drawn by their ``weight`` (e.g. mutation and crossover).
        reverse_engineering: the operator that seeds the initial population.
        selector: who an offspring's parents are (default :class:`ParetoTournament`).

    Raises:
        ValueError: two operators with the same name.
    """

    def __init__(
        self,
        operators: Sequence[Operator],
        reverse_engineering: ReverseEngineering,
        selector: ParentSelector | None = None,
    ) -> None:
        names = [op.name for op in operators]
        if len(set(names)) != len(names):
            raise ValueError(f"operator names must be unique, got {names}")
        self.operators = list(operators)
        self.reverse_engineering = reverse_engineering
        self.selector: ParentSelector = selector if selector is not None else ParetoTournament()
        self._by_name: dict[str, Operator] = {op.name: op for op in [*operators, reverse_engineering]}

    def meta_calls_per_offspring(self, prompts: int) -> int:
        """The most meta calls an offspring of any operator with a weight above 0 makes."""
        return max((op.meta_calls(prompts) for op in self.operators if op.weight > 0), default=0)

    def meta_call_shares(self, prompts: int) -> dict[str, float]:
        """Operator name → its share of a generation's meta calls, in [0, 1], summing to 1 (empty
        when every operator is off): each operator's weight (its odds of being drawn) times its
        :meth:`~Operator.meta_calls` for a candidate of ``prompts`` prompts."""
        calls = {op.name: op.weight * op.meta_calls(prompts) for op in self.operators if op.weight > 0}
        total = sum(calls.values())
        return {name: c / total for name, c in calls.items()} if total > 0 else {}

    def mean_meta_calls(self, prompts: int) -> float:
        """Expected meta calls of one planned offspring, the operator drawn by the weights (0.0
        when every operator is off)."""
        on = [op for op in self.operators if op.weight > 0]
        total = sum(op.weight for op in on)
        return sum(op.weight * op.meta_calls(prompts) for op in on) / total if total > 0 else 0.0

    def initial_meta_calls(self, prompts: int, *, corrections: bool) -> int:
        """Meta calls of one offspring of the initial population: the learning operator's when the
        annotations hold ``corrections`` (see :meth:`plan_initial`), else reverse engineering's."""
        learner = self._learner()
        chosen = learner if learner is not None and corrections else self.reverse_engineering
        return chosen.meta_calls(prompts)

    def _learner(self) -> Operator | None:
        """The first operator switched on that learns from the annotations' corrections."""
        learners = (op for op in self.operators if op.weight > 0 and hasattr(op, "plan_from_evidence"))
        return next(learners, None)

    def plan_initial(
        self, view: BreedingView, seed: Candidate, count: int, rng: np.random.Generator, first_slot: int
    ) -> list[Plan]:
        """``count`` plans for the initial population, numbered from ``first_slot`` + 1: mutations
        of the ``seed`` from the annotations' corrections when there are any and an operator can
        learn from them (``plan_from_evidence``), else reverse engineering from examples."""
        learner: Any = self._learner()
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
                plan = self.plan_one(self.operators[i], view, rng)
                if plan is not None and plan.key not in seen:
                    seen.add(plan.key)
                    plans.append(plan)
                    break
        return _numbered(plans, first_slot)

    def plan_one(self, operator: Operator, view: BreedingView, rng: np.random.Generator) -> Plan | None:
        """One plan of ``operator`` (slot 0): its parents chosen by the selector among the
        candidates it accepts (its ``eligible``, if it has one), then its ``plan``; None when
        either has nothing to offer."""
        eligible = getattr(operator, "eligible", None)
        accepts = None if eligible is None else functools.partial(_eligible, eligible, view=view)
        pool = Pool(view.population, view.loss, view.config.tournament_size, accepts)
        parents = self.selector.select(pool, operator.arity, rng)
        return None if parents is None else operator.plan(view, parents, rng)

    async def run(self, plans: Sequence[Plan], ctx: MetaContext) -> list[Child]:
        """Run ``plans`` concurrently; children in plan order."""
        return list(await asyncio.gather(*(self._by_name[p.operator].run(p, ctx) for p in plans)))


def _numbered(plans: Sequence[Plan], first_slot: int) -> list[Plan]:
    return [dataclasses.replace(p, slot=first_slot + i + 1) for i, p in enumerate(plans)]


def _eligible(check: Any, candidate: Candidate, *, view: BreedingView) -> bool:
    return bool(check(candidate, view))
