"""Several judges in one job: each metric of one annotation file optimized as its own run, all
at once, sharing one limit on requests in flight, one rate limiter, one cache and one budget.

:func:`optimize_many` is the Python form of :meth:`GeneticOptimizer.optimize
<promptevolver.optimizers._genetic.GeneticOptimizer.optimize>` for a mapping of metrics;
:func:`execute_many` runs a config with ``metrics:`` (:class:`~promptevolver.config._models.ManyConfig`)
into a run directory, as :func:`promptevolver.runs._optimize.execute` runs one with ``metric:``.

How the metrics share the job (docs/many-metrics.md):

* **Requests in flight**: one :class:`~promptevolver.llm._concurrency.InFlightLimit` of
  ``max_concurrency`` slots; each metric's run sends through a :meth:`share
  <promptevolver.llm._concurrency.InFlightLimit.share>` of it. The runs are asyncio tasks of one
  event loop, so while one metric waits on a few calls (a racing step, a meta call) the others
  fill the free slots.
* **Rate limits and cache** (``provider: openai``): each metric has its own client (its own usage,
  so its own budget and figures), all with one :class:`~promptevolver.llm._ratelimit.Throttle` and
  one response-cache file connection.
* **Budget** (:func:`split_budget`): each bound of the job's budget is split across the metrics
  in proportion to their usable samples (largest remainder; the shares add up to the bound), and
  each metric's run keeps to its share. A share is not passed on: a metric that spends less
  leaves it unspent, so each metric's result stays the one its own run with that budget gives.
* **Results**: each metric's result is what its own run with the same seed, config and budget
  gives (its answers do not depend on the order the calls are made in); a metric that fails
  (bad annotations, its LLM unusable, its budget share too small) is reported with its reason
  while the others finish. The job's result.json, summary and index page say when the simulated
  LLM answered (``simulated_llm``).

A job is also estimated (:func:`estimate_job`), gated (:func:`evaluate_job`), reported
(:func:`report_job`) and suggested for (:func:`suggest_job`) as a whole: each metric as its own
run, the job's figures beside them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from promptevolver import rundir
from promptevolver.annotations import MetricAnnotation, SingleMetricAnnotation
from promptevolver.config import (
    METRIC_FOLDER,
    BudgetConfig,
    GeneticConfig,
    ManyConfig,
    RunConfig,
    build_loss,
    build_run_parts,
    check_dataset_found,
    load_dataset,
    resolve_prompt,
)
from promptevolver.errors import AnnotationKeyError, ConfigError, LLMError, PromptEvolverError, RunDirError
from promptevolver.evaluation import BinaryMetricLoss, ClassificationLoss, Loss, MSELoss
from promptevolver.judge import Metric, label_scale_of
from promptevolver.llm import (
    BaseLLMClient,
    CachedLLM,
    Completion,
    InFlightLimit,
    LLMClient,
    LLMRequest,
    Usage,
)
from promptevolver.optimizers import SIMULATED_NOTE, GeneticOptimizer, OptimizationResult
from promptevolver.optimizers.events import Callback
from promptevolver.report import load_run, write_report
from promptevolver.runs._export import write_exports, write_samples
from promptevolver.runs._optimize import check_servers, write_config, write_result
from promptevolver.runs._resume import check_same_search, record_judgement

__all__ = [
    "BUDGET_RULE",
    "JobGate",
    "ManyResult",
    "MetricOutcome",
    "estimate_job",
    "evaluate_job",
    "execute_many",
    "index_html",
    "is_job_dir",
    "job_estimate_lines",
    "job_metrics",
    "optimize_many",
    "read_job",
    "report_job",
    "split_budget",
    "suggest_job",
    "summary_lines",
]

#: How the job's budget is split (written into the top-level result.json).
BUDGET_RULE = "proportional to usable samples (largest remainder); a share left unspent is not passed on"


@dataclass(frozen=True)
class MetricOutcome:
    """One metric's outcome in a job.

    Attributes:
        name: the metric's name in the annotations (and its folder in the run directory).
        status: ``done`` or ``failed``.
        reason: why it failed (one line), None when done.
        result: its :class:`OptimizationResult` when done.
        budget: its share of the job's budget (:func:`split_budget`).
        usable: its usable annotations (0 when they could not be read).
    """

    name: str
    status: Literal["done", "failed"]
    reason: str | None
    result: OptimizationResult | None
    budget: BudgetConfig
    usable: int

    def summary(self) -> dict[str, Any]:
        """This metric's entry in the top-level result.json (``null`` for what was not measured)."""
        entry: dict[str, Any] = {
            "status": self.status,
            "reason": self.reason,
            "folder": self.name,
            "usable_samples": self.usable,
            "budget": self.budget.model_dump(mode="json"),
        }
        r = self.result
        if r is not None:
            entry |= {
                "scores": r.scores,
                "produced_by": r.produced_by,
                "stop_reason": r.stop_reason,
                "llm_calls": r.usage.get("llm_calls"),
                "tokens": {k: r.usage.get(k) for k in ("prompt_tokens", "completion_tokens")},
                "cost_usd": r.usage.get("cost_usd"),
                "best_instructions": r.best_instructions,
            }
        return entry


