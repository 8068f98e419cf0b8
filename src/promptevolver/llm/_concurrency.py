"""One cap on LLM requests in flight, shared by every client of a run.

:class:`InFlightLimit` holds ``limit`` slots (:class:`FairSlots`); :meth:`InFlightLimit.wrap`
returns a client that takes one of them for each request. Wrap the judge and the reflection
client of a run with the same limit and the server never sees more than ``limit`` requests of
that run at once, however many candidates are judged together and however many calls one
evaluation makes. Users set it to
stay under a provider's concurrency limit (``llm.max_concurrency`` in a run config).

It is the run's one concurrency limit: every phase of a run (judge calls of the evaluator, meta
calls of the operators and the distillation) sends through the clients it wraps. A job of several
metrics (:mod:`promptevolver.runs.many`) makes one and gives each metric's run a
:meth:`~InFlightLimit.share` of it: one set of slots for all, so a slot an idle metric does not use
goes to the others, while each run keeps its own stop switch (:meth:`~InFlightLimit.close`) and
its own record of calls (:meth:`~InFlightLimit.take_intervals`).

The shares take turns: a slot that frees goes to the share with the fewest requests in flight
among those waiting (ties: the one served least recently), not to whichever request queued
first. A metric's one sequential call (a meta call of its distillation or cross-fit stage)
therefore waits for one slot to free, not behind another metric's whole queued population of
judge calls; one run alone gets its slots first come, first served, as with a plain semaphore.
Measured with judgeworld in docs/many-metrics.md ("With the judge out of process").
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque

from promptevolver.errors import LLMError
from promptevolver.llm._base import Completion, LLMClient, LLMRequest
from promptevolver.llm._wrapper import ClientWrapper

__all__ = ["FairSlots", "InFlightLimit", "checked_limit", "waves"]


def checked_limit(limit: int) -> int:
    """``limit``, requests in flight at once (the ``max_concurrency`` setting). Raises ValueError
    below 1."""
    if limit < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {limit}")
    return limit


class InFlightLimit:
    """At most ``limit`` requests in flight through the clients it wraps (≥ 1).

    The slots are made for the running event loop on first use (clients outlive one
    ``asyncio.run``).

    Raises:
        ValueError: ``limit`` < 1.
    """

    def __init__(self, limit: int) -> None:
        self.limit = checked_limit(limit)
        self._slots: dict[int, FairSlots] = {}
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

    def slots(self) -> FairSlots:
        """The slots of the running event loop (the shared ones, for a :meth:`share`)."""
        if self._parent is not None:
            return self._parent.slots()
        loop = id(asyncio.get_running_loop())
        if loop not in self._slots:
            self._slots = {loop: FairSlots(self.limit)}
        return self._slots[loop]

    def wrap(self, client: LLMClient) -> LLMClient:
        """``client`` behind this limit (its usage is the wrapped client's)."""
        return _Limited(client, self)


class FairSlots:
    """``limit`` slots taken in turns by several owners (the shares of one limit), on one event loop.

    A free slot goes at once to a request when no one waits; otherwise requests wait, and each slot
    that frees goes to the owner with the fewest slots held among those waiting (ties: the owner
    given a slot least recently, then the one whose oldest waiting request came first). One owner
    alone is served first come, first served.

    Raises:
        ValueError: ``limit`` < 1.
    """

    def __init__(self, limit: int) -> None:
        self.limit = checked_limit(limit)
        self.free = limit
        #: owner → slots it holds (owners with none are dropped).
        self.held: dict[int, int] = {}
        self._waiting: dict[int, deque[tuple[int, asyncio.Future[None]]]] = {}
        #: owner → when it was last given a slot (on the same counter as the waiting order).
        self._granted: dict[int, int] = {}
        self._order = itertools.count()

    def in_flight(self, owner: object) -> int:
        """Slots ``owner`` holds."""
        return self.held.get(id(owner), 0)

    def waiting(self, owner: object) -> int:
        """Requests of ``owner`` waiting for a slot."""
        return len(self._waiting.get(id(owner), ()))

    async def acquire(self, owner: object) -> None:
        """Wait for a slot for ``owner`` (any object, told apart by identity; :meth:`release` the
        slot after). A request cancelled while waiting takes no slot; one cancelled after its slot
        was granted passes the slot on."""
        key = id(owner)
        if self.free > 0 and not self._waiting:
            self._take(key)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, deque()).append((next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted, then cancelled: pass it on
                self.release(owner)
            else:
                self._forget(key, future)
            raise

    def release(self, owner: object) -> None:
        """Give back one slot ``owner`` holds; it goes to the next waiter in turn."""
        key = id(owner)
        self.held[key] -= 1
        if not self.held[key]:
            del self.held[key]
        self.free += 1
        self._wake()

    def _turn(self, key: int) -> tuple[int, int, int]:
        return (self.held.get(key, 0), self._granted.get(key, -1), self._waiting[key][0][0])

    def _take(self, key: int) -> None:
        self.free -= 1
        self.held[key] = self.held.get(key, 0) + 1
        self._granted[key] = next(self._order)

    def _forget(self, key: int, future: asyncio.Future[None]) -> None:
        queue = self._waiting.get(key)
        if queue is None:
            return
        kept = deque(item for item in queue if item[1] is not future)
        if kept:
            self._waiting[key] = kept
        else:
            del self._waiting[key]
        self._wake()

    def _wake(self) -> None:
        while self.free > 0 and self._waiting:
            key = min(self._waiting, key=self._turn)
            queue = self._waiting[key]
            _, future = queue.popleft()
            if not queue:
                del self._waiting[key]
            if future.done():  # cancelled while waiting
                continue
            self._take(key)
            future.set_result(None)


def waves(intervals: list[tuple[float, float]]) -> int:
    """The longest chain of calls that had to wait for one another: a call's wave is one more than
    the highest wave among the calls that had ended before it started (and had started before
    it: a call of no duration that began at the same instant did not hold it up). With a fixed
    latency per call, wall time ≈ waves × latency; calls in flight together share a wave.

    ``intervals``: (start, end) of each call, in seconds on one clock; an end before its start (a
    clock stepping back) is taken as the start.
    """
    spans = [(start, max(start, end)) for start, end in intervals]
    by_end = sorted(range(len(spans)), key=lambda k: spans[k][1])
    wave_of: dict[int, int] = {}
    ended_max, j, waiting = 0, 0, list[int]()
    for i in sorted(range(len(spans)), key=lambda k: spans[k][0]):
        start = spans[i][0]
        while j < len(by_end) and spans[by_end[j]][1] <= start:
            waiting.append(by_end[j])
            j += 1
        began_with_it = []
        for k in waiting:
            if spans[k][0] < start:  # began earlier, so it has its wave
                ended_max = max(ended_max, wave_of[k])
            else:
                began_with_it.append(k)
        waiting = began_with_it
        wave_of[i] = ended_max + 1
    return max(wave_of.values(), default=0)


class _Limited(ClientWrapper):
    def __init__(self, inner: LLMClient, limit: InFlightLimit) -> None:
        super().__init__(inner)
        self.limit = limit

    async def complete(self, request: LLMRequest) -> Completion:
        slots = self.limit.slots()
        await slots.acquire(self.limit)
        try:
            if self.limit.closed is not None:
                raise self.limit.closed
            start = time.monotonic()
            try:
                return await self.inner.complete(request)
            finally:
                self.limit._intervals.append((start, time.monotonic()))
        finally:
            slots.release(self.limit)
