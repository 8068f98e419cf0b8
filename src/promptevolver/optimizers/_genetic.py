"""GeneticOptimizer: evolve a judge's instructions until it agrees with the humans.

The loop (:meth:`GeneticOptimizer.aoptimize`), each step a named part with one owner::

    split usable samples → train / validation             _split.py
    initial population   = the seed + reverse-engineered   _phases.py, operators/_reverse_engineer.py
                           candidates, screened, judged on train
    each generation:       select parents, plan offspring  operators/ (_mutation, _crossover, _breeder)
                           → meta calls → drop rejected and duplicate instructions
                           → screen on a minibatch         strategies/_screening.py
                           → judge on train → survivors     strategies/_selection.py
                           → record → checkpoint            _history.py, _checkpoint.py
    stop                 = the first stop condition that   strategies/_stopping.py
                           holds (generations, perfect train, patience, exhausted, budget)
    final choice         = a finalist that beats the seed   _phases.py, strategies/_final_choice.py
                           on validation (paired bootstrap), else the seed

Compared with Ragas' GeneticOptimizer (one pass, seed discarded, crossover partner fixed to
candidate 0, chosen on the data it learned from) this keeps the seed in the final comparison,
chooses on held-out samples, pairs complementary parents, screens offspring on minibatches and
judges each distinct (candidate, sample) pair once per run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from promptevolver import rundir
from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.config import GeneticConfig
from promptevolver.evaluation import Loss, check_loss_fits
from promptevolver.judge import Metric, label_scale_of, refuse_ragas_object
from promptevolver.llm import InFlightLimit, Journal, LLMClient, preflight, server_side
from promptevolver.optimizers import _checkpoint as checkpoint
from promptevolver.optimizers import _phases as phases
from promptevolver.optimizers import _stages
from promptevolver.optimizers import _views as views
from promptevolver.optimizers._base import Optimizer
from promptevolver.optimizers._cost import offspring_count
from promptevolver.optimizers._result import OptimizationResult
from promptevolver.optimizers._run import SearchRun, prepare_examples
from promptevolver.optimizers._split import MIN_USABLE_SAMPLES
from promptevolver.optimizers._stages import Stage
from promptevolver.optimizers._state import SearchState
from promptevolver.optimizers.events import Callback, EventBus, check_callbacks
from promptevolver.optimizers.operators._base import Child, Operator
from promptevolver.optimizers.operators._breeder import Breeder, default_operators
from promptevolver.optimizers.operators._reverse_engineer import ReverseEngineering
from promptevolver.optimizers.strategies import _budget as budget
from promptevolver.optimizers.strategies import _screening as screening
from promptevolver.optimizers.strategies import _selection as selection
from promptevolver.optimizers.strategies._budget import check_prices, check_upfront
from promptevolver.optimizers.strategies._stopping import DEFAULT_STOP_CONDITIONS, StopCondition, first_reason

__all__ = ["MIN_USABLE_SAMPLES", "GeneticOptimizer"]


class GeneticOptimizer(Optimizer[OptimizationResult]):
    """Genetic search over instructions; see the module docstring for the algorithm.

    Args:
        metric: the judge (its instructions are read, never changed: apply the result yourself
            with ``metric.set_instructions(result)``). Positional or keyword, as ``llm`` (Ragas'
            ``GeneticOptimizer(metric, llm)``); the other arguments are keyword only.
        llm: client for judge calls.
        reflection_llm: client for meta calls; defaults to ``llm``.
        progress: show a tqdm bar per generation (best/mean train score, calls spent).
        callbacks: functions called with every :class:`~promptevolver.optimizers.events.Event`.
        operators: offspring operators (default: mutation and crossover, weighted by the config's
            ``mutation_weight`` and ``crossover_weight``).
        stop_conditions: checked in order before each generation (default:
            :data:`~promptevolver.optimizers.strategies._stopping.DEFAULT_STOP_CONDITIONS`).
        limit: the cap on requests in flight this run sends through, shared with other runs of
            a job (:meth:`InFlightLimit.share <promptevolver.llm._concurrency.InFlightLimit.share>`;
            :mod:`promptevolver.runs.many`); None: the config's ``max_concurrency``, its own.
        stages: the run's stages, in order (:class:`~promptevolver.optimizers.Stage` objects; the
            last returns the final choice's record); None: those of the config's ``strategy``
            (:data:`~promptevolver.optimizers._stages.STRATEGIES`).
    """

    def __init__(
        self,
        metric: Metric | None = None,
        llm: LLMClient | None = None,
        *,
        reflection_llm: LLMClient | None = None,
        progress: bool = False,
        callbacks: Sequence[Callback] = (),
        operators: Sequence[Operator] | None = None,
        stop_conditions: Sequence[StopCondition] | None = None,
        limit: InFlightLimit | None = None,
        stages: Sequence[Stage] | None = None,
    ) -> None:
        for role, value in (("metric", metric), ("llm", llm), ("reflection_llm", reflection_llm)):
            refuse_ragas_object(value, role)  # ours are meant: a Ragas metric is wrapped in RagasMetric
        super().__init__(metric=metric, llm=llm, reflection_llm=reflection_llm)
        self.progress = progress
        self.callbacks = list(callbacks)
        self.operators = None if operators is None else list(operators)
        self.stop_conditions = list(DEFAULT_STOP_CONDITIONS if stop_conditions is None else stop_conditions)
        self.limit = limit
        self.stages = None if stages is None else list(stages)

    async def aoptimize(
        self,
        *,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | GeneticConfig | None = None,
        run_dir: str | Path | None = None,
        resume: bool = False,
        callbacks: Sequence[Callback] = (),
    ) -> OptimizationResult:
        """Optimize the metric's instructions on ``dataset`` as scored by ``loss``.

        Args:
            run_dir: directory for the checkpoint written after every generation (None: none).
            resume: continue from the checkpoint in ``run_dir`` instead of starting afresh.
            callbacks: functions called with this run's events, after the optimizer's own
                ``callbacks`` (Ragas' ``optimize(callbacks=...)``).

        Returns:
            An :class:`OptimizationResult` (a read-only ``dict`` prompt name → best
            instruction, as Ragas returns, with the evidence as attributes).

        Raises:
            ValueError: "No metric provided for optimization" or "No llm provided for
                optimization" (Ragas' messages, in that order), or ``resume`` without ``run_dir``.
            TypeError: ``callbacks`` is not a list of functions; a Ragas metric, loss, dataset or
                LLM object where ours is meant (the message says what to pass instead).
            RunDirError: ``run_dir`` is a folder promptevolver did not make, or another process
                writes it (:func:`promptevolver.rundir.locked`, taken for the whole run).
            FileExistsError: ``run_dir`` holds a run (its checkpoint or journal) and ``resume``
                is False: nothing is overwritten; resume it, or choose or empty the directory.
            InsufficientDataError: fewer than :data:`MIN_USABLE_SAMPLES` usable annotations.
            AnnotationError: a usable sample lacks a field the metric needs (names the sample).
                Or a label that does not fit the metric's ``label_scale`` (0/1 verdicts, or a
                score range; names the file, sample and field), before any call.
            BudgetExceededError: the budget cannot pay for the initial population and one generation.
            CheckpointError: ``resume`` with a missing checkpoint or one of another run.
            LLMUnusableError: the LLM failed on more than ``max_failure_rate`` of a step's calls
                (the checkpoint and the journal in ``run_dir`` let ``resume`` continue).
            pydantic.ValidationError: invalid config values or unknown config keys.
            PermanentLLMError: an LLM's preflight check failed (server, key or model; one line).
        """
        if resume and run_dir is None:
            raise ValueError("resume=True needs run_dir")
        parts = {"metric": self.metric, "llm": self.llm, "reflection_llm": self.reflection_llm}
        for role, value in parts.items():
            refuse_ragas_object(value, role)  # they may be set after construction
        refuse_ragas_object(dataset, "dataset")
        refuse_ragas_object(loss, "loss")
        extra = check_callbacks(callbacks)
        if run_dir is None:
            return await self._aoptimize(dataset, loss, config, None, resume, extra)
        if resume and not (Path(run_dir) / rundir.CHECKPOINT_FILE).is_file():
            checkpoint.load(run_dir)  # nothing to resume: said before the lock marks the folder
        with rundir.locked(run_dir):  # every writer of a run directory takes its lock (re-entrant)
            return await self._aoptimize(dataset, loss, config, Path(run_dir), resume, extra)

    async def _aoptimize(
        self,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | GeneticConfig | None,
        run_dir: Path | None,
        resume: bool,
        extra: Sequence[Callback],
    ) -> OptimizationResult:
        if not resume and run_dir is not None:
            _refuse_to_overwrite(Path(run_dir))
        saved = checkpoint.load(run_dir) if resume and run_dir is not None else None  # before any write
        if saved is not None and run_dir is not None:
            rundir.remove_leftovers(run_dir)  # half-written temporary files of a killed session
        journal = None if run_dir is None else Journal(Path(run_dir) / rundir.JOURNAL_FILE, fresh=not resume)
        try:
            run = self._start(dataset, loss, _coerce(config), journal, extra)  # data errors: before calls
            await preflight(self.llm, self.reflection_llm)
            await prepare_examples(run.context)  # embeddings for retrieval, before any judge call
            if saved is not None:
                assert run_dir is not None
                checkpoint.restore(run, saved, source=Path(run_dir) / rundir.CHECKPOINT_FILE)
            save = (lambda: None) if run_dir is None else (lambda: checkpoint.save(run, run_dir))
            view = views.stage_view(run, save, self._evolve)
            if saved is not None:
                self._check_budget(run, upfront=False)
                await phases.repair(view)
            else:
                self._check_budget(run)
                view.checkpoint()  # a start to resume from, before the first call
            stages = self.stages if self.stages is not None else _stages.strategy(run.context.config.strategy)
            chosen = await self._run_stages(view, stages)
            result = OptimizationResult.from_run(run, run.state.candidates[chosen.choice])
            view.checkpoint()  # now with the validation judgements, for reports
        finally:
            if journal is not None:
                journal.close()
        return result

    def check(
        self, dataset: SingleMetricAnnotation, loss: Loss, config: Mapping[str, Any] | GeneticConfig | None
    ) -> None:
        """Raise what :meth:`aoptimize` of a new run would raise before its first LLM call (the
        data, the split, the budget's upfront check), making no call and writing nothing.

        Raises:
            ValueError, InsufficientDataError, AnnotationError, BudgetExceededError: see :meth:`aoptimize`.
        """
        self._check_budget(self._start(dataset, loss, _coerce(config), None))

    def _start(
        self,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: GeneticConfig,
        journal: Journal | None,
        callbacks: Sequence[Callback] = (),
    ) -> SearchRun:
        self._require_metric_and_llm()
        assert self.metric is not None and self.llm is not None
        scale = label_scale_of(self.metric)
        if scale is not None:  # the metric says what its labels are: every annotation must fit
            dataset = dataset.with_scale(scale, judge=type(self.metric).__name__)
            check_loss_fits(loss, scale.kind, judge=type(self.metric).__name__)
        operators = default_operators(config) if self.operators is None else self.operators
        return SearchRun(
            metric=self.metric,
            llm=self.llm,
            reflection_llm=self.reflection_llm or self.llm,
            dataset=dataset,
            loss=loss,
            config=config,
            events=EventBus([*self.callbacks, *callbacks]),
            breeder=Breeder(operators, ReverseEngineering()),
            journal=journal,
            limit=self.limit,
        )

    @staticmethod
    def _check_budget(run: SearchRun, *, upfront: bool = True) -> None:
        """Refuse a budget the run cannot keep, before any call (``upfront``: the call bounds of
        the first steps too). The final choice's share is held back once the seed's evaluation
        has shown what a judge call costs (:func:`.strategies.budget.after_seed`)."""
        check_prices(run.context.config.budget, run.context.clients)
        if upfront:
            check_upfront(run.context.config.budget, run.context.calls)
            budget.reserve_upfront(views.budget_view(run))
        else:
            budget.calibrate_reserve(views.budget_view(run))

    @staticmethod
    async def _run_stages(view: views.StageView, stages: Sequence[Stage]) -> _stages.FinalChoiceRecord:
        """Run ``stages`` in order (each skips itself when its record is there: a resumed run
        starts at the first stage not done); the last returns the final choice's record.

        Raises:
            TypeError: the last stage returned no :class:`~._stages.FinalChoiceRecord`.
        """
        record = None
        for stage in stages:
            record = await stage.run(view)
        if not isinstance(record, _stages.FinalChoiceRecord):
            raise TypeError(f"the last stage must return a FinalChoiceRecord, got {type(record).__name__}")
        return record

    async def _evolve(self, run: views.StageView) -> str:
        """Run generations until a stop condition holds (each checkpointed); return its reason."""
        with tqdm(
            total=run.context.config.generations,
            initial=run.state.generation,
            disable=not self.progress,
            desc="generations",
        ) as bar:
            while (reason := first_reason(self.stop_conditions, run.search())) is None:
                await self._generation(run)
                run.checkpoint()
                bar.update(1)
                bar.set_postfix(_progress_fields(run.state))
        return reason

    @staticmethod
    async def _generation(run: views.StageView) -> None:
        """select → make offspring → screen → evaluate → choose survivors → record."""
        state = run.state
        state.generation += 1
        run.begin_step(f"generation {state.generation}")
        population = state.population
        run.context.events.emit("generation_start", state.generation, population=[c.id for c in population])
        count = offspring_count(run.context.config, len(run.context.train))
        plans = run.context.breeder.plan_offspring(
            views.breeding_view(run.context, population),
            count,
            state.rng,
            tried=state.tried,
            first_slot=state.slots,
        )
        state.exhausted, state.slots = not plans, state.slots + len(plans)
        state.tried.update(p.key for p in plans)
        made = await run.context.breeder.run(plans, views.meta_context(run.context, population))
        # a plan whose meta call failed on the server's side was not tried: it is planned again, so a
        # server that died is stopped by the run of failed attempts (ServerWatch), never taken for a
        # search whose plans are exhausted (which kept the seed and reported its figures)
        failed = [c for c in made if _failed_on_server(c)]
        state.tried.difference_update(c.plan.key for c in failed)
        # ... and a meta server that answers none of them stops the run with its cause: after
        # META_FAILED_IN_ROW calls that each gave up, the search could only go on making nothing
        state.meta_failed_in_row = state.meta_failed_in_row + len(failed) if len(failed) == len(made) else 0
        if failed and state.meta_failed_in_row >= META_FAILED_IN_ROW:
            causes = Counter(str(c.rejected).removeprefix("llm error: ") for c in failed)
            cause, count = causes.most_common(1)[0]
            example = next(str(c.error) for c in failed if str(c.rejected).endswith(cause))
            what = (
                f"{state.meta_failed_in_row} meta calls in a row failed on the server's side after their "
                "retries, none answered"
            )
            run.stop(what, cause, count, len(failed), example)
        children = run.adopt(made)
        by_id = {c.id: c for c in state.candidates}
        parents_of = {c.id: [by_id[p] for p in c.parents] for c in children}
        passed = await screening.screen(run.screening(), children, parents_of)
        await run.judge_train(passed)
        size, elites = run.context.config.population_size, run.context.config.elite_count
        run.end_step()
        state.population = selection.survivors(
            population + passed, run.context.loss, size, elites, min_coverage=run.context.min_coverage
        )
        run.record_generation(len(children))


#: Meta calls of the search in a row that gave up on the server's side (each after its retries),
#: none answered, after which the run stops: at a 30 % fault rate with two attempts a call, four in
#: a row happen with probability 0.09^4 ≈ 7e-5 (a dead meta server: at once, 4 calls of its first
#: generation or two).
META_FAILED_IN_ROW = 4


def _failed_on_server(child: Child) -> bool:
    """Whether ``child``'s meta call failed on the server's side (transport, timeout, HTTP 5xx)
    after the client's retries; a refusal, a context overflow or a bad answer was a real try."""
    cause = (child.rejected or "").removeprefix("llm error: ") if child.error else ""
    return bool(cause) and server_side(cause)


def _progress_fields(state: SearchState) -> dict[str, Any]:
    last = state.history[-1]
    calls = last["judge_calls"] + last["meta_calls"]
    return {"best": f"{last['best_train']:.3f}", "mean": f"{last['mean_train']:.3f}", "calls": calls}


def _coerce(config: Mapping[str, Any] | GeneticConfig | None) -> GeneticConfig:
    if isinstance(config, GeneticConfig):
        return config
    return GeneticConfig.model_validate(dict(config or {}))


def _refuse_to_overwrite(run_dir: Path) -> None:
    if rundir.run_status(run_dir) == "new":
        return  # nothing there, or a run that stopped before its first checkpoint
    held = [name for name in (rundir.CHECKPOINT_FILE, rundir.JOURNAL_FILE) if (run_dir / name).exists()]
    if held:
        raise FileExistsError(
            f"{run_dir} holds a run ({', '.join(held)}): resume=True continues it; a new run needs "
            "another run_dir (or remove those files)"
        )
