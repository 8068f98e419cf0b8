"""Seeded synthetic annotation sets of a numeric rubric judge (e.g. a 1–5 helpfulness score).

The world, as :mod:`.synthetic` for binary judges but on a scale: each sample has a human score
(levels drawn with ``level_weights``). The naive judge gives the human score except on a
``disagreement_rate`` share of samples, where it is off by one or two levels (never out of
range). Each disagreement has a hidden correction criterion — **generic** (shared by many
samples, the lesson worth learning) or **specific** (made-up rare words, one sample) — and is
annotated in one of three ways:

* **edited** (accepted): ``edited_output`` holds the human score and a reason naming the
  criterion; ``target`` is the human score;
* **rejected with a target**: no edit, ``target`` is the human score, and the criterion's words
  are appended to the response (the only evidence);
* **rejected without a target** (share ``1 − target_rate`` of the rejected): no human label, so
  the sample is unusable — the loader warns and lists it.

Samples the judge got right are accepted as they are (their label is ``metric_output``). The
judge prompt is :class:`~promptevolver.judge._rubric.RubricJudge`'s (``reason``, ``score``).
Used with :class:`~promptevolver.simulation.simulated_metrics.SimulatedMetricsLLM`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.judge import RubricJudge
from promptevolver.simulation._pseudo_text import rare_word, text, vocabulary
from promptevolver.simulation.synthetic import check_spec

__all__ = ["RUBRIC_CRITERIA", "RubricSpec", "generate_rubric"]

PROMPT_NAME = RubricJudge.PROMPT_NAME

#: Generic correction criteria of the rubric world: (words, the human's reason).
RUBRIC_CRITERIA: tuple[tuple[tuple[str, str], str], ...] = (
    (("unit", "conversion"), "The response skips the unit conversion that the question needs."),
    (("date", "precision"), "The response gives the date without the precision the reference has."),
    (("citation", "source"), "The response makes a claim with no citation of its source."),
    (
        ("negation", "contradiction"),
        "The response contains a negation that is a contradiction of the reference.",
    ),
    (("rounding", "numeric"), "The response has a numeric rounding error against the reference."),
    (
        ("scope", "overgeneralization"),
        "The response is an overgeneralization beyond the scope of the question.",
    ),
    (("ambiguity", "hedging"), "The response hides an ambiguity behind hedging instead of answering."),
    (("omission", "step"), "The response has an omission of a required step."),
)


@dataclass(frozen=True)
class RubricSpec:
    """Parameters of a synthetic rubric annotation set (shares are probabilities in [0, 1]).

    Attributes:
        n_samples: number of samples.
        random_seed: seed of the one numpy Generator behind every draw.
        score_range: (lowest, highest) whole-number score.
        level_weights: relative odds of each human score, lowest first (None: uniform); length
            ``high − low + 1``.
        disagreement_rate: share of samples where the naive judge is off.
        generic_share: share of disagreements explained by a generic criterion.
        n_generic: generic criteria in play (≤ len(RUBRIC_CRITERIA)).
        reject_rate: share of disagreements rejected without an edit.
        target_rate: share of rejected samples that carry a ``target`` (the others are unusable).
        text_words: words per response/reference text.
        name: the metric name.
    """

    n_samples: int
    random_seed: int = 0
    score_range: tuple[int, int] = (1, 5)
    level_weights: tuple[float, ...] | None = None
    disagreement_rate: float = 0.3
    generic_share: float = 0.7
    n_generic: int = 4
    reject_rate: float = 0.3
    target_rate: float = 0.7
    text_words: int = 40
    name: str = "helpfulness"

    def __post_init__(self) -> None:
        low, high = self.score_range
        check_spec(self, ("disagreement_rate", "generic_share", "reject_rate", "target_rate"))
        if not low < high:
            raise ValueError(f"score_range must be (low, high) with low < high, got {self.score_range}")
        weights = self.level_weights
        if weights is not None and (len(weights) != high - low + 1 or min(weights) < 0 or not sum(weights)):
            raise ValueError(f"level_weights must be {high - low + 1} non-negative odds, not all 0")
        if not 1 <= self.n_generic <= len(RUBRIC_CRITERIA):
            raise ValueError(f"n_generic must be in [1, {len(RUBRIC_CRITERIA)}], got {self.n_generic}")


def _criterion(rng: np.random.Generator, spec: RubricSpec, index: int) -> tuple[list[str], str]:
    if rng.random() < spec.generic_share:
        terms, reason = RUBRIC_CRITERIA[int(rng.integers(0, spec.n_generic))]
        return list(terms), reason
    a, b = rare_word(2 * index), rare_word(2 * index + 1)
    return [a, b], f"See the {a} {b} detail of the reference."  # grammar words and the one-off detail


def _off(rng: np.random.Generator, human: int, low: int, high: int) -> int:
    """A naive score one or two levels from ``human``, within range."""
    options = [human + d for d in (-2, -1, 1, 2) if low <= human + d <= high]
    weights = np.array([2.0 if abs(o - human) == 1 else 1.0 for o in options])
    return int(options[int(rng.choice(len(options), p=weights / weights.sum()))])


def _sample(rng: np.random.Generator, spec: RubricSpec, vocab: list[str], i: int) -> dict[str, Any]:
    low, high = spec.score_range
    levels = np.arange(low, high + 1)
    odds = np.ones(len(levels)) if spec.level_weights is None else np.asarray(spec.level_weights, float)
    human = int(rng.choice(levels, p=odds / odds.sum()))
    inputs = {
        "user_input": f"How do I {text(rng, vocab, 5)}?",
        "response": text(rng, vocab, spec.text_words),
        "reference": text(rng, vocab, spec.text_words),
    }
    naive = _off(rng, human, low, high) if rng.random() < spec.disagreement_rate else human
    output = {"reason": f"The response deserves a {naive} on the scale.", "score": naive}
    sample: dict[str, Any] = {"metric_input": inputs, "metric_output": naive, "is_accepted": True}
    edited = None
    if naive != human:
        terms, reason = _criterion(rng, spec, i)
        if rng.random() < spec.reject_rate:
            sample["is_accepted"] = False
            inputs["response"] = f"{inputs['response']} {' '.join(terms)}"
            if rng.random() < spec.target_rate:
                sample["target"] = human
        else:
            edited = {"reason": reason, "score": human}
            sample["target"] = human
    sample["prompts"] = {
        PROMPT_NAME: {"prompt_input": dict(inputs), "prompt_output": output, "edited_output": edited}
    }
    return sample


def generate_rubric(spec: RubricSpec) -> SingleMetricAnnotation:
    """A synthetic rubric annotation set for ``spec``; same spec → identical set. Rejected samples
    without a target are in it (unusable; the caller may warn about them).

    Raises:
        ValueError: invalid spec values (at ``RubricSpec`` construction).
    """
    rng = np.random.default_rng(spec.random_seed)
    vocab = vocabulary(rng, 400)
    samples = [_sample(rng, spec, vocab, i) for i in range(spec.n_samples)]
    return SingleMetricAnnotation.model_validate({"name": spec.name, "kind": "numeric", "samples": samples})
