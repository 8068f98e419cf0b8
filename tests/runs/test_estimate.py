"""Cost estimates before a run: structure, the early-stopping model, budget, judges, prices, and
accuracy against actual runs of the bundled configs (within ±25 % of the calls) and of small
synthetic sets with a refit (judge calls within 10 %, all within 15 %)."""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from promptevolver.cli import main
from promptevolver.config._build import build_llm, build_loss, build_metric, load_dataset
from promptevolver.config._models import RunConfig, load_run_config
from promptevolver.errors import BudgetExceededError, InsufficientDataError
from promptevolver.llm._base import BaseLLMClient
from promptevolver.llm.pricing import PRICE_TABLE, PRICE_TABLE_DATE
from promptevolver.optimizers._genetic import GeneticOptimizer
from promptevolver.runs._estimate import estimate

from ..conftest import AC_DEFINITION, ROOT

KEYS = {"judge_calls", "meta_calls", "total_calls", "prompt_tokens", "completion_tokens", "cost_usd"}


def _config(**optimizer: Any) -> RunConfig:
    return _synthetic(optimizer=optimizer)


def _synthetic(
    *, n: int = 100, disagreement: float = 0.25, optimizer: dict | None = None, **top: Any
) -> RunConfig:
    raw = {
        "dataset": {"synthetic": {"n_samples": n, "random_seed": 0, "disagreement_rate": disagreement}},
        "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
        "optimizer": {"population_size": 6, "generations": 4, "strategy": "genetic", **(optimizer or {})},
        **top,
    }
    return RunConfig.model_validate(raw)


def _actual_calls(config: RunConfig, seed: int) -> int:
    config = config.model_copy(update={"random_seed": seed})
    opt, dataset = config.effective_optimizer(), load_dataset(config)
    llm = build_llm(config.llm, dataset=dataset, random_seed=opt.random_seed)
    result = GeneticOptimizer(metric=build_metric(config.metric), llm=llm).optimize(
        dataset=dataset, loss=build_loss(config.loss), config=opt
    )
    return result.usage["llm_calls"]["judge"] + result.usage["llm_calls"]["meta"]


def _bundled(name: str, strategy: str) -> RunConfig:
    config = load_run_config(ROOT / "configs" / f"{name}.yaml")
    optimizer = config.optimizer.model_copy(update={"strategy": strategy})
    return config.model_copy(update={"optimizer": optimizer})


@pytest.mark.parametrize(
    ("name", "strategy"),
    [
        (name, strategy)
        for name in ("answer_correctness", "helpfulness", "synthetic_200", "synthetic_2000")
        for strategy in ("genetic", "auto")
        if name != "helpfulness"  # nothing general to learn: next test
    ],
)
def test_expected_calls_are_within_30_percent_of_actual_runs(name, strategy):
    """The bundled configs: the documented accuracy of the model (CostModel's docstring), for the
    genetic search and the default pipeline; a large set with many disagreements takes several
    rounds to learn (it was 35 % under)."""
    config = _bundled(name, strategy)
    expected = estimate(config).total_calls
    actual = statistics.fmean(_actual_calls(config, seed) for seed in config.seeds or [42])
    assert abs(expected / actual - 1) <= 0.30, (name, expected, actual)


@pytest.mark.parametrize("strategy", ["genetic", "auto"])
def test_a_set_with_nothing_general_to_learn_is_over_counted_never_under(strategy):
    """helpfulness' corrections are rejections without a reason whose responses share no wording:
    a careful engineer writes no rule, so the run stops at once; the model, which knows how much
    there is to learn but not whether it can be written, over-counts (CostModel's docstring),
    and never past its bound."""
    config = _bundled("helpfulness", strategy)
    e = estimate(config)
    calls = [_actual_calls(config, seed) for seed in config.seeds or [42]]
    assert max(calls) <= e.total_calls <= e.max_calls


