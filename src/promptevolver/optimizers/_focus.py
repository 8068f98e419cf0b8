"""Focus sets: the stratified subsets of train and validation that candidates are judged on.

Candidates differ mostly where the recorded judge was wrong (the *verdict* evidence of
:mod:`._evidence`); elsewhere most instructions agree with the human already. So a candidate is
judged on a **focus set** of at most ``size`` samples of a part: its verdict-evidence samples,
up to two thirds of the set (all of them when they are fewer), and a stratified draw (by human label)
of the other samples for the rest, which shows whether an instruction breaks what already works.

Each judged sample stands for ``weight`` samples of its stratum in the part (stratum size / drawn
size), so a weighted mean over the focus set estimates the score on the whole part without bias
(stratified sampling; Cochran, *Sampling Techniques*, 1977, ch. 5). The search ranks candidates
by their plain score on the focus set (all candidates are judged on the same samples, so the
ranking is paired, and the verdict samples, where improvements happen, weigh more); the reported
scores and the final choice use the weighted estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from promptevolver.annotations import stratified_sample
from promptevolver.optimizers._evidence import Evidence

__all__ = ["VERDICT_SHARE", "Focus", "make_focus"]

#: The most of a focus set that verdict-evidence samples take (when there are more of them).
VERDICT_SHARE = 2 / 3


@dataclass(frozen=True)
class Focus:
    """The samples judged for one part, and what each stands for.

    Attributes:
        positions: judged sample positions (verdict evidence first, then the others).
        weights: position → how many samples of the part it stands for (≥ 1).
        part_size: samples in the part.
    """

    positions: list[int]
    weights: dict[int, float]
    part_size: int

    @property
    def complete(self) -> bool:
        """Whether every sample of the part is judged (all weights 1)."""
        return len(self.positions) == self.part_size

    def weight_array(self, positions: Sequence[int]) -> np.ndarray:
        """Weights of ``positions`` (in that order), shape ``(len(positions),)``."""
        return np.array([self.weights[p] for p in positions], dtype=np.float64)


def make_focus(
    part: Sequence[int],
    evidence: Mapping[int, Evidence],
    labels: Sequence[float | None],
    size: int | None,
    rng: np.random.Generator,
) -> Focus:
    """The focus set of ``part`` (see the module docstring); all of it when ``size`` is None or
    at least the part's size."""
    if size is None or len(part) <= size:  # (an out-of-bag run is judged on every sample)
        return Focus(list(part), {p: 1.0 for p in part}, len(part))
    wrong = [p for p in part if evidence[p].kind == "verdict"]
    rest = [p for p in part if evidence[p].kind != "verdict"]
    n_wrong = min(len(wrong), max(math.ceil(VERDICT_SHARE * size), size - len(rest)))
    n_rest = min(len(rest), size - n_wrong)
    chosen_wrong = _draw(wrong, n_wrong, labels, rng)
    chosen_rest = _draw(rest, n_rest, labels, rng)
    weights = {p: len(wrong) / n_wrong for p in chosen_wrong}
    weights.update({p: len(rest) / n_rest for p in chosen_rest})
    return Focus(chosen_wrong + chosen_rest, weights, len(part))


def _draw(
    positions: Sequence[int], n: int, labels: Sequence[float | None], rng: np.random.Generator
) -> list[int]:
    keep = stratified_sample([labels[p] for p in positions], n, rng)
    return sorted(positions[i] for i in keep)
