"""The suite passes however it is started: a test that presses Ctrl-C passes when the shell that
started pytest left SIGINT ignored (``pytest &`` in a script, ``nohup``), as in a terminal."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

#: Tests that press Ctrl-C as the suite's do (tests/runs/test_run_dirs.py,
#: tests/optimizers/test_reliability.py): in plain code and inside ``asyncio.run``.
CTRL_C_TESTS = """
import asyncio, os, signal, time

import pytest


def test_ctrl_c_in_plain_code():
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # never reached: the signal is delivered before it


def test_ctrl_c_inside_asyncio_run():
    async def run():
        signal.raise_signal(signal.SIGINT)
        await asyncio.sleep(1)  # cancelled at once by asyncio.run's handler

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run())
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # kept across exec, as a shell's background job has it


def _pytest_with_sigint_ignored(tmp_path: Path, *plugins: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_ctrl_c.py").write_text(CTRL_C_TESTS)
    loaded = [arg for plugin in plugins for arg in ("-p", plugin)]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *loaded, str(tmp_path)]
    return subprocess.run(
        command, cwd=ROOT, preexec_fn=_ignore_sigint, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_child_really_starts_with_sigint_ignored() -> None:
    probe = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"]
    done = subprocess.run(probe, preexec_fn=_ignore_sigint, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_ctrl_c_tests_pass_with_the_suites_fixture_when_sigint_is_ignored(tmp_path: Path) -> None:
    done = _pytest_with_sigint_ignored(tmp_path, "tests.conftest")  # the suite's conftest: ctrl_c
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_without_it_they_would_fail(tmp_path: Path) -> None:
    """The fixture is what makes the difference (with SIGINT ignored each test sleeps its 1 s and fails)."""
    (tmp_path / "conftest.py").write_text("")
    done = _pytest_with_sigint_ignored(tmp_path)
    assert done.returncode == 1 and "2 failed" in done.stdout, done.stdout[-3000:]
