"""The run journal replays an interrupted step's usage exactly as the client counted it: answered
calls with tokens and cost, retries of answered and failed calls, failures, cache hits. A resume
that lost any of them would loosen a cost budget and under-report the run."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from promptevolver.errors import PermanentLLMError, TransientLLMError
from promptevolver.llm import Price, ScriptedLLM
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.llm._cache import CachedLLM
from promptevolver.llm._journal import Journal


def _request(text: str, operation: str) -> LLMRequest:
    return LLMRequest(messages=(ChatMessage("user", text),), operation=operation)


SCRIPT = [
    "first answer",  # judge: answered at once
    TransientLLMError("busy", status=503),
    TransientLLMError("busy", status=429),
    "after two retries",  # feedback: answered after 2 retries
    TransientLLMError("busy", status=503),
    PermanentLLMError("refused", status=400),  # rewrite: gave up after 1 retry
]


@pytest.mark.parametrize("priced", [True, False])
def test_usage_since_equals_what_the_client_counted(tmp_path, priced):
    price = Price(prompt=2.0, completion=10.0) if priced else None
    inner = ScriptedLLM(list(SCRIPT), price=price, max_attempts=3)
    inner.sleep = _no_wait
    cached = CachedLLM(inner=inner, path=tmp_path / "cache.sqlite")
    journal = Journal(tmp_path / "journal.jsonl", fresh=True)
    client = journal.wrap(cached)
    requests = [_request("one two", "judge"), _request("three", "feedback"), _request("four", "rewrite")]

    async def session() -> None:
        for r in requests:
            with contextlib.suppress(PermanentLLMError):
                await client.complete(r)
        await client.complete(requests[0])  # a cache hit: no call, no tokens, no cost

    asyncio.run(session())
    journal.close()
    counted = cached.usage.to_dict()
    replayed = Journal(tmp_path / "journal.jsonl", fresh=False).usage_since(0).to_dict()
    assert counted["retries"] == 3 and counted["failures"] == 1 and counted["cache_hits"] == 1
    assert (counted["cost_usd"] > 0) == priced
    assert replayed == counted


async def _no_wait(seconds: float) -> None:
    return None


def test_an_unusable_answer_is_counted_but_never_replayed(tmp_path):
    """A judge answer without the requested JSON failed its evaluation: on resume that request is
    asked again (a replay would fail it again forever), while its call still counts."""
    schema = {"type": "object", "required": ["verdict"]}
    judge = LLMRequest(messages=(ChatMessage("user", "judge this"),), json_schema=schema)
    inner = ScriptedLLM(["no json here", '{"verdict": 1}'])
    journal = Journal(tmp_path / "journal.jsonl", fresh=True)
    asyncio.run(journal.wrap(inner).complete(judge))
    journal.close()
    resumed = Journal(tmp_path / "journal.jsonl", fresh=False)
    assert resumed.usage_since(0).total_calls == 1
    answer = asyncio.run(resumed.wrap(inner).complete(judge))
    assert answer.text == '{"verdict": 1}' and len(inner.requests) == 2 and resumed.replayed == 0
