"""A reader that stops reading stdout (``promptevolver evaluate ... | head -1``) costs nothing: no
``[Errno 32] Broken pipe``, no traceback, and the command's own exit code (a gate's verdict
included), for every command that prints to stdout. Run as the program, in a subprocess whose
stdout is closed before it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .rundirs import AC_CONFIG, optimize_into


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    run = optimize_into(tmp_path_factory.mktemp("pipe") / "ac", AC_CONFIG)
    seed = json.loads((run / "result.json").read_text())["seed_instructions"]
    (run.parent / "seed.json").write_text(json.dumps(seed))  # 0.833 on its 18 samples: below 0.9
    return run


def _program(argv: list[str], *, closed: bool) -> tuple[int, str]:
    """Exit code and stderr of ``promptevolver ARGV``; stdout closed at once when ``closed``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "promptevolver", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    if closed:
        process.stdout.close()
        err = process.stderr.read()
    else:
        _, err = process.communicate(timeout=300)
    return process.wait(timeout=300), err


#: Each command, and its exit code (a gate's verdict for the two gates).
COMMANDS = {
    "evaluate": ["evaluate", str(AC_CONFIG), "-i", "{run}"],
    "evaluate --json": ["evaluate", str(AC_CONFIG), "-i", "{run}", "--json"],
    "gate passes": ["evaluate", str(AC_CONFIG), "-i", "{run}", "--fail-under", "0.1"],
    "gate fails": ["evaluate", str(AC_CONFIG), "-i", "{run}/../seed.json", "--fail-under", "0.9"],
    "estimate": ["estimate", str(AC_CONFIG)],
    "estimate --json": ["estimate", str(AC_CONFIG), "--json"],
    "report": ["report", "{run}"],
    "optimize": ["optimize", str(AC_CONFIG), "-o", "{fresh}"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_reader_that_leaves_gets_the_commands_own_exit_code(run, tmp_path, name):
    def argv(fresh: str) -> list[str]:
        return [a.format(run=run, fresh=tmp_path / fresh) for a in COMMANDS[name]]

    expected = 1 if name == "gate fails" else 0
    if name.startswith("gate"):  # the verdict itself, with stdout read to the end
        assert _program(argv("open"), closed=False)[0] == expected
    code, err = _program(argv("closed"), closed=True)
    assert code == expected
    assert "Broken pipe" not in err and "Traceback" not in err and "internal error" not in err
