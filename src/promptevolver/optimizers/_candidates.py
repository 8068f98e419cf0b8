"""One record per candidate: its instructions, lineage and scores (never parallel lists)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from promptevolver.evaluation import Score

__all__ = ["Candidate"]


@dataclass
class Candidate:
    """A candidate instruction set and everything measured about it.

    Attributes:
        id: run-unique number, in creation order (the seed is 0).
        instructions: prompt name → instruction.
        generation: the generation that created it (0 = initial population).
        operator: ``seed``, ``reverse_engineer``, ``mutation`` or ``crossover``.
        parents: ids of the parent candidates (empty for the seed and reverse-engineered ones).
        train: score on the train samples, once evaluated.
        validation: score on the validation samples, once evaluated.
        feedback: the feedback a mutation applied (empty otherwise).
        minibatch: score on the screening minibatch, when it was screened.
        screened_out: True when screening dropped it before its full train evaluation.
        seen: train sample positions shown to the meta calls of its lineage (what it learned
            from; the rest is out-of-bag for it).
        fold: out-of-bag runs (small data): the fold of samples its lineage keeps unseen, to be
            compared with the seed on; None otherwise.
        examples: its example policy (:mod:`promptevolver.judge._examples`): ``none`` (judged on
            its instructions alone), ``static`` or ``retrieval`` (teaching examples from the
            run's store of annotated train samples shown with every judged input).
        cross_validated: small data with a refit (:mod:`._refit`): the cross-validated score of
            the recipe that made it, aligned with the train part — each sample judged by the fold's
            candidate that never learned from it (the seed: its own train judgements); None
            otherwise.
    """

    id: int
    instructions: dict[str, str]
    generation: int
    operator: str
    parents: tuple[int, ...] = ()
    train: Score | None = None
    validation: Score | None = None
    feedback: list[str] = field(default_factory=list)
    minibatch: Score | None = None
    screened_out: bool = False
    seen: frozenset[int] = frozenset()
    fold: int | None = None
    examples: str = "none"
    cross_validated: Score | None = None

    @property
    def is_seed(self) -> bool:
        return self.operator == "seed"

    @property
    def length(self) -> int:
        """Total instruction length in characters (the tie-breaker: shorter wins)."""
        return sum(len(text) for text in self.instructions.values())

    @property
    def largest_score(self) -> Score | None:
        """Its largest evaluation so far: train, else minibatch, else None."""
        return self.train or self.minibatch

    @property
    def failures(self) -> int:
        """Failed evaluations in its largest evaluation so far (train, else minibatch)."""
        largest = self.largest_score
        return 0 if largest is None else largest.failures

    def train_value(self) -> float | None:
        """Train score over the samples measured (None when none was)."""
        if self.train is None:
            raise ValueError(f"candidate {self.id} has no train score yet")
        return self.train.value

    def train_correct(self) -> np.ndarray:
        """Per-train-sample quality, shape ``(n_train,)``; NaN where the evaluation failed."""
        if self.train is None:
            raise ValueError(f"candidate {self.id} has no train score yet")
        return self.train.correct

    def to_dict(self) -> dict[str, Any]:
        """The candidate's lineage entry in result.json."""
        return {
            "id": self.id,
            "generation": self.generation,
            "operator": self.operator,
            "parents": list(self.parents),
            "instructions": dict(self.instructions),
            "train": None if self.train is None else self.train.value,
            "validation": None if self.validation is None else self.validation.value,
            "minibatch": None if self.minibatch is None else self.minibatch.value,
            "screened_out": self.screened_out,
            "failures": self.failures,
            "coverage": None if self.largest_score is None else round(self.largest_score.coverage, 6),
            "feedback": list(self.feedback),
            "examples": self.examples,
            **({"cross_validated": self.cross_validated.value} if self.cross_validated is not None else {}),
        }
