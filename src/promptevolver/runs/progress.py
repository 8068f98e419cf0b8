"""Progress of a run over its LLM calls, for people: a bar on a terminal, plain lines elsewhere.

:class:`CallProgress` is an optimizer callback (:mod:`promptevolver.optimizers.events`). It
counts the run's LLM calls from the ``llm_call`` events, against the cost model's upper bound
on the run's calls (``bound``, never below the count), through every phase: the seed's
evaluation and the initial population, each generation, and the final choice on validation.

* On a terminal (``bar=True``): a tqdm bar whose total is the calls the cost model *expects*
  (``expected``, what ``promptevolver estimate`` says; the bound when not given), so its rate and
  ETA are drawn against the real count, not an 8× bound; past the expected count the total
  grows a quarter at a time, never beyond the bound. Its label is the phase, the best fitness so
  far beside it (the loss on the judged train samples, what the search ranks by), and the bound.
* Elsewhere (a log file, CI), and on a terminal of 0 columns (a pseudo-terminal nobody sized,
  where tqdm draws nothing): one plain line per phase, per finished generation, and every
  ``interval_s`` seconds while calls go on; nothing that redraws.

While calls wait in a long retry backoff (a 429 storm, a server failing), a ``waiting`` event
gives a line too (at most one every ``interval_s`` seconds): the run waits, it does not hang.
The steps of a run that make no LLM call (loading the annotations, building the simulated LLM,
writing the report) are announced with :meth:`CallProgress.step`: on a terminal at once, above
the bar; in plain lines, the steps before the search are timed on its first line (so that a run
that fails to load stays one error line) and the steps after it get a line each. When the run
stops, the bar's total becomes the real count of calls (the bound is an upper bound; a search
that stops early makes fewer), so it ends full.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

from promptevolver.optimizers.events import Event

__all__ = ["CallProgress"]

_FIRST_PHASE = "seed and initial population"
_FINAL_PHASE = "final choice on validation"
#: The phase names of the distill-first pipeline's stages.
_STAGES = {
    "distill": "distillation (meta calls only)",
    "verify": "verification on held-out samples",
    "examples": "teaching examples, verified on held-out samples",
    "cross_fit": "cross-fit: lessons from the held-out corrections, checked on the learning samples",
}


class CallProgress:
    """Shows a run's progress over LLM calls (see the module docstring).

    Args:
        bar: draw a tqdm bar (on a terminal); False: write plain lines.
        write: where plain lines go (one line per call, no newline; e.g. ``print`` to stderr).
        interval_s: seconds between plain "still going" lines (> 0).
        generations: the run's ``optimizer.generations``, shown as "generation 2 of 4".
        verbose: on a bar, also write a line per finished generation.
        label: put before the phase on the bar (e.g. ``"helpfulness seed 3"`` in a benchmark).
        expected: the calls the run is expected to make (``estimate``'s ``total_calls``): the
            bar's total and the lines' "~N expected"; None: the bound alone.
        clock: monotonic seconds (injected by tests).

    Raises:
        ValueError: ``interval_s`` <= 0.
    """

    def __init__(
        self,
        *,
        bar: bool,
        write: Callable[[str], None],
        interval_s: float = 30.0,
        generations: int | None = None,
        verbose: bool = False,
        label: str = "",
        expected: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.bar = bar and _columns() != 0  # a 0-column terminal shows no bar: plain lines
        self.write, self.interval_s = write, interval_s
        self.expected = expected if expected is not None and expected > 0 else None
        self.generations, self.verbose, self.clock, self.label = generations, verbose, clock, label
        self.phase = _FIRST_PHASE
        self.calls, self.bound = 0, 0
        self._started = clock()
        self._last_line = self._started
        self._announced: str | None = None
        self._tqdm: Any = None
        self._before: list[tuple[str, float]] = []  # steps before the first call: (text, start)
        self._calls_from: float | None = None  # when the first stage or generation began
        self._searching = False

    def __call__(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

    def step(self, text: str) -> None:
        """Announce a step that makes no LLM call (``text``, e.g. "writing the report"): a line
        above the bar, or a plain line with the time elapsed."""
        if self.bar:
            tqdm.write(text, file=sys.stderr)  # where the bar is
        elif not self._searching and not self.calls:
            self._before.append((text.split(":")[0], self.clock()))
        else:
            self.write(f"{text} ({self._elapsed()})")

    def close(self) -> None:
        """End the bar (idempotent); call it when the run ends, also on errors."""
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None

    # --- events ---------------------------------------------------------------------------------
    def _on_llm_call(self, event: Event) -> None:
        self.calls, self.bound = int(event.data["calls"]), int(event.data["bound"])
        if self.bar:
            self._draw()
            return
        now = self.clock()
        if self._announced != self.phase:
            self._announced, self._last_line = self.phase, now
            self.write(f"{self.phase}: {self._count()}{self._steps_before(now)}")
        elif now - self._last_line >= self.interval_s:
            self._last_line = now
            self.write(f"{self.phase}: {self._count()}")

    def _on_waiting(self, event: Event) -> None:
        now = self.clock()
        if now - self._last_line < self.interval_s and self._announced == f"waiting {self.phase}":
            return
        self._announced, self._last_line = f"waiting {self.phase}", now
        d = event.data
        cause = f" after {d['cause']}" if d.get("cause") else ""
        line = (
            f"{self.phase}: waiting {d['seconds']:.0f} s before a retry{cause} "
            f"({d['in_backoff']} calls in backoff); {self._count()}"
        )
        if self.bar:
            tqdm.write(line)
        else:
            self.write(line)

    def _steps_before(self, now: float) -> str:
        """ "; after loading the annotations 12 s, ..." on the first line, once."""
        if self._searching or not self._before:
            self._searching = True
            return ""
        self._searching = True
        # the last step ends when the first stage began, not at the first answer (a slow server's
        # first call is no part of "loading the annotations")
        ends = [start for _, start in self._before[1:]] + [
            self._calls_from if self._calls_from is not None else now
        ]
        steps = zip(self._before, ends, strict=True)
        done = ", ".join(f"{text} {end - start:.0f} s" for (text, start), end in steps)
        return f"; before it: {done}"

    def _on_generation_start(self, event: Event) -> None:
        self._mark_calls_from()
        of = f" of {self.generations}" if self.generations is not None else ""
        self.phase = f"generation {event.generation}{of}"
        self._first_wait()

    def _on_generation_end(self, event: Event) -> None:
        d = event.data
        done = "initial population" if event.generation == 0 else f"generation {event.generation}"
        line = (
            f"{done} done: fitness best {_f(d.get('best_train'))}, mean {_f(d.get('mean_train'))} "
            "(judged train samples)"
        )
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(f"best fitness {_f(d.get('best_train'))}, at most {self.bound:,}")
        if not self.bar:
            self.write(f"{line}; {self._count()}")
        elif self.verbose:
            tqdm.write(line)
        self.phase = _FINAL_PHASE  # until the next generation starts

    def _mark_calls_from(self) -> None:
        if self._calls_from is None and not self.calls:
            self._calls_from = self.clock()

    def _on_stage_start(self, event: Event) -> None:
        self._mark_calls_from()
        # a stage may name its phase (small data cross-validates instead of holding samples out)
        self.phase = str(event.data.get("phase") or _STAGES.get(str(event.data.get("stage")), self.phase))
        self._first_wait()

    def _first_wait(self) -> None:
        """In plain lines, a line when the run's first phase starts and nothing has answered yet:
        a slow model's first answer can take minutes, and nothing said the run had started."""
        if self.bar or self.calls or self._announced is not None:
            return
        now = self.clock()
        self._announced, self._last_line = self.phase, now
        self.write(
            f"{self.phase}: started, waiting for the first answer; {self._count()}{self._steps_before(now)}"
        )

    def _on_stage_end(self, event: Event) -> None:
        d = event.data
        if d.get("stage") == "distill":
            rungs = len(d.get("candidates", []))
            line = f"distillation done: {rungs} rung{'' if rungs == 1 else 's'} of the ladder (no judge call)"
            self.phase = _STAGES["verify"]
        elif d.get("stage") == "cross_fit":
            line = f"cross-fit done: candidate {d.get('chosen')} chosen"
            self.phase = _FINAL_PHASE
        else:
            line = f"{d.get('stage', 'verify')} done: candidate {d.get('chosen')} chosen"
            line = line.replace("verify done", "verification done")
            self.phase = _FINAL_PHASE
        if not self.bar:
            self.write(f"{line}; {self._count()}")
        elif self.verbose:
            tqdm.write(line)

    def _on_stop(self, event: Event) -> None:
        if self._tqdm is not None:  # the search is over: the real count is the total
            self._tqdm.total = self.calls
            self._tqdm.set_description_str(f"{self.label}: done" if self.label else "done", refresh=False)
            self._tqdm.update(self.calls - self._tqdm.n)
            self._tqdm.refresh()
        if not self.bar and self.calls:
            self.write(f"done: {self.calls:,} LLM calls ({self._elapsed()})")
        self._searching = True  # what follows the search gets a line of its own
        self.close()

    # --- output ---------------------------------------------------------------------------------
    def total(self) -> int:
        """The bar's total: the expected calls while the run is within them, then a quarter more
        at a time; never beyond the bound, never below the count (the bound without ``expected``)."""
        if self.expected is None:
            return max(self.bound, self.calls)
        target = self.expected
        while target <= self.calls:
            target += max(1, self.expected // 4)
        return max(self.calls, min(target, self.bound) if self.bound else target)

    def _draw(self) -> None:
        desc = f"{self.label}: {self.phase}" if self.label else self.phase
        total = self.total()
        if self._tqdm is None:
            self._tqdm = tqdm(total=total, initial=self.calls, unit="call", desc=desc, leave=False)
            if self.bound:
                self._tqdm.set_postfix_str(f"at most {self.bound:,}", refresh=False)
            return
        if self._tqdm.total != total:
            self._tqdm.total = total
        if self._tqdm.desc != desc:
            self._tqdm.set_description_str(desc, refresh=False)
        self._tqdm.update(self.calls - self._tqdm.n)

    def _count(self) -> str:
        """ "N of ~E expected, at most M LLM calls (T s)"; the bound left out until the run has
        said it (its first call event), never "at most 0"."""
        of = [f"~{self.expected:,} expected"] if self.expected is not None else []
        of += [f"at most {self.bound:,}"] if self.bound else []
        head = f"{self.calls:,} of {', '.join(of)}" if of else f"{self.calls:,}"
        return f"{head} LLM calls ({self._elapsed()})"

    def _elapsed(self) -> str:
        return f"{self.clock() - self._started:.0f} s"


def _columns() -> int | None:
    """The width of the terminal stderr is, in columns; None when it is not one."""
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return None


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
