"""The client seam: usage arithmetic, cost from prices, bounded retries and their counting."""

from __future__ import annotations

import asyncio
from dataclasses import asdict

import pytest

from promptevolver.errors import PermanentLLMError, TransientLLMError
from promptevolver.llm import Price, ScriptedLLM
from promptevolver.llm._base import BaseLLMClient, ChatMessage, Completion, LLMRequest, Usage
from promptevolver.llm.pricing import price_for


def request(text: str = "q", operation: str = "judge") -> LLMRequest:
    return LLMRequest(messages=(ChatMessage("user", text),), operation=operation)


def run(client: BaseLLMClient, *requests: LLMRequest) -> list[Completion]:
    async def main() -> list[Completion]:
        return list(await asyncio.gather(*(client.complete(r) for r in requests)))

    return asyncio.run(main())


class Backoffs(BaseLLMClient):
    """Answers from a script and records the backoff waits instead of sleeping them."""

    def __init__(self, script: list[str | Exception]) -> None:
        super().__init__(max_attempts=4, retry_initial_s=0.5, retry_max_s=10.0)
        self.script = script
        self.waits: list[float] = []

        async def record(seconds: float) -> None:
            self.waits.append(seconds)

        self.sleep = record

    async def _send(self, request: LLMRequest) -> Completion:
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return Completion(item, prompt_tokens=1_000, completion_tokens=500)


def test_usage_add_sub_copy_keep_every_counter() -> None:
    a = Usage()
    a.record("judge", Completion("x", 10, 2), cost_usd=0.5)
    a.record_retry("judge")
    a.record_failure("rewrite", "http 503")
    a.record_cache_hit("judge")
    b = a.copy()
    b.record("rewrite", Completion("y", 5, 5), cost_usd=0.25)
    diff = b - a
    assert diff.calls_by_operation == {"rewrite": 1}
    assert (diff.prompt_tokens, diff.completion_tokens, diff.cost_usd) == (5, 5, 0.25)
    assert (diff.retries, diff.failures, diff.cache_hits) == (0, 0, 0)
    total = a + b
    assert total.retries_by_operation == {"judge": 2} and total.failures_by_operation == {"rewrite": 2}
    assert total.failures_by_cause == {"http 503": 2} and diff.failures_by_cause == {}
    assert total.cache_hits_by_operation == {"judge": 2} and total.cache_hits == 2
    assert a.calls_by_operation == {"judge": 1}  # operands unchanged
    assert Usage(**asdict(b)) == b  # a checkpoint can round-trip it


def test_usage_to_dict_has_the_result_json_keys() -> None:
    usage = Usage()
    usage.record("judge", Completion("x", 3, 4), cost_usd=0.001)
    usage.record("feedback", Completion("y", 1, 1))
    usage.record_cache_hit("feedback")
    data = usage.to_dict()
    assert data["llm_calls"] == {"judge": 1, "meta": 1}
    assert data["calls_by_operation"] == {"feedback": 1, "judge": 1}
    assert (data["prompt_tokens"], data["completion_tokens"], data["cost_usd"]) == (4, 5, 0.001)
    assert data["cache_hits"] == 1 and data["cache_hits_by_operation"] == {"feedback": 1}
    assert data["retries"] == data["failures"] == 0


def test_price_cost_and_lookup() -> None:
    price = Price(prompt=0.15, completion=0.60)
    assert price.cost_usd(prompt_tokens=1_000_000, completion_tokens=500_000) == pytest.approx(0.45)
    assert price_for("m", {}) is None
    assert price_for("m", {"m": price}) is price
    with pytest.raises(KeyError, match="priced models: \\['other'\\]"):
        price_for("m", {"other": price})
    with pytest.raises(ValueError, match="prompt"):
        Price(prompt=-1.0, completion=0.0)


def test_answered_calls_add_their_cost() -> None:
    client = ScriptedLLM(["a b", "c"], price=Price(prompt=2.0, completion=10.0))
    run(client, request("one two three"), request("four"))
    # prompt tokens 3 + 1, completion tokens 2 + 1 (whitespace words)
    assert client.usage.cost_usd == pytest.approx((4 * 2.0 + 3 * 10.0) / 1e6)


def test_failed_calls_cost_nothing_and_are_counted_by_operation() -> None:
    client = ScriptedLLM([PermanentLLMError("no")], price=Price(prompt=1.0, completion=1.0))
    with pytest.raises(PermanentLLMError):
        run(client, request(operation="crossover"))
    assert client.usage.cost_usd == 0.0
    assert client.usage.failures_by_operation == {"crossover": 1} and client.usage.total_calls == 0
    assert client.usage.failures_by_cause == {"llm": 1}


def test_attempts_are_bounded_and_every_retry_counted() -> None:
    client = ScriptedLLM([TransientLLMError("busy", status=503)] * 5, max_attempts=3)
    with pytest.raises(TransientLLMError):
        run(client, request(operation="rewrite"))
    assert len(client.requests) == 3
    assert client.usage.retries == 2 and client.usage.retries_by_operation == {"rewrite": 2}
    assert client.usage.failures == 1 and client.usage.total_calls == 0


def test_retry_after_is_honoured_and_capped() -> None:
    client = Backoffs([TransientLLMError("slow down", status=429, retry_after=7.0), "ok"])
    assert run(client, request())[0].text == "ok"
    assert client.waits[0] == 7.0  # longer than the computed 0.5-1.0 s backoff
    capped = Backoffs([TransientLLMError("later", status=429, retry_after=99.0), "ok"])
    run(capped, request())
    assert capped.waits == [10.0]


def test_backoff_doubles_with_bounded_jitter() -> None:
    client = Backoffs([TransientLLMError("x")] * 3 + ["ok"])
    run(client, request())
    for n, wait in enumerate(client.waits):
        base = 0.5 * 2**n
        assert base <= wait <= base + 0.5
    assert client.usage.retries == 3


def test_permanent_errors_are_not_retried() -> None:
    client = Backoffs([PermanentLLMError("bad key", status=401), "never"])
    with pytest.raises(PermanentLLMError):
        run(client, request())
    assert client.waits == [] and client.usage.failures == 1
