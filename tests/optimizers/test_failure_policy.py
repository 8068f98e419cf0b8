"""The per-step failure rule: a step stops the run only when its failure share is above
``max_failure_rate`` with confidence (Wilson lower bound), so small steps of a healthy run do not
stop it by chance, while a dead server or an unusable judge still stops it at once."""

from __future__ import annotations

import pytest

from promptevolver.errors import LLMUnusableError
from promptevolver.evaluation._intervals import wilson_interval
from promptevolver.optimizers.strategies._failures import CONFIDENCE, MIN_STEP_ATTEMPTS, FailureTally


def _step(failed: int, attempted: int, rate: float = 0.2) -> FailureTally:
    tally = FailureTally(max_failure_rate=rate, step="generation 4")
    tally.plan(attempted)
    for i in range(attempted):
        tally.record("http 500" if i < failed else None, "HTTP 500: upstream model crashed")
    return tally


def test_the_chaos_benchmarks_5_of_22_no_longer_stops_a_healthy_run():
    _step(5, 22).check()  # 23 % observed, but its lower bound is 10 %: no evidence above 20 %


@pytest.mark.parametrize("attempted", [MIN_STEP_ATTEMPTS, 22, 60, 400])
def test_a_step_where_everything_failed_stops_at_any_size(attempted):
    with pytest.raises(LLMUnusableError, match="dominant cause http 500 .*upstream model crashed"):
        _step(attempted, attempted).check()


@pytest.mark.parametrize("rate", [0.05, 0.2, 0.5])
@pytest.mark.parametrize("attempted", [8, 22, 100, 400])
def test_a_step_stops_exactly_when_the_lower_bound_exceeds_the_rate(attempted, rate):
    for failed in range(attempted + 1):
        low, _ = wilson_interval(failed, attempted, confidence=CONFIDENCE)
        tally = _step(failed, attempted, rate)
        if low > rate:
            with pytest.raises(LLMUnusableError):
                tally.check()
        else:
            tally.check()
        assert not (low > rate and failed <= rate * attempted)  # never stops at or below the rate


def test_too_few_attempts_never_stop_a_step():
    _step(MIN_STEP_ATTEMPTS - 1, MIN_STEP_ATTEMPTS - 1).check()


def test_the_stop_message_redacts_what_a_client_let_through():
    tally = FailureTally(max_failure_rate=0.2, step="generation 1")
    tally.plan(10)
    for _ in range(10):
        tally.record(
            "transport", "Connection error (connection refused) at https://u:pw@h/v1?key=abc sk-abcdef123"
        )
    with pytest.raises(LLMUnusableError) as stop:
        tally.check()
    assert "connection refused" in str(stop.value)
    assert (
        "pw@" not in str(stop.value)
        and "abc" not in str(stop.value)
        and "sk-abcdef123" not in str(stop.value)
    )
