"""Metric types and synthetic dataset kinds in the run config, and the objects they build."""

from __future__ import annotations

import json
import runpy
from typing import Any

import pytest
from pydantic import ValidationError

from promptevolver import AspectCritic, JudgeEnsemble, RubricJudge, SingleMetricAnnotation, StatementSupport
from promptevolver.config._build import build_metric, load_dataset
from promptevolver.config._models import MetricConfig, RunConfig, SyntheticDatasetConfig
from promptevolver.judge._statements import DEFAULT_DEFINITION
from promptevolver.runs._export import apply_snippet


def run_config(metric: dict[str, Any], synthetic: dict[str, Any], loss: str = "mse") -> RunConfig:
    return RunConfig.model_validate(
        {"dataset": {"synthetic": synthetic}, "metric": metric, "loss": {"type": loss}}
    )


def test_a_rubric_config_builds_a_rubric_judge_with_its_scale():
    config = MetricConfig(
        type="rubric", name="h", definition="Helpful?", score_range=(0, 10), rubrics={0: "none", 10: "all"}
    )
    judge = build_metric(config)
    assert isinstance(judge, RubricJudge) and judge.score_range == (0.0, 10.0) and judge.discrete
    assert "- score 10: all" in judge.get_instructions()[RubricJudge.PROMPT_NAME]
    continuous = build_metric(
        MetricConfig(type="rubric", name="h", definition="d", score_range=(0, 1), discrete=False)
    )
    assert isinstance(continuous, RubricJudge) and continuous.levels is None


def test_a_statement_support_config_builds_the_two_prompt_metric_with_its_default_definition():
    config = MetricConfig.model_validate({"type": "statement_support", "name": "faithfulness"})
    assert config.definition == DEFAULT_DEFINITION == StatementSupport().definition
    judge = build_metric(config)
    assert isinstance(judge, StatementSupport) and judge.calls_per_evaluation == 2


def test_numeric_ensembles_average_by_default_and_refuse_a_majority_vote():
    ensemble = build_metric(MetricConfig(type="rubric", name="h", definition="d", num_judges=3))
    assert isinstance(ensemble, JudgeEnsemble) and ensemble.aggregation_method == "mean"
    binary = build_metric(MetricConfig(name="h", definition="d", num_judges=3))
    assert isinstance(binary, JudgeEnsemble) and binary.aggregation_method == "majority"
    with pytest.raises(ValidationError, match="majority"):
        MetricConfig(
            type="statement_support", name="f", definition="d", num_judges=3, aggregation_method="majority"
        )


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ({"name": "h", "definition": "d", "score_range": (1, 5)}, "for type 'rubric' only"),
        ({"type": "rubric", "name": "h", "definition": "d", "score_range": (5, 1)}, "low < high"),
        ({"type": "nope", "name": "h", "definition": "d"}, "type"),
    ],
)
def test_invalid_metric_keys_are_named(metric, message):
    with pytest.raises(ValidationError, match=message):
        MetricConfig.model_validate(metric)


def test_a_numeric_metric_needs_the_mse_loss():
    with pytest.raises(ValidationError, match="use loss: {type: mse}"):
        run_config(
            {"type": "rubric", "name": "h", "definition": "d"}, {"kind": "rubric", "n_samples": 20}, "binary"
        )


def test_synthetic_kinds_generate_their_sets_with_the_spec_defaults_for_keys_not_given():
    rubric = load_dataset(
        run_config(
            {"type": "rubric", "name": "help", "definition": "d"},
            {"kind": "rubric", "n_samples": 40, "score_range": (0, 3)},
        )
    )
    scores = {s.prompts[RubricJudge.PROMPT_NAME].prompt_output["score"] for s in rubric}
    assert rubric.name == "help" and scores <= {0, 1, 2, 3}
    statements = load_dataset(
        run_config({"type": "statement_support", "name": "faith"}, {"kind": "statements", "n_samples": 25})
    )
    assert set(statements[0].prompts) == {StatementSupport.EXTRACTOR, StatementSupport.VERIFIER}
    binary = load_dataset(run_config({"name": "ac", "definition": "d"}, {"n_samples": 20}, "binary"))
    assert binary.is_binary and len(binary) == 20


def test_a_key_of_another_kind_is_an_error_naming_it():
    with pytest.raises(ValidationError, match="positive_rate: not a key of kind 'rubric'"):
        SyntheticDatasetConfig.model_validate({"kind": "rubric", "n_samples": 20, "positive_rate": 0.5})
    with pytest.raises(ValidationError, match="support_rate"):
        SyntheticDatasetConfig.model_validate({"n_samples": 20, "support_rate": 0.5})


@pytest.mark.parametrize(
    ("metric", "cls"),
    [
        (
            {"type": "rubric", "name": "h", "definition": "d", "rubrics": {1: "bad"}, "num_judges": 2},
            RubricJudge,
        ),
        ({"type": "statement_support", "name": "f"}, StatementSupport),
        ({"name": "a", "definition": "d"}, AspectCritic),
    ],
)
def test_the_apply_snippet_rebuilds_each_metric_type(tmp_path, metric, cls):
    config = MetricConfig.model_validate(metric)
    judge = build_metric(config)
    best = {name: f"Better {name}." for name in judge.get_prompts()}
    path = tmp_path / "apply.py"
    path.write_text(apply_snippet(best, config))
    built = runpy.run_path(str(path))["metric"]
    inner = built.metric if isinstance(built, JudgeEnsemble) else built
    assert isinstance(inner, cls) and built.get_instructions() == best
    assert repr(inner) == repr(judge.metric if isinstance(judge, JudgeEnsemble) else judge)


@pytest.mark.parametrize(
    "synthetic",
    [
        {"n_samples": 20},
        {"kind": "rubric", "n_samples": 20, "score_range": (0, 3)},
        {"kind": "statements", "n_samples": 12},
    ],
)
def test_a_dumped_config_reads_back_equal(synthetic):
    metric = (
        {"name": "m", "definition": "d"}
        if "kind" not in synthetic
        else {"type": "rubric", "name": "m", "definition": "d"}
    )
    config = run_config(metric, synthetic, "binary" if "kind" not in synthetic else "mse")
    again = RunConfig.model_validate(config.dump())
    assert again.dump() == config.dump() and again.dataset == config.dataset


def test_a_numeric_metric_type_loads_its_file_as_numeric_even_when_most_scores_are_whole(tmp_path):
    """A faithfulness score is often exactly 1.0; the 0.5 makes the file numeric on its own, and the
    metric type says the labels are numbers in [0, 1]."""
    inputs = {"user_input": "q", "response": "r", "retrieved_contexts": ["c"]}
    samples = [{"metric_input": inputs, "metric_output": v, "is_accepted": True} for v in [1.0] * 9 + [0.5]]
    path = tmp_path / "faithfulness.json"
    path.write_text(json.dumps({"faithfulness": samples}))
    assert SingleMetricAnnotation.from_json(path).kind == "numeric"  # no majority guess
    config = RunConfig.model_validate(
        {
            "dataset": str(path),
            "metric": {"type": "statement_support", "name": "faithfulness"},
            "loss": {"type": "mse"},
        }
    )
    dataset = load_dataset(config)
    assert dataset.kind == "numeric" and dataset.labels()[-1] == 0.5
