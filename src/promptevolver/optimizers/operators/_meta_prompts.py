"""The genetic operators: meta-prompts that write, critique, rewrite and merge instructions.

Each operator renders one meta-prompt, makes one *meta call* and checks the answer. An answer that
is empty, truncated (an unclosed code fence, cut-off JSON), unchanged from its parent, or not
parseable is **rejected**: the operator returns None with the reason, the caller keeps the parent
and counts the rejection. LLM failures after retries are rejections too; they never raise.

Operators (as in Ragas' GeneticOptimizer, with our sections):

* reverse engineering — infer an instruction from annotated (input, expected output) examples;
* feedback — at most ``k`` general changes, from samples the current instruction gets wrong (or
  where the human corrected the recorded judge), with samples it gets right for contrast (as GEPA's
  reflection shows whole minibatches);
* rewrite — apply feedback to the instruction (feedback + rewrite = *mutation*);
* crossover — merge two parent instructions into one child;
* lessons — the distillation stage's feedback (:mod:`..distill`): general criteria from a batch of
  the human corrections, each with the ids of the corrections it explains (its evidence).

The section headings (in ``promptevolver.judge._prompts``) are part of the prompt contract: the
simulated fake LLM reads them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from promptevolver.errors import ContextLengthExceededError, LLMError, OutputParseError
from promptevolver.judge import (
    ANSWER,
    CROSSOVER_PARENT_A,
    CROSSOVER_PARENT_B,
    CURRENT_INSTRUCTION,
    EXAMPLES,
    FAILING_SAMPLES,
    FEEDBACK_TO_APPLY,
    PASSING_SAMPLES,
    extract_json_object,
)
from promptevolver.llm import ChatMessage, LLMClient, LLMRequest

__all__ = [
    "Example",
    "OperatorOutcome",
    "crossover",
    "feedback",
    "lessons",
    "reverse_engineer",
    "rewrite",
]

_SYSTEM = (
    "You improve the instructions of an LLM judge so that its verdicts agree with human annotators. "
    "An instruction states the criterion the judge applies to an input; it must stay general: it is "
    "used on inputs you have not seen."
)
_INSTRUCTION_ANSWER = 'Answer with one JSON object only: {"instruction": "<the new instruction>"}'


@dataclass(frozen=True)
class Example:
    """An annotated sample shown to a meta call.

    ``inputs`` are the judge's input fields; ``expected`` the human-approved output (``verdict``
    and, when the human gave or accepted one, ``reason``); ``judged`` the current judge's output
    (feedback only).
    """

    inputs: dict[str, Any]
    expected: dict[str, Any]
    judged: dict[str, Any] | None = None
    #: A number the answer may cite the example by (the distillation stage's lessons), or None.
    id: int | None = None

    def line(self, *, judged: bool = True, recorded: bool = True) -> str:
        """The example as one line of compact JSON; ``judged=False`` leaves the judge output out
        (a passing sample: it equals the expected one), ``recorded=False`` the judge output's
        ``recorded`` marker (the prompt says once that every shown output is the recorded one)."""
        body: dict[str, Any] = {"input": self.inputs}
        if self.id is not None:
            body = {"id": self.id, **body}
        if self.judged is not None and judged:
            body["judge_output"] = (
                self.judged if recorded else {k: v for k, v in self.judged.items() if k != "recorded"}
            )
        body["expected_output"] = self.expected
        return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class OperatorOutcome:
    """What an operator produced: ``value`` (an instruction, or feedback items) or a rejection;
    ``error``: the LLM error's own text when the call failed (``rejected`` is ``llm error: <cause>``)."""

    value: str | list[str] | None
    rejected: str | None = None
    error: str | None = None


#: The answer schemas of the meta calls, sent as the request's ``json_schema``: a server that takes
#: structured output (negotiated as for judge calls) then returns the object the prompt asks for,
#: which small local models otherwise rarely do (llama.cpp constrains its grammar to it).
INSTRUCTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"instruction": {"type": "string"}},
    "required": ["instruction"],
    "additionalProperties": False,
}
FEEDBACK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"feedback": {"type": "array", "items": {"type": "string"}}},
    "required": ["feedback"],
    "additionalProperties": False,
}


