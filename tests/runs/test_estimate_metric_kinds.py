"""Cost estimates of the numeric and two-prompt metrics: calls per evaluation and prompts per
candidate come from the metric, and the expected calls stay within ±25 % of actual runs."""

from __future__ import annotations

import statistics
import warnings

from promptevolver.config.models import load_run_config
from promptevolver.runs.estimate import estimate

from ..conftest import ROOT
from .test_estimate import _actual_calls


def _config(name: str):
    """The bundled config with the genetic search (the cost model of operators this file tests)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bundled files list their unusable samples
        config = load_run_config(ROOT / "configs" / f"{name}.yaml")
    optimizer = config.optimizer.model_copy(update={"strategy": "genetic"})
    return config.model_copy(update={"optimizer": optimizer})


def _expected_and_actual(name: str) -> tuple[int, float]:
    config = _config(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = estimate(config).total_calls
        actual = statistics.fmean(_actual_calls(config, seed) for seed in config.seeds or [42])
    return expected, actual


def test_rubric_expected_calls_are_within_25_percent_of_actual_runs():
    expected, actual = _expected_and_actual("helpfulness_rubric")
    assert abs(expected / actual - 1) <= 0.25, (expected, actual)


def test_two_prompt_estimate_errs_on_the_side_of_more_calls_than_a_run_makes():
    """The simulated statement LLM rewrites few novel instructions after the initial population
    (most generation offspring repeat a candidate and cost no judge call), which the cost model's
    novelty decay does not capture: the estimate over-counts by up to ~2x. For a budget that is
    the safe side; it must never under-count, nor exceed the hard maximum."""
    expected, actual = _expected_and_actual("faithfulness_statements")
    assert actual <= expected <= 2.5 * actual, (expected, actual)


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
