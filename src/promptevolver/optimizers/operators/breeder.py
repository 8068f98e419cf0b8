"""Making new candidates: reverse engineering, mutation (feedback + rewrite) and crossover.

:class:`Breeder` turns planned operations into instructions through the operators' meta calls.
Planning draws from the Generator it is given, in a fixed order, before any call is made; the
calls then run concurrently and their results are collected in plan order, so a run does not
depend on which call finishes first.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation, sampling
from promptevolver.config.models import GeneticConfig
from promptevolver.evaluation.losses import Loss
from promptevolver.judge.aspect_critic import Metric
from promptevolver.llm.base import LLMClient
from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.operators import meta_prompts as ops
from promptevolver.optimizers.strategies import selection

__all__ = ["Breeder", "Plan"]


@dataclass(frozen=True)
class Plan:
    """One planned offspring: ``operator`` with its ``parents`` and, for a mutation, the failing
    sample positions to show; ``slot`` makes its meta calls distinct (cache sample index)."""

    operator: str
    parents: tuple[Candidate, ...]
    slot: int
    positions: tuple[int, ...] = ()


@dataclass
class Child:
    """An operator's product before it becomes a :class:`Candidate`."""

    plan: Plan
    instructions: dict[str, str] | None
    feedback: list[str] = field(default_factory=list)
    rejected: str | None = None


