"""The simulated prompt engineer on its own: meta-prompt sections, discovery from shown samples
only, the answer to an unknown prompt, and the hash draws the simulation decides with."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from promptevolver import SingleMetricAnnotation
from promptevolver.judge import _prompts as ops
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.simulation._draws import unit
from promptevolver.simulation._engineer import UNRECOGNISED, SimulatedEngineer, sections
from promptevolver.simulation._writer import general
from promptevolver.simulation.synthetic import SyntheticSpec, generate


@pytest.fixture(scope="module")
def synth() -> SingleMetricAnnotation:
    return generate(SyntheticSpec(n_samples=200, random_seed=4))


def _reverse_prompt(samples: list, metric: str = "fluency") -> str:
    lines = "\n".join(json.dumps({"input": dict(s.metric_input), "expected_output": {}}) for s in samples)
    return f"The judge `{metric}` reads an input.\n\n{ops.EXAMPLES}\n{lines}\n\n{ops.ANSWER}\nJSON."


def _engineer(llm: SimulatedJudgeLLM, **changes: object) -> SimulatedEngineer:
    return dataclasses.replace(llm.engineer(), **changes)  # type: ignore[arg-type]


def test_sections_split_at_headings_that_start_the_text_or_follow_a_blank_line():
    text = "intro\n\n## A\nbody a\n## not a heading\n\n## B\nbody b"
    assert sections(text) == {"": "intro", "## A": "body a\n## not a heading", "## B": "body b"}
    assert sections("intro\n## A\nbody") == {"": "intro\n## A\nbody"}
    assert sections("") == {"": ""}


def test_an_unknown_prompt_gets_a_json_error_object_not_an_instruction(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=0)
    answer = llm.engineer().answer("## Something else\nwhatever")
    assert answer == UNRECOGNISED and "error" in json.loads(answer)


def test_shown_counts_only_samples_of_the_prompt_and_ignores_other_lines(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=0)
    shown = [s for s in synth if llm.truth(s.metric_input).criteria][:3]
    prompt = _reverse_prompt(shown) + '\n{"no_input": 1}\n{not json'
    counts = llm.engineer().shown(sections(prompt))
    expected: dict[str, int] = {}
    for s in shown:
        for cid in llm.truth(s.metric_input).criteria:
            expected[cid] = expected.get(cid, 0) + 1
    assert counts == expected and counts


def test_certain_discovery_writes_every_carried_criterion_and_none_writes_only_the_task(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=1)
    shown = [s for s in synth if llm.truth(s.metric_input).criteria][:3]
    carried = {c for s in shown for c in llm.truth(s.metric_input).criteria}
    prompt = _reverse_prompt(shown)
    everything = json.loads(_engineer(llm, p_discover=1.0, max_terms=64).answer(prompt))["instruction"]
    nothing = json.loads(_engineer(llm, p_discover=0.0).answer(prompt))["instruction"]
    rules = {c for c in carried if general(llm.world.criteria[c], llm.world)}  # what a careful person writes
    assert rules and rules <= llm.named(everything) <= carried
    assert llm.named(nothing) == frozenset() and "fluency" in nothing


def test_the_llm_answers_meta_calls_with_its_engineer_under_its_current_settings(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=2, p_discover=0.5)
    prompt = _reverse_prompt(list(synth)[:8])
    request = LLMRequest([ChatMessage("user", prompt)], sample_index=0)
    assert llm.answer(request) == llm.engineer().answer(prompt)
    llm.p_discover = 0.0
    assert llm.engineer().p_discover == 0.0
    assert llm.named(json.loads(llm.answer(request))["instruction"]) == frozenset()


def test_unit_draws_are_deterministic_in_range_and_uniform():
    assert unit(1, "a", 2.5) == unit(1, "a", 2.5)
    assert unit(1, "a") != unit("a", 1)
    draws = np.array([unit(7, "noise", k) for k in range(4000)])
    assert ((draws >= 0) & (draws < 1)).all()
    assert abs((draws < 0.3).mean() - 0.3) < 0.03


@pytest.mark.parametrize(
    ("words", "after", "role"),
    [
        (("wrong",), ["year", "city", "author"], "predicate"),  # a modifier whose noun varies
        (("missing", "step"), ["in", "of", ""], "noun"),  # a whole noun phrase
        (("simplified", "explanation"), ["", "", "of"], "noun"),
    ],
)
def test_a_phrase_cut_before_its_noun_is_written_as_a_predicate(words, after, role):
    """A newcomer's run wrote "- the response shows the wrong" (from "the wrong year", "the wrong
    city", ...): a phrase mostly followed by a content word is a modifier without its noun, and
    is written as a predicate ("anything the response says is wrong"), never as a bare noun."""
    from promptevolver.simulation._criteria import Criterion, _role
    from promptevolver.simulation._writer import clause

    occurrences = [("the", *words, a, "") for a in after]
    got, article, _ = _role(words, occurrences, quote=False)
    assert got == role
    c = Criterion(
        id="c",
        kind="generic",
        phrase=" ".join(words),
        triggers=(words,),
        verdict=0,
        role=got,
        article=article,
        needs_object=False,
        samples=(),
    )
    text = clause(c, has_reference=True)
    phrase = " ".join(words)
    expected = {
        "predicate": f"anything the response says is {phrase}",
        "noun": f"the response shows the {phrase}",
    }
    assert text == expected[role]
