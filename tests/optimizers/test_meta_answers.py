"""Meta answers a small model gets wrong are rejected with a reason, never made candidates: an
echoed answer template (``{"instruction": "<the new instruction>"}``, as SmolLM2 answers),
unchanged instructions, missing fields."""

from __future__ import annotations

import asyncio
import json

import pytest

from promptevolver.llm import ScriptedLLM
from promptevolver.optimizers.operators import _meta_prompts as meta_prompts

FEEDBACK_ARGS = {
    "instruction": "Judge it.",
    "failures": [
        meta_prompts.Example({"response": "Born 1990."}, {"verdict": 0}, {"verdict": 1, "reason": "ok"})
    ],
    "max_feedbacks": 3,
    "temperature": 0.0,
    "sample_index": 0,
}


def _rewrite(answer: str) -> meta_prompts.OperatorOutcome:
    llm = ScriptedLLM([answer])
    return asyncio.run(
        meta_prompts.rewrite(
            llm,
            instruction="Judge it.",
            feedback_items=["Say no to wrong dates."],
            temperature=0.0,
            sample_index=0,
        )
    )


@pytest.mark.parametrize(
    "placeholder", ["<the new instruction>", " <instruction> ", "<new instruction here>"]
)
def test_an_echoed_instruction_placeholder_is_rejected(placeholder):
    outcome = _rewrite("```json\n" + json.dumps({"instruction": placeholder}) + "\n```")
    assert outcome.value is None and outcome.rejected and "template echoed" in outcome.rejected


@pytest.mark.parametrize(
    "text",
    ["Judge it. Say no (0) when a date is wrong.", "Use <b>bold</b> rules: answer 0 for <wrong dates>."],
)
def test_a_real_instruction_with_angle_brackets_is_kept(text):
    assert _rewrite(json.dumps({"instruction": text})).value == text


def test_echoed_feedback_placeholders_are_rejected_and_real_items_kept():
    async def ask(answer: str) -> meta_prompts.OperatorOutcome:
        return await meta_prompts.feedback(ScriptedLLM([answer]), **FEEDBACK_ARGS)

    echoed = asyncio.run(ask(json.dumps({"feedback": ["<change 1>", "<change 2>"]})))
    assert echoed.value is None and "template echoed" in (echoed.rejected or "")
    mixed = asyncio.run(ask(json.dumps({"feedback": ["<change 1>", "Answer 0 when a date is wrong."]})))
    assert mixed.value == ["Answer 0 when a date is wrong."]


def test_a_cut_off_copy_of_the_parent_is_rejected():
    """SmolLM2 through llama.cpp's grammar: "Judge it. Say" from a parent "Judge it. Say no..."."""
    llm = ScriptedLLM([json.dumps({"instruction": "Evaluate the input. Use only"})])
    outcome = asyncio.run(
        meta_prompts.crossover(
            llm,
            parent_a="Evaluate the input. Use only 'Yes' (1) and 'No' (0) as verdict.",
            parent_b="Answer 1 when the response matches the reference.",
            temperature=0.0,
            sample_index=0,
        )
    )
    assert outcome.value is None and outcome.rejected == "truncated copy of a parent instruction"


@pytest.mark.parametrize(
    "pruned",
    [
        "Evaluate the input.",
        "Evaluate the input. Use only 'Yes' (1) and 'No' (0) as verdict.\nGive verdict 0 when:",
    ],
)
def test_dropping_whole_trailing_sentences_or_lines_is_an_edit_not_a_truncation(pruned):
    parent = (
        "Evaluate the input. Use only 'Yes' (1) and 'No' (0) as verdict.\nGive verdict 0 when:\n"
        "- the date is wrong"
    )
    llm = ScriptedLLM([json.dumps({"instruction": pruned})])
    outcome = asyncio.run(
        meta_prompts.rewrite(llm, instruction=parent, feedback_items=["x"], temperature=0.0, sample_index=0)
    )
    assert outcome.value == pruned
