"""The final choice: which candidate the run returns, decided on held-out samples against the seed.

:class:`PairedChoice`. The seed and the ``finalists`` best train candidates of the last population
are judged on the validation focus set (:mod:`..focus`). Each finalist is compared with the seed
**paired**, on the samples both were measured on: the difference of their per-sample quality
(1 where the verdict matches the human's, 0 where not; for numeric metrics 1 − |error|),
weighted by what each judged sample stands for, estimates how much better it is on the whole
validation part (Δ). A paired bootstrap over those samples (Efron & Tibshirani, *An Introduction
to the Bootstrap*, 1993, ch. 16; 2,000 resamples from the run's seeded generator) gives the
probability that the finalist is better than the seed, ``p``.

Out-of-bag (small data, :mod:`..split`) the comparison is on the train samples the finalist's
lineage never learned from, with the train judgements already made (no extra call).

The rule (:class:`PairedRule`, the one rule every choice of a run applies): the finalist with the
largest Δ is returned when Δ > 0 and ``p`` ≥ ``confidence``
(default 0.7); otherwise the seed. So a candidate replaces the seed only when the held-out
evidence says it is better with that probability — the principled form of "never worse than the
seed" — while a small validation set that cannot tell them apart keeps the seed. An extended run
(``--resume`` with more generations) keeps its earlier choice, the *incumbent*, as a finalist, and
a finalist replaces it only when it beats the incumbent in the same paired way: an extension never
returns a candidate worse on validation than the one it started from. Replayed on 36
judgeworld runs (``benchmarks/judgeworld/choice_rule.py``: 6 worlds × 3 seeds × 2 populations),
0.7 kept the seed when a finalist was better on the test split in 3 % of runs and never returned a
worse one; 0.8 kept it in 6 %, 0.95 in 25 %. A finalist
whose evaluations failed on more than ``1 - min_coverage`` of the samples cannot be chosen.
:attr:`PairedChoice.report` says what was compared and why the result was chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from promptevolver.evaluation import Loss, Score
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.strategies import _selection as selection

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "Comparison",
    "Paired",
    "PairedChoice",
    "PairedRule",
    "final_choice_rng",
    "held_out",
    "out_of_bag",
    "paired",
]

#: Stream of the final choice's bootstrap, apart from the search's generator (see final_choice_rng).
FINAL_CHOICE_STREAM = 0xF1A1

#: Resamples of the paired bootstrap.
BOOTSTRAP_RESAMPLES = 2000


def final_choice_rng(random_seed: int) -> np.random.Generator:
    """The final choice's own generator, from the run's ``random_seed`` alone: the bootstrap draws
    the same resamples however far the search's generator has advanced, so a resume after the
    last checkpoint (which is written after the choice) repeats the same choice."""
    return np.random.default_rng((random_seed, FINAL_CHOICE_STREAM))


@dataclass(frozen=True)
class Paired:
    """One paired comparison of a candidate with a reference on the same samples (:func:`paired`).

    Attributes:
        delta: the weighted mean difference of per-sample quality, candidate minus reference
            (> 0: the candidate did better); None when no sample was measured for both.
        p_better: the bootstrap probability, in [0, 1], that the candidate is better.
        coverage: the share of its evaluations, in [0, 1], the candidate has measured.
    """

    delta: float | None
    p_better: float
    coverage: float


@dataclass(frozen=True)
class PairedRule:
    """The one decision rule of a run: "better than X with probability ``confidence``", on a
    paired comparison (:class:`Paired`). The verification, the ladder's rules (a higher rung,
    nothing to beat), the examples stage, the cross-fit check, the refit's recipe and the final
    choice each ask it one of these questions:

    * :meth:`beats`: the candidate is better than X (Δ > 0) with probability ``confidence``;
    * :meth:`likely_better`: the probability alone says so (the ladder's test of a lower rung
      against a higher one);
    * :meth:`not_shown_worse`: X is not better than the candidate with probability
      ``confidence`` (lessons learnt from human corrections stay unless the evidence says they
      hurt); small data's refit asks it of a stricter rule, :meth:`at_confidence` of
      ``_refit.HURT`` (:mod:`promptevolver.optimizers._refit`).

    A candidate measured on less than ``min_coverage`` of its evaluations is not
    :meth:`eligible` to be chosen.

    Args:
        confidence: the probability, in [0.5, 1), the rule asks for.
        min_coverage: share of its evaluations, in [0, 1], a candidate needs measured.

    Raises:
        ValueError: ``confidence`` out of range.
    """

    confidence: float = 0.7
    min_coverage: float = selection.MIN_COVERAGE

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1.0:
            raise ValueError(f"confidence must be in [0.5, 1), got {self.confidence}")

    def compare(
        self,
        candidate: Score,
        reference: Score,
        mask: np.ndarray,
        weights: np.ndarray,
        rng: np.random.Generator,
    ) -> Paired:
        """``candidate`` against ``reference`` on the samples within ``mask`` (:func:`paired`)."""
        delta, p = paired(candidate, reference, mask, weights, rng)
        return Paired(delta, p, candidate.coverage)

    def eligible(self, x: Paired) -> bool:
        """Measured against the reference, on at least ``min_coverage`` of its evaluations."""
        return x.delta is not None and x.coverage >= self.min_coverage

    def beats(self, x: Paired) -> bool:
        """Better than the reference (Δ > 0) with probability ``confidence``."""
        return x.delta is not None and x.delta > 0 and x.p_better >= self.confidence

    def likely_better(self, x: Paired) -> bool:
        """Measured, and better than the reference with probability ``confidence`` (Δ unread)."""
        return x.delta is not None and x.p_better >= self.confidence

    def not_shown_worse(self, x: Paired) -> bool:
        """Measured, and the reference is not better with probability ``confidence``."""
        return x.delta is not None and 1.0 - x.p_better < self.confidence

    def at_confidence(self, floor: float) -> PairedRule:
        """This rule asking for probability ``floor`` at least (its own ``confidence`` when
        higher)."""
        return replace(self, confidence=max(self.confidence, floor))


class PairedChoice:
    """Chooses between the seed and the best train candidates on validation (see the module docstring).

    Args:
        finalists: best train candidates judged on validation besides the seed (≥ 1).
        confidence: probability, in [0.5, 1), that a finalist beats the seed needed to choose it.
        min_coverage: share of its evaluations a candidate needs measured to be chosen.

    Raises:
        ValueError: an argument out of range.
    """

    def __init__(
        self, *, finalists: int = 2, confidence: float = 0.7, min_coverage: float = selection.MIN_COVERAGE
    ) -> None:
        if finalists < 1:
            raise ValueError(f"finalists must be >= 1, got {finalists}")
        self.rule = PairedRule(confidence=confidence, min_coverage=min_coverage)
        self.finalists = finalists
        self.confidence = confidence
        self.min_coverage = min_coverage
        #: After :meth:`choose`: the rule, every finalist's Δ, p and coverage, the choice and why.
        self.report: dict[str, Any] = {}
        #: After :meth:`choose`: each finalist's comparison with the seed, by candidate id.
        self.compared: dict[int, Paired] = {}

    def candidates(
        self,
        seed: Candidate,
        population: Sequence[Candidate],
        loss: Loss,
        incumbent: Candidate | None = None,
    ) -> list[Candidate]:
        """The seed, then the ``finalists`` best of ``population`` by train score, then the
        ``incumbent`` (an extended run's earlier choice) when given (each once)."""
        top = selection.rank(population, loss, min_coverage=self.min_coverage)[: self.finalists]
        extra = [] if incumbent is None else [incumbent]
        return list({c.id: c for c in [seed, *top, *extra]}.values())

    def choose(
        self,
        finalists: Sequence[Candidate],
        compare: Comparison,
        rng: np.random.Generator,
        *,
        incumbent: Candidate | None = None,
        alone: str = "no candidate besides the seed was left in the population",
    ) -> Candidate:
        """The seed (the finalist with ``is_seed``) or the finalist that beats it, given
        ``compare(finalist) -> (finalist's score, seed's score, mask, weights)``: the two scores on
        the same samples, the samples held out for that finalist (boolean mask) and what each
        stands for (:func:`held_out`, :func:`out_of_bag`).

        Args:
            incumbent: an extended run's earlier choice (one of ``finalists``, not the seed): it
                stays the result unless a finalist beats it (see the module docstring).
            alone: why the seed is the only finalist, when it is (the reason says so).
        """
        seed = next(c for c in finalists if c.is_seed)
        rows: list[dict[str, Any]] = []
        best: tuple[Paired, Candidate] | None = None
        self.compared = {}
        for c in finalists:
            if c.is_seed:
                continue
            x = self.rule.compare(*compare(c), rng)
            self.compared[c.id] = x
            eligible = self.rule.eligible(x)
            coverage = round(x.coverage, 6)
            rows.append(
                {
                    "id": c.id,
                    "delta": x.delta,
                    "p_better": x.p_better,
                    "coverage": coverage,
                    "eligible": eligible,
                }
            )
            if eligible and x.delta is not None and (best is None or x.delta > (best[0].delta or 0.0)):
                best = (x, c)
        chosen, why = self._decide(seed, best, alone if not rows else None)
        if incumbent is not None and not incumbent.is_seed:
            chosen, why = self._defend(incumbent, chosen, why, rows, compare, rng)
        self.report = {
            "rule": "paired bootstrap against the seed on the samples held out for each finalist",
            "confidence": self.confidence,
            "finalists": rows,
            "chosen": chosen.id,
            "why": why,
        }
        return chosen

    def _decide(
        self, seed: Candidate, best: tuple[Paired, Candidate] | None, alone: str | None
    ) -> tuple[Candidate, str]:
        if alone is not None:
            return seed, f"only the seed reached the final choice: {alone}"
        if best is None:
            return seed, (
                "no finalist besides the seed was measured on enough validation samples (failed "
                f"evaluations; a candidate needs {self.min_coverage:.0%} of its samples measured)"
            )
        x, finalist = best
        delta, p = x.delta or 0.0, x.p_better
        if delta <= 0:
            return seed, "no finalist did better than the seed on validation"
        if not self.rule.beats(x):
            return seed, (
                f"candidate {finalist.id} did better on validation (Δ {delta:+.3f}) but with probability "
                f"{p:.2f} < {self.confidence:g} that it is better: too few validation samples tell them apart"
            )
        why = (
            f"better than the seed on validation by {delta:+.3f} with probability {p:.2f} (paired bootstrap)"
        )
        return finalist, why

    def _defend(
        self,
        incumbent: Candidate,
        chosen: Candidate,
        why: str,
        rows: Sequence[dict[str, Any]],
        compare: Comparison,
        rng: np.random.Generator,
    ) -> tuple[Candidate, str]:
        """An extension's result: ``chosen`` when it is the incumbent or beats it paired (Δ > 0
        with probability ≥ ``confidence``), else the incumbent."""
        if chosen.id == incumbent.id:
            return chosen, why
        delta = {r["id"]: r["delta"] for r in rows if r["eligible"]}
        if incumbent.id not in delta:  # no longer measurable against the seed: keep what was chosen
            return chosen, why
        kept = f"the earlier choice, candidate {incumbent.id}, is kept"
        if chosen.is_seed or chosen.id not in delta or delta[chosen.id] <= delta[incumbent.id]:
            return incumbent, f"{kept}: no finalist of the extension did better on validation ({why})"
        mine, _, mask, weights = compare(chosen)
        theirs, _, their_mask, _ = compare(incumbent)
        x = self.rule.compare(mine, theirs, mask & their_mask, weights, rng)
        d, p = x.delta, x.p_better
        if not self.rule.beats(x):
            shown = "n/a" if d is None else f"{d:+.3f}"
            return incumbent, (
                f"{kept}: candidate {chosen.id} did not beat it on validation with probability ≥ "
                f"{self.confidence:g} (Δ {shown}, p {p:.2f}, paired bootstrap)"
            )
        return (
            chosen,
            f"{why}; better than the earlier choice, candidate {incumbent.id}, by {d:+.3f} (p {p:.2f})",
        )


Comparison = Callable[[Candidate], tuple[Score, Score, np.ndarray, np.ndarray]]


def held_out(seed: Candidate, weights: np.ndarray) -> Comparison:
    """Compare on the validation part: every validation sample, ``weights`` from its focus set."""

    def compare(c: Candidate) -> tuple[Score, Score, np.ndarray, np.ndarray]:
        assert c.validation is not None and seed.validation is not None
        return c.validation, seed.validation, np.ones(len(weights), dtype=bool), weights

    return compare


def out_of_bag(seed: Candidate, train: Sequence[int]) -> Comparison:
    """Compare on the train samples the finalist's lineage never learned from (``seen``)."""

    def compare(c: Candidate) -> tuple[Score, Score, np.ndarray, np.ndarray]:
        assert c.train is not None and seed.train is not None
        mask = np.array([p not in c.seen for p in train], dtype=bool)
        return c.train, seed.train, mask, np.ones(len(train))

    return compare


def paired(
    candidate: Score, seed: Score, mask: np.ndarray, weights: np.ndarray, rng: np.random.Generator
) -> tuple[float | None, float]:
    """(Δ, p): weighted mean difference of per-sample quality on the samples within ``mask`` both
    were measured on, and the bootstrap probability that it is above 0 (ties count half)."""
    common = mask & candidate.measured & seed.measured
    if not common.any():
        return None, 0.0
    diff = candidate.correct[common] - seed.correct[common]
    w = weights[common]
    delta = float(np.dot(w, diff) / w.sum())
    if not diff.any():
        return delta, 0.5
    picks = rng.integers(0, len(diff), size=(BOOTSTRAP_RESAMPLES, len(diff)))
    resampled = (w[picks] * diff[picks]).sum(axis=1) / w[picks].sum(axis=1)
    p = float((resampled > 0).mean() + 0.5 * (resampled == 0).mean())
    return round(delta, 6), round(p, 4)
