"""Every report agrees with the CLI and has its pictures, whatever the run: for every strategy, on
small data (out of bag) and on held-out data, binary and rubric judges:

* Seed vs best shows result.json's ``scores`` on train and validation (the summary line's), not
  a figure of another sample set (small data used to show train on the "learned from" samples);
* the outcome says why the run stopped in the summary's words (never "stop reason: distilled"),
  and the split is described as it was used (never "24 train, 12 validation" of 24 samples);
* report.html embeds the candidates on validation with their intervals, the confusion matrices
  (binary) and the cost per stage, with or without a search.
"""

from __future__ import annotations

import re

import pytest

from promptevolver.optimizers import OptimizationResult
from promptevolver.rundir import read_result
from promptevolver.runs._outcome import stop_line

from ..conftest import AC_DEFINITION, ROOT
from ..rundirs import optimize_into

RUBRIC = {"type": "rubric", "name": "helpfulness", "definition": "How helpful is it?", "score_range": [1, 5]}
RUNS = {
    **{
        f"{strategy}-{n}": {
            "dataset": {"synthetic": {"n_samples": n, "random_seed": 1}},
            "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
            "optimizer": {"strategy": strategy, "population_size": 4, "generations": 1},
            "random_seed": 1,
        }
        for strategy in ("auto", "distill", "examples", "genetic")
        for n in (24, 60)  # out of bag (small data), held out
    },
    "helpfulness-auto": {  # the bundled 21 annotations: a refit whose seed is kept, nothing held out
        "dataset": str(ROOT / "benchmarks" / "data" / "annotated_data.json"),
        "metric": {"name": "helpfulness", "definition": "Is the response helpful to the user?"},
        "optimizer": {"population_size": 4, "generations": 1},
        "random_seed": 1,
    },
    "rubric-auto-60": {
        "dataset": {"synthetic": {"kind": "rubric", "n_samples": 60, "random_seed": 1}},
        "metric": RUBRIC,
        "loss": {"type": "mse"},
        "optimizer": {"population_size": 4, "generations": 1},
        "random_seed": 1,
    },
}


@pytest.fixture(scope="module", params=list(RUNS))
def run(request, tmp_path_factory):
    directory = optimize_into(tmp_path_factory.mktemp("agree") / request.param, RUNS[request.param])
    return request.param, directory, read_result(directory)


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_seed_vs_best_shows_result_jsons_scores(run):
    """Every row of the table is a figure result.json records for it: train, validation, or the
    cross-validated figure of a refit (small data under auto or distill), never another set's."""
    _, directory, result = run
    table = _section((directory / "report.md").read_text(), "Seed vs best")
    lines = table.splitlines()
    rows = [line.split(" | ") for line in lines if line.startswith(("| original", "| optimized"))]
    assert rows
    keys = {
        "train": "train",
        "validation": "validation",
        "cross-validated": "cross_validated",
        "every usable sample": "validation",  # the seed kept on small data: all of them held out
    }
    split = result["split"]
    if result["best_id"] == 0 and split["regime"] == "out-of-bag":  # nothing learned: one picture
        assert [r[1] for r in rows] == ["every usable sample (the kept seed learned from none)"] * 2
        assert all(r[2] == f"{split['train']} of {split['train']}" for r in rows), rows
    for row in rows:
        who = "seed" if row[0].startswith("| original") else "best"
        key = next(k for label, k in keys.items() if row[1].startswith(label))
        recorded = result["scores"][who].get(key)
        if recorded is None:
            assert row[3] == "n/a", row
        else:
            assert float(row[3]) == pytest.approx(recorded, abs=5e-4), (who, key, row)


def test_the_outcome_and_the_split_read_as_the_cli_says(run):
    _, directory, result = run
    md = (directory / "report.md").read_text()
    outcome = _section(md, "Outcome")
    line = stop_line(OptimizationResult.from_dict(result))
    assert f"{line[0].upper()}{line[1:]}." in outcome
    assert "stop reason:" not in outcome
    split = next(x for x in md.splitlines() if x.startswith("- split: "))
    parts = result["split"]
    if parts["regime"] == "out-of-bag":
        assert f"all {parts['train']} usable annotations" in split
        assert not re.search(r"\d+ train, \d+ validation", split)
    else:
        assert f"{parts['train']} train, {parts['validation']} validation (held out)" in split


def test_every_report_embeds_its_pictures(run):
    name, directory, result = run
    html = (directory / "report.html").read_text()
    assert html.count("<img") >= 2
    expected = {"candidates.png", "cost.png"} | (set() if name.startswith("rubric") else {"confusion.png"})
    assert expected <= {p.name for p in (directory / "plots").iterdir()}
    md = (directory / "report.md").read_text()
    for picture in expected:
        assert f"plots/{picture}" in md
    if not result["history"]:  # no search: the pictures are there all the same
        assert "fitness.png" not in md


