"""GeneticOptimizer: evolve a judge's instructions until it agrees with the humans.

The search (one generation per line of :meth:`GeneticOptimizer.aoptimize`)::

    split usable samples → train / validation (stratified on the human label)
    initial population  = seed + reverse-engineered instructions (stratified example batches)
    each generation:      plan offspring (mutation / crossover) → meta calls → drop rejected and
                          duplicate instructions → judge on train → survivors (elites, Pareto
                          front, best) → record → stop on generations or patience
    final choice        = best on validation among the last population and the seed
                          (ties: the seed, then the shorter instruction)

Compared with Ragas' GeneticOptimizer (one pass, seed discarded, crossover partner fixed to
candidate 0, chosen on the data it learned from) this keeps the seed in the final comparison,
chooses on held-out samples, pairs complementary parents and judges each distinct
(candidate, sample) pair once per run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from promptevolver import sampling
from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.config import GeneticConfig
from promptevolver.errors import AnnotationError, InsufficientDataError
from promptevolver.evaluation import Evaluator, candidate_key, score
from promptevolver.llm.base import LLMClient, Usage
from promptevolver.losses import Loss
from promptevolver.metrics import Metric
from promptevolver.optimizers import selection
from promptevolver.optimizers.base import Optimizer
from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.offspring import Breeder, Child
from promptevolver.optimizers.result import OptimizationResult

__all__ = ["MIN_USABLE_SAMPLES", "GeneticOptimizer"]

#: Fewer usable annotations than this cannot give a train and a validation set worth the name.
MIN_USABLE_SAMPLES = 10


class GeneticOptimizer(Optimizer):
    """Genetic search over instructions; see the module docstring for the algorithm.

    Args:
        metric: the judge (its instructions are read, never changed: apply the result yourself
            with ``metric.set_instructions(result)``).
        llm: client for judge calls.
        reflection_llm: client for meta calls; defaults to ``llm``.
        progress: show a tqdm bar per generation (best/mean train score, calls spent).
    """

    def __init__(
        self,
        *,
        metric: Metric | None = None,
        llm: LLMClient | None = None,
        reflection_llm: LLMClient | None = None,
        progress: bool = False,
    ) -> None:
        super().__init__(metric=metric, llm=llm, reflection_llm=reflection_llm)
        self.progress = progress

    async def aoptimize(
        self,
        *,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | GeneticConfig | None = None,
    ) -> OptimizationResult:
        """Optimize the metric's instructions on ``dataset`` as scored by ``loss``.

        Returns:
            An :class:`OptimizationResult` (a Mapping prompt name → best instruction).

        Raises:
            ValueError: no metric or llm set.
            InsufficientDataError: fewer than :data:`MIN_USABLE_SAMPLES` usable annotations.
            AnnotationError: a usable sample lacks a field the metric needs (names the sample).
            pydantic.ValidationError: invalid config values or unknown config keys.
        """
        search = _Search(self, dataset, loss, _coerce(config))
        population = await search.initial_population()
        search.record(0, population, offspring=len(population) - 1)
        with tqdm(total=search.config.generations, disable=not self.progress, desc="generations") as bar:
            for generation in range(1, search.config.generations + 1):
                if search.stalled() or search.config.population_size == 1:
                    break
                offspring = await search.offspring(population, generation)
                population = selection.survivors(
                    population + offspring, loss, search.config.population_size, search.config.elite_count
                )
                search.record(generation, population, offspring=len(offspring))
                bar.update(1)
                bar.set_postfix(search.progress_fields())
        return await search.finish(population)


def _coerce(config: Mapping[str, Any] | GeneticConfig | None) -> GeneticConfig:
    if isinstance(config, GeneticConfig):
        return config
    return GeneticConfig.model_validate(dict(config or {}))


class _Search:
    """The state of one run: split, evaluator, breeder, every candidate and the history."""

    def __init__(
        self, optimizer: GeneticOptimizer, dataset: SingleMetricAnnotation, loss: Loss, config: GeneticConfig
    ):
        if optimizer.metric is None or optimizer.llm is None:
            raise ValueError("GeneticOptimizer needs metric= and llm= before optimize()")
        self.started = time.perf_counter()
        self.metric, self.loss, self.config, self.dataset = optimizer.metric, loss, config, dataset
        self.clients = _distinct([optimizer.llm, optimizer.reflection_llm or optimizer.llm])
        self.usage_before = [c.usage.copy() for c in self.clients]
        self.rng = np.random.default_rng(config.random_seed)
        self.labels = dataset.labels()
        self.train, self.validation = self._split()
        self.evaluator = Evaluator(
            metric=self.metric, llm=optimizer.llm, dataset=dataset, max_concurrency=config.max_concurrency
        )
        self.breeder = Breeder(
            llm=optimizer.reflection_llm or optimizer.llm,
            metric=self.metric,
            dataset=dataset,
            labels=self.labels,
            config=config,
            loss=loss,
        )
        self.candidates: list[Candidate] = []
        self.seen: set[Any] = set()
        self.duplicates = 0
        self.history: list[dict[str, Any]] = []
        self.best_so_far = loss.worst()
        self.since_improvement = 0

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
        inputs_of = getattr(self.metric, "prompt_inputs", None)
        for i in usable:
            try:
                inputs_of and inputs_of(self.dataset.samples[i].metric_input)
            except AnnotationError as exc:
                raise AnnotationError(
                    str(exc).split(": ", 1)[-1],
                    path=source,
                    metric=self.dataset.name,
                    sample_index=i,
                    field=exc.field,
                ) from exc
        n_val = min(max(2, round(self.config.validation_fraction * len(usable))), len(usable) - 2)
        train, val = sampling.stratified_split([self.labels[i] for i in usable], n_val, self.rng)
        return [usable[i] for i in train], [usable[i] for i in val]

    def _new(
        self,
        instructions: dict[str, str],
        generation: int,
        operator: str,
        parents: Sequence[Candidate] = (),
        feedback: Sequence[str] = (),
    ) -> Candidate | None:
        key = candidate_key(instructions)
        if key in self.seen:
            self.duplicates += 1
            return None
        self.seen.add(key)
        c = Candidate(
            len(self.candidates),
            dict(instructions),
            generation,
            operator,
            tuple(p.id for p in parents),
            feedback=list(feedback),
        )
        self.candidates.append(c)
        return c

    async def _judge_train(self, candidates: Sequence[Candidate]) -> None:
        results = await self.evaluator.evaluate_many([c.instructions for c in candidates], self.train)
        for c, judged in zip(candidates, results):
            c.train = score(self.loss, judged, self.train, self.labels)

    # --- steps -------------------------------------------------------------------------------
    async def initial_population(self) -> list[Candidate]:
        seed = self._new(self.metric.get_instructions(), 0, "seed")
        assert seed is not None
        extra = self.config.population_size - 1 if self.config.reverse_engineer else 0
        plans = self.breeder.plan_reverse_engineering(self.train, extra, self.rng)
        children = await self.breeder.run(plans, {})
        population = [seed] + self._adopt(children, generation=0)
        await self._judge_train(population)
        return population

    async def offspring(self, population: list[Candidate], generation: int) -> list[Candidate]:
        plans = self.breeder.plan_offspring(population, self.train, self.config.population_size, self.rng)
        judged = {c.id: self._judge_outputs(c) for c in population}
        children = self._adopt(await self.breeder.run(plans, judged), generation)
        await self._judge_train(children)
        return children

    def _judge_outputs(self, candidate: Candidate) -> dict[int, dict[str, Any]]:
        out = {}
        for p in self.train:
            j = self.evaluator.lookup(candidate.instructions, p)
            if j is not None:
                out[p] = {"reason": j.reason, "verdict": j.score} if not j.failed else {"error": j.error}
        return out

    def _adopt(self, children: Sequence[Child], generation: int) -> list[Candidate]:
        adopted = []
        for child in children:
            if child.instructions is None:
                continue
            c = self._new(
                child.instructions, generation, child.plan.operator, child.plan.parents, child.feedback
            )
            if c is not None:
                adopted.append(c)
        return adopted

    def record(self, generation: int, population: Sequence[Candidate], *, offspring: int) -> None:
        values = [c.train_value() for c in population]
        best = selection.rank(population, self.loss)[0].train_value()
        if self.loss.better(best, self.best_so_far):
            self.best_so_far, self.since_improvement = best, 0
        else:
            self.since_improvement += 1
        usage = self.usage()
        self.history.append(
            {
                "generation": generation,
                "best_train": best,
                "mean_train": float(np.mean(values)),
                "population": len(population),
                "offspring": offspring,
                "judge_calls": usage.judge_calls,
                "meta_calls": usage.meta_calls,
            }
        )

    def stalled(self) -> bool:
        return self.since_improvement >= self.config.patience

    def progress_fields(self) -> dict[str, Any]:
        last = self.history[-1]
        return {
            "best": f"{last['best_train']:.3f}",
            "mean": f"{last['mean_train']:.3f}",
            "calls": last["judge_calls"] + last["meta_calls"],
        }

    def usage(self) -> Usage:
        total = Usage()
        for client, before in zip(self.clients, self.usage_before):
            total = total + (client.usage - before)
        return total

    # --- final choice ------------------------------------------------------------------------
    async def finish(self, population: Sequence[Candidate]) -> OptimizationResult:
        seed = self.candidates[0]
        finalists = list({c.id: c for c in [seed, *population]}.values())
        results = await self.evaluator.evaluate_many([c.instructions for c in finalists], self.validation)
        for c, judged in zip(finalists, results):
            c.validation = score(self.loss, judged, self.validation, self.labels)
        best = selection.rank(finalists, self.loss, on="validation")[0]
        return self._result(seed, best)

    def _stop_reason(self) -> str:
        if self.config.population_size == 1:
            return "population_size_1"
        return "patience" if len(self.history) - 1 < self.config.generations else "generations"

    def _result(self, seed: Candidate, best: Candidate) -> OptimizationResult:
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
            stop_reason=self._stop_reason(),
            split={
                "train": len(self.train),
                "validation": len(self.validation),
                "strategy": "stratified on the human label",
                "validation_positions": self.validation,
            },
            operator_stats={
                "rejected": dict(sorted(self.breeder.rejections.items())),
                "duplicates": self.duplicates,
            },
            config=self.config.model_dump(),
            random_seed=self.config.random_seed,
            duration_s=time.perf_counter() - self.started,
        )


def _distinct(clients: Sequence[LLMClient]) -> list[LLMClient]:
    out: list[LLMClient] = []
    for c in clients:
        if all(c is not o for o in out):
            out.append(c)
    return out
