"""Running a config into a run directory (runs/_optimize.py): config.yaml and result.json written
atomically, result.json stamped with its format version, nothing temporary left behind."""

from __future__ import annotations

import json
import os

import pytest

from promptevolver import rundir
from promptevolver.config._models import load_run_config
from promptevolver.optimizers._result import OptimizationResult
from promptevolver.runs._optimize import write_config, write_result

from ..rundirs import AC_CONFIG, leftovers, result_of


def _result(run) -> OptimizationResult:
    return OptimizationResult.from_dict(result_of(run))


def test_a_run_stamps_result_json_with_the_format_version(kept_seed):
    text = (kept_seed / "result.json").read_text()
    assert text.startswith('{\n  "format_version": 2,\n  "metric": ')
    assert json.loads(text)["format_version"] == rundir.FORMAT_VERSION
    assert leftovers(kept_seed) == []


def test_write_result_round_trips_the_result(kept_seed, tmp_path):
    result = _result(kept_seed)
    path = write_result(tmp_path / "again", result)
    assert path == tmp_path / "again" / "result.json"
    assert _result(tmp_path / "again") == result  # duration_s aside (not compared)


def test_write_config_round_trips_the_config(tmp_path):
    config = load_run_config(AC_CONFIG)
    path = write_config(tmp_path / "new", config)
    assert path == tmp_path / "new" / "config.yaml"
    for again in (load_run_config(path), rundir.read_config(tmp_path / "new")):
        assert again.effective_optimizer() == config.effective_optimizer()
        assert again.model_dump(exclude={"budget"}) == config.model_dump(exclude={"budget"})


@pytest.mark.parametrize("writer", ["result", "config"])
def test_a_failed_write_leaves_the_old_file_intact_and_no_temporary_file(
    kept_seed, tmp_path, monkeypatch, writer
):
    target = tmp_path / ("result.json" if writer == "result" else "config.yaml")
    target.write_text("the old file\n")

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        if writer == "result":
            write_result(tmp_path, _result(kept_seed))
        else:
            write_config(tmp_path, load_run_config(AC_CONFIG))
    assert target.read_text() == "the old file\n"
    assert leftovers(tmp_path) == []


def test_an_interrupt_while_writing_the_result_keeps_the_old_result_valid(kept_seed, tmp_path, monkeypatch):
    old = (kept_seed / "result.json").read_text()
    (tmp_path / "result.json").write_text(old)

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_result(tmp_path, _result(kept_seed))
    assert json.loads((tmp_path / "result.json").read_text()) == json.loads(old)
    assert leftovers(tmp_path) == []
