"""NegotiatedChat on its own, against a real local HTTP server: one send steps down the
structured-output ladder without a retry, concurrent probes ask the server once, and errors are
translated with their secrets redacted."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from typing import Any

import pytest

from promptevolver.errors import PermanentLLMError, TransientLLMError
from promptevolver.llm._base import ChatMessage, Completion, LLMRequest
from promptevolver.llm._redaction import redact_text
from promptevolver.llm.openai._chat import LoopSDK, NegotiatedChat
from promptevolver.llm.openai._negotiation import Negotiation
from promptevolver.testing import Fault, LocalOpenAIServer

KEY = "sk-test-SECRET-0123456789abcdef"
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


@pytest.fixture
def server() -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(lambda body: "answer to: " + str(body["messages"][-1]["content"])) as srv:
        yield srv


def make_chat(server: LocalOpenAIServer, structured_output: Any = "auto") -> NegotiatedChat:
    return NegotiatedChat(
        sdk=LoopSDK(base_url=server.base_url, api_key=KEY, timeout_s=2.0),
        negotiation=Negotiation.start(structured_output),
        model="test-model",
        judge_max_tokens=256,
        meta_max_tokens=1024,
        timeout_s=2.0,
        where="chat under test",
        redact=functools.partial(redact_text, secrets=[KEY]),
    )


def send(chat: NegotiatedChat, *texts: str, schema: dict[str, Any] | None = SCHEMA) -> list[Completion]:
    async def main() -> list[Completion]:
        requests = [LLMRequest((ChatMessage("user", t),), json_schema=schema) for t in texts]
        try:
            return list(await asyncio.gather(*(chat.send(r) for r in requests)))
        finally:
            await chat.sdk.aclose()

    return asyncio.run(main())


def test_one_send_steps_down_on_a_refusal_and_confirms_the_mode(server: LocalOpenAIServer) -> None:
    server.inject(Fault.reject_response_format())
    chat = make_chat(server)
    assert [c.text for c in send(chat, "p")] == ["answer to: p"]
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]
    assert chat.negotiation.mode == "json_object" and chat.negotiation.confirmed
    assert server.requests[0]["max_tokens"] == 256


def test_concurrent_requests_ask_the_server_about_a_mode_once(server: LocalOpenAIServer) -> None:
    server.inject(Fault.reject_response_format())
    chat = make_chat(server)
    texts = [f"n{i}" for i in range(6)]
    assert [c.text for c in send(chat, *texts)] == [f"answer to: {t}" for t in texts]
    sent = [r["response_format"]["type"] for r in server.requests]
    assert sent.count("json_schema") == 1 and sent.count("json_object") == 6


def test_without_a_schema_no_response_format_is_sent_and_nothing_is_confirmed(
    server: LocalOpenAIServer,
) -> None:
    chat = make_chat(server)
    send(chat, "plain", schema=None)
    assert "response_format" not in server.requests[0] and not chat.negotiation.confirmed


def test_errors_are_translated_and_name_the_call_without_the_key(server: LocalOpenAIServer) -> None:
    server.inject(Fault.error(400, f"bad key {KEY} in request"), Fault.server_error(503))
    chat = make_chat(server, structured_output="prompt")
    with pytest.raises(PermanentLLMError) as permanent:
        send(chat, "a")
    with pytest.raises(TransientLLMError) as transient:
        send(chat, "b")
    assert permanent.value.status == 400 and transient.value.status == 503
    assert "chat under test" in str(permanent.value) and KEY not in str(permanent.value)
    assert len(server.requests) == 2  # no retry here: retrying is the client's job
