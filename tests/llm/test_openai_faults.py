"""OpenAIClient against the local server's newer faults, and the API key kept out of sight."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptevolver import AspectCritic
from promptevolver.errors import LLMError, PermanentLLMError, TransientLLMError
from promptevolver.llm import CachedLLM, OpenAIClient
from promptevolver.llm._base import ChatMessage, Completion, LLMRequest
from promptevolver.testing import Fault, LocalOpenAIServer, request_from_body

KEY = "sk-proj-FAULTS-0a1b2c3d4e5f6a7b8c9d"
VERDICT = '{"reason": "fine", "verdict": 1}'


@pytest.fixture
def server() -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(lambda body: VERDICT) as srv:
        yield srv


def make_client(server: LocalOpenAIServer, **kwargs: Any) -> OpenAIClient:
    options: dict[str, Any] = {
        "model": "m",
        "base_url": server.base_url,
        "api_key": KEY,
        "timeout_s": 2.0,
        "max_attempts": 2,
        "retry_initial_s": 0.001,
        "retry_max_s": 0.01,
    }
    return OpenAIClient(**(options | kwargs))


def ask(client: Any, text: str = "hi") -> Completion:
    async def main() -> Completion:
        async with client:
            return await client.complete(LLMRequest(messages=(ChatMessage("user", text),)))

    return asyncio.run(main())


def test_truncated_body_is_retried(server: LocalOpenAIServer) -> None:
    server.inject(Fault.truncated_body())
    client = make_client(server)
    assert ask(client).text == VERDICT
    assert client.usage.retries == 1 and len(server.requests) == 2


def test_truncated_body_every_time_fails_as_transient(server: LocalOpenAIServer) -> None:
    server.inject(Fault.truncated_body(), Fault.truncated_body())
    client = make_client(server)
    with pytest.raises(TransientLLMError):
        ask(client)
    assert client.usage.failures == 1 and client.usage.retries == 1


def test_a_cut_off_answer_is_an_answer_that_the_judge_re_asks() -> None:
    answers = iter(['{"reason": "The response is', VERDICT])
    with LocalOpenAIServer(lambda body: next(answers)) as srv:
        client = make_client(srv)
        metric = AspectCritic(name="c", definition="Is it right?", llm=client)

        async def main() -> float | None:
            async with client:
                judgement = await metric.ajudge({"user_input": "q", "response": "r"})
                return judgement.score

        assert asyncio.run(main()) == 1.0
        assert client.usage.total_calls == 2 and client.usage.retries == 0
        assert srv.requests[1]["messages"][-2] == {
            "role": "assistant",
            "content": '{"reason": "The response is',
        }


def test_an_answer_fault_replaces_the_handler_text(server: LocalOpenAIServer) -> None:
    server.inject(Fault.answer("not json at all"))
    assert ask(make_client(server)).text == "not json at all"


def test_request_from_body_round_trips_the_fields() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        "temperature": 0.5,
        "max_tokens": 9,
        "seed": 3,
        "response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": {"a": 1}}},
    }
    req = request_from_body(body)
    assert [m.to_dict() for m in req.messages] == body["messages"]
    assert (req.temperature, req.max_tokens, req.seed, req.json_schema) == (0.5, 9, 3, {"a": 1})


@pytest.mark.parametrize(
    "fault",
    [
        Fault.error(401, f"Incorrect API key provided: {KEY}."),
        Fault.error(403, f"key {KEY[:12]}...{KEY[-4:]} is not allowed"),
        Fault.error(500, f"upstream said Bearer {KEY}"),
    ],
)
def test_the_key_never_appears_in_errors(server: LocalOpenAIServer, fault: Fault) -> None:
    server.inject(fault, fault)
    with pytest.raises(LLMError) as info:
        ask(make_client(server))
    shown = str(info.value) + repr(info.value)
    assert KEY not in shown and KEY[8:] not in shown
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_the_key_never_appears_in_reprs_logs_or_the_cache(
    server: LocalOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server.inject(Fault.rate_limit(retry_after=0.001), Fault.error(400, f"bad key {KEY}"))
    inner = make_client(server)
    client = CachedLLM(inner=inner, path=tmp_path / "c.sqlite")
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(PermanentLLMError):
            ask(client, "one")
        ask(client, "two")
        ask(client, "two")
    assert client.usage.cache_hits == 1
    assert KEY not in repr(client) and KEY not in repr(inner) and KEY not in str(vars(client))
    assert KEY not in caplog.text
    for file in tmp_path.iterdir():
        assert KEY.encode() not in file.read_bytes()
    assert server.authorization_headers[-1] == f"Bearer {KEY}"  # it was sent, only where it belongs


@pytest.mark.parametrize("status", [500, 502, 503, 504, 501, 505])
def test_a_server_error_is_retried_unless_it_says_the_request_is_not_served(
    server: LocalOpenAIServer, status: int
) -> None:
    """5xx is an outage, retried; but 501 Not Implemented and 505 HTTP Version Not Supported are
    the server's answer to the request itself (asking again gets it again): failed at once."""
    server.inject(Fault.error(status, "no"), Fault.error(status, "no"))
    client = make_client(server, max_attempts=3)
    if status in (501, 505):
        with pytest.raises(PermanentLLMError):
            ask(client)
        assert len(server.requests) == 1 and client.usage.retries == 0
    else:  # two outages, then the answer on the third attempt
        assert ask(client).text == VERDICT
        assert len(server.requests) == 3 and client.usage.retries == 2
