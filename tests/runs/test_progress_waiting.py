"""Issue 24, item 10: a long retry backoff (a 429 storm) gives a progress line, over real HTTP."""

from __future__ import annotations

import asyncio

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.llm import OpenAIClient, SimulatedJudgeLLM
from promptevolver.llm._retry import LONG_WAIT_S
from promptevolver.optimizers.strategies._failures import ServerWatch
from promptevolver.runs.progress import CallProgress
from promptevolver.simulation.synthetic import SyntheticSpec, generate
from promptevolver.testing import Fault, LocalOpenAIServer, simulated_handler


async def _no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


def test_a_long_backoff_is_told_and_a_short_one_is_not():
    told: list[tuple[float, int, str]] = []
    watch = ServerWatch(on_dead=lambda *a: None, on_wait=lambda *a: told.append(a))

    async def main() -> None:
        from promptevolver.errors import TransientLLMError

        watch.attempted(TransientLLMError("slow down", status=429))
        await watch.pause(LONG_WAIT_S - 0.5, _no_wait)
        await watch.pause(LONG_WAIT_S + 20, _no_wait)

    asyncio.run(main())
    assert told == [(LONG_WAIT_S + 20, 1, "http 429")]


def test_a_429_storm_gives_waiting_lines_in_the_run_progress():
    dataset = generate(SyntheticSpec(n_samples=40, random_seed=0))
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=0))
    lines: list[str] = []
    with LocalOpenAIServer(handler, models=["sim"]) as server:
        server.inject(*[Fault.rate_limit(retry_after=20)] * 3)
        llm = OpenAIClient(
            model="sim", base_url=server.base_url, api_key="sk-t", retry_max_s=60, max_concurrency=1
        )
        llm.sleep = _no_wait  # the 20 s waits are told, not spent
        metric = AspectCritic(
            name=dataset.name, definition="Is the response correct compared with the reference?"
        )
        progress = CallProgress(bar=False, write=lines.append, interval_s=3600)
        GeneticOptimizer(metric=metric, llm=llm, callbacks=[progress]).optimize(
            dataset, BinaryMetricLoss(), {"population_size": 2, "generations": 0, "reverse_engineer": False}
        )
    waits = [line for line in lines if "before a retry" in line]
    assert waits and "waiting 20 s before a retry after http 429 (1 calls in backoff)" in waits[0]
    assert len(waits) == 1  # one line per interval_s, not one per wait
