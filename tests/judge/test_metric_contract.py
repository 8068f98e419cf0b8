"""The Metric contract suite (promptevolver.testing.contracts) on every judge we ship: the aspect
critic, the rubric judge, a judge ensemble and the statement-support metric."""

from __future__ import annotations

import json
from typing import Any

import pytest

from promptevolver.judge._aspect_critic import AspectCritic
from promptevolver.judge._ensemble import JudgeEnsemble
from promptevolver.judge._rubric import RubricJudge
from promptevolver.judge._statements import StatementSupport
from promptevolver.llm._base import LLMRequest
from promptevolver.testing.contracts import MetricContract

STATEMENTS = ["The Eiffel Tower is in Paris.", "It was built in 1850."]


def verdict(request: LLMRequest) -> str:
    return json.dumps({"reason": "the response answers it", "verdict": 1})


class TestAspectCritic(MetricContract):
    def make_metric(self) -> AspectCritic:
        return AspectCritic(name="answer_correctness", definition="Is the response correct?")

    def answer(self, request: LLMRequest) -> str:
        return verdict(request)


class TestRubricJudge(MetricContract):
    score_range = (1.0, 5.0)

    def make_metric(self) -> RubricJudge:
        return RubricJudge(name="helpfulness", definition="How helpful is the response?")

    def answer(self, request: LLMRequest) -> str:
        return json.dumps({"reason": "mostly helpful", "score": 4})


class TestJudgeEnsemble(MetricContract):
    def make_metric(self) -> JudgeEnsemble:
        critic = AspectCritic(name="answer_correctness", definition="Is the response correct?")
        return JudgeEnsemble(metric=critic, num_judges=3)

    def answer(self, request: LLMRequest) -> str:
        return verdict(request)


class TestStatementSupport(MetricContract):
    inputs = {
        "user_input": "Where is the Eiffel Tower?",
        "response": "It is in Paris. It was built in 1850.",
        "retrieved_contexts": ["The Eiffel Tower is in Paris.", "It was completed in 1889."],
    }

    def make_metric(self) -> StatementSupport:
        return StatementSupport()

    def answer(self, request: LLMRequest) -> str:
        if "verdict" not in json.dumps(request.json_schema):  # the extractor
            return json.dumps({"statements": STATEMENTS})
        items = [{"statement": s, "reason": "r", "verdict": i % 2} for i, s in enumerate(STATEMENTS)]
        return json.dumps({"statements": items})


class _SpendsTwice(TestAspectCritic):
    """A judge whose cost model undercounts (it asks twice): the suite must catch it."""

    def make_metric(self) -> Any:
        metric = super().make_metric()
        judge = metric.ajudge

        async def twice(inputs: Any, **kwargs: Any) -> Any:
            await judge(inputs, **kwargs)
            return await judge(inputs, **kwargs)

        metric.ajudge = twice  # type: ignore[method-assign]
        return metric


def test_the_suite_fails_a_metric_whose_calls_per_evaluation_is_wrong() -> None:
    with pytest.raises(AssertionError, match="calls_per_evaluation"):
        _SpendsTwice().test_a_well_formed_answer_is_a_score_in_range_after_calls_per_evaluation_calls()
