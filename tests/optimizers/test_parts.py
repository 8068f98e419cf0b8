"""The search's parts on their own: operators, stop conditions, the state's checkpoint form, the
cost model shared by the budget and ``estimate``."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.config._models import GeneticConfig, RunConfig
from promptevolver.errors import BudgetExceededError
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._split import split_sizes
from promptevolver.optimizers._state import SearchState
from promptevolver.optimizers.operators._base import BreedingView, Child, MetaContext, Plan
from promptevolver.optimizers.operators._breeder import Breeder
from promptevolver.optimizers.operators._crossover import Crossover
from promptevolver.optimizers.operators._mutation import Mutation
from promptevolver.optimizers.operators._reverse_engineer import ReverseEngineering
from promptevolver.optimizers.strategies._stopping import DEFAULT_STOP_CONDITIONS, SearchView
from promptevolver.runs._estimate import estimate

from ..conftest import AC_DEFINITION, AC_FILE
from ..helpers import make_dataset, rule_llm

CONFIG = {"strategy": "genetic", "random_seed": 3, "population_size": 4, "generations": 3, "patience": 5}


def _metric() -> AspectCritic:
    return AspectCritic(name="toy", definition="Is the response correct?")


def _judge(labels: list[int]):
    def judge(instruction: str, i: int) -> int:
        return labels[i] if (zlib.crc32(instruction.encode()) + i) % 3 else 1 - labels[i]

    return judge


class Suffix:
    """A user's own operator: appends a fixed sentence to the parent it is given (no meta call)."""

    name = "suffix"
    weight = 1.0
    arity = 1

    def __init__(self) -> None:
        self.runs = 0

    def meta_calls(self, prompts: int) -> int:
        return 0

    def plan(
        self, view: BreedingView, parents: tuple[Candidate, ...], rng: np.random.Generator
    ) -> Plan | None:
        return Plan(self.name, parents)

    async def run(self, plan: Plan, ctx: MetaContext) -> Child:
        self.runs += 1
        (parent,) = plan.parents
        return Child(plan, {k: f"{v} Be precise {plan.slot}." for k, v in parent.instructions.items()})


def test_a_custom_operator_makes_the_offspring_and_appears_in_the_lineage():
    ds = make_dataset(20, wrong=6)
    labels = [int(y) for y in ds.labels()]
    suffix = Suffix()
    opt = GeneticOptimizer(metric=_metric(), llm=rule_llm(ds, _judge(labels)), operators=[suffix])
    result = opt.optimize(dataset=ds, loss=BinaryMetricLoss(), config=CONFIG)
    made = [c for c in result.lineage if c["operator"] == "suffix"]
    assert suffix.runs > 0 and len(made) == suffix.runs
    assert all("Be precise" in text for c in made for text in c["instructions"].values())
    assert "mutation" not in result.usage["calls_by_operation"]  # the defaults were replaced


class StopAfterOne:
    reason = "enough"

    def should_stop(self, search: SearchView) -> bool:
        return search.state.generation >= 1


def test_a_custom_stop_condition_ends_the_search_with_its_reason():
    ds = make_dataset(20, wrong=6)
    labels = [int(y) for y in ds.labels()]
    conditions = [StopAfterOne(), *DEFAULT_STOP_CONDITIONS]
    opt = GeneticOptimizer(metric=_metric(), llm=rule_llm(ds, _judge(labels)), stop_conditions=conditions)
    result = opt.optimize(dataset=ds, loss=BinaryMetricLoss(), config=CONFIG)
    assert result.stop_reason == "enough" and [h["generation"] for h in result.history] == [0, 1]


def test_default_stop_conditions_are_checked_in_their_documented_order():
    import re

    from promptevolver.optimizers.strategies import _stopping as stopping

    documented = re.findall(r"^\* ``(\w+)`` —", stopping.__doc__ or "", flags=re.MULTILINE)
    reasons = [c.reason for c in DEFAULT_STOP_CONDITIONS]
    assert reasons == documented
    assert reasons.index("exhausted") < reasons.index("patience")  # the reason more patience won't lift


def test_the_breeder_never_draws_an_operator_switched_off():
    ds = make_dataset(20, wrong=6)
    labels = [int(y) for y in ds.labels()]
    for weights, absent in (((0.0, 1.0), "mutation"), ((1.0, 0.0), "crossover")):
        config = {**CONFIG, "mutation_weight": weights[0], "crossover_weight": weights[1]}
        opt = GeneticOptimizer(metric=_metric(), llm=rule_llm(ds, _judge(labels)))
        result = opt.optimize(dataset=ds, loss=BinaryMetricLoss(), config=config)
        assert all(c["operator"] != absent for c in result.lineage)


def test_the_breeder_refuses_two_operators_with_one_name():
    with pytest.raises(ValueError, match="unique"):
        Breeder([Mutation(), Mutation()], ReverseEngineering())
    breeder = Breeder([Mutation(), Crossover()], ReverseEngineering())
    assert (
        breeder.meta_calls_per_offspring(3) == 3
    )  # crossover merges each of 3 prompts; a mutation rewrites one (2)
    assert Breeder([Mutation(), Crossover(weight=0)], ReverseEngineering()).meta_calls_per_offspring(3) == 2


