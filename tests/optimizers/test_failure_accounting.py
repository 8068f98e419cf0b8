"""Failure accounting through real HTTP: ``usage.failures`` counts each failed call and each failed
evaluation once, by cause, and its three views (total, by operation, by cause) agree."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import Counter
from typing import Any

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, SingleMetricAnnotation
from promptevolver.llm import OpenAIClient, SimulatedJudgeLLM
from promptevolver.optimizers import OptimizationResult
from promptevolver.testing import LocalOpenAIServer, simulated_handler

CONFIG = {"population_size": 4, "generations": 3, "random_seed": 5, "patience": 5, "max_failure_rate": 0.5}


class Unreliable:
    """A simulated judge whose judge calls, chosen by a hash of the question (so a re-ask of the
    same question gets the same treatment), answer non-JSON or fail with a 500 every time."""

    def __init__(self, dataset: SingleMetricAnnotation, *, malformed: int, broken: int, modulus: int) -> None:
        self.answer = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=1, noise=0.0))
        self.malformed, self.broken, self.modulus = malformed, broken, modulus
        self.lock = threading.Lock()
        self.outcomes: Counter[str] = Counter()  # kind of answer -> distinct questions asked first
        self.seen: set[str] = set()

    def __call__(self, body: dict[str, Any]) -> str:
        if "verdict" not in json.dumps(body.get("response_format") or {}):
            return self.answer(body)  # meta calls answer normally
        question = json.dumps(body["messages"][:2], sort_keys=True)
        draw = int(hashlib.sha256(question.encode()).hexdigest(), 16) % self.modulus
        kind = (
            "malformed"
            if draw < self.malformed
            else "broken"
            if draw < self.malformed + self.broken
            else "ok"
        )
        with self.lock:
            if len(body["messages"]) == 2 and question not in self.seen:  # a first ask, not a retry
                self.seen.add(question)
                self.outcomes[kind] += 1
        if kind == "broken":
            raise RuntimeError("upstream model crashed")
        return "I think the answer is fine." if kind == "malformed" else self.answer(body)


def _optimize(
    server: LocalOpenAIServer, dataset: SingleMetricAnnotation, metric: AspectCritic
) -> OptimizationResult:
    async def main() -> OptimizationResult:
        client = OpenAIClient(
            model="sim",
            base_url=server.base_url,
            api_key="sk-test-acc",
            max_attempts=2,
            retry_initial_s=0.001,
            retry_max_s=0.01,
            timeout_s=5.0,
        )
        async with client as llm:
            optimizer = GeneticOptimizer(metric=metric, llm=llm)
            # instruction-only prompts: Unreliable tells a first ask from a re-ask by its two messages
            config = {**CONFIG, "examples": {"policy": "none"}}
            return await optimizer.aoptimize(dataset=dataset, loss=BinaryMetricLoss(), config=config)

    return asyncio.run(main())


def test_parse_failures_and_failed_calls_are_each_counted_once_by_cause(ac_dataset, ac_metric):
    judge = Unreliable(ac_dataset, malformed=2, broken=1, modulus=16)
    with LocalOpenAIServer(judge, models=["sim"]) as server:
        result = _optimize(server, ac_dataset, ac_metric)
    usage = result.usage
    # every judge question answered malformed twice (asked, then re-asked) is one failed evaluation;
    # every question that always fails is one call that gave up (after its two attempts)
    assert judge.outcomes["malformed"] > 0 and judge.outcomes["broken"] > 0
    assert usage["failures_by_cause"] == {
        "parse": judge.outcomes["malformed"],
        "http 500": judge.outcomes["broken"],
    }
    assert usage["failures"] == sum(usage["failures_by_cause"].values())
    assert usage["failures_by_operation"] == {"judge": usage["failures"]}


def test_a_clean_run_reports_no_failure_by_any_cause(ac_dataset, ac_metric):
    judge = Unreliable(ac_dataset, malformed=0, broken=0, modulus=16)
    with LocalOpenAIServer(judge, models=["sim"]) as server:
        usage = _optimize(server, ac_dataset, ac_metric).usage
    assert (
        usage["failures"] == 0 and usage["failures_by_cause"] == {} and usage["failures_by_operation"] == {}
    )
