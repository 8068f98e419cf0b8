"""Seeded synthetic annotation sets in Ragas' format, for benchmarks at any size.

The world it simulates: a binary judge graded a stream of question/response/reference triples.
Human labels are imbalanced (``positive_rate``, default 70 % positive). The naive judge agrees
with the human except on a ``disagreement_rate`` share of samples. Each disagreement has a hidden
*correction criterion*:

* **generic** criteria (``n_generic`` of them, e.g. "unit conversion") each explain many
  disagreements — the lesson a good instruction should learn, since it also fixes held-out
  samples;
* **specific** criteria explain one sample each (made-up rare words) — learning them fixes only
  that sample (overfitting).

A disagreement is either edited by the human (accepted, ``edited_output`` with the corrected
verdict and a reason that names the criterion) or, with probability ``reject_rate``, rejected
without an edit (the label is the flipped verdict; the only evidence is the sample's text, which
then contains the criterion's words). Used with :class:`~promptevolver.llm.SimulatedJudgeLLM`,
whose judge returns the human verdict when an instruction names a sample's correction terms.

Limits: words stand in for meaning; texts are bags of pseudo-words, not language; the criteria
are independent of the inputs' topics; there is one judge prompt and no ``target`` field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation

__all__ = ["GENERIC_CRITERIA", "SyntheticSpec", "generate"]

PROMPT_NAME = "single_turn_aspect_critic_prompt"

#: Generic correction criteria: (terms, the human's reason).
GENERIC_CRITERIA: tuple[tuple[tuple[str, str], str], ...] = (
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
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "shu", "dra", "qui", "bel", "tor", "gan")


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of a synthetic annotation set (all shares are probabilities in [0, 1]).

    Attributes:
        n_samples: number of samples.
        random_seed: seed of the one numpy Generator behind every draw.
        positive_rate: share of human label 1.
        disagreement_rate: share of samples where the naive judge is wrong.
        generic_share: share of disagreements explained by a generic criterion.
        n_generic: number of generic criteria in play (≤ len(GENERIC_CRITERIA)).
        reject_rate: share of disagreements rejected without an edit.
        text_words: words per response/reference text.
        name: the metric name.
    """

    n_samples: int
    random_seed: int = 0
    positive_rate: float = 0.7
    disagreement_rate: float = 0.25
    generic_share: float = 0.6
    n_generic: int = 4
    reject_rate: float = 0.3
    text_words: int = 40
    name: str = "answer_correctness"

    def __post_init__(self) -> None:
        if self.n_samples < 1:
            raise ValueError(f"n_samples must be >= 1, got {self.n_samples}")
        if isinstance(self.random_seed, bool) or self.random_seed < 0:
            raise ValueError(
                f"random_seed must be a whole number >= 0 (numpy refuses others), got {self.random_seed}"
            )
        if self.text_words < 1:
            raise ValueError(f"text_words must be >= 1, got {self.text_words}")
        if not 1 <= self.n_generic <= len(GENERIC_CRITERIA):
            raise ValueError(f"n_generic must be in [1, {len(GENERIC_CRITERIA)}], got {self.n_generic}")
        for field in ("positive_rate", "disagreement_rate", "generic_share", "reject_rate"):
            value = getattr(self, field)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{field} must be in [0, 1], got {value}")


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        parts = rng.choice(len(_SYLLABLES), size=int(rng.integers(2, 4)))
        words.add("".join(_SYLLABLES[i] for i in parts))
    return sorted(words)


def _rare_word(k: int) -> str:
    """The k-th rare word: k written in base len(_SYLLABLES) with five syllables, plus "x"."""
    base, parts = len(_SYLLABLES), []
    for _ in range(5):
        k, digit = divmod(k, base)
        parts.append(_SYLLABLES[digit])
    return "".join(parts) + "x"


def _text(rng: np.random.Generator, vocab: list[str], n: int) -> str:
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), size=n))


def _criterion(rng: np.random.Generator, spec: SyntheticSpec, index: int) -> tuple[list[str], str]:
    if rng.random() < spec.generic_share:
        terms, reason = GENERIC_CRITERIA[int(rng.integers(0, spec.n_generic))]
        return list(terms), reason
    a, b = _rare_word(2 * index), _rare_word(2 * index + 1)
    return [a, b], f"The response misstates the {a} {b} detail of the reference."


def _sample(rng: np.random.Generator, spec: SyntheticSpec, vocab: list[str], i: int) -> dict[str, Any]:
    label = int(rng.random() < spec.positive_rate)
    question = f"What does the {_text(rng, vocab, 6)} say?"
    reference = _text(rng, vocab, spec.text_words)
    response = _text(rng, vocab, spec.text_words)
    inputs = {"user_input": question, "response": response, "reference": reference}
    disagrees = rng.random() < spec.disagreement_rate
    naive = 1 - label if disagrees else label
    output = {
        "reason": "The response matches the reference."
        if naive
        else "The response departs from the reference.",
        "verdict": naive,
    }
    edited, accepted = None, True
    if disagrees:
        terms, reason = _criterion(rng, spec, i)
        if rng.random() < spec.reject_rate:
            accepted = False
            inputs["response"] = f"{response} {' '.join(terms)}"
        else:
            edited = {"reason": reason, "verdict": label}
    prompt = {"prompt_input": dict(inputs), "prompt_output": output, "edited_output": edited}
    return {
        "metric_input": inputs,
        "metric_output": label if accepted else naive,
        "is_accepted": accepted,
        "prompts": {PROMPT_NAME: prompt},
    }


def generate(spec: SyntheticSpec) -> SingleMetricAnnotation:
    """A synthetic annotation set for ``spec``; same spec → identical set.

    Raises:
        ValueError: invalid spec values (at ``SyntheticSpec`` construction).
    """
    rng = np.random.default_rng(spec.random_seed)
    vocab = _vocabulary(rng, 400)
    samples = [_sample(rng, spec, vocab, i) for i in range(spec.n_samples)]
    return SingleMetricAnnotation.model_validate({"name": spec.name, "samples": samples})
