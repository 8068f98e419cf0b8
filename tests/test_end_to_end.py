"""The whole job: the bundled answer_correctness file, the simulated judge, the CLI, result.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import promptevolver
from promptevolver import BinaryMetricLoss, GeneticOptimizer
from promptevolver.cli import main
from promptevolver.llm import SimulatedJudgeLLM

from .conftest import AC_FILE, ROOT

CONFIG = ROOT / "configs" / "answer_correctness.yaml"
CONTRACT_KEYS = {
    "metric",
    "seed_instructions",
    "best_instructions",
    "loss",
    "scores",
    "history",
    "usage",
    "config",
    "random_seed",
    "duration_s",
}


def _result(directory: Path) -> dict:
    return json.loads((directory / "result.json").read_text())


def _without_timing(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("duration_s", "stage_seconds")}


def test_cli_run_writes_the_result_contract(tmp_path, capsys):
    assert main(["optimize", str(CONFIG), "--output", str(tmp_path / "ac")]) == 0
    printed = capsys.readouterr().out
    result = _result(tmp_path / "ac")
    assert set(result) >= CONTRACT_KEYS
    assert result["metric"] == "answer_correctness"
    assert set(result["best_instructions"]) == {"single_turn_aspect_critic_prompt"}
    scores = result["scores"]
    honest = "cross_validated" if "cross_validated" in scores["best"] else "validation"
    assert scores["best"][honest] >= scores["seed"][honest]
    assert result["loss"] == {"name": "BinaryMetricLoss", "metric": "accuracy", "higher_is_better": True}
    usage = result["usage"]
    assert usage["llm_calls"]["judge"] == usage["calls_by_operation"]["judge"] > 0
    assert usage["llm_calls"]["meta"] == sum(
        n for op, n in usage["calls_by_operation"].items() if op != "judge"
    )
    assert [h["generation"] for h in result["history"]] == list(range(len(result["history"])))
    assert result["split"]["regime"] == "out-of-bag" and result["split"]["train"] == 18
    assert "small data" in result["split"]["note"]  # every annotation learned from and chosen on: said
    assert f"cross-validated {scores['best']['cross_validated']:.3f}" in printed  # the honest figure, named
    assert f"{usage['llm_calls']['judge']} judge" in printed


def test_same_seed_gives_identical_result_json(tmp_path):
    for name in ("a", "b"):
        assert main(["optimize", str(CONFIG), "--output", str(tmp_path / name), "-q"]) == 0
    a, b = _result(tmp_path / "a"), _result(tmp_path / "b")
    assert _without_timing(a) == _without_timing(b)
    assert main(["optimize", str(CONFIG), "--output", str(tmp_path / "c"), "-q", "--seed", "11"]) == 0
    c = _result(tmp_path / "c")

    def run_of(r: dict) -> dict:  # what the run did, without the seed it was given
        return {k: v for k, v in _without_timing(r).items() if k not in ("config", "random_seed")}

    # another seed draws other samples, folds and answers (here at least the seed's fresh
    # judgements: the samples its prediction-powered figure was drawn from)
    assert run_of(c) != run_of(a)


def test_result_does_not_depend_on_concurrency(ac_dataset, ac_metric):
    dumps = []
    for concurrency in (1, 32):
        llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=5)
        result = GeneticOptimizer(metric=ac_metric, llm=llm).optimize(
            dataset=ac_dataset,
            loss=BinaryMetricLoss(),
            config={"random_seed": 5, "max_concurrency": concurrency},
        )
        dumps.append(_without_timing(result.to_dict()) | {"config": None})
    assert dumps[0] == dumps[1]


def test_optimizer_improves_train_agreement_on_bundled_file(ac_dataset, ac_metric):
    improved = 0
    for seed in range(4):
        llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=seed)
        result = GeneticOptimizer(metric=ac_metric, llm=llm).optimize(
            dataset=ac_dataset, loss=BinaryMetricLoss(), config={"random_seed": seed, "strategy": "genetic"}
        )
        assert result.scores["best"]["validation"] >= result.scores["seed"]["validation"]
        improved += max(h["best_train"] for h in result.history) > result.history[0]["mean_train"]
    assert improved >= 3


def test_the_default_pipeline_improves_held_out_agreement_on_bundled_file(ac_dataset, ac_metric):
    """Over 12 seeds the refit's cross-validated agreement beats the seed's on average and more
    often than not; where it is below the seed's (one or two samples of 18), the folds did not say
    with probability 0.9 that the recipe hurts, so the refit was kept and its figure is shown as
    measured (the rule of docs/pipeline.md §1b), never hidden."""
    seeds, bests, improved, worse = [], [], 0, 0
    for seed in range(12):
        llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=seed)
        result = GeneticOptimizer(metric=ac_metric, llm=llm).optimize(
            dataset=ac_dataset, loss=BinaryMetricLoss(), config={"random_seed": seed}
        )
        seed_val, best_val = result.held_out["seed"], result.held_out["best"]
        assert result.held_out["kind"] == "cross-validated"  # 18 annotations: the recipe refit on all
        assert result.stages["distill"]["judge_calls"] == 0
        seeds.append(seed_val)
        bests.append(best_val)
        improved += best_val > seed_val
        if best_val < seed_val:
            worse += 1
            # kept below the seed only because the folds did not say it hurts: a run that kept a
            # refit the folds said hurts (the rule broken, or its threshold not applied) fails here
            assert 1.0 - result.final_choice["p_better"] < result.final_choice["hurt_threshold"]
    assert sum(bests) > sum(seeds) and improved > worse and improved >= 4


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.unlink(), "file not found"),
        (lambda d: d.write_text("{not json"), "not valid JSON"),
        (
            lambda d: d.write_text(
                json.dumps({"answer_correctness": [{"metric_output": 1, "is_accepted": True}]})
            ),
            "sample 0",
        ),
        (
            lambda d: d.write_text(
                json.dumps({"other_metric": json.loads(AC_FILE.read_text())["answer_correctness"]})
            ),
            "metrics present",
        ),
        (
            lambda d: d.write_text(
                json.dumps({"answer_correctness": json.loads(AC_FILE.read_text())["answer_correctness"][:8]})
            ),
            "usable annotations",
        ),
    ],
    ids=[
        "missing-file",
        "malformed-json",
        "missing-metric-input",
        "metric-not-in-file",
        "too-few-annotations",
    ],
)
def test_bad_input_gets_one_clear_error_line(tmp_path, capsys, mutate, expected):
    data = tmp_path / "data.json"
    shutil.copy(AC_FILE, data)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.read_text().replace("../benchmarks/data/edited_chain_runs.json", "data.json"))
    mutate(data)
    assert main(["optimize", str(config), "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("promptevolver: error:") and "\n" not in err
    assert expected in err and "data.json" in err
    if expected == "sample 0":
        assert "metric_input" in err


def test_config_typo_names_file_and_key(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.read_text().replace("population_size", "populaton_size"))
    assert main(["optimize", str(config), "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "config.yaml" in err and "optimizer.populaton_size" in err and "unknown key" in err


def test_usage_errors_exit_2(capsys):
    assert main(["optimize"]) == 2
    assert "--resume" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["optimize", "--bogus-flag"])
    assert exc.value.code == 2


def test_cli_resume_of_a_finished_run_gives_the_same_choice(tmp_path):
    assert main(["optimize", str(CONFIG), "--output", str(tmp_path / "run"), "-q"]) == 0
    first = _result(tmp_path / "run")
    assert {"checkpoint.json", "best_so_far.json", "config.yaml"} <= {
        p.name for p in (tmp_path / "run").iterdir()
    }
    assert main(["optimize", "--resume", str(tmp_path / "run"), "-q"]) == 0
    again = _result(tmp_path / "run")
    assert again["best_instructions"] == first["best_instructions"]
    assert again["history"] == first["history"] and again["lineage"] == first["lineage"]


def test_public_names():
    for name in (
        "GeneticOptimizer",
        "AspectCritic",
        "BinaryMetricLoss",
        "MSELoss",
        "MetricAnnotation",
        "SingleMetricAnnotation",
        "SampleAnnotation",
        "PromptAnnotation",
    ):
        assert name in promptevolver.__all__ and hasattr(promptevolver, name)
    from promptevolver.llm import OpenAIClient, ScriptedLLM, SimulatedJudgeLLM  # noqa: F401
