"""Reliability through real HTTP: a failed evaluation is never a verdict, a broken LLM stops the
run with its cause, and a resume repeats no answered call (with the journal, without a cache)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, SingleMetricAnnotation
from promptevolver.errors import LLMUnusableError
from promptevolver.llm import OpenAIClient, SimulatedJudgeLLM
from promptevolver.optimizers import OptimizationResult
from promptevolver.optimizers.events import Event
from promptevolver.simulation.synthetic import SyntheticSpec, generate
from promptevolver.testing import LocalOpenAIServer, simulated_handler

CONFIG = {"strategy": "genetic", "population_size": 4, "generations": 3, "random_seed": 5, "patience": 5}


def _key(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class Flaky:
    """The simulated judge behind a server that can fail: counts answered bodies by key."""

    def __init__(self, dataset: SingleMetricAnnotation) -> None:
        self.answer = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=1, noise=0.0))
        self.lock = threading.Lock()
        self.answered: Counter[str] = Counter()
        self.failing = False  # every judge call fails with a 500
        self.fail_every = 0  # fail the n-th, 2n-th, ... request of each body (0: never)
        self.seen: Counter[str] = Counter()
        self.in_flight = 0
        self.bodies: dict[str, dict[str, Any]] = {}

    def __call__(self, body: dict[str, Any]) -> str:
        key = _key(body)
        with self.lock:
            self.seen[key] += 1
            self.in_flight += 1
            nth = self.seen[key]
        try:
            return self._answer(body, key, nth)
        finally:
            with self.lock:
                self.in_flight -= 1

    def settle(self, timeout_s: float = 10.0) -> None:
        """Wait until no request is being answered (those in flight at an interrupt finish)."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)

    def _answer(self, body: dict[str, Any], key: str, nth: int) -> str:
        judge = "verdict" in json.dumps(body.get("response_format") or {})
        if (self.failing and judge) or (self.fail_every and nth % self.fail_every == 1):
            raise RuntimeError("upstream model crashed")
        text = self.answer(body)
        with self.lock:
            self.answered[key] += 1
            self.bodies[key] = body
        return text


def _client(server: LocalOpenAIServer) -> OpenAIClient:
    return OpenAIClient(
        model="sim",
        base_url=server.base_url,
        api_key="sk-test-rel",
        max_attempts=2,
        retry_initial_s=0.001,
        retry_max_s=0.01,
        timeout_s=5.0,
    )


def _optimize(
    server: LocalOpenAIServer,
    dataset: SingleMetricAnnotation,
    metric: AspectCritic,
    run_dir: Path | None,
    *,
    resume: bool = False,
    callbacks: tuple[Any, ...] = (),
    config: dict[str, Any] | None = None,
) -> OptimizationResult:
    async def main() -> OptimizationResult:
        async with _client(server) as llm:
            optimizer = GeneticOptimizer(metric=metric, llm=llm, callbacks=list(callbacks))
            return await optimizer.aoptimize(
                dataset=dataset,
                loss=BinaryMetricLoss(),
                config=config or CONFIG,
                run_dir=run_dir,
                resume=resume,
            )

    return asyncio.run(main())


def test_a_server_failing_every_judge_call_stops_the_run_with_its_cause(ac_dataset, ac_metric, tmp_path):
    flaky = Flaky(ac_dataset)
    flaky.failing = True
    with LocalOpenAIServer(flaky, models=["sim"]) as server, pytest.raises(LLMUnusableError) as stop:
        _optimize(server, ac_dataset, ac_metric, tmp_path)
    message = str(stop.value)
    assert "the seed's train evaluation" in message and "dominant cause http 500" in message
    assert "sk-test-rel" not in message
    assert stop.value.failures > 0.2 * stop.value.attempted
    assert (tmp_path / "checkpoint.json").is_file() and not (tmp_path / "result.json").exists()


