"""Racing: judge candidates on held-out samples in looks; stop judging one once it is clearly worse.

The verification stage (:mod:`..phases`) judges the seed and the distilled ladder on held-out
samples. Judging every candidate on every sample is wasteful when a rung is plainly worse than
another after a few dozen samples, so the samples are judged in ``looks`` cumulative chunks (a
seeded shuffle of the held-out positions, so each chunk is a fair draw), and after every look but
the last a **sequential paired test** is applied: each candidate still racing, other than the
seed and the leader (the best weighted mean quality so far), is compared with the leader, paired,
on the samples both were judged on — the paired bootstrap of :mod:`._final_choice` gives the
probability ``p`` that it is better. A candidate with ``p < alpha`` stops being judged.

This is racing in the sense of Maron & Moore, "Hoeffding Races: Accelerating Model Selection
Search" (NIPS 1993), with a paired bootstrap instead of Hoeffding bounds, and with the looks of
successive halving (Jamieson & Talwalkar, AISTATS 2016) but without its fixed elimination
quota: only clear losers go. The seed is never dropped (the final choice compares every finalist
with it). Looking several times raises the chance of dropping a candidate that was in truth
as good (each look is a test at ``alpha``); such a candidate could only have replaced the seed
through the final choice, which is made on all held-out samples with its own threshold.

:attr:`Race.report` holds the rule, who was dropped after which look with what ``p``, and the
judge calls saved (the samples a dropped candidate was not judged on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

import numpy as np

from promptevolver.evaluation import Score
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.strategies._final_choice import paired

__all__ = ["Race"]

#: ``judge(candidates, positions)`` → their scores on ``positions`` (memoised: a pair judged
#: before costs no call).
Judge = Callable[[Sequence[Candidate], Sequence[int]], Awaitable[list[Score]]]


class Race:
    """A sequential paired race on held-out samples (see the module docstring).

    Args:
        looks: cumulative chunks the samples are judged in (≥ 1; 1: no racing).
        alpha: a candidate whose probability of beating the leader falls below this stops.
        futility: the id of a reference candidate: after each look but the last, a candidate
            that does no better than it on the samples judged so far (paired Δ ≤ 0) stops — it
            has to beat the reference to be chosen (the examples stage), and a candidate that
            has shown no gain on a quarter of the samples rarely ends with a clear one.

    Raises:
        ValueError: an argument out of range.
    """

    def __init__(self, *, looks: int = 4, alpha: float = 0.1, futility: int | None = None) -> None:
        if looks < 1:
            raise ValueError(f"looks must be >= 1, got {looks}")
        if not 0.0 <= alpha < 0.5:
            raise ValueError(f"alpha must be in [0, 0.5), got {alpha}")
        self.looks = looks
        self.alpha = alpha
        self.futility = futility
        #: After :meth:`run`: the rule, the dropped candidates and the judge calls saved.
        self.report: dict[str, Any] = {}

    async def run(
        self,
        candidates: Sequence[Candidate],
        positions: Sequence[int],
        weights: np.ndarray,
        judge: Judge,
        rng: np.random.Generator,
        *,
        keep: Collection[int] = (),
        calls_per_evaluation: int = 1,
    ) -> list[Candidate]:
        """Race ``candidates`` (the seed among them) on ``positions`` (``weights``: what each
        stands for, shape ``(len(positions),)``); the seed and the candidates whose ids are in
        ``keep`` are never dropped. Returns those judged on every position, in the order given."""
        order = rng.permutation(len(positions)).tolist()
        cuts = sorted({max(1, round(len(order) * (k + 1) / self.looks)) for k in range(self.looks)})
        alive = list(candidates)
        dropped: list[dict[str, Any]] = []
        saved = 0
        for look, cut in enumerate(cuts, start=1):
            idx = order[:cut]
            shown = [positions[i] for i in idx]
            scores = dict(zip((c.id for c in alive), await judge(alive, shown)))
            few = len(alive) <= 2  # the seed and one other: no leader test, only futility
            if look == len(cuts) or (few and self.futility is None):
                continue
            w = weights[idx]
            leader = max(alive, key=lambda c: (_mean(scores[c.id], w), c.is_seed, -c.length, -c.id))
            everywhere = np.ones(len(idx), dtype=bool)
            for c in list(alive):
                if c.is_seed or c.id in keep or c.id == self.futility:
                    continue
                if self.futility is not None and self.futility in scores:
                    gain, _ = paired(scores[c.id], scores[self.futility], everywhere, w, rng)
                    if gain is not None and gain <= 0:
                        alive.remove(c)
                        saved += (len(positions) - cut) * calls_per_evaluation
                        dropped.append(
                            {"id": c.id, "look": look, "judged": cut, "futile_against": self.futility}
                        )
                        continue
                if c is leader or few:
                    continue
                delta, p = paired(scores[c.id], scores[leader.id], everywhere, w, rng)
                if delta is not None and p < self.alpha:
                    alive.remove(c)
                    saved += (len(positions) - cut) * calls_per_evaluation
                    dropped.append(
                        {"id": c.id, "look": look, "judged": cut, "leader": leader.id, "p_better": p}
                    )
        self.report = {
            "rule": (
                f"sequential paired test: {len(cuts)} looks; after each but the last a candidate "
                f"whose probability of beating the leader is below {self.alpha:g} stops being judged"
            ),
            "looks": cuts,
            "dropped": dropped,
            "saved_judge_calls": saved,
        }
        return [c for c in candidates if c in alive]


def _mean(score: Score, weights: np.ndarray) -> float:
    keep = score.measured
    if not keep.any():
        return -np.inf
    return float(np.dot(score.correct[keep], weights[keep]) / weights[keep].sum())
