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

* failures exceed ``max_failure_rate`` of what the step attempted (checked as outcomes arrive once
  at least :data:`MIN_ATTEMPTS` were attempted, and at the end of the step), or
* :data:`RUN_OF_FAILURES` evaluations in a row failed on transport or server errors (a server that
  stopped answering: fail fast instead of retrying every remaining call).

The message names the dominant cause with a sample of the error text (the clients remove
secrets from their messages) and how to continue once it is fixed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from promptevolver.errors import LLMUnusableError

__all__ = ["MIN_ATTEMPTS", "MIN_STEP_ATTEMPTS", "RUN_OF_FAILURES", "FailureTally"]

#: Attempts a step needs before its failure share is checked mid-step.
MIN_ATTEMPTS = 20
#: Attempts a step needs for its failure share to count at its end (one failed meta call of two
#: says little; the seed's evaluation has at least this many samples).
MIN_STEP_ATTEMPTS = 8
#: Consecutive transport/server failures that stop a run at once.
RUN_OF_FAILURES = 32
_SERVER_SIDE = ("transport", "http 5", "http 429", "timeout")
_QUOTE = 240


class FailureTally:
    """Counts one step's attempts and failures; raises when the policy says stop.

    Args:
        max_failure_rate: the share of a step's attempts that may fail, in [0, 1).
        step: what the step is, for the message (``"the seed's train evaluation"``...).
        count_parse: whether unparseable answers count as failures (the seed's evaluation).
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
        self._run = 0

    def plan(self, n: int) -> None:
        """``n`` more attempts are under way in this step."""
        self.attempted += n

    def record(self, cause: str | None, error: str | None = None, *, check: bool = True) -> None:
        """One outcome: ``cause`` None for a success, else the failure's cause (and message).

        When the policy says stop, :attr:`stopped` is set and ``on_stop`` told (the run stops
        sending requests; those in flight finish and are recorded); :meth:`check` raises it.
        """
        if cause is None or cause in ("budget", "stopped") or (cause == "parse" and not self.count_parse):
            self._run = 0
            return
        self.failed += 1
        self.causes[cause] += 1
        self.examples.setdefault(cause, error or "")
        self._run = self._run + 1 if cause.startswith(_SERVER_SIDE) else 0
        if self.stopped is not None:
            return
        if self._run >= RUN_OF_FAILURES:
            self._stop(f"{self._run} evaluations in a row failed")
        elif check and self.attempted >= MIN_ATTEMPTS and self._too_many():
            self._stop(self._share())
        if self.stopped is not None and self.on_stop is not None:
            self.on_stop(self.stopped)

    def check(self) -> None:
        """Apply the policy to the whole step.

        Raises:
            LLMUnusableError: it said stop, now or while outcomes arrived.
        """
        if self.stopped is None and self.attempted >= MIN_STEP_ATTEMPTS and self._too_many():
            self._stop(self._share())
        if self.stopped is not None:
            raise self.stopped

    def _too_many(self) -> bool:
        return self.failed > self.max_failure_rate * self.attempted

    def _share(self) -> str:
        return (
            f"{self.failed} of {self.attempted} evaluations failed (more than "
            f"max_failure_rate={self.max_failure_rate:g})"
        )

    def _stop(self, what: str) -> None:
        cause, count = self.causes.most_common(1)[0]
        example = " ".join(self.examples.get(cause, "").split())
        if len(example) > _QUOTE:
            example = example[:_QUOTE] + "…"
        quoted = f": {example}" if example else ""
        self.stopped = LLMUnusableError(
            f"the LLM cannot do the job: in {self.step}, {what}; dominant cause {cause} "
            f"({count} of {self.failed}){quoted}",
            cause=cause,
            failures=self.failed,
            attempted=self.attempted,
        )