@pytest.mark.parametrize("strategy", ["auto", "examples"])
def test_a_newcomers_small_file_is_estimated_within_30_percent(strategy):
    """24 annotations (small data: no validation part; a refit under auto, the examples judged on
    every sample under examples): the shape of a first file of one's own, over five synthetic
    files. It missed by -50 % under strategy examples (the examples stage is not raced out of
    bag) and by up to -32 % under auto."""
    expected, actual = [], []
    for seed in range(5):
        config = _synthetic(n=24, optimizer={"strategy": strategy})
        source = config.dataset.model_copy(
            update={"synthetic": config.dataset.synthetic.model_copy(update={"random_seed": seed})}
        )
        config = config.model_copy(update={"dataset": source})
        expected.append(estimate(config).total_calls)
        actual.append(_actual_calls(config, seed))
    assert abs(sum(expected) / sum(actual) - 1) <= 0.30, (strategy, expected, actual)


def test_the_json_object_has_the_documented_keys_and_adds_up():
    e = estimate(_config()).to_dict()
    assert set(e) >= KEYS
    assert e["total_calls"] == e["judge_calls"] + e["meta_calls"] > 0
    assert e["prompt_tokens"] > e["completion_tokens"] > 0
    assert e["cost_usd"] == 0.0  # the simulated LLM is free
    assert e["max_calls"] >= e["total_calls"]
    assert (e["train"], e["validation"]) == (48, 30)  # train judged on its focus set (48 of 70)
    assert [p["phase"] for p in e["phases"]][0] == "initial" and e["phases"][-1]["phase"] == "final"


def test_the_pipeline_estimate_has_its_stages_and_no_judge_call_to_distill():
    e = estimate(_config(strategy="auto")).to_dict()
    assert [p["phase"] for p in e["phases"]] == ["distill", "verify", "examples", "cross_fit", "search"]
    distill, verify, _, cross_fit, search = e["phases"]
    assert distill["judge_calls"] == 0 and distill["meta_calls"] > 0 and verify["meta_calls"] == 0
    # the seed and the top rung, held out, the rung weighted by the corrections' share with a reason
    assert e["validation"] < verify["judge_calls"] <= 2 * e["validation"]
    # the cross-fit check (the verified and the cross-fit rung on train) when the search does not run
    assert (cross_fit["judge_calls"] > 0) == (search["judge_calls"] == 0)
    genetic = estimate(_config()).to_dict()
    assert e["total_calls"] < genetic["total_calls"] and e["max_calls"] >= e["total_calls"]


def test_the_split_line_names_the_parts_and_the_samples_judged_in_them(capsys):
    assert main(["estimate", str(ROOT / "configs" / "synthetic_2000.yaml")]) == 0
    split = next(line for line in capsys.readouterr().out.splitlines() if "split:" in line)
    assert "1,400 train (judged on 48), 600 validation (judged on 64)" in split
    assert main(["estimate", str(ROOT / "configs" / "answer_correctness.yaml")]) == 0
    split = next(line for line in capsys.readouterr().out.splitlines() if "split:" in line)
    assert "18 usable annotations, small data" in split and "out-of-bag" in split
    assert "0 validation" not in split


def test_no_llm_is_called_even_inside_a_running_event_loop(monkeypatch):
    async def refuse(self, request):
        raise AssertionError("estimate called an LLM")

    monkeypatch.setattr(BaseLLMClient, "complete", refuse)

    async def inside_a_loop() -> int:
        return estimate(_config()).total_calls

    assert asyncio.run(inside_a_loop()) > 0


def test_runs_with_nothing_to_learn_stop_early_and_hard_ones_run_every_generation():
    noiseless = {"provider": "fake", "noise": 0.0}
    easy = estimate(_synthetic(disagreement=0.0, llm=noiseless))
    noisy = estimate(_synthetic(disagreement=0.0))  # judge noise leaves errors: stops by patience
    hard = estimate(_synthetic(disagreement=0.4))
    assert easy.generations == 0 and easy.seed_error_rate < 0.05
    assert 0 < noisy.generations < 4
    assert hard.generations >= max(3, noisy.generations)  # much to learn: it runs (nearly) every generation
    assert hard.total_calls > noisy.total_calls > easy.total_calls


def test_patience_shortens_a_run_that_stalls():
    assert estimate(_synthetic(n=60, disagreement=0.1, optimizer={"patience": 1})).generations < 4