@dataclass
class ManyResult(Mapping[str, OptimizationResult]):
    """A job's outcome: a Mapping metric name → :class:`OptimizationResult` over the metrics that
    finished; :attr:`outcomes` holds every metric's, failed ones with their reason.

    Attributes:
        outcomes: metric name → :class:`MetricOutcome`, in the order the metrics were given.
        duration_s: wall-clock seconds of the job.
    """

    outcomes: dict[str, MetricOutcome]
    duration_s: float = 0.0
    budget_rule: str = field(default=BUDGET_RULE)

    @property
    def failed(self) -> dict[str, str]:
        """Metric name → why it failed (empty when every metric finished)."""
        return {n: o.reason or "" for n, o in self.outcomes.items() if o.status == "failed"}

    def __getitem__(self, key: str) -> OptimizationResult:
        outcome = self.outcomes[key]
        if outcome.result is None:
            raise KeyError(f"metric {key!r} failed: {outcome.reason}")
        return outcome.result

    def __iter__(self) -> Iterator[str]:
        return iter([n for n, o in self.outcomes.items() if o.result is not None])

    def __len__(self) -> int:
        return sum(o.result is not None for o in self.outcomes.values())

    @property
    def simulated_llm(self) -> bool:
        """True when the simulated LLM answered any metric's run (a dry run, not a judge)."""
        return any(o.result is not None and o.result.simulated_llm for o in self.outcomes.values())

    def to_dict(self) -> dict[str, Any]:
        """The top-level result.json of a job."""
        return {
            "kind": "metrics",
            "simulated_llm": self.simulated_llm,
            "notes": [SIMULATED_NOTE] if self.simulated_llm else [],
            "budget_rule": self.budget_rule,
            "duration_s": round(self.duration_s, 3),
            "failed": sorted(self.failed),
            "metrics": {n: o.summary() for n, o in self.outcomes.items()},
        }


def split_budget(budget: BudgetConfig, usable: Mapping[str, int]) -> dict[str, BudgetConfig]:
    """Each metric's share of ``budget``: every bound in proportion to the metric's usable
    samples; calls and tokens by largest remainder (the shares add up to the bound; ties go to
    the metric named first), at least 1 each; cost as a float share. An unbounded key stays None.

    Args:
        usable: metric name → usable samples (≥ 0; all 0: equal shares).

    Raises:
        ValueError: ``usable`` is empty.
    """
    if not usable:
        raise ValueError("no metric to split the budget across")
    total = sum(usable.values())
    weights = {n: (k / total if total else 1 / len(usable)) for n, k in usable.items()}
    calls = _whole_shares(budget.max_calls, weights)
    tokens = _whole_shares(budget.max_tokens, weights)
    return {
        n: BudgetConfig(
            max_calls=calls[n],
            max_tokens=tokens[n],
            max_cost_usd=None if budget.max_cost_usd is None else budget.max_cost_usd * w,
        )
        for n, w in weights.items()
    }


def _whole_shares(bound: int | None, weights: Mapping[str, float]) -> dict[str, int | None]:
    if bound is None:
        return dict.fromkeys(weights)
    exact = {n: bound * w for n, w in weights.items()}
    shares = {n: int(x) for n, x in exact.items()}
    order = sorted(weights, key=lambda n: -(exact[n] - shares[n]))  # stable: first named wins ties
    for n in order[: bound - sum(shares.values())]:
        shares[n] += 1
    return {n: max(1, s) for n, s in shares.items()}


# --- the job -------------------------------------------------------------------------------------


@dataclass
class _Plan:
    """One metric's run in a job."""

    name: str
    optimizer: GeneticOptimizer
    dataset: SingleMetricAnnotation
    loss: Loss
    config: GeneticConfig
    run_dir: Path | None
    resume: bool
    callbacks: Sequence[Callback]
    usable: int

    def failed(self, reason: str) -> MetricOutcome:
        return MetricOutcome(self.name, "failed", reason, None, self.config.budget, self.usable)


async def _run_job(plans: Sequence[_Plan], earlier: Mapping[str, MetricOutcome]) -> dict[str, MetricOutcome]:
    """Check every plan (no call), then run those that pass concurrently; every outcome, by name."""
    outcomes = dict(earlier)
    ready = []
    for plan in plans:
        try:
            if not plan.resume:
                plan.optimizer.check(plan.dataset, plan.loss, plan.config)
        except PromptEvolverError as exc:  # bad annotations, too few, a budget share too small
            outcomes[plan.name] = plan.failed(_one_line(exc))
        else:
            ready.append(plan)
    for plan, outcome in zip(ready, await asyncio.gather(*(_run_one(p) for p in ready))):
        outcomes[plan.name] = outcome
    return outcomes


async def _run_one(plan: _Plan) -> MetricOutcome:
    try:
        result = await plan.optimizer.aoptimize(
            dataset=plan.dataset,
            loss=plan.loss,
            config=plan.config,
            run_dir=plan.run_dir,
            resume=plan.resume,
            callbacks=plan.callbacks,
        )
    except PromptEvolverError as exc:  # its LLM unusable, its budget, its checkpoint
        return plan.failed(_one_line(exc))
    except OSError as exc:  # its folder's disk full, or unwritable: this metric stops, the others go on
        return plan.failed(_disk_error(exc, plan.run_dir))
    return MetricOutcome(plan.name, "done", None, result, plan.config.budget, plan.usable)


def _disk_error(exc: OSError, folder: Path | None) -> str:
    """One line for a file error of one metric: what, where, and that its run can be resumed."""
    where = exc.filename or folder or "its folder"
    said = exc.strerror or type(exc).__name__
    return f"{said} while writing {where}; its last checkpoint is kept: free some space and resume the job"


