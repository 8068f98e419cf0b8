"""A Ragas object handed where ours is meant (the metric, the loss, the dataset, the LLM; to the
optimizer, its optimize call or a JudgeEnsemble) is refused at once with one line saying what
to pass instead (a Ragas metric: wrap it in RagasMetric), never a raw AttributeError later.
Against the real Ragas package (skipped, saying why, when it is not installed)."""

from __future__ import annotations

import warnings

import pytest

from promptevolver import (
    AspectCritic,
    BinaryMetricLoss,
    GeneticOptimizer,
    JudgeEnsemble,
    SingleMetricAnnotation,
)
from promptevolver.llm import SimulatedJudgeLLM

from ..conftest import AC_DEFINITION, AC_FILE

ragas = pytest.importorskip(
    "ragas", reason='Ragas is not installed: pip install -e ".[ragas]" (pinned to ragas 0.4.3; .ci/run does)'
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import ragas.losses  # noqa: E402
    from ragas.dataset_schema import MetricAnnotation as RagasAnnotations  # noqa: E402
    from ragas.metrics import AspectCritic as RagasCritic  # noqa: E402
    from ragas.metrics import SimpleCriteriaScore  # noqa: E402


@pytest.fixture(scope="module")
def ours():
    dataset = SingleMetricAnnotation.from_json(AC_FILE)
    return {
        "dataset": dataset,
        "metric": AspectCritic(name="answer_correctness", definition=AC_DEFINITION),
        "llm": SimulatedJudgeLLM(dataset=dataset, random_seed=0),
        "loss": BinaryMetricLoss(),
    }


def _theirs(role: str):
    if role == "metric":
        return RagasCritic(name="answer_correctness", definition=AC_DEFINITION)
    if role == "rubric":
        return SimpleCriteriaScore(name="helpfulness", definition="How helpful?")
    if role == "loss":
        return ragas.losses.BinaryMetricLoss()
    if role == "dataset":
        annotations = RagasAnnotations.from_json(str(AC_FILE), metric_name="answer_correctness")
        return annotations["answer_correctness"]
    raise AssertionError(role)


@pytest.mark.parametrize("role", ["metric", "rubric"])
def test_a_ragas_metric_is_told_to_be_wrapped(ours, role):
    with pytest.raises(TypeError, match="wrap it in RagasMetric") as exc:
        GeneticOptimizer(metric=_theirs(role), llm=ours["llm"])
    assert "\n" not in str(exc.value) and str(exc.value).startswith("metric: got ragas.")
    with pytest.raises(TypeError, match="wrap it in RagasMetric"):
        JudgeEnsemble(metric=_theirs(role), num_judges=3)
    optimizer = GeneticOptimizer(metric=ours["metric"], llm=ours["llm"])
    optimizer.metric = _theirs(role)  # set afterwards: refused when it runs
    with pytest.raises(TypeError, match="wrap it in RagasMetric"):
        optimizer.optimize(ours["dataset"], ours["loss"], {"generations": 1})


@pytest.mark.parametrize(("role", "said"), [("loss", "BinaryMetricLoss, MSELoss"), ("dataset", "from_json")])
def test_a_ragas_loss_or_dataset_names_ours(ours, role, said):
    optimizer = GeneticOptimizer(metric=ours["metric"], llm=ours["llm"])
    given = {"dataset": ours["dataset"], "loss": ours["loss"], role: _theirs(role)}
    with pytest.raises(TypeError, match=said) as exc:
        optimizer.optimize(given["dataset"], given["loss"], {"generations": 1})
    assert str(exc.value).startswith(f"{role}: got ragas.")
