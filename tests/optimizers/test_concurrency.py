"""``max_concurrency`` caps the run's LLM requests in flight, as a server counts them."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

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
    from promptevolver.llm.concurrency import waves

    assert waves([]) == 0
    assert waves([(0, 1), (0, 1), (0.5, 1.5)]) == 1  # all in flight together
    assert waves([(0, 1), (1, 2), (2, 3)]) == 3  # one after another
    assert waves([(0, 1), (0, 1), (1, 2), (1.5, 2.5), (3, 4)]) == 3
