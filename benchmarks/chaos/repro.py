"""Minimal reproductions of the problems the chaos benchmark found (``results/chaos.md``, Findings).

Each prints what an uninterrupted run reports, what the resumed run reports and what was really
spent or drawn, and ends with ``PROBLEM`` or ``ok``::

    python -m benchmarks.chaos.repro [cost] [retries] [final-choice]

In-process and on the simulated judge (``retries`` over real HTTP to a local server), with an
interruption raised from the optimizer's ``llm_call`` event as the tests do: a few seconds each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.errors import LLMUnusableError
from promptevolver.llm import OpenAIClient, SimulatedJudgeLLM
from promptevolver.llm.pricing import Price
from promptevolver.optimizers import OptimizationResult
from promptevolver.optimizers.events import Event
from promptevolver.simulation.synthetic import SyntheticSpec, generate
from promptevolver.testing import LocalOpenAIServer, simulated_handler

DATASET = generate(SyntheticSpec(n_samples=200, random_seed=0))
PRICE = Price(prompt=1.0, completion=4.0)


def _metric() -> AspectCritic:
    return AspectCritic(name=DATASET.name, definition="Is the response correct compared with the reference?")


def _interrupt_at(calls: int | None) -> Callable[[Event], None]:
    seen = [0]

    def interrupt(event: Event) -> None:
        if event.kind == "llm_call":
            seen[0] += 1
            if seen[0] == calls:
                raise KeyboardInterrupt

    return interrupt


def session(
    config: dict[str, Any], run_dir: str | None = None, *, resume: bool = False, stop_at: int | None = None
) -> tuple[OptimizationResult | None, float]:
    """One run or resume on the priced simulated judge: its result (None if interrupted) and what
    its client really spent in USD."""
    llm = SimulatedJudgeLLM(dataset=DATASET, random_seed=0, price=PRICE)
    optimizer = GeneticOptimizer(metric=_metric(), llm=llm, callbacks=[_interrupt_at(stop_at)])
    try:
        result = optimizer.optimize(DATASET, BinaryMetricLoss(), config, run_dir=run_dir, resume=resume)
    except KeyboardInterrupt:
        result = None
    return result, llm.usage.cost_usd


def cost() -> bool:
    """Problem 1: cost lost on resume; ``max_cost_usd`` exceeded across resumes."""
    clean, _ = session({"random_seed": 0})
    assert clean is not None
    run_dir = tempfile.mkdtemp()
    _, paid = session({"random_seed": 0}, run_dir, stop_at=700)
    resumed, more = session({"random_seed": 0}, run_dir, resume=True)
    assert resumed is not None
    print(
        f"cost: uninterrupted usage.cost_usd {clean.usage['cost_usd']:.6f}; interrupted at call 700 and "
        f"resumed: usage.cost_usd {resumed.usage['cost_usd']:.6f}, paid {paid + more:.6f} "
        f"(calls {sum(resumed.usage['llm_calls'].values())} vs {sum(clean.usage['llm_calls'].values())})"
    )
    limit = round(0.6 * clean.usage["cost_usd"], 6)
    config = {"random_seed": 0, "budget": {"max_cost_usd": limit}}
    run_dir, paid, result = tempfile.mkdtemp(), 0.0, None
    for stop_at in (150, 150, 150, 150, None):
        result, spent = session(config, run_dir, resume=paid > 0, stop_at=stop_at)
        paid += spent
        if result is not None:
            break
    assert result is not None
    print(
        f"cost: max_cost_usd {limit} with 4 interruptions: paid {paid:.6f}, usage.cost_usd "
        f"{result.usage['cost_usd']:.6f}, stop_reason {result.stop_reason}"
    )
    return abs(resumed.usage["cost_usd"] - clean.usage["cost_usd"]) > 1e-9 or paid > limit


def final_choice() -> bool:
    """Problem 3: a resume after the last checkpoint draws the final choice again."""
    run_dir = tempfile.mkdtemp()
    first, _ = session({"random_seed": 0}, run_dir)
    again, _ = session({"random_seed": 0}, run_dir, resume=True)
    assert first is not None and again is not None

    def drawn(r: OptimizationResult) -> list[float]:
        return [f["p_better"] for f in r.final_choice["finalists"]]

    print(f"final-choice: p_better {drawn(first)} → {drawn(again)} after --resume of the finished run")
    return drawn(first) != drawn(again)


def retries() -> bool:
    """Problem 2: the interrupted step's retries are missing from ``usage.retries`` after a resume."""
    small = generate(SyntheticSpec(n_samples=60, random_seed=0))
    answer = simulated_handler(SimulatedJudgeLLM(dataset=small, random_seed=1))
    state, lock = {"failing": True, "failed": 0}, threading.Lock()

    def handler(body: dict[str, Any]) -> str:
        if state["failing"]:
            with lock:
                state["failed"] += 1
            raise RuntimeError("down")  # answered 500
        return answer(body)

    async def optimize(url: str, run_dir: str, resume: bool) -> OptimizationResult:
        client = OpenAIClient(
            model="sim", base_url=url, api_key="k", max_attempts=3, retry_initial_s=0.001, retry_max_s=0.01
        )
        async with client as llm:
            metric = AspectCritic(name=small.name, definition="Is the response correct?")
            return await GeneticOptimizer(metric=metric, llm=llm).aoptimize(
                dataset=small,
                loss=BinaryMetricLoss(),
                config={"random_seed": 0},
                run_dir=run_dir,
                resume=resume,
            )

    run_dir = tempfile.mkdtemp()
    with LocalOpenAIServer(handler, models=["sim"]) as server:
        with contextlib.suppress(LLMUnusableError):  # the run stops: the server fails every call
            asyncio.run(optimize(server.base_url, run_dir, False))
        state["failing"] = False
        usage = asyncio.run(optimize(server.base_url, run_dir, True)).usage
    expected = state["failed"] - usage["failures"]
    print(
        f"retries: the server failed {state['failed']} requests = {usage['failures']} given-up calls "
        f"(usage.failures) + {expected} retries; usage.retries says {usage['retries']}"
    )
    return usage["retries"] != expected


CASES = {"cost": cost, "retries": retries, "final-choice": final_choice}


def main(names: list[str]) -> None:
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # tasks left by the interruptions
    sys.unraisablehook = lambda _: None
    for name in names or list(CASES):
        print(f"{name}: {'PROBLEM' if CASES[name]() else 'ok'}")


if __name__ == "__main__":
    main(sys.argv[1:])
