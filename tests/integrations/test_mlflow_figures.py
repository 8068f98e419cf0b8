"""The figures an MLflow run gets are read from result.json under the loss's own name; a figure the run
did not measure is left out, never logged as 0 (no MLflow needed)."""

from __future__ import annotations

import math

import pytest

from promptevolver.integrations.mlflow import run_figures

USAGE = {"llm_calls": {"judge": 10, "meta": 2}, "prompt_tokens": 100, "completion_tokens": 7, "cost_usd": 0.0}


@pytest.mark.parametrize(
    ("loss", "name"),
    [
        ({"name": "BinaryMetricLoss", "metric": "accuracy", "higher_is_better": True}, "accuracy"),
        ({"name": "BinaryMetricLoss", "metric": "f1_score", "higher_is_better": True}, "f1"),
        ({"name": "MSELoss", "reduction": "mean", "higher_is_better": False}, "mse"),
        ({"name": "MSELoss", "reduction": "sum", "higher_is_better": False}, "sum_of_squared_errors"),
    ],
)
def test_figures_carry_the_losss_name_and_skip_what_was_not_measured(loss, name):
    result = {
        "loss": loss,
        "scores": {
            "seed": {"train": 0.5, "validation": None},
            "best": {"train": math.nan, "validation": 0.75},
        },
        "usage": USAGE,
        "duration_s": 3.5,
    }
    figures = run_figures(result)
    assert figures == {
        f"seed_train_{name}": 0.5,
        f"chosen_validation_{name}": 0.75,
        "judge_calls": 10,
        "meta_calls": 2,
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "duration_s": 3.5,
    }  # no cost_usd without prices, no n/a validation, no NaN


def test_a_priced_run_logs_its_cost():
    figures = run_figures({"usage": {**USAGE, "cost_usd": 0.0125}})
    assert figures["cost_usd"] == 0.0125
