"""Judge ensembles: one metric judged by several LLM calls whose verdicts are aggregated.

:class:`JudgeEnsemble` wraps a metric of ours (e.g. :class:`~promptevolver.judge.aspect_critic.AspectCritic`)
and is itself a :class:`~promptevolver.judge.aspect_critic.Metric`: its prompts *are* the wrapped metric's,
so :class:`~promptevolver.GeneticOptimizer` optimizes the wrapped instructions unchanged while
fitness uses the aggregated verdicts. It mirrors evaluation libraries that run a Ragas-style
single-turn metric with several judges (self-consistency), a timeout, bounded judge concurrency
and custom prompts applied for one evaluation.

One evaluation (:meth:`JudgeEnsemble.ajudge`):

1. the inputs are normalised — either naming scheme (``input``/``user_input``,
   ``actual_output``/``response``, ``expected_output``/``reference``,
   ``retrieved_context``/``retrieved_contexts``, ``expected_context``/``reference_contexts``,
   ``rubrics``), a single string context becomes a one-element list — and required fields checked;
2. ``num_judges`` calls of the wrapped metric run, judge ``i`` with ``sample_index=i`` (so
   response caches keep them apart), at most ``max_concurrent_judges`` in flight, all within
   ``timeout_s`` seconds;
3. failed judges (LLM error, unparseable answer, not done in time) are left out and reported in
   ``Judgement.details``; the others are aggregated (:data:`AGGREGATIONS`); when every judge
   failed, the evaluation fails (``score`` None, ``error`` says why);
4. every callback receives an :class:`EvaluationEvent`.

Custom prompts: :meth:`JudgeEnsemble.evaluate` takes items that may carry their own instructions.
They are passed to the judges explicitly and never set on the metric, so the metric's
instructions are unchanged afterwards (also when an evaluation raises) and concurrent items
cannot leak instructions into each other. For code that sets prompts on the metric itself,
:meth:`JudgeEnsemble.custom_instructions` applies them for a ``with`` block and restores the
previous prompts on exit.
"""

from __future__ import annotations

import asyncio
import inspect
import statistics
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from promptevolver.annotations import FIELD_ALIASES, normalize_metric_input
from promptevolver.errors import AnnotationError
from promptevolver.judge.prompts import Prompt
from promptevolver.judge.protocol import Judgement, Metric
from promptevolver.llm.base import LLMClient

__all__ = ["AGGREGATIONS", "EvaluationEvent", "EvaluationItem", "JudgeEnsemble"]

T = TypeVar("T")


class _NotBinary(ValueError):
    """A judge gave a score other than 0 or 1 to a majority vote."""


def _majority(scores: Sequence[float]) -> float:
    """1.0 when more judges said 1 than 0, else 0.0.

    Tie rule: a tie (an even number of successful judges split evenly) gives 0.0 — a criterion
    that half the judges reject is not shown to be met. Raises :class:`_NotBinary` for a score
    other than 0 or 1.
    """
    odd = [s for s in scores if s not in (0.0, 1.0)]
    if odd:
        raise _NotBinary(
            f"aggregation 'majority' needs binary verdicts (0 or 1), got {odd[0]}; "
            "use mean, median, min or max for numeric scores"
        )
    yes = sum(scores)
    return 1.0 if yes > len(scores) - yes else 0.0


#: Aggregation name → function of the successful judges' scores (a non-empty sequence).
AGGREGATIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "majority": _majority,
    "mean": statistics.fmean,
    "median": lambda s: float(statistics.median(s)),
    "min": min,
    "max": max,
}


@dataclass(frozen=True)
class EvaluationItem:
    """One sample to evaluate, optionally with custom instructions for this evaluation only.

    Attributes:
        inputs: the sample's fields, under either naming scheme.
        instructions: prompt name → instruction overriding the metric's for this item (None: the
            metric's own). Prompts not named keep the metric's instruction.

    :meth:`JudgeEnsemble.evaluate` also accepts a plain mapping: one whose keys are exactly
    ``inputs`` and optionally ``instructions`` is read as an item; any other mapping is the inputs.
    """

    inputs: Mapping[str, Any]
    instructions: Mapping[str, str] | None = None


ItemLike = EvaluationItem | Mapping[str, Any]


def as_item(data: ItemLike) -> EvaluationItem:
    """``data`` as an :class:`EvaluationItem` (see its docstring). Raises TypeError otherwise."""
    if isinstance(data, EvaluationItem):
        return data
    if not isinstance(data, Mapping):
        raise TypeError(f"an evaluation item is an EvaluationItem or a mapping, got {type(data).__name__}")
    if "inputs" in data and set(data) <= {"inputs", "instructions"}:
        return EvaluationItem(inputs=data["inputs"], instructions=data.get("instructions"))
    return EvaluationItem(inputs=data)


