"""StatementSupport: two prompts per evaluation, the supported fraction, failures named by prompt."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from promptevolver.errors import AnnotationError, TransientLLMError
from promptevolver.judge import JudgeEnsemble, Metric, StatementSupport
from promptevolver.judge._prompts import split_rendered
from promptevolver.judge._protocol import OUTPUTS, Judgement
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest

EX, VER = StatementSupport.EXTRACTOR, StatementSupport.VERIFIER
INPUTS = {
    "user_input": "Where is the Eiffel Tower?",
    "response": "It is in Paris. It was built in 1850.",
    "retrieved_contexts": ["The Eiffel Tower is in Paris.", "It was completed in 1889."],
}
STATEMENTS = ["The Eiffel Tower is in Paris.", "The Eiffel Tower was built in 1850."]


def extracted(statements: list[str]) -> str:
    return json.dumps({"statements": statements})


def verified(verdicts: list[int], statements: list[str] = STATEMENTS) -> str:
    pairs = enumerate(zip(statements, verdicts))
    items = [{"statement": s, "reason": f"r{i}", "verdict": v} for i, (s, v) in pairs]
    return json.dumps({"statements": items})


def judge(llm: ScriptedLLM, metric: Any = None, **kwargs: Any) -> Judgement:
    return asyncio.run((metric or StatementSupport()).ajudge(INPUTS, llm=llm, **kwargs))


def test_it_is_a_metric_with_two_ragas_named_prompts_costing_two_calls():
    metric = StatementSupport(definition="the context states it.")
    assert isinstance(metric, Metric) and metric.calls_per_evaluation == 2
    assert list(metric.get_instructions()) == [EX, VER]
    assert "the context states it." in metric.get_instructions()[VER]


def test_the_score_is_the_supported_fraction_with_each_prompts_output_in_details():
    llm = ScriptedLLM([extracted(STATEMENTS), verified([1, 0])])
    j = judge(llm)
    assert j.score == 0.5 and not j.failed
    assert "1 of 2 statements supported" in (j.reason or "") and "built in 1850" in (j.reason or "")
    assert j.details is not None and j.details["statements"] == 2 and j.details["supported"] == 1
    assert j.details[OUTPUTS][EX] == {"statements": STATEMENTS}
    assert [v["verdict"] for v in j.details[OUTPUTS][VER]["statements"]] == [1, 0]


def test_the_extractor_sees_question_and_answer_and_the_verifier_the_context_and_statements():
    llm = ScriptedLLM([extracted(STATEMENTS), verified([1, 1])])
    judge(llm, instructions={VER: "Be strict."})
    (ex_instruction, ex_inputs), (ver_instruction, ver_inputs) = (
        split_rendered(r.messages)
        for r in llm.requests  # type: ignore[misc]
    )
    assert ex_inputs == {"question": INPUTS["user_input"], "answer": INPUTS["response"]}
    assert ex_instruction.startswith("Given a question and an answer")
    assert ver_inputs == {"context": "\n".join(INPUTS["retrieved_contexts"]), "statements": STATEMENTS}
    assert ver_instruction == "Be strict."


def test_a_verdict_count_that_differs_from_the_statements_is_reasked_then_fails_naming_the_prompt():
    llm = ScriptedLLM([extracted(STATEMENTS), verified([1]), verified([1], STATEMENTS[:1])])
    j = judge(llm)
    assert j.failed and j.cause == "parse" and j.score is None
    assert (j.error or "").startswith(f"{VER}: ") and "expected 2 verdicts" in (j.error or "")
    assert len(llm.requests) == 3


def test_no_statements_is_a_failed_evaluation_not_a_score():
    llm = ScriptedLLM([extracted([])])
    j = judge(llm)
    assert j.failed and j.score is None and j.cause == "parse" and "no statements" in (j.error or "")
    assert len(llm.requests) == 1


def test_an_llm_failure_of_either_prompt_is_a_failed_judgement_naming_it():
    down = TransientLLMError("server down", status=503)
    j = judge(ScriptedLLM([down], max_attempts=1))
    assert j.failed and j.cause == "http 503" and (j.error or "").startswith(f"{EX}: ")
    j = judge(ScriptedLLM([extracted(STATEMENTS), down], max_attempts=1))
    assert j.failed and (j.error or "").startswith(f"{VER}: ")


def test_required_fields_are_checked_before_any_call():
    llm = ScriptedLLM([])
    with pytest.raises(AnnotationError, match="retrieved_contexts"):
        asyncio.run(StatementSupport().ajudge({"user_input": "q", "response": "r"}, llm=llm))
    assert llm.requests == []


def test_an_ensemble_counts_both_prompts_per_judge():
    def handler(request: LLMRequest) -> str:
        _, inputs = split_rendered(request.messages) or ("", {})
        return extracted(STATEMENTS) if "question" in inputs else verified([1, request.sample_index % 2])

    ensemble = JudgeEnsemble(metric=StatementSupport(), num_judges=2, aggregation_method="mean")
    assert ensemble.calls_per_evaluation == 4
    llm = ScriptedLLM(handler=handler)
    assert judge(llm, ensemble).score == pytest.approx(0.75)
    assert len(llm.requests) == 4


def _annotated(edited_statements: list[str], *, recorded_inputs: bool) -> Any:
    from promptevolver.annotations._models import SampleAnnotation

    fields = {"user_input": "q?", "response": "a. b.", "retrieved_contexts": ["ctx one", "ctx two"]}
    verdicts = [{"statement": s, "reason": "the context says so", "verdict": 1} for s in edited_statements]
    return SampleAnnotation.model_validate(
        {
            "metric_input": fields,
            "metric_output": 1.0,
            "is_accepted": True,
            "prompts": {
                EX: {
                    "prompt_input": {"question": "q?", "answer": "a. b."} if recorded_inputs else {},
                    "prompt_output": {"statements": ["a."]},
                    "edited_output": {"statements": edited_statements, "reason": "keep every claim"},
                },
                VER: {
                    "prompt_input": {"context": "ctx one\nctx two", "statements": edited_statements}
                    if recorded_inputs
                    else {},
                    "prompt_output": {"statements": verdicts},
                },
            },
        }
    )


@pytest.mark.parametrize("recorded_inputs", [True, False])
def test_each_prompt_is_shown_its_own_teaching_examples(recorded_inputs):
    """Ragas' per-prompt examples: the extractor is shown the human's edited statements (its
    output fields only, the edit's comment left out), the verifier the approved verdicts, with
    each prompt's inputs (recorded, else made from the sample's fields)."""
    example = _annotated(["a.", "b."], recorded_inputs=recorded_inputs)
    metric = StatementSupport()
    assert metric.shows_examples()
    ((ex_in, ex_out),) = metric.demonstrations_for(EX, [example])
    assert ex_in == {"question": "q?", "answer": "a. b."} and ex_out == {"statements": ["a.", "b."]}
    ((ver_in, ver_out),) = metric.demonstrations_for(VER, [example])
    assert ver_in == {"context": "ctx one\nctx two", "statements": ["a.", "b."]}
    assert [v["verdict"] for v in ver_out["statements"]] == [1, 1]
    llm = ScriptedLLM([extracted(STATEMENTS), verified([1, 0])])
    j = judge(llm, examples=[example])
    assert j.score == 0.5
    from promptevolver.judge._prompts import rendered_examples

    shown = [rendered_examples(r.messages) for r in llm.requests]
    assert shown[0] == [(ex_in, ex_out)] and shown[1] == [(ver_in, ver_out)]
