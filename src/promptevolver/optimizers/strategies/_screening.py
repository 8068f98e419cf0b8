"""Screening: judge a new candidate on a few samples before paying for all of train.

Each offspring gets its own *focused minibatch* of ``size`` train samples: up to half are samples
its parents get wrong (for a mutation, the failures it was written to fix; for a crossover, the
samples either parent misses; for a reverse-engineered candidate, the seed's failures), the rest
a stratified draw from the other train samples (so it also shows whether the child breaks what
already works). The child is judged on all train samples only if it is **strictly better** than
each parent on that minibatch (on the samples both were measured on) — the acceptance rule of
GEPA (Agrawal et al. 2025), which also screens on the minibatch its reflection saw — or when it
ties and gets samples right that its parent gets wrong (a complementary child, kept for the
Pareto front and crossover; a child that ties by getting the same samples right brings nothing
and is dropped). Parents were judged on every train sample already, so their minibatch scores
cost no calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from promptevolver.annotations import stratified_sample
from promptevolver.evaluation import Loss, Score
from promptevolver.optimizers._candidates import Candidate

__all__ = ["ScreeningView", "focused_minibatch", "passes", "screen"]


@dataclass(frozen=True)
class ScreeningView:
    """What screening reads of a run (built by :func:`~promptevolver.optimizers._views.screening_view`).

    Attributes:
        size: minibatch size in samples (0: screening off).
        train: the train positions candidates are judged on; labels: human label per position.
        loss: the loss (its direction decides who is better).
        rng: the run's generator (minibatches are drawn from it, in child order).
        judge_each: judges each (candidate, positions) pair, all at once, recording events under
            the given split name; returns their scores in item order.
        score_on: a candidate's score on positions from memoised judgements (no calls).
    """

    size: int
    train: Sequence[int]
    labels: Sequence[float | None]
    loss: Loss
    rng: np.random.Generator
    judge_each: Callable[[list[tuple[Candidate, Sequence[int]]], str], Awaitable[list[Score]]]
    score_on: Callable[[Candidate, Sequence[int]], Awaitable[Score]]


def focused_minibatch(
    parents: Sequence[Candidate],
    train: Sequence[int],
    labels: Sequence[float | None],
    size: int,
    rng: np.random.Generator,
) -> list[int]:
    """``size`` train positions (at most all of them): ``min(failing, size // 2)`` where a parent
    fails and the rest from the other samples, each part stratified by label; when the others
    are too few, more failing samples fill the minibatch.

    Parents must have train scores aligned with ``train``. Returned sorted.
    """
    size = min(size, len(train))
    failing = np.zeros(len(train), dtype=bool)
    for parent in parents:
        failing |= parent.train_correct() < 1.0
    focus = [p for p, f in zip(train, failing) if f]
    rest = [p for p, f in zip(train, failing) if not f]
    n_rest = min(len(rest), size - min(len(focus), size // 2))
    chosen = _draw(focus, size - n_rest, labels, rng) + _draw(rest, n_rest, labels, rng)
    return sorted(chosen)


def _draw(
    positions: Sequence[int], n: int, labels: Sequence[float | None], rng: np.random.Generator
) -> list[int]:
    keep = stratified_sample([labels[p] for p in positions], n, rng)
    return [positions[i] for i in keep]


def passes(child: float, parents: Sequence[float], loss: Loss) -> bool:
    """True when ``child`` is strictly better than the best of ``parents`` in the loss's direction."""
    best = max(parents) if loss.higher_is_better else min(parents)
    return loss.better(child, best)


async def screen(
    view: ScreeningView, children: list[Candidate], parents_of: dict[int, list[Candidate]]
) -> list[Candidate]:
    """The children strictly better than their best parent on their focused minibatch.

    All children are judged at once, each on its own minibatch (drawn in child order from the
    run's generator); their ``minibatch`` score is recorded and those that fail are marked
    ``screened_out``. Screening is off (every child passes) when the minibatch size is 0.
    """
    size = view.size
    if size == 0 or not children:
        return children
    rng = view.rng
    batches = [focused_minibatch(parents_of[c.id], view.train, view.labels, size, rng) for c in children]
    scores = await view.judge_each(list(zip(children, batches)), "minibatch")
    passed = []
    for child, batch, mini in zip(children, batches, scores):
        child.minibatch = mini
        parents = [await view.score_on(p, batch) for p in parents_of[child.id]]
        child.screened_out = not all(_worth_judging(mini, parent, view.loss) for parent in parents)
        if not child.screened_out:
            passed.append(child)
    return passed


def _worth_judging(child: Score, parent: Score, loss: Loss) -> bool:
    """On the minibatch samples both were measured on: ``child`` strictly better than ``parent``,
    or as good and right where the parent is wrong (a complementary child: it gets other samples
    right, which a crossover can combine). False when they share no measured sample."""
    common = child.measured & parent.measured
    mine, theirs = child.value_on(loss, common), parent.value_on(loss, common)
    if mine is None or theirs is None:
        return False
    if passes(mine, [theirs], loss):
        return True
    complementary = bool((child.correct[common] > parent.correct[common]).any())
    return complementary and not loss.better(theirs, mine)
