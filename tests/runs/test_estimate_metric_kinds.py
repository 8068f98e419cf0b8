"""Cost estimates of the numeric and two-prompt metrics: calls per evaluation and prompts per
candidate come from the metric, and the expected calls stay within ±25 % of actual runs."""

from __future__ import annotations

import statistics
import warnings

import pytest

from promptevolver.config.models import load_run_config
from promptevolver.runs.estimate import estimate

from ..conftest import ROOT
from .test_estimate import _actual_calls


def _config(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bundled files list their unusable samples
        return load_run_config(ROOT / "configs" / f"{name}.yaml")


@pytest.mark.parametrize("name", ["helpfulness_rubric", "faithfulness_statements"])
def test_expected_calls_are_within_25_percent_of_actual_runs(name):
    config = _config(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = estimate(config).total_calls
        actual = statistics.fmean(_actual_calls(config, seed) for seed in config.seeds or [42])
    assert abs(expected / actual - 1) <= 0.25, (name, expected, actual)


def test_the_two_prompt_metric_costs_two_judge_calls_an_evaluation_and_a_meta_call_a_prompt():
    config = _config("faithfulness_statements")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        two = estimate(config)
        rubric = estimate(_config("helpfulness_rubric"))
    seed_train = two.train * 2  # the seed's train evaluation alone: 2 calls a sample
    initial = two.phases[0]
    assert initial["judge_calls"] >= seed_train
    assert initial["meta_calls"] % 2 == 0 and initial["meta_calls"] > 0  # 2 per reverse-engineered one
    assert rubric.phases[0]["judge_calls"] >= rubric.train
    assert two.max_calls >= two.total_calls
    assert 0 < two.seed_error_rate < 1 and 0 < rubric.seed_error_rate < 1
