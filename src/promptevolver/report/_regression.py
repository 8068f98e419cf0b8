"""The report's figures for a numeric metric (a rubric score, a supported fraction).

* :func:`regression_png` — judge score against human label on the validation samples, seed and
  best side by side, with the line of perfect agreement (points that coincide are drawn larger,
  their count written beside them);
* :func:`regression_section` — that plot, and for an ordinal scale the table of human level ×
  judge level of the best candidate (the diagonal is agreement).

Failed evaluations are not points: they are left out and counted in the captions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from promptevolver.report._data import RunFacts
from promptevolver.report._plots import _png
from promptevolver.report._render import Image, Para, Section, Table

__all__ = ["points", "regression_png", "regression_section"]

_COLOURS = {"seed": "#bf8700", "best": "#1f6feb"}
_LABELS = {"seed": "original (seed)", "best": "optimized (best)"}


def points(facts: RunFacts, who: str, split: str = "validation") -> list[tuple[float, float]]:
    """(human label, judge score) of every sample of ``split`` judged without failure."""
    judged = facts.judgements.get((who, split)) or {}
    labels = facts.labels
    out = []
    for position in sorted(judged):
        label, score = labels[position], judged[position].score
        if label is not None and score is not None:
            out.append((float(label), float(score)))
    return out


def regression_png(series: Mapping[str, Sequence[tuple[float, float]]], *, metric: str) -> bytes:
    """Judge score (y) against human label (x) for each series (``seed``, ``best``), with y = x."""
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.subplots()
    values = [v for pts in series.values() for p in pts for v in p] or [0.0, 1.0]
    low, high = min(values), max(values)
    pad = (high - low) * 0.06 or 0.5
    ends = [low - pad, high + pad]
    ax.plot(ends, ends, color="#8c959f", linewidth=0.8, label="agreement")
    shift = {"seed": -0.12, "best": 0.12} if len(series) > 1 else {}
    for who, pts in series.items():
        counts = Counter(pts)
        dx = shift.get(who, 0.0) * (high - low) / 4
        xs = [x + dx for x, _ in counts]
        ys = [y for _, y in counts]
        sizes = [18 + 14 * (n - 1) for n in counts.values()]
        colour, label = _COLOURS.get(who, "#57606a"), _LABELS.get(who, who)
        ax.scatter(xs, ys, s=sizes, color=colour, alpha=0.7, label=label)
        for (x, y), n in counts.items():
            if n > 1:
                ax.annotate(str(n), (x + dx, y), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.set(xlabel="human label", ylabel=f"judge score ({metric})", title="Judge vs human (validation)")
    ax.set_xlim(low - pad, high + pad)
    ax.set_ylim(low - pad, high + pad)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, frameon=False)
    return _png(fig)


def _level_table(facts: RunFacts, who: str) -> Table | None:
    a = facts.agreements.get((who, "validation"))
    if a is None or not a.ordinal or not a.levels:
        return None
    counts = Counter(points(facts, who))
    headers = ["", *(f"judge {v:g}" for v in a.levels)]
    rows = [[f"human {h:g}", *(str(counts[(h, j)]) for j in a.levels)] for h in a.levels]
    failed = len(facts.failed.get((who, "validation"), []))
    caption = f"{_LABELS[who].capitalize()}: {a.n} validation samples judged" + (
        f", {failed} failed" if failed else ""
    )
    return Table(headers, rows, caption=caption, heat=True)


def regression_section(facts: RunFacts) -> Section:
    """The numeric metric's 'Judge vs human' section (see the module docstring)."""
    series = {who: points(facts, who) for who in ("seed", "best")}
    series = {who: pts for who, pts in series.items() if pts}
    title = "Judge vs human (validation)"
    if not series:
        text = "Per-sample validation scores are not available."
        if facts.failed.get(("best", "validation")):
            text = "No validation score was measured: every evaluation failed."
        return Section(title, [Para(text)])
    blocks: list[Image | Table | Para] = [
        Image("regression.png", regression_png(series, metric=facts.result.get("metric", "")), title)
    ]
    tables = [t for t in (_level_table(facts, "seed"), _level_table(facts, "best")) if t is not None]
    blocks += tables
    if tables:
        blocks.append(Para("Rows: the human's level; columns: the judge's. The diagonal is agreement."))
    return Section(title, blocks, row=True)
