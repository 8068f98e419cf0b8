"""Evaluating batches of samples, each optionally with its own instructions.

:class:`BatchEvaluation` gives a judge ``evaluate`` / ``aevaluate`` over :class:`EvaluationItem`
objects (or plain mappings) and the ``custom_instructions`` context manager, on top of its
``ajudge``; :class:`~promptevolver.judge._ensemble.JudgeEnsemble` uses it. Custom instructions are
passed to the judges explicitly and never set on the metric, so concurrent items cannot leak
instructions into each other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from promptevolver.errors import AnnotationError
from promptevolver.judge._protocol import Judgement, Metric
from promptevolver.llm import LLMClient

__all__ = ["BatchEvaluation", "EvaluationItem", "ItemLike", "as_item", "cancel", "gather_or_cancel"]

T = TypeVar("T")


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


class BatchEvaluation:
    """Batch evaluation with per-item instructions, for a class that is a
    :class:`~promptevolver.judge._protocol.Metric` (its methods are typed ``self: Metric``; the
    protocol is the one declaration of what a judge has)."""

    @overload
    async def aevaluate(self: Metric, data: ItemLike, *, llm: LLMClient | None = None) -> Judgement: ...

    @overload
    async def aevaluate(
        self: Metric, data: list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
    ) -> list[Judgement]: ...

    async def aevaluate(
        self: Metric, data: ItemLike | list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
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
        return await _evaluate(self, data, llm)

    @overload
    def evaluate(self: Metric, data: ItemLike, *, llm: LLMClient | None = None) -> Judgement: ...

    @overload
    def evaluate(
        self: Metric, data: list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
    ) -> list[Judgement]: ...

    def evaluate(
        self: Metric, data: ItemLike | list[ItemLike] | tuple[ItemLike, ...], *, llm: LLMClient | None = None
    ) -> Judgement | list[Judgement]:
        """Synchronous :meth:`aevaluate` (runs its own event loop with ``asyncio.run``).

        Raises:
            RuntimeError: called from a running event loop (``await aevaluate(...)`` there).
            And whatever :meth:`aevaluate` raises.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_evaluate(self, data, llm))
        raise RuntimeError("evaluate() cannot run inside an event loop; use `await aevaluate(...)`")

    @contextmanager
    def custom_instructions(self: Metric, instructions: Mapping[str, str]) -> Iterator[None]:
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


async def _evaluate(
    metric: Metric, data: ItemLike | list[ItemLike] | tuple[ItemLike, ...], llm: LLMClient | None
) -> Judgement | list[Judgement]:
    batch = isinstance(data, (list, tuple))
    items = [as_item(d) for d in (data if isinstance(data, (list, tuple)) else [data])]
    plans = _instructions_per_item(metric, items)
    for index, item in enumerate(items):
        _check_item(metric, index, item)
    judged = await gather_or_cancel(
        [metric.ajudge(item.inputs, llm=llm, instructions=plan) for item, plan in zip(items, plans)]
    )
    return judged if batch else judged[0]


def _instructions_per_item(metric: Metric, items: Sequence[EvaluationItem]) -> list[dict[str, str]]:
    base = metric.get_instructions()
    keys = [tuple(sorted((item.instructions or {}).items())) for item in items]
    per_set: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
    for key in dict.fromkeys(keys):
        unknown = sorted({name for name, _ in key} - set(base))
        if unknown:
            raise KeyError(f"unknown prompt(s) {unknown}; prompts: {sorted(base)}")
        per_set[key] = {**base, **dict(key)}
    return [per_set[key] for key in keys]


def _check_item(metric: Metric, index: int, item: EvaluationItem) -> None:
    try:
        metric.prompt_inputs(item.inputs)
    except AnnotationError as exc:
        message = str(exc).split(": ", 1)[-1]
        raise AnnotationError(message, metric=metric.name, sample_index=index, field=exc.field) from exc


async def cancel(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the tasks not done yet and wait until they have stopped."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def gather_or_cancel(coros: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Results of ``coros`` run concurrently, in order; on the first exception the rest are
    cancelled and the exception propagates. A coroutine closed with its event loop gone (a
    KeyboardInterrupt that ended ``asyncio.run``) only cancels them: nothing can be awaited then."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except GeneratorExit:
        for task in tasks:
            task.cancel()
        raise
    except BaseException:
        await cancel(tasks)
        raise
