"""One contract, every client: what metrics and the optimizer rely on from an LLMClient."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from promptevolver.llm import CachedLLM, OpenAIClient, ScriptedLLM, SimulatedJudgeLLM
from promptevolver.llm.base import ChatMessage, Completion, LLMClient, LLMRequest, Usage
from promptevolver.testing import LocalOpenAIServer

KEY = "sk-contract-9f8e7d6c5b4a"

Factory = Callable[[], Any]


def echo(request: LLMRequest) -> str:
    return "echo " + request.messages[-1].content


@pytest.fixture
def server() -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(lambda body: "echo " + body["messages"][-1]["content"]) as srv:
        yield srv


@pytest.fixture(params=["scripted", "simulated", "openai", "cached"])
def make(
    request: pytest.FixtureRequest, server: LocalOpenAIServer, tmp_path: Path, ac_dataset: Any
) -> Factory:
    kind = request.param
    factories: dict[str, Factory] = {
        "scripted": lambda: ScriptedLLM(handler=echo),
        "simulated": lambda: SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0),
        "openai": lambda: OpenAIClient(model="m", base_url=server.base_url, api_key=KEY, max_concurrency=4),
        "cached": lambda: CachedLLM(inner=ScriptedLLM(handler=echo), path=tmp_path / "c.sqlite"),
    }
    return factories[kind]


def req(i: int, operation: str = "judge") -> LLMRequest:
    return LLMRequest(messages=(ChatMessage("user", f"question {i}"),), operation=operation)


def run(client: Any, requests: list[LLMRequest]) -> list[Completion]:
    async def main() -> list[Completion]:
        async with client:
            return list(await asyncio.gather(*(client.complete(r) for r in requests)))

    return asyncio.run(main())


def test_is_an_llm_client(make: Factory) -> None:
    client = make()
    assert isinstance(client, LLMClient) and isinstance(client.usage, Usage)


def test_answers_are_completions_in_request_order(make: Factory) -> None:
    client = make()
    answers = run(client, [req(i) for i in range(12)])
    assert all(isinstance(a, Completion) and isinstance(a.text, str) for a in answers)
    assert all(a.prompt_tokens >= 0 and a.completion_tokens >= 0 for a in answers)
    if not isinstance(client, SimulatedJudgeLLM):  # it answers unknown prompts with an error object
        assert [a.text for a in answers] == [f"echo question {i}" for i in range(12)]


def test_usage_counts_each_call_by_operation_and_supports_differences(make: Factory) -> None:
    client = make()
    before = client.usage.copy()
    run(client, [req(1), req(2, "rewrite"), req(3, "feedback")])
    spent = client.usage - before
    assert spent.calls_by_operation == {"judge": 1, "rewrite": 1, "feedback": 1}
    assert (spent.judge_calls, spent.meta_calls) == (1, 2)
    assert spent.retries == spent.failures == spent.cache_hits == 0


def test_a_client_outlives_event_loops(make: Factory) -> None:
    client = make()
    run(client, [req(1)])
    run(client, [req(2)])
    assert client.usage.total_calls == 2


def test_repr_hides_secrets(make: Factory) -> None:
    assert KEY not in repr(make())
