"""Pairwise and classification judges in a config: their keys belong to their type, the loss
follows the labels (named classes: the classification loss; never MSE), a one-prompt judge of any
type takes the file's prompt name, and the generated apply snippet rebuilds the judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from promptevolver import ClassificationJudge, ClassificationLoss, PairwiseJudge, RubricJudge
from promptevolver.config._build import build_loss, build_metric, load_dataset, resolve_prompt
from promptevolver.config._models import AnnotatorsConfig, MetricConfig, RunConfig, load_run_config

from ..conftest import ROOT


def run(metric: dict[str, Any], **extra: Any) -> RunConfig:
    return RunConfig.model_validate({"dataset": "x.json", "metric": metric, **extra})


def test_pairwise_and_classification_build_their_judges_and_default_losses():
    three = run({"type": "pairwise", "name": "p", "definition": "better?"})
    assert three.loss.type == "classification" and three.metric.is_nominal and not three.metric.is_binary
    judge = build_metric(three.metric)
    assert isinstance(judge, PairwiseJudge) and judge.ties and not judge.order_swap
    binary = run({"type": "pairwise", "name": "p", "definition": "d", "ties": False, "order_swap": True})
    assert binary.loss.type == "binary" and binary.metric.is_binary
    assert build_metric(binary.metric).calls_per_evaluation == 2
    classes = run(
        {"type": "classification", "name": "c", "definition": "d", "labels": ["x", "y"]},
        loss={"type": "classification", "metric": "macro_f1"},
    )
    assert isinstance(build_metric(classes.metric), ClassificationJudge)
    loss = build_loss(classes.loss)
    assert isinstance(loss, ClassificationLoss) and loss.metric == "macro_f1"


@pytest.mark.parametrize(
    ("metric", "loss", "message"),
    [
        (
            {"type": "pairwise", "name": "p", "definition": "d"},
            {"type": "mse"},
            "answers named classes; use loss: {type: classification}",
        ),
        (
            {"type": "classification", "name": "c", "definition": "d", "labels": ["x", "y"]},
            {"type": "binary"},
            "use loss: {type: classification}",
        ),
        (
            {"type": "rubric", "name": "r", "definition": "d"},
            {"type": "classification"},
            "scores numbers; use loss: {type: mse}",
        ),
        (
            {"type": "classification", "name": "c", "definition": "d"},
            None,
            "at least two distinct class names",
        ),
        (
            {"type": "classification", "name": "c", "definition": "d", "labels": ["x", "x"]},
            None,
            "at least two distinct",
        ),
        (
            {"type": "aspect_critic", "name": "a", "definition": "d", "labels": ["x", "y"]},
            None,
            "labels: for type 'classification' only",
        ),
        (
            {"type": "rubric", "name": "r", "definition": "d", "ties": False},
            {"type": "mse"},
            "ties: for type 'pairwise' only",
        ),
        (
            {"type": "pairwise", "name": "p", "definition": "d", "num_judges": 3},
            None,
            "ensemble of type 'pairwise'",
        ),
    ],
)
def test_a_config_that_does_not_fit_its_judge_names_the_key(metric, loss, message):
    extra = {} if loss is None else {"loss": loss}
    with pytest.raises(
        ValidationError, match=message.replace("{", r"\{").replace("}", r"\}").replace("(", r"\(")
    ):
        run(metric, **extra)


def test_a_classification_loss_takes_accuracy_or_macro_f1_only():
    with pytest.raises(ValidationError, match="a classification loss takes accuracy or macro_f1"):
        run(
            {"type": "pairwise", "name": "p", "definition": "d"},
            loss={"type": "classification", "metric": "f1_score"},
        )
    with pytest.raises(ValidationError, match="a binary loss takes accuracy or f1_score"):
        run(
            {"type": "aspect_critic", "name": "p", "definition": "d"},
            loss={"type": "binary", "metric": "macro_f1"},
        )


def _rubric_file(tmp_path: Path, prompt: str) -> Path:
    samples = [
        {
            "metric_input": {"user_input": f"q{i}", "response": f"r{i}"},
            "metric_output": 1 + i % 5,
            "is_accepted": True,
            "prompts": {prompt: {"prompt_input": {}, "prompt_output": {"reason": "ok", "score": 1 + i % 5}}},
        }
        for i in range(20)
    ]
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({"helpfulness": samples}))
    return path


def test_a_rubric_judge_takes_the_files_prompt_name(tmp_path):
    """A score-type judge used to need its file's prompt renamed to single_turn_simple_criteria_prompt."""
    path = _rubric_file(tmp_path, "my_score_prompt")
    config = RunConfig.model_validate(
        {
            "dataset": str(path),
            "metric": {"type": "rubric", "name": "helpfulness", "definition": "d"},
            "loss": {"type": "mse"},
        }
    )
    dataset = load_dataset(config)
    match = resolve_prompt(config, dataset)
    assert match.rename == "my_score_prompt" and match.how == "only"
    judge = build_metric(config.metric, prompt_name=match.rename)
    assert isinstance(judge, RubricJudge) and list(judge.get_prompts()) == ["my_score_prompt"]


def test_the_bundled_pairwise_configs_load_with_their_judges_label_space():
    for name, kind in (("pandalm_pairwise", "nominal"), ("llmbar_pairwise", "binary")):
        config = load_run_config(ROOT / "configs" / f"{name}.yaml")
        dataset = load_dataset(config)
        assert dataset.kind == kind and resolve_prompt(config, dataset).rename == PairwiseJudge.PROMPT_NAME
        assert MetricConfig.model_validate(config.metric.model_dump()).type == "pairwise"


def test_split_items_drop_leaves_out_the_samples_the_annotators_disagree_on():
    config = load_run_config(ROOT / "configs" / "pandalm_pairwise.yaml")
    kept = load_dataset(config)
    dropped = load_dataset(config.model_copy(update={"annotators": AnnotatorsConfig(split_items="drop")}))
    split = [s for s in kept if len(set(s.annotator_labels().values())) > 1]
    assert len(dropped) == len(kept) - len(split) == 879
    assert all(len(set(s.annotator_labels().values())) == 1 for s in dropped)
    with pytest.raises(ValidationError, match="split_items"):
        RunConfig.model_validate(
            {
                "dataset": "x.json",
                "metric": {"name": "m", "definition": "d"},
                "annotators": {"split_items": "weight"},
            }
        )
