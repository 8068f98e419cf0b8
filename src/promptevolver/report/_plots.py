"""The report's plots as PNG bytes (matplotlib, Agg canvas; no display, no pyplot state).

* :func:`fitness_png` — best and mean train fitness per generation, with the seed's train score
  and the final validation scores for reference;
* :func:`calls_png` — judge and meta calls spent by the end of each generation, and in all;
* :func:`candidates_png` — the seed, the ladder's rungs or the finalists and the chosen judge on
  validation, each with its 95% interval (drawn whether or not a search ran);
* :func:`confusion_png` — the seed's and the chosen judge's confusion matrices on validation;
* :func:`stage_cost_png` — calls and tokens per stage of the pipeline (per operation without
  stages).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["Point", "calls_png", "candidates_png", "confusion_png", "fitness_png", "noted", "stage_cost_png"]

_SIZE = (6.0, 4.0)
_DPI = 110
_BEST, _MEAN, _SEED, _META = "#1f6feb", "#8c959f", "#bf8700", "#8250df"


#: A line every figure drawn in its scope carries in its corner (:func:`noted`).
_NOTE: ContextVar[str | None] = ContextVar("plot_note", default=None)


@contextmanager
def noted(note: str | None) -> Iterator[None]:
    """Every figure drawn inside carries ``note`` in its lower right corner (None: nothing), e.g.
    that the simulated LLM answered: a plot shown alone must say so too."""
    token = _NOTE.set(note)
    try:
        yield
    finally:
        _NOTE.reset(token)


def _png(fig: Figure) -> bytes:
    note = _NOTE.get()
    if note:
        fig.text(0.99, 0.005, note, ha="right", va="bottom", fontsize=7, color="#cf222e")
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    return buffer.getvalue()


def _generations(history: Sequence[Mapping[str, Any]]) -> list[int]:
    return [int(h["generation"]) for h in history]


def _values(history: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    """``key`` of each generation; NaN (a gap in the line) where it was not measured (None)."""
    return [math.nan if h.get(key) is None else float(h[key]) for h in history]


def fitness_png(
    history: Sequence[Mapping[str, Any]],
    *,
    metric: str,
    higher_is_better: bool,
    scores: Mapping[str, Mapping[str, float | None]],
) -> bytes:
    """Best and mean train fitness per generation (generation 0 = initial population).

    A value that was not measured (None) is left out: a gap in a line, no reference line or
    marker, never a point at 0.

    Args:
        history: result.json's ``history`` (``generation``, ``best_train``, ``mean_train``).
        metric: the fitness's name for the axis (e.g. ``accuracy``).
        higher_is_better: the fitness's direction, said in the axis label.
        scores: ``seed.train``: the seed's fitness (its lineage ``train``, the lines' quantity);
            ``seed.validation``, ``best.validation``: the validation figures of result.json's
            ``scores``, drawn apart at the right.
    """
    fig = Figure(figsize=_SIZE)
    ax = fig.subplots()
    gens = _generations(history) or [0]
    if history:
        ax.plot(gens, _values(history, "best_train"), "o-", color=_BEST, label="best (train)")
        ax.plot(gens, _values(history, "mean_train"), "s--", color=_MEAN, label="population mean (train)")
    seed_train = scores["seed"].get("train")
    if seed_train is not None:
        ax.axhline(seed_train, color=_SEED, linestyle=":", label="seed fitness (train)")
    final = gens[-1] + 1
    ax.axvline(final - 0.5, color=_MEAN, linewidth=0.8)
    for who, marker, colour, size, label in (
        ("best", "*", _BEST, 14, f"chosen: validation {metric}"),
        ("seed", "X", _SEED, 9, f"seed: validation {metric}"),
    ):
        value = scores[who].get("validation")
        if value is not None:
            ax.plot([final], [value], marker, color=colour, markersize=size, label=label)
    direction = "higher is better" if higher_is_better else "lower is better"
    ax.set(ylabel=f"{metric} ({direction})", title=f"Fitness ({metric} on the judged train samples)")
    ax.set_xticks([*gens, final], [*map(str, gens), "validation"])
    ax.set_xlabel("generation (train)  |  final choice")
    ax.margins(x=0.08, y=0.15)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing measured: no legend (and no warning about it)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    return _png(fig)


def calls_png(history: Sequence[Mapping[str, Any]], *, judge_total: int, meta_total: int) -> bytes:
    """Cumulative judge and meta calls at the end of each generation, plus the run's totals
    (which include the final validation) as the last bar."""
    fig = Figure(figsize=_SIZE)
    ax = fig.subplots()
    labels = [str(g) for g in _generations(history)] + ["total"]
    judge = [int(h.get("judge_calls", 0)) for h in history] + [judge_total]
    meta = [int(h.get("meta_calls", 0)) for h in history] + [meta_total]
    xs = range(len(labels))
    ax.bar(xs, judge, color=_BEST, label="judge calls")
    ax.bar(xs, meta, bottom=judge, color=_META, label="meta calls")
    for x, (j, m) in enumerate(zip(judge, meta)):
        ax.annotate(f"{j + m}", (x, j + m), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs), labels)
    ax.set(xlabel="generation", ylabel="LLM calls so far", title="Calls spent")
    ax.margins(y=0.12)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    return _png(fig)


@dataclass(frozen=True)
class Point:
    """One candidate's figure on validation: ``label``, ``value`` and its interval (``low``,
    ``high``; None: no interval for this figure); ``chosen`` marks the chosen judge, ``seed`` the seed."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    chosen: bool = False
    seed: bool = False


