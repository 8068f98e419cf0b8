"""Judge ensembles: one metric judged by several LLM calls whose verdicts are aggregated.

:class:`JudgeEnsemble` wraps a metric of ours (e.g. :class:`~promptevolver.judge._aspect_critic.AspectCritic`)
and is itself a :class:`~promptevolver.judge._aspect_critic.Metric`: its prompts *are* the wrapped metric's,
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
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from promptevolver.annotations import FIELD_ALIASES, LabelScale, SampleAnnotation, normalize_metric_input
from promptevolver.errors import AnnotationError
from promptevolver.judge._aggregation import AGGREGATIONS, aggregate
from promptevolver.judge._batch import BatchEvaluation, EvaluationItem, as_item, cancel
from promptevolver.judge._prompts import Prompt
from promptevolver.judge._protocol import (
    Judge,
    Judgement,
    JudgeRequest,
    Metric,
    label_scale_of,
    refuse_ragas_object,
)

__all__ = ["AGGREGATIONS", "EvaluationEvent", "EvaluationItem", "JudgeEnsemble", "as_item"]

T = TypeVar("T")


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


class JudgeEnsemble(Judge, BatchEvaluation):
    """Several judges of one metric, aggregated; a :class:`~promptevolver.judge._aspect_critic.Metric` itself.

    Args:
        metric: the wrapped judge (see :class:`Metric`), positional or keyword; its prompts are
            this ensemble's.
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
        metric: Metric,
        *,
        num_judges: int = 1,
        aggregation_method: str = "majority",
        name: str | None = None,
        max_concurrent_judges: int | None = None,
        timeout_s: float | None = None,
        temperature: float | None = None,
        callbacks: Sequence[Callback] = (),
    ) -> None:
        _check_ranges(num_judges, aggregation_method, max_concurrent_judges, timeout_s, temperature)
        refuse_ragas_object(metric, "metric")
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
    def label_scale(self) -> LabelScale | None:
        """The wrapped judge's (see :func:`~promptevolver.judge._protocol.label_scale_of`)."""
        return label_scale_of(self.metric)

    @property
    def calls_per_evaluation(self) -> int:
        """Judge calls one evaluation makes when no answer needs re-asking: ``num_judges`` × the
        wrapped metric's (2 per judge for a two-prompt metric)."""
        return self.num_judges * self.metric.calls_per_evaluation

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
    async def _ajudge(self, inputs: Mapping[str, Any], request: JudgeRequest) -> Judgement:
        """Judge one sample ``num_judges`` times and aggregate
        (:meth:`~promptevolver.judge._protocol.Judge.ajudge`); every judge is shown the same
        teaching examples (other annotated samples, :mod:`promptevolver.judge._examples`) when given.

        Returns a :class:`Judgement` whose ``score`` is the aggregate, ``reason`` (and ``raw``) that
        of the first judge whose score is closest to it, and ``details``::

            {"aggregation": "majority", "num_judges": 3,
             "scores": {"<name>": 1.0, "<name>_judge_0": 1.0, "<name>_judge_1": None, ...},
             "reasons": {"<name>_judge_0": "...", ...},      # successful judges
             "errors": {"<name>_judge_1": "timed out ...", ...}}  # failed judges

        Judge ``i`` gets ``sample_index · num_judges + i`` (so repeated evaluations and judges stay
        apart in caches); the call's ``temperature`` overrides the ensemble's own, which (None)
        defaults to the wrapped metric's; without a call's ``llm`` the wrapped metric's own is used.

        Never raises for LLM trouble or a timeout (failed judges are data). Raises
        :class:`AnnotationError` for a missing required field, ValueError when neither the
        call nor the wrapped metric has an LLM, and TypeError when ``examples`` are given but the
        wrapped metric cannot show them (see :meth:`shows_examples`).
        """
        if request.examples and not self.shows_examples():
            raise TypeError(
                f"{type(self.metric).__name__} cannot show teaching examples: its ajudge takes none"
            )
        started = time.perf_counter()
        normalized = normalize_metric_input(dict(inputs))
        self.prompt_inputs(normalized)
        judgement = self._aggregate(await self._run_judges(normalized, request))
        used = {**self.get_instructions(), **(request.instructions or {})}
        duration = time.perf_counter() - started
        await self._notify(EvaluationEvent(self.name, normalized, used, judgement, duration))
        return judgement

    async def _run_judges(self, inputs: Mapping[str, Any], request: JudgeRequest) -> list[Judgement]:
        limit = asyncio.Semaphore(self.max_concurrent_judges or self.num_judges)
        first = request.sample_index * self.num_judges
        shown = {"examples": request.examples} if request.examples else {}

        async def judge(index: int) -> Judgement:
            async with limit:
                return await self.metric.ajudge(
                    inputs,
                    llm=request.llm,
                    instructions=request.instructions,
                    sample_index=first + index,
                    temperature=request.temperature,
                    **shown,
                )

        tasks = [asyncio.ensure_future(judge(i)) for i in range(self.num_judges)]
        try:
            done, _ = await asyncio.wait(tasks, timeout=self.timeout_s)
        finally:
            await cancel(tasks)
        timed_out = Judgement(
            score=None, error=f"timed out: not done within timeout_s={self.timeout_s} s", cause="timeout"
        )
        return [task.result() if task in done else timed_out for task in tasks]

    def shows_examples(self) -> bool:
        """Whether the wrapped metric can show teaching examples (its ``ajudge`` takes
        ``examples`` and it renders ``demonstrations``, or says so itself: AspectCritic,
        RubricJudge, StatementSupport)."""
        own = getattr(self.metric, "shows_examples", None)
        if callable(own) and not own():
            return False
        if not hasattr(self.metric, "demonstrations"):
            return False
        try:
            return "examples" in inspect.signature(self.metric.ajudge).parameters
        except (TypeError, ValueError):
            return False

    def demonstrations(self, examples: Sequence[SampleAnnotation]) -> Any:
        """The wrapped metric's rendering of teaching ``examples`` (an ensemble shows what its
        metric shows). Raises TypeError when the wrapped metric cannot show examples."""
        if not self.shows_examples():
            raise TypeError(f"{type(self.metric).__name__} cannot show teaching examples")
        return self.metric.demonstrations(examples)  # type: ignore[attr-defined]

    def _aggregate(self, judges: Sequence[Judgement]) -> Judgement:
        return aggregate(judges, method=self.aggregation_method, name=self.name)

    async def _notify(self, event: EvaluationEvent) -> None:
        for callback in self.callbacks:
            outcome = callback(event)
            if inspect.isawaitable(outcome):
                await outcome


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