def test_search_state_survives_its_checkpoint_form(tmp_path):
    ds = make_dataset(20, wrong=6)
    labels = [int(y) for y in ds.labels()]
    opt = GeneticOptimizer(metric=_metric(), llm=rule_llm(ds, _judge(labels)))
    opt.optimize(dataset=ds, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path)
    from promptevolver.optimizers._checkpoint import load

    saved = load(tmp_path)["state"]
    rng = np.random.default_rng(0)
    state = SearchState.from_dict(saved, rng)
    assert state.to_dict() == saved
    assert state.find(state.seed.instructions) is state.seed
    assert rng.random() == SearchState.from_dict(saved, np.random.default_rng(99)).rng.random()


@pytest.mark.parametrize("population", [1, 2, 6])
@pytest.mark.parametrize("reverse_engineer", [True, False])
def test_estimate_and_the_optimizer_refuse_a_small_budget_with_the_same_figures(population, reverse_engineer):
    """One cost model: the calls each phase needs are the same in both messages."""
    optimizer = {"population_size": population, "reverse_engineer": reverse_engineer}
    run_config = RunConfig.model_validate(
        {
            "dataset": str(AC_FILE),
            "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
            "optimizer": optimizer,
            "budget": {"max_calls": 1},
            "random_seed": 1,
        }
    )
    with pytest.raises(BudgetExceededError) as from_estimate:
        estimate(run_config)
    from promptevolver import SingleMetricAnnotation
    from promptevolver.llm import SimulatedJudgeLLM

    ds = SingleMetricAnnotation.from_json(AC_FILE)
    opt = GeneticOptimizer(
        metric=AspectCritic(name="answer_correctness", definition=AC_DEFINITION),
        llm=SimulatedJudgeLLM(dataset=ds, random_seed=1),
    )
    with pytest.raises(BudgetExceededError) as from_run:
        opt.optimize(dataset=ds, loss=BinaryMetricLoss(), config=run_config.effective_optimizer())
    assert str(from_estimate.value) == str(from_run.value)
    seed = int(re.search(r"evaluation needs (\d+) calls", str(from_run.value)).group(1))
    final = int(re.search(r"final validation up to (\d+)", str(from_run.value)).group(1))
    upfront = int(re.search(r"need up to (\d+)", str(from_run.value)).group(1))
    n_usable = sum(y is not None for y in ds.labels())
    n_train, n_val = split_sizes(n_usable, run_config.effective_optimizer())
    extra = population - 1 if reverse_engineer else 0
    assert seed == n_train and final == (1 if population == 1 else 2) * n_val
    assert upfront >= (1 + extra) * n_train + extra + final


def test_the_final_reserve_at_population_one_is_the_seed_alone():
    from promptevolver.optimizers._cost import phase_calls

    config = GeneticConfig(population_size=1, finalists=3, strategy="genetic")
    calls = phase_calls(
        config, n_train=10, n_val=5, prompts=1, calls_per_evaluation=2, meta_calls_per_offspring=2
    )
    assert calls.final == 5 * 2 and calls.initial == 10 * 2
    wider = phase_calls(
        config.model_copy(update={"population_size": 4}),
        n_train=10,
        n_val=5,
        prompts=1,
        calls_per_evaluation=2,
        meta_calls_per_offspring=2,
    )
    assert (
        wider.final == (1 + 3) * 5 * 2 and wider.initial == 4 * 10 * 2 + 3 * 2
    )  # R mutations, 2 meta calls each


def test_the_pipeline_cost_model_bounds_each_stage():
    """distill = L·D·K·(C+1) meta calls, verify = (1 + L·D)·n_eval·J; the search (auto only) as
    the genetic generation; the floor one round and one verified rung (optimizers/_cost.py)."""
    from promptevolver.optimizers._cost import phase_calls

    config = GeneticConfig(
        distill_rounds=3, distill_max_calls=2, population_size=4, finalists=2, examples={"policy": "none"}
    )
    held_out = phase_calls(
        config, n_train=10, n_val=5, prompts=1, calls_per_evaluation=2, meta_calls_per_offspring=2
    )
    assert held_out.distill == 3 * (2 + 1) and held_out.verify == (1 + 3) * 5 * 2
    assert held_out.seed == 5 * 2 and held_out.final == (1 + 2) * 5 * 2 and held_out.generation > 0
    assert held_out.minimum() == 2 * 5 * 2 + 3
    oob = phase_calls(
        config, n_train=10, n_val=0, prompts=2, calls_per_evaluation=1, meta_calls_per_offspring=2, ladders=2
    )
    assert oob.distill == 2 * 3 * 2 * 3 and oob.verify == (1 + 2 * 3) * 10
    only = phase_calls(
        config.model_copy(update={"strategy": "distill"}),
        n_train=10,
        n_val=5,
        prompts=1,
        calls_per_evaluation=2,
        meta_calls_per_offspring=2,
    )
    assert only.generation == 0 and only.final == 0 and only.total(4) == only.initial
