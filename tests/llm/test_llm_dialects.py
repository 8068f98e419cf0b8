"""Negotiation and preflight against the emulated dialects of real servers, over real HTTP.

One suite, run against every dialect in promptevolver.testing._dialects: where structured-output
negotiation ends, which token field carries the cap, that refusals cost no retries, and what
preflight says about an unknown model or a wrong key.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from promptevolver.errors import PermanentLLMError
from promptevolver.judge._aspect_critic import AspectCritic
from promptevolver.llm._base import ChatMessage, Completion, LLMRequest
from promptevolver.llm.openai import OpenAIClient
from promptevolver.testing import DIALECTS, Dialect, LocalOpenAIServer

KEY = "sk-dialect-SECRET-0123456789abcdef"
MODEL = "judge-model"
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "integer"}}, "required": ["verdict"]}
VERDICT = json.dumps({"reason": "matches the reference", "verdict": 1})


@dataclass(frozen=True)
class Expected:
    """What a dialect's server makes of our client."""

    mode: str  # structured-output mode negotiation ends in
    token_field: str  # the field that carries the cap once settled
    refusals: int  # requests refused before the first answer
    unknown_model_fails: bool  # preflight fails on an unknown model (with two models served)
    wrong_key_fails: bool  # preflight fails on a wrong key


EXPECTED = {
    "openai": Expected("json_schema", "max_tokens", 0, True, True),
    "openai-o-series": Expected("json_schema", "max_completion_tokens", 1, True, True),
    "vllm": Expected("json_schema", "max_tokens", 0, True, True),
    "ollama": Expected("json_schema", "max_tokens", 0, True, False),
    "lm-studio": Expected("json_schema", "max_tokens", 0, True, False),
    "llama-cpp-python": Expected("json_object", "max_tokens", 1, False, True),
}


def test_every_dialect_has_expectations() -> None:
    assert set(EXPECTED) == set(DIALECTS)


@pytest.fixture(params=sorted(DIALECTS))
def dialect(request: pytest.FixtureRequest) -> Dialect:
    return DIALECTS[request.param]


@pytest.fixture
def server(dialect: Dialect) -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(lambda body: VERDICT, dialect=dialect, models=[MODEL], api_key=KEY) as srv:
        yield srv


def make_client(server: LocalOpenAIServer, **kwargs: Any) -> OpenAIClient:
    options: dict[str, Any] = {
        "model": MODEL,
        "base_url": server.base_url,
        "api_key": KEY,
        "timeout_s": 5.0,
        "max_attempts": 3,
        "retry_initial_s": 0.001,
        "retry_max_s": 0.01,
    }
    return OpenAIClient(**{**options, **kwargs})


def judge_request(text: str = "is it correct?") -> LLMRequest:
    return LLMRequest((ChatMessage("system", "Judge."), ChatMessage("user", text)), json_schema=SCHEMA)


def run(client: OpenAIClient, *requests: LLMRequest) -> list[Completion]:
    async def main() -> list[Completion]:
        async with client:
            return list(await asyncio.gather(*(client.complete(r) for r in requests)))

    return asyncio.run(main())


def preflight(client: OpenAIClient) -> None:
    async def main() -> None:
        async with client:
            await client.preflight()

    asyncio.run(main())


def sent_format(body: dict[str, Any]) -> str:
    fmt = body.get("response_format")
    return "prompt" if fmt is None else str(fmt["type"])


def test_negotiation_ends_in_the_mode_the_server_takes(dialect: Dialect, server: LocalOpenAIServer) -> None:
    expected = EXPECTED[dialect.name]
    client = make_client(server)
    first, second = run(client, judge_request("a"), judge_request("b"))
    assert first.text == second.text == VERDICT
    assert client.structured_output_mode == expected.mode
    assert client.negotiation.confirmed
    assert client.negotiation.token_param == expected.token_field
    assert client.usage.retries == 0 and client.usage.failures == 0
    # one probe at a time: each refused mode was asked about once, then both answered in the final mode
    assert len(server.requests) == 2 + expected.refusals
    assert [sent_format(b) for b in server.requests[-2:]] == [expected.mode] * 2
    assert all(b[expected.token_field] == 256 for b in server.requests[-2:])


def test_the_mode_is_remembered_by_the_client(dialect: Dialect, server: LocalOpenAIServer) -> None:
    client = make_client(server)
    run(client, judge_request())
    before = len(server.requests)
    run(client, *(judge_request(f"q{i}") for i in range(5)))
    assert len(server.requests) == before + 5
    assert {sent_format(b) for b in server.requests[before:]} == {EXPECTED[dialect.name].mode}


