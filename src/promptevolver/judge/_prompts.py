"""Prompts: an instruction, named input fields and a JSON output model.

A :class:`Prompt` renders an instruction and a mapping of inputs into chat messages::

    system: <instruction>

            ## Output format
            Return one JSON object with double-quoted strings and nothing else. Its fields:
            - "reason" (string): Reason for the verdict
            - "verdict" (0 or 1): The verdict (0 or 1) for the submission
    user:   ## Input
            {"user_input": ..., "response": ..., ...}

With teaching examples (demonstrations: other annotated samples shown with the human's verdict
and reason), each example is a user/assistant pair between the system message and the judged
input, the standard few-shot chat form::

    user:      ## Input
               {...the example's inputs...}
    assistant: {"verdict": 1, "reason": "...the human's reason..."}

The answer's label comes first in an example, so a reader (a model, or judgeworld's parser)
sees the human's verdict right after the example's text.

and parses the model's answer back into its output model, repairing what is safely repairable
(code fences, text around the object, Python-style single quotes). The instruction is what an
optimizer changes; :func:`split_rendered` recovers (instruction, inputs) from rendered messages.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from promptevolver.errors import OutputParseError
from promptevolver.llm import ChatMessage

__all__ = [
    "ANSWER",
    "CROSSOVER_PARENT_A",
    "CROSSOVER_PARENT_B",
    "CURRENT_INSTRUCTION",
    "EXAMPLES",
    "FAILING_SAMPLES",
    "FEEDBACK_TO_APPLY",
    "PASSING_SAMPLES",
    "Prompt",
    "extract_json_object",
    "rendered_examples",
    "split_rendered",
]

OUTPUT_HEADER = "## Output format"
INPUT_HEADER = "## Input"

# Section headings of the optimizer's meta-prompts (see optimizers/operators/_meta_prompts.py); every
# meta-prompt ends with an ANSWER section, so a section's body runs to the next "\n\n## ".
EXAMPLES = "## Examples"
CURRENT_INSTRUCTION = "## Current instruction"
FAILING_SAMPLES = "## Failing samples"
PASSING_SAMPLES = "## Passing samples"
FEEDBACK_TO_APPLY = "## Feedback to apply"
CROSSOVER_PARENT_A = "## Parent instruction A"
CROSSOVER_PARENT_B = "## Parent instruction B"
ANSWER = "## Answer"

OutputT = TypeVar("OutputT", bound=BaseModel)


@dataclass(frozen=True)
class Prompt(Generic[OutputT]):
    """An instruction with its output model. Immutable: :meth:`with_instruction` makes a copy.

    Attributes:
        name: the prompt's name, e.g. ``single_turn_aspect_critic_prompt`` (Ragas' names).
        instruction: the text an optimizer rewrites.
        output_model: pydantic model the answer must validate against.
    """

    name: str
    instruction: str
    output_model: type[OutputT]

    def with_instruction(self, instruction: str) -> Prompt[OutputT]:
        return replace(self, instruction=instruction)

    def json_schema(self) -> dict[str, Any]:
        """The output model's JSON schema, computed once per model and shared: do not mutate it."""
        return _schema_dict(self.output_model)

    def render(
        self, inputs: dict[str, Any], examples: Sequence[tuple[dict[str, Any], dict[str, Any]]] = ()
    ) -> tuple[ChatMessage, ...]:
        """Chat messages for ``inputs`` (fields whose value is None are left out).

        ``examples``: teaching examples, (inputs, output) pairs shown before the judged input
        in that order (the closest to the judged sample last), each as a user/assistant pair;
        ``output`` is shown as given (key order kept: put the label first).
        """
        system = f"{self.instruction.strip()}\n\n{OUTPUT_HEADER}\n{_format_text(self.output_model)}"
        messages = [ChatMessage("system", system)]
        for shown_inputs, output in examples:
            messages.append(ChatMessage("user", _input_text(shown_inputs)))
            messages.append(ChatMessage("assistant", json.dumps(output, ensure_ascii=False)))
        messages.append(ChatMessage("user", _input_text(inputs)))
        return tuple(messages)

    def _validated(self, data: Any) -> OutputT:
        """``data`` as ``output_model``; a ``true``/``false`` where a number is asked is refused
        (raised as pydantic's ValidationError, like any other wrong value)."""
        schema = self.json_schema()
        where = _no_bool_numbers(data, schema, schema.get("$defs", {}))
        if where is not None:
            raise ValidationError.from_exception_data(
                self.output_model.__name__,
                [{"type": "int_type", "loc": tuple(where.split(".")), "input": data}],
            )
        return self.output_model.model_validate(data)

    def parse(self, text: str) -> OutputT:
        """The answer as ``output_model``.

        Raises:
            OutputParseError: no JSON object can be recovered or it fails validation (``raw`` kept).
        """
        data = extract_json_object(text)
        try:
            return self._validated(data)
        except ValidationError as exc:
            for later in _later_objects(text):  # e.g. a small model echoes the schema, then answers
                try:
                    return self._validated(later)
                except ValidationError:
                    continue
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "<root>"
            raise OutputParseError(f"output field {where!r}: {first['msg']}", raw=text) from exc


