"""The failure policy: when the LLM fails too often, the run stops with the cause, never a score.

A failed evaluation (after the client's retries) is data: it is left out of fitness and the
candidate's coverage drops. But a run whose LLM cannot do its job must not go on and print
numbers. :class:`FailureTally` counts the judge evaluations and meta calls of one step (the seed's
evaluation, the initial population, one generation) and raises
:class:`~promptevolver.errors.LLMUnusableError` when the failures below exceed the policy. In the
seed's evaluation every failure counts (a judge that cannot answer the seed's instruction in the
requested form cannot do the job); in later steps an unparseable answer is the candidate's fault
(its instruction led the judge astray: it lowers that candidate's coverage, so it cannot win) and
only failed calls count (transport, HTTP status, timeouts). A request the budget refused is not an
LLM failure (the search stops on ``budget``). The policy stops the run when

* the step's failure share is above ``max_failure_rate`` with confidence: the lower end of the
  95 % Wilson score interval of failures / attempted exceeds it (E. B. Wilson, JASA 22:209–212,
  1927; :func:`~promptevolver.evaluation._intervals.wilson_interval`). Checked as outcomes arrive
  once at least :data:`MIN_ATTEMPTS` were attempted, and at the end of the step over at least
  :data:`MIN_STEP_ATTEMPTS`. A bare share stopped healthy runs by chance: at 30 % faults with
  two attempts per call, 5 failed of a step's 22 (23 %, lower bound 10 %) while 5.5 % of the
  run's calls failed (benchmarks/results/chaos.md, finding 8); a dead server (22 of 22: bound
  85 %) or a judge that cannot answer (8 of 8: 68 %) still stops at once; or
* :data:`RUN_OF_FAILURES` *attempts* in a row, retries included, failed on the server side
  (transport, timeout, HTTP 5xx) with none answered in between (:class:`ServerWatch`, which sees
  every attempt through :mod:`promptevolver.llm._attempts`): a server that stopped answering
  stops the run within two rounds of attempts (a second or two with 16 in flight) instead of
  after every call's retries (27–29 s when 32 *calls* in a row had to give up). A 429 neither
  counts nor resets the run (the server is alive, asking us to wait). By chance, 32 failures in a
  row at a 30 % fault rate happen with probability 0.3^32 ≈ 2e-17 per attempt.

Once the run is to stop, requests not yet sent are refused, calls waiting in a retry's backoff
give up at once with their last error, and those in flight finish and are recorded. The message
names the dominant cause with a sample of the error text, redacted again
(:func:`~promptevolver.llm._redaction.redact_text`; the clients remove secrets from their
messages), and how to continue once it is fixed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable

from promptevolver.errors import LLMError, LLMUnusableError
from promptevolver.evaluation import wilson_interval
from promptevolver.llm import LONG_WAIT_S, RUN_OF_FAILURES, redact_text, server_side

__all__ = [
    "CONFIDENCE",
    "MIN_ATTEMPTS",
    "MIN_STEP_ATTEMPTS",
    "FailureTally",
    "ServerWatch",
]

#: Attempts a step needs before its failure share is checked mid-step.
MIN_ATTEMPTS = 20
#: Attempts a step needs for its failure share to count at its end (one failed meta call of two
#: says little; the seed's evaluation has at least this many samples).
MIN_STEP_ATTEMPTS = 8
#: Two-sided confidence of the Wilson interval whose lower end must exceed ``max_failure_rate``.
CONFIDENCE = 0.95
_QUOTE = 240


class FailureTally:
    """Counts one step's attempts and failures; raises when the policy says stop.

    Args:
        max_failure_rate: the share of a step's attempts that may fail, in [0, 1).
        step: what the step is, for the message (``"the seed's train evaluation"``...).
        count_parse: whether unparseable answers count as failures (the seed's evaluation).
        on_stop: told once when the policy says stop (the run stops sending requests).
    """

    def __init__(
        self,
        *,
        max_failure_rate: float,
        step: str,
        count_parse: bool = False,
        on_stop: Callable[[LLMUnusableError], None] | None = None,
    ) -> None:
        self.max_failure_rate = max_failure_rate
        self.step = step
        self.count_parse = count_parse
        self.on_stop = on_stop
        #: The error that stops the run, once the policy said so (raised by :meth:`check`).
        self.stopped: LLMUnusableError | None = None
        self.attempted = 0
        self.failed = 0
        self.causes: Counter[str] = Counter()
        self.examples: dict[str, str] = {}

    def plan(self, n: int) -> None:
        """``n`` more attempts are under way in this step."""
        self.attempted += n

    def record(self, cause: str | None, error: str | None = None, *, check: bool = True) -> None:
        """One outcome: ``cause`` None for a success, else the failure's cause (and message).

        When the policy says stop, :attr:`stopped` is set and ``on_stop`` told (the run stops
        sending requests; those in flight finish and are recorded); :meth:`check` raises it.
        """
        if cause is None or cause in ("budget", "stopped") or (cause == "parse" and not self.count_parse):
            return
        self.failed += 1
        self.causes[cause] += 1
        self.examples.setdefault(cause, error or "")
        if check and self.stopped is None and self.attempted >= MIN_ATTEMPTS and self._too_many():
            self.stop(self._share(), *self.causes.most_common(1)[0], self.failed, self.examples[cause])

    def stop(self, what: str, cause: str, count: int, of: int, example: str) -> None:
        """Stop the run because ``what``: ``count`` of ``of`` failures had the dominant ``cause``,
        ``example`` is one's error text (no-op once stopped)."""
        if self.stopped is not None:
            return
        self.stopped = LLMUnusableError(
            f"the LLM cannot do the job: in {self.step}, {what}; dominant cause {cause} "
            f"({count} of {of}){_quoted(example)}",
            cause=cause,
            failures=self.failed,
            attempted=self.attempted,
        )
        if self.on_stop is not None:
            self.on_stop(self.stopped)

    def check(self) -> None:
        """Apply the policy to the whole step.

        Raises:
            LLMUnusableError: it said stop, now or while outcomes arrived.
        """
        if self.stopped is None and self.attempted >= MIN_STEP_ATTEMPTS and self._too_many():
            cause, count = self.causes.most_common(1)[0]
            self.stop(self._share(), cause, count, self.failed, self.examples[cause])
        if self.stopped is not None:
            raise self.stopped

    def _too_many(self) -> bool:
        if not self.failed:
            return False
        low, _ = wilson_interval(min(self.failed, self.attempted), self.attempted, confidence=CONFIDENCE)
        return low > self.max_failure_rate

    def _share(self) -> str:
        return (
            f"{self.failed} of {self.attempted} evaluations failed (more than "
            f"max_failure_rate={self.max_failure_rate:g}, at {CONFIDENCE:.0%} confidence)"
        )


class ServerWatch:
    """Watches every attempt of a run's calls for a server that stopped answering (an
    :class:`~promptevolver.llm._attempts.AttemptWatch`).

    Args:
        on_dead: called once :data:`RUN_OF_FAILURES` attempts in a row failed on the server
            side, with (what happened, dominant cause, its count, attempts in the run, an error
            text of that cause).
    """

    def __init__(
        self,
        *,
        on_dead: Callable[[str, str, int, int, str], None],
        on_wait: Callable[[float, int, str], None] | None = None,
    ) -> None:
        self.on_dead = on_dead
        #: Told of each backoff of :data:`~promptevolver.llm._retry.LONG_WAIT_S` or more: (its
        #: seconds, calls now in backoff, the cause of the last failed attempt), so a person
        #: watching a long 429 storm sees that the run waits rather than hangs.
        self.on_wait = on_wait
        self.last_cause = ""
        #: Failed server-side attempts since the last answered one, by cause.
        self.run: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        #: Set by :meth:`stop`: calls in backoff give up, none retries.
        self.stopped = False
        self._sleeping: set[asyncio.Future[None]] = set()

    def attempted(self, error: LLMError | None) -> None:
        if error is None:
            self.run.clear()
            return
        cause = self.last_cause = error.cause
        if not server_side(cause):
            return  # a 429 or a client-side refusal: the server is alive
        self.run[cause] += 1
        self.examples[cause] = str(error)
        total = self.run.total()
        if total == RUN_OF_FAILURES and not self.stopped:
            dominant, count = self.run.most_common(1)[0]
            what = f"{total} attempts in a row failed, retries included, and none was answered"
            self.on_dead(what, dominant, count, total, self.examples[dominant])

    async def pause(self, seconds: float, sleep: Callable[[float], Awaitable[None]]) -> bool:
        if self.stopped:
            return False
        nap: asyncio.Future[None] = asyncio.ensure_future(sleep(seconds))
        self._sleeping.add(nap)
        if self.on_wait is not None and seconds >= LONG_WAIT_S:
            self.on_wait(seconds, len(self._sleeping), self.last_cause)
        try:
            await asyncio.wait({nap})  # a cancellation of the call itself propagates from here
        finally:
            self._sleeping.discard(nap)
            nap.cancel()
        return not self.stopped

    def stop(self) -> None:
        """No call retries from now on: those waiting in a backoff wake and give up."""
        self.stopped = True
        for nap in list(self._sleeping):
            nap.cancel()


def _quoted(example: str) -> str:
    example = redact_text(" ".join(example.split()))
    if len(example) > _QUOTE:
        example = example[:_QUOTE] + "…"
    return f": {example}" if example else ""
