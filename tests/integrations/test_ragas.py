"""The Ragas integration against the real Ragas package: a ragas.metrics AspectCritic and a
SimpleCriteriaScore are optimized through their prompts on bundled annotations, the best
instructions are written back, and Ragas' own scoring then sends them. Skipped, with the reason,
when Ragas is not installed (``pip install -e ".[ragas]"``; .ci/run installs it)."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest

from promptevolver import SingleMetricAnnotation, UnusableSamplesWarning
from promptevolver.evaluation._losses import BinaryMetricLoss, MSELoss
from promptevolver.llm import ScriptedLLM
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM

from ..conftest import AC_DEFINITION, AC_FILE, DATA

ragas = pytest.importorskip(
    "ragas", reason='Ragas is not installed: pip install -e ".[ragas]" (pinned to ragas 0.4.3; .ci/run does)'
)

from promptevolver.integrations.ragas import (  # noqa: E402
    RAGAS_VERSION,
    RagasMetric,
    optimize_ragas_metric,
    write_back,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from ragas.metrics import AspectCritic, Faithfulness, SimpleCriteriaScore  # noqa: E402

AC_PROMPT = "single_turn_aspect_critic_prompt"
SC_PROMPT = "single_turn_simple_criteria_prompt"
CONFIG = {"population_size": 6, "generations": 4}


def test_the_installed_ragas_is_the_pinned_one():
    assert ragas.__version__ == RAGAS_VERSION


def test_the_adapter_reads_the_ragas_prompt_and_judges_with_it():
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    adapter = RagasMetric(critic)
    ragas_prompt = critic.get_prompts()[AC_PROMPT]
    assert adapter.get_instructions() == {AC_PROMPT: ragas_prompt.instruction}
    assert adapter.get_prompts()[AC_PROMPT].output_model is ragas_prompt.output_model
    assert isinstance(adapter.default_loss(), BinaryMetricLoss)
    llm = ScriptedLLM(['{"reason": "no", "verdict": 3}', '{"reason": "yes", "verdict": 1}'])
    judgement = asyncio.run(adapter.ajudge({"user_input": "q", "response": "r"}, llm=llm))
    assert judgement.score == 1.0 and len(llm.requests) == 2  # a verdict of 3 is re-asked
    assert "verdict must be 0 or 1" in llm.requests[1].messages[-1].content


def test_an_unsupported_metric_or_prompt_is_refused_naming_it():
    with pytest.raises(TypeError, match="AspectCritic and SimpleCriteriaScore, got Faithfulness"):
        RagasMetric(Faithfulness())
    with pytest.raises(KeyError, match="no_such_prompt"):
        RagasMetric(AspectCritic(name="a", definition="d"), prompt="no_such_prompt")
    with pytest.raises(KeyError, match="no_such_prompt"):
        write_back(AspectCritic(name="a", definition="d"), {"no_such_prompt": "x"})


def test_a_ragas_aspect_critic_is_optimized_and_the_best_written_back():
    dataset = SingleMetricAnnotation.from_json(AC_FILE)
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    seed = critic.get_prompts()[AC_PROMPT].instruction
    # random seed 2: a search that finds a better instruction (on 18 annotations not every seed
    # does; helpfulness' 21 hold no general rule a careful engineer would write: the seed is kept)
    llm = SimulatedMetricsLLM(dataset=dataset, random_seed=2)
    result = optimize_ragas_metric(critic, dataset, llm=llm, config={**CONFIG, "random_seed": 2})
    assert result.seed_instructions == {AC_PROMPT: seed}
    assert result.held_out["best"] >= result.held_out["seed"]  # small data: cross-validated
    assert critic.get_prompts()[AC_PROMPT].instruction == result[AC_PROMPT] != seed
    assert critic.get_prompts()["multi_turn_aspect_critic_prompt"].instruction == seed  # not optimized


def test_a_ragas_simple_criteria_score_is_optimized_with_mse_and_written_back():
    with pytest.warns(UnusableSamplesWarning, match="non-binary metric without a target"):
        dataset = SingleMetricAnnotation.from_json(DATA / "helpfulness_rubric.json")
    scorer = SimpleCriteriaScore(name="helpfulness", definition="How helpful is the response?")
    llm = SimulatedMetricsLLM(dataset=dataset, random_seed=0)
    result = optimize_ragas_metric(scorer, dataset, llm=llm, config=CONFIG, score_range=(1, 5))
    assert result.loss["name"] == "MSELoss"
    seed, best = result.scores["seed"], result.scores["best"]
    assert result.held_out["best"] < result.held_out["seed"]  # a lower MSE on samples unseen by their judge
    if (
        result.held_out["kind"] == "cross-validated"
    ):  # a refit learned from every sample: no figure of its own
        assert best["train"] is None and best["validation"] is None  # not measured: n/a, never a 0.000
    else:
        assert best["train"] < seed["train"]
    assert scorer.get_prompts()[SC_PROMPT].instruction == result[SC_PROMPT]
    assert isinstance(RagasMetric(scorer).default_loss(), MSELoss)


def test_with_apply_false_the_ragas_metric_is_untouched():
    dataset = SingleMetricAnnotation.from_json(AC_FILE)
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    before = critic.get_prompts()[AC_PROMPT].instruction
    llm = SimulatedMetricsLLM(dataset=dataset, random_seed=0)
    small = {"population_size": 3, "generations": 1}
    optimize_ragas_metric(critic, dataset, llm=llm, config=small, apply=False)
    assert critic.get_prompts()[AC_PROMPT].instruction == before


class _RecordingRagasLLM(ragas.llms.base.BaseRagasLLM):  # type: ignore[misc, name-defined]
    """A Ragas LLM that records the prompts Ragas sends and answers with a fixed JSON text."""

    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer
        self.prompts: list[str] = []

    def _result(self, prompt: Any) -> Any:
        from langchain_core.outputs import Generation, LLMResult

        self.prompts.append(prompt.to_string())
        return LLMResult(generations=[[Generation(text=self.answer)]])

    def generate_text(self, prompt: Any, *args: Any, **kwargs: Any) -> Any:
        return self._result(prompt)

    async def agenerate_text(self, prompt: Any, *args: Any, **kwargs: Any) -> Any:
        return self._result(prompt)

    def is_finished(self, response: Any) -> bool:
        return True


def test_ragas_own_scoring_sends_the_written_back_instruction(monkeypatch):
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    write_back(critic, {AC_PROMPT: "Say 1 only when every number in the response matches the reference."})
    critic.llm = _RecordingRagasLLM(json.dumps({"reason": "numbers match", "verdict": 1}))
    sample = ragas.dataset_schema.SingleTurnSample(user_input="2+2?", response="4", reference="4")
    score = asyncio.run(critic.single_turn_ascore(sample))
    assert score == 1
    (sent,) = critic.llm.prompts
    assert "Say 1 only when every number in the response matches the reference." in sent
    assert "criterial defined" not in sent  # the seed instruction is gone
