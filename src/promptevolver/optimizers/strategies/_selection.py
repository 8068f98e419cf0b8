"""Selection: ranking, elitism, tournaments, the Pareto front, complementary parents, and the
parent-selection role the breeder calls (:class:`ParentSelector`, default :class:`ParetoTournament`).

All functions are pure: they read candidates' scores and draw from the ``numpy.random.Generator``
they are given; they never create state.

**Ranking and ties** (:func:`rank`): better score first in the loss's direction; on equal score
the seed first, then the shorter instruction, then the older candidate (lower id); a tie at the
top is logged (logger ``promptevolver.optimizers.strategies._selection``, INFO: shown with
``--verbose``). A candidate
with nothing measured, or whose evaluations failed on more than ``1 - min_coverage`` of the
samples, ranks after every candidate that was measured well enough: it cannot win.

**Failed evaluations** are left out everywhere: per-sample correctness is NaN there, and two
candidates are compared on the samples both have.

**Pareto front** (:func:`pareto_front`, as GEPA, Agrawal et al. 2025, "GEPA: Reflective Prompt
Evolution Can Outperform Reinforcement Learning"): the candidates that are best on at least one
train sample where candidates differ, minus those dominated (another is at least as good on
every sample and better on one) and twins (same per-sample correctness as a better-ranked one).
They survive selection even when their mean is lower.

**Complementary parents** (:func:`complementary_parents`): the first parent is a tournament winner
among the fitter half of the pool; the second is the other member of the fitter half whose
per-sample correctness differs from the first's on the most samples (Hamming distance), ties
to the better-ranked. A candidate is never paired with itself, nor with one that is right and
wrong on exactly the same samples (distance 0: there is nothing to combine).

**Parents of an offspring** (:class:`ParentSelector`): the breeder asks the run's selector for
the parents an operator takes (its ``arity``) and hands them to the operator's ``plan``; operators
never select. :class:`ParetoTournament`, the default: one parent is a tournament winner among the
Pareto front of the candidates the operator can improve (all of them when none is on the front);
two parents are :func:`complementary_parents`; none is the empty tuple.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from promptevolver.evaluation import Loss
from promptevolver.optimizers._candidates import Candidate

__all__ = [
    "ParentSelector",
    "ParetoTournament",
    "Pool",
    "complementary_parents",
    "front_rows",
    "pareto_front",
    "rank",
    "survivors",
    "tournament",
]


logger = logging.getLogger(__name__)

#: Default share of a candidate's evaluations that must succeed for it to be ranked on its score.
MIN_COVERAGE = 0.8


def _key(candidate: Candidate, value: float, higher_is_better: bool) -> tuple[float, bool, int, int]:
    return (-value if higher_is_better else value, not candidate.is_seed, candidate.length, candidate.id)


def rank(
    candidates: Sequence[Candidate], loss: Loss, *, on: str = "train", min_coverage: float = MIN_COVERAGE
) -> list[Candidate]:
    """Candidates best first by their ``on`` (``train`` or ``validation``) score; ties, and
    candidates measured on too few samples, as above.

    Raises:
        ValueError: a candidate has no ``on`` score.
    """

    def value(c: Candidate) -> float:
        s = c.train if on == "train" else c.validation
        if s is None:
            raise ValueError(f"candidate {c.id} has no {on} score")
        return loss.worst() if s.value is None or s.coverage < min_coverage else s.value

    ranked = sorted(candidates, key=lambda c: _key(c, value(c), loss.higher_is_better))
    if len(ranked) > 1 and value(ranked[0]) == value(ranked[1]):
        tied = [c for c in ranked if value(c) == value(ranked[0])]
        logger.info(
            "tie on %s at %.4f between candidates %s: candidate %d ranks first (the seed first, then "
            "the shorter instruction, then the lower id)",
            on,
            value(ranked[0]),
            ", ".join(str(c.id) for c in tied),
            ranked[0].id,
        )
    return ranked


def pareto_front(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Non-dominated candidates that are best on at least one discriminating train sample.

    Of candidates with identical per-sample correctness only the first (in input order) is kept,
    so twins cannot crowd a specialist out. Returns all candidates when no sample discriminates
    between them. Order is input order.
    """
    if len(candidates) <= 1:
        return list(candidates)
    rows = front_rows(np.stack([c.train_correct() for c in candidates]))
    return [candidates[i] for i in rows]


def front_rows(matrix: np.ndarray) -> list[int]:
    """:func:`pareto_front` of a per-sample quality matrix: the indices of its front rows.

    Args:
        matrix: shape ``(n_candidates, n_samples)``, per-sample quality (higher is better), NaN
            where a candidate was not measured on a sample.

    Returns:
        Row indices in increasing order; every row when no sample discriminates between them.
    """
    n = matrix.shape[0]
    if n <= 1:
        return list(range(n))
    measured = ~np.isnan(matrix)
    filled_low = np.where(measured, matrix, np.inf)
    filled_high = np.where(measured, matrix, -np.inf)
    best = filled_high.max(axis=0)
    discriminating = measured.sum(axis=0) >= 2
    discriminating &= filled_low.min(axis=0) < best
    if not discriminating.any():
        return list(range(n))
    on_top = (filled_high[:, discriminating] == best[discriminating]).any(axis=1)
    front: list[int] = []
    seen: set[bytes] = set()
    for i in range(n):
        signature = np.nan_to_num(matrix[i], nan=-1.0).tobytes()
        if not on_top[i] or signature in seen:
            continue
        seen.add(signature)
        if not any(_dominates(matrix[j], matrix[i]) for j in range(n) if j != i):
            front.append(i)
    return front or list(range(n))


