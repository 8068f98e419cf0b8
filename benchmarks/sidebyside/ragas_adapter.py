"""A Ragas LLM backed by promptevolver's simulated world (benchmark use only; needs ``ragas``).

:class:`SimulatedRagasLLM` is a ``ragas.llms.base.BaseRagasLLM`` whose answers come from a
:class:`promptevolver.llm.SimulatedJudgeLLM`, so Ragas 0.4.3's own ``GeneticOptimizer`` runs in
exactly the world our optimizer is benchmarked in. Run it with the Ragas venv
(``pip install -e ".[bench]"``); the promptevolver package never imports this file.

Every Ragas prompt is a ``PydanticPrompt.to_string`` text::

    <instruction>
    Please return the output in a JSON format ... <output schema> ...
    [--------EXAMPLES----------- <the prompt's few-shot examples>]
    -----------------------------
    Now perform the same with the following input
    input: <the input model as JSON>
    Output:

The adapter recognises the prompt by its instruction (Ragas' fixed meta-prompt instructions) or
by its output schema (the AspectCritic judge), reads the input JSON, and translates:

* **judge** (``SingleTurnAspectCriticPrompt``): instruction = the text before the output
  signature; inputs = the input JSON (``user_input``, ``response``, ``reference``, ...). They are
  rendered with our ``Prompt.render`` and answered by the fake's public ``answer`` — the same
  path (``split_rendered`` → ``_judge(instruction, inputs, sample_index=0)``) as our Evaluator's
  judge calls, hence the same world, correction rule and noise hash.
* **meta** prompts: what the Ragas prompt *shows* is re-rendered by promptevolver's own operator
  functions (``optimizers.operators``: our section headings), and the fake writes from exactly
  that evidence:

  ========================  ==========================================================
  Ragas prompt              shown to the fake as (our operator)
  ========================  ==========================================================
  reverse_engineer          ``reverse_engineer``: each (input, expected output) pair
  feedback_mutation         ``feedback``: instruction + each (input, output, expected)
  feedback_mutation_gen.    ``rewrite``: instruction + the feedback items
  crossover                 ``crossover``: parent_1 → parent A, parent_2 → parent B
  ========================  ==========================================================

  The fake's answer is returned in the JSON Ragas parses (``{"instruction": ...}``;
  feedback ``{"feedbacks": [...]}``, at most 3 items, as Ragas' prompt asks — our operator
  keeps at most ``max_feedbacks`` = 3 the same way).

Ragas' inputs are text renderings (``"\\nkey:\\n\\tvalue\\n"``); :func:`parse_fields` reads
them back into a dict. Counting: one call per generation requested; tokens are whitespace words
of the Ragas prompt text and of the answer (as our fakes count them).
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from langchain_core.outputs import Generation, LLMResult
from ragas.llms.base import BaseRagasLLM
from ragas.metrics._aspect_critic import AspectCriticInput, SingleTurnAspectCriticPrompt
from ragas.optimizers.genetic import GeneticOptimizer as RagasGeneticOptimizer
from ragas.prompt.pydantic_prompt import fix_output_format_prompt

from promptevolver.errors import OutputParseError
from promptevolver.judge._aspect_critic import AspectCriticOutput
from promptevolver.judge._prompts import Prompt, extract_json_object
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm._base import Completion, LLMRequest, Usage
from promptevolver.llm._fake import count_tokens
from promptevolver.optimizers.operators import _meta_prompts as operators
from promptevolver.simulation._simulated_llm import sample_key

__all__ = ["SimulatedRagasLLM", "parse_fields"]

# Ragas reads this lazily, at its first analytics event: a benchmark never sends analytics.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"

INPUT_MARKER = "\nNow perform the same with the following input\ninput: "
OUTPUT_MARKER = "\nOutput: "
#: Feedback items Ragas' feedback prompt asks for ("give maximum 3 concrete feedbacks").
RAGAS_MAX_FEEDBACKS = 3
JUDGE_PROMPT_NAME = "single_turn_aspect_critic_prompt"
_FIELD = re.compile(r"\n([A-Za-z_][A-Za-z0-9_]*):\n\t")
_LIST_FIELDS = ("retrieved_contexts", "reference_contexts")


def parse_fields(text: str) -> dict[str, Any]:
    """Invert Ragas' ``"".join(f"\\n{key}:\\n\\t{val}\\n" ...)`` rendering of an input dict.

    List fields (contexts) were rendered with ``str(list)``; they are read back with
    ``ast.literal_eval``. A value that itself contains ``"\\nname:\\n\\t"`` would be split (never
    the case in the benchmark files).
    """
    parts = _FIELD.split(text)
    out: dict[str, Any] = {}
    for key, value in zip(parts[1::2], parts[2::2]):
        value = value[:-1] if value.endswith("\n") else value
        if key in _LIST_FIELDS:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                value = [value]
        out[key] = value
    return out


def _signature(prompt: Any) -> str:
    return "\n" + prompt._generate_output_signature()


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (our operators with the in-memory tap) to its value."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("operator coroutine suspended; the tap must answer synchronously")


@dataclass
class _Tap:
    """An LLMClient for our operator functions: answers with the fake, keeps the raw exchange."""

    fake: SimulatedJudgeLLM
    usage: Usage = field(default_factory=Usage)
    request: LLMRequest | None = None
    text: str | None = None

    async def complete(self, request: LLMRequest) -> Completion:
        self.request, self.text = request, self.fake.answer(request)
        return Completion(text=self.text)


class SimulatedRagasLLM(BaseRagasLLM):
    """Ragas LLM answering from a :class:`SimulatedJudgeLLM` world.

    Args:
        fake: the simulated world (build it from the FULL annotation file, as our optimizer's).
        metric_name: shown in the reverse-engineering meta-prompt (our operator's wording).
        keep_traces: how many translated exchanges to keep per operation (for inspection).
        yield_to_loop: ``agenerate_text`` awaits ``asyncio.sleep(latency_s)`` before answering, as a
            real client awaits its network I/O, so Ragas' concurrent tasks interleave as they would
            in production. With ``latency_s`` 0 the interleaving is deterministic.
        latency_s: simulated latency per call in seconds (0: yield once, no clock involved).

    Attributes:
        calls: operation → calls (``judge``, ``reverse_engineer``, ``feedback``, ``rewrite``,
            ``crossover``, ``fix_output_format``, ``unrecognised``).
        prompt_tokens, completion_tokens: whitespace words of Ragas' prompts and of the answers.
        traces: operation → up to ``keep_traces`` dicts (Ragas prompt, our rendering, answer).
        log: (operation, instruction judged or "") of every call, in call order.
        verdicts: (instruction as judged, ``sample_key`` of the inputs) → verdict given.
    """

    def __init__(
        self,
        fake: SimulatedJudgeLLM,
        *,
        metric_name: str = "judge",
        keep_traces: int = 0,
        yield_to_loop: bool = True,
        latency_s: float = 0.0,
    ) -> None:
        super().__init__()
        self.fake = fake
        self.yield_to_loop = yield_to_loop
        self.latency_s = latency_s
        self.log: list[tuple[str, str]] = []
        self.verdicts: dict[tuple[str, str], int | None] = {}
        self.metric_name = metric_name
        self.keep_traces = keep_traces
        self.calls: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.traces: dict[str, list[dict[str, str]]] = {}
        self._lock = threading.Lock()
        meta = RagasGeneticOptimizer
        self._meta = [
            (meta.reverse_engineer_prompt.instruction, "reverse_engineer", self._reverse_engineer),
            (meta.feedback_generation_prompt.instruction, "feedback", self._feedback),
            (meta.feedback_mutation_prompt.instruction, "rewrite", self._rewrite),
            (meta.cross_over_prompt.instruction, "crossover", self._crossover),
            (fix_output_format_prompt.instruction, "fix_output_format", self._fix_output),
        ]
        self._judge_signature = _signature(SingleTurnAspectCriticPrompt())
        self._judge_fields = set(AspectCriticInput.model_fields)

    # --- counters --------------------------------------------------------------------------
    @property
    def judge_calls(self) -> int:
        return self.calls["judge"]

    @property
    def meta_calls(self) -> int:
        return sum(n for op, n in self.calls.items() if op != "judge")

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def usage(self) -> dict[str, Any]:
        return {
            "llm_calls": {"judge": self.judge_calls, "meta": self.meta_calls},
            "calls_by_operation": dict(sorted(self.calls.items())),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    # --- BaseRagasLLM ----------------------------------------------------------------------
    def is_finished(self, response: LLMResult) -> bool:
        return True

    def generate_text(
        self,
        prompt: Any,
        n: int = 1,
        temperature: float | None = 0.01,
        stop: list[str] | None = None,
        callbacks: Any = None,
    ) -> LLMResult:
        text = prompt.to_string()
        answers = [self.respond(text, temperature or 0.0) for _ in range(n)]
        return LLMResult(generations=[[Generation(text=a) for a in answers]])

    async def agenerate_text(
        self,
        prompt: Any,
        n: int = 1,
        temperature: float | None = 0.01,
        stop: list[str] | None = None,
        callbacks: Any = None,
    ) -> LLMResult:
        if self.yield_to_loop:
            # A real client awaits network I/O here; yielding once lets Ragas' concurrent tasks
            # interleave as they would with one (deterministically: no clock is involved).
            await asyncio.sleep(self.latency_s)
        return self.generate_text(prompt, n=n, temperature=temperature, stop=stop, callbacks=callbacks)

    # --- translation -----------------------------------------------------------------------
    def respond(self, text: str, temperature: float = 0.0) -> str:
        """The answer to one Ragas prompt text (counted)."""
        operation, answer, shown = self._translate(text, temperature)
        with self._lock:
            self.calls[operation] += 1
            self.prompt_tokens += count_tokens(text)
            self.completion_tokens += count_tokens(answer)
            self.log.append(
                (operation, shown.split("\n\n## Output format")[0] if operation == "judge" else "")
            )
            kept = self.traces.setdefault(operation, [])
            if len(kept) < self.keep_traces:
                kept.append({"ragas_prompt": text, "shown_to_fake": shown, "answer": answer})
        return answer

    def _translate(self, text: str, temperature: float) -> tuple[str, str, str]:
        head, sep, tail = text.rpartition(INPUT_MARKER)
        if not sep:
            return "unrecognised", json.dumps({"error": "no input section"}), ""
        data = json.loads(tail[: -len(OUTPUT_MARKER)] if tail.endswith(OUTPUT_MARKER) else tail)
        for instruction, operation, handler in self._meta:
            if head.startswith(instruction + "\n"):
                answer, shown = handler(data, temperature)
                return operation, answer, shown
        if self._judge_signature in head and set(data) <= self._judge_fields:
            instruction = head.rsplit(self._judge_signature, 1)[0]
            answer, shown = self._judge(instruction, data)
            return "judge", answer, shown
        return "unrecognised", json.dumps({"error": "the adapter does not recognise this prompt"}), ""

    def _judge(self, instruction: str, inputs: dict[str, Any]) -> tuple[str, str]:
        messages = Prompt(JUDGE_PROMPT_NAME, instruction, AspectCriticOutput).render(inputs)
        request = LLMRequest(messages, temperature=0.0, sample_index=0)
        answer = self.fake.answer(request)
        try:
            verdict = extract_json_object(answer).get("verdict")
        except OutputParseError:
            verdict = None
        with self._lock:
            self.verdicts[(instruction.strip(), sample_key(inputs))] = verdict
        return answer, "\n\n".join(m.content for m in messages)

    def _operator(self, coro_of: Any) -> tuple[str, str]:
        tap = _Tap(self.fake)
        _drive(coro_of(tap))
        assert tap.request is not None and tap.text is not None
        return tap.text, tap.request.messages[-1].content

    def _reverse_engineer(self, data: dict[str, Any], temperature: float) -> tuple[str, str]:
        examples = [
            operators.Example(inputs=parse_fields(shown_input), expected=dict(output))
            for shown_input, output in data["examples"]
        ]
        text, shown = self._operator(
            lambda tap: operators.reverse_engineer(
                tap, metric_name=self.metric_name, examples=examples, temperature=temperature, sample_index=0
            )
        )
        return _instruction_json(text), shown

    def _feedback(self, data: dict[str, Any], temperature: float) -> tuple[str, str]:
        failures = [
            operators.Example(
                inputs=parse_fields(ex["input"]),
                expected=dict(ex["expected_output"]),
                judged=dict(ex["output"]),
            )
            for ex in data["examples"]
        ]
        text, shown = self._operator(
            lambda tap: operators.feedback(
                tap,
                instruction=data["instruction"],
                failures=failures,
                max_feedbacks=RAGAS_MAX_FEEDBACKS,
                temperature=temperature,
                sample_index=0,
            )
        )
        try:
            items = extract_json_object(text).get("feedback")
        except OutputParseError:
            items = None
        if not isinstance(items, list):
            return text, shown
        kept = [str(i).strip() for i in items if str(i).strip()][:RAGAS_MAX_FEEDBACKS]
        return json.dumps({"feedbacks": kept}), shown

    def _rewrite(self, data: dict[str, Any], temperature: float) -> tuple[str, str]:
        text, shown = self._operator(
            lambda tap: operators.rewrite(
                tap,
                instruction=data["instruction"],
                feedback_items=list(data["feedbacks"]),
                temperature=temperature,
                sample_index=0,
            )
        )
        return _instruction_json(text), shown

    def _crossover(self, data: dict[str, Any], temperature: float) -> tuple[str, str]:
        text, shown = self._operator(
            lambda tap: operators.crossover(
                tap,
                parent_a=data["parent_1"],
                parent_b=data["parent_2"],
                temperature=temperature,
                sample_index=0,
            )
        )
        return _instruction_json(text), shown

    def _fix_output(self, data: dict[str, Any], temperature: float) -> tuple[str, str]:
        """Ragas' repair prompt (only reached if an answer failed to parse): return the object."""
        raw = str(data.get("output_string", ""))
        try:
            fixed = json.dumps(extract_json_object(raw))
        except OutputParseError:
            fixed = raw
        return json.dumps({"text": fixed}), raw


def _instruction_json(text: str) -> str:
    """The fake's ``{"instruction": ...}`` answer, as Ragas' ``OutputInstruction`` JSON."""
    try:
        instruction = extract_json_object(text).get("instruction")
    except OutputParseError:
        return text
    return json.dumps({"instruction": instruction}) if isinstance(instruction, str) else text
