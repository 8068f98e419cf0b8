"""Issue 24, item 5: the seed's evaluation and the final choice are reserved before any call, a
budget that cannot pay for them is refused up front (calls, tokens and cost), and a budget reached
at any later point ends the run with the best so far and a result (``stop_reason: budget``)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.errors import BudgetExceededError
from promptevolver.llm import Price, SimulatedJudgeLLM
from promptevolver.simulation.synthetic import SyntheticSpec, generate

pytestmark = pytest.mark.filterwarnings("ignore:optimizer.population_size=300 is large")
PRICE = Price(prompt=150.0, completion=600.0)  # USD per 1M tokens


@pytest.fixture(scope="module")
def dataset():
    return generate(SyntheticSpec(n_samples=80, random_seed=1))


def _run(dataset, config: dict[str, Any], budget: dict[str, Any]):
    llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2, noise=0.0, price=PRICE)
    metric = AspectCritic(
        name=dataset.name, definition="Is the response correct compared with the reference?"
    )
    opt = GeneticOptimizer(metric=metric, llm=llm)
    full = {"random_seed": 3, "patience": 6, **config, "budget": budget}
    return opt.optimize(dataset, BinaryMetricLoss(), full), llm


def _minimum_calls(dataset, config: dict[str, Any]) -> tuple[int, int]:
    """(calls of the seed's train evaluation, calls of it and the final choice at most)."""
    with pytest.raises(BudgetExceededError) as refused:
        _run(dataset, config, {"max_calls": 1})
    said = str(refused.value)
    seed = int(re.search(r"evaluation needs (\d+) calls", said).group(1))
    return seed, int(re.search(r"\((\d+) in all", said).group(1))


@pytest.mark.parametrize("population", [30, 300])
@pytest.mark.parametrize("extra", [0, 1, 40])
def test_a_budget_that_pays_for_the_seed_and_the_final_choice_always_ends_with_a_result(
    dataset, population, extra
):
    """Before: population 30 with 260 calls spent 166 on reverse engineering and the seed, then
    stopped with no result; population 10000 spent all 500 calls on meta calls."""
    config = {"population_size": population, "generations": 3, "strategy": "genetic"}
    seed_calls, minimum = _minimum_calls(dataset, config)
    limit = minimum + extra
    result, llm = _run(dataset, config, {"max_calls": limit})
    assert result.stop_reason == "budget"
    assert llm.usage.total_calls <= limit
    assert result.scores["seed"]["train"] is not None and result.scores["best"]["validation"] is not None
    assert llm.usage.judge_calls > seed_calls  # the seed's evaluations and the final choice were paid
    assert result.usage["failures"] == 0


@pytest.mark.parametrize("bound", ["max_tokens", "max_cost_usd"])
def test_token_and_cost_budgets_are_checked_before_the_first_call(dataset, bound):
    llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2, noise=0.0, price=PRICE)
    metric = AspectCritic(name=dataset.name, definition="Is it correct?")
    tiny = {"max_tokens": 2000, "max_cost_usd": 0.0003}[bound]
    with pytest.raises(BudgetExceededError, match=rf"budget.{bound}=.* cannot pay for the seed.s evaluation"):
        GeneticOptimizer(metric=metric, llm=llm).optimize(
            dataset,
            BinaryMetricLoss(),
            {"population_size": 4, "budget": {bound: tiny}, "strategy": "genetic"},
        )
    assert llm.usage.total_calls == 0


@pytest.mark.parametrize("bound", ["max_tokens", "max_cost_usd"])
def test_token_and_cost_budgets_reached_during_the_start_still_end_with_a_result(dataset, bound):
    config = {"population_size": 30, "generations": 3, "strategy": "genetic"}
    free, free_llm = _run(dataset, config, {})
    spent = {"max_tokens": free_llm.usage.total_tokens, "max_cost_usd": free_llm.usage.cost_usd}[bound]
    limit = int(spent * 0.35) if bound == "max_tokens" else spent * 0.35
    result, llm = _run(dataset, config, {bound: limit})
    assert result.stop_reason == "budget"
    assert result.scores["best"]["validation"] is not None


def test_a_budget_of_what_the_run_needs_is_spent_not_stopped_at_a_fraction(dataset):
    """Before: a budget equal to what an unbounded run spent stopped at 30 % of it (124 of 417
    calls) and kept the seed: each generation was projected at its upper bound."""
    config = {"population_size": 6, "generations": 4, "strategy": "genetic"}
    free, free_llm = _run(dataset, config, {})
    needed = free_llm.usage.total_calls
    result, llm = _run(dataset, config, {"max_calls": needed})
    assert llm.usage.total_calls <= needed
    assert llm.usage.total_calls >= 0.75 * needed
    assert len(result.history) >= len(free.history) - 1


@pytest.mark.parametrize("share", [0.4, 0.7, 1.0])
def test_the_pipeline_ends_with_a_result_within_any_budget_it_accepts(dataset, share):
    """strategy auto: a call budget below what the pipeline spends unbounded still ends with a
    result and never goes over (distillation cannot spend the verification's reserve)."""
    config = {"population_size": 4, "generations": 3}
    free, free_llm = _run(dataset, config, {})
    limit = max(1, int(free_llm.usage.total_calls * share))
    try:
        result, llm = _run(dataset, config, {"max_calls": limit})
    except BudgetExceededError:
        return  # refused up front, before any call: also within the budget
    assert llm.usage.total_calls <= limit
    assert result.held_out["seed"] is not None
