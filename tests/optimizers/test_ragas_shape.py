"""A Ragas 0.4.3 user's optimizer code runs after the import swap: positional arguments, a
subclass of ``Optimizer`` written as in Ragas, the result as a ``dict``, Ragas' errors for a
missing metric or llm; our keyword shape keeps working beside it."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.evaluation import Loss
from promptevolver.optimizers import OptimizationResult, Optimizer

from ..helpers import PROMPT, make_dataset, rule_llm

CONFIG = {"population_size": 1, "random_seed": 3}


def _metric() -> AspectCritic:
    return AspectCritic(name="toy", definition="Is the answer right?")


@pytest.fixture(scope="module")
def ragas_result() -> OptimizationResult:
    """A run called exactly as Ragas' documentation calls it: all positional."""
    ds = make_dataset(12, wrong=2)
    optimizer = GeneticOptimizer(_metric(), rule_llm(ds, lambda ins, i: 1))
    return optimizer.optimize(ds, BinaryMetricLoss(), CONFIG, None)


# --- Positional arguments and the result ---------------------------------------------------------


def test_positional_and_keyword_calls_give_the_same_result(ragas_result: OptimizationResult) -> None:
    ds = make_dataset(12, wrong=2)
    llm = rule_llm(ds, lambda ins, i: 1)
    optimizer = GeneticOptimizer(metric=_metric(), llm=llm)
    ours = optimizer.optimize(dataset=ds, loss=BinaryMetricLoss(), config=CONFIG)
    assert ours == ragas_result
    assert not ours.__ne__(ragas_result)
    assert GeneticOptimizer(_metric(), llm).llm is llm


