"""One generation's entry in the search's history (``result.json``'s ``history``).

Each entry: ``generation``; ``best_train`` and ``mean_train``, the population's best and mean
*fitness* (the loss on the judged train samples, what the search ranks by; with elites kept the
best never falls; on a large train part those samples are its focus set, :mod:`._focus`, where
the corrected samples are over-represented, so fitness runs below the whole-part estimates of
``result.json``'s ``scores``; None where unmeasured); ``population`` and ``offspring`` (counts);
``judge_calls`` and ``meta_calls`` (the run's totals so far); ``waves`` (sequential rounds of
LLM requests since the last entry, :func:`promptevolver.llm._concurrency.waves`: wall time ≈
waves × latency).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from promptevolver.llm import waves
from promptevolver.optimizers.strategies import _selection as selection

if TYPE_CHECKING:
    from promptevolver.optimizers._run import SearchRun

__all__ = ["record_generation"]


def record_generation(run: SearchRun, *, offspring: int) -> dict[str, Any]:
    """Append this generation to ``run.state.history``, update ``best_so_far`` and
    ``since_improvement`` (what the patience stop reads) and emit ``generation_end``.

    Returns:
        The appended entry.
    """
    state = run.state
    ranked = selection.rank(state.population, run.context.loss, min_coverage=run.context.min_coverage)
    best = ranked[0].train_value()
    if best is not None and run.context.loss.better(best, state.best_so_far):
        state.best_so_far, state.since_improvement = best, 0
    else:
        state.since_improvement += 1
    values = [v for v in (c.train_value() for c in state.population) if v is not None]
    usage = run.usage()
    entry = {
        "generation": state.generation,
        "best_train": best,
        "mean_train": float(np.mean(values)) if values else None,
        "population": len(state.population),
        "offspring": offspring,
        "judge_calls": usage.judge_calls,
        "meta_calls": usage.meta_calls,
        "waves": waves(run.context.limit.take_intervals()),
    }
    state.history.append(entry)
    keys = ("best_train", "mean_train", "judge_calls", "meta_calls")
    run.context.events.emit("generation_end", state.generation, **{k: entry[k] for k in keys})
    return entry
