"""Seeded synthetic annotation sets of a two-prompt metric: statements, then their verdicts.

The world of :class:`~promptevolver.judge._statements.StatementSupport` (Ragas' faithfulness
shape): a response makes 2–5 claims; the human knows which claims the contexts support; the
score is the supported fraction. The naive metric can go wrong in either prompt, each error with
a hidden correction criterion, **generic** (shared by many samples) or **specific** (made-up rare
words, one sample):

* **extractor errors** (``extractor_error_rate``): it counts a courtesy phrase as a claim, merges
  two claims into one compound statement, or drops a hedged opinion or a claim;
* **verifier errors** (``verifier_error_rate``): it gives one claim the wrong verdict.

A sample with an error is **edited** (accepted; the erring prompt's ``edited_output`` holds the
corrected output and a ``reason``, the human's note naming the criterion — an extra key of the
edited output; when the statements change, the verifier's edited output gives the human verdicts
of the corrected statements; ``target`` is the corrected score), or, when only the verifier erred,
with probability ``reject_rate`` **rejected** without an edit: the criterion's words are appended
to the response, and a ``target`` is given with probability ``target_rate`` (else the sample is
unusable). Samples without an error are accepted as they are (label ``metric_output``).

Limits: words stand in for meaning; claims are strings of pseudo-words; "support" is a drawn
label, not a relation between texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.judge import StatementSupport
from promptevolver.simulation._pseudo_text import rare_word, text, vocabulary
from promptevolver.simulation.synthetic import check_spec

__all__ = ["EXTRACTOR_CRITERIA", "StatementsSpec", "VERIFIER_CRITERIA", "generate_statements"]

EXTRACTOR, VERIFIER = StatementSupport.EXTRACTOR, StatementSupport.VERIFIER

#: Generic extractor criteria: kind of error → the human's note. The notes of different criteria
#: share no content word, nor with the seed instructions (a shared word would name two at once).
EXTRACTOR_CRITERIA: dict[str, str] = {
    "courtesy": "Courtesy filler such as an offer to help asserts nothing; drop it.",
    "compound": "Split every compound clause into separate atomic facts.",
    "hedge": "A hedged opinion is a claim too; keep every hedged opinion.",
}
#: Generic verifier criteria: (the human verdict they lead to, the human's note).
VERIFIER_CRITERIA: tuple[tuple[int, str], ...] = (
    (0, "The date precision is finer than the evidence allows."),
    (0, "A negation here contradicts the passage."),
    (1, "A paraphrase with a synonym still counts as backed."),
    (0, "Numeric rounding changes the figure."),
)
COURTESY = "Happy to help further with anything else!"
_SUPPORTED = "The context states this."
_UNSUPPORTED = "The context does not state this."


@dataclass(frozen=True)
class StatementsSpec:
    """Parameters of a synthetic statements annotation set (shares are probabilities in [0, 1]).

    Attributes:
        n_samples: number of samples.
        random_seed: seed of the one numpy Generator behind every draw.
        support_rate: share of claims the contexts support.
        extractor_error_rate, verifier_error_rate: share of samples where that prompt errs.
        generic_share: share of errors explained by a generic criterion.
        reject_rate: share of verifier-only errors rejected without an edit.
        target_rate: share of rejected samples that carry a ``target`` (the others are unusable).
        name: the metric name.
    """

    n_samples: int
    random_seed: int = 0
    support_rate: float = 0.7
    extractor_error_rate: float = 0.25
    verifier_error_rate: float = 0.25
    generic_share: float = 0.7
    reject_rate: float = 0.3
    target_rate: float = 0.7
    name: str = "faithfulness"

    def __post_init__(self) -> None:
        shares = ("support_rate", "extractor_error_rate", "verifier_error_rate", "generic_share")
        check_spec(self, (*shares, "reject_rate", "target_rate"))


@dataclass
class _Draft:
    """One sample under construction: the human's and the naive metric's statements and verdicts."""

    claims: list[str]
    support: dict[str, int]  # human verdict of every statement that occurs
    human: list[str]
    naive: list[str]
    naive_support: dict[str, int]
    extras: list[str]  # response sentences besides the claims
    extractor_note: str | None = None
    verifier_note: str | None = None


def _claim(rng: np.random.Generator, vocab: list[str]) -> str:
    return "The " + " ".join(vocab[int(i)] for i in rng.integers(0, len(vocab), size=5)) + "."


def _extractor_error(
    rng: np.random.Generator, spec: StatementsSpec, vocab: list[str], d: _Draft, i: int
) -> None:
    if rng.random() >= spec.generic_share:
        a, b = rare_word(2 * i), rare_word(2 * i + 1)
        dropped = d.claims[int(rng.integers(0, len(d.claims)))]
        kept = dropped[:-1] + f" {a} {b}."
        d.human = [kept if s == dropped else s for s in d.human]
        d.claims = [kept if s == dropped else s for s in d.claims]
        d.support[kept] = d.support.pop(dropped)
        d.naive = [s for s in d.human if s != kept]
        d.extractor_note = f"Keep this {a} {b} detail."  # grammar words and the one-off fact only
        return
    kind = list(EXTRACTOR_CRITERIA)[int(rng.integers(0, len(EXTRACTOR_CRITERIA)))]
    if kind == "compound" and len(d.claims) >= 2:
        j = int(rng.integers(0, len(d.claims) - 1))
        first, second = d.claims[j], d.claims[j + 1]
        merged = f"{first[:-1]} and {second[0].lower()}{second[1:]}"
        d.naive = [*d.human[:j], merged, *d.human[j + 2 :]]
        d.naive_support[merged] = min(d.support[first], d.support[second])
    elif kind == "hedge":
        opinion = "I think t" + _claim(rng, vocab)[1:-1] + " maybe."
        d.extras.append(opinion)
        d.support[opinion] = 0
        d.human = [*d.human, opinion]
        d.naive = [s for s in d.human if s != opinion]
    else:
        kind = "courtesy"
        d.extras.append(COURTESY)
        d.naive = [*d.human, COURTESY]
        d.naive_support[COURTESY] = 0
    d.extractor_note = EXTRACTOR_CRITERIA[kind]


def _verifier_error(rng: np.random.Generator, spec: StatementsSpec, d: _Draft, i: int) -> None:
    shared = [s for s in d.human if s in d.naive]
    if not shared:
        return
    target = shared[int(rng.integers(0, len(shared)))]
    if rng.random() < spec.generic_share:
        matching = [c for c in VERIFIER_CRITERIA if c[0] == d.support[target]]
        verdict, note = matching[int(rng.integers(0, len(matching)))]
    else:
        a, b = rare_word(2 * i + 1_000_000), rare_word(2 * i + 1_000_001)
        note = f"See the {a} {b} detail."  # grammar words and the one-off detail only
    d.naive_support[target] = 1 - d.support[target]
    d.verifier_note = note


def _verdicts(
    statements: list[str], support: dict[str, int], note: tuple[str, str] | None
) -> list[dict[str, Any]]:
    out = []
    for s in statements:
        reason = _SUPPORTED if support[s] else _UNSUPPORTED
        if note is not None and s == note[0]:
            reason = note[1]
        out.append({"statement": s, "reason": reason, "verdict": support[s]})
    return out


def _sample(rng: np.random.Generator, spec: StatementsSpec, vocab: list[str], i: int) -> dict[str, Any]:
    claims = [_claim(rng, vocab) for _ in range(int(rng.integers(2, 6)))]
    support = {c: int(rng.random() < spec.support_rate) for c in claims}
    d = _Draft(claims, support, list(claims), list(claims), {}, [])
    if rng.random() < spec.extractor_error_rate:
        _extractor_error(rng, spec, vocab, d, i)
    if rng.random() < spec.verifier_error_rate:
        _verifier_error(rng, spec, d, i)
    naive_support = {s: d.naive_support.get(s, d.support.get(s, 0)) for s in d.naive}
    supported = [c for c in d.claims if d.support[c]]
    context = [" ".join([text(rng, vocab, 12), *supported]), text(rng, vocab, 20)]
    inputs: dict[str, Any] = {
        "user_input": f"What does the record say about {text(rng, vocab, 3)}?",
        "response": " ".join([*d.claims, *d.extras]),
        "retrieved_contexts": context,
    }
    naive_score = sum(naive_support.values()) / len(d.naive)
    human_score = sum(d.support[s] for s in d.human) / len(d.human)
    sample: dict[str, Any] = {"metric_input": inputs, "metric_output": naive_score, "is_accepted": True}
    erred = d.extractor_note is not None or d.verifier_note is not None
    edits: dict[str, Any] = {EXTRACTOR: None, VERIFIER: None}
    if erred and d.extractor_note is None and rng.random() < spec.reject_rate:
        sample["is_accepted"] = False
        inputs["response"] += " " + str(d.verifier_note).split(".")[0].lower()
        if rng.random() < spec.target_rate:
            sample["target"] = human_score
    elif erred:
        sample["target"] = human_score
        if d.extractor_note is not None:
            edits[EXTRACTOR] = {"statements": d.human, "reason": d.extractor_note}
        flipped = next((s for s in d.human if naive_support.get(s, d.support[s]) != d.support[s]), None)
        note = None if d.verifier_note is None or flipped is None else (flipped, d.verifier_note)
        edits[VERIFIER] = {"statements": _verdicts(d.human, d.support, note)}
        if d.verifier_note is not None:
            edits[VERIFIER]["reason"] = d.verifier_note
    sample["prompts"] = {
        EXTRACTOR: {
            "prompt_input": StatementSupport.extractor_inputs(inputs),
            "prompt_output": {"statements": d.naive},
            "edited_output": edits[EXTRACTOR],
        },
        VERIFIER: {
            "prompt_input": StatementSupport.verifier_inputs(inputs, d.naive),
            "prompt_output": {"statements": _verdicts(d.naive, naive_support, None)},
            "edited_output": edits[VERIFIER],
        },
    }
    return sample


def generate_statements(spec: StatementsSpec) -> SingleMetricAnnotation:
    """A synthetic statements annotation set for ``spec``; same spec → identical set.

    Raises:
        ValueError: invalid spec values (at ``StatementsSpec`` construction).
    """
    rng = np.random.default_rng(spec.random_seed)
    vocab = vocabulary(rng, 400)
    samples = [_sample(rng, spec, vocab, i) for i in range(spec.n_samples)]
    return SingleMetricAnnotation.model_validate({"name": spec.name, "kind": "numeric", "samples": samples})
