"""Optimizer base: holds the metric and LLMs; ``optimize`` is the sync entry point.

Ragas' shape works unchanged: ``Optimizer(metric, llm)`` positionally or by keyword (a dataclass,
as Ragas' ``ragas.optimizers.base.Optimizer``), ``optimize(dataset, loss, config, run_config,
batch_size, callbacks, with_debugging_logs, raise_exceptions)`` positionally, and a subclass of
one's own implements either ``optimize`` (Ragas' shape, synchronous) or ``aoptimize`` (ours).
"""

from __future__ import annotations

import asyncio
import warnings
from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.evaluation import Loss
from promptevolver.judge import Metric
from promptevolver.llm import LLMClient
from promptevolver.optimizers.events import Callback, check_callbacks

__all__ = ["Optimizer"]

#: What an optimizer's ``optimize`` returns: prompt name → instruction (or a richer mapping).
ResultT = TypeVar("ResultT", bound=Mapping[str, str])

#: Ragas' ``optimize`` arguments whose job is done elsewhere here: a value other than Ragas'
#: default is accepted (Ragas code runs unchanged) with a warning naming where that job is done.
RAGAS_ARGUMENTS: dict[str, tuple[Any, str]] = {
    "run_config": (
        None,
        "Ragas' executor settings are not used: timeouts and retries are the LLM client's "
        "(timeout_s=, max_attempts=), max_concurrency and random_seed are config keys",
    ),
    "batch_size": (None, "not used: config key max_concurrency limits the requests in flight"),
    "with_debugging_logs": (
        False,
        "not used: pass callbacks= (functions taking a promptevolver.optimizers.events.Event) "
        "to see every step",
    ),
}


def _warn_unused(given: Mapping[str, Any]) -> None:
    for name, value in given.items():
        default, where = RAGAS_ARGUMENTS[name]
        if value is not default and value != default:
            warnings.warn(f"optimize({name}={value!r}): {where}", UserWarning, stacklevel=3)


@dataclass(eq=False, repr=False)
class Optimizer(ABC, Generic[ResultT]):
    """Ragas' call shape: ``Optimizer(metric, llm).optimize(dataset, loss, config)``, positionally
    or by keyword.

    A subclass implements :meth:`aoptimize` (async; :meth:`optimize` runs it) or, as in Ragas,
    :meth:`optimize` (sync; :meth:`aoptimize` runs it in a worker thread). One of the two is
    required: a subclass with neither cannot be instantiated.

    Args:
        metric: the judge whose instructions are optimized (left unchanged by ``optimize``).
        llm: client for judge calls.
        reflection_llm: client for meta calls (writing instructions); defaults to ``llm``
            (keyword only).
    """

    metric: Metric | None = None
    llm: LLMClient | None = None
    reflection_llm: LLMClient | None = field(default=None, kw_only=True)

    def __new__(cls, *args: Any, **kwargs: Any) -> Optimizer[Any]:
        if cls.optimize is Optimizer.optimize and cls.aoptimize is Optimizer.aoptimize:
            raise TypeError(
                f"Can't instantiate {cls.__name__}: implement optimize(self, dataset, loss, config, "
                "**kwargs) (Ragas' shape) or async aoptimize(self, *, dataset, loss, config, ...)"
            )
        return super().__new__(cls)

    def _require_metric_and_llm(self) -> None:
        """Raise Ragas' errors, metric first, when the metric or the LLM is missing.

        Raises:
            ValueError: "No metric provided for optimization" or "No llm provided for optimization".
        """
        name = type(self).__name__
        if self.metric is None:
            raise ValueError(f"No metric provided for optimization: {name}(metric=...) or set .metric")
        if self.llm is None:
            raise ValueError(f"No llm provided for optimization: {name}(llm=...) or set .llm")

    def optimize(
        self,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | Any | None = None,
        run_config: Any = None,
        batch_size: int | None = None,
        callbacks: Sequence[Callback] | None = (),
        with_debugging_logs: bool = False,
        raise_exceptions: bool = True,
        *,
        run_dir: str | Path | None = None,
        resume: bool = False,
    ) -> ResultT:
        """Run :meth:`aoptimize` in a fresh event loop and return what it returns (call
        :meth:`aoptimize` from async code), then close the LLM clients' connections of that loop
        (clients reopen them on next use).

        The arguments after ``config`` are Ragas', in Ragas' order. ``callbacks`` are called
        with this run's events, after the optimizer's own (here each is a function taking an
        :class:`~promptevolver.optimizers.events.Event`; None as Ragas' default means none).
        ``run_config``, ``batch_size`` and ``with_debugging_logs`` do their job elsewhere here:
        a value other than Ragas' default warns where (:data:`RAGAS_ARGUMENTS`).
        ``raise_exceptions`` of either value: a failed LLM call is retried, then recorded as a
        failed evaluation with its cause (never a score), and the run stops with one clear error
        when more than ``max_failure_rate`` of a step's calls fail.

        ``run_dir`` receives a checkpoint after every generation; ``resume`` continues from it.

        Raises:
            TypeError: an unknown keyword argument, or ``callbacks`` not a list of functions.
            Whatever the subclass's ``aoptimize`` raises.
        """
        _warn_unused(
            {"run_config": run_config, "batch_size": batch_size, "with_debugging_logs": with_debugging_logs}
        )
        extra = check_callbacks(() if callbacks is None else callbacks)
        return asyncio.run(self._optimize_and_close(dataset, loss, config, run_dir, resume, extra))

    async def _optimize_and_close(
        self,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Any,
        run_dir: str | Path | None,
        resume: bool,
        callbacks: Sequence[Callback],
    ) -> ResultT:
        """Optimize, then close the clients' connections bound to this event loop."""
        try:
            return await self.aoptimize(
                dataset=dataset, loss=loss, config=config, run_dir=run_dir, resume=resume, callbacks=callbacks
            )
        finally:
            for client in {id(c): c for c in (self.llm, self.reflection_llm) if c is not None}.values():
                close = getattr(client, "aclose", None)
                if close is not None:
                    await close()

    async def aoptimize(
        self,
        *,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | Any | None = None,
        run_dir: str | Path | None = None,
        resume: bool = False,
        callbacks: Sequence[Callback] = (),
    ) -> ResultT:
        """Optimize the metric's instructions on ``dataset``; return prompt name → instruction.
        ``callbacks`` receive this run's events (in addition to any the optimizer holds).

        This default serves a subclass written as in Ragas (its own ``optimize``): it runs that
        ``optimize(dataset, loss, config)`` in a worker thread.

        Raises:
            TypeError: ``run_dir``, ``resume`` or ``callbacks`` given to a subclass that
                implements only ``optimize`` (they need an ``aoptimize`` of its own).
        """
        if run_dir is not None or resume or callbacks:
            raise TypeError(
                f"{type(self).__name__} implements only optimize() (Ragas' shape): run_dir, resume and "
                "callbacks need an aoptimize() of its own"
            )
        return await asyncio.to_thread(self.optimize, dataset, loss, config)
