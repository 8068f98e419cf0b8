"""GeneticOptimizer: evolve a judge's instructions until it agrees with the humans.

The search (the loop in :meth:`GeneticOptimizer.aoptimize`; its steps in ``search.py``)::

    split usable samples → train / validation (stratified on the human label)
    initial population  = seed + reverse-engineered instructions (stratified example batches)
    each generation:      plan offspring (mutation / crossover) → meta calls → drop rejected and
                          duplicate instructions → screen on a minibatch → judge on train →
                          survivors (elites, Pareto front, best) → record → checkpoint
    stop                = generations done, a perfect train score (nothing left to learn from),
                          ``patience`` generations without a better best
                          train score, nothing new left to try (``exhausted``: every possible
                          plan was tried before), or the budget cannot pay for another generation
    final choice        = best on validation among the ``finalists`` best of the last
                          population and the seed (ties: the seed, then the shorter instruction)

Compared with Ragas' GeneticOptimizer (one pass, seed discarded, crossover partner fixed to
candidate 0, chosen on the data it learned from) this keeps the seed in the final comparison,
chooses on held-out samples, pairs complementary parents, screens offspring on minibatches and
judges each distinct (candidate, sample) pair once per run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.config import GeneticConfig
from promptevolver.llm.base import LLMClient
from promptevolver.llm.preflight import preflight
from promptevolver.losses import Loss
from promptevolver.metrics import Metric
from promptevolver.optimizers import checkpoint
from promptevolver.optimizers.base import Optimizer
from promptevolver.optimizers.events import Callback, EventBus
from promptevolver.optimizers.result import OptimizationResult
from promptevolver.optimizers.search import MIN_USABLE_SAMPLES, Search

__all__ = ["MIN_USABLE_SAMPLES", "GeneticOptimizer"]


class GeneticOptimizer(Optimizer):
    """Genetic search over instructions; see the module docstring for the algorithm.

    Args:
        metric: the judge (its instructions are read, never changed: apply the result yourself
            with ``metric.set_instructions(result)``).
        llm: client for judge calls.
        reflection_llm: client for meta calls; defaults to ``llm``.
        progress: show a tqdm bar per generation (best/mean train score, calls spent).
        callbacks: functions called with every :class:`~promptevolver.optimizers.events.Event`.
    """

    def __init__(
        self,
        *,
        metric: Metric | None = None,
        llm: LLMClient | None = None,
        reflection_llm: LLMClient | None = None,
        progress: bool = False,
        callbacks: Sequence[Callback] = (),
    ) -> None:
        super().__init__(metric=metric, llm=llm, reflection_llm=reflection_llm)
        self.progress = progress
        self.callbacks = list(callbacks)

    def optimize(
        self,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | GeneticConfig | None = None,
        *,
        run_dir: str | Path | None = None,
        resume: bool = False,
        **ragas_kwargs: Any,
    ) -> OptimizationResult:
        """Synchronous :meth:`aoptimize` (see :meth:`Optimizer.optimize`)."""
        result = super().optimize(dataset, loss, config, run_dir=run_dir, resume=resume, **ragas_kwargs)
        assert isinstance(result, OptimizationResult)
        return result

    async def aoptimize(
        self,
        *,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | GeneticConfig | None = None,
        run_dir: str | Path | None = None,
        resume: bool = False,
    ) -> OptimizationResult:
        """Optimize the metric's instructions on ``dataset`` as scored by ``loss``.

        Args:
            run_dir: directory for the checkpoint written after every generation (None: none).
            resume: continue from the checkpoint in ``run_dir`` instead of starting afresh.

        Returns:
            An :class:`OptimizationResult` (a Mapping prompt name → best instruction).

        Raises:
            ValueError: no metric or llm set, or ``resume`` without ``run_dir``.
            InsufficientDataError: fewer than :data:`MIN_USABLE_SAMPLES` usable annotations.
            AnnotationError: a usable sample lacks a field the metric needs (names the sample).
            BudgetExceededError: the budget cannot pay for the initial population and one generation.
            CheckpointError: ``resume`` with a missing checkpoint or one of another run.
            pydantic.ValidationError: invalid config values or unknown config keys.
            PermanentLLMError: an LLM's preflight check failed (server, key or model; one line).
        """
        await preflight(self.llm, self.reflection_llm)
        search = self._search(dataset, loss, config)
        if resume:
            if run_dir is None:
                raise ValueError("resume=True needs run_dir")
            checkpoint.restore(search, checkpoint.load(run_dir))
        else:
            search.check_budget_upfront()
            await search.initial_population()
            self._checkpoint(search, run_dir)
        result = await search.finish(await self._evolve(search, run_dir))
        self._checkpoint(search, run_dir)  # now with the validation judgements, for reports
        return result

    async def _evolve(self, search: Search, run_dir: str | Path | None) -> str:
        """Run generations until a stopping rule holds; return the stop reason."""
        cfg = search.config
        with tqdm(
            total=cfg.generations, initial=search.generation, disable=not self.progress, desc="generations"
        ) as bar:
            while True:
                reason = _stop_reason(search)
                if reason:
                    return reason
                await search.step()
                self._checkpoint(search, run_dir)
                bar.update(1)
                bar.set_postfix(search.progress_fields())

    def _search(self, dataset: SingleMetricAnnotation, loss: Loss, config: Any) -> Search:
        if self.metric is None or self.llm is None:
            raise ValueError("GeneticOptimizer needs metric= and llm= before optimize()")
        return Search(
            metric=self.metric,
            llm=self.llm,
            reflection_llm=self.reflection_llm or self.llm,
            dataset=dataset,
            loss=loss,
            config=_coerce(config),
            events=EventBus(self.callbacks),
        )

    @staticmethod
    def _checkpoint(search: Search, run_dir: str | Path | None) -> None:
        if run_dir is not None:
            checkpoint.save(search, run_dir)


def _stop_reason(search: Search) -> str | None:
    cfg = search.config
    if cfg.population_size == 1:
        return "population_size_1"
    if search.generation >= cfg.generations:
        return "generations"
    if search.perfect():
        return "perfect_train"
    if search.stalled():
        return "patience"
    if search.exhausted:
        return "exhausted"
    if not search.next_generation_fits():
        return "budget"
    return None


def _coerce(config: Mapping[str, Any] | GeneticConfig | None) -> GeneticConfig:
    if isinstance(config, GeneticConfig):
        return config
    return GeneticConfig.model_validate(dict(config or {}))
