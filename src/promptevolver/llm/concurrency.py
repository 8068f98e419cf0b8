"""One cap on LLM requests in flight, shared by every client of a run.

:class:`InFlightLimit` holds one semaphore; :meth:`InFlightLimit.wrap` returns a client that takes
a slot of it for each request. Wrap the judge and the reflection client of a run with the same
limit and the server never sees more than ``limit`` requests of that run at once, however many
candidates are judged together and however many calls one evaluation makes. Users set it to
stay under a provider's concurrency limit (``llm.max_concurrency`` in a run config).

It is the run's one concurrency limit: every phase of a run (judge calls of the evaluator, meta
calls of the operators and the distillation) sends through the clients it wraps. A job of several
metrics (:mod:`promptevolver.optimizers.many`) makes one and gives each metric's run a
:meth:`~InFlightLimit.share` of it: one semaphore for all, so a slot an idle metric does not use
goes to the others, while each run keeps its own stop switch (:meth:`~InFlightLimit.close`) and
its own record of calls (:meth:`~InFlightLimit.take_intervals`).
"""

from __future__ import annotations

import asyncio
import time

from promptevolver.errors import LLMError
from promptevolver.llm.base import Completion, LLMClient, LLMRequest
from promptevolver.llm.wrapper import ClientWrapper

__all__ = ["InFlightLimit", "waves"]


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
        self._parent: InFlightLimit | None = None
        #: Once set, requests not yet sent fail with it at once (those in flight finish).
        self.closed: LLMError | None = None
        self._intervals: list[tuple[float, float]] = []

    def take_intervals(self) -> list[tuple[float, float]]:
        """(start, end) monotonic seconds of every call made since the last take (then cleared)."""
        taken, self._intervals = self._intervals, []
        return taken

    def close(self, error: LLMError) -> None:
        """Send no more requests: every later one fails with ``error`` (no call is made)."""
        self.closed = error

    def share(self) -> InFlightLimit:
        """A view of this limit for one run of a job: the same slots (its requests and those of
        every other share count against ``limit`` together), its own :meth:`close` and
        :meth:`take_intervals`."""
        view = InFlightLimit(self.limit)
        view._parent = self._parent or self
        return view

    def slot(self) -> asyncio.Semaphore:
        """The semaphore of the running event loop (the shared one, for a :meth:`share`)."""
        if self._parent is not None:
            return self._parent.slot()
        loop = id(asyncio.get_running_loop())
        if loop not in self._semaphores:
            self._semaphores = {loop: asyncio.Semaphore(self.limit)}
        return self._semaphores[loop]

    def wrap(self, client: LLMClient) -> LLMClient:
        """``client`` behind this limit (its usage is the wrapped client's)."""
        return _Limited(client, self)


def waves(intervals: list[tuple[float, float]]) -> int:
    """The longest chain of calls that had to wait for one another: a call's wave is one more than
    the highest wave among the calls that had ended before it started. With a fixed latency per
    call, wall time ≈ waves × latency; calls in flight together share a wave."""
    wave_of: dict[int, int] = {}
    ends = sorted((end, i) for i, (_, end) in enumerate(intervals))
    ended_max, j = 0, 0
    for start, i in sorted((start, i) for i, (start, _) in enumerate(intervals)):
        while j < len(ends) and ends[j][0] <= start:  # those started earlier, so have a wave
            ended_max = max(ended_max, wave_of[ends[j][1]])
            j += 1
        wave_of[i] = ended_max + 1
    return max(wave_of.values(), default=0)


class _Limited(ClientWrapper):
    def __init__(self, inner: LLMClient, limit: InFlightLimit) -> None:
        super().__init__(inner)
        self.limit = limit

    async def complete(self, request: LLMRequest) -> Completion:
        async with self.limit.slot():
            if self.limit.closed is not None:
                raise self.limit.closed
            start = time.monotonic()
            try:
                return await self.inner.complete(request)
            finally:
                self.limit._intervals.append((start, time.monotonic()))