#: The lessons call's answer: its ``feedback`` items are lessons with the corrections they explain
#: (a model that answers plain strings is accepted too: the stage then counts evidence itself).
LESSONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "feedback": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "lesson": {"type": "string"},
                    "explains": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["lesson", "explains"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["feedback"],
    "additionalProperties": False,
}


def _request(
    operation: str, user: str, temperature: float, sample_index: int, schema: dict[str, Any] | None = None
) -> LLMRequest:
    messages = (ChatMessage("system", _SYSTEM), ChatMessage("user", user))
    if schema is None:
        schema = FEEDBACK_SCHEMA if operation == "feedback" else INSTRUCTION_SCHEMA
    return LLMRequest(
        messages, temperature=temperature, operation=operation, sample_index=sample_index, json_schema=schema
    )


async def _ask_json(llm: LLMClient, request: LLMRequest) -> tuple[dict[str, Any] | None, OperatorOutcome]:
    """The answer's JSON object, or None and the rejection (the outcome is only read then)."""
    try:
        text = (await llm.complete(request)).text
    except LLMError as exc:
        return None, OperatorOutcome(None, f"llm error: {exc.cause}", f"{type(exc).__name__}: {exc}")
    return _parse_json(text)


def _instruction_from(
    data: dict[str, Any] | None, why: OperatorOutcome, parents: Sequence[str]
) -> OperatorOutcome:
    if data is None:
        return why
    text = data.get("instruction")
    if not isinstance(text, str) or not text.strip():
        return OperatorOutcome(None, "no instruction in answer")
    if is_placeholder(text):
        return OperatorOutcome(None, "answer template echoed (placeholder instruction)")
    if any(normalize(text) == normalize(p) for p in parents):
        return OperatorOutcome(None, "unchanged instruction")
    if any(_cut_off(text, p) for p in parents):  # a small model's copy that stopped mid-sentence
        return OperatorOutcome(None, "truncated copy of a parent instruction")
    return OperatorOutcome(text.strip())


#: A whole answer value that is a template placeholder (``<the new instruction>``, ``<change 1>``):
#: small models echo the answer format instead of filling it.
_PLACEHOLDER = re.compile(r"^\s*<[^<>\n]{1,80}>\s*$")


def is_placeholder(text: str) -> bool:
    """Whether ``text`` is only an angle-bracketed placeholder such as the answer template's."""
    return bool(_PLACEHOLDER.match(text))


def _cut_off(child: str, parent: str) -> bool:
    """Whether ``child`` is ``parent`` cut off mid-sentence: a proper prefix of it that ends
    neither a line nor a sentence (dropping whole trailing lines or sentences is an edit)."""
    child, parent = child.strip(), parent.strip()
    if len(child) >= len(parent) or not parent.startswith(child):
        return False
    return parent[len(child)] != "\n" and not child.endswith((".", "!", "?", ":", ";"))


def normalize(instruction: str) -> str:
    """Whitespace-normalised instruction: the identity used to detect duplicates."""
    return " ".join(instruction.split())


#: What a binary judge prompt returns, in the words of the meta-prompts.
BINARY_OUTPUT = "a reason and a verdict (1 = yes, 0 = no)"


def describe_output(schema: dict[str, Any] | None) -> str:
    """What a judge prompt returns, in words, from its JSON schema (default: a binary verdict)."""
    properties = (schema or {}).get("properties") or {}
    if not properties:
        return BINARY_OUTPUT
    parts = [
        f"{name} ({field.get('description', field.get('type', 'value'))})"
        for name, field in properties.items()
    ]
    return "a JSON object with " + ", ".join(parts)


async def reverse_engineer(
    llm: LLMClient,
    *,
    metric_name: str,
    examples: Sequence[Example],
    temperature: float,
    sample_index: int,
    prompt_name: str | None = None,
    output: str = BINARY_OUTPUT,
) -> OperatorOutcome:
    """Infer an instruction from ``examples`` (one meta call, operation ``reverse_engineer``);
    ``prompt_name`` names the prompt of a metric of several, ``output`` says what it returns."""
    lines = "\n".join(ex.line() for ex in examples)
    which = f"`{metric_name}`" if prompt_name is None else f"`{metric_name}` (its prompt `{prompt_name}`)"
    user = (
        f"The judge {which} reads an input and returns {output}.\n"
        f"Infer the instruction that makes a judge produce exactly these expected outputs.\n\n"
        f"{EXAMPLES}\n{lines}\n\n{ANSWER}\n{_INSTRUCTION_ANSWER}"
    )
    data, why = await _ask_json(llm, _request("reverse_engineer", user, temperature, sample_index))
    return _instruction_from(data, why, [])


