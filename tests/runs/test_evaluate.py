"""Scoring instructions on a run's validation samples (runs/_evaluate.py): the samples are the run's
result.json's, found by content (never by position) through rundir, release-0.1 results included,
newer formats refused; a run of another metric or file is an error unless --split all."""

from __future__ import annotations

import json

import pytest

from promptevolver import ConfigError
from promptevolver.cli import main
from promptevolver.config._build import load_dataset
from promptevolver.config._models import load_run_config
from promptevolver.errors import RunDirError
from promptevolver.runs._evaluate import validation_positions

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
        ({"validation_positions": [0, 999]}, "not samples of"),
    ],
)
def test_bad_positions_are_one_error_naming_the_file(kept_seed, tmp_path, ac_data, split, expected):
    run = copy_run(kept_seed, tmp_path)
    rewrite_result(run, split=split)
    with pytest.raises(ConfigError, match=expected) as exc:
        validation_positions(run, ac_data)
    assert str(run / "result.json") in str(exc.value)


def test_a_directory_that_is_not_a_run_is_named(tmp_path, ac_data):
    with pytest.raises(RunDirError, match=r"not a run directory \(no result.json in it\)"):
        validation_positions(tmp_path, ac_data)
    with pytest.raises(RunDirError, match=r"nothere: not found \(a run directory holds the result.json"):
        validation_positions(tmp_path / "nothere", ac_data)


HELP_CONFIG = AC_CONFIG.with_name("helpfulness.yaml")


def _shuffled_copy(config, tmp_path, order):
    """A config like ``config`` whose annotation file holds the same samples in ``order``."""
    raw = json.loads(config.dataset.read_text())
    metric = next(iter(raw))
    raw[metric] = [raw[metric][i] for i in order]
    path = tmp_path / "shuffled.json"
    path.write_text(json.dumps(raw))
    return config.model_copy(update={"dataset": path})


def test_the_runs_samples_are_found_by_content_in_a_reordered_file(kept_seed, tmp_path, ac_data):
    config = load_run_config(AC_CONFIG)
    order = list(reversed(range(len(ac_data.samples))))
    shuffled = load_dataset(_shuffled_copy(config, tmp_path, order))
    expected = result_of(kept_seed)["split"]["validation_positions"]
    found = validation_positions(kept_seed, shuffled, config=config)
    assert sorted(order[p] for p in found) == sorted(expected)
    assert found != sorted(expected)  # the positions moved with the samples


def test_a_result_without_content_keys_is_matched_through_its_config(kept_seed, tmp_path, ac_data):
    run = copy_run(kept_seed, tmp_path)
    result = result_of(run)
    del result["split"]["validation_keys"]
    rewrite_result(run, split=result["split"])
    assert validation_positions(run, ac_data) == result["split"]["validation_positions"]


@pytest.mark.parametrize("gate", [[], ["--fail-under", "0.5"]])
def test_a_run_of_another_metric_is_an_error_unless_split_all(kept_seed, capsys, gate):
    """The issue's case: helpfulness scored at the positions of an answer_correctness run passed."""
    argv = ["evaluate", str(HELP_CONFIG), "-i", str(kept_seed), *gate]
    assert main(argv) == 1
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and "\n" not in err and "gate passed" not in err
    assert err.startswith(
        "promptevolver: error: the instructions were optimized for metric 'answer_correctness'"
    )
    assert err.endswith("--split all scores every usable sample of the config's annotations instead")
    assert main([*argv, "--split", "all", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["split"] == "all" and card["n"] == 21  # every usable helpfulness sample


def test_a_run_of_another_file_is_an_error(improved, ac_data):
    with pytest.raises(
        ConfigError, match=r"of its \d+ validation samples are not usable samples of .*--split all"
    ):
        validation_positions(improved, ac_data, config=load_run_config(AC_CONFIG))
    argv = ["evaluate", str(AC_CONFIG), "-i", str(improved)]
    assert main(argv) == 1
    assert main([*argv, "--split", "all"]) == 0


def test_assert_agreement_refuses_a_run_of_another_metric(kept_seed):
    from promptevolver.testing import assert_agreement

    with pytest.raises(ConfigError, match="optimized for metric 'answer_correctness'"):
        assert_agreement(HELP_CONFIG, instructions=kept_seed, run=kept_seed, at_least=0.0)


def test_a_duplicated_sample_is_scored_as_often_as_the_run_held_it_out(kept_seed, tmp_path, ac_data):
    """A file holding a validation sample twice (one row per annotator, a repeated export): evaluate
    scores the samples the run held out, not every copy of their content."""
    config = load_run_config(AC_CONFIG)
    expected = result_of(kept_seed)["split"]["validation_positions"]
    twice = list(range(len(ac_data.samples))) + [expected[0]]
    doubled = load_dataset(_shuffled_copy(config, tmp_path, twice))
    run = copy_run(kept_seed, tmp_path)
    assert validation_positions(run, doubled, config=config) == expected  # the recorded positions
    moved = load_dataset(_shuffled_copy(config, tmp_path, [expected[0], *twice]))
    found = validation_positions(run, moved, config=config)
    assert len(found) == len(expected)
