"""The progress bar is drawn against the calls the run is expected to make (what ``estimate``
says), not against their bound (8x the real count on small data), and a terminal of 0 columns
gets plain lines instead of nothing. The terminals are real pseudo-terminals, sized by ioctl."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from promptevolver.config._models import load_run_config
from promptevolver.runs._estimate import estimate
from promptevolver.runs.progress import CallProgress

from ..rundirs import AC_CONFIG


@pytest.mark.parametrize(
    ("expected", "bound", "calls", "total"),
    [
        (100, 800, 0, 100),
        (100, 800, 99, 100),
        (100, 800, 100, 125),  # past the expectation: a quarter more at a time
        (100, 800, 130, 150),
        (100, 120, 130, 130),  # never past the bound, never below the count
        (None, 800, 10, 800),  # no expectation: the bound
        (0, 800, 10, 800),
    ],
)
def test_the_total_is_the_expected_count_growing_past_it_within_the_bound(expected, bound, calls, total):
    progress = CallProgress(bar=False, write=lambda _: None, expected=expected)
    progress.calls, progress.bound = calls, bound
    assert progress.total() == total


def _run_on_a_terminal(tmp_path: Path, columns: int) -> str:
    """``promptevolver optimize`` with stderr on a pseudo-terminal of ``columns`` columns; all
    that terminal received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    process = subprocess.Popen(
        [sys.executable, "-m", "promptevolver", "optimize", str(AC_CONFIG), "-o", str(tmp_path / "run")],
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the slave end closed: the program ended
            break
        if not data:
            break
        chunks.append(data)
    assert process.wait(timeout=300) == 0
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_zero_column_terminal_gets_plain_lines_against_the_expected_count(tmp_path):
    expected = estimate(load_run_config(AC_CONFIG)).total_calls
    shown = _run_on_a_terminal(tmp_path, 0)
    assert f"of ~{expected:,} expected, at most " in shown  # plain lines, the expectation in them
    assert "\r" not in shown.replace("\r\n", "\n")  # nothing that redraws


def test_a_sized_terminal_draws_the_bar_against_the_expected_count(tmp_path):
    e = estimate(load_run_config(AC_CONFIG))
    shown = _run_on_a_terminal(tmp_path, 100)
    totals = {int(t) for t in re.findall(r"\d+/(\d+) \[", shown)}
    made = int(re.findall(r"(\d+)/\1 \[", shown)[-1])  # the last draw: the real count, full
    assert e.total_calls in totals and e.max_calls not in totals  # the expectation, not the bound
    assert totals <= {e.total_calls, made} | set(range(e.total_calls, made + 1))
    assert f"at most {e.max_calls:,}" in shown
