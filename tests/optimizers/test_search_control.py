"""Budget, checkpoint/resume, events and screening of the genetic search."""

from __future__ import annotations

import json
import re
import zlib

import pytest

from promptevolver import BinaryMetricLoss, GeneticOptimizer
from promptevolver.errors import BudgetExceededError
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.optimizers._checkpoint import CheckpointError
from promptevolver.optimizers.events import Event
from promptevolver.simulation.synthetic import SyntheticSpec, generate

from ..helpers import make_dataset, rule_llm

CONFIG = {"strategy": "genetic", "random_seed": 7, "population_size": 4, "generations": 4, "patience": 10}


def _optimizer(dataset, **kwargs):
    from promptevolver import AspectCritic

    metric = AspectCritic(name="answer_correctness", definition="Is the response correct?")
    return GeneticOptimizer(metric=metric, llm=SimulatedJudgeLLM(dataset=dataset, random_seed=7), **kwargs)


def test_budget_too_small_is_refused_up_front_with_the_calls_needed(ac_dataset):
    with pytest.raises(BudgetExceededError, match=r"seed's train evaluation needs \d+ calls") as refused:
        _optimizer(ac_dataset).optimize(
            dataset=ac_dataset, loss=BinaryMetricLoss(), config={**CONFIG, "budget": {"max_calls": 10}}
        )
    needed = int(re.search(r"\((\d+) in all", str(refused.value)).group(1))
    assert needed > 10


def test_budget_stops_the_search_within_the_limit():
    ds = make_dataset(30, wrong=10)
    labels = [int(y) for y in ds.labels()]
    # Every operator output is new and a little better or worse: the search never runs dry.
    llm_config = {
        "strategy": "genetic",
        "random_seed": 2,
        "population_size": 4,
        "generations": 30,
        "patience": 30,
        "sample_size": 2,
    }

    def judge(instruction: str, i: int) -> int:
        return labels[i] if (zlib.crc32(instruction.encode()) + i) % 3 else 1 - labels[i]

    def run(**extra):
        llm = rule_llm(ds, judge)
        opt = GeneticOptimizer(metric=_optimizer(ds).metric, llm=llm)
        return opt.optimize(dataset=ds, loss=BinaryMetricLoss(), config={**llm_config, **extra}), llm

    free, _ = run()
    with pytest.raises(BudgetExceededError) as refused:
        run(budget={"max_calls": 1})
    needed = int(re.search(r"\((\d+) in all", str(refused.value)).group(1))
    limit = needed + 40
    assert sum(free.usage["llm_calls"].values()) > limit
    result, llm = run(budget={"max_calls": limit})
    assert result.stop_reason == "budget" and free.stop_reason != "budget"
    assert len(llm.requests) == sum(result.usage["llm_calls"].values()) <= limit
    assert result.scores["best"]["validation"] >= result.scores["seed"]["validation"]


def test_events_reach_callbacks_in_order(ac_dataset):
    events: list[Event] = []
    result = _optimizer(ac_dataset, callbacks=[events.append]).optimize(
        dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG
    )
    kinds = [e.kind for e in events]
    assert kinds[-1] == "stop" and events[-1].data["reason"] == result.stop_reason
    assert kinds.count("generation_end") == len(result.history)
    assert kinds.count("generation_start") == len(result.history) - 1
    evaluated = [e for e in events if e.kind == "candidate_evaluated"]
    # 18 annotations: out-of-bag, the final choice reuses the train judgements (no validation calls)
    assert result.split["regime"] == "out-of-bag"
    assert {e.data["split"] for e in evaluated} >= {"train"} and "validation" not in {
        e.data["split"] for e in evaluated
    }
    assert kinds.count("llm_call") == sum(result.usage["llm_calls"].values())
    made = [c for c in result.lineage if c["operator"] != "examples"]  # examples: no operator call
    assert sum(e.kind == "operator_call" for e in events) >= len(made) - 1


def test_optimize_callbacks_receive_the_same_events_as_the_constructors(ac_dataset):
    """Ragas' ``optimize(callbacks=...)`` is honoured: called with every event, after the
    optimizer's own callbacks, and only for that run."""
    held: list[Event] = []
    given: list[Event] = []
    order: list[str] = []
    optimizer = _optimizer(ac_dataset, callbacks=[held.append, lambda e: order.append("held")])
    optimizer.optimize(
        dataset=ac_dataset,
        loss=BinaryMetricLoss(),
        config=CONFIG,
        callbacks=[given.append, lambda e: order.append("given")],
    )
    assert given and given == held
    assert order[:4] == ["held", "given", "held", "given"]
    again: list[Event] = []
    optimizer.callbacks = [again.append]
    optimizer.optimize(dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG)
    assert len(given) == len(held) and [e.kind for e in again] == [e.kind for e in given]


