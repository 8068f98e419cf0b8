"""Ragas metric objects in a job of several metrics (``optimize_many``): each is wrapped in
``RagasMetric`` and gives what ``optimize_ragas_metric`` gives on its own."""

from __future__ import annotations

import warnings

import pytest

from promptevolver import MetricAnnotation, optimize_many
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM

from ..conftest import AC_DEFINITION, DATA

pytest.importorskip(
    "ragas", reason='Ragas is not installed: pip install -e ".[ragas]" (pinned to ragas 0.4.3; .ci/run does)'
)

from promptevolver.integrations.ragas import optimize_ragas_metric  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from ragas.metrics import AspectCritic  # noqa: E402

CONFIG = {"population_size": 4, "generations": 2, "random_seed": 5}


def test_ragas_objects_in_a_job_give_what_their_own_runs_give() -> None:
    data = MetricAnnotation.from_json(DATA / "two_metrics.json")
    critics = {
        "answer_correctness": AspectCritic(name="answer_correctness", definition=AC_DEFINITION),
        "helpfulness": AspectCritic(name="helpfulness", definition="Is the response helpful to the user?"),
    }
    llm = {n: SimulatedMetricsLLM(dataset=data[n], random_seed=5) for n in critics}
    many = optimize_many(critics, data, llm=llm, config=CONFIG)
    assert not many.failed
    for name, critic in critics.items():
        own = optimize_ragas_metric(
            critic,
            data[name],
            llm=SimulatedMetricsLLM(dataset=data[name], random_seed=5),
            config=CONFIG,
            apply=False,
        )
        assert many[name].best_instructions == own.best_instructions
        assert many[name].scores == own.scores
