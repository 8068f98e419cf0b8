"""Client-side rate limits: requests per minute and tokens per minute.

:class:`RateLimiter` is the generic cell rate algorithm (GCRA; ITU-T Recommendation I.371, the
"virtual scheduling" form, also used by e.g. the ``redis-cell`` and ``throttled`` libraries), a
token bucket kept as one number: the *theoretical arrival time* (TAT), the moment the bucket
would be full again. Each unit (a request, or a token) costs ``T = 60 / per_minute`` seconds; a
booking of ``u`` units made at time ``now`` may start at ``max(TAT, now) + u·T − τ``, where the
tolerance ``τ = burst·T`` is the bucket's size; the TAT then moves to ``max(TAT, now) + u·T``.
A booking bigger than the bucket waits for a full bucket (TAT ≤ now) and then overdraws it, so it
can never wait forever, and the long-run rate still holds.

Bookings are made synchronously, in call order, and then slept out (first come, first served),
so the limiter needs no lock and works on any event loop. :class:`Throttle` combines a
requests-per-minute and a tokens-per-minute limiter for one client: tokens are booked on an
estimate before sending (:func:`estimate_tokens`) and corrected by the provider's count after.
There is no global state: limits are per client object (two clients sharing one API key each
need their own share of its limits).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterable

__all__ = ["CHARS_PER_TOKEN", "RateLimiter", "Throttle", "estimate_tokens"]

#: Characters per token of English text: OpenAI's rule of thumb ("What are tokens and how to
#: count them?", OpenAI help center), used to book tokens before the provider counts them.
CHARS_PER_TOKEN = 4

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


def estimate_tokens(texts: Iterable[str], max_tokens: int | None) -> int:
    """Tokens to book for a request: ⌈characters / 4⌉ of its messages plus ``max_tokens`` (if set).

    Providers count ``max_tokens`` against a tokens-per-minute limit when the request arrives,
    as OpenAI documents; the estimate is corrected by :meth:`Throttle.settle` once answered.
    """
    chars = sum(len(t) for t in texts)
    return math.ceil(chars / CHARS_PER_TOKEN) + (max_tokens or 0)


class RateLimiter:
    """GCRA limiter of ``per_minute`` units (see the module docstring for the algorithm).

    Args:
        per_minute: units allowed per minute (> 0); requests or tokens.
        burst: units that may be spent back to back without waiting (the bucket size, > 0);
            default one second's worth (``per_minute / 60``, at least 1), since providers
            enforce per-minute limits over shorter windows.
        clock: monotonic clock in seconds (injectable for tests).

    Raises:
        ValueError: ``per_minute`` or ``burst`` not > 0.
    """

    def __init__(self, *, per_minute: float, burst: float | None = None, clock: Clock = time.monotonic):
        if not per_minute > 0:
            raise ValueError(f"per_minute must be > 0, got {per_minute}")
        burst = max(1.0, per_minute / 60.0) if burst is None else burst
        if not burst > 0:
            raise ValueError(f"burst must be > 0, got {burst}")
        self.per_minute = per_minute
        self.burst = burst
        self.interval_s = 60.0 / per_minute
        self._clock = clock
        self._tat = -math.inf

    def reserve(self, units: float = 1.0) -> float:
        """Book ``units`` now; returns the seconds (≥ 0) to wait before spending them."""
        now = self._clock()
        tat = max(self._tat, now)
        cost = units * self.interval_s
        start = min(tat + cost - self.burst * self.interval_s, tat)
        self._tat = tat + cost
        return max(0.0, start - now)

    def adjust(self, units: float) -> None:
        """Book ``units`` more after the fact (negative: give back an over-estimate)."""
        if math.isfinite(self._tat):
            self._tat += units * self.interval_s


class Throttle:
    """One client's request and token limits; either may be None (unlimited).

    Args:
        requests_per_minute: requests (attempts, retries included) per minute, > 0, or None.
        tokens_per_minute: prompt + completion tokens per minute, > 0, or None.
        clock: monotonic clock in seconds; sleep: async sleep in seconds (both injectable so
            tests can run on a fake clock).

    Raises:
        ValueError: a limit that is not > 0.
    """

    def __init__(
        self,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.requests = _limiter(requests_per_minute, clock)
        self.tokens = _limiter(tokens_per_minute, clock)
        self._sleep = sleep

    @property
    def active(self) -> bool:
        return self.requests is not None or self.tokens is not None

    async def wait(self, tokens: int) -> float:
        """Book one request of about ``tokens`` tokens and sleep until both limits allow it.

        Returns:
            The seconds slept (0.0 when no limit applies).
        """
        delays = [0.0]
        if self.requests is not None:
            delays.append(self.requests.reserve(1))
        if self.tokens is not None:
            delays.append(self.tokens.reserve(tokens))
        delay = max(delays)
        if delay > 0:
            await self._sleep(delay)
        return delay

    def settle(self, *, booked: int, used: int) -> None:
        """Correct a booking of ``booked`` tokens to the ``used`` tokens the provider reported
        (``used`` ≤ 0 means the provider reported none: the estimate stands)."""
        if self.tokens is not None and used > 0:
            self.tokens.adjust(used - booked)


def _limiter(per_minute: float | None, clock: Clock) -> RateLimiter | None:
    return None if per_minute is None else RateLimiter(per_minute=per_minute, clock=clock)
