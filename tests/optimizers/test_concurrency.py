"""``max_concurrency`` caps the run's LLM requests in flight, as a server counts them."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, SingleMetricAnnotation
from promptevolver.llm import OpenAIClient, SimulatedJudgeLLM
from promptevolver.testing import LocalOpenAIServer, simulated_handler


class CountingHandler:
    """Answers as the simulated judge, after a short wait, counting requests in flight."""

    def __init__(self, dataset: SingleMetricAnnotation) -> None:
        self.answer = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=1, noise=0.0))
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(0.01)
            return self.answer(body)
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_the_server_never_sees_more_requests_than_max_concurrency(
    ac_dataset: SingleMetricAnnotation, ac_metric: AspectCritic, limit: int
) -> None:
    handler = CountingHandler(ac_dataset)
    config = {
        "strategy": "genetic",
        "population_size": 6,
        "generations": 2,
        "random_seed": 1,
        "max_concurrency": limit,
    }

    async def run() -> None:
        with LocalOpenAIServer(handler, models=["sim"]) as server:
            client = OpenAIClient(model="sim", base_url=server.base_url, api_key="sk-x", max_concurrency=32)
            async with client:
                await GeneticOptimizer(metric=ac_metric, llm=client).aoptimize(
                    dataset=ac_dataset, loss=BinaryMetricLoss(), config=config
                )

    asyncio.run(run())
    assert handler.peak == limit  # reached (the run is concurrent) and never exceeded


def test_waves_count_the_longest_chain_of_calls_that_waited_for_each_other() -> None:
    from promptevolver.llm._concurrency import waves

    assert waves([]) == 0
    assert waves([(0, 1), (0, 1), (0.5, 1.5)]) == 1  # all in flight together
    assert waves([(0, 1), (1, 2), (2, 3)]) == 3  # one after another
    assert waves([(0, 1), (0, 1), (1, 2), (1.5, 2.5), (3, 4)]) == 3
    assert waves([(5, 5), (5, 7)]) == 1  # a call of no duration did not hold up one begun with it
    assert waves([(0, 0), (0, 0), (1, 1)]) == 2  # latency 0: zero-length calls, ties in time


@pytest.mark.slow
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(-2, 6)).map(lambda p: (float(p[0]), float(p[0] + p[1]))),
        max_size=12,
    )
)
def test_waves_take_any_trace(intervals: list[tuple[float, float]]) -> None:
    """Any trace, ties, calls of no duration and ends before starts (clocks) included: never an
    error (a latency-0 trace raised KeyError), between 1 and the number of calls, and at least
    the length of any chain of calls each starting after the previous one ended."""
    from promptevolver.llm._concurrency import waves

    n = waves(intervals)
    assert (n == 0) == (not intervals) and n <= len(intervals)
    chain, last = 0, None  # a chain of calls, each begun after the one before it had ended
    for s, e in sorted(((s, max(s, e)) for s, e in intervals), key=lambda span: span[1]):
        if last is None or (s >= last[1] and s > last[0]):
            chain, last = chain + 1, (s, e)
    assert n >= chain


# --- the shares of one limit take turns (a job of several metrics) ---------------------------------


class _Gated:
    """A client whose requests start in the order recorded in ``started`` and answer when told."""

    def __init__(self, name: str, started: list[str], gates: dict[str, asyncio.Event]) -> None:
        self.name, self.started, self.gates = name, started, gates
        from promptevolver.llm._base import Usage

        self.usage = Usage()

    async def complete(self, request: Any) -> Any:
        tag = f"{self.name}{sum(s.startswith(self.name) for s in self.started)}"
        self.started.append(tag)
        self.gates[tag] = asyncio.Event()
        await self.gates[tag].wait()
        return tag


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_freed_slot_goes_to_the_share_with_the_fewest_in_flight_not_to_the_longest_queue(
    limit: int,
) -> None:
    from promptevolver.llm._concurrency import InFlightLimit

    started: list[str] = []
    gates: dict[str, asyncio.Event] = {}
    job = InFlightLimit(limit)
    busy = job.share().wrap(_Gated("a", started, gates))  # a metric judging a population
    idle = job.share().wrap(_Gated("b", started, gates))  # a metric with one meta call

    async def run() -> list[str]:
        flood = [asyncio.create_task(busy.complete(None)) for _ in range(limit + 5)]
        await _settle()
        assert started == [f"a{i}" for i in range(limit)]  # every slot taken, 5 queued
        one = asyncio.create_task(idle.complete(None))  # queued after all of a's
        await _settle()
        gates["a0"].set()  # one slot frees
        await _settle()
        assert started[limit] == "b0"  # b's one call goes first, not a's next in line
        while not all(t.done() for t in [*flood, one]):
            for gate in list(gates.values()):
                gate.set()
            await _settle()
        return [t.result() for t in flood]

    answers = asyncio.run(run())
    assert sorted(answers) == sorted(f"a{i}" for i in range(limit + 5))  # a's all answered, in order
    assert [s for s in started if s.startswith("a")] == [f"a{i}" for i in range(limit + 5)]


def test_one_owner_alone_is_served_first_come_first_served_and_cancelled_waiters_free_nothing() -> None:
    from promptevolver.llm._concurrency import FairSlots

    async def run() -> tuple[list[int], int]:
        slots = FairSlots(1)
        owner = object()
        order: list[int] = []

        async def take(i: int) -> None:
            await slots.acquire(owner)
            order.append(i)
            await asyncio.sleep(0)
            slots.release(owner)

        await slots.acquire(owner)  # the one slot held: every take below waits
        tasks = [asyncio.create_task(take(i)) for i in range(5)]
        await _settle()
        tasks[2].cancel()  # cancelled while waiting: takes no slot, blocks no one
        slots.release(owner)
        await asyncio.gather(*tasks, return_exceptions=True)
        return order, slots.free

    order, free = asyncio.run(run())
    assert order == [0, 1, 3, 4]
    assert free == 1  # every slot back


def test_a_slot_granted_to_a_request_cancelled_before_it_ran_passes_to_the_next() -> None:
    from promptevolver.llm._concurrency import FairSlots

    async def run() -> tuple[bool, int]:
        slots = FairSlots(1)
        a, b = object(), object()
        await slots.acquire(a)
        granted = asyncio.create_task(slots.acquire(b))
        later = asyncio.create_task(slots.acquire(b))
        await _settle()
        slots.release(a)  # granted to `granted`, which is cancelled before it resumes
        granted.cancel()
        await _settle()
        return later.done(), slots.in_flight(b)

    later_done, held = asyncio.run(run())
    assert later_done and held == 1  # the slot went on to the next waiter, none leaked