def test_a_call_budget_caps_the_run_and_a_tiny_one_is_refused():
    unbounded = estimate(_config())
    cap = unbounded.total_calls * 2 // 3
    capped = estimate(_synthetic(budget={"max_calls": cap}))
    assert capped.total_calls <= cap and capped.generations < unbounded.generations
    with pytest.raises(BudgetExceededError, match="max_calls=50"):
        estimate(_synthetic(budget={"max_calls": 50}))


def test_each_judge_of_an_ensemble_is_a_call():
    noiseless = {"provider": "fake", "noise": 0.0}  # the same course of the run, so 3x the judge calls
    one = estimate(_synthetic(llm=noiseless))
    metric = {"name": "answer_correctness", "definition": AC_DEFINITION, "num_judges": 3}
    three = estimate(_synthetic(metric=metric, llm=noiseless))
    assert three.judge_calls == pytest.approx(3 * one.judge_calls, abs=3)
    assert three.meta_calls == one.meta_calls


def test_prices_give_a_cost_and_an_unpriced_real_model_an_unknown_one():
    priced = _synthetic(llm={"provider": "fake", "prices": {"fake": {"prompt": 1.0, "completion": 2.0}}})
    e = estimate(priced)
    assert e.cost_usd == pytest.approx((e.prompt_tokens * 1.0 + e.completion_tokens * 2.0) / 1e6, rel=1e-3)
    unpriced = _synthetic(llm={"provider": "openai", "model": "my-local-model"})
    assert estimate(unpriced).cost_usd is None


def test_a_common_model_is_priced_from_the_dated_table(capsys):
    listed = estimate(_synthetic(llm={"provider": "openai", "model": "gpt-4o-mini"}))
    price = PRICE_TABLE["gpt-4o-mini"]
    expected = (listed.prompt_tokens * price.prompt + listed.completion_tokens * price.completion) / 1e6
    assert listed.cost_usd == pytest.approx(expected, rel=1e-3)
    argv = [
        "estimate",
        str(ROOT / "configs" / "answer_correctness.yaml"),
        "-q",
        "--set",
        "llm.provider=openai",
    ]
    assert main([*argv, "--set", "llm.model=gpt-4o-mini"]) == 0
    assert f"per 1M tokens, from the price table of {PRICE_TABLE_DATE})" in capsys.readouterr().out
    assert main([*argv, "--set", "llm.model=my-local-model"]) == 0
    assert (
        "cost: unknown (no price for 'my-local-model' in llm.prices or the price table"
        in capsys.readouterr().out
    )


def test_options_that_remove_work_remove_calls():
    base = estimate(_config())
    assert estimate(_config(reverse_engineer=False)).meta_calls < base.meta_calls
    assert estimate(_config(minibatch_size=0)).judge_calls > base.judge_calls  # no screening
    assert estimate(_config(max_train_samples=20)).train == 20
    assert estimate(_config(mutation_weight=0.0)).meta_calls < base.meta_calls  # crossover: 1 call
    single = estimate(_config(population_size=1))
    assert single.generations == 0 and single.meta_calls == 0


def test_too_few_annotations_is_the_runs_error(tmp_path):
    data = ROOT / "benchmarks" / "data" / "edited_chain_runs.json"
    config = load_run_config(ROOT / "configs" / "answer_correctness.yaml")
    few = config.model_copy(update={"dataset": _truncated(data, tmp_path, keep=5)})
    with pytest.raises(InsufficientDataError, match="5 usable"):
        estimate(few)


def _truncated(source: Path, tmp_path: Path, *, keep: int) -> Path:
    data = json.loads(source.read_text())
    name = next(iter(data))
    path = tmp_path / "few.json"
    path.write_text(json.dumps({name: data[name][:keep]}))
    return path