def test_every_run_can_be_evaluated_by_its_own_directory(run, tmp_path, capsys):
    """evaluate -i RUN on every run of every strategy and size: a refit scored on every sample
    with its cross-validated figure named, a small run whose seed was kept (it holds nothing out:
    it crashed on 'no positions to score') on every sample, the others on their held-out ones."""
    import json as _json

    import yaml as _yaml

    from promptevolver.cli import main

    name, directory, result = run
    config = tmp_path / "config.yaml"
    config.write_text(_yaml.safe_dump(RUNS[name]))
    assert main(["evaluate", str(config), "-i", str(directory), "--json"]) == 0
    card = _json.loads(capsys.readouterr().out)
    assert card["n"] + card["failures"] > 0


def test_the_chosen_judge_records_the_figures_result_json_holds(run):
    """best_instructions.json's figures are result.json's: train, validation and, for a refit,
    the cross-validated one (the honest figure of small data)."""
    from promptevolver.rundir import read_chosen_judge

    _, directory, result = run
    figures = read_chosen_judge(directory / "best_instructions.json").figures
    best = result["scores"]["best"]
    for key in ("train", "validation", "cross_validated"):
        assert figures.get(key) == best.get(key), key


def test_the_ladder_table_pairs_each_rung_with_its_own_ladder_and_round(run):
    """Each row of the ladder table is a rung of the ladder its fold column names (result.json's
    stages.distill.ladders, in rung order) and lists the lessons recorded as applied by that
    ladder in that round; a rung two ladders wrote word for word is shown in both."""
    _, directory, result = run
    md = (directory / "report.md").read_text()
    ladders = result["stages"].get("distill", {}).get("ladders") or {}
    if "The ladder:" not in md:
        assert not any(x.get("applied_round") for x in result.get("lessons") or [])
        return
    table = md.split("The ladder:", 1)[1].split("\n\n", 2)[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    shown: dict[str, list[int]] = {}
    for rung, fold, round_, _, lessons in rows:
        shown.setdefault(fold, []).append(int(rung.lstrip("#").split()[0]))
        applied = [
            x["text"]
            for x in result["lessons"]
            if x.get("applied_round") == int(round_)
            and x.get("fold") == (None if fold == "all" else int(fold))
        ]
        assert applied, (fold, round_)
        assert lessons.count("(evidence ") == len(applied), (fold, round_)
        assert all(text[:40] in lessons for text in applied), (fold, round_)
    assert shown == {name: ids for name, ids in ladders.items() if ids}


def test_the_summary_line_names_only_figures_the_run_measured(run, tmp_path):
    """optimize's first line: a refit's cross-validated figure; a seed kept on small data, its one
    figure on every usable sample (it learned from none); never a validation figure of a run
    that held nothing out."""
    from promptevolver.runs._outcome import outcome_lines

    _, directory, result = run
    (first,) = outcome_lines(OptimizationResult.from_dict(result), directory, quiet=True)
    split, best = result["split"], result["scores"]["best"]
    if "cross_validated" in best:
        assert f"best cross-validated {best['cross_validated']:.3f}" in first
        figure = result["final_choice"].get("seed_figure") or {}
        estimated = figure.get("method") == "prediction_powered"
        said = f"(prediction-powered: {figure.get('fresh')} of {figure.get('of')} judged afresh)"
        assert (said in first) == estimated  # the seed's figure says how it was made
    elif split["regime"] == "out-of-bag" and result["best_id"] == 0:
        assert f"seed kept: {best['validation']:.3f} on all {split['train']} usable annotations" in first
        assert "validation" not in first
    else:
        shown = ["n/a" if best[k] is None else f"{best[k]:.3f}" for k in ("train", "validation")]
        assert f"best train {shown[0]} validation {shown[1]}" in first


def test_no_report_describes_a_part_the_run_did_not_have(run):
    """Small data holds nothing out: no caption, split line or table counts '0' samples of a
    validation part, and a refit's candidates are shown as cross-validated on every sample."""
    _, directory, result = run
    md = (directory / "report.md").read_text()
    assert not re.search(r"\bon 0 samples|\bfrom 0 of them|\b\d+ of 0\b", md)
    if "cross_validated" in result["scores"]["best"]:
        section = _section(md, "Candidates, cross-validated")
        assert f"on {result['split']['train']} samples" in section
        assert "## Candidates on validation" not in md
