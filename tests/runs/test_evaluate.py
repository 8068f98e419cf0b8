"""Scoring instructions on a run's validation samples (runs/evaluate.py): the positions come from
the run's result.json through rundir, release-0.1 results included, newer formats refused."""

from __future__ import annotations

import json

import pytest

from promptevolver import ConfigError
from promptevolver.cli import main
from promptevolver.config.build import load_dataset
from promptevolver.config.models import load_run_config
from promptevolver.errors import RunDirError
from promptevolver.runs.evaluate import validation_positions

from ..rundirs import AC_CONFIG, copy_run, result_of, rewrite_result


@pytest.fixture(scope="module")
def ac_data():
    return load_dataset(load_run_config(AC_CONFIG))


def test_validation_positions_are_the_runs(kept_seed, ac_data):
    expected = result_of(kept_seed)["split"]["validation_positions"]
    assert validation_positions(kept_seed, ac_data) == expected
    assert validation_positions(kept_seed / "result.json", ac_data) == expected


def test_a_release_0_1_result_is_evaluated_on_its_validation_split(kept_seed, tmp_path, capsys):
    run = copy_run(kept_seed, tmp_path)
    result = rewrite_result(run, format_version=None)
    assert (
        main(["evaluate", str(AC_CONFIG), "-i", str(run / "result.json"), "--split", "validation", "--json"])
        == 0
    )
    card = json.loads(capsys.readouterr().out)
    assert card["n"] == result["split"]["validation"]
    assert card["accuracy"] == pytest.approx(result["scores"]["best"]["validation"])


def test_a_newer_result_is_refused_naming_the_file(kept_seed, tmp_path, ac_data, capsys):
    run = copy_run(kept_seed, tmp_path)
    rewrite_result(run, format_version=7)
    with pytest.raises(RunDirError, match="format version 7") as exc:
        validation_positions(run, ac_data)
    assert str(exc.value).startswith(f"{run / 'result.json'}: ")
    argv = ["evaluate", str(AC_CONFIG), "-i", str(run / "result.json"), "--split", "validation"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith(f"promptevolver: error: {run / 'result.json'}: format version 7") and "\n" not in err
    )


@pytest.mark.parametrize(
    ("split", "expected"),
    [
        ({"train": 13}, "no split.validation_positions"),
        ({"validation_positions": "0,1"}, "no split.validation_positions"),
        ({"validation_positions": [0, 999]}, "not usable samples of"),
    ],
)
def test_bad_positions_are_one_error_naming_the_file(kept_seed, tmp_path, ac_data, split, expected):
    run = copy_run(kept_seed, tmp_path)
    rewrite_result(run, split=split)
    with pytest.raises(ConfigError, match=expected) as exc:
        validation_positions(run, ac_data)
    assert str(run / "result.json") in str(exc.value)


def test_a_directory_that_is_not_a_run_is_named(tmp_path, ac_data):
    with pytest.raises(RunDirError, match=r"result.json: not found \(is .* a run directory\?\)"):
        validation_positions(tmp_path, ac_data)
