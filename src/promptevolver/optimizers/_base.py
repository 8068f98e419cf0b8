"""Optimizer base: holds the metric and LLMs; ``optimize`` is the sync entry point."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.evaluation._losses import Loss
from promptevolver.judge._protocol import Metric, refuse_ragas_object
from promptevolver.llm._base import LLMClient
from promptevolver.optimizers.events import Callback, check_callbacks

__all__ = ["Optimizer"]

#: What an optimizer's ``optimize`` returns: prompt name → instruction (or a richer mapping).
ResultT = TypeVar("ResultT", bound=Mapping[str, str])

#: Keyword arguments of Ragas' ``Optimizer.optimize`` accepted (and ignored) for drop-in use:
#: settings whose job is done here by the config (``max_concurrency``, batches) or by the rule that
#: a failed call is recorded with its cause. Ragas' ``callbacks`` is not among them: ours are
#: honoured (see :meth:`Optimizer.optimize`).
RAGAS_COMPAT_KWARGS = frozenset({"run_config", "batch_size", "with_debugging_logs", "raise_exceptions"})


class Optimizer(ABC, Generic[ResultT]):
    """Ragas' call shape: ``Optimizer(metric=..., llm=...).optimize(dataset=..., loss=..., config=...)``.

    Args:
        metric: the judge whose instructions are optimized (left unchanged by ``optimize``).
        llm: client for judge calls.
        reflection_llm: client for meta calls (writing instructions); defaults to ``llm``.

    Raises:
        TypeError: a Ragas object where ours is meant (the message says what to pass: a Ragas
            metric is wrapped in ``RagasMetric``).
    """

    def __init__(
        self,
        *,
        metric: Metric | None = None,
        llm: LLMClient | None = None,
        reflection_llm: LLMClient | None = None,
    ) -> None:
        for role, value in (("metric", metric), ("llm", llm), ("reflection_llm", reflection_llm)):
            refuse_ragas_object(value, role)
        self.metric = metric
        self.llm = llm
        self.reflection_llm = reflection_llm

    def optimize(
        self,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Mapping[str, Any] | Any | None = None,
        *,
        run_dir: str | Path | None = None,
        resume: bool = False,
        callbacks: Sequence[Callback] = (),
        **ragas_kwargs: Any,
    ) -> ResultT:
        """Run :meth:`aoptimize` in a fresh event loop and return what it returns (call
        :meth:`aoptimize` from async code), then close the LLM clients' connections of that loop
        (clients reopen them on next use).

        ``run_dir`` receives a checkpoint after every generation; ``resume`` continues from it.
        ``callbacks`` are called with this run's events, after the optimizer's own (Ragas' keyword;
        here each is a function taking an :class:`~promptevolver.optimizers.events.Event`).

        Raises:
            TypeError: an unknown keyword argument, ``callbacks`` not a list of functions, or a
                Ragas dataset or loss object (the message says which of ours to use).
        """
        refuse_ragas_object(dataset, "dataset")
        refuse_ragas_object(loss, "loss")
        unknown = sorted(set(ragas_kwargs) - RAGAS_COMPAT_KWARGS)
        if unknown:
            raise TypeError(f"optimize() got unexpected keyword argument(s) {unknown}")
        extra = check_callbacks(callbacks)
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

    @abstractmethod
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
        ``callbacks`` receive this run's events (in addition to any the optimizer holds)."""