@pytest.mark.parametrize(
    ("callbacks", "named"),
    [(object(), "got object"), ([print, "log"], r"callbacks\[1\] is a str"), ("on_event", "got str")],
)
def test_optimize_refuses_callbacks_it_cannot_call_before_any_llm_call(ac_dataset, callbacks, named):
    optimizer = _optimizer(ac_dataset)
    with pytest.raises(TypeError, match=named):
        optimizer.optimize(dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG, callbacks=callbacks)
    assert optimizer.llm.usage.total_calls == 0


def test_optimize_still_accepts_ragas_settings_it_has_no_use_for_and_refuses_unknown_ones(ac_dataset):
    optimizer = _optimizer(ac_dataset)
    with pytest.warns(UserWarning, match=r"optimize\(batch_size=4\): not used: config key max_concurrency"):
        result = optimizer.optimize(
            dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG, batch_size=4, raise_exceptions=False
        )
    assert result.best_instructions
    with pytest.raises(TypeError, match="callback"):
        optimizer.optimize(dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG, callback=print)


class _Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def learning_dataset():
    """A synthetic set on which the simulated search keeps learning for several generations."""

    return generate(SyntheticSpec(n_samples=60, random_seed=0))


def test_interrupted_run_resumes_to_the_same_result(learning_dataset, tmp_path):
    ac_dataset = learning_dataset
    reference = _optimizer(ac_dataset).optimize(dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG)
    assert len(reference.history) > 2  # generation 2 runs

    def stop_at_generation_2(event: Event) -> None:
        if event.kind == "generation_start" and event.generation == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        _optimizer(ac_dataset, callbacks=[stop_at_generation_2]).optimize(
            dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path
        )
    best_so_far = json.loads((tmp_path / "best_so_far.json").read_text())
    assert best_so_far["generation"] == 1 and best_so_far["best_instructions"]

    resumed_llm_optimizer = _optimizer(ac_dataset)
    resumed = resumed_llm_optimizer.optimize(
        dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path, resume=True
    )
    assert dict(resumed) == dict(reference)
    assert resumed.lineage == reference.lineage
    assert resumed.scores == reference.scores
    assert resumed.usage == reference.usage  # judgements before the checkpoint are not repeated
    new_calls = resumed_llm_optimizer.llm.usage.total_calls
    assert new_calls < sum(reference.usage["llm_calls"].values())


def test_resume_refuses_another_config_or_missing_checkpoint(learning_dataset, tmp_path):
    ac_dataset = learning_dataset
    with pytest.raises(CheckpointError, match="no checkpoint"):
        _optimizer(ac_dataset).optimize(
            dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path, resume=True
        )
    _optimizer(ac_dataset).optimize(
        dataset=ac_dataset, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path
    )
    with pytest.raises(CheckpointError, match="population_size"):
        _optimizer(ac_dataset).optimize(
            dataset=ac_dataset,
            loss=BinaryMetricLoss(),
            config={**CONFIG, "population_size": 5},
            run_dir=tmp_path,
            resume=True,
        )
    extended = _optimizer(ac_dataset).optimize(
        dataset=ac_dataset,
        loss=BinaryMetricLoss(),
        config={**CONFIG, "generations": 6},
        run_dir=tmp_path,
        resume=True,
    )
    # the extended run goes on to generation 6 unless another rule stops it first
    assert extended.history[-1]["generation"] == 6 or extended.stop_reason != "generations"


def test_offspring_worse_on_the_minibatch_are_not_fully_judged():
    ds = make_dataset(40, wrong=12)
    labels = [int(y) for y in ds.labels()]
    originals = [int(s.prompts["single_turn_aspect_critic_prompt"].prompt_output["verdict"]) for s in ds]

    def judge(instruction: str, i: int) -> int:
        return 1 - labels[i] if "BAD" in instruction else originals[i]

    def writer(request: LLMRequest) -> str:
        if request.operation == "feedback":
            return json.dumps({"feedback": ["x"]})
        return json.dumps({"instruction": f"BAD {request.operation} {request.sample_index}"})

    llm = rule_llm(ds, judge, writer)
    metric_opt = GeneticOptimizer(metric=_optimizer(ds).metric, llm=llm)
    result = metric_opt.optimize(
        dataset=ds,
        loss=BinaryMetricLoss(),
        config={
            "strategy": "genetic",
            "random_seed": 1,
            "population_size": 4,
            "generations": 2,
            "minibatch_size": 6,
        },
    )
    offspring = [c for c in result.lineage if c["operator"] != "seed"]
    assert offspring and all(c["screened_out"] and c["train"] is None for c in offspring)
    n_train = result.split["train"]
    assert result.usage["llm_calls"]["judge"] == n_train + 6 * len(offspring) + result.split["validation"]
    assert result.operator_stats["screened_out"] == len(offspring)


