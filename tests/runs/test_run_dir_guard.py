"""Issue 24, items 2, 7 and 10: a resume cannot change what a judgement means; one process at a
time writes a run directory; an interrupt at the end of a run still exits 130 with one line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.config._models import BudgetConfig
from promptevolver.errors import CheckpointError
from promptevolver.runs._resume import check_same_search

from ..rundirs import SYNTHETIC, optimize_into


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return optimize_into(
        tmp_path_factory.mktemp("guard") / "run", {**SYNTHETIC, "optimizer": {"generations": 1}}
    )


# -- item 2: a resume that changes the judge is refused, naming the keys -------------------------


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("metric.definition=Is the answer polite?", "metric.definition"),
        ("metric.num_judges=3", "metric.num_judges"),
        ("llm.temperature=0.9", "llm.temperature"),
        ("llm.noise=0.3", "llm.noise"),
        ("metric.name=politeness", "metric.name"),
    ],
)
def test_a_resume_that_changes_what_a_judgement_means_is_refused(tmp_path, finished, capsys, override, named):
    copy = tmp_path / "resumed"
    shutil.copytree(finished, copy)
    before = {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()}
    argv = ["optimize", "--resume", str(copy), "--set", "optimizer.generations=2", "--set", override]
    assert main(argv) == 1
    line = _one_line(capsys.readouterr().err)
    assert named in line and "changes the search" in line and "generations 1 -> 2" not in line
    after = {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()}
    assert after == before  # config.yaml, result.json and the rest untouched


def test_several_changed_judgement_keys_are_all_named(finished):
    config = rundir.read_config(finished)
    changed = config.model_copy(
        update={
            "llm": config.llm.model_copy(update={"temperature": 0.9}),
            "metric": config.metric.model_copy(update={"definition": "Polite?", "num_judges": 3}),
        }
    )
    with pytest.raises(CheckpointError) as info:
        check_same_search(finished, changed, source="x.yaml")
    for key in ("llm.temperature 0.0 -> 0.9", "metric.definition", "metric.num_judges 1 -> 3"):
        assert key in str(info.value)


def test_what_only_extends_the_search_may_change_on_resume(finished):
    config = rundir.read_config(finished)
    longer = config.model_copy(
        update={
            "optimizer": config.optimizer.model_copy(update={"generations": 5, "patience": 4}),
            "budget": BudgetConfig(max_calls=10_000),
            "llm": config.llm.model_copy(update={"timeout_s": 9.0, "max_attempts": 2}),
        }
    )
    check_same_search(finished, longer, source="x.yaml")  # no error


# -- item 7: one process at a time ---------------------------------------------------------------

_HOLD = """
import sys, time
from promptevolver.rundir import locked
with locked(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(600)
"""


def _holding(directory: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_process_on_one_directory_is_refused_naming_the_holder(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(SYNTHETIC))
    directory = tmp_path / "run"
    holder = _holding(directory)
    try:
        assert main(["optimize", str(config), "--output", str(directory)]) == 1
        line = _one_line(capsys.readouterr().err)
        assert f"pid {holder.pid} on host {socket.gethostname()}, started 20" in line
        assert "another promptevolver process" in line and "another --output" in line
        assert sorted(p.name for p in directory.iterdir()) == [
            rundir.LOCK_FILE,
            rundir.OWNER_FILE,
        ]  # the holder's
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_of_a_killed_process_is_free_and_a_resume_also_takes_it(tmp_path, finished, capsys):
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    holder = _holding(copy)
    try:
        assert main(["optimize", "--resume", str(copy), "-q"]) == 1
        assert f"pid {holder.pid}" in _one_line(capsys.readouterr().err)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # the kernel released it with the process; taken here, another process is refused
    with rundir.locked(copy), rundir.locked(copy):  # re-entrant in the process that holds it
        refused = subprocess.run([sys.executable, "-c", _HOLD, str(copy)], capture_output=True, text=True)
        assert refused.returncode == 1 and f"pid {os.getpid()}" in refused.stderr
        assert (copy / rundir.LOCK_FILE).exists()  # the inner block's end does not release it
    assert not (copy / rundir.LOCK_FILE).exists()  # removed when the run ends


def test_the_lock_file_honours_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        with rundir.locked(tmp_path / "run") as path:
            assert path.stat().st_mode & 0o077 == 0
    finally:
        os.umask(old)


# -- item 10: an interrupt at the end of a run ---------------------------------------------------


def test_ctrl_c_while_the_report_is_written_exits_130_with_one_line(tmp_path, monkeypatch, capsys):
    from promptevolver.runs import _optimize as optimize

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(SYNTHETIC))
    monkeypatch.setattr(optimize, "write_report", interrupted)
    assert main(["optimize", str(config), "--output", str(tmp_path / "run"), "-q"]) == 130
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("promptevolver: interrupted") and "--resume" in line


def test_ctrl_c_while_the_outcome_is_printed_exits_130_with_one_line(tmp_path, monkeypatch, capsys):
    from promptevolver import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(SYNTHETIC))
    monkeypatch.setattr(cli, "_print_outcome", interrupted)
    assert main(["optimize", str(config), "--output", str(tmp_path / "run"), "-q"]) == 130
    assert _one_line(capsys.readouterr().err).startswith("promptevolver: interrupted")


def test_sigint_at_any_point_of_the_end_of_a_run_never_kills_the_process_by_the_signal(tmp_path):
    """A real SIGINT to the CLI as soon as result.json exists, and at a few points after: each
    ends with exit 130 and an "interrupted" line, or (when every file was written) exit 0."""
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({**SYNTHETIC, "optimizer": {"generations": 1}}))
    for n, delay in enumerate((0.0, 0.3, 1.0)):
        directory = tmp_path / f"run{n}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "promptevolver.cli", "optimize", str(config), "-o", str(directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
        )
        while proc.poll() is None and not (directory / rundir.RESULT_FILE).exists():
            time.sleep(0.002)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate()[1]
        assert proc.returncode in (0, 130), (proc.returncode, err)
        if proc.returncode == 130:
            assert "promptevolver: interrupted" in err and "Traceback" not in err


def test_a_run_being_written_is_named_as_such_not_by_what_its_files_hold(tmp_path, finished, capsys):
    """Before: the second process read the first one's fresh checkpoint and said "holds an
    interrupted run; continue it with --resume"."""
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(SYNTHETIC))
    holder = _holding(copy)
    try:
        for argv in (["optimize", str(config), "-o", str(copy)], ["optimize", "--resume", str(copy)]):
            assert main([*argv, "-q"]) == 1
            line = _one_line(capsys.readouterr().err)
            assert f"pid {holder.pid}" in line and "finished run" not in line and "--resume" not in line
    finally:
        holder.kill()
        holder.wait()