def _one_line(exc: BaseException) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


def _ordered(outcomes: Mapping[str, MetricOutcome], names: Sequence[str]) -> dict[str, MetricOutcome]:
    return {n: outcomes[n] for n in names}


async def _close(clients: Sequence[LLMClient]) -> None:
    for client in {id(c): c for c in clients}.values():
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()


# --- the Python form ------------------------------------------------------------------------------


def optimize_many(
    metrics: Mapping[str, Any],
    dataset: MetricAnnotation | Mapping[str, SingleMetricAnnotation],
    *,
    llm: LLMClient | Mapping[str, LLMClient],
    loss: Loss | Mapping[str, Loss] | None = None,
    config: Mapping[str, Any] | GeneticConfig | None = None,
    reflection_llm: LLMClient | Mapping[str, LLMClient] | None = None,
    run_dir: str | Path | None = None,
    resume: bool = False,
    callbacks: Sequence[Callback] | Mapping[str, Sequence[Callback]] = (),
) -> ManyResult:
    """Optimize several metrics in one job (see the module docstring); the metrics are never
    changed (apply each result with ``metric.set_instructions(result[name])``).

    Args:
        metrics: metric name in ``dataset`` → the judge: a promptevolver :class:`Metric`, or a
            Ragas ``AspectCritic`` / ``SimpleCriteriaScore`` (wrapped in
            :class:`~promptevolver.integrations.ragas.RagasMetric`; Ragas installed).
        dataset: a :class:`MetricAnnotation` (Ragas' shape) or a mapping name → annotations.
        llm: one client for every metric, or name → client (the simulated LLM is mined from one
            metric's annotations: give each metric its own). A client given to several metrics
            answers all of them (one connection pool, rate limiter and cache), each metric
            counting its own usage (so its own budget and figures).
        loss: one loss for all, name → loss, or None: accuracy for binary labels, MSE otherwise.
        config: the optimizer's options (:class:`GeneticConfig`), for every metric; its
            ``budget`` is the job's, split by :func:`split_budget`; its ``max_concurrency`` is the
            job's one limit on requests in flight.
        reflection_llm: as ``llm``, for meta calls (default: each metric's ``llm``).
        run_dir: each metric's checkpoint goes to ``run_dir/<name>/`` (None: none).
        resume: continue each metric that has a checkpoint there; start the others.
        callbacks: for every metric, or name → callbacks.

    Returns:
        A :class:`ManyResult` (Mapping name → :class:`OptimizationResult` over the metrics that
        finished; ``.failed``: name → reason for the others).

    Raises:
        AnnotationKeyError: a metric name not in ``dataset`` (lists those present), before any call.
        ValueError: a name that cannot be a folder name (with ``run_dir``); ``llm``/``loss``
            mappings that miss a metric.
        FileExistsError: ``run_dir/<name>`` holds a run and ``resume`` is False (nothing written).
        TypeError: a metric that is neither a Metric nor a supported Ragas metric object.
    """
    names = list(metrics)
    datasets = _datasets(names, dataset)
    opt = _coerce(config)
    usable = {n: len(datasets[n].usable_indices()) for n in names}
    shares = split_budget(opt.budget, usable)
    limit = InFlightLimit(opt.max_concurrency)
    plans = []
    judges = _own_views({n: _pick(llm, n, "llm") for n in names})
    reflections = _own_views(
        {n: None if reflection_llm is None else _pick(reflection_llm, n, "reflection_llm") for n in names}
    )
    for n in names:
        metric = _as_metric(metrics[n])
        client, reflection = judges[n], reflections[n]
        folder = _folder(run_dir, n)
        if folder is not None and not resume and rundir.run_status(folder) != "new":
            raise FileExistsError(
                f"{folder} holds a run: resume=True continues it; a new job needs another run_dir"
            )
        plans.append(
            _Plan(
                name=n,
                optimizer=GeneticOptimizer(
                    metric=metric, llm=client, reflection_llm=reflection, limit=limit.share()
                ),
                dataset=datasets[n],
                loss=_loss(loss, n, metric, datasets[n]),
                config=opt.model_copy(update={"budget": shares[n]}),
                run_dir=folder,
                resume=resume and folder is not None and rundir.run_status(folder) != "new",
                callbacks=list(callbacks.get(n, ()) if isinstance(callbacks, Mapping) else callbacks),
                usable=usable[n],
            )
        )
    started = time.perf_counter()
    clients = [c for p in plans for c in (p.optimizer.llm, p.optimizer.reflection_llm) if c is not None]

    async def job() -> dict[str, MetricOutcome]:
        try:
            return await _run_job(plans, {})
        finally:
            await _close(clients)

    outcomes = asyncio.run(job())
    return ManyResult(_ordered(outcomes, names), time.perf_counter() - started)


