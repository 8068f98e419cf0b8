"""The MLflow tests' server: one real ``mlflow server`` (SQLite, temporary artifacts) per session,
holding the traces of :data:`EXPERIMENT`. Without MLflow installed they skip, saying why."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from promptevolver import SingleMetricAnnotation
from promptevolver.simulation.synthetic import SyntheticSpec, generate

from .mlflow_server import NOT_INSTALLED, Logged, Server, log_labelled_traces, running_server

#: The experiment of :func:`labelled`: 24 traces with a judge's and a human's feedback, 2 with the
#: judge's only, 1 with a human's only.
EXPERIMENT = "support-bot"
FEEDBACK = "correctness"


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if importlib.util.find_spec("mlflow") is None:
        pytest.skip(NOT_INSTALLED)
    with running_server(tmp_path_factory.mktemp("mlflow-server")) as server:
        yield server


@pytest.fixture(scope="session")
def labelled_set() -> SingleMetricAnnotation:
    """The 24 annotated samples the traces of :data:`EXPERIMENT` carry (10 judge verdicts the
    human corrected, 6 with a corrected reason)."""
    return generate(
        SyntheticSpec(n_samples=24, random_seed=0, disagreement_rate=0.4, reject_rate=0.5, name=FEEDBACK)
    )


@pytest.fixture(scope="session")
def labelled(mlflow_server: Server, labelled_set: SingleMetricAnnotation) -> Logged:
    return log_labelled_traces(
        mlflow_server.uri, EXPERIMENT, list(labelled_set.samples), name=FEEDBACK, judge_only=2, human_only=1
    )