@pytest.mark.parametrize("held", ["checkpoint.json", "journal.jsonl"])
def test_a_new_run_never_overwrites_a_run_directory(learning_dataset, tmp_path, held):
    """Without resume, a directory holding a run's checkpoint or journal is refused untouched;
    a resume without a checkpoint writes nothing."""
    with pytest.raises(CheckpointError):
        _optimizer(learning_dataset).optimize(
            dataset=learning_dataset, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path, resume=True
        )
    assert list(tmp_path.iterdir()) == []
    _optimizer(learning_dataset).optimize(
        dataset=learning_dataset, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path
    )
    for other in {"checkpoint.json", "journal.jsonl"} - {held}:
        (tmp_path / other).unlink()
    before = (tmp_path / held).read_bytes()
    with pytest.raises(FileExistsError, match=held):
        _optimizer(learning_dataset).optimize(
            dataset=learning_dataset, loss=BinaryMetricLoss(), config=CONFIG, run_dir=tmp_path
        )
    assert (tmp_path / held).read_bytes() == before


@pytest.mark.parametrize("n_samples", [24, 60])  # out-of-bag and held-out final choices
def test_resuming_a_finished_run_repeats_the_same_final_choice(tmp_path, n_samples):
    """The last checkpoint is written after the final choice: a resume from it must draw the
    same bootstrap, whatever the search's generator did since, and so choose the same."""
    dataset = generate(SyntheticSpec(n_samples=n_samples, random_seed=1))
    config = {**CONFIG, "finalists": 2}
    first = _optimizer(dataset).optimize(
        dataset=dataset, loss=BinaryMetricLoss(), config=config, run_dir=tmp_path
    )
    again = _optimizer(dataset).optimize(
        dataset=dataset, loss=BinaryMetricLoss(), config=config, run_dir=tmp_path, resume=True
    )
    assert len(first.final_choice["finalists"]) >= 1
    assert again.final_choice == first.final_choice and dict(again) == dict(first)


@pytest.mark.parametrize("seed", [0, 3])
def test_history_fitness_is_the_ranking_score_and_never_falls_with_elites(seed):
    """History reports fitness on the judged train samples (the focus set), what selection ranks
    by: with elites kept the best never falls (whole-part estimates of another ranked-first
    candidate could: 0.896 -> 0.851 between generations). Scores stay whole-part estimates."""
    ds = generate(SyntheticSpec(n_samples=400, random_seed=seed))
    config = {
        "strategy": "genetic",
        "random_seed": seed,
        "population_size": 4,
        "generations": 5,
        "patience": 5,
        "elite_count": 1,
    }
    result = _optimizer(ds).optimize(dataset=ds, loss=BinaryMetricLoss(), config=config)
    assert result.split["judged"]["train"] < result.split["train"]  # a focus set: fitness ≠ estimate
    best = [h["best_train"] for h in result.history]
    assert len(best) > 2 and all(b >= a for a, b in zip(best, best[1:])), best
    seed_entry = next(c for c in result.lineage if c["id"] == 0)
    assert result.history[0]["best_train"] >= seed_entry["train"]  # the seed is in generation 0
    assert result.scores["seed"]["train"] != pytest.approx(seed_entry["train"])  # estimate vs fitness


@pytest.mark.parametrize(
    ("n_samples", "strategy", "examples"),
    [
        (24, "auto", "auto"),  # small data: the recipe cross-validated over the folds
        (24, "auto", "retrieval"),  # ... and a named example policy raced on the folds
        (160, "auto", "auto"),  # a held-out validation part
    ],
)
def test_every_stage_end_carries_the_figures_the_result_records(n_samples, strategy, examples):
    """A tracker (MLflow) logs a stage's figures from its ``stage_end`` event: every stage the
    result records came with them, equal to the record, whichever regime chose."""
    ds = generate(SyntheticSpec(n_samples=n_samples, random_seed=3))
    events: list[Event] = []
    result = _optimizer(ds, callbacks=[events.append]).optimize(
        dataset=ds,
        loss=BinaryMetricLoss(),
        config={"strategy": strategy, "random_seed": 3, "examples": {"policy": examples}},
    )
    ended = {e.data["stage"]: e.data for e in events if e.kind == "stage_end"}
    assert {"distill", "verify"} <= set(ended)
    for stage, data in ended.items():
        figures = {k: v for k, v in data["figures"].items() if k != "seconds"}
        assert figures == result.stages[stage], stage
