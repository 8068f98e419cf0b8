"""One cap on LLM requests in flight, shared by every client of a run.

:class:`InFlightLimit` holds one semaphore; :meth:`InFlightLimit.wrap` returns a client that takes
a slot of it for each request. Wrap the judge and the reflection client of a run with the same
limit and the server never sees more than ``limit`` requests of that run at once, however many
candidates are judged together and however many calls one evaluation makes. Users set it to
stay under a provider's concurrency limit (``llm.max_concurrency`` in a run config).
"""

from __future__ import annotations

import asyncio

from promptevolver.errors import LLMError
from promptevolver.llm.base import Completion, LLMClient, LLMRequest, Usage

__all__ = ["InFlightLimit"]


class InFlightLimit:
    """At most ``limit`` requests in flight through the clients it wraps (≥ 1).

    The semaphore is made for the running event loop on first use (clients outlive one
    ``asyncio.run``).

    Raises:
        ValueError: ``limit`` < 1.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {limit}")
        self.limit = limit
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        #: Once set, requests not yet sent fail with it at once (those in flight finish).
        self.closed: LLMError | None = None

    def close(self, error: LLMError) -> None:
        """Send no more requests: every later one fails with ``error`` (no call is made)."""
        self.closed = error

    def slot(self) -> asyncio.Semaphore:
        """The semaphore of the running event loop."""
        loop = id(asyncio.get_running_loop())
        if loop not in self._semaphores:
            self._semaphores = {loop: asyncio.Semaphore(self.limit)}
        return self._semaphores[loop]

    def wrap(self, client: LLMClient) -> LLMClient:
        """``client`` behind this limit (its usage is the wrapped client's)."""
        return _Limited(client, self)


class _Limited:
    def __init__(self, inner: LLMClient, limit: InFlightLimit) -> None:
        self.inner = inner
        self.limit = limit

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    async def complete(self, request: LLMRequest) -> Completion:
        async with self.limit.slot():
            if self.limit.closed is not None:
                raise self.limit.closed
            return await self.inner.complete(request)
