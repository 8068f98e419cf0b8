"""``promptevolver agreement FILE`` reads a file's label kind off its values: one slip (a 2 among a
binary judge's 0/1 verdicts) used to turn the whole file numeric and count the typo as a
disagreement; it is refused naming the sample and field, while a file of scores stays numeric."""

from __future__ import annotations

import json

import pytest

from promptevolver.cli import main

from ..conftest import ROOT

SOURCE = ROOT / "benchmarks" / "data" / "edited_chain_runs.json"


def _file(tmp_path, edit) -> str:
    data = json.loads(SOURCE.read_text())
    name = next(iter(data))
    samples = data[name][:10]
    edit(samples)
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({name: samples}))
    return str(path)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("rejected", [0, 2])
@pytest.mark.parametrize("field", ["metric_output", "target"])
def test_one_stray_label_in_a_binary_judges_file_is_refused_naming_it(tmp_path, capsys, field, rejected):
    """Alone: with rejected samples, the numeric reading's warning (a rejected sample of a
    non-binary metric has no label) came first, wrong about the file and a second line."""

    def stray(samples):
        samples[7][field] = 2
        for s in samples[:rejected]:
            s["is_accepted"] = False
            s.pop("target", None)

    path = _file(tmp_path, stray)
    assert main(["agreement", path]) == 1
    line = _one_line(capsys.readouterr().err)
    assert f"sample 7, field '{field}': 2 is not 0 or 1" in line and "--scale numeric" in line
    assert main(["agreement", path, "--scale", "numeric", "-q"]) == 0  # said to be scores: measured so
    assert "MSE" in capsys.readouterr().out


def test_labels_that_are_scores_are_measured_as_numbers(tmp_path, capsys):
    def scores(samples):  # a rubric's file: labels and recorded scores 1-5
        for i, s in enumerate(samples):
            s["metric_output"] = 1 + i % 5
            s.pop("target", None)
            next(iter(s["prompts"].values()))["prompt_output"]["verdict"] = 1 + (i + i % 2) % 5

    assert main(["agreement", _file(tmp_path, scores), "-q"]) == 0
    assert "MSE" in capsys.readouterr().out


def test_more_than_a_few_non_binary_labels_are_taken_as_scores(tmp_path, capsys):
    def two(samples):  # 2 of 10: not slips by the rule (at least 9 in 10 binary)
        samples[3]["metric_output"] = 2
        samples[7]["metric_output"] = 3

    assert main(["agreement", _file(tmp_path, two), "-q"]) == 0
    assert "MSE" in capsys.readouterr().out
