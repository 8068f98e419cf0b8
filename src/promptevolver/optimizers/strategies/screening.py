"""Screening: judge a new candidate on a few samples before paying for all of train.

Each offspring gets its own *focused minibatch* of ``size`` train samples: up to half are samples
its parents get wrong (for a mutation, the failures it was written to fix; for a crossover, the
samples either parent misses; for a reverse-engineered candidate, the seed's failures), the rest
a stratified draw from the other train samples (so it also shows whether the child breaks what
already works). The child is judged on all train samples only if it is **strictly better** than
its best parent on that minibatch — the acceptance rule of GEPA (Agrawal et al. 2025), which
also screens on the minibatch its reflection saw. A child that merely ties its parent there
brings nothing measurable and is dropped. Parents were judged on every train sample already,
so their minibatch scores cost no calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from promptevolver.annotations import sampling
from promptevolver.evaluation.losses import Loss
from promptevolver.optimizers.candidates import Candidate

__all__ = ["focused_minibatch", "passes"]


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
    keep = sampling.stratified_sample([labels[p] for p in positions], n, rng)
    return [positions[i] for i in keep]


def passes(child: float, parents: Sequence[float], loss: Loss) -> bool:
    """True when ``child`` is strictly better than the best of ``parents`` in the loss's direction."""
    best = max(parents) if loss.higher_is_better else min(parents)
    return loss.better(child, best)
