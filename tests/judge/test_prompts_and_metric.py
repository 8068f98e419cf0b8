"""Prompt rendering and answer parsing; AspectCritic judging with a scripted LLM."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from promptevolver.errors import AnnotationError, OutputParseError, PermanentLLMError, TransientLLMError
from promptevolver.judge._aspect_critic import AspectCritic, AspectCriticOutput
from promptevolver.judge._prompts import (
    INPUT_HEADER,
    OUTPUT_HEADER,
    Prompt,
    extract_json_object,
    split_rendered,
)
from promptevolver.judge._protocol import Judgement
from promptevolver.judge._rubric import rubric_output_model
from promptevolver.judge._statements import Statements, Verdicts
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import ChatMessage

MARKER = f"\n\n{OUTPUT_HEADER}\n"
PROMPT = AspectCritic.PROMPT_NAME
DEFINITION = "Is the response factually correct compared with the reference?"
AC_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "edited_chain_runs.json"
YES = '{"reason": "It matches the reference.", "verdict": 1}'
NO = '{"reason": "It contradicts the reference.", "verdict": 0}'


def bundled_input() -> dict[str, Any]:
    data = json.loads(AC_FILE.read_text(encoding="utf-8"))
    return dict(data["answer_correctness"][0]["metric_input"])


def critic(**kwargs: Any) -> AspectCritic:
    return AspectCritic(name="answer_correctness", definition=DEFINITION, **kwargs)


def judge(
    metric: AspectCritic, llm: ScriptedLLM, inputs: dict[str, Any] | None = None, **kwargs: Any
) -> Judgement:
    return asyncio.run(metric.ajudge(inputs if inputs is not None else bundled_input(), llm=llm, **kwargs))


# --- Prompt.render / split_rendered -------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    instruction=st.text().filter(lambda text: MARKER not in text),
    inputs=st.dictionaries(st.text(max_size=12), json_values, max_size=5),
)
def test_render_split_round_trip(instruction: str, inputs: dict[str, Any]) -> None:
    prompt = Prompt("p", instruction, AspectCriticOutput)
    messages = prompt.render(inputs)
    assert [m.role for m in messages] == ["system", "user"]
    assert split_rendered(messages) == (
        instruction.strip(),
        {k: v for k, v in inputs.items() if v is not None},
    )
    assert split_rendered(list(messages)) == split_rendered(messages)


@pytest.mark.parametrize(
    "instruction",
    [
        "Judge the answer.\n\n## Output format",  # ends with the heading, without its newline
        "Judge.\n\n## Output format\n\n## Output format",
        "## Output format\nsay yes",
    ],
)
def test_round_trip_of_instructions_that_mention_the_output_heading(instruction: str) -> None:
    messages = Prompt("p", instruction, AspectCriticOutput).render({"user_input": "q"})
    assert split_rendered(messages) == (instruction, {"user_input": "q"})


def test_render_shows_the_output_fields_and_inputs() -> None:
    system, user = Prompt("p", "  Be strict.  ", AspectCriticOutput).render({"response": "ü", "x": None})
    assert system.content.startswith("Be strict.\n\n## Output format\n")
    assert user.content.startswith(INPUT_HEADER + "\n")
    assert json.loads(user.content[len(INPUT_HEADER) :]) == {"response": "ü"}


def _leaf_fields(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> list[tuple[int, str, str]]:
    out = []
    for name, prop in schema["properties"].items():
        out.append((depth, name, prop.get("description", "")))
        ref = prop.get("$ref") or prop.get("items", {}).get("$ref")
        if ref:
            out += _leaf_fields(defs[ref.rsplit("/", 1)[-1]], defs, depth + 1)
    return out


@pytest.mark.parametrize(
    "model",
    [
        AspectCriticOutput,
        Statements,
        Verdicts,
        rubric_output_model(1, 5, True),
        rubric_output_model(0, 1, False),
    ],
)
def test_output_format_lists_every_field_in_order_not_the_schema_text(model: type[BaseModel]) -> None:
    """Every output model we ship: each field (nested ones indented under theirs) appears once,
    in the model's order, with its description; the JSON schema itself is not in the prompt
    (it goes to the server as ``json_schema``), so a judge call spends no tokens on it."""
    system = Prompt("p", "Judge.", model).render({"response": "r"})[0].content
    body = system.split("## Output format\n", 1)[1]
    schema = model.model_json_schema()
    lines = body.splitlines()[1:]
    expected = _leaf_fields(schema, schema.get("$defs", {}))
    assert len(lines) == len(expected)
    for line, (depth, name, about) in zip(lines, expected):
        assert line.startswith("  " * depth + f'- "{name}" (')
        assert line.endswith(about)
    assert '"properties"' not in system and "$defs" not in system
    assert len(body) < len(json.dumps(schema))


@pytest.mark.parametrize(
    "messages",
    [
        (),
        (ChatMessage("user", "hello"),),
        (ChatMessage("system", "no heading"), ChatMessage("user", f"{INPUT_HEADER}\n{{}}")),
        (ChatMessage("system", f"x{MARKER}y"), ChatMessage("user", "no input header")),
        (ChatMessage("system", f"x{MARKER}y"), ChatMessage("user", f"{INPUT_HEADER}\nnot json")),
        (ChatMessage("system", f"x{MARKER}y"), ChatMessage("user", f"{INPUT_HEADER}\n[1, 2]")),
        (ChatMessage("user", f"x{MARKER}y"), ChatMessage("user", f"{INPUT_HEADER}\n{{}}")),
    ],
)
def test_split_rendered_rejects_other_messages(messages: tuple[ChatMessage, ...]) -> None:
    assert split_rendered(messages) is None


# --- extract_json_object / Prompt.parse ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"reason": "ok", "verdict": 1}\n```',
        '```\n{"reason": "ok", "verdict": 1}\n```',
        'Sure! Here is my verdict:\n```JSON\n{"reason": "ok", "verdict": 1}\n```\nThanks.',
        'Here it is: {"reason": "ok", "verdict": 1} I hope that helps.',
        '{"reason": "ok", "verdict": 1}\n\nNote: {"ignored": true}',
        "{'reason': 'ok', 'verdict': 1}",
        "The answer: {'reason': 'ok', 'verdict': 1}.",
    ],
)
def test_extract_json_object_repairs(text: str) -> None:
    assert extract_json_object(text) == {"reason": "ok", "verdict": 1}
    assert Prompt("p", "x", AspectCriticOutput).parse(text) == AspectCriticOutput(reason="ok", verdict=1)


def test_extract_json_object_keeps_braces_and_quotes_inside_strings() -> None:
    text = 'Result: {"reason": "a } b \\" { it\'s", "verdict": 0} done'
    assert extract_json_object(text) == {"reason": "a } b \" { it's", "verdict": 0}


@pytest.mark.parametrize(
    "text",
    [
        '{"reason": "cut off", "verdict": 1',
        '```json\n{"reason": "cut off",\n```',
        "I think the answer is yes.",
        "",
        "{reason: ok, verdict: 1}",
    ],
)
def test_unrecoverable_answers_raise_with_raw_text(text: str) -> None:
    with pytest.raises(OutputParseError) as info:
        extract_json_object(text)
    assert info.value.raw == text


@pytest.mark.parametrize(
    "text",
    [
        '{"reason": "x", "verdict": 2}',
        '{"reason": "x"}',
        '{"verdict": 1}',
        '{"reason": "x", "verdict": "maybe"}',
    ],
)
def test_schema_invalid_answers_raise_output_parse_error(text: str) -> None:
    with pytest.raises(OutputParseError) as info:
        Prompt("p", "x", AspectCriticOutput).parse(text)
    assert info.value.raw == text


def test_braces_that_are_not_a_mapping_are_rejected() -> None:
    with pytest.raises(OutputParseError, match="not a JSON object"):
        extract_json_object("verdicts: {1, 0}")  # a Python set literal
    assert extract_json_object('[{"verdict": 1}]') == {"verdict": 1}  # the first object inside


# --- AspectCritic -------------------------------------------------------------------------------


def test_seed_instruction_contains_the_definition() -> None:
    metric = critic()
    assert list(metric.get_prompts()) == [PROMPT]
    assert DEFINITION in metric.get_instructions()[PROMPT]
    assert metric.get_prompts()[PROMPT].output_model is AspectCriticOutput


@pytest.mark.parametrize(("answer", "score"), [(YES, 1.0), (NO, 0.0)])
def test_ajudge_returns_the_verdict_and_reason(answer: str, score: float) -> None:
    metric, llm = critic(), ScriptedLLM([answer])
    result = judge(metric, llm)
    assert result == Judgement(score=score, reason=json.loads(answer)["reason"], raw=answer, error=None)
    assert not result.failed
    assert len(llm.requests) == 1
    instruction, shown = split_rendered(llm.requests[0].messages)  # type: ignore[misc]
    assert instruction == metric.get_instructions()[PROMPT]
    assert shown == {k: v for k, v in bundled_input().items() if k in ("user_input", "response", "reference")}
    assert llm.requests[0].json_schema == AspectCriticOutput.model_json_schema()


def test_ajudge_shows_only_the_fields_the_judge_uses() -> None:
    llm = ScriptedLLM([YES])
    inputs = {
        "user_input": "q",
        "response": "a",
        "retrieved_contexts": ["c"],
        "secret": "s",
        "reference": None,
    }
    judge(critic(), llm, inputs)
    _, shown = split_rendered(llm.requests[0].messages)  # type: ignore[misc]
    assert shown == {"user_input": "q", "response": "a", "retrieved_contexts": ["c"]}


def test_instructions_override_is_what_the_llm_sees_and_changes_nothing() -> None:
    metric, llm = critic(), ScriptedLLM([YES])
    before = metric.get_instructions()
    result = judge(metric, llm, instructions={PROMPT: "Answer 1 only for perfect responses."})
    assert result.score == 1.0
    system = llm.requests[0].messages[0]
    assert system.role == "system"
    assert system.content.startswith("Answer 1 only for perfect responses." + MARKER)
    assert DEFINITION not in system.content
    assert metric.get_instructions() == before


def test_malformed_answer_is_re_asked_once() -> None:
    metric, llm = critic(max_reasks=1), ScriptedLLM(["I would say yes.", YES])
    result = judge(metric, llm)
    assert result.score == 1.0 and result.error is None and result.raw == YES
    assert len(llm.requests) == 2
    first, second = llm.requests
    assert len(first.messages) == 2
    assert second.messages[:2] == first.messages
    assert second.messages[2] == ChatMessage("assistant", "I would say yes.")
    assert second.messages[3].role == "user"
    assert "could not be used" in second.messages[3].content
    assert (first.sample_index, second.sample_index) == (0, 1)


@pytest.mark.parametrize("bad", ['{"reason": "x", "verdict": 2}', '{"reason": "truncated'])
def test_malformed_twice_is_a_failed_judgement_not_a_verdict(bad: str) -> None:
    metric, llm = critic(max_reasks=1), ScriptedLLM(["nonsense", bad])
    result = judge(metric, llm)
    assert result.failed and result.score is None
    assert result.reason is None
    assert result.raw == bad
    assert result.error is not None and "unparseable" in result.error
    assert len(llm.requests) == 2


def test_no_reasks_means_one_request() -> None:
    llm = ScriptedLLM(["nonsense"])
    result = judge(critic(max_reasks=0), llm)
    assert result.failed and result.raw == "nonsense"
    assert len(llm.requests) == 1


def test_llm_error_becomes_a_failed_judgement() -> None:
    llm = ScriptedLLM([PermanentLLMError("model not found", status=404)])
    result = judge(critic(), llm)
    assert result.failed
    assert (
        result.error is not None and "PermanentLLMError" in result.error and "model not found" in result.error
    )
    assert len(llm.requests) == 1  # permanent errors are not retried
    assert llm.usage.failures == 1


def test_llm_error_after_a_malformed_answer_keeps_the_raw_text() -> None:
    llm = ScriptedLLM(["nonsense", PermanentLLMError("bad request", status=400)])
    result = judge(critic(max_reasks=1), llm)
    assert result.failed and result.raw == "nonsense"
    assert result.error is not None and "PermanentLLMError" in result.error


def test_transient_errors_are_retried_by_the_client() -> None:
    llm = ScriptedLLM([TransientLLMError("busy", status=503), YES], max_attempts=3)
    assert judge(critic(), llm).score == 1.0
    assert len(llm.requests) == 2 and llm.usage.retries == 1

    exhausted = ScriptedLLM([TransientLLMError("busy", status=429)] * 3, max_attempts=3)
    result = judge(critic(), exhausted)
    assert result.failed and result.error is not None and "TransientLLMError" in result.error
    assert len(exhausted.requests) == 3


@pytest.mark.parametrize("field", ["response", "user_input"])
@pytest.mark.parametrize("missing", ["absent", None, ""])
def test_missing_required_field_is_an_annotation_error(field: str, missing: Any) -> None:
    inputs = {"user_input": "q", "response": "a"}
    if missing == "absent":
        del inputs[field]
    else:
        inputs[field] = missing
    llm = ScriptedLLM([YES])
    with pytest.raises(AnnotationError) as info:
        judge(critic(), llm, inputs)
    assert field in str(info.value)
    assert info.value.field == f"metric_input.{field}"
    assert llm.requests == []


def test_ajudge_needs_an_llm() -> None:
    with pytest.raises(ValueError, match="llm"):
        asyncio.run(critic().ajudge(bundled_input()))
    default = ScriptedLLM([NO])
    assert asyncio.run(critic(llm=default).ajudge(bundled_input())).score == 0.0


def test_set_instructions() -> None:
    metric = critic()
    metric.set_instructions({PROMPT: "New instruction."})
    assert metric.get_instructions() == {PROMPT: "New instruction."}
    llm = ScriptedLLM([YES])
    judge(metric, llm)
    assert split_rendered(llm.requests[0].messages)[0] == "New instruction."  # type: ignore[index]


@pytest.mark.parametrize("update", [{"no_such_prompt": "x"}, {PROMPT: "changed", "no_such_prompt": "x"}])
def test_set_instructions_with_unknown_prompt_changes_nothing(update: dict[str, str]) -> None:
    metric = critic()
    before_instructions, before_prompts = metric.get_instructions(), metric.get_prompts()
    with pytest.raises(KeyError, match="no_such_prompt"):
        metric.set_instructions(update)
    assert metric.get_instructions() == before_instructions
    assert metric.get_prompts() == before_prompts
    with pytest.raises(KeyError):
        metric.set_prompts(no_such_prompt=before_prompts[PROMPT])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": " ", "definition": "d"},
        {"name": "m", "definition": ""},
        {"name": "m", "definition": "d", "max_reasks": -1},
    ],
)
def test_invalid_constructor_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        AspectCritic(**kwargs)
