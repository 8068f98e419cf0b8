"""Aggregating the verdicts of several judges of one sample (a judge ensemble's vote).

:data:`AGGREGATIONS` maps a name to a function of the successful judges' scores; :func:`aggregate`
turns the judges' :class:`~promptevolver.judge._protocol.Judgement` objects into one, keeping every
judge's score, reason and error in ``details``. Failed judges are left out; when all failed, the
aggregate fails too (never a verdict).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from promptevolver.judge._protocol import Judgement

__all__ = ["AGGREGATIONS", "aggregate"]


class _NotBinary(ValueError):
    """A judge gave a score other than 0 or 1 to a majority vote."""


def _majority(scores: Sequence[float]) -> float:
    """1.0 when more judges said 1 than 0, else 0.0.

    Tie rule: a tie (an even number of successful judges split evenly) gives 0.0 — a criterion
    that half the judges reject is not shown to be met. Raises :class:`_NotBinary` for a score
    other than 0 or 1.
    """
    odd = [s for s in scores if s not in (0.0, 1.0)]
    if odd:
        raise _NotBinary(
            f"aggregation 'majority' needs binary verdicts (0 or 1), got {odd[0]}; "
            "use mean, median, min or max for numeric scores"
        )
    yes = sum(scores)
    return 1.0 if yes > len(scores) - yes else 0.0


#: Aggregation name → function of the successful judges' scores (a non-empty sequence).
AGGREGATIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "majority": _majority,
    "mean": statistics.fmean,
    "median": lambda s: float(statistics.median(s)),
    "min": min,
    "max": max,
}


def aggregate(judges: Sequence[Judgement], *, method: str, name: str) -> Judgement:
    """One judgement from ``judges``: ``score`` by ``method`` over the successful judges, the
    ``reason`` (and ``raw``) of the first judge closest to it, ``details`` (see
    :meth:`~promptevolver.judge._ensemble.JudgeEnsemble.ajudge`); a failure when all judges failed
    or a majority vote got a non-binary score. ``name`` namespaces the judges in ``details``."""
    ok = [(j, j.score) for j in judges if j.score is not None]
    if not ok:
        errors = "; ".join(f"judge {i}: {j.error}" for i, j in enumerate(judges))
        error = f"all {len(judges)} judges failed: {errors}"
        causes = Counter(j.cause or "llm" for j in judges)
        cause = causes.most_common(1)[0][0] if causes else None
        return Judgement(score=None, error=error, cause=cause, details=_details(judges, None, method, name))
    try:
        value = float(AGGREGATIONS[method]([score for _, score in ok]))
    except _NotBinary as exc:
        return Judgement(
            score=None, error=str(exc), cause="parse", details=_details(judges, None, method, name)
        )
    chosen = min(ok, key=lambda pair: abs(pair[1] - value))[0]
    details = _details(judges, value, method, name)
    return Judgement(score=value, reason=chosen.reason, raw=chosen.raw, details=details)


def _details(judges: Sequence[Judgement], value: float | None, method: str, name: str) -> dict[str, Any]:
    keys = [f"{name}_judge_{i}" for i in range(len(judges))]
    return {
        "aggregation": method,
        "num_judges": len(judges),
        "scores": {name: value, **{k: j.score for k, j in zip(keys, judges)}},
        "reasons": {k: j.reason for k, j in zip(keys, judges) if not j.failed},
        "errors": {k: j.error for k, j in zip(keys, judges) if j.failed},
    }
