"""Budgets for calls, tokens and cost hold for the whole run: refused up front when they cannot
pay for a start, checked on every request, exceeded by at most one call's worth."""

from __future__ import annotations

import re

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.errors import BudgetExceededError, ConfigError
from promptevolver.llm import Price, SimulatedJudgeLLM
from promptevolver.simulation.synthetic import SyntheticSpec, generate

CONFIG = {"strategy": "genetic", "population_size": 4, "generations": 6, "random_seed": 3, "patience": 6}
PRICE = Price(prompt=150.0, completion=600.0)  # USD per 1M tokens


@pytest.fixture(scope="module")
def dataset():
    return generate(SyntheticSpec(n_samples=80, random_seed=1))


def _run(dataset, budget, *, price=None):
    llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2, noise=0.0, price=price)
    metric = AspectCritic(
        name=dataset.name, definition="Is the response correct compared with the reference?"
    )
    opt = GeneticOptimizer(metric=metric, llm=llm)
    return opt.optimize(dataset, BinaryMetricLoss(), {**CONFIG, "budget": budget}), llm


def _largest_call(llm) -> tuple[int, float]:
    """Tokens and USD of the largest single call the client answered."""
    usage = llm.usage
    calls = max(1, usage.total_calls)
    return usage.total_tokens // calls * 4, usage.cost_usd / calls * 4


def test_a_token_budget_too_small_to_start_is_refused_before_any_call(dataset):
    with pytest.raises(
        BudgetExceededError, match=r"budget.max_tokens=100 cannot pay for the seed.s evaluation"
    ):
        _run(dataset, {"max_tokens": 100})


def test_a_cost_budget_without_prices_is_refused_before_any_call(dataset):
    llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2)
    metric = AspectCritic(name=dataset.name, definition="Is it correct?")
    with pytest.raises(ConfigError, match="max_cost_usd=0.5 needs a price"):
        GeneticOptimizer(metric=metric, llm=llm).optimize(
            dataset, BinaryMetricLoss(), {**CONFIG, "budget": {"max_cost_usd": 0.5}}
        )
    assert llm.usage.total_calls == 0


@pytest.mark.parametrize("share", [0.8, 0.9])
def test_token_and_cost_budgets_hold_for_the_whole_run(dataset, share):
    free, free_llm = _run(dataset, {}, price=PRICE)
    tokens = int(free_llm.usage.total_tokens * share)
    cost = free_llm.usage.cost_usd * share
    for budget in ({"max_tokens": tokens}, {"max_cost_usd": cost}):
        result, llm = _run(dataset, budget, price=PRICE)
        one_call_tokens, one_call_cost = _largest_call(free_llm)
        assert result.stop_reason == "budget"
        assert llm.usage.total_tokens <= tokens + one_call_tokens or "max_tokens" not in budget
        assert llm.usage.cost_usd <= cost + one_call_cost or "max_cost_usd" not in budget
        assert result.scores["best"]["validation"] is not None  # the final choice was paid for
        assert result.usage["llm_calls"] == {"judge": llm.usage.judge_calls, "meta": llm.usage.meta_calls}


def test_a_call_budget_is_never_exceeded(dataset):
    free, _ = _run(dataset, {})
    with pytest.raises(BudgetExceededError) as refused:
        _run(dataset, {"max_calls": 1})
    minimum = int(re.search(r"\((\d+) in all", str(refused.value)).group(1))
    limit = (minimum + sum(free.usage["llm_calls"].values())) // 2
    result, llm = _run(dataset, {"max_calls": limit})
    assert result.stop_reason == "budget" and llm.usage.total_calls <= limit
