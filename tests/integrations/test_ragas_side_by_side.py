"""The seams of docs/ragas.md, side by side with the real Ragas 0.4.3: the same code on the same
input through ``ragas`` and through ``promptevolver``, which must agree except where the
"Differences from Ragas" table says otherwise (and then differ exactly as it says). Skipped, with
the reason, when Ragas is not installed (``pip install -e ".[ragas]"``; .ci/run installs it)."""

from __future__ import annotations

import contextlib
import math
import os
import random
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import promptevolver
from promptevolver import annotations as ours_schema
from promptevolver import evaluation as ours_losses
from promptevolver import optimizers as ours_optimizers

from ..conftest import AC_FILE, DATA

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
pytest.importorskip(
    "ragas", reason='Ragas is not installed: pip install -e ".[ragas]" (pinned to ragas 0.4.3; .ci/run does)'
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import ragas.dataset_schema as ragas_schema  # noqa: E402
    import ragas.losses as ragas_losses  # noqa: E402
    import ragas.optimizers as ragas_optimizers  # noqa: E402
    from ragas.metrics import AspectCritic as RagasAspectCritic  # noqa: E402

SIDES = {
    "ragas": (ragas_schema, ragas_losses, ragas_optimizers),
    "ours": (ours_schema, ours_losses, ours_optimizers),
}


def _vectors(kind: str, seed: int) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    if kind == "binary":
        return rng.integers(0, 2, n).astype(float).tolist(), rng.integers(0, 2, n).astype(float).tolist()
    return rng.integers(1, 6, n).astype(float).tolist(), rng.integers(1, 6, n).astype(float).tolist()


# --- Losses --------------------------------------------------------------------------------------


def test_the_issues_example_gives_ragas_value() -> None:
    for _, losses, _ in SIDES.values():
        assert losses.BinaryMetricLoss()([1, 0, 1], [1, 1, 1]) == pytest.approx(2 / 3)
        assert losses.BinaryMetricLoss()(predicted=[1, 0, 1], actual=[1, 1, 1]) == pytest.approx(2 / 3)


@pytest.mark.parametrize("seed", range(40))
def test_losses_agree_on_ordinary_vectors(seed: int) -> None:
    """Accuracy, F1, mean and sum MSE on the same (predicted, actual), set as Ragas sets options
    (attributes). F1 where some positive exists (where none does, see the next test)."""
    predicted, actual = _vectors("binary", seed)
    scores, reals = _vectors("numeric", seed)
    values: dict[str, list[float]] = {}
    for side, (_, losses, _) in SIDES.items():
        f1 = losses.BinaryMetricLoss()
        f1.metric = "f1_score"
        mse_sum = losses.MSELoss()
        mse_sum.reduction = "sum"
        values[side] = [
            losses.BinaryMetricLoss()(predicted, actual),
            f1(predicted, actual) if (1 in predicted or 1 in actual) else math.nan,
            losses.MSELoss()(scores, reals),
            mse_sum(scores, reals),
        ]
    np.testing.assert_allclose(values["ours"], values["ragas"], rtol=1e-12, equal_nan=True)


def test_f1_with_no_positive_on_either_side_differs_as_documented() -> None:
    negatives = [0, 0, 0]
    ragas_f1, ours_f1 = ragas_losses.BinaryMetricLoss(), ours_losses.BinaryMetricLoss()
    ragas_f1.metric = ours_f1.metric = "f1_score"
    assert ragas_f1(negatives, negatives) == 0
    assert ours_f1(negatives, negatives) == 1.0


def test_a_misspelt_option_raises_on_both_sides_and_unequal_lengths_here_too() -> None:
    for side, (_, losses, _) in SIDES.items():
        binary = losses.BinaryMetricLoss()
        binary.metric = "precision"
        with pytest.raises(ValueError):
            binary([1, 0], [1, 1])
        mse = losses.MSELoss()
        mse.reduction = "median"
        with pytest.raises(ValueError):
            mse([1.0, 2.0], [1.0, 4.0])
        with pytest.raises(ValueError) if side == "ours" else contextlib.nullcontext():
            losses.MSELoss()([1.0, 2.0, 3.0], [1.0, 2.0])  # Ragas' zip truncated silently


def test_the_same_custom_loss_body_works_on_both_sides() -> None:
    def body(self: Any, predicted: list[float], actual: list[float]) -> float:
        return sum(p == 0 and a == 1 for p, a in zip(predicted, actual)) / len(actual)

    predicted, actual = [0, 0, 1, 1], [1, 1, 1, 0]
    results = []
    for _, losses, _ in SIDES.values():
        loss_class = type("MissedPositives", (losses.Loss,), {"__call__": body, "higher_is_better": False})
        results.append(loss_class()(predicted, actual))
    assert results == [0.5, 0.5]


# --- Optimizers ------------------------------------------------------------------------------------


def test_the_same_custom_optimizer_body_works_on_both_sides() -> None:
    def optimize(self: Any, dataset: Any, loss: Any, config: Any, **kwargs: Any) -> dict[str, str]:
        return {"prompt": f"{len(dataset)} samples, {config['population_size']} candidates"}

    dataset = ours_schema.SingleMetricAnnotation.from_json(AC_FILE)
    results = []
    for _, losses, optimizers in SIDES.values():
        optimizer_class = type("Mine", (optimizers.Optimizer,), {"optimize": optimize})
        optimizer = optimizer_class(None, None)
        assert optimizer.metric is None and optimizer.llm is None
        results.append(optimizer.optimize(dataset, losses.MSELoss(), {"population_size": 3}))
    assert results[0] == results[1] == {"prompt": "18 samples, 3 candidates"}


def test_missing_metric_and_llm_give_ragas_messages_in_ragas_order() -> None:
    ragas_data = ragas_schema.MetricAnnotation.from_json(str(AC_FILE), metric_name=None)["answer_correctness"]
    ours_data = ours_schema.SingleMetricAnnotation.from_json(AC_FILE)
    ragas_metric = RagasAspectCritic(name="answer_correctness", definition="Is it correct?")
    ours_metric = promptevolver.AspectCritic(name="answer_correctness", definition="Is it correct?")
    cases = ((None, "No metric provided for optimization"), ("given", "No llm provided for optimization"))
    for metric, expected in cases:
        for (_, losses, optimizers), data, judge in (
            (SIDES["ragas"], ragas_data, ragas_metric),
            (SIDES["ours"], ours_data, ours_metric),
        ):
            optimizer = optimizers.GeneticOptimizer(None if metric is None else judge)  # positional
            with pytest.raises(ValueError, match=expected):
                optimizer.optimize(data, losses.BinaryMetricLoss(), {})


# --- Annotations -----------------------------------------------------------------------------------


#: Every metric of the bundled Ragas files (Ragas' documentation data).
METRICS = [("edited_chain_runs.json", "answer_correctness"), ("annotated_data.json", "helpfulness")]


@pytest.fixture(params=METRICS, ids=[m for _, m in METRICS])
def loaded(request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """The same metric's annotations loaded by Ragas and by promptevolver."""
    file, metric = request.param
    path = DATA / file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ours_schema.UnusableSamplesWarning)
        ours_set = ours_schema.MetricAnnotation.from_json(path, metric_name=metric)[metric]
    return ragas_schema.MetricAnnotation.from_json(str(path), metric_name=metric)[metric], ours_set


def _loaded() -> tuple[Any, Any]:
    ragas_set = ragas_schema.MetricAnnotation.from_json(str(AC_FILE), metric_name=None)["answer_correctness"]
    return ragas_set, ours_schema.SingleMetricAnnotation.from_json(AC_FILE)


def _inputs(samples: Any) -> list[dict[str, Any]]:
    return [dict(s.metric_input) for s in samples]


def test_slices_concatenate_to_the_same_samples(loaded: tuple[Any, Any]) -> None:
    ragas_set, ours_set = loaded
    assert isinstance(ragas_set[0:2] + ragas_set[3:4], list)
    assert _inputs(ours_set[0:2] + ours_set[3:4]) == _inputs(ragas_set[0:2] + ragas_set[3:4])
    assert _inputs([ours_set[5]] + ours_set[0:1]) == _inputs([ragas_set[5]] + ragas_set[0:1])
    assert len(ours_set) == len(ragas_set)
    assert _inputs(ours_set.select([4, 1])) == _inputs(ragas_set.select([4, 1]))
    accepted = ours_set.filter(lambda s: s.is_accepted)
    assert _inputs(accepted) == _inputs(ragas_set.filter(lambda s: s.is_accepted))


def test_prompt_annotations_match_and_an_absent_prompt_is_empty_on_both(loaded: tuple[Any, Any]) -> None:
    ragas_set, ours_set = loaded
    ragas_grouped, ours_grouped = ragas_set.get_prompt_annotations(), ours_set.get_prompt_annotations()
    assert sorted(ragas_grouped) == sorted(ours_grouped)
    for name in ragas_grouped:
        assert [p.prompt_output for p in ours_grouped[name]] == [p.prompt_output for p in ragas_grouped[name]]
    assert ragas_grouped["other"] == ours_grouped["other"] == []


def test_a_missing_file_is_a_file_not_found_error_on_both(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ragas_schema.MetricAnnotation.from_json(str(tmp_path / "absent.json"), metric_name=None)
    with pytest.raises(FileNotFoundError):
        ours_schema.MetricAnnotation.from_json(tmp_path / "absent.json", metric_name=None)


def test_evaluation_datasets_offer_ragas_methods_and_agree(loaded: tuple[Any, Any]) -> None:
    ragas_set, ours_set = loaded
    ragas_ds, ours_ds = ragas_set.to_evaluation_dataset(), ours_set.to_evaluation_dataset()
    public = {n for n in dir(ragas_ds) if not n.startswith("_")}
    assert sorted(n for n in public if not hasattr(ours_ds, n)) == []
    assert ours_ds.to_list() == ragas_ds.to_list() and len(ours_ds) == len(ragas_ds)
    assert ours_ds.features() == ragas_ds.features() and ours_ds.is_multi_turn() is ragas_ds.is_multi_turn()
    assert ours_ds.to_pandas().equals(ragas_ds.to_pandas())


def test_random_seed_reproduces_ragas_sampling_and_not_ours_as_documented() -> None:
    ragas_set, ours_set = _loaded()

    def draw(dataset: Any) -> list[list[dict[str, Any]]]:
        random.seed(0)
        return [_inputs(dataset.sample(9)) for _ in range(1)] + [_inputs(b) for b in dataset.batch(6)]

    assert draw(ragas_set) == draw(ragas_set)  # Ragas: the global random state
    ours = {str(draw(ours_set)) for _ in range(10)}
    assert len(ours) > 1  # ours: random.seed does not seed it; random_seed= does
    assert _inputs(ours_set.sample(9, random_seed=0)) == _inputs(ours_set.sample(9, random_seed=0))


def test_the_optimizer_result_is_a_dict_as_ragas_returns() -> None:
    from promptevolver.simulation import SimulatedJudgeLLM

    dataset = ours_schema.SingleMetricAnnotation.from_json(AC_FILE)
    metric = promptevolver.AspectCritic(name="answer_correctness", definition="Is it correct?")
    optimizer = ours_optimizers.GeneticOptimizer(metric, SimulatedJudgeLLM(dataset=dataset, random_seed=0))
    result = optimizer.optimize(dataset, ours_losses.BinaryMetricLoss(), {"population_size": 2}, None)
    assert isinstance(result, dict) and set(result) == set(metric.get_instructions())
