"""The pipeline's stages (optimizers/_stages.py): objects of one role, each strategy a list of
them, and a user's own list run as given."""

from __future__ import annotations

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.config import GeneticConfig
from promptevolver.optimizers import (
    STRATEGIES,
    CrossFit,
    Distill,
    Examples,
    FinalChoice,
    Generations,
    InitialPopulation,
    Search,
    Seed,
    Stage,
    StageView,
    Verify,
)
from promptevolver.optimizers._stages import strategy

from ..helpers import make_dataset, rule_llm

IMPLEMENTATIONS = [
    Seed,
    Distill,
    Verify,
    Examples,
    CrossFit,
    Search,
    InitialPopulation,
    Generations,
    FinalChoice,
]


def test_every_stage_is_one_role_with_one_method():
    assert len(IMPLEMENTATIONS) >= 5
    for kind in IMPLEMENTATIONS:
        assert isinstance(kind(), Stage), kind.__name__
        public = {n for n in vars(kind) if not n.startswith("_")}
        assert public == {"run"}, kind.__name__


def test_every_strategy_of_the_config_is_a_list_of_stages_ending_in_the_final_choice():
    names = GeneticConfig.model_fields["strategy"].annotation.__args__  # type: ignore[union-attr]
    assert set(names) == set(STRATEGIES)
    for name, stages in STRATEGIES.items():
        assert isinstance(stages[-1], FinalChoice), name
        assert all(isinstance(s, Stage) for s in stages), name
    with pytest.raises(ValueError, match="known: auto, distill, examples, genetic"):
        strategy("gepa")


class _Watch:
    """A user's stage: records what it was handed and the stages done before it."""

    def __init__(self) -> None:
        self.seen: list[tuple[type, list[str]]] = []

    async def run(self, view: StageView) -> None:
        self.seen.append((type(view), [r.name for r in view.state.stages]))


def _optimizer(stages, dataset):
    return GeneticOptimizer(
        metric=AspectCritic(name="toy", definition="Is the response correct?"),
        llm=rule_llm(dataset, lambda _, i: i % 2),
        stages=stages,
    )


def test_a_users_list_of_stages_runs_as_given():
    dataset = make_dataset(40, 12)
    watch = _Watch()
    stages = [Seed(), Distill(), watch, Verify(), FinalChoice()]
    result = _optimizer(stages, dataset).optimize(
        dataset=dataset, loss=BinaryMetricLoss(), config={"random_seed": 1}
    )
    assert watch.seen == [(StageView, ["distill"])]  # a view, never the run; after the distillation
    assert list(result.stages) == ["distill", "verify", "search"]  # no examples, no cross-fit
    assert result.stages["search"] == {"ran": False, "why": "the run's stages hold no search"}
    assert result.stop_reason == "distilled"


def test_the_default_list_and_the_strategys_list_give_the_same_result():
    dataset = make_dataset(40, 12)
    config = {"random_seed": 3, "strategy": "distill"}
    default = _optimizer(None, dataset).optimize(dataset=dataset, loss=BinaryMetricLoss(), config=config)
    given = _optimizer(list(STRATEGIES["distill"]), dataset).optimize(
        dataset=dataset, loss=BinaryMetricLoss(), config=config
    )
    assert given == default and given.stages == default.stages


def test_a_list_whose_last_stage_chooses_nothing_is_refused():
    dataset = make_dataset(40, 12)
    with pytest.raises(TypeError, match="FinalChoiceRecord"):
        _optimizer([Seed(), Distill(), Verify()], dataset).optimize(dataset=dataset, loss=BinaryMetricLoss())
