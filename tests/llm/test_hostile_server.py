"""OpenAIClient against hostile servers, over real HTTP (issue 24, items 1, 3, 4 and 6).

A body sent one byte at a time or never ending, answers far beyond the tokens asked, usage that is
missing, zero, negative or not a number, transient faults on the preflight call, credentials in
``base_url`` and error bodies echoing the ``Authorization`` header.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from promptevolver.errors import (
    AnswerTooLongError,
    ConfigError,
    LLMError,
    PermanentLLMError,
    TransientLLMError,
)
from promptevolver.llm._base import ChatMessage, Completion, LLMRequest
from promptevolver.llm._redaction import redact_text
from promptevolver.llm.openai import OpenAIClient
from promptevolver.llm.openai._wire import ANSWER_TOKEN_MULTIPLE, body_limit
from promptevolver.llm.pricing import Price
from promptevolver.testing import Fault, LocalOpenAIServer

KEY = "sk-hostile-SECRET-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(lambda body: '{"reason": "fine", "verdict": 1}') as srv:
        yield srv


def make_client(server: LocalOpenAIServer, **kwargs: Any) -> OpenAIClient:
    options: dict[str, Any] = {
        "model": "m",
        "base_url": server.base_url,
        "api_key": KEY,
        "timeout_s": 5.0,
        "max_attempts": 1,
        "retry_initial_s": 0.001,
        "retry_max_s": 0.01,
    }
    return OpenAIClient(**{**options, **kwargs})


def ask(client: OpenAIClient, text: str = "Is the answer right?") -> Completion:
    async def main() -> Completion:
        async with client:
            return await client.complete(LLMRequest(messages=(ChatMessage("user", text),)))

    return asyncio.run(main())


def preflight(client: OpenAIClient) -> None:
    async def main() -> None:
        async with client:
            await client.preflight()

    asyncio.run(main())


# -- item 3: timeout_s is a deadline for the whole request ---------------------------------------


def test_a_body_sent_one_byte_a_second_fails_the_call_as_a_timeout(server: LocalOpenAIServer) -> None:
    # Each byte arrives well within timeout_s; the whole body would take minutes.
    server.inject(Fault.slow_body(1.0))
    client = make_client(server, timeout_s=1.5)
    with pytest.raises(TransientLLMError, match=r"no complete answer within timeout_s=1.5 s") as info:
        ask(client)
    assert info.value.cause == "transport"
    assert client.usage.failures_by_cause == {"transport": 1}


def test_a_slow_body_is_retried_and_the_retry_answers(server: LocalOpenAIServer) -> None:
    server.inject(Fault.slow_body(1.0))
    client = make_client(server, timeout_s=1.5, max_attempts=2)
    assert '"verdict": 1' in ask(client).text
    assert (client.usage.retries, client.usage.failures) == (1, 0)


# -- item 4: what is read and kept is bounded; usage is counted when the server's is unusable ----


def test_a_body_that_never_ends_is_cut_off_unread_as_too_long(server: LocalOpenAIServer) -> None:
    server.inject(Fault.endless_body())
    client = make_client(server, judge_max_tokens=256, timeout_s=30.0)
    with pytest.raises(AnswerTooLongError, match=f"a body over {body_limit(256)} bytes") as info:
        ask(client)
    assert info.value.cause == "too long"
    assert client.usage.failures_by_cause == {"too long": 1}
    assert client.usage.calls_by_operation == {}


@pytest.mark.parametrize("words", [ANSWER_TOKEN_MULTIPLE * 256, 2_000_000])
def test_an_answer_far_beyond_the_requested_tokens_is_a_failed_call(
    server: LocalOpenAIServer, words: int
) -> None:
    server.inject(Fault.answer("long " * words))  # 5 characters a word: > 4 x 256 tokens
    client = make_client(server, judge_max_tokens=256)
    with pytest.raises(AnswerTooLongError, match=r"answer too long .*256 completion tokens were requested"):
        ask(client)
    assert client.usage.failures_by_cause == {"too long": 1}


def test_an_answer_within_the_multiple_is_kept(server: LocalOpenAIServer) -> None:
    text = "x" * (4 * 256 * 2)  # 512 tokens by the local count: twice the cap, within the bound
    server.inject(Fault.answer(text))
    assert ask(make_client(server, judge_max_tokens=256)).text == text


@pytest.mark.parametrize(
    "usage",
    [
        None,
        {},
        {"prompt_tokens": 0, "completion_tokens": 0},
        {"prompt_tokens": -500000, "completion_tokens": -7},
        {"prompt_tokens": "many", "completion_tokens": 1.5},
        {"prompt_tokens": float("nan"), "completion_tokens": True},
    ],
)
def test_usage_missing_zero_negative_or_unreadable_is_counted_locally(
    server: LocalOpenAIServer, usage: dict[str, Any] | None
) -> None:
    server.inject(Fault.with_usage(usage))
    client = make_client(server, price=Price(prompt=1.0, completion=4.0))
    prompt = "Is the answer right? " * 10
    completion = ask(client, prompt)
    # ceil(characters / 4): of the prompt's messages, and of the answer
    assert completion.prompt_tokens == -(-len(prompt) // 4)
    assert completion.completion_tokens == -(-len(completion.text) // 4)
    assert client.usage.cost_usd > 0
    assert client.usage.prompt_tokens == completion.prompt_tokens


def test_positive_usage_from_the_server_is_kept(server: LocalOpenAIServer) -> None:
    server.inject(Fault.with_usage({"prompt_tokens": 11, "completion_tokens": 3}))
    completion = ask(make_client(server))
    assert (completion.prompt_tokens, completion.completion_tokens) == (11, 3)


# -- item 1: the preflight follows the retry policy ----------------------------------------------


@pytest.mark.parametrize(
    "faults",
    [
        [Fault.rate_limit(retry_after=0)],
        [Fault.server_error(500)],
        [Fault.server_error(503), Fault.rate_limit(), Fault.server_error(502)],
        [Fault.delay(3.0)],
    ],
)
def test_transient_faults_on_the_preflight_call_are_retried(
    faults: list[Fault],
) -> None:
    with LocalOpenAIServer(lambda body: "OK", models_endpoint=False) as srv:
        srv.inject(*faults)
        client = make_client(srv, max_attempts=4, timeout_s=1.0)
        preflight(client)
        assert len(srv.requests) == len(faults) + 1  # each fault retried, then answered


def test_transient_faults_past_max_attempts_stop_the_preflight_with_one_line() -> None:
    with LocalOpenAIServer(lambda body: "OK", models_endpoint=False) as srv:
        srv.inject(*[Fault.server_error(500)] * 3)
        with pytest.raises(PermanentLLMError, match=r"refused a 1-token test call 3 times \(500\)"):
            preflight(make_client(srv, max_attempts=3))
        assert len(srv.requests) == 3


@pytest.mark.parametrize("status", [401, 403, 404])
def test_permanent_refusals_of_the_preflight_are_not_retried(status: int) -> None:
    with LocalOpenAIServer(lambda body: "OK", models_endpoint=False) as srv:
        srv.inject(Fault.error(status, "no"))
        with pytest.raises(PermanentLLMError):
            preflight(make_client(srv, max_attempts=4))
        assert len(srv.requests) == 1


# -- item 6: credentials in base_url, Basic and Bearer in messages -------------------------------


@pytest.mark.parametrize("where", ["argument", "environment"])
def test_credentials_in_base_url_are_refused_before_any_request(
    server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    url = server.base_url.replace("http://", "http://alice:SECRETPW@")
    if where == "environment":
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        url = None  # type: ignore[assignment]
    with pytest.raises(ConfigError, match=r"carries credentials") as info:
        make_client(server, base_url=url)
    assert "SECRETPW" not in str(info.value) and "alice" not in str(info.value)
    assert server.requests == []


@pytest.mark.parametrize("status", [500, 400])
def test_an_error_body_echoing_the_authorization_header_is_redacted(
    server: LocalOpenAIServer, status: int
) -> None:
    server.inject(Fault.echo_authorization(status))
    with pytest.raises(LLMError) as info:
        ask(make_client(server))
    message = str(info.value)
    assert "Authorization" in message and KEY not in message and "SECRET" not in message
    assert server.authorization_headers == [f"Bearer {KEY}"]


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Basic YWxpY2U6U0VDUkVUUFc=",
        "bad header authorization=basic YWxpY2U6U0VDUkVUUFc",
        "Authorization: Bearer opaque.SECRETPW-token",
        "got 'Bearer YWxpY2U6U0VDUkVUUFc' from you",
    ],
)
def test_basic_and_bearer_credentials_are_redacted_in_any_text(text: str) -> None:
    redacted = redact_text(text)
    assert "YWxpY2U6U0VDUkVUUFc" not in redacted and "SECRETPW" not in redacted
    assert "***" in redacted
