"""The final choice: which candidate the run returns, decided on validation samples.

:class:`BestOnValidation`: the seed and the ``finalists`` best train candidates of the last
population are judged on validation; the best validation score wins; ties go to the seed, then
to the shorter instruction (:func:`~promptevolver.optimizers.strategies.selection.rank`), so the
result is never worse than the seed on validation.
"""

from __future__ import annotations

from collections.abc import Sequence

from promptevolver.evaluation.losses import Loss
from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.strategies import selection

__all__ = ["BestOnValidation"]


class BestOnValidation:
    """Chooses among the seed and the best ``finalists`` train candidates by validation score.

    Args:
        finalists: best train candidates judged on validation besides the seed (≥ 1).
        min_coverage: share of its evaluations a candidate needs measured to be ranked on its
            score (see :func:`~promptevolver.optimizers.strategies.selection.rank`).
    """

    def __init__(self, *, finalists: int = 1, min_coverage: float = selection.MIN_COVERAGE) -> None:
        if finalists < 1:
            raise ValueError(f"finalists must be >= 1, got {finalists}")
        self.finalists = finalists
        self.min_coverage = min_coverage

    def candidates(self, seed: Candidate, population: Sequence[Candidate], loss: Loss) -> list[Candidate]:
        """The seed, then the ``finalists`` best of ``population`` by train score (each once)."""
        top = selection.rank(population, loss, min_coverage=self.min_coverage)[: self.finalists]
        return list({c.id: c for c in [seed, *top]}.values())

    def choose(self, finalists: Sequence[Candidate], loss: Loss) -> Candidate:
        """The best of ``finalists`` on validation (all must have a validation score)."""
        return selection.rank(finalists, loss, on="validation", min_coverage=self.min_coverage)[0]
