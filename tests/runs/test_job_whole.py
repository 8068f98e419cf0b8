"""A job of several metrics is estimated, gated, reported and suggested for as a whole, and says
when the simulated LLM answered (its summary, result.json and index page); each metric's figure is
the one a run of it alone gives (the bundled two-metric config, and a synthetic job)."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import pytest
import yaml

from promptevolver.cli import main
from promptevolver.config._build import load_dataset
from promptevolver.config._models import load_config
from promptevolver.errors import ConfigError
from promptevolver.rundir import read_chosen_judge
from promptevolver.runs._estimate import estimate
from promptevolver.runs._evaluate import chosen_positions, score_instructions
from promptevolver.runs._gate import SIMULATED_GATE
from promptevolver.testing import assert_agreement

from ..conftest import ROOT

TWO = ROOT / "configs" / "two_metrics.yaml"


def _synthetic_job(tmp: Path) -> Path:
    """A job over a file of two synthetic metrics (the second: another seed of the same world)."""
    from promptevolver.simulation.synthetic import SyntheticSpec, generate

    data = {}
    for seed, name in ((1, "correctness"), (2, "groundedness")):
        dataset = generate(SyntheticSpec(n_samples=30, random_seed=seed, name=name))
        data[name] = [s.model_dump(mode="json", exclude_none=True) for s in dataset.samples]
    (tmp / "job.json").write_text(json.dumps(data))
    config = {
        "dataset": "job.json",
        "metrics": {n: {"type": "aspect_critic", "definition": f"Is the response {n}?"} for n in data},
        "optimizer": {"population_size": 4, "generations": 1},
        "random_seed": 3,
    }
    path = tmp / "job.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module", params=["bundled", "synthetic"])
def job(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("job")
    config = TWO if request.param == "bundled" else _synthetic_job(tmp)
    run = tmp / "run"
    argv = ["optimize", str(config), "-o", str(run), "-q", "--set", "optimizer.generations=1"]
    assert main(argv) == 0
    return config, run


def test_the_job_says_the_simulator_answered(job, capsys):
    config, run = job
    result = json.loads((run / "result.json").read_text())
    assert result["simulated_llm"] is True and result["notes"]
    page = (run / "index.html").read_text()
    assert ":root" in page and 'class="caveat"' in page and "Simulated LLM" in page  # styled, said
    for name in result["metrics"]:
        assert f'<a href="{name}/report.html">{name}</a>' in page


def test_the_job_is_estimated_as_the_sum_of_its_metrics(job, capsys):
    config, _ = job
    assert main(["estimate", str(config), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    loaded = load_config(config)
    for name in loaded.metrics:
        alone = estimate(loaded.for_metric(name, None)).to_dict()
        assert found["metrics"][name] == alone
    assert main(["estimate", str(config), "-q"]) == 0
    line = capsys.readouterr().out.strip()
    total = sum(m["total_calls"] for m in found["metrics"].values())
    assert line.startswith(f"job of {len(loaded.metrics)} metrics: expected LLM calls: {total:,} ")


def test_the_job_is_gated_metric_by_metric_with_each_figure_of_its_own_run(job, capsys):
    config, run = job
    loaded = load_config(config)
    assert main(["evaluate", str(config), "-i", str(run), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    values = {}
    for name in loaded.metrics:
        one = loaded.for_metric(name, None)
        dataset = load_dataset(one)
        chosen = read_chosen_judge(run / name)
        positions, _ = chosen_positions(one, dataset, source=run / name, instructions=chosen.instructions)
        alone = asyncio.run(score_instructions(one, chosen, positions=positions, dataset=dataset))
        assert card["metrics"][name]["accuracy"] == pytest.approx(alone.agreement.accuracy)
        values[name] = alone.agreement.accuracy
    assert card["simulated_llm"] is True
    lowest = min(values, key=values.get)
    threshold = min(1.0, values[lowest] + 0.001)
    assert main(["evaluate", str(config), "-i", str(run), "--fail-under", f"{threshold}"]) == 1
    err = capsys.readouterr().err
    assert "job gate failed" in err and f"{lowest}: judge gate failed" in err and SIMULATED_GATE in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gates = assert_agreement(config, instructions=run, at_least=0.0)
        assert isinstance(gates, dict) and set(gates) == set(loaded.metrics)
        with pytest.raises(AssertionError, match=f"{lowest}: judge gate failed"):
            assert_agreement(config, instructions=run, at_least=threshold)


def test_the_job_is_reported_and_suggested_for_as_a_whole(job, capsys):
    config, run = job
    before = {p: p.stat().st_mtime_ns for p in run.glob("*/report.html")}
    assert main(["report", str(run)]) == 0
    assert capsys.readouterr().out.strip() == str(run / "index.html")
    assert all(p.stat().st_mtime_ns >= t for p, t in before.items()) and before
    pool = load_config(config).dataset  # the pool: the job's own annotation file
    assert main(["suggest", str(run), "--pool", str(pool), "-n", "4", "--max-calls", "400"]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert 0 < len(rows) <= 4 and all(r["metric"] in load_config(config).metrics for r in rows)
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    assert all(f"promptevolver: {n}: suggested" in err for n in load_config(config).metrics)


def test_one_judge_of_a_job_is_read_from_its_folder_and_the_job_dir_says_so(job):
    _, run = job
    with pytest.raises(ConfigError, match="a job of several metrics chose one judge per metric"):
        read_chosen_judge(run)


def test_a_job_whose_annotations_cannot_be_loaded_keeps_each_metric_s_report(tmp_path, capsys):
    """A job moved away from its annotation file: `report` refuses in one line rather than
    rewriting each metric's report and samples.jsonl without their per-sample results."""
    import shutil

    run = tmp_path / "run"
    assert main(["optimize", str(_synthetic_job(tmp_path)), "-o", str(run), "-q"]) == 0
    moved = tmp_path / "a" / "b" / "run"
    shutil.copytree(run, moved)
    kept = {p: p.read_bytes() for p in moved.glob("*/samples.jsonl")}
    assert kept and all(b.count(b"\n") == 30 for b in kept.values())
    assert main(["report", str(moved)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "report is not rebuilt" in err[0] and "file not found" in err[0]
    assert {p: p.read_bytes() for p in kept} == kept