def test_every_ragas_argument_is_taken_in_ragas_order() -> None:
    ds = make_dataset(12, wrong=2)
    optimizer = GeneticOptimizer(_metric(), rule_llm(ds, lambda ins, i: 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Ragas' defaults warn about nothing
        result = optimizer.optimize(ds, BinaryMetricLoss(), CONFIG, None, None, None, False, True)
    assert dict(result) == result.best_instructions


def test_the_result_is_a_dict_that_json_dumps_with_its_evidence_kept(
    ragas_result: OptimizationResult, tmp_path: Path
) -> None:
    result = ragas_result
    assert isinstance(result, dict) and result == result.best_instructions == {PROMPT: result[PROMPT]}
    with (tmp_path / "prompts.json").open("w") as fh:
        json.dump(result, fh)  # Ragas users save the prompts this way
    assert json.loads((tmp_path / "prompts.json").read_text()) == result.best_instructions
    assert result.held_out["best"] is not None and result.lineage and result.usage["llm_calls"]
    assert json.loads(json.dumps(result.to_dict()))["best_instructions"] == dict(result)


def test_the_result_is_read_only_and_copies_by_its_fields(ragas_result: OptimizationResult) -> None:
    result = ragas_result
    for change in (
        lambda r: r.__setitem__(PROMPT, "x"),
        lambda r: r.__delitem__(PROMPT),
        lambda r: r.update({PROMPT: "x"}),
        lambda r: r.pop(PROMPT),
        lambda r: r.popitem(),
        lambda r: r.setdefault("other", "x"),
        lambda r: r.clear(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change(result)
    assert dict(result) == result.best_instructions  # nothing changed
    mutable = dict(result)
    mutable[PROMPT] = "changed"
    assert result[PROMPT] != "changed"
    for twin in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result), copy.copy(result)):
        assert type(twin) is OptimizationResult and twin == result and twin.lineage == result.lineage


def test_results_differing_beyond_the_instructions_are_not_equal(ragas_result: OptimizationResult) -> None:
    other = OptimizationResult.from_dict({**ragas_result.to_dict(), "best_id": 7})
    assert dict(other) == dict(ragas_result)
    assert other.__ne__(ragas_result) is True and other.__eq__(ragas_result) is False  # they agree


# --- Ragas' errors -------------------------------------------------------------------------------


def test_a_missing_metric_or_llm_raises_ragas_messages_metric_first() -> None:
    ds = make_dataset(12, wrong=2)
    llm = rule_llm(ds, lambda ins, i: 1)
    for optimizer, message in (
        (GeneticOptimizer(), "No metric provided for optimization"),
        (GeneticOptimizer(llm=llm), "No metric provided for optimization"),
        (GeneticOptimizer(_metric()), "No llm provided for optimization"),
    ):
        with pytest.raises(ValueError, match=message):
            optimizer.optimize(ds, BinaryMetricLoss(), {})
        with pytest.raises(ValueError, match=message):
            asyncio.run(optimizer.aoptimize(dataset=ds, loss=BinaryMetricLoss(), config={}))
    assert llm.usage.total_calls == 0


def test_ragas_arguments_done_elsewhere_warn_where_and_unknown_ones_are_refused() -> None:
    ds = make_dataset(12, wrong=2)
    optimizer = GeneticOptimizer(_metric(), rule_llm(ds, lambda ins, i: 1))
    for name, value, where in (
        ("run_config", object(), "max_concurrency"),
        ("batch_size", 4, "max_concurrency"),
        ("with_debugging_logs", True, "callbacks="),
    ):
        with pytest.warns(UserWarning, match=f"optimize\\({name}=.*{where}"):
            optimizer.optimize(ds, BinaryMetricLoss(), CONFIG, **{name: value})
    with pytest.raises(TypeError, match="bogus"):
        optimizer.optimize(ds, BinaryMetricLoss(), CONFIG, bogus=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="callbacks must be a list of functions"):
        optimizer.optimize(ds, BinaryMetricLoss(), CONFIG, None, None, object())  # type: ignore[arg-type]


# --- An optimizer of one's own ------------------------------------------------------------------


class RagasShaped(Optimizer):
    """Written as against ``ragas.optimizers.base.Optimizer``: only a synchronous optimize."""

    def optimize(self, dataset: Any, loss: Any, config: Any, **kwargs: Any) -> dict[str, str]:  # type: ignore[override]
        self.seen = (len(dataset), loss, config, kwargs)
        return {PROMPT: f"judged {len(dataset)} samples"}


def test_a_ragas_style_optimizer_instantiates_and_runs_both_ways() -> None:
    ds = make_dataset(12, wrong=2)
    llm = rule_llm(ds, lambda ins, i: 1)
    metric = _metric()
    optimizer = RagasShaped(metric, llm)
    assert (optimizer.metric, optimizer.llm, optimizer.reflection_llm) == (metric, llm, None)
    assert RagasShaped(metric=metric).llm is None and RagasShaped().metric is None
    loss = BinaryMetricLoss()
    assert optimizer.optimize(ds, loss, {"k": 1}, run_config=None) == {PROMPT: "judged 12 samples"}
    assert optimizer.seen == (12, loss, {"k": 1}, {"run_config": None})
    done = asyncio.run(optimizer.aoptimize(dataset=ds, loss=loss, config={}))  # in a worker thread
    assert done == {PROMPT: "judged 12 samples"}
    with pytest.raises(TypeError, match="implements only optimize"):
        asyncio.run(optimizer.aoptimize(dataset=ds, loss=loss, config={}, run_dir="x"))


def test_a_dataclass_subclass_adds_fields_after_metric_and_llm() -> None:
    @dataclass
    class WithSteps(RagasShaped):
        max_steps: int = 50

    metric = _metric()
    optimizer = WithSteps(metric, None, max_steps=3)
    assert (optimizer.metric, optimizer.llm, optimizer.max_steps) == (metric, None, 3)


def test_an_optimizer_with_neither_optimize_nor_aoptimize_cannot_be_instantiated() -> None:
    class Empty(Optimizer):
        pass

    for cls in (Optimizer, Empty):
        with pytest.raises(TypeError, match=f"Can't instantiate {cls.__name__}: implement optimize"):
            cls()


def test_an_async_subclass_runs_through_the_sync_entry_point() -> None:
    class Async(Optimizer):
        async def aoptimize(  # type: ignore[override]
            self, *, dataset: Any, loss: Any, config: Any = None, **kw: Any
        ) -> dict[str, str]:
            return {PROMPT: f"{len(dataset)} {kw['callbacks']}"}

    ds = make_dataset(12, wrong=2)
    assert Async().optimize(ds, BinaryMetricLoss(), None, None, None, None) == {PROMPT: "12 []"}


# --- A loss of one's own in a run ---------------------------------------------------------------


def test_a_ragas_style_loss_runs_through_the_optimizer_as_accuracy_does() -> None:
    class Agreement(Loss):
        higher_is_better = True

        def __call__(self, predicted: list[float], actual: list[float]) -> float:  # type: ignore[override]
            return sum(p == a for p, a in zip(predicted, actual)) / len(actual)

    ds = make_dataset(12, wrong=2)
    runs = []
    for loss in (Agreement(), BinaryMetricLoss()):
        optimizer = GeneticOptimizer(_metric(), rule_llm(ds, lambda ins, i: 1))
        runs.append(optimizer.optimize(ds, loss, CONFIG))
    assert runs[0].scores == runs[1].scores and dict(runs[0]) == dict(runs[1])
    assert runs[0].loss == {"name": "Agreement", "higher_is_better": True}


def test_a_loss_without_a_direction_stops_the_run_before_any_call() -> None:
    class Agreement(Loss):
        def __call__(self, predicted: list[float], actual: list[float]) -> float:  # type: ignore[override]
            return sum(p == a for p, a in zip(predicted, actual)) / len(actual)

    ds = make_dataset(12, wrong=2)
    llm = rule_llm(ds, lambda ins, i: 1)
    with pytest.raises(TypeError, match="Agreement declares no direction: set higher_is_better"):
        GeneticOptimizer(_metric(), llm).optimize(ds, Agreement(), CONFIG)
    assert llm.usage.total_calls == 0