@dataclass(frozen=True)
class EvaluationEvent:
    """What each callback of a :class:`JudgeEnsemble` receives after every evaluation.

    Attributes:
        metric: the ensemble's name.
        inputs: the sample's inputs, normalised to Ragas' field names.
        instructions: prompt name → instruction the judges used.
        judgement: the aggregated judgement; its ``details`` hold every judge's score, reason
            and error (see :meth:`JudgeEnsemble.ajudge`).
        duration_s: wall-clock seconds of the evaluation (judges and aggregation).
    """

    metric: str
    inputs: Mapping[str, Any]
    instructions: Mapping[str, str]
    judgement: Judgement
    duration_s: float


Callback = Callable[[EvaluationEvent], Awaitable[None] | None]


class JudgeEnsemble:
    """Several judges of one metric, aggregated; a :class:`~promptevolver.judge.aspect_critic.Metric` itself.

    Args:
        metric: the wrapped judge (see :class:`Metric`); its prompts are this ensemble's.
        num_judges: judge calls per evaluation (≥ 1); judge ``i`` sends ``sample_index=i``.
        aggregation_method: ``majority`` (binary verdicts; a tie gives 0), ``mean``, ``median``,
            ``min`` or ``max`` (numeric scores); see :data:`AGGREGATIONS`.
        name: the metric's name (default: the wrapped metric's); judge scores in
            ``Judgement.details`` are namespaced by it.
        max_concurrent_judges: judge calls of one evaluation in flight at once (≥ 1; None: all).
        timeout_s: seconds one evaluation may take (> 0; None: no limit); judges not done by then
            are cancelled and count as failed.
        temperature: sampling temperature of judge calls, in [0, 2] (None: the wrapped metric's).
            On a real LLM the judges only differ at a temperature > 0.
        callbacks: callables (sync or async) called with an :class:`EvaluationEvent` after each
            evaluation, in order; an exception in a callback propagates to the caller.

    Raises:
        ValueError: an argument out of range, or an unknown ``aggregation_method`` (the message
            lists the known ones).
    """

    def __init__(
        self,
        *,
        metric: Metric,
        num_judges: int = 1,
        aggregation_method: str = "majority",
        name: str | None = None,
        max_concurrent_judges: int | None = None,
        timeout_s: float | None = None,
        temperature: float | None = None,
        callbacks: Sequence[Callback] = (),
    ) -> None:
        _check_ranges(num_judges, aggregation_method, max_concurrent_judges, timeout_s, temperature)
        self.metric = metric
        self.name = name if name is not None else metric.name
        if not self.name.strip():
            raise ValueError("name must not be empty")
        self.num_judges = num_judges
        self.aggregation_method = aggregation_method
        self.max_concurrent_judges = max_concurrent_judges
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.callbacks = list(callbacks)

    def __repr__(self) -> str:
        return (
            f"JudgeEnsemble(metric={self.metric!r}, num_judges={self.num_judges}, "
            f"aggregation_method={self.aggregation_method!r})"
        )

    @property
    def calls_per_evaluation(self) -> int:
        """Judge calls one evaluation makes when no answer needs re-asking: ``num_judges``."""
        return self.num_judges

    # --- the Metric protocol: prompts are the wrapped metric's ---------------------------------
    def get_prompts(self) -> dict[str, Prompt[Any]]:
        return self.metric.get_prompts()

    def set_prompts(self, **prompts: Prompt[Any]) -> None:
        self.metric.set_prompts(**prompts)

    def get_instructions(self) -> dict[str, str]:
        return self.metric.get_instructions()

    def set_instructions(self, instructions: Mapping[str, str]) -> None:
        """Apply a candidate to the wrapped metric. Raises KeyError for an unknown prompt name."""
        self.metric.set_instructions(instructions)

    def prompt_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The fields the judges see, from inputs under either naming scheme.

        Raises:
            AnnotationError: a required field is missing (the message names it and its alias).
        """
        try:
            return self.metric.prompt_inputs(normalize_metric_input(dict(inputs)))
        except AnnotationError as exc:
            if exc.field is None:
                raise
            field = exc.field.rsplit(".", 1)[-1]
            aliases = [alias for alias, name in FIELD_ALIASES.items() if name == field]
            also = f" (or {aliases[0]!r})" if aliases else ""
            raise AnnotationError(f"{self.name} needs {field!r}{also}", field=exc.field) from exc

    # --- one evaluation ----------------------------------------------------------------------
    async def ajudge(
        self,
        inputs: Mapping[str, Any],
        *,
        llm: LLMClient | None = None,
        instructions: Mapping[str, str] | None = None,
        sample_index: int = 0,
        temperature: float | None = None,
    ) -> Judgement:
        """Judge one sample ``num_judges`` times with ``instructions`` (default: the metric's own)
        and aggregate.

        Returns a :class:`Judgement` whose ``score`` is the aggregate, ``reason`` (and ``raw``) that
        of the first judge whose score is closest to it, and ``details``::

            {"aggregation": "majority", "num_judges": 3,
             "scores": {"<name>": 1.0, "<name>_judge_0": 1.0, "<name>_judge_1": None, ...},
             "reasons": {"<name>_judge_0": "...", ...},      # successful judges
             "errors": {"<name>_judge_1": "timed out ...", ...}}  # failed judges

        Judge ``i`` gets ``sample_index · num_judges + i`` (so repeated evaluations and judges stay
        apart in caches); ``temperature`` overrides the ensemble's own for this call.

        Never raises for LLM trouble or a timeout (failed judges are data). Raises
        :class:`AnnotationError` for a missing required field and ValueError when neither the
        call nor the wrapped metric has an LLM.
        """
        started = time.perf_counter()
        normalized = normalize_metric_input(dict(inputs))
        self.prompt_inputs(normalized)
        judges = await self._run_judges(normalized, llm, instructions, sample_index, temperature)
        judgement = self._aggregate(judges)
        used = {**self.get_instructions(), **(instructions or {})}
        duration = time.perf_counter() - started
        await self._notify(EvaluationEvent(self.name, normalized, used, judgement, duration))
        return judgement

    async def _run_judges(
        self,
        inputs: Mapping[str, Any],
        llm: LLMClient | None,
        instructions: Mapping[str, str] | None,
        sample_index: int,
        temperature: float | None,
    ) -> list[Judgement]:
        limit = asyncio.Semaphore(self.max_concurrent_judges or self.num_judges)
        first = sample_index * self.num_judges
        temperature = self.temperature if temperature is None else temperature

        async def judge(index: int) -> Judgement:
            async with limit:
                return await self.metric.ajudge(
                    inputs,
                    llm=llm,
                    instructions=instructions,
                    sample_index=first + index,
                    temperature=temperature,
                )

        tasks = [asyncio.ensure_future(judge(i)) for i in range(self.num_judges)]
        try:
            done, _ = await asyncio.wait(tasks, timeout=self.timeout_s)
        finally:
            await _cancel(tasks)
        timed_out = Judgement(score=None, error=f"timed out: not done within timeout_s={self.timeout_s} s")
        return [task.result() if task in done else timed_out for task in tasks]

    def _aggregate(self, judges: Sequence[Judgement]) -> Judgement:
        ok = [(j, j.score) for j in judges if j.score is not None]
        if not ok:
            errors = "; ".join(f"judge {i}: {j.error}" for i, j in enumerate(judges))
            error = f"all {len(judges)} judges failed: {errors}"
            return Judgement(score=None, error=error, details=self._details(judges, None))
        try:
            value = float(AGGREGATIONS[self.aggregation_method]([score for _, score in ok]))
        except _NotBinary as exc:
            return Judgement(score=None, error=str(exc), details=self._details(judges, None))
        chosen = min(ok, key=lambda pair: abs(pair[1] - value))[0]
        return Judgement(
            score=value, reason=chosen.reason, raw=chosen.raw, details=self._details(judges, value)
        )

    def _details(self, judges: Sequence[Judgement], value: float | None) -> dict[str, Any]:
        keys = [f"{self.name}_judge_{i}" for i in range(len(judges))]
        return {
            "aggregation": self.aggregation_method,
            "num_judges": self.num_judges,
            "scores": {self.name: value, **{k: j.score for k, j in zip(keys, judges)}},
            "reasons": {k: j.reason for k, j in zip(keys, judges) if not j.failed},
            "errors": {k: j.error for k, j in zip(keys, judges) if j.failed},
        }

    async def _notify(self, event: EvaluationEvent) -> None:
        for callback in self.callbacks:
            outcome = callback(event)
            if inspect.isawaitable(outcome):
                await outcome

    # --- batches with custom prompts ---------------------------------------------------------
    @overload
    async def aevaluate(self, data: ItemLike, *, llm: LLMClient | None = None) -> Judgement: ...

    @overload
    async def aevaluate(
        self, data: list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
    ) -> list[Judgement]: ...

    async def aevaluate(
        self, data: ItemLike | list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
    ) -> Judgement | list[Judgement]:
        """Evaluate one item (→ a Judgement) or a list of items (→ Judgements in the same order).

        Items are :class:`EvaluationItem` or mappings (see there). Each item's custom instructions
        apply to that item only: they are merged over the metric's current instructions once per
        distinct set and passed to the judges; the metric itself is never changed. All items run
        concurrently.

        Raises:
            KeyError: custom instructions name a prompt the metric does not have.
            AnnotationError: an item lacks a required field (``sample_index`` is its position).
            TypeError: an item is neither an EvaluationItem nor a mapping.
            Nothing is sent to the LLM when one of these is raised.
        """
        return await self._evaluate(data, llm)

    async def _evaluate(
        self, data: ItemLike | list[ItemLike] | tuple[ItemLike, ...], llm: LLMClient | None
    ) -> Judgement | list[Judgement]:
        batch = isinstance(data, (list, tuple))
        items = [as_item(d) for d in (data if isinstance(data, (list, tuple)) else [data])]
        plans = self._instructions_per_item(items)
        for index, item in enumerate(items):
            self._check_item(index, item)
        judged = await _gather_or_cancel(
            [self.ajudge(item.inputs, llm=llm, instructions=plan) for item, plan in zip(items, plans)]
        )
        return judged if batch else judged[0]

    @overload
    def evaluate(self, data: ItemLike, *, llm: LLMClient | None = None) -> Judgement: ...

    @overload
    def evaluate(
        self, data: list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
    ) -> list[Judgement]: ...

    def evaluate(
        self, data: ItemLike | list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
    ) -> Judgement | list[Judgement]:
        """Synchronous :meth:`aevaluate` (runs its own event loop with ``asyncio.run``).

        Raises:
            RuntimeError: called from a running event loop (``await aevaluate(...)`` there).
            And whatever :meth:`aevaluate` raises.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._evaluate(data, llm))
        raise RuntimeError("evaluate() cannot run inside an event loop; use `await aevaluate(...)`")

    def _instructions_per_item(self, items: Sequence[EvaluationItem]) -> list[dict[str, str]]:
        base = self.get_instructions()
        keys = [tuple(sorted((item.instructions or {}).items())) for item in items]
        per_set: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        for key in dict.fromkeys(keys):
            unknown = sorted({name for name, _ in key} - set(base))
            if unknown:
                raise KeyError(f"unknown prompt(s) {unknown}; prompts: {sorted(base)}")
            per_set[key] = {**base, **dict(key)}
        return [per_set[key] for key in keys]

    def _check_item(self, index: int, item: EvaluationItem) -> None:
        try:
            self.prompt_inputs(item.inputs)
        except AnnotationError as exc:
            message = str(exc).split(": ", 1)[-1]
            raise AnnotationError(message, metric=self.name, sample_index=index, field=exc.field) from exc

    @contextmanager
    def custom_instructions(self, instructions: Mapping[str, str]) -> Iterator[None]:
        """Set ``instructions`` on the wrapped metric for a ``with`` block; on exit — also when the
        block raises — restore the prompts it had before.

        Not for concurrent blocks with different instructions on one metric (they would see each
        other's); pass instructions per item to :meth:`evaluate` for that.

        Raises:
            KeyError: an unknown prompt name (nothing is changed then).
        """
        previous = self.get_prompts()
        self.set_instructions(instructions)
        try:
            yield
        finally:
            self.set_prompts(**previous)


def _check_ranges(
    num_judges: int,
    aggregation_method: str,
    max_concurrent_judges: int | None,
    timeout_s: float | None,
    temperature: float | None,
) -> None:
    if num_judges < 1:
        raise ValueError(f"num_judges must be >= 1, got {num_judges}")
    if aggregation_method not in AGGREGATIONS:
        raise ValueError(
            f"unknown aggregation_method {aggregation_method!r}; known: {', '.join(AGGREGATIONS)}"
        )
    if max_concurrent_judges is not None and max_concurrent_judges < 1:
        raise ValueError(f"max_concurrent_judges must be >= 1 or None, got {max_concurrent_judges}")
    if timeout_s is not None and timeout_s <= 0:
        raise ValueError(f"timeout_s must be > 0 seconds or None, got {timeout_s}")
    if temperature is not None and not 0.0 <= temperature <= 2.0:
        raise ValueError(f"temperature must be in [0, 2] or None, got {temperature}")


async def _cancel(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the tasks not done yet and wait until they have stopped."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _gather_or_cancel(coros: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Results of ``coros`` run concurrently, in order; on the first exception the rest are
    cancelled and the exception propagates."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        await _cancel(tasks)