def test_after_the_server_recovers_resume_completes_and_repeats_no_answered_call(
    ac_dataset, ac_metric, tmp_path
):
    flaky = Flaky(ac_dataset)
    flaky.failing = True
    with LocalOpenAIServer(flaky, models=["sim"]) as server:
        with pytest.raises(LLMUnusableError):
            _optimize(server, ac_dataset, ac_metric, tmp_path)
        before = Counter(flaky.answered)
        flaky.failing = False
        resumed = _optimize(server, ac_dataset, ac_metric, tmp_path, resume=True)
    with LocalOpenAIServer(Flaky(ac_dataset), models=["sim"]) as clean_server:
        clean = _optimize(clean_server, ac_dataset, ac_metric, None)
    assert dict(resumed) == dict(clean) and resumed.scores == clean.scores
    again = [
        flaky.bodies[k]["messages"][-1]["content"][:300] for k in before if flaky.answered[k] > before[k]
    ]
    assert before and again == []  # nothing answered before the stop was asked again
    assert sum(resumed.usage["llm_calls"].values()) == sum(flaky.answered.values())


class InterruptAt:
    """Sends this process SIGINT (Ctrl-C) at the ``n``-th train evaluation event of
    ``generation``: ``asyncio.run`` cancels the run's task and raises KeyboardInterrupt, as it
    does for a user (a KeyboardInterrupt raised inside a task would skip the cancellation and
    leave the coroutine to be closed after its loop)."""

    def __init__(self, generation: int, n: int = 1) -> None:
        self.generation, self.n, self.count = generation, n, 0

    def __call__(self, event: Event) -> None:
        if event.kind == "candidate_evaluated" and event.generation == self.generation:
            self.count += 1
            if self.count == self.n:
                signal.raise_signal(signal.SIGINT)


@pytest.fixture(scope="module")
def synthetic() -> tuple[SingleMetricAnnotation, AspectCritic]:
    # 80 samples: every generation judges offspring (on 60 the careful simulated engineer has
    # written every general rule by generation 1, and the search ends with nothing to judge)
    dataset = generate(SyntheticSpec(n_samples=80, random_seed=0))
    return dataset, AspectCritic(
        name=dataset.name, definition="Is the response correct compared with the reference?"
    )


@pytest.mark.parametrize("generation", [0, 1, 2])
def test_an_interrupted_run_resumes_without_repeating_an_answered_call(synthetic, tmp_path, generation):
    dataset, metric = synthetic
    flaky = Flaky(dataset)
    with LocalOpenAIServer(flaky, models=["sim"]) as server:
        with pytest.raises(KeyboardInterrupt):
            _optimize(server, dataset, metric, tmp_path, callbacks=(InterruptAt(generation, 1),))
        flaky.settle()  # the requests in flight at the interrupt are answered (to nobody)
        before = Counter(flaky.answered)
        resumed = _optimize(server, dataset, metric, tmp_path, resume=True)
    with LocalOpenAIServer(Flaky(dataset), models=["sim"]) as clean_server:
        clean = _optimize(clean_server, dataset, metric, None)
    assert len(clean.history) > generation  # the interruption hit a generation that runs
    assert dict(resumed) == dict(clean) and resumed.scores == clean.scores
    # every call the server answered, the interrupted step's included, is reported once — except
    # those in flight at the interrupt, whose answers never reached the client (at most one per
    # slot). Only those may be asked again: an answer that reached the journal never is, so the
    # repeats cannot outnumber the answers lost in flight.
    lost = sum(flaky.answered.values()) - sum(resumed.usage["llm_calls"].values())
    again = sum(flaky.answered[k] - before[k] for k in before)
    assert before and 0 <= again <= lost <= 16
    # answers replayed from the journal take no slot and are no round of calls: the resumed run's
    # waves stay those of the calls it made (each replayed answer counted as a wave before)
    waves = [(h["waves"], c["waves"]) for h, c in zip(resumed.history, clean.history, strict=True)]
    assert all(mine <= theirs + 4 for mine, theirs in waves), waves
    assert resumed.usage["llm_calls"] == clean.usage["llm_calls"]


def test_transient_failures_are_retried_and_never_counted_as_verdicts(ac_dataset, ac_metric):
    flaky = Flaky(ac_dataset)
    flaky.fail_every = 3  # the first attempt of every body fails once in three cycles
    with LocalOpenAIServer(flaky, models=["sim"]) as server:
        faulty = _optimize(server, ac_dataset, ac_metric, None)
    with LocalOpenAIServer(Flaky(ac_dataset), models=["sim"]) as clean_server:
        clean = _optimize(clean_server, ac_dataset, ac_metric, None)
    assert faulty.usage["retries"] > 0
    assert dict(faulty) == dict(clean) and faulty.scores == clean.scores
