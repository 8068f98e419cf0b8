"""The state and steps of one genetic search run (the loop itself is in ``genetic.py``).

:class:`Search` owns the split, the evaluator, the breeder, every candidate ever made, the
history and the stopping state. Its steps are the named lines of the generation loop:
``initial_population``, ``offspring`` (make, screen, evaluate), ``record``, ``finish``.

**Screening** (call efficiency, ``screening.py``): offspring are first judged on a focused
minibatch of train samples and judged on all of train only if they beat their best parent there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation, sampling
from promptevolver.config.models import GeneticConfig, minibatch_size, offspring_count
from promptevolver.errors import AnnotationError, InsufficientDataError
from promptevolver.evaluation.evaluator import Evaluator, Score, candidate_key, score
from promptevolver.evaluation.losses import Loss
from promptevolver.judge.aspect_critic import Metric
from promptevolver.llm.base import LLMClient, Usage
from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.events import EventBus
from promptevolver.optimizers.operators.breeder import Breeder, Child
from promptevolver.optimizers.result import OptimizationResult
from promptevolver.optimizers.strategies import selection
from promptevolver.optimizers.strategies.budget import BudgetGuard
from promptevolver.optimizers.strategies.screening import focused_minibatch, passes

__all__ = ["MIN_USABLE_SAMPLES", "Search"]

#: Fewer usable annotations than this cannot give a train and a validation set worth the name.
MIN_USABLE_SAMPLES = 10
_META_CALLS = {"reverse_engineer": 1, "crossover": 1, "mutation": 2}


class Search:
    """One run's state. Built by :class:`GeneticOptimizer`; strategies only read it."""

    def __init__(
        self,
        *,
        metric: Metric,
        llm: LLMClient,
        reflection_llm: LLMClient,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: GeneticConfig,
        events: EventBus,
    ) -> None:
        self.started = time.perf_counter()
        self.elapsed_before = 0.0
        self.metric, self.loss, self.config, self.dataset, self.events = metric, loss, config, dataset, events
        self.clients = _distinct([llm, reflection_llm])
        self.usage_before = [c.usage.copy() for c in self.clients]
        self.usage_offset = Usage()
        self.rng = np.random.default_rng(config.random_seed)
        self.labels = dataset.labels()
        self.train, self.validation = self._split()
        self.evaluator = Evaluator(
            metric=metric, llm=llm, dataset=dataset, max_concurrency=config.max_concurrency
        )
        self.breeder = Breeder(
            llm=reflection_llm, metric=metric, dataset=dataset, labels=self.labels, config=config, loss=loss
        )
        self.budget = BudgetGuard(config.budget, self.usage)
        self.candidates: list[Candidate] = []
        self.population: list[Candidate] = []
        self.generation = 0
        self.duplicates = 0
        self.history: list[dict[str, Any]] = []
        self.best_so_far = loss.worst()
        self.since_improvement = 0
        self.stop_reason: str | None = None
        self.exhausted = False

    # --- setup -------------------------------------------------------------------------------
    def _split(self) -> tuple[list[int], list[int]]:
        usable = [i for i, y in enumerate(self.labels) if y is not None]
        source = self.dataset.source
        if len(usable) < MIN_USABLE_SAMPLES:
            raise InsufficientDataError(
                f"{len(usable)} usable annotations (need at least {MIN_USABLE_SAMPLES}); a sample is "
                "usable when it is accepted, has a target, or is a rejected sample of a binary metric",
                path=source,
                metric=self.dataset.name,
            )
        self._check_inputs(usable)
        n_val = min(max(2, round(self.config.validation_fraction * len(usable))), len(usable) - 2)
        train, val = sampling.stratified_split([self.labels[i] for i in usable], n_val, self.rng)
        train_pos = self._cap([usable[i] for i in train], self.config.max_train_samples)
        return train_pos, self._cap([usable[i] for i in val], self.config.max_validation_samples)

    def _cap(self, positions: list[int], limit: int | None) -> list[int]:
        """A stratified subset of at most ``limit`` positions (all of them when within it)."""
        if limit is None or len(positions) <= limit:
            return positions
        keep = sampling.stratified_sample([self.labels[p] for p in positions], limit, self.rng)
        return [positions[i] for i in keep]

    def _check_inputs(self, usable: Sequence[int]) -> None:
        inputs_of = getattr(self.metric, "prompt_inputs", None)
        if inputs_of is None:
            return
        for i in usable:
            try:
                inputs_of(self.dataset.samples[i].metric_input)
            except AnnotationError as exc:
                raise AnnotationError(
                    str(exc).split(": ", 1)[-1],
                    path=self.dataset.source,
                    metric=self.dataset.name,
                    sample_index=i,
                    field=exc.field,
                ) from exc

    def check_budget_upfront(self) -> None:
        """Refuse a call budget too small for the initial population and one generation."""
        pop, n_train, prompts = self.config.population_size, len(self.train), len(self.metric.get_prompts())
        initial = pop * n_train * self._calls_per_sample() + (pop - 1) * prompts
        self.budget.check_upfront(
            initial_calls=initial, generation_calls=self._generation_calls(), final_calls=self._final_calls()
        )

    def _calls_per_sample(self) -> int:
        """Judge calls one evaluation makes (a judge ensemble makes one per judge)."""
        return int(getattr(self.metric, "calls_per_evaluation", 1))

    def _generation_calls(self) -> int:
        prompts = len(self.metric.get_prompts())
        offspring = offspring_count(self.config, len(self.train))
        return offspring * (2 * prompts + len(self.train) * self._calls_per_sample())

    def _final_calls(self) -> int:
        finalists = min(self.config.finalists, self.config.population_size) + 1
        return finalists * len(self.validation) * self._calls_per_sample()

    # --- candidates --------------------------------------------------------------------------
    def _new(
        self, child: Child | None, instructions: dict[str, str], generation: int, operator: str
    ) -> Candidate | None:
        key = candidate_key(instructions)
        if any(candidate_key(c.instructions) == key for c in self.candidates):
            self.duplicates += 1
            return None
        parents = tuple(p.id for p in child.plan.parents) if child else ()
        c = Candidate(
            len(self.candidates),
            dict(instructions),
            generation,
            operator,
            parents,
            feedback=list(child.feedback) if child else [],
        )
        self.candidates.append(c)
        return c

    def _adopt(self, children: Sequence[Child], generation: int) -> list[Candidate]:
        adopted = []
        for child in children:
            self.events.emit(
                "operator_call",
                generation,
                operator=child.plan.operator,
                parents=[p.id for p in child.plan.parents],
                accepted=child.instructions is not None,
                rejected=child.rejected,
            )
            if child.instructions is None:
                continue
            c = self._new(child, child.instructions, generation, child.plan.operator)
            if c is not None:
                adopted.append(c)
        return adopted

    async def _judge(
        self, candidates: Sequence[Candidate], positions: Sequence[int], split: str
    ) -> list[Score]:
        results = await self.evaluator.evaluate_many([c.instructions for c in candidates], positions)
        scores = [score(self.loss, judged, positions, self.labels) for judged in results]
        for c, s in zip(candidates, scores):
            self.events.emit(
                "candidate_evaluated",
                self.generation,
                candidate=c.id,
                split=split,
                score=s.value,
                failures=s.failures,
            )
        return scores

    async def _judge_train(self, candidates: Sequence[Candidate]) -> None:
        for c, s in zip(candidates, await self._judge(candidates, self.train, "train")):
            c.train = s

    async def _screen(
        self, children: list[Candidate], parents_of: dict[int, list[Candidate]]
    ) -> list[Candidate]:
        """Children that beat their best parent on a focused minibatch (see ``screening.py``)."""
        size = minibatch_size(self.config, len(self.train))
        if size == 0 or not children:
            return children
        batches = [
            focused_minibatch(parents_of[c.id], self.train, self.labels, size, self.rng) for c in children
        ]
        passed = []
        for child, batch in zip(children, batches):
            child.minibatch = (await self._judge([child], batch, "minibatch"))[0]
            parents = [await self._minibatch_value(p, batch) for p in parents_of[child.id]]
            if passes(child.minibatch.value, parents, self.loss):
                passed.append(child)
            else:
                child.screened_out = True
        return passed

    async def _minibatch_value(self, parent: Candidate, batch: Sequence[int]) -> float:
        judged = await self.evaluator.evaluate(parent.instructions, batch)  # memoised: no calls
        return score(self.loss, judged, batch, self.labels).value

    # --- steps -------------------------------------------------------------------------------
    async def initial_population(self) -> list[Candidate]:
        """The seed plus reverse-engineered candidates, screened against the seed, judged on train."""
        seed = self._new(None, self.metric.get_instructions(), 0, "seed")
        assert seed is not None
        await self._judge_train([seed])
        extra = self.config.population_size - 1 if self.config.reverse_engineer else 0
        plans = self.breeder.plan_reverse_engineering(self.train, extra, self.rng)
        children = self._adopt(await self.breeder.run(plans, {}), 0)
        passed = await self._screen(children, {c.id: [seed] for c in children})
        await self._judge_train(passed)
        self.population = [seed, *passed]
        self.record(offspring=len(children))
        return self.population

    def next_generation_fits(self) -> bool:
        """Whether one more generation fits in the budget (with the final validation reserved)."""
        return self.budget.allows(self._generation_calls(), reserve=self._final_calls())

    async def step(self) -> None:
        """One generation: plan → meta calls → screen → judge on train → survivors → record."""
        self.generation += 1
        population = self.population
        self.events.emit("generation_start", self.generation, population=[c.id for c in population])
        count = offspring_count(self.config, len(self.train))
        plans = self.breeder.plan_offspring(population, self.train, count, self.rng)
        self.exhausted = not plans
        judged = {c.id: self._judge_outputs(c) for c in population}
        children = self._adopt(await self.breeder.run(plans, judged), self.generation)
        by_id = {c.id: c for c in self.candidates}
        passed = await self._screen(children, {c.id: [by_id[p] for p in c.parents] for c in children})
        await self._judge_train(passed)
        self.population = selection.survivors(
            population + passed, self.loss, self.config.population_size, self.config.elite_count
        )
        self.record(offspring=len(children))

    def _judge_outputs(self, candidate: Candidate) -> dict[int, dict[str, Any]]:
        out = {}
        for p in self.train:
            j = self.evaluator.lookup(candidate.instructions, p)
            if j is not None:
                out[p] = {"reason": j.reason, "verdict": j.score} if not j.failed else {"error": j.error}
        return out

    def record(self, *, offspring: int) -> None:
        values = [c.train_value() for c in self.population]
        best = selection.rank(self.population, self.loss)[0].train_value()
        if self.loss.better(best, self.best_so_far):
            self.best_so_far, self.since_improvement = best, 0
        else:
            self.since_improvement += 1
        usage = self.usage()
        entry = {
            "generation": self.generation,
            "best_train": best,
            "mean_train": float(np.mean(values)),
            "population": len(self.population),
            "offspring": offspring,
            "judge_calls": usage.judge_calls,
            "meta_calls": usage.meta_calls,
        }
        self.history.append(entry)
        self.events.emit(
            "generation_end",
            self.generation,
            **{k: entry[k] for k in ("best_train", "mean_train", "judge_calls", "meta_calls")},
        )

    def stalled(self) -> bool:
        return self.since_improvement >= self.config.patience

    def perfect(self) -> bool:
        """True when the best train score cannot be improved (e.g. accuracy 1.0)."""
        return self.loss.best_possible is not None and self.best_so_far == self.loss.best_possible

    def progress_fields(self) -> dict[str, Any]:
        last = self.history[-1]
        calls = last["judge_calls"] + last["meta_calls"]
        return {"best": f"{last['best_train']:.3f}", "mean": f"{last['mean_train']:.3f}", "calls": calls}

    def usage(self) -> Usage:
        total = self.usage_offset.copy()
        for client, before in zip(self.clients, self.usage_before):
            total = total + (client.usage - before)
        return total

    def elapsed(self) -> float:
        """Wall-clock seconds spent on this run, including before a resume."""
        return self.elapsed_before + time.perf_counter() - self.started

    def best_train_candidate(self) -> Candidate:
        return selection.rank(self.population, self.loss)[0]

    # --- final choice ------------------------------------------------------------------------
    async def finish(self, stop_reason: str) -> OptimizationResult:
        """Judge the last population and the seed on validation; the best there wins."""
        self.stop_reason = stop_reason
        seed = self.candidates[0]
        top = selection.rank(self.population, self.loss)[: self.config.finalists]
        finalists = list({c.id: c for c in [seed, *top]}.values())
        for c, s in zip(finalists, await self._judge(finalists, self.validation, "validation")):
            c.validation = s
        best = selection.rank(finalists, self.loss, on="validation")[0]
        self.events.emit("stop", self.generation, reason=stop_reason, best=best.id)
        return self._result(seed, best, stop_reason)

    def _split_note(self) -> str | None:
        usable = sum(1 for y in self.labels if y is not None)
        return _split_note_for(len(self.validation), usable)

    def _result(self, seed: Candidate, best: Candidate, stop_reason: str) -> OptimizationResult:
        assert seed.train and seed.validation and best.train and best.validation
        return OptimizationResult(
            metric=self.metric.name,
            seed_instructions=dict(seed.instructions),
            best_instructions=dict(best.instructions),
            loss=self.loss.describe(),
            scores={
                "seed": {"train": seed.train.value, "validation": seed.validation.value},
                "best": {"train": best.train.value, "validation": best.validation.value},
            },
            history=self.history,
            usage=self.usage().to_dict(),
            lineage=[c.to_dict() for c in self.candidates],
            best_id=best.id,
            stop_reason=stop_reason,
            split={
                "train": len(self.train),
                "validation": len(self.validation),
                "strategy": "stratified on the human label",
                "validation_positions": self.validation,
                "note": self._split_note(),
                "unusable": [
                    {"index": u.sample_index, "reason": u.reason} for u in self.dataset.unusable_samples()
                ],
            },
            operator_stats={
                "rejected": dict(sorted(self.breeder.rejections.items())),
                "duplicates": self.duplicates,
                "screened_out": sum(c.screened_out for c in self.candidates),
            },
            config=self.config.model_dump(),
            random_seed=self.config.random_seed,
            duration_s=self.elapsed(),
        )


SMALL_VALIDATION = 10


def _split_note_for(n_validation: int, n_usable: int) -> str | None:
    if n_validation >= SMALL_VALIDATION:
        return None
    return (
        f"small data: {n_usable} usable annotations leave {n_validation} validation samples, so one "
        "sample moves the validation score by a large step; treat the final choice as indicative"
    )


def _distinct(clients: Sequence[LLMClient]) -> list[LLMClient]:
    out: list[LLMClient] = []
    for c in clients:
        if all(c is not o for o in out):
            out.append(c)
    return out
