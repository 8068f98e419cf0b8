"""The simulated LLM for every judge kind: binary verdicts, rubric scores, statements and verdicts.

:class:`SimulatedMetricsLLM` is :class:`~promptevolver.simulation._simulated_llm.SimulatedJudgeLLM`
(meta calls, binary judge calls, the noise model) plus the judge calls of numeric and two-prompt
metrics, recognised by the requested output schema. For those datasets the prompt engineer's
world is the criteria mined per prompt from that prompt's faults
(:func:`~promptevolver.simulation._worlds.criteria_world`), so what it learns from shown samples is
what fixes that prompt:

* a ``score`` field (:class:`~promptevolver.judge._rubric.RubricJudge`, Ragas' SimpleCriteriaScore):
  the recorded score, or the human label when the instruction names a rubric criterion the
  sample carries; noise moves the score one step (one level on a whole-number scale, a tenth of
  the range otherwise) up or down, within range;
* a list of string ``statements`` (the extractor): the recorded statements, or the human's when
  the instruction names an extractor criterion of the sample; noise drops one statement;
* a list of statement verdicts (the verifier): per statement, the recorded verdict, or the
  human's when the instruction names a verifier criterion of the sample; noise flips it.

Noise probabilities are the base class's (:meth:`SimulatedJudgeLLM.noise_rate`: base noise plus
length, cram and repetition penalties); every draw is a hash of (seed, instruction, what is
judged, ``sample_index``), so answers do not depend on call order. A sample or statement the
world does not know gets a hash-drawn answer (an unknown response is split into its sentences).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.judge import split_rendered
from promptevolver.llm import LLMRequest
from promptevolver.simulation import _writer as writer
from promptevolver.simulation._criteria import World, sample_key
from promptevolver.simulation._draws import unit
from promptevolver.simulation._simulated_llm import SimulatedJudgeLLM, pairwise_scale
from promptevolver.simulation._worlds import (
    EXTRACTOR_PREFIX,
    RUBRIC_PREFIX,
    VERIFIER_PREFIX,
    ScoreWorld,
    StatementWorld,
    context_key,
    criteria_world,
    extractor_faults,
    rubric_faults,
    score_world,
    statement_world,
    verifier_faults,
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

    Args: as :class:`SimulatedJudgeLLM`. For a binary dataset, or named classes (``scale``
    nominal: a pairwise a / b / tie, a classification), it is that class unchanged (same answers,
    same cache identity). For a dataset holding both prompts of
    :class:`~promptevolver.judge._statements.StatementSupport` it knows statements and verdicts;
    for any other non-binary dataset, scores.
    """

    def __init__(self, *, dataset: SingleMetricAnnotation, random_seed: int, **kwargs: Any) -> None:
        super().__init__(dataset=dataset, random_seed=random_seed, **kwargs)
        self.scores: ScoreWorld | None = None
        self.statements: StatementWorld | None = None
        scale = kwargs.get("scale") or pairwise_scale(dataset)
        if dataset.is_binary or (scale is not None and scale.kind == "nominal"):
            return  # verdicts or named classes: the base class's world
        found = statement_world(dataset)
        if found.extractions:
            self.statements = found
            self._use_world(
                criteria_world(
                    dataset, {EXTRACTOR_PREFIX: extractor_faults, VERIFIER_PREFIX: verifier_faults}
                )
            )
        else:
            self.scores = score_world(dataset)
            self._use_world(criteria_world(dataset, {RUBRIC_PREFIX: rubric_faults}, scored=True))

    def _use_world(self, world: World) -> None:
        """Make ``world`` the one the prompt engineer learns from and instructions are read against."""
        self.world = world
        self._coverage = writer.Coverage(world)
        self.named = functools.lru_cache(maxsize=4096)(self._coverage.named)

    def cache_identity(self) -> dict[str, Any]:
        """As :meth:`SimulatedJudgeLLM.cache_identity` (which digests the criteria world), with
        the score and statement worlds; unchanged for a binary dataset."""
        identity = super().cache_identity()
        if self.scores is None and self.statements is None:
            return identity
        digest = world_digest(identity["model"], self.scores, self.statements)
        return {**identity, "model": f"simulated-judge-{digest[:16]}"}

    def answer(self, request: LLMRequest) -> str:
        """The simulated answer (a pure function of the request); see the module docstring."""
        rendered = split_rendered(request.messages)
        kind = output_kind(request.json_schema) if rendered is not None else None
        if rendered is None or kind is None:
            return super().answer(request)
        instruction, inputs = rendered
        instruction = " ".join(instruction.split())
        key, index = sample_key(inputs), request.sample_index
        if unit(self.random_seed, "malformed", instruction, key, index) < self.malformed_rate:
            return '{"reason": "The response is'
        if kind == "score":
            return self._score(instruction, inputs, index)
        if kind == "statements":
            return self._extract(instruction, inputs, index)
        return self._verify(instruction, inputs, index)

    def corrects(self, instruction: str, sample: str, prefix: str) -> bool:
        """True when ``instruction`` names a criterion of the prompt ``prefix`` that ``sample`` carries."""
        truth = self.world.samples.get(sample)
        carried = {c for c in truth.criteria if c.startswith(prefix)} if truth else set()
        return bool(self.named(instruction) & carried)

    def _noisy(self, instruction: str, *parts: object) -> bool:
        return unit(self.random_seed, "noise", instruction, *parts) < self.noise_rate(instruction)

    # --- a score on a scale -------------------------------------------------------------------
    def _score(self, instruction: str, inputs: dict[str, Any], sample_index: int) -> str:
        key = sample_key(inputs)
        world = self.scores
        truth = None if world is None else world.truths.get(key)
        if world is None or truth is None:
            low, high = (world.low, world.high) if world else (1.0, 5.0)
            value = low + round(unit(self.random_seed, "unknown", instruction, key) * (high - low))
            return json.dumps({"reason": "No basis to judge this input.", "score": value})
        fixed = truth.original != truth.label and self.corrects(instruction, key, RUBRIC_PREFIX)
        value = truth.label if fixed else truth.original
        if self._noisy(instruction, key, sample_index):
            up = unit(self.random_seed, "direction", instruction, key, sample_index) < 0.5
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
        fixed = truth.original != truth.human and self.corrects(instruction, truth.sample, EXTRACTOR_PREFIX)
        statements = list(truth.human if fixed else truth.original)
        if len(statements) > 1 and self._noisy(instruction, key, sample_index):
            drop = int(unit(self.random_seed, "drop", instruction, key, sample_index) * len(statements))
            del statements[drop]
        return json.dumps({"statements": statements})

    # --- the verifier -------------------------------------------------------------------------
    def _verify(self, instruction: str, inputs: dict[str, Any], sample_index: int) -> str:
        context = context_key(str(inputs.get("context", "")))
        verdicts = []
        for statement in inputs.get("statements") or []:
            truth = None if self.statements is None else self.statements.verdicts.get((context, statement))
            if truth is None:
                verdict = int(unit(self.random_seed, "unknown", instruction, context, statement) < 0.5)
            else:
                fixed = truth.original != truth.human and self.corrects(
                    instruction, truth.sample, VERIFIER_PREFIX
                )
                verdict = truth.human if fixed else truth.original
            if self._noisy(instruction, context, statement, sample_index):
                verdict = 1 - verdict
            reason = _SUPPORTED if verdict else _UNSUPPORTED
            verdicts.append({"statement": statement, "reason": reason, "verdict": verdict})
        return json.dumps({"statements": verdicts})
