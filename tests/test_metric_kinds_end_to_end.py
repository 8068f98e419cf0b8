"""``promptevolver optimize`` on the bundled rubric and two-prompt configs: MSELoss minimised, the
chosen candidate never worse than the seed on held-out samples, both prompts optimized, the run
directory complete."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from promptevolver import UnusableSamplesWarning
from promptevolver.cli import main
from promptevolver.config._build import build_llm, build_metric, load_dataset
from promptevolver.config._models import load_run_config
from promptevolver.evaluation._agreement import agreement_of
from promptevolver.evaluation._evaluator import Evaluator

from .conftest import ROOT

RUBRIC = ROOT / "configs" / "helpfulness_rubric.yaml"
STATEMENTS = ROOT / "configs" / "faithfulness_statements.yaml"


def optimize(config: Path, out: Path, *overrides: str) -> dict:
    args = ["optimize", str(config), "--output", str(out)]
    for item in overrides:
        args += ["--set", item]
    assert main(args) == 0
    return dict(json.loads((out / "result.json").read_text()))


@pytest.mark.parametrize("config", [RUBRIC, STATEMENTS], ids=["rubric", "statements"])
def test_a_numeric_metric_is_optimized_with_mse_and_never_chosen_worse_than_the_seed(tmp_path, config):
    result = optimize(config, tmp_path / "run")
    assert result["loss"] == {"name": "MSELoss", "reduction": "mean", "higher_is_better": False}
    seed, best = result["scores"]["seed"], result["scores"]["best"]
    honest = "cross_validated" if "cross_validated" in best else "validation"  # small data: a refit
    assert best[honest] <= seed[honest]
    if result["stages"].get("search", {}).get("ran"):
        assert best["train"] < seed["train"], "the search found a lower train MSE"
    else:  # the pipeline judged held-out samples only: train is not measured, and says so
        assert best[honest] < seed[honest] and best["train"] is None
    assert result["best_instructions"].keys() == result["seed_instructions"].keys()
    assert result["usage"]["llm_calls"]["judge"] > 0 and result["usage"]["llm_calls"]["meta"] > 0
    assert [u["reason"] for u in result["split"]["unusable"]] == [
        "rejected sample of a non-binary metric without a target"
    ] * len(result["split"]["unusable"])
    assert result["split"]["unusable"], "the bundled files hold rejected samples without a target"
    for name in ("report.md", "report.html", "best_instructions.json", "apply_best.py"):
        assert (tmp_path / "run" / name).is_file()


def test_the_two_prompt_metric_improves_both_prompts_and_its_score_is_reproducible(tmp_path):
    result = optimize(STATEMENTS, tmp_path / "a")
    changed = {n for n, text in result["best_instructions"].items() if text != result["seed_instructions"][n]}
    assert changed == {"statement_generator_prompt", "n_l_i_statement_prompt"}
    again = optimize(STATEMENTS, tmp_path / "b")
    assert again["best_instructions"] == result["best_instructions"]
    assert again["scores"] == result["scores"] and again["usage"]["llm_calls"] == result["usage"]["llm_calls"]


def test_the_chosen_rubric_instructions_score_lower_mse_when_judged_again(tmp_path):
    """The result's held-out MSE is what a fresh judge gets there: the best instructions on the
    validation samples, or, for a refit on small data, each fold's candidate on its own fold (the
    cross-validated figure, ``final_choice.judged_by``)."""
    result = optimize(RUBRIC, tmp_path / "run")
    config = load_run_config(RUBRIC)
    with pytest.warns(UnusableSamplesWarning, match="non-binary metric without a target"):
        dataset = load_dataset(config)
    llm = build_llm(config.llm, dataset=dataset, random_seed=result["random_seed"])
    evaluator = Evaluator(metric=build_metric(config.metric), llm=llm, dataset=dataset, max_concurrency=8)
    judged_by = {int(p): c for p, c in (result["final_choice"].get("judged_by") or {}).items()}
    lineage = {c["id"]: c["instructions"] for c in result["lineage"]}
    if judged_by:  # a refit: its figure is cross-validated, each sample judged by a fold's candidate
        positions = sorted(judged_by)
        focus = result["split"]["focus"]["train"]
        weights = dict(zip(focus["positions"], focus["weights"]))
        sources = {"seed": {p: 0 for p in positions}, "best": judged_by}
        honest = "cross_validated"
    else:
        positions = result["split"]["validation_positions"]
        weights, honest = None, "validation"
        sources = {"seed": {p: 0 for p in positions}, "best": {p: result["best_id"] for p in positions}}
    figures = {}
    for who in ("seed", "best"):
        judged = {}
        for c in set(sources[who].values()):
            mine = [p for p in positions if sources[who][p] == c]
            judged.update(asyncio.run(evaluator.evaluate(lineage[c], mine)))
        figures[who] = agreement_of(judged, positions, dataset.labels(), binary=False, weights=weights)
        assert figures[who].mse == pytest.approx(result["scores"][who][honest])
    assert figures["best"].mse is not None and figures["seed"].mse is not None
    assert figures["best"].mse < figures["seed"].mse
    assert figures["best"].ordinal and figures["best"].within_one is not None
