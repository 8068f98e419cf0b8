"""Seeded synthetic annotation sets in Ragas' format, for benchmarks at any size.

The world it writes: a binary ``answer_correctness`` judge graded question/response/reference
triples about invented things (every sample names a unique one, e.g. "the Kalomire bridge"; the
reference states its facts, the response restates them). Human labels are imbalanced
(``positive_rate``, default 70 % positive). The naive judge agrees with the human except on a
``disagreement_rate`` share of samples, each explained by:

* a **generic** criterion (``generic_share`` of disagreements), one of ``n_generic`` judging
  concepts of :data:`GENERIC_CRITERIA`, drawn Zipf-like so a few explain many samples. "Strict"
  ones ("contradicts the reference", "unsupported claim", ...) explain a naive 1 the human made 0;
  "lenient" ones ("casual tone", "simplified explanation", ...) the reverse. Learning one fixes
  held-out samples too;
* or only a **specific** fact of that sample (a wrong designer's name, a wrong year): learning it
  fixes that one sample (overfitting).

A disagreement is either corrected (accepted, ``edited_output`` with the human verdict and a
reason that states the criterion as a person would, in one of several wordings) or, with
probability ``reject_rate``, rejected without an edit: then only the response shows it (a
generic criterion's tell-tale wording, or the wrong fact). ``evidence_rate`` of agreeing samples
carry an edited reason stating a generic criterion that fits their label (evidence a prompt
engineer can learn from). Used with :class:`~promptevolver.simulation.SimulatedJudgeLLM`, which
mines these phrases back from the corrections.

Limits: template English; criteria independent of the topics; one judge prompt; no ``target``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation

__all__ = ["GENERIC_CRITERIA", "GenericCriterion", "SyntheticSpec", "check_spec", "generate"]

PROMPT_NAME = "single_turn_aspect_critic_prompt"


@dataclass(frozen=True)
class GenericCriterion:
    """A judging concept: its phrase, the human verdict it argues for, how humans word it (each
    reason contains ``phrase``; ``{thing}`` and ``{attr}`` are filled per sample) and the words a
    response that shows it contains (``tell``)."""

    phrase: str
    verdict: int
    reasons: tuple[str, ...]
    tell: str


GENERIC_CRITERIA: tuple[GenericCriterion, ...] = (
    GenericCriterion(
        "contradicts the reference",
        0,
        (
            "The response contradicts the reference about the {attr} of {thing}.",
            "Marked down because it contradicts the reference on the {attr}.",
        ),
        "records disagree",
    ),
    GenericCriterion(
        "unsupported claim",
        0,
        (
            "The response makes an unsupported claim about {thing}.",
            "There is an unsupported claim here that nobody can verify.",
        ),
        "experts widely believe",
    ),
    GenericCriterion(
        "hedging",
        0,
        (
            "The response hides the {attr} of {thing} behind hedging.",
            "Too much hedging: it never commits to the {attr}.",
        ),
        "uncertain estimate",
    ),
    GenericCriterion(
        "unit conversion",
        0,
        (
            "The response skips the unit conversion that the question asks for.",
            "No unit conversion: the {attr} of {thing} is left in other units.",
        ),
        "in imperial units",
    ),
    GenericCriterion(
        "rounding error",
        0,
        (
            "The response has a rounding error in the {attr} of {thing}.",
            "A rounding error distorts the {attr}.",
        ),
        "ballpark figure",
    ),
    GenericCriterion(
        "missing step",
        0,
        (
            "The response explains {thing} with a missing step.",
            "There is a missing step in the account of the {attr}.",
        ),
        "skipping ahead",
    ),
    GenericCriterion(
        "casual tone",
        1,
        (
            "The casual tone is acceptable: the {attr} of {thing} is right.",
            "A casual tone is no reason to reject the description of {thing}.",
        ),
        "yeah basically",
    ),
    GenericCriterion(
        "simplified explanation",
        1,
        (
            "A simplified explanation that keeps the {attr} of {thing} is fine.",
            "The response gives a simplified explanation without losing anything.",
        ),
        "plain terms",
    ),
    GenericCriterion(
        "extra background",
        1,
        (
            "Extra background about {thing} does no harm.",
            "The response includes extra background that agrees with the reference.",
        ),
        "fun fact",
    ),
    GenericCriterion(
        "different wording",
        1,
        (
            "Different wording of the same {attr} still counts.",
            "The response uses different wording for {thing}; the content is identical.",
        ),
        "paraphrasing freely",
    ),
)
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "shu", "dra", "qui", "bel", "tor", "gan")
_KINDS = (
    "bridge",
    "library",
    "comet",
    "canal",
    "festival",
    "engine",
    "treaty",
    "orchard",
    "lighthouse",
    "mine",
)
_PEOPLE = ("Ada Moreno", "Ben Okafor", "Chen Liu", "Dara Novak", "Eli Haddad", "Fay Lindqvist", "Gus Ortega")
_UNITS = ("metres", "kilometres", "tonnes", "litres")


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of a synthetic annotation set (all shares are probabilities in [0, 1]).

    Attributes:
        n_samples: number of samples.
        random_seed: seed of the one numpy Generator behind every draw.
        positive_rate: share of human label 1.
        disagreement_rate: share of samples where the naive judge is wrong.
        generic_share: share of disagreements explained by a generic criterion.
        n_generic: number of generic criteria in play (≤ len(GENERIC_CRITERIA)); the first
            ``n_generic`` of the pool, strict and lenient interleaved.
        reject_rate: share of disagreements rejected without an edit.
        evidence_rate: share of agreeing samples whose edited reason states a generic criterion.
        text_words: unused (kept for older configs); texts are template sentences.
        name: the metric name.
    """

    n_samples: int
    random_seed: int = 0
    positive_rate: float = 0.7
    disagreement_rate: float = 0.25
    generic_share: float = 0.6
    n_generic: int = 6
    reject_rate: float = 0.3
    evidence_rate: float = 0.1
    text_words: int = 40
    name: str = "answer_correctness"

    def __post_init__(self) -> None:
        check_spec(
            self, ("positive_rate", "disagreement_rate", "generic_share", "reject_rate", "evidence_rate")
        )
        if not 2 <= self.n_generic <= len(GENERIC_CRITERIA):
            raise ValueError(f"n_generic must be in [2, {len(GENERIC_CRITERIA)}], got {self.n_generic}")