class _Counted:
    """One metric's view of a client given to several metrics: the same answers, its own usage
    (counted from each answer as the client counted it, as a journal replays it), so that each
    metric's budget and figures are its own. Everything else is the shared client's."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.usage = Usage()

    def __getattr__(self, name: str) -> Any:  # provider, model, context_tokens, price, preflight...
        return getattr(self.inner, name)

    async def complete(self, request: LLMRequest) -> Completion:
        op = request.operation
        try:
            completion = await self.inner.complete(request)
        except LLMError as exc:
            for _ in range(exc.retries):
                self.usage.record_retry(op)
            if exc.counts_as_failure:
                self.usage.record_failure(op, exc.cause)
            raise
        for _ in range(completion.retries):
            self.usage.record_retry(op)
        if completion.cached:
            self.usage.record_cache_hit(op)
        else:
            self.usage.record(op, completion, cost_usd=completion.cost_usd)
        return completion


def _own_views(clients: Mapping[str, Any]) -> dict[str, Any]:
    """Name → client, a client given to several metrics replaced by a :class:`_Counted` view each."""
    given: dict[int, int] = {}
    for client in clients.values():
        if client is not None:
            given[id(client)] = given.get(id(client), 0) + 1
    return {n: _Counted(c) if c is not None and given[id(c)] > 1 else c for n, c in clients.items()}


def _datasets(
    names: Sequence[str], dataset: MetricAnnotation | Mapping[str, SingleMetricAnnotation]
) -> dict[str, SingleMetricAnnotation]:
    present = list(dataset.keys())
    missing = [n for n in names if n not in present]
    if missing:
        raise AnnotationKeyError(
            f"metrics {missing} are not in the annotations; metrics present: {present}",
            path=getattr(dataset, "source", None),
        )
    return {n: dataset[n] for n in names}


def _coerce(config: Mapping[str, Any] | GeneticConfig | None) -> GeneticConfig:
    return config if isinstance(config, GeneticConfig) else GeneticConfig.model_validate(dict(config or {}))


def _as_metric(metric: Any) -> Metric:
    if hasattr(metric, "ajudge") and hasattr(metric, "get_instructions"):
        return metric
    if type(metric).__module__.startswith("ragas"):
        from promptevolver.integrations.ragas import RagasMetric

        return RagasMetric(metric)
    raise TypeError(f"{type(metric).__name__} is neither a promptevolver Metric nor a Ragas metric object")


def _pick(given: Any, name: str, what: str) -> Any:
    if isinstance(given, Mapping):
        if name not in given:
            raise ValueError(f"{what} has no entry for metric {name!r} (entries: {sorted(given)})")
        return given[name]
    return given


def _loss(
    given: Loss | Mapping[str, Loss] | None, name: str, metric: Metric, data: SingleMetricAnnotation
) -> Loss:
    if given is not None:
        return _pick(given, name, "loss")
    default = getattr(metric, "default_loss", None)
    if default is not None:
        return default()
    scale = label_scale_of(metric)
    if scale is not None and scale.kind == "nominal":  # named classes: never a squared error
        return ClassificationLoss()
    return BinaryMetricLoss(metric="accuracy") if data.is_binary else MSELoss()


def _folder(run_dir: str | Path | None, name: str) -> Path | None:
    if run_dir is None:
        return None
    if not METRIC_FOLDER.fullmatch(name):
        raise ValueError(f"metric name {name!r} cannot be a folder name: letters, digits, '_', '-', '.'")
    return Path(run_dir) / name


# --- a config with metrics: into a run directory ---------------------------------------------------


def execute_many(
    config: ManyConfig,
    run_dir: str | Path,
    *,
    resume: bool = False,
    force: bool = False,
    callbacks: Callable[[str], Sequence[Callback]] = lambda _: (),
    source: str | Path | None = None,
    log: Callable[[str], None] = lambda _: None,
    step: Callable[[str], None] = lambda _: None,
) -> ManyResult:
    """Run a job config into ``run_dir``: ``run_dir/<metric>/`` holds each metric's usual files
    (config.yaml, checkpoint, journal, result.json, report, samples, exports: its config.yaml is
    the config of a separate run of it), ``run_dir`` the job's config.yaml, a result.json listing
    every metric's outcome and index.html linking the per-metric reports.

    Before any LLM call: every metric name is looked up in the file (one missing is a
    :class:`ConfigError` for the whole job), each metric's annotations are read and checked
    (bad ones fail that metric, reported with the reason, while the others run), the budget
    is split (:func:`split_budget`), and the LLM server every metric shares is checked (its
    preflight), before anything is written: a job that cannot start leaves no folder.

    Args:
        resume: continue the job in ``run_dir``: a finished metric is kept as it is (its
            result.json read back), an interrupted or failed one resumed from its checkpoint,
            one that never started is started.
        force: start afresh over a job in ``run_dir`` (its files and the metrics' are removed).
        callbacks: metric name → callbacks for its events (e.g. a progress line per metric).
        source: where ``config`` was read from, for messages.
        log, step: as :func:`promptevolver.runs._optimize.execute`.

    Raises:
        ConfigError: a metric not in the annotation file (names those present), or a bad file.
        RunDirError: ``run_dir`` holds a job and neither ``resume`` nor ``force``; nothing to
            resume; another process writes it.
        CheckpointError: a resumed metric whose config changed its search.
        PermanentLLMError: the job's LLM server is unreachable, refuses the key or lacks the model
            (one line; nothing written).
        KeyboardInterrupt: interrupted; every metric's last checkpoint stays valid.
    """
    top = Path(run_dir)
    rundir.check_unlocked(top)
    _check_job_dir(top, resume=resume, force=force)
    step(f"loading the annotations: {config.dataset}")
    check_dataset_found(config.dataset, source or top / rundir.CONFIG_FILE)
    present = MetricAnnotation.names_in(config.dataset)
    missing = [n for n in config.metrics if n not in present]
    if missing:
        raise ConfigError(f"metrics: {missing} not in {config.dataset}; metrics present: {present}")
    names = list(config.metrics)
    early: dict[str, MetricOutcome] = {}
    datasets: dict[str, SingleMetricAnnotation] = {}
    for n in names:
        try:
            datasets[n] = load_dataset(config.for_metric(n, None))
        except PromptEvolverError as exc:  # this metric's annotations: it fails, the others run
            early[n] = MetricOutcome(n, "failed", _one_line(exc), None, BudgetConfig(), 0)
    usable = {n: len(d.usable_indices()) for n, d in datasets.items()}
    shares = split_budget(config.budget or BudgetConfig(), usable) if usable else {}
    for n, outcome in list(early.items()):
        early[n] = MetricOutcome(n, outcome.status, outcome.reason, None, shares.get(n, BudgetConfig()), 0)
    kept = _finished(top, names, datasets, shares, usable) if resume else {}
    plans: list[_Plan] = []
    run_configs: dict[str, RunConfig] = {}
    limit = InFlightLimit(config.llm.max_concurrency)
    judges: list[LLMClient] = []
    reflections: list[LLMClient] = []
    for n, dataset in datasets.items():
        if n in kept:
            continue
        run_config = config.for_metric(n, shares[n] if config.budget is not None else None)
        folder = top / n
        resumed = resume and rundir.run_status(folder) == "interrupted"
        try:
            run_config, plan = _plan(run_config, n, dataset, folder, resumed, limit, usable[n], step)
            if resumed:
                check_same_search(folder, run_config, source=source or top / rundir.CONFIG_FILE)
        except ConfigError as exc:  # a prompt name that does not fit this metric's file
            early[n] = MetricOutcome(n, "failed", _one_line(exc), None, shares[n], usable[n])
            continue
        plan.callbacks = list(callbacks(n))
        plans.append(plan)
        run_configs[n] = run_config
        judges += [c for c in (plan.optimizer.llm,) if c is not None]
        reflections += [c for c in (plan.optimizer.reflection_llm,) if c is not None]
    _share_rate_limits_and_cache(judges)  # the judge clients share one; the reflection ones another
    _share_rate_limits_and_cache(reflections)
    clients = judges + reflections
    if plans:  # the job's one llm (and reflection_llm): its server, key and model, before anything is written
        asyncio.run(check_servers(plans[0].optimizer.llm, plans[0].optimizer.reflection_llm))
    started = time.perf_counter()
    with rundir.locked(top), contextlib.ExitStack() as folders:
        for n in names:  # each metric's folder too: a resume of one metric alone is refused meanwhile
            if n in run_configs or (top / n).exists():
                folders.enter_context(rundir.locked(top / n))
        if force and not resume:
            for n in names:
                rundir.clear_run(top / n)
            rundir.clear_run(top)
        text = yaml.safe_dump(config.dump(relative_to=top), sort_keys=False)
        rundir.write_atomic(top / rundir.CONFIG_FILE, text)
        for n, run_config in run_configs.items():
            write_config(top / n, run_config)
            record_judgement(top / n, run_config)

        async def job() -> dict[str, MetricOutcome]:
            try:
                return await _run_job(plans, {**early, **kept})
            finally:
                await _close(clients)

        outcomes = _ordered(asyncio.run(job()), names)
        for n, outcome in outcomes.items():
            if outcome.result is not None and n not in kept:
                step(f"writing result.json, the exports and the report to {top / n}")
                try:
                    _write_metric(top / n, outcome.result, run_configs[n], datasets[n])
                except OSError as exc:  # this metric's files: it is reported failed, the others written
                    outcomes[n] = MetricOutcome(
                        n, "failed", _disk_error(exc, top / n), None, outcome.budget, outcome.usable
                    )
        many = ManyResult(outcomes, time.perf_counter() - started)
        rundir.write_result(top / rundir.RESULT_FILE, many.to_dict())
        rundir.write_atomic(top / rundir.INDEX_HTML, index_html(many))
    return many


def _check_job_dir(top: Path, *, resume: bool, force: bool) -> None:
    rundir.check_ours(top)
    if resume:
        if not (top / rundir.CONFIG_FILE).is_file():
            raise RunDirError(f"{top}: not a job's run directory (no {rundir.CONFIG_FILE} in it)")
        return
    held = [p.name for p in (top / rundir.CONFIG_FILE, top / rundir.RESULT_FILE) if p.exists()]
    held += [f"{d.name}/" for d in sorted(top.glob("*")) if d.is_dir() and rundir.run_status(d) != "new"]
    if held and not force:
        raise RunDirError(
            f"{top} holds a job ({', '.join(held)}): continue it with promptevolver optimize --resume "
            f"{top}, or start it over with --force"
        )


def _finished(
    top: Path,
    names: Sequence[str],
    datasets: Mapping[str, SingleMetricAnnotation],
    shares: Mapping[str, BudgetConfig],
    usable: Mapping[str, int],
) -> dict[str, MetricOutcome]:
    """The metrics a resume keeps: those whose folder holds a result.json, each reported with the
    budget it ran with (its result's config; the job's split today may differ, e.g. when another
    metric had no usable sample then and has some now)."""
    kept = {}
    for n in names:
        if n in datasets and rundir.run_status(top / n) == "finished":
            result = OptimizationResult.from_dict(rundir.read_result(top / n))
            ran_with = (result.config or {}).get("budget")
            budget = BudgetConfig.model_validate(ran_with) if isinstance(ran_with, dict) else shares[n]
            kept[n] = MetricOutcome(n, "done", None, result, budget, usable[n])
    return kept


def _plan(
    config: RunConfig,
    name: str,
    dataset: SingleMetricAnnotation,
    folder: Path,
    resume: bool,
    limit: InFlightLimit,
    usable: int,
    step: Callable[[str], None],
) -> tuple[RunConfig, _Plan]:
    """The metric's run config (its prompt matched to the file) and its plan; what
    :func:`promptevolver.runs._optimize.execute` builds for a separate run of it."""
    match = resolve_prompt(config, dataset)
    config = config.model_copy(update={"prompt_name": match.rename})
    seed = config.effective_optimizer().random_seed
    metric, llm, reflection = build_run_parts(
        config, dataset, random_seed=seed, prompt_name=match.rename, step=step, whose=f" of {name}"
    )
    optimizer = GeneticOptimizer(metric=metric, llm=llm, reflection_llm=reflection, limit=limit.share())
    plan = _Plan(
        name=name,
        optimizer=optimizer,
        dataset=dataset,
        loss=build_loss(config.loss),
        config=config.effective_optimizer(),
        run_dir=folder,
        resume=resume,
        callbacks=(),
        usable=usable,
    )
    return config, plan


def _share_rate_limits_and_cache(clients: Sequence[LLMClient]) -> None:
    """One rate limiter and one cache connection for every metric's client: the first client's
    :class:`Throttle` and response store replace the others' (clients of the same provider
    settings; each keeps its own usage)."""
    throttle, store = None, None
    for client in clients:
        inner = client.inner if isinstance(client, CachedLLM) else client
        if isinstance(client, CachedLLM):
            if store is None:
                store = client.store
            elif client.store is not store:
                client.store.close()
                client.store = store
        if isinstance(inner, BaseLLMClient):
            throttle = throttle or inner.throttle
            inner.throttle = throttle


def _write_metric(
    folder: Path, result: OptimizationResult, config: RunConfig, dataset: SingleMetricAnnotation
) -> None:
    write_result(folder, result)
    write_exports(folder, result.chosen_judge(), config.metric)
    facts = load_run(folder, dataset=dataset)
    write_report(folder, facts=facts)
    write_samples(folder, facts)


# --- what is shown ---------------------------------------------------------------------------------


def _f(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _rows(many: ManyResult) -> list[list[str]]:
    rows = []
    for n, o in many.outcomes.items():
        r = o.result
        budget = "unbounded" if o.budget.max_calls is None else f"{o.budget.max_calls:,} calls"
        if r is None:
            rows.append([n, "failed", "n/a", "n/a", "n/a", "n/a", budget, o.reason or ""])
            continue
        s, calls = r.scores, r.usage.get("llm_calls", {})
        rows.append(
            [
                n,
                "done",
                _f(s["seed"].get("validation")),
                _f(s["best"].get("validation")),
                str(calls.get("judge", "n/a")),
                str(calls.get("meta", "n/a")),
                budget,
                f"{r.produced_by}; stopped: {r.stop_reason}",
            ]
        )
    return rows


_HEADER = ["metric", "status", "seed val", "best val", "judge calls", "meta calls", "budget", "outcome"]


def summary_lines(many: ManyResult) -> list[str]:
    """The job's summary table (one row per metric; ``n/a`` for what was not measured), a line
    saying which metrics failed, and one saying when the simulated LLM answered."""
    rows = [_HEADER, *_rows(many)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER) - 1)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:-1], widths)), r[-1]]).rstrip() for r in rows]
    done = len(many)
    lines.append(f"{done} of {len(many.outcomes)} metrics done in {many.duration_s:.1f} s")
    if many.failed:
        lines.append(f"failed: {', '.join(many.failed)} (see result.json)")
    if many.simulated_llm:
        lines.append(
            f"simulated LLM: no model was called; DRY RUN: {rundir.DRY_RUN_NOTE.removeprefix('dry run: ')}"
        )
    return lines


def index_html(many: ManyResult) -> str:
    """The job's index page, styled as the reports: one row per metric, linking its report (a
    failed metric: its reason), the simulated-LLM caveat when it answered, the budget rule."""
    from promptevolver.report import Para, Section, Table, to_html

    links = [f"{n}/{rundir.REPORT_HTML}" if o.status == "done" else None for n, o in many.outcomes.items()]
    blocks: list[Any] = [
        Para(f"{len(many)} of {len(many.outcomes)} metrics done in {many.duration_s:.1f} s.", lead=True)
    ]
    if many.simulated_llm:
        blocks.append(Para(f"Simulated LLM: no language model was called. {SIMULATED_NOTE}.", caveat=True))
    blocks += [Table(_HEADER, _rows(many), links=links), Para(f"Budget: {BUDGET_RULE}.")]
    if many.failed:
        blocks.append(Para("Failed: " + "; ".join(f"{n}: {why}" for n, why in many.failed.items())))
    return to_html("promptevolver: a job of several metrics", [Section("Metrics", blocks)])


# --- a job as a whole: read back, estimated, gated, reported, suggested for -------------------------


def is_job_dir(path: str | Path) -> bool:
    """Whether ``path`` is a job's run directory (its result.json or config.yaml is a job's)."""
    folder = Path(path)
    if not folder.is_dir():
        return False
    result = folder / rundir.RESULT_FILE
    if result.is_file():
        try:
            return rundir.read_json(result).get("kind") == "metrics"
        except (RunDirError, AttributeError):
            return False
    config = folder / rundir.CONFIG_FILE
    try:
        return config.is_file() and "metrics" in (yaml.safe_load(config.read_text(encoding="utf-8")) or {})
    except (OSError, yaml.YAMLError, TypeError):
        return False


def job_metrics(run_dir: str | Path) -> dict[str, Path]:
    """Metric name → its folder in a job's run directory, in the job's order.

    Raises:
        RunDirError: not a job's run directory.
    """
    top = Path(run_dir)
    if not is_job_dir(top):
        raise RunDirError(f"{top}: not a job's run directory (its result.json lists no metrics)")
    data = (
        rundir.read_json(top / rundir.RESULT_FILE, what="result")
        if (top / rundir.RESULT_FILE).is_file()
        else {}
    )
    names = list((data.get("metrics") or {}).keys())
    if not names:
        raw = yaml.safe_load((top / rundir.CONFIG_FILE).read_text(encoding="utf-8")) or {}
        names = list(raw.get("metrics") or {})
    return {n: top / n for n in names}


def read_job(run_dir: str | Path) -> ManyResult:
    """A finished job read back: each metric's result from its folder (a metric without one:
    failed, with the reason the job's result.json recorded).

    Raises:
        RunDirError: not a job's run directory, or a metric's result.json unreadable.
    """
    top = Path(run_dir)
    data = rundir.read_json(top / rundir.RESULT_FILE, what="result")
    outcomes = {}
    for n, folder in job_metrics(top).items():
        entry = (data.get("metrics") or {}).get(n) or {}
        budget = BudgetConfig.model_validate(entry.get("budget") or {})
        usable = int(entry.get("usable_samples") or 0)
        if rundir.run_status(folder) == "finished":
            result = OptimizationResult.from_dict(rundir.read_result(folder))
            outcomes[n] = MetricOutcome(n, "done", None, result, budget, usable)
        else:
            outcomes[n] = MetricOutcome(n, "failed", entry.get("reason") or "no result", None, budget, usable)
    return ManyResult(
        outcomes, float(data.get("duration_s") or 0.0), str(data.get("budget_rule") or BUDGET_RULE)
    )


def _metric_configs(config: ManyConfig) -> dict[str, RunConfig]:
    """Each metric's run config, with its share of the job's budget (:func:`split_budget`)."""
    usable = {n: len(load_dataset(config.for_metric(n, None)).usable_indices()) for n in config.metrics}
    shares = split_budget(config.budget, usable) if config.budget is not None else {}
    return {n: config.for_metric(n, shares.get(n)) for n in config.metrics}


def estimate_job(config: ManyConfig) -> dict[str, Any]:
    """Each metric's :class:`~promptevolver.runs._estimate.Estimate` (with its budget share), as
    its own run would be estimated; no LLM is called.

    Raises:
        as :func:`promptevolver.runs._estimate.estimate` for any metric.
    """
    from promptevolver.runs._estimate import estimate

    return {n: estimate(c) for n, c in _metric_configs(config).items()}


def job_estimate_lines(
    estimates: Mapping[str, Any], config: ManyConfig, *, source: Path, quiet: bool = False
) -> list[str]:
    """What ``estimate`` prints for a job: one line per metric and the job's total (``quiet``:
    the total alone)."""
    from promptevolver.runs._estimate_output import estimate_lines

    total = {
        k: sum(getattr(e, k) for e in estimates.values())
        for k in ("judge_calls", "meta_calls", "prompt_tokens", "completion_tokens", "max_calls")
    }
    costs = [e.cost_usd for e in estimates.values()]
    cost = (
        "unknown (a metric's model has no price)"
        if None in costs
        else f"${sum(c for c in costs if c is not None):.4f}"
    )
    simulated = " (simulated LLM)" if config.llm.provider == "fake" else ""
    calls = total["judge_calls"] + total["meta_calls"]
    line = (
        f"job of {len(estimates)} metrics: expected LLM calls: {calls:,} "
        f"({total['judge_calls']:,} judge + {total['meta_calls']:,} meta); tokens: "
        f"{total['prompt_tokens'] + total['completion_tokens']:,}; cost: {cost}{simulated}; at most "
        f"{total['max_calls']:,} calls"
    )
    if quiet:
        return [line]
    lines = [f"estimate for {source}, a job of {len(estimates)} metrics (no LLM called)"]
    for n, e in estimates.items():
        lines.append(f"  {n}: " + estimate_lines(e, config.for_metric(n, None), source=source, quiet=True)[0])
    return [*lines, line]


@dataclass(frozen=True)
class JobGate:
    """A job's gate: each metric's scorecard and verdict; it passes when every metric does.

    Attributes:
        cards: metric name → its :class:`~promptevolver.runs._evaluate.Scorecard`.
        gates: metric name → its :class:`~promptevolver.runs._gate.GateResult` (empty without a
            threshold).
        intervals: metric name → the interval of its gate figure (None when not measured).
    """

    cards: dict[str, Any]
    gates: dict[str, Any]
    intervals: dict[str, Any]

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates.values())

    @property
    def simulated_llm(self) -> bool:
        return any(c.simulated_llm for c in self.cards.values())

    def reason(self) -> str:
        """One line: which metrics passed and failed, and whether the simulator judged."""
        from promptevolver.runs._gate import SIMULATED_GATE

        failed = [n for n, g in self.gates.items() if not g.passed]
        head = "job gate failed" if failed else "job gate passed"
        said = "; ".join(
            f"{n}: {g.reason.removesuffix(f'; {SIMULATED_GATE}')}" for n, g in self.gates.items()
        )
        simulated = f"; {SIMULATED_GATE}" if self.simulated_llm else ""
        return (
            f"{head} ({len(self.gates) - len(failed)} of {len(self.gates)} metrics passed): {said}{simulated}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "metrics",
            "passed": self.passed if self.gates else None,
            "simulated_llm": self.simulated_llm,
            "metrics": {
                n: {
                    **card.to_dict(),
                    "interval": self.intervals.get(n) and vars(self.intervals[n]),
                    "gate": self.gates[n].to_dict() if n in self.gates else None,
                }
                for n, card in self.cards.items()
            },
        }


def evaluate_job(
    config: ManyConfig,
    run_dir: str | os.PathLike[str],
    *,
    split: str | None = None,
    threshold: float | None = None,
    figure: str | None = None,
    max_failure_rate: float = 0.0,
) -> JobGate:
    """Score each metric's chosen judge (``run_dir/<metric>``, :func:`promptevolver.rundir.read_chosen_judge`)
    on its run's validation samples (``split="all"``: every usable sample), as ``evaluate`` does
    one, and gate each at ``threshold`` when given.

    Raises:
        RunDirError: ``run_dir`` is not a job's, or a metric of the config has no folder in it.
        ConfigError, AnnotationError: as ``evaluate`` for any metric.
    """
    import warnings

    import numpy as np

    from promptevolver.runs._evaluate import chosen_positions, score_instructions
    from promptevolver.runs._gate import default_figure, interval_of

    folders = job_metrics(Path(run_dir))
    missing = [n for n in config.metrics if n not in folders]
    if missing:
        raise RunDirError(f"{run_dir}: no folder of metric(s) {missing} (the job has {sorted(folders)})")
    cards, gates, intervals = {}, {}, {}
    for n in config.metrics:
        metric_config = config.for_metric(n, None)
        chosen = rundir.read_chosen_judge(folders[n])
        dataset = load_dataset(metric_config)
        positions, notes = chosen_positions(
            metric_config, dataset, source=folders[n], instructions=chosen.instructions, split=split
        )
        for note in notes:
            warnings.warn(f"{n}: {note}", stacklevel=2)
        card = asyncio.run(score_instructions(metric_config, chosen, positions=positions, dataset=dataset))
        rng = np.random.default_rng(metric_config.effective_optimizer().random_seed)
        cards[n] = card
        if threshold is not None:
            gates[n] = card.gate(
                threshold=threshold, figure=figure, max_failure_rate=max_failure_rate, rng=rng
            )
            intervals[n] = gates[n].interval
        elif (shown := figure or default_figure(card.agreement)) is not None:
            intervals[n] = interval_of(card.agreement, shown, card.pairs, rng=rng)
    return JobGate(cards, gates, intervals)


def report_job(run_dir: str | Path) -> list[Path]:
    """Rewrite each metric's report and samples.jsonl, then the job's index.html; return the paths
    (the index first).

    Raises:
        RunDirError: not a job's run directory, a metric's result unreadable, a link at a name
            the job writes, or another process writing the job (the job's lock and each metric
            folder's are held, as a running job holds them).
    """
    top = Path(run_dir)
    rundir.check_links(top)  # before anything of it is read through a link
    with rundir.locked(top):  # one writer at a time: refused while the job runs or resumes
        many = read_job(top)
        paths = [rundir.write_atomic(top / rundir.INDEX_HTML, index_html(many))]
        for n in many:
            rundir.check_links(top / n)
            with rundir.locked(top / n):  # a resume of this metric alone is refused meanwhile
                facts = load_run(top / n, rebuild=True)
                paths += write_report(top / n, facts=facts)
                paths.append(write_samples(top / n, facts))
    return paths


def suggest_job(
    run_dir: str | Path, pool: str | Path, *, n: int, **options: Any
) -> tuple[list[dict[str, Any]], list[str]]:
    """Which traces of ``pool`` to annotate next for the job as a whole: each metric's suggestions
    (:func:`promptevolver.runs.suggest.suggest`, ``max_calls`` split evenly), each row with its
    ``metric``, best score first, ``n`` in all; and each metric's summary line.

    Raises:
        RunDirError: not a job's run directory; as ``suggest`` for any metric.
    """
    from promptevolver.runs.suggest import suggest

    folders = {name: f for name, f in job_metrics(run_dir).items() if rundir.run_status(f) == "finished"}
    if not folders:
        raise RunDirError(f"{run_dir}: no metric of the job finished: nothing to suggest from")
    bound = options.pop("max_calls", None)
    share = None if bound is None else max(1, bound // len(folders))
    rows, summaries = [], []
    for name, folder in folders.items():
        found = suggest(folder, pool, n=n, max_calls=share, **options)
        rows += [{"metric": name, **s.to_dict()} for s in found.suggestions]
        summaries.append(f"{name}: {found.summary()}")
    rows.sort(key=lambda r: -float(r["score"]))
    return rows[:n], summaries
