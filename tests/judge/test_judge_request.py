"""The one ``ajudge`` our judges share (:class:`~promptevolver.judge._protocol.Judge`): the call's
settings, or the judge's own, reach every request of every judge alike."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from promptevolver.annotations._models import PromptAnnotation, SampleAnnotation
from promptevolver.judge._aspect_critic import AspectCritic
from promptevolver.judge._ensemble import JudgeEnsemble
from promptevolver.judge._protocol import Judge
from promptevolver.judge._rubric import RubricJudge
from promptevolver.judge._statements import StatementSupport
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest

INPUTS = {"user_input": "Where is it?", "response": "In Paris.", "retrieved_contexts": ["It is in Paris."]}
EXAMPLE = SampleAnnotation(
    metric_input={"user_input": "Where is that?", "response": "In Rome.", "retrieved_contexts": ["Rome."]},
    metric_output=1.0,
    prompts={  # what the extractor of StatementSupport shows; the one-prompt judges show the label
        StatementSupport.EXTRACTOR: PromptAnnotation(
            prompt_input={}, prompt_output={"statements": ["It is in Rome."]}, is_accepted=True
        )
    },
    is_accepted=True,
)


def answer(request: LLMRequest) -> str:
    """A valid answer for whichever of our prompts asks (told apart by its output schema)."""
    schema = json.dumps(request.json_schema)
    if "StatementVerdict" in schema:
        return json.dumps({"statements": [{"statement": "It is in Paris.", "reason": "r", "verdict": 1}]})
    if '"statements"' in schema:
        return json.dumps({"statements": ["It is in Paris."]})
    if '"score"' in schema:
        return json.dumps({"reason": "r", "score": 4})
    return json.dumps({"reason": "r", "verdict": 1})


def critic(**kw: Any) -> AspectCritic:
    return AspectCritic(name="m", definition="Is it right?", **kw)


JUDGES: dict[str, Callable[..., Judge]] = {
    "aspect_critic": critic,
    "rubric": lambda **kw: RubricJudge(name="m", definition="How right is it?", **kw),
    "statements": lambda **kw: StatementSupport(**kw),
    "ensemble": lambda **kw: JudgeEnsemble(critic(**kw), num_judges=2),
}


def requests_of(judge: Judge, **call: Any) -> list[LLMRequest]:
    llm = ScriptedLLM(handler=answer)
    judgement = asyncio.run(judge.ajudge(INPUTS, **{"llm": llm, **call}))
    assert not judgement.failed, judgement.error
    return llm.requests


@pytest.mark.parametrize("kind", JUDGES)
def test_the_calls_temperature_and_sample_index_reach_every_request(kind: str) -> None:
    judge = JUDGES[kind](temperature=0.3)
    requests = requests_of(judge, sample_index=3, temperature=0.7)
    assert requests and all(r.temperature == 0.7 for r in requests)
    indexes = sorted({r.sample_index for r in requests})
    assert indexes == ([6, 7] if kind == "ensemble" else [3])


@pytest.mark.parametrize("kind", JUDGES)
def test_without_a_temperature_the_judges_own_is_sent(kind: str) -> None:
    requests = requests_of(JUDGES[kind](temperature=0.3))
    assert requests and all(r.temperature == 0.3 for r in requests)


@pytest.mark.parametrize("kind", JUDGES)
def test_no_examples_given_and_an_empty_list_ask_the_same(kind: str) -> None:
    none = requests_of(JUDGES[kind]())
    assert [r.messages for r in none] == [r.messages for r in requests_of(JUDGES[kind](), examples=[])]
    shown = requests_of(JUDGES[kind](), examples=[EXAMPLE])
    assert any(len(s.messages) > len(n.messages) for s, n in zip(shown, none))


@pytest.mark.parametrize("kind", JUDGES)
def test_the_judges_own_llm_serves_a_call_without_one_and_none_at_all_is_refused(kind: str) -> None:
    own = ScriptedLLM(handler=answer)
    assert not asyncio.run(JUDGES[kind](llm=own).ajudge(INPUTS)).failed
    assert own.requests
    with pytest.raises(ValueError, match="llm"):
        asyncio.run(JUDGES[kind]().ajudge(INPUTS))