def check_spec(spec: Any, shares: tuple[str, ...]) -> None:
    """The checks every synthetic spec shares: ``spec.n_samples`` ≥ 1, ``spec.random_seed`` a
    whole number ≥ 0 (numpy refuses others), and each attribute named in ``shares`` a probability.

    Raises:
        ValueError: naming the first field out of range and its value.
    """
    if spec.n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {spec.n_samples}")
    if isinstance(spec.random_seed, bool) or spec.random_seed < 0:
        seed = spec.random_seed
        raise ValueError(f"random_seed must be a whole number >= 0 (numpy refuses others), got {seed}")
    for field in shares:
        value = getattr(spec, field)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{field} must be in [0, 1], got {value}")


def _pool(n_generic: int) -> list[GenericCriterion]:
    """The first ``n_generic`` criteria, strict and lenient interleaved (both kinds in play)."""
    strict = [c for c in GENERIC_CRITERIA if c.verdict == 0]
    lenient = [c for c in GENERIC_CRITERIA if c.verdict == 1]
    order = [c for pair in zip(strict, lenient) for c in pair] + strict[len(lenient) :]
    return order[:n_generic]


def _name(rng: np.random.Generator, used: set[str]) -> str:
    while True:
        parts = rng.choice(len(_SYLLABLES), size=int(rng.integers(3, 5)))
        name = "".join(_SYLLABLES[i] for i in parts).capitalize()
        if name not in used:
            used.add(name)
            return name