def _no_bool_numbers(data: Any, schema: dict[str, Any], defs: dict[str, Any]) -> str | None:
    """The path of the first ``true``/``false`` given where ``schema`` asks for a number (pydantic
    would read it as 1 or 0: ``verdict: true`` became a verdict of 1, where an annotation file's
    ``true`` is refused), else None."""
    if "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if isinstance(data, bool):
        kinds = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
        values = [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]
        return "" if "boolean" not in kinds and not any(isinstance(v, bool) for v in values) else None
    if isinstance(data, dict):
        for key, value in data.items():
            found = _no_bool_numbers(value, schema.get("properties", {}).get(key, {}), defs)
            if found is not None:
                return f"{key}.{found}".rstrip(".")
    if isinstance(data, list):
        for i, item in enumerate(data):
            found = _no_bool_numbers(item, schema.get("items", {}), defs)
            if found is not None:
                return f"{i}.{found}".rstrip(".")
    return None


def _input_text(inputs: dict[str, Any]) -> str:
    shown = {k: v for k, v in inputs.items() if v is not None}
    return f"{INPUT_HEADER}\n{json.dumps(shown, ensure_ascii=False, sort_keys=True)}"


@functools.lru_cache(maxsize=64)
def _schema_text(model: type[BaseModel]) -> str:
    """The JSON schema of ``model`` as sorted-key JSON text (pydantic's generation is slow:
    ~0.8 ms a call, so it is done once per model)."""
    return json.dumps(model.model_json_schema(), sort_keys=True)


@functools.lru_cache(maxsize=64)
def _format_text(model: type[BaseModel]) -> str:
    """The output format told to the model: its fields, one line each, from ``model``'s JSON
    schema (nested objects indented under their field). A field list, not the JSON schema
    itself: a third of the tokens of a judge call went to the schema's text, and small models
    echo a schema back instead of answering (the parser's fallback, :meth:`Prompt.parse`); the
    schema still goes to servers that enforce one (``LLMRequest.json_schema``)."""
    schema = model.model_json_schema()  # the model's field order (the schema text sorts keys)
    lines = ["Return one JSON object with double-quoted strings and nothing else. Its fields:"]
    lines += _field_lines(schema, schema.get("$defs", {}), "")
    return "\n".join(lines)


def _field_lines(schema: dict[str, Any], defs: dict[str, Any], indent: str) -> list[str]:
    lines = []
    for name, prop in schema.get("properties", {}).items():
        kind, nested = _kind(prop, defs)
        about = prop.get("description")
        lines.append(f'{indent}- "{name}" ({kind})' + (f": {about}" if about else ""))
        if nested is not None:
            lines += _field_lines(nested, defs, indent + "  ")
    return lines


