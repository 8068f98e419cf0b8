"""OpenAIClient against a real local HTTP server (no SDK mocking)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from promptevolver.errors import ConfigError, PermanentLLMError, TransientLLMError
from promptevolver.llm._base import ChatMessage, Completion, LLMRequest
from promptevolver.llm.openai import OpenAIClient, retry_after_s
from promptevolver.testing import Fault, LocalOpenAIServer

KEY = "sk-test-SECRET-0123456789abcdef"
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


def echo_handler(body: dict[str, Any]) -> str:
    return "answer to: " + str(body["messages"][-1]["content"])


@pytest.fixture
def server() -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(echo_handler) as srv:
        yield srv


def make_client(server: LocalOpenAIServer, **kwargs: Any) -> OpenAIClient:
    options: dict[str, Any] = {
        "model": "test-model",
        "base_url": server.base_url,
        "api_key": KEY,
        "timeout_s": 2.0,
        "max_attempts": 3,
        "retry_initial_s": 0.001,
        "retry_max_s": 0.05,
    }
    options.update(kwargs)
    return OpenAIClient(**options)


def request(text: str = "hello there", **kwargs: Any) -> LLMRequest:
    messages = (ChatMessage("system", "You judge."), ChatMessage("user", text))
    return LLMRequest(messages=messages, **kwargs)


def run(client: OpenAIClient, *requests: LLMRequest) -> list[Completion]:
    async def main() -> list[Completion]:
        async with client:
            return [await client.complete(r) for r in requests]

    return asyncio.run(main())


def run_one(client: OpenAIClient, req: LLMRequest) -> Completion:
    return run(client, req)[0]


def test_plain_answer_and_token_usage(server: LocalOpenAIServer) -> None:
    client = make_client(server)
    completion = run_one(client, request("hello there"))
    assert completion.text == "answer to: hello there"
    assert (completion.prompt_tokens, completion.completion_tokens) == (4, 4)
    assert client.usage.prompt_tokens == 4 and client.usage.completion_tokens == 4
    assert client.usage.retries == 0 and client.usage.failures == 0


def test_request_fields_reach_the_server(server: LocalOpenAIServer) -> None:
    client = make_client(server)
    run(client, request("a", temperature=0.7, seed=42, max_tokens=17), request("b"))
    full, bare = server.requests
    assert full["model"] == "test-model"
    assert full["messages"] == [
        {"role": "system", "content": "You judge."},
        {"role": "user", "content": "a"},
    ]
    assert (full["temperature"], full["seed"], full["max_tokens"]) == (0.7, 42, 17)
    assert bare["temperature"] == 0.0
    assert "seed" not in bare and "response_format" not in bare
    assert bare["max_tokens"] == client.judge_max_tokens == 256  # judge calls are capped by default


def test_api_key_sent_as_bearer_but_never_shown(server: LocalOpenAIServer) -> None:
    client = make_client(server)
    run_one(client, request())
    assert server.authorization_headers == [f"Bearer {KEY}"]
    assert KEY not in repr(client) and KEY not in str(client)
    assert "test-model" in repr(client) and server.base_url in repr(client)

    server.inject(Fault.error(401, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(PermanentLLMError) as info:
        run_one(client, request())
    assert info.value.status == 401
    assert KEY not in str(info.value) and "sk-test" not in str(info.value)
    assert "Incorrect API key provided" in str(info.value)


def test_env_key_fallback_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert OpenAIClient(model="m")._api_key == KEY
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIClient(model="m")


def test_rate_limit_with_retry_after_is_retried(server: LocalOpenAIServer) -> None:
    server.inject(Fault.rate_limit(retry_after=0.01), Fault.rate_limit(retry_after=0.01))
    client = make_client(server)
    assert run_one(client, request("x")).text == "answer to: x"
    assert client.usage.retries == 2 and client.usage.failures == 0
    assert len(server.requests) == 3


def test_rate_limit_error_carries_retry_after(server: LocalOpenAIServer) -> None:
    server.inject(Fault.rate_limit(retry_after=0.02))
    client = make_client(server, max_attempts=1)
    with pytest.raises(TransientLLMError) as info:
        run_one(client, request())
    assert (info.value.status, info.value.retry_after) == (429, 0.02)


@pytest.mark.parametrize("status", [500, 503, 408])
def test_server_error_is_retried(server: LocalOpenAIServer, status: int) -> None:
    server.inject(Fault.server_error(status))
    client = make_client(server)
    assert run_one(client, request("y")).text == "answer to: y"
    assert client.usage.retries == 1


def test_timeout_is_retried(server: LocalOpenAIServer) -> None:
    server.inject(Fault.delay(1.0))
    client = make_client(server, timeout_s=0.2)
    start = time.perf_counter()
    assert run_one(client, request("z")).text == "answer to: z"
    assert time.perf_counter() - start < 0.9
    assert client.usage.retries == 1


@pytest.mark.parametrize(
    "fault",
    [Fault.drop_connection(), Fault.malformed_body(), Fault.malformed_body(content_type="text/html")],
)
def test_dropped_connection_and_malformed_body_are_retried(server: LocalOpenAIServer, fault: Fault) -> None:
    server.inject(fault)
    client = make_client(server)
    assert run_one(client, request("w")).text == "answer to: w"
    assert client.usage.retries == 1 and client.usage.failures == 0


def test_permanent_error_is_not_retried(server: LocalOpenAIServer) -> None:
    server.inject(Fault.error(400, "Invalid value for 'temperature'."))
    client = make_client(server)
    with pytest.raises(PermanentLLMError) as info:
        run_one(client, request())
    assert info.value.status == 400 and "temperature" in str(info.value)
    assert client.usage.retries == 0 and client.usage.failures == 1
    assert len(server.requests) == 1


def test_transient_failures_exhaust_attempts(server: LocalOpenAIServer) -> None:
    server.inject(*[Fault.server_error(502)] * 3)
    client = make_client(server, max_attempts=3)
    with pytest.raises(TransientLLMError) as info:
        run_one(client, request())
    assert info.value.status == 502
    assert client.usage.retries == 2 and client.usage.failures == 1
    assert client.usage.total_calls == 0


def test_json_schema_sends_response_format(server: LocalOpenAIServer) -> None:
    client = make_client(server)
    run_one(client, request(json_schema=SCHEMA))
    assert server.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA},
    }


def test_structured_output_off_sends_no_response_format(server: LocalOpenAIServer) -> None:
    client = make_client(server, structured_output=False)
    run_one(client, request(json_schema=SCHEMA))
    assert "response_format" not in server.requests[0]


def test_rejected_response_format_falls_back_and_is_remembered(server: LocalOpenAIServer) -> None:
    server.inject(Fault.reject_response_format())
    client = make_client(server)
    first, second = run(client, request("p", json_schema=SCHEMA), request("q", json_schema=SCHEMA))
    assert (first.text, second.text) == ("answer to: p", "answer to: q")
    sent = [r.get("response_format", {}).get("type") for r in server.requests]
    assert sent == ["json_schema", "json_object", "json_object"]
    assert client.structured_output_mode == "json_object"
    assert client.usage.retries == 0 and client.usage.failures == 0


def test_server_without_response_format_support() -> None:
    with LocalOpenAIServer(echo_handler, supports_response_format=False) as srv:
        client = make_client(srv)
        assert run_one(client, request("r", json_schema=SCHEMA)).text == "answer to: r"
        assert ["response_format" in r for r in srv.requests] == [True, True, False]
        assert client.structured_output_mode == "prompt"


def test_calls_counted_by_operation(server: LocalOpenAIServer) -> None:
    client = make_client(server)
    run(client, request(), request(), request(operation="rewrite"), request(operation="feedback"))
    assert client.usage.calls_by_operation == {"judge": 2, "rewrite": 1, "feedback": 1}
    assert (client.usage.judge_calls, client.usage.meta_calls) == (2, 2)


def test_concurrent_calls_and_reuse_across_event_loops(server: LocalOpenAIServer) -> None:
    client = make_client(server, max_concurrency=4)

    async def many() -> list[Completion]:
        async with client:
            return await asyncio.gather(*(client.complete(request(f"n{i}")) for i in range(12)))

    assert [c.text for c in asyncio.run(many())] == [f"answer to: n{i}" for i in range(12)]
    assert run_one(client, request("again")).text == "answer to: again"
    assert client.usage.total_calls == 13


def test_retry_after_parsing() -> None:
    assert retry_after_s({"retry-after": "2"}) == 2.0
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None
    date = "Wed, 21 Oct 2015 07:28:00 GMT"  # in the past: no wait
    assert retry_after_s({"retry-after": date}) == 0.0


def test_the_base_client_options_pass_through_with_the_bases_defaults() -> None:
    from promptevolver.llm._base import BaseLLMClient, ClientOptions

    class Plain(BaseLLMClient):
        async def _send(self, request: LLMRequest) -> Completion:
            raise AssertionError("no call")

    default, plain = OpenAIClient(model="m", api_key="k"), Plain()
    for option in ClientOptions.__annotations__:
        if option not in ("requests_per_minute", "tokens_per_minute"):  # held by the throttle
            assert getattr(default, option) == getattr(plain, option), option
    given = OpenAIClient(model="m", api_key="k", max_attempts=2, retry_max_s=1.5, max_concurrency=3)
    assert (given.max_attempts, given.retry_max_s, given.max_concurrency) == (2, 1.5, 3)
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIClient(model="m", api_key="k", max_concurrency=0)
    with pytest.raises(TypeError):
        OpenAIClient(model="m", api_key="k", max_concurrence=3)  # type: ignore[call-arg]