def test_a_judge_scores_through_every_dialect(dialect: Dialect, server: LocalOpenAIServer) -> None:
    critic = AspectCritic(name="correct", definition="Is the response correct?")
    client = make_client(server)

    async def main() -> float | None:
        async with client:
            judged = await critic.ajudge({"user_input": "2+2?", "response": "4"}, llm=client)
            return judged.score

    assert asyncio.run(main()) == 1.0


def test_preflight_passes_for_the_served_model(dialect: Dialect, server: LocalOpenAIServer) -> None:
    client = make_client(server)
    preflight(client)
    assert server.get_requests == ["/v1/models"]
    assert server.requests == []  # the model is listed: no chat call needed
    preflight(client)  # once per client
    assert server.get_requests == ["/v1/models"]


def test_preflight_on_an_unknown_model(dialect: Dialect) -> None:
    expected = EXPECTED[dialect.name]
    with LocalOpenAIServer(lambda body: "OK", dialect=dialect, models=["alpha", "beta"]) as srv:
        client = make_client(srv, model="gamma")
        if not expected.unknown_model_fails:
            with pytest.warns(UserWarning, match="'gamma' is not among the models"):
                preflight(client)
            return
        with pytest.raises(PermanentLLMError) as info:
            preflight(client)
        assert str(info.value) == f"model 'gamma' not found at {srv.base_url}; the server offers: alpha, beta"
    assert len(srv.requests) == 1 and srv.requests[0]["max_tokens"] == 1


def test_preflight_on_a_wrong_key(dialect: Dialect, server: LocalOpenAIServer) -> None:
    client = make_client(server, api_key="sk-wrong-key-0000000000", api_key_source="MY_LLM_KEY")
    if not EXPECTED[dialect.name].wrong_key_fails:
        preflight(client)  # the server ignores keys
        return
    with pytest.raises(PermanentLLMError) as info:
        preflight(client)
    assert str(info.value) == f"the server at {server.base_url} rejected the API key from MY_LLM_KEY (401)"
    assert info.value.status == 401
    assert server.requests == []  # refused at GET /models, no chat call


def test_a_fixed_mode_the_server_refuses_fails_without_retries() -> None:
    with LocalOpenAIServer(lambda body: VERDICT, dialect=DIALECTS["llama-cpp-python"]) as srv:
        client = make_client(srv, structured_output="json_schema")
        with pytest.raises(PermanentLLMError) as info:
            run(client, judge_request())
    assert info.value.status == 500
    assert "refuses structured output 'json_schema'" in str(info.value)
    assert client.usage.retries == 0 and client.usage.failures == 1
    assert len(srv.requests) == 1


def test_a_fixed_mode_the_server_takes_is_sent_as_is() -> None:
    with LocalOpenAIServer(lambda body: VERDICT, dialect=DIALECTS["vllm"]) as srv:
        client = make_client(srv, structured_output="json_object")
        run(client, judge_request())
    assert srv.requests[0]["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_lm_studio_refuses_json_object_with_a_string_error() -> None:
    with LocalOpenAIServer(lambda body: VERDICT, dialect=DIALECTS["lm-studio"]) as srv:
        client = make_client(srv, structured_output="json_object")
        with pytest.raises(PermanentLLMError) as info:
            run(client, judge_request())
    assert "'response_format.type' must be 'json_schema' or 'text'" in str(info.value)


def test_many_concurrent_first_calls_probe_once() -> None:
    with LocalOpenAIServer(lambda body: VERDICT, dialect=DIALECTS["llama-cpp-python"]) as srv:
        client = make_client(srv, max_concurrency=8)
        answers = run(client, *(judge_request(f"c{i}") for i in range(12)))
    assert [a.text for a in answers] == [VERDICT] * 12
    assert [sent_format(b) for b in srv.requests].count("json_schema") == 1
    assert len(srv.requests) == 13


def test_ollama_would_ignore_max_completion_tokens() -> None:
    """Why the client starts with max_tokens: Ollama honours only that field."""
    with LocalOpenAIServer(lambda body: VERDICT, dialect=DIALECTS["ollama"]) as srv:
        client = make_client(srv)
        run(client, judge_request())
    assert "max_completion_tokens" not in srv.requests[0] and srv.requests[0]["max_tokens"] == 256
