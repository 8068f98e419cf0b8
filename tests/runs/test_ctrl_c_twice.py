"""A second Ctrl-C while the first one's shutdown is in progress: one line, exit 130, no traceback.

A real ``promptevolver optimize`` process gets two real SIGINTs: the first while the run waits on
its judge's calls after its first checkpoint, the second while the interrupted run is shutting
down. The process is held at those two points by a small start-up script (the judge's calls wait
once the checkpoint exists; closing the journal, a step of the shutdown, waits for the second
signal), so the signals land where a user's would and never race a fast machine.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from promptevolver import rundir
from promptevolver.cli import main

from ..rundirs import SYNTHETIC, leftovers

#: The CLI, with the judge held after the first checkpoint and the shutdown held where the second
#: argument says: in a judge call's task as it is cancelled, in the run's task as it closes its
#: journal, or in the command as it closes its progress display before saying its line (files in
#: the folder given as the first argument say where the process is).
HELD_CLI = """
import asyncio, sys, time
from pathlib import Path

from promptevolver.cli import main
from promptevolver.llm import _journal
from promptevolver.runs import progress
from promptevolver.simulation import _simulated_llm

marks, where, argv = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
run = Path(argv[argv.index("-o") + 1])
send = _simulated_llm.SimulatedJudgeLLM._send
close = _journal.Journal.close
close_progress = progress.CallProgress.close


def stopping(seconds=30):
    if not (marks / "stopping").exists():
        (marks / "stopping").touch()
        time.sleep(seconds)  # the second Ctrl-C arrives here


async def held(self, request):
    if (run / "checkpoint.json").exists():
        (marks / "held").touch()
        try:
            await asyncio.sleep(3600)  # until the first Ctrl-C cancels the run
        except asyncio.CancelledError:
            if where == "judge":  # one of the judge's calls, in its own task, as it is cancelled
                stopping()
            raise
    return await send(self, request)


def slow_close(self):
    if where == "journal":  # the run's own task, closing the journal as the run stops
        stopping()
    close(self)


def slow_close_progress(self):
    if where == "command":  # the command itself, as it says how it stopped
        stopping(2)
    close_progress(self)


_simulated_llm.SimulatedJudgeLLM._send = held
progress.CallProgress.close = slow_close_progress
_journal.Journal.close = slow_close
sys.argv = ["promptevolver", *argv]
sys.exit(main())  # as the console script runs it
"""


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("where", "second_after_s"), [("judge", 0.0), ("judge", 0.2), ("journal", 0.0), ("command", 0.0)]
)
def test_a_second_ctrl_c_while_stopping_says_one_line_and_exits_130(
    tmp_path: Path, where: str, second_after_s: float
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(SYNTHETIC))
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD_CLI, str(tmp_path), where, "optimize", str(config), "-o", str(run), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    try:
        _wait_for(tmp_path / "held", proc)
        proc.send_signal(signal.SIGINT)
        _wait_for(tmp_path / "stopping", proc)
        time.sleep(second_after_s)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = err.strip().splitlines()
    assert proc.returncode == 130 and len(said) == 1 and "Traceback" not in err, err
    assert said[0].startswith(f"promptevolver: interrupted; {rundir.CHECKPOINT_FILE}")
    assert said[0].endswith(f"in {run}; continue with: promptevolver optimize --resume {run}")
    assert out == "" and leftovers(run) == [] and not (run / rundir.LOCK_FILE).exists()
    rundir.read_json(run / rundir.CHECKPOINT_FILE)  # whole: written before, atomically
    assert main(["optimize", "--resume", str(run), "-q"]) == 0
    assert rundir.run_status(run) == "finished"
