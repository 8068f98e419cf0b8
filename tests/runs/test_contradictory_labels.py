"""A sample that says two things of its label: its ``is_accepted`` and ``metric_output`` give one
verdict, its one prompt's ``edited_output`` the other (a newcomer's rejected sample, metric_output 1,
edited verdict 1, was taken as 0 and its edit ignored without a word). Refused in one line naming
the file, the sample and the field, before any LLM call, by ``optimize`` and by ``agreement``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from promptevolver.cli import main

from ..conftest import ROOT

SOURCE = ROOT / "benchmarks" / "data" / "edited_chain_runs.json"


def _contradicting(tmp_path, accepted: bool) -> tuple[str, int]:
    data = json.loads(SOURCE.read_text())
    name = next(iter(data))
    samples = data[name]
    index = 4
    sample = samples[index]
    sample["is_accepted"] = accepted
    prompt = next(iter(sample["prompts"].values()))
    said = sample["metric_output"] if accepted else 1 - sample["metric_output"]  # the label it gives
    prompt["edited_output"] = {"reason": "the human's words", "verdict": 1 - said}
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(data))
    return str(path), index


@pytest.mark.parametrize("accepted", [False, True])
def test_an_edited_verdict_against_the_sample_s_label_is_refused(tmp_path, capsys, accepted):
    path, index = _contradicting(tmp_path, accepted)
    config = yaml.safe_load((ROOT / "configs" / "answer_correctness.yaml").read_text())
    config["dataset"] = path
    config_path = tmp_path / "c.yaml"
    config_path.write_text(yaml.safe_dump(config))
    for argv in (["agreement", path], ["optimize", str(config_path), "--output", str(tmp_path / "run")]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert path in err and f"sample {index}" in err and "edited_output.verdict" in err
        assert "contradicts the sample's label" in err
    assert not (tmp_path / "run").exists()


def test_an_edited_verdict_that_agrees_or_a_target_that_decides_is_read(tmp_path, capsys):
    path, index = _contradicting(tmp_path, False)
    data = json.loads(Path(path).read_text())
    sample = next(iter(data.values()))[index]
    sample["target"] = next(iter(sample["prompts"].values()))["edited_output"]["verdict"]
    Path(path).write_text(json.dumps(data))
    assert main(["agreement", path, "-q"]) == 0  # the target says which is meant
    assert main(["agreement", str(SOURCE), "-q"]) == 0  # the bundled file agrees with itself
    capsys.readouterr()
