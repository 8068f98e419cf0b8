"""Benchmark summaries (runs/_bench.py): means over seeds of what was measured, never of a score
that was not (None), and summary files written atomically."""

from __future__ import annotations

import os

import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.errors import RunDirError
from promptevolver.optimizers._result import OptimizationResult
from promptevolver.runs import _bench as bench
from promptevolver.runs._bench import summarize_config, to_markdown

from ..rundirs import AC_CONFIG, SYNTHETIC, leftovers


def _result(seed_validation: float | None, best_validation: float | None) -> OptimizationResult:
    return OptimizationResult(
        metric="m",
        seed_instructions={},
        best_instructions={},
        loss={},
        scores={
            "seed": {"train": 0.5, "validation": seed_validation},
            "best": {"train": 0.75, "validation": best_validation},
        },
        history=[],
        usage={"llm_calls": {"judge": 10, "meta": 2}, "prompt_tokens": 100, "completion_tokens": 10},
        lineage=[],
        best_id=0,
        stop_reason="generations",
        split={},
        operator_stats={},
        config={},
        random_seed=0,
        duration_s=1.0,
    )


def test_unmeasured_scores_are_left_out_of_the_mean_and_counted():
    row = summarize_config("c", [(0, _result(0.5, 0.75), 1.0), (1, _result(None, 0.25), 2.0)])
    assert row["seed_validation"] == {"mean": 0.5, "std": 0.0, "unmeasured": 1}
    assert row["best_validation"] == {"mean": 0.5, "std": 0.25}
    summary = {"machine": bench.machine(), "configs": [row]}
    assert "| 0.500 ± 0.000 (1 n/a) | 0.500 ± 0.250 |" in to_markdown(summary)


def test_nothing_measured_is_na_not_zero():
    row = summarize_config("c", [(0, _result(None, None), 1.0)])
    assert row["best_validation"] == {"mean": None, "std": None, "unmeasured": 1}
    line = to_markdown({"machine": bench.machine(), "configs": [row]}).splitlines()[-1]
    assert line.startswith("| c | 1 | n/a | n/a | 0.750 ± 0.000 |")


def test_a_refits_cross_validated_figure_is_summarised_beside_the_seeds():
    """Small data: a refit has no validation or train figure of its own; its honest one is the
    cross-validated one, which the summary showed as n/a everywhere (a newcomer's report)."""
    runs = []
    for seed, (seed_cv, best_cv) in enumerate([(0.889, 0.889), (0.889, 0.833), (0.833, 0.944)]):
        result = _result(None, None)
        result.scores["seed"] = {"train": seed_cv, "cross_validated": seed_cv}
        result.scores["best"] = {"cross_validated": best_cv}
        runs.append((seed, result, 1.0))
    row = summarize_config("c", runs)
    assert row["best_cross_validated"]["mean"] == pytest.approx((0.889 + 0.833 + 0.944) / 3)
    assert row["seed_cross_validated"]["mean"] == pytest.approx((0.889 + 0.889 + 0.833) / 3)
    line = to_markdown({"machine": bench.machine(), "configs": [row]}).splitlines()[-1]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2:5] == ["n/a", "n/a", "n/a (3 n/a)"] or cells[4].startswith("n/a")
    assert cells[5].startswith("0.870 ± ") and cells[6].startswith("0.889 ± ")


def test_the_summary_is_written_atomically(tmp_path, monkeypatch):
    with rundir.locked(tmp_path):  # a benchmark's folder (marked as ours) from an earlier run
        pass
    (tmp_path / "summary.json").write_text("{}")

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    monkeypatch.setattr(bench, "execute", lambda config, directory, **_: _result(0.5, 0.75))
    with pytest.raises(OSError, match="No space left"):
        bench.run_benchmarks([AC_CONFIG], tmp_path)
    assert (tmp_path / "summary.json").read_text() == "{}" and leftovers(tmp_path) == []


def test_a_rerun_into_taken_run_directories_is_refused_before_any_run(tmp_path, monkeypatch):
    with rundir.locked(tmp_path):  # a benchmark's folder (marked as ours) from an earlier run
        pass
    taken = tmp_path / "answer_correctness" / "seed-3"
    taken.mkdir(parents=True)
    (taken / "result.json").write_text("{}")
    ran: list[tuple[object, bool]] = []

    def fake(config, directory, *, force=False, callbacks=()):
        ran.append((directory, force))
        return _result(0.5, 0.75)

    monkeypatch.setattr(bench, "execute", fake)
    with pytest.raises(
        RunDirError, match=r"1 run directory of this benchmark already holds a run.*seed-3.*--force"
    ):
        bench.run_benchmarks([AC_CONFIG], tmp_path)
    assert ran == [] and not (tmp_path / "summary.json").exists()
    bench.run_benchmarks([AC_CONFIG], tmp_path, force=True)
    assert len(ran) == 5 and all(force for _, force in ran)


def test_bench_shows_each_runs_progress_with_its_label(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**SYNTHETIC, "seeds": [0, 1]}))
    assert main(["bench", str(config), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.splitlines()
    for seed in (0, 1):
        assert any(line.startswith(f"tiny seed {seed}: seed and initial population: 1 of ~") for line in err)
        assert any(line.startswith(f"tiny seed {seed}: done: ") for line in err)