def test_embedding_calls_are_counted_apart_from_llm_calls() -> None:
    embeddings = {"model": "m", "batch_size": 32}
    tfidf = estimate(_config(strategy="examples", examples={"policy": "retrieval"}))
    embedded = estimate(
        _config(
            strategy="examples",
            examples={"policy": "retrieval", "similarity": "embeddings", "embeddings": embeddings},
        )
    )
    assert tfidf.embedding_calls == 0
    n = len(
        {(s.metric_input["user_input"], s.metric_input["response"]) for s in load_dataset(_config()).samples}
    )
    assert embedded.embedding_calls == -(-n // 32) > 0
    assert embedded.total_calls == tfidf.total_calls  # not LLM calls, not in the budget
    genetic = estimate(
        _config(examples={"policy": "retrieval", "similarity": "embeddings", "embeddings": embeddings})
    )
    assert genetic.embedding_calls == 0  # strategy genetic shows no example


def test_the_disagreement_line_is_the_recorded_judges(capsys):
    """estimate's "disagrees on" figure is the one `promptevolver agreement` measures (it used to
    print the train focus set's capped share, 66.7 % for every file with many disagreements)."""
    from promptevolver.cli import main as cli

    config = str(ROOT / "configs" / "answer_correctness.yaml")
    assert cli(["agreement", config, "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert cli(["estimate", config, "--json"]) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["recorded_disagreement"] == round(measured["disagreement_rate"], 4) == round(2 / 18, 4)
    assert e["recorded_scored"] == measured["n"] == 18
    assert cli(["estimate", config]) == 0
    assert "disagrees with the humans on 11.1% of the 18 usable samples" in capsys.readouterr().out


def _usage(config: RunConfig, seed: int) -> tuple[dict[str, int], dict[str, Any]]:
    """(judge and meta calls, the run's result.json ``stages``) of one run of ``config``."""
    config = config.model_copy(update={"random_seed": seed})
    opt, dataset = config.effective_optimizer(), load_dataset(config)
    llm = build_llm(config.llm, dataset=dataset, random_seed=opt.random_seed)
    result = GeneticOptimizer(metric=build_metric(config.metric), llm=llm).optimize(
        dataset=dataset, loss=build_loss(config.loss), config=opt
    )
    return result.usage["llm_calls"], result.stages


@pytest.mark.parametrize(("n", "generator"), [(25, 4), (50, 5), (80, 6)])
def test_small_data_with_a_refit_is_estimated_within_15_percent(n, generator):
    """Below ``refit_below`` (cross-validated recipe, refit on every correction) on synthetic sets
    the model was not fitted on (benchmarks/perf/estimate_accuracy.py fits generator seeds 1-3):
    the judge calls within 10 % and all calls within 15 % of the mean of 3 seeds (they erred by
    up to 69 % before the folds, the idle folds' seed verdicts and the judged focus set were
    modelled; the meta calls, which vary from seed to seed with the ladders, within 35 %)."""
    config = _synthetic(n=n, optimizer={"strategy": "auto"})
    source = config.dataset.synthetic.model_copy(update={"random_seed": generator})
    config = config.model_copy(update={"dataset": config.dataset.model_copy(update={"synthetic": source})})
    e = estimate(config)
    runs = [_usage(config, seed)[0] for seed in range(3)]
    judge, meta = (statistics.fmean(r[kind] for r in runs) for kind in ("judge", "meta"))
    assert abs(e.judge_calls / judge - 1) <= 0.10, (e.judge_calls, judge)
    assert abs(e.meta_calls / meta - 1) <= 0.35, (e.meta_calls, meta)
    assert abs(e.total_calls / (judge + meta) - 1) <= 0.15, (e.total_calls, judge + meta)


def test_a_refit_judges_its_train_focus_set_and_the_estimate_says_so(capsys):
    """Out of bag every usable sample teaches, but a candidate is judged on the train focus set,
    at most ``max_train_samples`` of them (the estimate expected every usable one: 65 judge calls
    a run were expected as 74-123 on sets of 60-98 annotations)."""
    config = _synthetic(n=80, optimizer={"strategy": "auto", "max_train_samples": 40})
    e = estimate(config)
    _, stages = _usage(config, 0)
    judged = stages["verify"]["final_choice"]["judged_by"]
    assert e.train == len(judged) == 40 and e.usable == 80 and e.validation == 0
    path = ROOT / "configs" / "helpfulness_rubric.yaml"
    assert main(["estimate", str(path), "--set", "optimizer.max_train_samples=40"]) == 0
    split = next(line for line in capsys.readouterr().out.splitlines() if "split:" in line)
    assert "98 usable annotations" in split and "each candidate judged on 40 of them" in split
