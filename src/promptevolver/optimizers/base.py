"""Optimizer base: holds the metric and LLMs; ``optimize`` is the sync entry point."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.evaluation.losses import Loss
from promptevolver.judge.protocol import Metric
from promptevolver.llm.base import LLMClient

__all__ = ["Optimizer"]

#: Keyword arguments of Ragas' ``Optimizer.optimize`` accepted (and ignored) for drop-in use.
RAGAS_COMPAT_KWARGS = frozenset(
    {"run_config", "batch_size", "callbacks", "with_debugging_logs", "raise_exceptions"}
)


class Optimizer(ABC):
    """Ragas' call shape: ``Optimizer(metric=..., llm=...).optimize(dataset=..., loss=..., config=...)``.

    Args:
        metric: the judge whose instructions are optimized (left unchanged by ``optimize``).
        llm: client for judge calls.
        reflection_llm: client for meta calls (writing instructions); defaults to ``llm``.
    """

    def __init__(
        self,
        *,
        metric: Metric | None = None,
        llm: LLMClient | None = None,
        reflection_llm: LLMClient | None = None,
    ) -> None:
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
        **ragas_kwargs: Any,
    ) -> Mapping[str, str]:
        """Run :meth:`aoptimize` in a fresh event loop (call :meth:`aoptimize` from async code),
        then close the LLM clients' connections of that loop (clients reopen them on next use).

        ``run_dir`` receives a checkpoint after every generation; ``resume`` continues from it.

        Raises:
            TypeError: an unknown keyword argument.
        """
        unknown = sorted(set(ragas_kwargs) - RAGAS_COMPAT_KWARGS)
        if unknown:
            raise TypeError(f"optimize() got unexpected keyword argument(s) {unknown}")
        return asyncio.run(self._optimize_and_close(dataset, loss, config, run_dir, resume))

    async def _optimize_and_close(
        self,
        dataset: SingleMetricAnnotation,
        loss: Loss,
        config: Any,
        run_dir: str | Path | None,
        resume: bool,
    ) -> Mapping[str, str]:
        """Optimize, then close the clients' connections bound to this event loop."""
        try:
            return await self.aoptimize(
                dataset=dataset, loss=loss, config=config, run_dir=run_dir, resume=resume
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
    ) -> Mapping[str, str]:
        """Optimize the metric's instructions on ``dataset``; return prompt name → instruction."""
