"""One figure per quantity (issue 23): the report's accuracy on train and validation is the
summary line's and result.json's (whole-part estimates from the judged focus sets), and the
lineage's validation is the same figure; the search's fitness (on the judged train samples) is
named apart in the lineage and the plot."""

from __future__ import annotations

import numpy as np
import pytest

from promptevolver.evaluation._agreement import agreement
from promptevolver.runs._outcome import outcome_lines

from ..conftest import AC_DEFINITION
from ..rundirs import optimize_into, result_of

CONFIG = {
    "dataset": {"synthetic": {"n_samples": 160, "random_seed": 1}},
    "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
    "optimizer": {"population_size": 4, "generations": 2, "strategy": "genetic"},  # train is judged
    "random_seed": 1,
}


@pytest.fixture(scope="module")
def focused(tmp_path_factory):
    """A run whose train part (112 samples) is judged on a focus set of 48."""
    run = optimize_into(tmp_path_factory.mktemp("one-figure") / "run", CONFIG)
    result = result_of(run)
    assert result["split"]["judged"]["train"] < result["split"]["train"]
    return run, result


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_scores_table_shows_the_summary_lines_figures(focused):
    run, result = focused
    table = _section((run / "report.md").read_text(), "Seed vs best")
    rows = [
        line.split(" | ")
        for line in table.splitlines()
        if line.startswith("| original") or line.startswith("| optimized")
    ]
    shown = {(r[0].strip("| "), r[1]): float(r[3]) for r in rows}
    for who, label in (("seed", "original (seed)"), ("best", "optimized (best)")):
        for split in ("train", "validation"):
            assert shown[(label, split)] == pytest.approx(result["scores"][who][split], abs=5e-4), (
                who,
                split,
            )
    assert "fitness (accuracy)" not in table  # one name, one figure


def test_the_lineage_shows_fitness_apart_and_the_same_validation_figure(focused):
    run, result = focused
    lineage = _section((run / "report.md").read_text(), "Lineage of the chosen candidate")
    header = next(line for line in lineage.splitlines() if line.startswith("| candidate"))
    assert "| fitness (judged train) | validation accuracy |" in header
    best = next(c for c in result["lineage"] if c["id"] == result["best_id"])
    assert best["validation"] == pytest.approx(result["scores"]["best"]["validation"])
    seed = result["lineage"][0]
    assert seed["validation"] == pytest.approx(result["scores"]["seed"]["validation"])
    assert seed["train"] != pytest.approx(result["scores"]["seed"]["train"])  # fitness vs estimate


def test_the_summary_line_and_the_report_verdict_agree(focused):
    from promptevolver.optimizers._result import OptimizationResult

    run, result = focused
    line = outcome_lines(OptimizationResult.from_dict(result), run, quiet=True)[0]
    best = result["scores"]["best"]["validation"]
    assert f"validation {best:.3f}" in line
    assert f"{best:.3f}" in _section((run / "report.md").read_text(), "Outcome")


def test_weighted_agreement_is_the_estimate_of_the_whole_part():
    t = np.array([1, 1, 0, 0, 1, 0], dtype=float)
    p = np.array([1, 0, 0, 1, 1, 0], dtype=float)
    w = np.array([1.0, 3.0, 1.0, 3.0, 2.0, 2.0])
    a = agreement(t, p, binary=True, sample_weight=w)
    assert a.accuracy == pytest.approx(np.average(t == p, weights=w))
    assert a.n == 6 and a.confusion == [[2, 1], [1, 2]]  # counts stay counts of judged samples
    numeric = agreement([1.0, 3.0, 5.0], [2.0, 3.0, 3.0], binary=False, sample_weight=[1.0, 1.0, 2.0])
    assert numeric.mse == pytest.approx((1 * 1 + 0 + 2 * 4) / 4)
    assert numeric.within_one == pytest.approx(2 / 4)


@pytest.mark.parametrize("seed", [1, 42])
def test_the_recorded_judge_s_figures_are_the_agreement_command_s_whatever_the_run_s_seed(
    tmp_path, capsys, seed
):
    """The report shows the recorded judge "as `promptevolver agreement` prints them": the same
    lines, intervals included, whatever seed the run drew its own figures with (the report drew
    the recorded judge's bootstrap with the run's seed, the command with 0: kappa's interval
    differed, 0.217-1.000 against 0.262-1.000 on the bundled file)."""
    from promptevolver.cli import main

    from ..conftest import ROOT

    config = ROOT / "configs" / "answer_correctness.yaml"
    run = tmp_path / "run"
    assert main(["optimize", str(config), "-o", str(run), "-q", "--seed", str(seed)]) == 0
    capsys.readouterr()
    assert main(["agreement", str(config)]) == 0
    printed = [line.strip() for line in capsys.readouterr().out.splitlines()[2:] if line.strip()]
    md = (run / "report.md").read_text()
    block = md.split("## The recorded judge", 1)[1].split("```", 2)[1]
    shown = [line.strip() for line in block.splitlines()[1:] if line.strip()]  # after the fence's tag
    assert shown and shown[0] == printed[0] and "kappa" in shown[0]  # the figures, intervals included
    assert all(line in printed for line in shown)
