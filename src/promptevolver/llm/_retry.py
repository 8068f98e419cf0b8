"""The retry policy, in one place: which failures are transient, how long to back off, how many
attempts, and when a server counts as dead.

Everything that retries an LLM request reads it from here: the clients' calls
(:meth:`BaseLLMClient.complete <promptevolver.llm._base.BaseLLMClient.complete>`), the OpenAI
client's translation of SDK errors (:mod:`promptevolver.llm.openai._errors`), its preflight
(:mod:`promptevolver.llm.openai._preflight`) and the run's dead-server rule
(:class:`~promptevolver.optimizers.strategies._failures.ServerWatch`).

* **Transient** (retried): HTTP 429, 408, 409 and every 5xx; a timeout (the whole request past its
  deadline), a dropped connection, a 200 answer whose body is not a chat completion. Everything
  else is permanent (400, 401, 403, 404, 422...) and fails at once. At the preflight a refused
  connection is permanent too: nothing listens at that address, and the run has not started.
* **Attempts**: :data:`DEFAULT_MAX_ATTEMPTS` per call, the first included (``llm.max_attempts``).
* **Backoff** before retry *n* (1 = the first): ``initial · 2^(n-1) + U(0, initial)`` seconds,
  capped at ``max_s`` (exponential backoff with additive jitter, cf. "Exponential Backoff And
  Jitter", AWS Architecture Blog, 2015); a longer ``Retry-After`` from the server wins, up to
  the same cap.
* **Dead server**: :data:`RUN_OF_FAILURES` attempts in a row failed on the server side
  (:func:`server_side`: transport, timeout, 5xx), none answered in between, stop the run.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_RETRY_INITIAL_S",
    "DEFAULT_RETRY_MAX_S",
    "LONG_WAIT_S",
    "NOT_SERVED",
    "RETRYABLE_4XX",
    "RUN_OF_FAILURES",
    "RetryPolicy",
    "server_side",
    "transient_status",
]

#: Attempts per call, the first included: the one default (``llm.max_attempts``, the clients).
DEFAULT_MAX_ATTEMPTS = 4
#: First backoff in seconds; it doubles with each retry.
DEFAULT_RETRY_INITIAL_S = 1.0
#: Cap on one backoff in seconds (a longer ``Retry-After`` is cut to it too).
DEFAULT_RETRY_MAX_S = 30.0
#: Statuses below 500 that are worth retrying: request timeout and conflict (lock contention).
RETRYABLE_4XX = frozenset({408, 409})
#: Server errors that are answers, not outages: 501 Not Implemented (a web server that serves no
#: POST, e.g. a base_url pointing at a static site) and 505 HTTP Version Not Supported.
NOT_SERVED = frozenset({501, 505})
#: A backoff of this many seconds or more is told to the person watching a run (a progress line:
#: the run waits, it does not hang).
LONG_WAIT_S = 5.0
#: Consecutive failed attempts on the server side, none answered in between, that stop a run.
RUN_OF_FAILURES = 32
#: Failure causes (:attr:`LLMError.cause <promptevolver.errors.LLMError.cause>` prefixes) that
#: say the server is not answering, as opposed to answering badly or asking us to wait (429).
_SERVER_SIDE = ("transport", "http 5", "timeout")

T = TypeVar("T")


def transient_status(status: int) -> bool:
    """Whether an HTTP error ``status`` is worth retrying: 429, 408, 409 or ≥ 500, except the
    server errors that say the request itself is not served (:data:`NOT_SERVED`: asking again
    gets the same answer)."""
    return status == 429 or (status >= 500 and status not in NOT_SERVED) or status in RETRYABLE_4XX


def server_side(cause: str) -> bool:
    """Whether a failure ``cause`` (``transport``, ``timeout``, ``http 503``...) counts towards the
    dead-server rule (a 429 does not: the server is alive and asking us to wait)."""
    return cause.startswith(_SERVER_SIDE)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently one call is retried.

    Attributes:
        max_attempts: attempts per call including the first (≥ 1).
        initial_s: first backoff in seconds (≥ 0); doubles each retry, plus up to 1× jitter.
        max_s: cap on one backoff in seconds (≥ 0), ``Retry-After`` included.

    Raises:
        ValueError: a value out of range (the message names it).
    """

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    initial_s: float = DEFAULT_RETRY_INITIAL_S
    max_s: float = DEFAULT_RETRY_MAX_S

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.initial_s < 0 or self.max_s < 0:
            raise ValueError("retry_initial_s and retry_max_s must be >= 0")

    def backoff_s(self, retry: int, retry_after: float | None, jitter: np.random.Generator) -> float:
        """Seconds to wait before retry number ``retry`` (1 = the first); ``retry_after``: the
        server's ``Retry-After`` in seconds, or None. Jitter only spreads retries in time and never
        affects a result, so ``jitter`` may be unseeded."""
        base = self.initial_s * 2 ** (retry - 1)
        wait = min(self.max_s, base + float(jitter.uniform(0, self.initial_s)))
        if retry_after is not None:
            wait = max(wait, min(float(retry_after), self.max_s))
        return wait

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        transient: Callable[[BaseException], bool],
        retry_after: Callable[[BaseException], float | None] = lambda _: None,
        sleep: Callable[[float], Awaitable[None]],
        jitter: np.random.Generator,
    ) -> T:
        """``await attempt()`` up to :attr:`max_attempts` times, sleeping the backoff between
        attempts while the error is ``transient``; the last error (or a permanent one) is raised.
        For calls outside a client (the preflight); a client's calls count and watch their
        attempts in :class:`~promptevolver.llm._base.BaseLLMClient`."""
        for number in range(1, self.max_attempts + 1):
            try:
                return await attempt()
            except Exception as exc:
                if number == self.max_attempts or not transient(exc):
                    raise
                await sleep(self.backoff_s(number, retry_after(exc), jitter))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def call(
        self,
        attempt: Callable[[], T],
        *,
        transient: Callable[[BaseException], bool],
        retry_after: Callable[[BaseException], float | None] = lambda _: None,
        jitter: np.random.Generator,
        sleep: Callable[[float], None] = time.sleep,
        on_retry: Callable[[BaseException], None] = lambda _: None,
    ) -> T:
        """The blocking twin of :meth:`run` (the embeddings client's calls, which retrieval makes
        from synchronous code): ``attempt()`` up to :attr:`max_attempts` times, ``on_retry(error)``
        and the backoff before each re-send while the error is ``transient``."""
        for number in range(1, self.max_attempts + 1):
            try:
                return attempt()
            except Exception as exc:
                if number == self.max_attempts or not transient(exc):
                    raise
                sleep(self.backoff_s(number, retry_after(exc), jitter))
                on_retry(exc)
        raise AssertionError("unreachable: the last attempt returns or raises")