class Breeder:
    """Plans and runs the operators for one optimization run.

    Args:
        llm: client for meta calls (the reflection LLM).
        metric: the judge (its name and input fields are shown to meta calls).
        dataset: annotated samples; positions index ``dataset.samples``.
        labels: human label per position.
        config: the optimizer config.
        loss: the loss (for selection within planning).
    """

    def __init__(
        self,
        *,
        llm: LLMClient,
        metric: Metric,
        dataset: SingleMetricAnnotation,
        labels: Sequence[float | None],
        config: GeneticConfig,
        loss: Loss,
    ) -> None:
        self.llm = llm
        self.metric = metric
        self.dataset = dataset
        self.labels = labels
        self.config = config
        self.loss = loss
        self.rejections: Counter[str] = Counter()
        self.slots = 0
        self.tried: set[tuple[str, tuple[int, ...], tuple[int, ...]]] = set()

    def _slot(self) -> int:
        self.slots += 1
        return self.slots

    # --- examples shown to meta calls ------------------------------------------------------
    def example(self, position: int, prompt_name: str, judged: dict[str, Any] | None = None) -> ops.Example:
        sample = self.dataset.samples[position]
        inputs_of = getattr(self.metric, "prompt_inputs", None)
        inputs = inputs_of(sample.metric_input) if inputs_of else dict(sample.metric_input)
        expected: dict[str, Any] = {}
        approved = sample.expected_output(prompt_name)
        if approved and approved.get("reason"):
            expected["reason"] = approved["reason"]
        label = self.labels[position]
        expected["verdict"] = int(label) if label is not None and float(label).is_integer() else label
        return ops.Example(inputs=inputs, expected=expected, judged=judged)

    # --- planning ----------------------------------------------------------------------------
    def plan_reverse_engineering(
        self, train: Sequence[int], count: int, rng: np.random.Generator
    ) -> list[Plan]:
        """``count`` plans, each showing one stratified batch of ``num_demonstrations`` train samples."""
        if count <= 0 or not train:
            return []
        keys = [self.labels[p] for p in train]
        batches = sampling.stratified_batches(keys, self.config.num_demonstrations, rng)
        order = rng.permutation(len(batches))[:count].tolist()
        return [
            Plan("reverse_engineer", (), self._slot(), tuple(train[i] for i in batches[b])) for b in order
        ]

    def plan_offspring(
        self, population: Sequence[Candidate], train: Sequence[int], count: int, rng: np.random.Generator
    ) -> list[Plan]:
        """``count`` plans of mutation or crossover, drawn by the configured weights."""
        weights = np.array([self.config.mutation_weight, self.config.crossover_weight], dtype=np.float64)
        if weights.sum() == 0:
            return []
        plans = []
        for _ in range(count):
            crossover_first = rng.random() >= weights[0] / weights.sum()
            planners = [self._plan_crossover, self._plan_mutation]
            if not crossover_first:
                planners.reverse()
            if weights.min() == 0:  # an operator switched off is never a fallback
                planners = planners[:1]
            for planner in planners:
                plan = planner(population, train, rng)
                if plan is not None:
                    plans.append(plan)
                    break
        return plans

    def _plan_crossover(
        self, population: Sequence[Candidate], train: Sequence[int], rng: np.random.Generator
    ) -> Plan | None:
        pair = selection.complementary_parents(population, self.loss, rng, self.config.tournament_size)
        if pair is None or not self._first_try("crossover", (pair[0].id, pair[1].id), ()):
            return None
        return Plan("crossover", pair, self._slot())

    def _plan_mutation(
        self, population: Sequence[Candidate], train: Sequence[int], rng: np.random.Generator
    ) -> Plan | None:
        improvable = [c for c in population if (c.train_correct() < 1.0).any()]
        if not improvable:
            return None
        front = [c for c in selection.pareto_front(population) if c in improvable] or improvable
        parent = selection.tournament(front, self.loss, rng, self.config.tournament_size)
        failing = [p for p, ok in zip(train, parent.train_correct()) if ok < 1.0]
        n = min(self.config.sample_size, len(failing))
        chosen = sampling.stratified_sample([self.labels[p] for p in failing], n, rng)
        shown = tuple(failing[i] for i in rng.permutation(chosen).tolist())
        if not self._first_try("mutation", (parent.id,), tuple(sorted(shown))):
            return None
        return Plan("mutation", (parent,), self._slot(), shown)

    def _first_try(self, operator: str, parents: tuple[int, ...], positions: tuple[int, ...]) -> bool:
        """Record a plan; False if the same operator already ran on the same parents and samples
        (a tabu list: repeating it would mostly buy a duplicate)."""
        key = (operator, parents, positions)
        if key in self.tried:
            return False
        self.tried.add(key)
        return True

    # --- running -----------------------------------------------------------------------------
    async def run(self, plans: Sequence[Plan], judged: dict[int, dict[int, dict[str, Any]]]) -> list[Child]:
        """Execute ``plans`` concurrently; children in plan order. ``judged`` maps a parent id to
        its judge outputs by position (shown to feedback calls)."""
        return list(await asyncio.gather(*(self._run_one(plan, judged) for plan in plans)))

    async def _run_one(self, plan: Plan, judged: dict[int, dict[int, dict[str, Any]]]) -> Child:
        if plan.operator == "reverse_engineer":
            child = await self._reverse_engineer(plan)
        elif plan.operator == "crossover":
            child = await self._crossover(plan)
        else:
            child = await self._mutate(plan, judged.get(plan.parents[0].id, {}))
        if child.rejected:
            self.rejections[f"{plan.operator}: {child.rejected}"] += 1
        return child

    async def _reverse_engineer(self, plan: Plan) -> Child:
        instructions, rejected = {}, None
        for name in self.metric.get_prompts():
            examples = [self.example(p, name) for p in plan.positions]
            out = await ops.reverse_engineer(
                self.llm,
                metric_name=self.metric.name,
                examples=examples,
                temperature=self.config.meta_temperature,
                sample_index=plan.slot,
            )
            if out.value is None:
                rejected = out.rejected
                break
            instructions[name] = str(out.value)
        return Child(plan, None if rejected else instructions, rejected=rejected)

    async def _crossover(self, plan: Plan) -> Child:
        a, b = plan.parents
        instructions = {}
        for name in a.instructions:
            out = await ops.crossover(
                self.llm,
                parent_a=a.instructions[name],
                parent_b=b.instructions[name],
                temperature=self.config.meta_temperature,
                sample_index=plan.slot,
            )
            instructions[name] = a.instructions[name] if out.value is None else str(out.value)
        unchanged = instructions == a.instructions or instructions == b.instructions
        return Child(plan, None if unchanged else instructions, rejected="no change" if unchanged else None)

    async def _mutate(self, plan: Plan, judged: dict[int, dict[str, Any]]) -> Child:
        (parent,) = plan.parents
        instructions, notes = dict(parent.instructions), list[str]()
        for name, instruction in parent.instructions.items():
            failures = [self.example(p, name, judged.get(p)) for p in plan.positions]
            fb = await ops.feedback(
                self.llm,
                instruction=instruction,
                failures=failures,
                max_feedbacks=self.config.max_feedbacks,
                temperature=self.config.meta_temperature,
                sample_index=plan.slot,
            )
            if fb.value is None:
                return Child(plan, None, rejected=fb.rejected)
            items = list(fb.value)
            out = await ops.rewrite(
                self.llm,
                instruction=instruction,
                feedback_items=items,
                temperature=self.config.meta_temperature,
                sample_index=plan.slot,
            )
            if out.value is None:
                return Child(plan, None, items, rejected=out.rejected)
            instructions[name], notes = str(out.value), notes + items
        return Child(plan, instructions, notes)