def _kind(prop: dict[str, Any], defs: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """A property's kind in words, and the object schema whose fields it holds (or None)."""
    if "$ref" in prop:
        return "object", defs[prop["$ref"].rsplit("/", 1)[-1]]
    if "enum" in prop or "const" in prop:
        return " or ".join(json.dumps(v) for v in prop.get("enum", [prop.get("const")])), None
    if prop.get("type") == "array":
        item, nested = _kind(prop.get("items", {}), defs)
        return f"list, each item: {item}", nested
    if "anyOf" in prop:
        kinds = [_kind(p, defs)[0] for p in prop["anyOf"]]
        return " or ".join(kinds), None
    kind = str(prop.get("type", "any value"))
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        kind += f" from {low:g} to {high:g}"
    return kind, None


@functools.lru_cache(maxsize=64)
def _schema_dict(model: type[BaseModel]) -> dict[str, Any]:
    return dict(json.loads(_schema_text(model)))


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``, after safe repairs.

    Repairs: a fenced block (```json ... ```) is unwrapped; text before the first ``{`` and after
    its matching ``}`` is dropped; a Python-literal dict (single quotes) is read with
    ``ast.literal_eval``. Nothing else is guessed: truncated JSON is an error.

    Raises:
        OutputParseError: no object can be recovered (``raw`` holds ``text``).
    """
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):  # the common case: a bare object
        try:
            bare = json.loads(stripped)
        except json.JSONDecodeError:
            bare = None
        if isinstance(bare, dict):
            return bare
    fenced = _FENCE.search(text)
    candidate = _balanced_object(fenced.group(1) if fenced else text)
    if candidate is None:
        raise OutputParseError("no complete JSON object in the answer", raw=text)
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(candidate)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise OutputParseError("the answer's object is not valid JSON", raw=text) from exc
    if not isinstance(value, dict):
        raise OutputParseError("the answer is not a JSON object", raw=text)
    return value


def _later_objects(text: str) -> Iterator[Any]:
    """The JSON (or Python-literal) objects after the first one in ``text``, in order."""
    first = _balanced_object(text)
    position = text.find(first) + len(first) if first is not None else len(text)
    while (candidate := _balanced_object(text[position:])) is not None:
        position = text.find(candidate, position) + len(candidate)
        try:
            yield json.loads(candidate)
        except json.JSONDecodeError:
            try:
                yield ast.literal_eval(candidate)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue


def _balanced_object(text: str) -> str | None:
    start = text.find("{")
    if start < 0:
        return None
    depth, in_string, quote, escaped = 0, False, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                in_string = False
        elif ch in "\"'":
            in_string, quote = True, ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def split_rendered(
    messages: tuple[ChatMessage, ...] | list[ChatMessage],
) -> tuple[str, dict[str, Any]] | None:
    """(instruction, inputs) of messages made by :meth:`Prompt.render`, or None if not such
    (the judged inputs: the last message; teaching examples before it, see
    :func:`rendered_examples`)."""
    if len(messages) < 2 or len(messages) % 2 or messages[0].role != "system":
        return None
    system, user = messages[0].content, messages[-1].content
    marker = f"\n\n{OUTPUT_HEADER}\n"
    if marker not in system or not user.startswith(INPUT_HEADER + "\n"):
        return None
    # The last marker is render's own: the schema after it is one line of JSON (no raw newlines).
    instruction = system.rsplit(marker, 1)[0]
    try:
        inputs = json.loads(user[len(INPUT_HEADER) + 1 :])
    except json.JSONDecodeError:
        return None
    return (instruction, inputs) if isinstance(inputs, dict) else None


def rendered_examples(
    messages: tuple[ChatMessage, ...] | list[ChatMessage],
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The teaching examples of messages made by :meth:`Prompt.render`: (inputs, shown output)
    pairs in prompt order; empty when there are none or the messages are not such."""
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for user, assistant in zip(messages[1:-1:2], messages[2:-1:2]):
        if user.role != "user" or assistant.role != "assistant" or not user.content.startswith(INPUT_HEADER):
            return []
        try:
            inputs = json.loads(user.content[len(INPUT_HEADER) + 1 :])
            output = json.loads(assistant.content)
        except json.JSONDecodeError:
            return []
        if isinstance(inputs, dict) and isinstance(output, dict):
            out.append((inputs, output))
    return out


def section(text: str, heading: str) -> str | None:
    """The body under ``heading`` up to the next section (every meta-prompt ends with ``## Answer``)."""
    if heading + "\n" not in text:
        return None
    body = text.split(heading + "\n", 1)[1]
    return body.split("\n\n## ", 1)[0]
