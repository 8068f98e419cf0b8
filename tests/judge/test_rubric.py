"""RubricJudge: seed instruction, range checks, scoring and re-asking with a scripted LLM."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from promptevolver.errors import AnnotationError, PermanentLLMError
from promptevolver.judge import JudgeEnsemble, Metric, RubricJudge
from promptevolver.judge._prompts import split_rendered
from promptevolver.judge._protocol import Judgement
from promptevolver.llm import ScriptedLLM

INPUTS = {"user_input": "How do I boil an egg?", "response": "Put it in boiling water for 8 minutes."}


def rubric(**kwargs: Any) -> RubricJudge:
    return RubricJudge(name="helpfulness", definition="How helpful is the response?", **kwargs)


def judge(metric: Any, llm: ScriptedLLM, **kwargs: Any) -> Judgement:
    return asyncio.run(metric.ajudge(INPUTS, llm=llm, **kwargs))


def answer(score: Any, reason: str = "ok") -> str:
    return json.dumps({"reason": reason, "score": score})


def test_it_is_a_metric_with_one_ragas_named_prompt_and_a_seed_that_states_the_scale():
    metric = rubric(rubrics={1: "useless", 5: "complete and correct"})
    assert isinstance(metric, Metric) and metric.calls_per_evaluation == 1
    ((name, instruction),) = metric.get_instructions().items()
    assert name == "single_turn_simple_criteria_prompt"
    assert "from 1 (worst) to 5 (best)" in instruction and "How helpful" in instruction
    assert "- score 1: useless" in instruction and "- score 5: complete and correct" in instruction
    assert metric.levels == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert rubric(score_range=(0, 1), discrete=False).levels is None


def test_the_schema_bounds_the_score_and_the_answer_becomes_the_judgement():
    metric = rubric()
    schema = metric.get_prompts()[RubricJudge.PROMPT_NAME].json_schema()
    assert schema["properties"]["score"]["minimum"] == 1 and schema["properties"]["score"]["maximum"] == 5
    assert schema["properties"]["score"]["type"] == "integer"
    llm = ScriptedLLM([answer(4, "mostly helpful")])
    j = judge(metric, llm)
    assert (j.score, j.reason, j.failed) == (4.0, "mostly helpful", False)
    assert llm.requests[0].json_schema == schema


@pytest.mark.parametrize("bad", [7, 0, 2.5, "high"])
def test_an_out_of_range_or_fractional_score_is_reasked_then_fails_never_clipped(bad):
    llm = ScriptedLLM([answer(bad), answer(bad)])
    j = judge(rubric(max_reasks=1), llm)
    assert j.failed and j.cause == "parse" and "score" in (j.error or "")
    assert len(llm.requests) == 2
    assert "could not be used" in llm.requests[1].messages[-1].content


def test_a_reask_that_answers_in_range_is_used():
    llm = ScriptedLLM([answer(9), answer(2)])
    assert judge(rubric(), llm).score == 2.0


def test_a_continuous_scale_takes_any_number_in_range():
    metric = rubric(score_range=(0, 1), discrete=False)
    assert judge(metric, ScriptedLLM([answer(0.35)])).score == pytest.approx(0.35)
    assert judge(metric, ScriptedLLM([answer(1.2), answer(1.5)])).failed


def test_instructions_per_call_leave_the_metric_unchanged():
    metric = rubric()
    llm = ScriptedLLM([answer(3)])
    judge(metric, llm, instructions={RubricJudge.PROMPT_NAME: "Score it strictly."})
    instruction, inputs = split_rendered(llm.requests[0].messages) or ("", {})
    assert instruction == "Score it strictly." and inputs == INPUTS
    assert metric.get_instructions()[RubricJudge.PROMPT_NAME].startswith("Evaluate the input")


def test_llm_failures_are_failed_judgements_and_missing_fields_raise():
    j = judge(rubric(), ScriptedLLM([PermanentLLMError("denied", status=400)]))
    assert j.failed and j.cause == "http 400" and j.score is None and "denied" in (j.error or "")
    with pytest.raises(AnnotationError, match="response"):
        asyncio.run(rubric().ajudge({"user_input": "q"}, llm=ScriptedLLM([answer(3)])))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"score_range": (5, 1)},
        {"score_range": (1, 1)},
        {"score_range": (0.5, 4)},
        {"rubrics": {6: "beyond"}},
        {"max_reasks": -1},
    ],
)
def test_invalid_arguments_are_refused(kwargs):
    with pytest.raises(ValueError):
        rubric(**kwargs)


def test_an_ensemble_of_rubric_judges_averages_their_scores():
    scores = iter([answer(2), answer(4), answer(3)])
    llm = ScriptedLLM(handler=lambda request: next(scores))
    ensemble = JudgeEnsemble(metric=rubric(), num_judges=3, aggregation_method="mean")
    assert ensemble.calls_per_evaluation == 3
    assert judge(ensemble, llm).score == pytest.approx(3.0)
