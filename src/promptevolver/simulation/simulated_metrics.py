"""The simulated LLM for every judge kind: binary verdicts, rubric scores, statements and verdicts.

:class:`SimulatedMetricsLLM` is :class:`~promptevolver.simulation.simulated_llm.SimulatedJudgeLLM`
(meta calls and binary judge calls are its own) plus the judge calls of numeric and two-prompt
metrics, recognised by the requested output schema:

* a ``score`` field (:class:`~promptevolver.judge.rubric.RubricJudge`, Ragas' SimpleCriteriaScore):
  the recorded score, or the human label when the instruction *addresses* the sample's correction
  (holds at least ``min(min_matches, len(terms))`` of its terms); noise moves the score one step
  (one level on a whole-number scale, a tenth of the range otherwise) up or down, within range;
* a list of string ``statements`` (the extractor): the recorded statements, or the human's when
  the extractor's instruction addresses the extractor's correction; noise drops one statement;
* a list of statement verdicts (the verifier): per statement, the recorded verdict, or the
  human's when the verifier's instruction addresses the verifier's correction; noise flips it.

The worlds are read from the annotations (:mod:`.worlds`); noise is a hash of (seed, instruction,
what is judged, sample_index), so answers do not depend on call order. A sample or statement the
world does not know gets a hash-drawn answer (an unknown response is split into its sentences).
"""

from __future__ import annotations

import json
import re
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.judge.prompts import split_rendered
from promptevolver.llm.base import LLMRequest
from promptevolver.simulation.simulated_llm import SimulatedJudgeLLM, _unit, sample_key, words
from promptevolver.simulation.worlds import (
    ScoreWorld,
    StatementWorld,
    context_key,
    score_world,
    statement_world,
    world_digest,
)

__all__ = ["SimulatedMetricsLLM", "output_kind"]

_SUPPORTED = "The context states this."
_UNSUPPORTED = "The context does not state this."


def output_kind(schema: dict[str, Any] | None) -> str | None:
    """``score``, ``statements`` (a list of strings) or ``verdicts`` (a list of objects) for the
    output schemas of the numeric and two-prompt judges; None for anything else."""
    properties = (schema or {}).get("properties") or {}
    if "score" in properties:
        return "score"
    items = (properties.get("statements") or {}).get("items") or {}
    if items.get("type") == "string":
        return "statements"
    return "verdicts" if items else None


class SimulatedMetricsLLM(SimulatedJudgeLLM):
    """:class:`SimulatedJudgeLLM` that also answers rubric, extractor and verifier judge calls.

    Args: as :class:`SimulatedJudgeLLM` (``dataset`` is the world of every judge kind; the score
    world is built for a non-binary dataset, the statement world from samples that hold both
    prompts of :class:`~promptevolver.judge.statements.StatementSupport`).
    """

    def __init__(self, *, dataset: SingleMetricAnnotation, random_seed: int, **kwargs: Any) -> None:
        super().__init__(dataset=dataset, random_seed=random_seed, **kwargs)
        self.scores: ScoreWorld | None = None if dataset.is_binary else score_world(dataset, self.top_terms)
        found = statement_world(dataset, self.top_terms)
        self.statements: StatementWorld | None = found if found.extractions else None

    def cache_identity(self) -> dict[str, Any]:
        """As :meth:`SimulatedJudgeLLM.cache_identity`, with the score and statement worlds
        (unchanged for a binary dataset)."""
        identity = super().cache_identity()
        if self.scores is None and self.statements is None:
            return identity
        digest = world_digest(identity["model"], self.scores, self.statements)
        return {**identity, "model": f"simulated-judge-{digest[:16]}"}

    def answer(self, request: LLMRequest) -> str:
        """The simulated answer (a pure function of the request); see the module docstring."""
        rendered = split_rendered(request.messages)
        kind = output_kind(request.json_schema) if rendered is not None else None
        if rendered is not None and kind is not None:
            instruction, inputs = rendered
            key, index = sample_key(inputs), request.sample_index
            if _unit(self.random_seed, "malformed", instruction, key, index) < self.malformed_rate:
                return '{"reason": "The response is'
            if kind == "score":
                return self._score(instruction, inputs, request.sample_index)
            if kind == "statements":
                return self._extract(instruction, inputs, request.sample_index)
            return self._verify(instruction, inputs, request.sample_index)
        return super().answer(request)

    def _addresses(self, instruction: str, terms: tuple[str, ...]) -> bool:
        need = min(self.min_matches, len(terms))
        return need > 0 and len(words(instruction) & set(terms)) >= need

    def _noisy(self, instruction: str, *parts: object) -> bool:
        return _unit(self.random_seed, "noise", instruction, *parts) < self.noise_rate(instruction)

    # --- a score on a scale -------------------------------------------------------------------
    def _score(self, instruction: str, inputs: dict[str, Any], sample_index: int) -> str:
        key = sample_key(inputs)
        world = self.scores
        truth = None if world is None else world.truths.get(key)
        if world is None or truth is None:
            low, high = (world.low, world.high) if world else (1.0, 5.0)
            value = low + round(_unit(self.random_seed, "unknown", instruction, key) * (high - low))
            return json.dumps({"reason": "No basis to judge this input.", "score": value})
        addressed = truth.original != truth.label and self._addresses(instruction, truth.terms)
        value = truth.label if addressed else truth.original
        if self._noisy(instruction, key, sample_index):
            up = _unit(self.random_seed, "direction", instruction, key, sample_index) < 0.5
            moved = value + (world.step if up else -world.step)
            value = moved if world.low <= moved <= world.high else value - (moved - value)
        value = round(value, 6)
        shown: float | int = int(value) if float(value).is_integer() else value
        return json.dumps({"reason": f"The response deserves a {shown} on the scale.", "score": shown})

    # --- the extractor ------------------------------------------------------------------------
    def _extract(self, instruction: str, inputs: dict[str, Any], sample_index: int) -> str:
        key = sample_key(inputs)
        truth = None if self.statements is None else self.statements.extractions.get(key)
        if truth is None:
            sentences = re.split(r"(?<=[.!?])\s+", str(inputs.get("answer", "")))
            return json.dumps({"statements": [s.strip() for s in sentences if s.strip()]})
        addressed = truth.original != truth.human and self._addresses(instruction, truth.terms)
        statements = list(truth.human if addressed else truth.original)
        if len(statements) > 1 and self._noisy(instruction, key, sample_index):
            drop = int(_unit(self.random_seed, "drop", instruction, key, sample_index) * len(statements))
            del statements[drop]
        return json.dumps({"statements": statements})

    # --- the verifier -------------------------------------------------------------------------
    def _verify(self, instruction: str, inputs: dict[str, Any], sample_index: int) -> str:
        context = context_key(str(inputs.get("context", "")))
        verdicts = []
        for statement in inputs.get("statements") or []:
            truth = None if self.statements is None else self.statements.verdicts.get((context, statement))
            if truth is None:
                verdict = int(_unit(self.random_seed, "unknown", instruction, context, statement) < 0.5)
            else:
                addressed = truth.original != truth.human and self._addresses(instruction, truth.terms)
                verdict = truth.human if addressed else truth.original
            if self._noisy(instruction, context, statement, sample_index):
                verdict = 1 - verdict
            reason = _SUPPORTED if verdict else _UNSUPPORTED
            verdicts.append({"statement": statement, "reason": reason, "verdict": verdict})
        return json.dumps({"statements": verdicts})
