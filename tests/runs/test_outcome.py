"""The run in words: which candidate was chosen and why, and why the search stopped."""

from __future__ import annotations

from typing import Any

import pytest

from promptevolver.optimizers._result import OptimizationResult
from promptevolver.runs._outcome import choice_line, stop_line


def _candidate(i: int, train: float | None, validation: float | None, operator: str = "mutation") -> dict:
    return {
        "id": i,
        "generation": 0 if i == 0 else 1,
        "operator": "seed" if i == 0 else operator,
        "train": train,
        "validation": validation,
    }


def _result(lineage: list[dict[str, Any]], best_id: int = 0, **changes: Any) -> OptimizationResult:
    fields: dict[str, Any] = dict(
        metric="m",
        seed_instructions={"p": "a"},
        best_instructions={"p": "a"},
        loss={"name": "BinaryMetricLoss", "metric": "accuracy", "higher_is_better": True},
        scores={},
        history=[{"generation": 0}, {"generation": 1}],
        usage={"llm_calls": {"judge": 3, "meta": 0}},
        lineage=lineage,
        best_id=best_id,
        stop_reason="perfect_train",
        split={"validation": 5},
        operator_stats={},
        config={"patience": 2},
        random_seed=0,
        duration_s=0.0,
    )
    fields.update(changes)
    return OptimizationResult(**fields)


def test_a_tie_on_validation_keeps_the_seed_and_says_what_the_best_candidate_scored():
    lineage = [_candidate(0, 0.923, 0.8), _candidate(1, 0.9, None), _candidate(2, 1.0, 0.8)]
    line = choice_line(_result(lineage))
    assert line == (
        "kept the seed: the best other candidate, candidate 2 (mutation, generation 1), scored train "
        "1.000 (the seed 0.923) but validation 0.800, no better than the seed's 0.800 on 5 held-out "
        "samples (a tie keeps the seed)"
    )


def test_a_worse_candidate_is_called_worse():
    lineage = [_candidate(0, 0.7, 0.8), _candidate(1, 0.9, 0.6, "crossover")]
    assert "validation 0.600, worse than the seed's 0.800" in choice_line(_result(lineage))


def test_for_a_lower_is_better_loss_the_lowest_validation_is_the_best_rival():
    lineage = [_candidate(0, 0.2, 0.1), _candidate(1, 0.1, 0.3), _candidate(2, 0.15, 0.2)]
    loss = {"name": "MSELoss", "higher_is_better": False}
    assert "candidate 2 " in choice_line(_result(lineage, loss=loss))


def test_a_chosen_candidate_is_named_with_its_scores_against_the_seed():
    lineage = [_candidate(0, 0.7, 0.6), _candidate(1, 0.9, 0.8, "reverse_engineer")]
    line = choice_line(_result(lineage, best_id=1))
    assert line == (
        "chosen: candidate 1 (reverse engineer, generation 1): validation 0.800 against the seed's 0.600 "
        "on 5 held-out samples (train 0.900 against 0.700)"
    )


def test_without_rivals_the_line_says_why():
    assert choice_line(_result([_candidate(0, 0.7, 0.6)])) == "kept the seed: no other candidate was made"
    unmeasured = [_candidate(0, 0.7, 0.6), _candidate(1, None, None)]
    assert "no other candidate was judged on validation" in choice_line(_result(unmeasured))


def test_stop_line_explains_each_reason():
    assert stop_line(_result([])) == (
        "stopped after generation 1: a candidate reached the best possible train score, so train has "
        "nothing left to teach (perfect_train)"
    )
    patience = stop_line(_result([], stop_reason="patience", history=[{"generation": 0}]))
    assert patience.startswith(
        "stopped after the initial population: the best train score did not improve for 2"
    )


def test_the_final_choices_own_reason_explains_a_chosen_candidate():
    lineage = [_candidate(0, 0.333, None), _candidate(1, 0.771, None)]  # focus-set values
    why = "better than the seed on validation by +0.167 with probability 0.94 (paired bootstrap)"
    choice = {"finalists": [{"id": 1, "delta": 0.166667, "p_better": 0.94}], "chosen": 1, "why": why}
    scores = {"seed": {"train": 0.708}, "best": {"train": 0.913}}  # the summary line's estimates
    assert choice_line(_result(lineage, best_id=1, final_choice=choice, scores=scores)) == (
        f"chosen: candidate 1 (mutation, generation 1): {why}; train 0.913 against the seed's 0.708"
    )


