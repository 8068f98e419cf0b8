"""Pairwise and classification judges end to end on the bundled public files (PandaLM: a / b /
tie with three annotators; LLMBar: is a better, judged in both orders) and a small classification
file: ``optimize`` runs, the split keeps each prompt's pairs on one side, the report shows the
recorded judge and the named-class matrices, ``evaluate`` scores exactly the held-out samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptevolver.cli import main
from promptevolver.config._build import load_dataset
from promptevolver.config._models import load_run_config

from .conftest import ROOT

PANDALM = ROOT / "configs" / "pandalm_pairwise.yaml"
LLMBAR = ROOT / "configs" / "llmbar_pairwise.yaml"


def optimize(config: Path, out: Path, *overrides: str) -> dict:
    args = ["optimize", str(config), "--output", str(out), "-q"]
    for item in overrides:
        args += ["--set", item]
    assert main(args) == 0
    return dict(json.loads((out / "result.json").read_text()))


@pytest.fixture(scope="module")
def pandalm_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pairwise") / "pandalm"
    optimize(PANDALM, out, "optimizer.generations=1")
    return out


def test_a_three_way_pairwise_run_learns_with_the_classification_loss(pandalm_run):
    result = json.loads((pandalm_run / "result.json").read_text())
    assert result["loss"] == {"name": "ClassificationLoss", "metric": "accuracy", "higher_is_better": True}
    assert result["scores"]["seed"]["validation"] is not None
    dataset = load_dataset(load_run_config(PANDALM))
    groups = dataset.group_keys()
    validation = set(result["split"]["validation_positions"])
    train = [p for p in dataset.usable_indices() if p not in validation]
    assert not {groups[p] for p in validation} & {groups[p] for p in train}
    assert result["split"]["groups"] == len(set(groups))
    report = (pandalm_run / "report.md").read_text()
    assert "## The recorded judge (no LLM call)" in report and "accuracy 0.7156" in report
    assert "Fleiss' kappa 0.864" in report
    assert "| accuracy | macro F1 | Cohen's kappa |" in report and "MSE" not in report.split("## Pipeline")[0]
    assert "| human tie |" in report and "judge tie" in report


def test_evaluate_scores_exactly_the_samples_the_run_held_out(pandalm_run, capsys):
    result = json.loads((pandalm_run / "result.json").read_text())
    assert main(["evaluate", str(PANDALM), "-i", str(pandalm_run), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["split"] == "validation"
    assert card["n"] + card["failures"] == len(result["split"]["validation_positions"])
    assert card["nominal"] and card["classes"] == ["a", "b", "tie"]


def test_a_binary_pairwise_run_in_both_orders_reports_position_consistency(tmp_path, capsys):
    result = optimize(LLMBAR, tmp_path / "llmbar")
    capsys.readouterr()
    assert main(["evaluate", str(LLMBAR), "-i", str(tmp_path / "llmbar")]) == 0
    printed = capsys.readouterr().out
    assert "both orders: the same verdict on" in printed and "confusion (rows human b/a" in printed
    assert result["loss"]["name"] == "BinaryMetricLoss"
    report = (tmp_path / "llmbar" / "report.md").read_text()
    assert "Both orders (order_swap): the chosen judge named the same winner" in report
    assert "pairs both orders agree on, its accuracy is" in report
    assert "the same verdict on 0.589 of 414 pairs (position consistency)" in report  # the recorded judge
    assert "judge a" in report and "human b" in report


def test_a_classification_run_answers_class_names(tmp_path):
    labels = ["refund", "question", "complaint"]
    samples = []
    for i in range(90):
        truth = i % 3
        wrong = i % 9 == 0  # the recorded judge misses a refund asked for politely
        said = 1 if wrong else truth
        samples.append(
            {
                "metric_input": {
                    "user_input": f"ticket {i}: "
                    + ["please return my money", "how do I", "this is awful"][truth]
                    + f" ({i})"
                },
                "metric_output": truth,
                "is_accepted": not wrong,
                "target": truth,
                "prompts": {
                    "single_turn_classification_prompt": {
                        "prompt_input": {},
                        "prompt_output": {"reason": "it reads as a question", "label": labels[said]},
                        "edited_output": {
                            "reason": "asking for the money back is a refund",
                            "label": labels[truth],
                        }
                        if wrong
                        else None,
                    }
                },
            }
        )
    data = tmp_path / "tickets.json"
    data.write_text(json.dumps({"tickets": samples}))
    config = tmp_path / "tickets.yaml"
    metric = {
        "type": "classification",
        "name": "tickets",
        "definition": "What the ticket is",
        "labels": labels,
    }
    loss = {"type": "classification", "metric": "macro_f1"}
    config.write_text(json.dumps({"dataset": str(data), "metric": metric, "loss": loss}))  # JSON is YAML
    result = optimize(config, tmp_path / "run")
    assert result["loss"]["metric"] == "macro_f1"
    best = result["best_instructions"]["single_turn_classification_prompt"]
    assert "refund, question, complaint" in best
    assert main(["agreement", str(config), "--json"]) == 0


def test_the_python_api_runs_a_pairwise_judge_on_a_simulated_llm_it_builds_from_the_file():
    import warnings

    from promptevolver import ClassificationLoss, GeneticOptimizer, PairwiseJudge, SingleMetricAnnotation
    from promptevolver.llm import SimulatedJudgeLLM

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the file lists its samples without a recorded verdict
        dataset = SingleMetricAnnotation.from_json(ROOT / "benchmarks" / "data" / "pandalm_pairwise.json")
    dataset = dataset.select(range(240))
    judge = PairwiseJudge(name="pandalm", definition="Which response follows the instruction better?")
    llm = SimulatedJudgeLLM(
        dataset=dataset, random_seed=0, prompt_name=judge.prompt_name
    )  # a / b / tie, read off the file
    result = GeneticOptimizer(metric=judge, llm=llm).optimize(
        dataset=dataset, loss=ClassificationLoss(), config={"generations": 1, "random_seed": 0}
    )
    assert result.scores["seed"]["validation"] is not None and llm.known_share() == 1.0
    assert result.loss["name"] == "ClassificationLoss"


def test_a_meta_prompt_shows_a_label_as_the_judge_answers_it():
    from promptevolver import AspectCritic, ClassificationJudge, JudgeEnsemble, PairwiseJudge, RubricJudge
    from promptevolver.judge._protocol import label_entry

    assert label_entry(PairwiseJudge(name="p", definition="d"), 0.5, binary=False) == ("verdict", "tie")
    assert label_entry(
        ClassificationJudge(name="c", definition="d", labels=["x", "y"]), 1.0, binary=False
    ) == ("label", "y")
    assert label_entry(AspectCritic(name="a", definition="d"), 1.0, binary=True) == ("verdict", 1)
    assert label_entry(RubricJudge(name="r", definition="d"), 4.0, binary=False) == ("score", 4)
    ensemble = JudgeEnsemble(metric=PairwiseJudge(name="p", definition="d", ties=False), num_judges=3)
    assert label_entry(ensemble, 0.0, binary=True) == ("verdict", "b")


def test_a_loss_that_reads_named_classes_as_numbers_is_refused_before_any_call():
    from promptevolver import (
        BinaryMetricLoss,
        GeneticOptimizer,
        MSELoss,
        PairwiseJudge,
        SingleMetricAnnotation,
    )
    from promptevolver.llm import ScriptedLLM

    rows = [
        {
            "metric_input": {"user_input": f"q{i}", "response_a": "x", "response_b": "y"},
            "metric_output": [1, 0, 0.5][i % 3],
            "is_accepted": True,
        }
        for i in range(30)
    ]
    dataset = SingleMetricAnnotation.model_validate({"name": "p", "samples": rows})
    llm = ScriptedLLM(handler=lambda r: pytest.fail("an LLM call was made"))
    optimizer = GeneticOptimizer(metric=PairwiseJudge(name="p", definition="d"), llm=llm)
    for loss in (MSELoss(), BinaryMetricLoss()):
        with pytest.raises(ValueError, match="answers named classes.*use ClassificationLoss"):
            optimizer.optimize(dataset=dataset, loss=loss, config={"random_seed": 0})


def test_estimate_says_how_often_the_recorded_judge_disagrees(capsys):
    """It printed 66.7 % for every file with many disagreements (the train focus set's capped share)."""
    assert main(["estimate", str(LLMBAR)]) == 0
    assert "disagrees with the humans on 59.8% of the 418 usable samples" in capsys.readouterr().out
    assert main(["estimate", str(PANDALM)]) == 0
    assert "disagrees with the humans on 28.4% of the 974 usable samples" in capsys.readouterr().out


def test_suggest_names_a_pairwise_judges_verdicts(pandalm_run, capsys):
    capsys.readouterr()
    pool = ROOT / "benchmarks" / "data" / "pandalm_pairwise.json"
    assert main(["suggest", str(pandalm_run), "--pool", str(pool), "-n", "3", "--max-calls", "60"]) == 0
    whys = [json.loads(line)["why"] for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert whys and all(" says 0" not in w and " says 1" not in w and "agrees (0" not in w for w in whys)
    assert any(" says a" in w or " says b" in w or " says tie" in w or "agrees (" in w for w in whys)
