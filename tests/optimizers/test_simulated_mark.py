"""A result says when the simulated LLM answered, through any client wrapper (issue 23: a config
without llm: ran the simulator and neither the summary nor result.json said so)."""

from __future__ import annotations

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm._base import is_simulated
from promptevolver.llm._cache import CachedLLM
from promptevolver.optimizers._result import SIMULATED_NOTE

from ..helpers import make_dataset, rule_llm

CONFIG = {"random_seed": 0, "population_size": 2, "generations": 1}


def _metric():
    return AspectCritic(name="answer_correctness", definition="Is the response correct?")


def test_a_wrapped_simulated_client_is_still_simulated(tmp_path):
    ds = make_dataset(12, wrong=3)
    simulated = SimulatedJudgeLLM(dataset=ds, random_seed=0)
    assert is_simulated(simulated) and is_simulated(CachedLLM(inner=simulated, path=tmp_path / "c.sqlite"))
    assert not is_simulated(rule_llm(ds, lambda instruction, i: 1)) and not is_simulated(None)


@pytest.mark.parametrize("simulated_role", ["judge", "meta", None])
def test_result_json_marks_a_run_the_simulated_llm_answered(simulated_role):
    ds = make_dataset(24, wrong=6)
    labels = [int(y) for y in ds.labels()]
    scripted = rule_llm(ds, lambda instruction, i: labels[i])
    simulated = SimulatedJudgeLLM(dataset=ds, random_seed=0)
    llm = simulated if simulated_role == "judge" else scripted
    reflection = simulated if simulated_role == "meta" else scripted
    result = GeneticOptimizer(metric=_metric(), llm=llm, reflection_llm=reflection).optimize(
        dataset=ds, loss=BinaryMetricLoss(), config=CONFIG
    )
    data = result.to_dict()
    assert list(data)[:3] == ["metric", "simulated_llm", "notes"]  # the headline
    assert data["simulated_llm"] is (simulated_role is not None)
    assert data["notes"] == ([SIMULATED_NOTE] if simulated_role else [])