def test_a_kept_seed_gets_the_reason_and_the_best_finalists_scores():
    lineage = [_candidate(0, 0.833, None), _candidate(1, 1.0, None), _candidate(2, 0.9, None, "crossover")]
    why = "candidate 1 did better on validation (Δ +0.083) but with probability 0.71 < 0.8 that it is better"
    rows = [{"id": 2, "delta": -0.1, "p_better": 0.1}, {"id": 1, "delta": 0.083, "p_better": 0.71}]
    split = {"validation": 5, "judged": {"train": 48}}
    line = choice_line(
        _result(lineage, final_choice={"finalists": rows, "chosen": 0, "why": why}, split=split)
    )
    assert line == (
        f"kept the seed: {why}; the best other finalist, candidate 1 (mutation, generation 1), had fitness "
        "1.000 on the 48 judged train samples (the seed 0.833), and +0.083 against it on validation"
    )
    alone = choice_line(_result(lineage[:1], final_choice={"finalists": [], "why": "no candidate besides"}))
    assert alone == "kept the seed: no candidate besides"


def _summary(**changes: Any) -> str:
    from pathlib import Path

    from promptevolver.runs._outcome import outcome_lines

    scores = {"seed": {"train": 0.5, "validation": 0.5}, "best": {"train": 0.5, "validation": 0.5}}
    return outcome_lines(_result([_candidate(0, 0.5, 0.5)], scores=scores, **changes), Path("d"), quiet=True)[
        0
    ]


def test_the_summary_line_says_when_the_simulated_llm_answered():
    assert _summary(simulated_llm=True).endswith("| simulated LLM: no model was called")
    assert "simulated" not in _summary()


@pytest.mark.parametrize(
    ("loss", "name"),
    [
        ({"name": "MSELoss", "reduction": "mean", "higher_is_better": False}, "MSE"),
        ({"name": "MSELoss", "reduction": "sum", "higher_is_better": False}, "sum of squared errors"),
        ({"name": "BinaryMetricLoss", "metric": "f1_score", "higher_is_better": True}, "F1"),
        ({"name": "BinaryMetricLoss", "metric": "accuracy", "higher_is_better": True}, "accuracy"),
    ],
)
def test_the_summary_line_names_the_loss_as_a_person_would_not_by_its_class(loss, name):
    line = _summary(loss=loss)
    assert line.startswith(f"m: {name} seed train 0.500") and "Loss" not in line


# --- real runs of every strategy: the lines agree with the records --------------------------------


@pytest.mark.parametrize("strategy", ["auto", "distill", "examples", "genetic"])
@pytest.mark.parametrize("seed", [0, 2])
def test_the_choice_and_stop_lines_agree_with_what_was_chosen(tmp_path, strategy, seed):
    """On any run: a result that is not the seed is never explained as "only the seed reached
    the final choice", and a pipeline that ended after verification names the rungs it verified
    (never "the distilled ladder" of 0 rungs) or says that only examples were chosen."""
    from promptevolver.rundir import read_result

    from ..conftest import AC_DEFINITION
    from ..rundirs import optimize_into

    config = {
        "dataset": {"synthetic": {"n_samples": 24, "random_seed": seed}},
        "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
        "optimizer": {"strategy": strategy, "population_size": 4, "generations": 1},
        "random_seed": seed,
    }
    result = OptimizationResult.from_dict(read_result(optimize_into(tmp_path / "run", config)))
    choice, stop = choice_line(result), stop_line(result)
    if result.improved:
        assert choice.startswith(f"chosen: candidate {result.best_id} ")
        assert "only the seed" not in choice and "kept the seed" not in choice
    else:
        assert choice.startswith("kept the seed")
    if result.stop_reason == "distilled":
        rungs = len(result.stages.get("distill", {}).get("produced", []))
        assert "0 rungs" not in stop
        if strategy == "examples":
            assert "only teaching examples were chosen" in stop and "ladder" not in stop
        elif rungs:
            assert f"distilled ladder ({rungs} rung" in stop
        else:
            assert "made no rung" in stop