def _shown_samples(
    instruction: str, failing: Sequence[Example], passing: Sequence[Example], *, recorded: bool = True
) -> str:
    """What a feedback or lessons call shows first: the current instruction, the ``failing``
    samples, the ``passing`` ones for contrast (when any: their expected output alone, the judge
    agreed with it), then the answer heading; ``recorded=False`` leaves the failing samples'
    ``recorded`` markers out (the caller says once that every judge output shown is recorded)."""
    lines = "\n".join(ex.line(recorded=recorded) for ex in failing)
    shown = "\n".join(ex.line(judged=False) for ex in passing)
    contrast = f"{PASSING_SAMPLES}\n{shown}\n\n" if passing else ""
    return f"{CURRENT_INSTRUCTION}\n{instruction}\n\n{FAILING_SAMPLES}\n{lines}\n\n{contrast}{ANSWER}\n"


def _all_recorded(examples: Sequence[Example]) -> bool:
    """Whether every example shows a judge output, each marked ``recorded``."""
    return bool(examples) and all(ex.judged is not None and ex.judged.get("recorded") for ex in examples)


async def feedback(
    llm: LLMClient,
    *,
    instruction: str,
    failures: Sequence[Example],
    max_feedbacks: int,
    temperature: float,
    sample_index: int,
    passing: Sequence[Example] = (),
) -> OperatorOutcome:
    """At most ``max_feedbacks`` general changes to ``instruction`` (operation ``feedback``), from
    ``failures`` and, for contrast, ``passing`` samples."""
    user = _shown_samples(instruction, failures, passing) + (
        "In the failing samples the judge's output (or the recorded one, when marked so) disagrees "
        "with the expected output: the human's verdict and, when given, the human's reason. The "
        "passing samples are judged right; keep them right. Find the general criteria the human "
        "reasons apply that the instruction does not state yet, and give at most "
        f"{max_feedbacks} distinct changes to the instruction, most important first. Each change must "
        "be a rule a judge can apply to any input: never a fact, name, number or quote from one "
        "of these samples.\n"
        'Answer with one JSON object only: {"feedback": ["<change 1>", "<change 2>"]}'
    )
    data, why = await _ask_json(llm, _request("feedback", user, temperature, sample_index))
    if data is None:
        return why
    items = data.get("feedback")
    if not isinstance(items, list):
        return OperatorOutcome(None, "no feedback list in answer")
    given = [str(item).strip() for item in items if str(item).strip()]
    kept = [item for item in given if not is_placeholder(item)][:max_feedbacks]
    if given and not kept:
        return OperatorOutcome(None, "answer template echoed (placeholders, no feedback)")
    return OperatorOutcome(kept) if kept else OperatorOutcome(None, "empty feedback")


@dataclass(frozen=True)
class Lesson:
    """One lesson as a lessons call answered it: its text and the ids of the shown corrections it
    says it explains (empty when the model cited none)."""

    text: str
    explains: tuple[int, ...] = ()


