"""``promptevolver evaluate`` on the terminal: a :class:`~promptevolver.runs._evaluate.Scorecard` shown.

:func:`scorecard_lines` says which samples were scored, the agreement, its confidence interval,
the confusion matrix (its classes named), a pairwise judge's position consistency when it judged
both orders, and the LLM calls; :func:`scorecard_json` is the one JSON
object of ``--json`` (the scorecard, the interval and the gate's verdict).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from promptevolver.evaluation import order_swap_bias
from promptevolver.runs._evaluate import Scorecard

if TYPE_CHECKING:
    from promptevolver.runs._gate import GateResult, Interval

__all__ = ["scorecard_json", "scorecard_lines"]


def scorecard_lines(
    card: Scorecard,
    interval: Interval | None,
    *,
    instructions: Path,
    run_dir: Path | None,
    quiet: bool = False,
) -> list[str]:
    """The lines ``evaluate`` prints for ``card`` (instructions from ``instructions``; samples of
    ``run_dir`` for the validation split); only the agreement summary when ``quiet``. Each ends
    its summary with ``simulated LLM`` when the simulator judged."""
    a = card.agreement
    simulated = " | simulated LLM: no model judged" if card.simulated_llm else ""
    if quiet:
        return [a.summary() + simulated]
    lines = [f"{card.metric}: {instructions} on {_samples(card, run_dir)}", a.summary() + simulated]
    if interval is not None:
        value = getattr(a, interval.figure)
        lines.append(f"{interval.figure} {value:.3f}, {interval.text()}, on {a.n} samples")
    if a.confusion is not None and a.n:
        names = "/".join(a.classes or []) if a.nominal or a.classes not in (None, ["no", "yes"]) else "0/1"
        lines.append(f"confusion (rows human {names}, columns judge {names}): {a.confusion}")
    if a.nominal and a.per_class:
        lines.append(
            "per class: "
            + "; ".join(f"{c.name} P {c.precision:.3f} R {c.recall:.3f} F1 {c.f1:.3f}" for c in a.per_class)
        )
    bias = order_swap_bias(list(card.judged.values()))
    if bias is not None and bias.consistency is not None:
        first = "n/a" if bias.first_position is None else f"{bias.first_position:.3f}"
        lines.append(
            f"both orders: the same verdict on {bias.consistency:.3f} of {bias.pairs} pairs (position "
            f"consistency); the response shown first chosen in {first} of the verdicts"
        )
    lines.append(f"LLM calls: {card.judge_calls} judge (cache hits: {card.usage['cache_hits']})")
    return lines


def _samples(card: Scorecard, run_dir: Path | None) -> str:
    """Which samples were scored, and how many (failed evaluations included)."""
    count = card.agreement.n + card.agreement.failures
    if card.split == "all":
        return f"all usable samples ({count})"
    return f"the validation samples of {run_dir} ({count}; --split all for every usable sample)"


def scorecard_json(card: Scorecard, interval: Interval | None, gate: GateResult | None) -> str:
    """``--json``: the scorecard's figures with ``interval`` and ``gate`` (null when not made)."""
    extra = {"interval": interval and vars(interval), "gate": gate and gate.to_dict()}
    return json.dumps({**card.to_dict(), **extra})
