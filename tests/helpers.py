"""Small in-memory annotation sets and a rule-based fake LLM for optimizer tests."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from promptevolver import SingleMetricAnnotation
from promptevolver.evaluation._evaluator import Score
from promptevolver.judge._prompts import split_rendered
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest

PROMPT = "single_turn_aspect_critic_prompt"


def make_dataset(n: int = 20, wrong: int = 6, *, rejected: int = 0) -> SingleMetricAnnotation:
    """``n`` binary samples; the original judge is wrong on the first ``wrong`` (human edited them);
    the ``rejected`` samples after those are rejected by the human instead of edited."""
    samples = []
    for i in range(n):
        label = i % 2
        original = 1 - label if i < wrong + rejected else label
        edited = {"reason": f"fix{i}", "verdict": label} if i < wrong else None
        accepted = not (wrong <= i < wrong + rejected)
        samples.append(
            {
                "metric_input": {"user_input": f"question {i}", "response": f"answer {i}"},
                "metric_output": label if accepted else original,
                "is_accepted": accepted,
                "prompts": {
                    PROMPT: {
                        "prompt_input": {},
                        "prompt_output": {"reason": "orig", "verdict": original},
                        "edited_output": edited,
                    }
                },
            }
        )
    return SingleMetricAnnotation.model_validate({"name": "toy", "samples": samples})


def rule_llm(
    dataset: SingleMetricAnnotation,
    judge: Callable[[str, int], int],
    writer: Callable[[LLMRequest], str] | None = None,
) -> ScriptedLLM:
    """A fake whose judge verdict is ``judge(instruction, sample_position)``; meta calls are
    answered by ``writer`` (default: an instruction naming the operation and slot)."""
    index = {json.dumps(s.metric_input, sort_keys=True): i for i, s in enumerate(dataset)}

    def handler(request: LLMRequest) -> str:
        rendered = split_rendered(request.messages)
        if rendered is None:
            if writer is not None:
                return writer(request)
            if request.operation == "feedback":
                return json.dumps({"feedback": ["be stricter"]})
            return json.dumps({"instruction": f"{request.operation} {request.sample_index}"})
        instruction, inputs = rendered
        position = index[json.dumps(inputs, sort_keys=True)]
        return json.dumps({"reason": "r", "verdict": judge(instruction, position)})

    return ScriptedLLM(handler=handler)


def score_of(correct: list[float] | np.ndarray, value: float | None = None) -> Score:
    """A binary-accuracy :class:`Score` with per-sample ``correct`` (NaN: a failed evaluation):
    labels all 1, predictions equal to ``correct``; ``value`` defaults to the mean over measured."""
    vec = np.asarray(correct, dtype=np.float64)
    measured = ~np.isnan(vec)
    if value is None and measured.any():
        value = float(vec[measured].mean())
    return Score(value, vec, int((~measured).sum()), np.ones(len(vec)), vec.copy())