async def lessons(
    llm: LLMClient,
    *,
    instruction: str,
    corrections: Sequence[Example],
    max_lessons: int,
    temperature: float,
    sample_index: int,
    passing: Sequence[Example] = (),
) -> OperatorOutcome | list[Lesson]:
    """At most ``max_lessons`` general criteria that explain ``corrections`` (examples with an
    ``id``: the recorded judge output beside the human's verdict and reason), with agreeing
    ``passing`` samples for contrast; one meta call, operation ``feedback``. Returns the lessons,
    or the rejection (an :class:`OperatorOutcome` with ``value`` None).

    Raises:
        ContextLengthExceededError: the prompt does not fit the model's context window (the
            caller splits ``corrections`` and asks again).
    """
    recorded = _all_recorded(corrections)
    output = "recorded judge output" if recorded else "judge output (the recorded one, when marked so)"
    user = _shown_samples(instruction, corrections, passing, recorded=not recorded) + (
        f"Each failing sample is a human correction of the judge: its {output} "
        "beside the expected output, the human's verdict and, when given, the human's "
        "reason. The passing samples were judged right; keep them right. Find the general criteria "
        "that explain why the humans corrected the judge and that the instruction does not state yet. "
        f"Give at most {max_lessons} lessons, the one explaining the most corrections first; with each, "
        "the ids of the failing samples it explains. A lesson must be a rule a judge can apply to any "
        "input: never a fact, name, number or quote from one of these samples.\n"
        'Answer with one JSON object only: {"feedback": [{"lesson": "<rule>", "explains": [<id>, <id>]}]}'
    )
    request = _request("feedback", user, temperature, sample_index, LESSONS_SCHEMA)
    try:
        text = (await llm.complete(request)).text
    except ContextLengthExceededError:
        raise
    except LLMError as exc:
        return OperatorOutcome(None, f"llm error: {exc.cause}", f"{type(exc).__name__}: {exc}")
    data, why = _parse_json(text)
    if data is None:
        return why
    items = data.get("feedback", data.get("feedbacks", data.get("lessons")))
    if not isinstance(items, list):
        return OperatorOutcome(None, "no feedback list in answer")
    found = [lesson for lesson in map(_lesson, items) if lesson is not None]
    kept = [lesson for lesson in found if not is_placeholder(lesson.text)][:max_lessons]
    if found and not kept:
        return OperatorOutcome(None, "answer template echoed (placeholders, no feedback)")
    return kept if kept else OperatorOutcome(None, "empty feedback")


def _lesson(item: Any) -> Lesson | None:
    """A lesson from one answered item: a string, or an object with ``lesson`` (or ``text``,
    ``feedback``, ``criterion``) and optionally ``explains`` (ids)."""
    if isinstance(item, dict):
        text = next(
            (item[k] for k in ("lesson", "text", "feedback", "criterion") if isinstance(item.get(k), str)), ""
        )
        cited = item.get("explains")
        ids = (
            tuple(int(i) for i in cited if isinstance(i, int) and not isinstance(i, bool))
            if isinstance(cited, list)
            else ()
        )
    else:
        text, ids = str(item), ()
    text = text.strip()
    return Lesson(text, tuple(dict.fromkeys(ids))) if text else None


def _parse_json(text: str) -> tuple[dict[str, Any] | None, OperatorOutcome]:
    if not text.strip():
        return None, OperatorOutcome(None, "empty answer")
    if text.count("```") % 2 == 1:
        return None, OperatorOutcome(None, "truncated answer (unclosed code fence)")
    try:
        return extract_json_object(text), OperatorOutcome(None)
    except OutputParseError as exc:
        return None, OperatorOutcome(None, f"unparseable answer: {exc}")


async def rewrite(
    llm: LLMClient, *, instruction: str, feedback_items: Sequence[str], temperature: float, sample_index: int
) -> OperatorOutcome:
    """Apply ``feedback_items`` to ``instruction`` (operation ``rewrite``)."""
    items = "\n".join(f"- {item}" for item in feedback_items)
    user = (
        f"{CURRENT_INSTRUCTION}\n{instruction}\n\n{FEEDBACK_TO_APPLY}\n{items}\n\n{ANSWER}\n"
        f"Rewrite the instruction so that it applies the feedback and keeps what already works.\n"
        f"{_INSTRUCTION_ANSWER}"
    )
    data, why = await _ask_json(llm, _request("rewrite", user, temperature, sample_index))
    return _instruction_from(data, why, [instruction])


async def crossover(
    llm: LLMClient, *, parent_a: str, parent_b: str, temperature: float, sample_index: int
) -> OperatorOutcome:
    """Merge two parent instructions into one child (operation ``crossover``)."""
    user = (
        f"{CROSSOVER_PARENT_A}\n{parent_a}\n\n{CROSSOVER_PARENT_B}\n{parent_b}\n\n{ANSWER}\n"
        f"Each parent gets different samples right. Write one instruction that combines the criteria "
        f"of both, concisely, without repeating itself.\n{_INSTRUCTION_ANSWER}"
    )
    data, why = await _ask_json(llm, _request("crossover", user, temperature, sample_index))
    return _instruction_from(data, why, [parent_a, parent_b])
