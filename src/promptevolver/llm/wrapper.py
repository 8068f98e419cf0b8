"""The one base of the client decorators (``ClientWrapper``).

It imports nothing of the package at run time, so every module that decorates a client
(:mod:`.attempts`, :mod:`.concurrency`, :mod:`.journal`, the budget meter, the run's progress
announcer) can subclass it without an import circle through :mod:`.base`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from promptevolver.llm.base import Completion, LLMClient, LLMRequest, Usage

__all__ = ["ClientWrapper"]


class ClientWrapper:
    """The one base of the client decorators a run stacks around its clients (the attempt watch,
    the in-flight limit, the journal, the budget meter, the progress announcer): it holds the
    wrapped client as ``inner``, reports its ``usage`` and forwards ``complete``; a decorator
    overrides ``complete`` to act around the call. ``inner`` also lets a caller walk the stack
    (e.g. :func:`~promptevolver.optimizers.strategies.budget.price_of`).

    Args:
        inner: the client wrapped (an :class:`LLMClient`, maybe another wrapper).
    """

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    async def complete(self, request: LLMRequest) -> Completion:
        return await self.inner.complete(request)
