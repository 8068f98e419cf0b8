"""Files a run writes honour the umask (0o644 under umask 022, 0o600 under 077), atomically all
the same: a report another user, a web server or a CI upload must read is readable where the
umask allows it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptevolver import rundir

from ..conftest import ROOT

UMASKS = [0o022, 0o077, 0o002, 0o027]


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", UMASKS, indirect=True, ids=oct)
def test_an_atomic_write_has_the_mode_the_umask_leaves(tmp_path: Path, umask: int) -> None:
    text = rundir.write_atomic(tmp_path / "report.html", "<html></html>")
    data = rundir.write_json(tmp_path / "result.json", {"a": 1}, indent=2)
    again = rundir.write_atomic(tmp_path / "report.html", b"replaced")  # replacing keeps the rule
    for path in (text, data, again):
        assert _mode(path) == 0o666 & ~umask
    assert again.read_bytes() == b"replaced"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "result.json"]  # no .tmp


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=oct)
def test_every_file_of_a_run_directory_honours_the_umask(tmp_path: Path, mask: int) -> None:
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "promptevolver.cli",
        "optimize",
        str(ROOT / "configs" / "answer_correctness.yaml"),
        "--output",
        str(out),
        "-q",
    ]
    done = subprocess.run(
        command, cwd=tmp_path, preexec_fn=lambda: os.umask(mask), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"report.html", "result.json", "checkpoint.json", "journal.jsonl"}
    assert {str(p.relative_to(out)): oct(_mode(p)) for p in files} == {
        str(p.relative_to(out)): oct(0o666 & ~mask) for p in files
    }
