"""The pairwise judge (a / b / tie, or is a better; an optional order swap) and the classification
judge: the Metric contract, names answered and values stored, the label space, every declared
field reaching the prompt, and the order-swap check."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from promptevolver import ClassificationJudge, PairwiseJudge
from promptevolver.errors import AnnotationError
from promptevolver.evaluation._agreement import order_swap_bias
from promptevolver.judge import label_scale_of
from promptevolver.judge._prompts import split_rendered
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.testing.contracts import MetricContract

PAIR = {"user_input": "Say hi.", "response_a": "Hi!", "response_b": "Goodbye.", "reference": "Hi."}


class TestPairwiseJudge(MetricContract):
    inputs = PAIR

    def make_metric(self) -> PairwiseJudge:
        return PairwiseJudge(name="preference", definition="Which follows the instruction?")

    def answer(self, request: LLMRequest) -> str:
        return json.dumps({"reason": "a says hi", "verdict": "a"})


class TestPairwiseJudgeBothOrders(TestPairwiseJudge):
    def make_metric(self) -> PairwiseJudge:
        return PairwiseJudge(name="preference", definition="Which is better?", ties=False, order_swap=True)


class TestClassificationJudge(MetricContract):
    score_range = (0.0, 2.0)

    def make_metric(self) -> ClassificationJudge:
        return ClassificationJudge(
            name="intent", definition="What does the user want?", labels=["refund", "info", "other"]
        )

    def answer(self, request: LLMRequest) -> str:
        return json.dumps({"reason": "asks for money back", "label": "other"})


def _judge(metric: Any, answer: Any, inputs: dict[str, Any] = PAIR) -> tuple[Any, ScriptedLLM]:
    llm = ScriptedLLM(handler=answer)
    return asyncio.run(metric.ajudge(inputs, llm=llm)), llm


def test_the_verdict_name_is_stored_as_its_value_and_shown_back_as_its_name():
    judge = PairwiseJudge(name="p", definition="d")
    for name, value in (("a", 1.0), ("b", 0.0), ("tie", 0.5)):
        judged, _ = _judge(judge, lambda r, n=name: json.dumps({"reason": "r", "verdict": n}))
        assert judged.score == value and judge.shown_label(value) == name
    assert [(c.value, c.name) for c in label_scale_of(judge).label_space()] == [
        (1.0, "a"),
        (0.0, "b"),
        (0.5, "tie"),
    ]
    binary = PairwiseJudge(name="p", definition="d", ties=False)
    assert label_scale_of(binary).kind == "binary"
    failed, _ = _judge(binary, lambda r: json.dumps({"reason": "r", "verdict": "tie"}))
    assert failed.failed and failed.cause == "parse"  # a tie is no answer of a judge without ties


def test_every_declared_field_reaches_the_prompt_and_an_empty_response_is_shown():
    judge = PairwiseJudge(name="p", definition="d")
    inputs = {**PAIR, "response_b": "", "retrieved_contexts": ["ctx"]}
    _, llm = _judge(judge, lambda r: json.dumps({"reason": "r", "verdict": "a"}), inputs)
    _, shown = split_rendered(llm.requests[0].messages)
    assert shown == {
        "user_input": "Say hi.",
        "response_a": "Hi!",
        "response_b": "",
        "reference": "Hi.",
        "retrieved_contexts": ["ctx"],
    }
    with pytest.raises(AnnotationError, match="needs 'response_b'"):
        judge.prompt_inputs({"user_input": "q", "response_a": "x"})


def test_the_order_swap_asks_both_orders_and_maps_the_second_back():
    judge = PairwiseJudge(name="p", definition="d", order_swap=True)

    def always_first(request: LLMRequest) -> str:  # a judge that always prefers the first shown
        return json.dumps({"reason": "first", "verdict": "a"})

    judged, llm = _judge(judge, always_first)
    assert llm.usage.total_calls == 2
    first, second = (split_rendered(r.messages)[1] for r in llm.requests)
    assert (first["response_a"], second["response_a"]) == ("Hi!", "Goodbye.")
    assert judged.details["order_swap"] == {"a_first": "a", "b_first": "b", "consistent": False}
    assert judged.score == 0.5  # an inconsistent pair is a tie
    bias = order_swap_bias([judged])
    assert bias.consistency == 0.0 and bias.first_position == 1.0

    def content(request: LLMRequest) -> str:  # prefers "Hi!" wherever it is shown
        shown = split_rendered(request.messages)[1]
        return json.dumps({"reason": "hi", "verdict": "a" if shown["response_a"] == "Hi!" else "b"})

    judged, _ = _judge(judge, content)
    assert judged.score == 1.0 and judged.details["order_swap"]["consistent"]
    assert order_swap_bias([judged]).consistency == 1.0


def test_classification_labels_must_be_named_and_distinct():
    for labels in (["x"], ["x", "x"], ["x", " "]):
        with pytest.raises(ValueError, match="at least two distinct"):
            ClassificationJudge(name="c", definition="d", labels=labels)
    judge = ClassificationJudge(name="c", definition="d", labels=["spam", "ham"])
    assert judge.shown_label(1.0) == "ham"
    assert "spam, ham" in judge.get_instructions()[judge.prompt_name]
