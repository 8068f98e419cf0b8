"""Synthetic annotation sets: seeded, with human reasons that state generic criteria as phrases
(several wordings) plus one-off specific facts, and the simulated world mines them back."""

from __future__ import annotations

from collections import Counter

import pytest

from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.simulation.synthetic import GENERIC_CRITERIA, SyntheticSpec, generate

PROMPT = "single_turn_aspect_critic_prompt"


def _dump(spec: SyntheticSpec) -> list[dict]:
    return [s.model_dump() for s in generate(spec)]


def test_same_spec_same_set_other_seed_other_set():
    spec = SyntheticSpec(n_samples=80, random_seed=4)
    assert _dump(spec) == _dump(spec)
    assert _dump(spec) != _dump(SyntheticSpec(n_samples=80, random_seed=5))


def test_labels_disagreements_and_rejections_follow_the_spec():
    ds = generate(SyntheticSpec(n_samples=2000, random_seed=1, reject_rate=0.3))
    labels = ds.labels()
    naive = [s.prompts[PROMPT].prompt_output["verdict"] for s in ds]
    disagree = [n != y for n, y in zip(naive, labels)]
    assert 0.65 < sum(labels) / len(ds) < 0.75
    assert 0.22 < sum(disagree) / len(ds) < 0.28
    rejected = [not s.is_accepted for s in ds]
    assert all(d for d, r in zip(disagree, rejected) if r)  # only disagreements are rejected
    assert 0.25 < sum(rejected) / sum(disagree) < 0.35
    assert all(s.prompts[PROMPT].edited_output is None for s in ds if not s.is_accepted)


def test_human_reasons_state_generic_criteria_in_several_wordings():
    spec = SyntheticSpec(n_samples=1000, random_seed=2, n_generic=6)
    reasons = [
        s.prompts[PROMPT].edited_output["reason"] for s in generate(spec) if s.prompts[PROMPT].edited_output
    ]
    pool = GENERIC_CRITERIA
    used = Counter(c.phrase for r in reasons for c in pool if c.phrase in r.lower())
    assert len(used) == 6
    for crit in pool:
        if crit.phrase in used:
            wordings = {r for r in reasons if crit.phrase in r.lower()}
            assert len({w.split(crit.phrase)[0][:6] for w in (x.lower() for x in wordings)}) >= 2


def test_the_world_mines_back_each_generic_phrase_as_one_readable_criterion():
    ds = generate(SyntheticSpec(n_samples=2000, random_seed=1))
    llm = SimulatedJudgeLLM(dataset=ds, random_seed=0)
    phrases = {c.phrase.lower() for c in llm.world.generic()}
    in_play = [c for c in GENERIC_CRITERIA[:10] if any(c.phrase in p for p in phrases)]
    assert len(in_play) >= 5
    specific = [c for c in llm.world.criteria.values() if c.kind == "specific"]
    assert len(specific) > 10 * len(llm.world.generic())
    assert all(len(c.samples) == 1 for c in specific)


@pytest.mark.parametrize("field", ["positive_rate", "disagreement_rate", "evidence_rate"])
def test_invalid_shares_are_refused(field):
    with pytest.raises(ValueError, match=field):
        SyntheticSpec(n_samples=10, **{field: 1.5})