def _pick(rng: np.random.Generator, pool: list[GenericCriterion], verdict: int) -> GenericCriterion | None:
    fitting = [c for c in pool if c.verdict == verdict]
    if not fitting:
        return None
    weights = np.array([1.0 / (pool.index(c) + 1) for c in fitting])
    return fitting[int(rng.choice(len(fitting), p=weights / weights.sum()))]


def _facts(rng: np.random.Generator, thing: str) -> dict[str, str]:
    return {
        "year": str(int(rng.integers(1820, 2001))),
        "size": f"{int(rng.integers(2, 900))} {_UNITS[int(rng.integers(len(_UNITS)))]}",
        "designer": _PEOPLE[int(rng.integers(len(_PEOPLE)))],
        "thing": thing,
    }


def _sample(
    rng: np.random.Generator, spec: SyntheticSpec, pool: list[GenericCriterion], used: set[str]
) -> dict[str, Any]:
    label = int(rng.random() < spec.positive_rate)
    thing = f"the {_name(rng, used)} {_KINDS[int(rng.integers(len(_KINDS)))]}"
    facts = _facts(rng, thing)
    reference = (
        f"{thing[0].upper()}{thing[1:]} was completed in {facts['year']}, measures {facts['size']} "
        f"and was designed by {facts['designer']}."
    )
    question = f"What year was {thing} completed, what size is it and who was its designer?"
    said = dict(facts)
    disagrees = rng.random() < spec.disagreement_rate
    naive = 1 - label if disagrees else label
    criterion = _pick(rng, pool, label) if (disagrees and rng.random() < spec.generic_share) else None
    if label == 0 and criterion is None:  # a wrong fact makes a negative sample negative
        said["designer"] = _PEOPLE[(_PEOPLE.index(facts["designer"]) + 1) % len(_PEOPLE)]
    response = (
        f"{thing[0].upper()}{thing[1:]} was finished in {said['year']}, it measures {said['size']}, "
        f"and {said['designer']} designed it."
    )
    rejected = disagrees and rng.random() < spec.reject_rate
    if criterion is not None:
        response = f"{response[:-1]}, {criterion.tell}."
    reason = None
    attr = ("year", "size", "designer")[int(rng.integers(3))]
    if disagrees and not rejected:
        if criterion is not None:
            reason = _reason(rng, criterion, thing, attr)
        else:
            right, wrong = facts["designer"], said["designer"]
            name = thing.split()[1]
            reason = (
                f"Not {wrong}: {name} was designed by {right}."
                if label == 0
                else f"As the reference says, {name} was designed by {right}."
            )
    elif not disagrees and rng.random() < spec.evidence_rate:
        fitting = _pick(rng, pool, label)
        if fitting is not None:
            reason = _reason(rng, fitting, thing, attr)
    inputs = {"user_input": question, "response": response, "reference": reference}
    output = {
        "reason": "The response matches the reference."
        if naive
        else "The response departs from the reference.",
        "verdict": naive,
    }
    edited = {"reason": reason, "verdict": label} if reason is not None else None
    prompt = {"prompt_input": dict(inputs), "prompt_output": output, "edited_output": edited}
    return {
        "metric_input": inputs,
        "metric_output": naive if rejected else label,
        "is_accepted": not rejected,
        "prompts": {PROMPT_NAME: prompt},
    }


def _reason(rng: np.random.Generator, criterion: GenericCriterion, thing: str, attr: str) -> str:
    text = criterion.reasons[int(rng.integers(len(criterion.reasons)))].format(thing=thing, attr=attr)
    return text[0].upper() + text[1:]


def generate(spec: SyntheticSpec) -> SingleMetricAnnotation:
    """A synthetic annotation set for ``spec``; same spec → identical set.

    Raises:
        ValueError: invalid spec values (at ``SyntheticSpec`` construction).
    """
    rng = np.random.default_rng(spec.random_seed)
    pool = _pool(spec.n_generic)
    used: set[str] = set()
    samples = [_sample(rng, spec, pool, used) for _ in range(spec.n_samples)]
    return SingleMetricAnnotation.model_validate({"name": spec.name, "samples": samples})
