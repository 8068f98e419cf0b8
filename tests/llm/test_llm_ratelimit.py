"""Rate limits on a fake clock: no real waiting, no timed assertions."""

from __future__ import annotations

import asyncio

import pytest

from promptevolver.errors import TransientLLMError
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.llm._ratelimit import RateLimiter, Throttle, estimate_tokens


class FakeClock:
    """A clock that only moves when told; ``sleep`` records the wait without advancing it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def test_requests_are_spaced_by_the_interval_after_the_burst() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=60, burst=3, clock=clock)
    assert [limiter.reserve() for _ in range(6)] == [0.0, 0.0, 0.0, 1.0, 2.0, 3.0]


def test_the_bucket_refills_with_time() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=120, clock=clock)  # burst defaults to 2 (one second's worth)
    assert [limiter.reserve() for _ in range(3)] == [0.0, 0.0, 0.5]
    clock.now += 10.0  # long idle: the bucket is full again, not more than full
    assert [limiter.reserve() for _ in range(3)] == [0.0, 0.0, 0.5]


def test_long_run_rate_holds() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=600, clock=clock)  # 10 per second, burst 10
    starts = [clock.now + limiter.reserve() for _ in range(1000)]
    assert starts[-1] - starts[0] == pytest.approx(99.0)  # 1000 units: 10 at once, then 990 at 0.1 s


def test_a_booking_bigger_than_the_bucket_waits_for_a_full_bucket_then_overdraws() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=600, clock=clock)  # 10 tokens/s, bucket of 10
    assert limiter.reserve(4) == 0.0
    assert limiter.reserve(50) == pytest.approx(0.4)  # waits until the 4 are paid back
    assert limiter.reserve(1) == pytest.approx(0.4 + 5.0 + 0.1 - 1.0)


def test_adjust_corrects_a_booking() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=60, burst=1, clock=clock)
    limiter.reserve(1)
    limiter.adjust(2)  # it really cost 3
    assert limiter.reserve(1) == pytest.approx(3.0)
    limiter.adjust(-10)  # a large refund never makes a debt negative for long
    assert limiter.reserve(1) == 0.0


@pytest.mark.parametrize("bad", [{"per_minute": 0}, {"per_minute": 10, "burst": 0}])
def test_limits_must_be_positive(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RateLimiter(**bad)


def test_estimate_tokens() -> None:
    assert estimate_tokens(["abcd", "abcde"], None) == 3
    assert estimate_tokens([""], 100) == 100


def test_throttle_takes_the_longer_of_both_waits_and_settles_tokens() -> None:
    clock = FakeClock()
    throttle = Throttle(requests_per_minute=60, tokens_per_minute=600, clock=clock, sleep=clock.sleep)
    assert asyncio.run(throttle.wait(5)) == 0.0
    assert asyncio.run(throttle.wait(5)) == pytest.approx(1.0)  # the request limit binds
    throttle.settle(booked=5, used=105)  # the provider counted 100 more: 10 s of tokens
    # 5 + 5 + 100 + 1 tokens at 0.1 s each, less the 1 s bucket
    assert asyncio.run(throttle.wait(1)) == pytest.approx(111 * 0.1 - 1.0)
    assert clock.sleeps == pytest.approx([1.0, 10.1])


def test_unlimited_throttle_never_sleeps() -> None:
    throttle = Throttle()
    assert not throttle.active and asyncio.run(throttle.wait(10**9)) == 0.0


def test_client_calls_and_retries_go_through_the_limit() -> None:
    clock = FakeClock()
    client = ScriptedLLM([TransientLLMError("busy"), "a", "b", "c"])
    client.throttle = Throttle(requests_per_minute=60, clock=clock, sleep=clock.sleep)
    msgs = (ChatMessage("user", "x"),)

    async def main() -> list[str]:
        done = await asyncio.gather(*(client.complete(LLMRequest(msgs, sample_index=i)) for i in range(3)))
        return [c.text for c in done]

    assert sorted(asyncio.run(main())) == ["a", "b", "c"]
    # four requests (one retried) at 1 per second, burst 1: waits of 1, 2 and 3 s on the fake clock
    assert clock.sleeps == [1.0, 2.0, 3.0]
    assert client.usage.retries == 1 and client.usage.total_calls == 3


def test_a_provider_without_usage_leaves_the_estimate_booked() -> None:
    clock = FakeClock()
    throttle = Throttle(tokens_per_minute=60, clock=clock, sleep=clock.sleep)  # 1 token/s, bucket 1
    asyncio.run(throttle.wait(10))
    throttle.settle(booked=10, used=0)
    assert asyncio.run(throttle.wait(1)) == pytest.approx(10.0)