def candidates_png(
    points: Sequence[Point],
    *,
    metric: str,
    higher_is_better: bool,
    samples: int | None,
    figure: str = "validation",
) -> bytes:
    """Each candidate's ``figure`` (validation, or cross-validated for a refit) with its 95%
    interval when one was drawn, one row each (the seed first,
    the chosen judge starred): whether a difference is larger than the noise of ``samples``
    annotations is read off the overlap of the bars."""
    fig = Figure(figsize=(6.5, max(2.2, 0.45 * len(points) + 1.2)))
    ax = fig.subplots()
    ys = list(range(len(points)))[::-1]
    for y, pt in zip(ys, points):
        colour = _BEST if pt.chosen else _SEED if pt.seed else _MEAN
        if pt.low is not None and pt.high is not None:
            ax.plot([pt.low, pt.high], [y, y], "-", color=colour, linewidth=2.5, alpha=0.6)
        ax.plot([pt.value], [y], "*" if pt.chosen else "o", color=colour, markersize=13 if pt.chosen else 7)
        ax.annotate(
            f"{pt.value:.3f}",
            (pt.value, y),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=8,
        )
    ax.set_yticks(ys, [pt.label for pt in points])
    direction = "higher is better" if higher_is_better else "lower is better"
    on = f" on {samples} samples ({figure})" if samples else ""
    drawn = ", 95% interval" if any(pt.low is not None for pt in points) else ""
    ax.set(xlabel=f"{figure} {metric} ({direction}){drawn}", title=f"Candidates{on}")
    ax.margins(x=0.1, y=0.25)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def confusion_png(matrices: Sequence[tuple[str, Sequence[Sequence[int]]]]) -> bytes:
    """Confusion matrices (rows the human label 0/1, columns the judge's verdict), side by side,
    each cell with its count; the diagonal is agreement."""
    fig = Figure(figsize=(3.2 * len(matrices), 3.2))
    axes = fig.subplots(1, len(matrices), squeeze=False)[0]
    for index, (ax, (title, matrix)) in enumerate(zip(axes, matrices)):
        ax.imshow(matrix, cmap="Blues", vmin=0)
        peak = max(max(row) for row in matrix) or 1
        for i, row in enumerate(matrix):
            for j, count in enumerate(row):
                ax.text(
                    j, i, str(count), ha="center", va="center", color="white" if count > peak / 2 else "black"
                )
        ax.set_xticks([0, 1], ["judge 0", "judge 1"])
        ax.set_yticks([0, 1], ["human 0", "human 1"] if index == 0 else ["", ""])
        ax.set_title(title, fontsize=9)
    return _png(fig)


def stage_cost_png(rows: Sequence[tuple[str, int, int, int]], *, by: str = "stage") -> bytes:
    """Judge and meta calls (bars) and tokens (labels) per stage, ``rows`` of (name, judge calls,
    meta calls, tokens) in pipeline order."""
    fig = Figure(figsize=_SIZE)
    ax = fig.subplots()
    names = [r[0] for r in rows]
    judge = [r[1] for r in rows]
    meta = [r[2] for r in rows]
    xs = range(len(rows))
    ax.bar(xs, judge, color=_BEST, label="judge calls")
    ax.bar(xs, meta, bottom=judge, color=_META, label="meta calls")
    for x, (j, m, tokens) in enumerate(zip(judge, meta, (r[3] for r in rows))):
        ax.annotate(f"{j + m} calls\n{tokens:,} tokens", (x, j + m), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(xs), names)
    ax.set(xlabel=by, ylabel="LLM calls", title=f"Cost per {by}")
    ax.set_ylim(0, max([j + m for j, m in zip(judge, meta)] + [1]) * 1.3)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    return _png(fig)