def _dominates(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` at least as good as ``b`` on every sample both have, and better on one."""
    common = ~np.isnan(a) & ~np.isnan(b)
    return bool(common.any() and (a[common] >= b[common]).all() and (a[common] > b[common]).any())


def tournament(pool: Sequence[Candidate], loss: Loss, rng: np.random.Generator, size: int) -> Candidate:
    """The best-ranked of ``size`` candidates drawn without replacement from ``pool``.

    Raises:
        ValueError: empty pool or ``size`` < 1.
    """
    if not pool or size < 1:
        raise ValueError(f"tournament needs a non-empty pool and size >= 1 (pool={len(pool)}, size={size})")
    drawn = rng.choice(len(pool), size=min(size, len(pool)), replace=False)
    return rank([pool[i] for i in sorted(drawn.tolist())], loss)[0]


def complementary_parents(
    pool: Sequence[Candidate], loss: Loss, rng: np.random.Generator, tournament_size: int
) -> tuple[Candidate, Candidate] | None:
    """Two different parents that disagree on the most samples; None if the pool has fewer than
    two candidates or no candidate of the fitter half differs from the first parent anywhere."""
    ranked = rank(pool, loss)
    fitter = ranked[: max(2, -(-len(ranked) // 2))]
    if len(fitter) < 2:
        return None
    first = tournament(fitter, loss, rng, tournament_size)
    others = [c for c in fitter if c.id != first.id]
    distances = [_disagreements(c.train_correct(), first.train_correct()) for c in others]
    best = int(np.argmax(distances))  # argmax keeps the first (best-ranked) on ties
    return (first, others[best]) if distances[best] > 0 else None


def _disagreements(a: np.ndarray, b: np.ndarray) -> int:
    """Samples measured for both on which their correctness differs (Hamming distance)."""
    common = ~np.isnan(a) & ~np.isnan(b)
    return int((a[common] != b[common]).sum())


def survivors(
    candidates: Sequence[Candidate],
    loss: Loss,
    size: int,
    elite_count: int,
    *,
    min_coverage: float = MIN_COVERAGE,
) -> list[Candidate]:
    """The next population: ``elite_count`` best, then the Pareto front, then the best of the rest.

    Returns at most ``size`` candidates, best-ranked first (see :func:`rank` for ``min_coverage``).
    """
    ranked = rank(candidates, loss, min_coverage=min_coverage)
    chosen: dict[int, Candidate] = {c.id: c for c in ranked[:elite_count]}
    front_ids = {c.id for c in pareto_front(ranked)}
    for group in ([c for c in ranked if c.id in front_ids], ranked):
        for c in group:
            if len(chosen) >= size:
                break
            chosen.setdefault(c.id, c)
    return rank(list(chosen.values()), loss, min_coverage=min_coverage)


@dataclass(frozen=True)
class Pool:
    """Who may be a parent: the ``population``, the ``loss`` that ranks it, the tournament size,
    and which candidates the operator can improve (``eligible``; None: all)."""

    population: Sequence[Candidate]
    loss: Loss
    tournament_size: int
    eligible: Callable[[Candidate], bool] | None = None


class ParentSelector(Protocol):
    """The parent-selection role: who an offspring's parents are (see the module docstring)."""

    def select(self, pool: Pool, arity: int, rng: np.random.Generator) -> tuple[Candidate, ...] | None:
        """``arity`` parents drawn from ``rng`` among ``pool``, or None when it offers none."""
        ...


class ParetoTournament:
    """The default :class:`ParentSelector`: a tournament on the Pareto front of the eligible
    candidates for one parent, :func:`complementary_parents` for two, none for zero.

    Raises (from :meth:`select`):
        ValueError: an ``arity`` other than 0, 1 or 2.
    """

    def select(self, pool: Pool, arity: int, rng: np.random.Generator) -> tuple[Candidate, ...] | None:
        if arity == 0:
            return ()
        if arity == 2:
            return complementary_parents(pool.population, pool.loss, rng, pool.tournament_size)
        if arity != 1:
            raise ValueError(f"ParetoTournament selects 0, 1 or 2 parents, not {arity}")
        eligible = [c for c in pool.population if pool.eligible is None or pool.eligible(c)]
        if not eligible:
            return None
        front = [c for c in pareto_front(pool.population) if c in eligible] or eligible
        return (tournament(front, pool.loss, rng, pool.tournament_size),)
