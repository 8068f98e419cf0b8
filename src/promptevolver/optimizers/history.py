"""One generation's entry in the search's history (``result.json``'s ``history``).

Each entry: ``generation``, ``best_train`` and ``mean_train`` (the population's best-ranked and
mean train scores, as estimates for the whole train part like ``result.json``'s ``scores``: a
large train part is judged on a focus set weighted by what each sample stands for,
:mod:`.focus`; None where unmeasured), ``population`` and ``offspring`` (counts), ``judge_calls`` and
``meta_calls`` (the run's totals so far) and ``waves`` (sequential rounds of LLM requests since
the last entry, :func:`promptevolver.llm.concurrency.waves`: wall time ≈ waves × latency).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from promptevolver.llm.concurrency import waves
from promptevolver.optimizers.reporting import estimates
from promptevolver.optimizers.strategies import selection

if TYPE_CHECKING:
    from promptevolver.optimizers.run import SearchRun

__all__ = ["record_generation"]


def record_generation(run: SearchRun, *, offspring: int) -> dict[str, Any]:
    """Append this generation to ``run.state.history``, update ``best_so_far`` and
    ``since_improvement`` (what the patience stop reads) and emit ``generation_end``.

    Returns:
        The appended entry.
    """
    state = run.state
    ranked = selection.rank(state.population, run.loss, min_coverage=run.min_coverage)
    best = ranked[0].train_value()  # on the focus set, as the search ranks
    if best is not None and run.loss.better(best, state.best_so_far):
        state.best_so_far, state.since_improvement = best, 0
    else:
        state.since_improvement += 1
    values = [v for v in (estimates(run, c)["train"] for c in state.population) if v is not None]
    usage = run.usage()
    entry = {
        "generation": state.generation,
        "best_train": estimates(run, ranked[0])["train"],
        "mean_train": float(np.mean(values)) if values else None,
        "population": len(state.population),
        "offspring": offspring,
        "judge_calls": usage.judge_calls,
        "meta_calls": usage.meta_calls,
        "waves": waves(run.limit.take_intervals()),
    }
    state.history.append(entry)
    keys = ("best_train", "mean_train", "judge_calls", "meta_calls")
    run.events.emit("generation_end", state.generation, **{k: entry[k] for k in keys})
    return entry
