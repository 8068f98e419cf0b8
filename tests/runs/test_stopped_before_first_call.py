"""A run that stops before its first LLM call leaves no debris.

Whatever stops it (the server check against a closed port, a refused key or an unknown model; a
missing dataset; a budget refused; Ctrl-C), ``optimize -o NEW`` exits non-zero with one line and
leaves no NEW folder (nor the parents it made); an empty folder is left empty; and a resume whose
preflight fails leaves the previous run's directory byte for byte as it was. The HTTP cases use
the real OpenAI client against the project's local server (:mod:`promptevolver.testing`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.config._models import load_run_config
from promptevolver.errors import PermanentLLMError
from promptevolver.runs._optimize import execute
from promptevolver.testing import DIALECTS, LocalOpenAIServer

from ..conftest import ROOT
from ..rundirs import SYNTHETIC, interrupt_after

MODEL = "m"


def _closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _openai(base_url: str) -> dict[str, Any]:
    return {"provider": "openai", "model": MODEL, "base_url": base_url, "cache": None}


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _tree(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every entry under ``directory``: relative path -> (bytes, mode, mtime in ns)."""
    found = {}
    for p in sorted(directory.rglob("*")):
        st = p.lstat()
        held = p.read_bytes() if p.is_file() else b""
        found[str(p.relative_to(directory))] = (held, st.st_mode, st.st_mtime_ns)
    return found


# --- each cause of a stop before the first call ------------------------------------------------------


def _closed(_: Path) -> AbstractContextManager[dict[str, Any]]:
    return nullcontext({"llm": _openai(f"http://127.0.0.1:{_closed_port()}/v1")})


def _server(**options: Any) -> Callable[[Path], AbstractContextManager[dict[str, Any]]]:
    import contextlib

    @contextlib.contextmanager
    def serve(_: Path) -> Iterator[dict[str, Any]]:
        with LocalOpenAIServer(lambda body: "OK", **options) as srv:
            yield {"llm": _openai(srv.base_url)}
            assert [body.get("max_tokens") for body in srv.requests] in ([], [1])  # the check alone

    return serve


def _missing_dataset(tmp_path: Path) -> AbstractContextManager[dict[str, Any]]:
    return nullcontext({"dataset": str(tmp_path / "absent.json")})


def _budget_refused(_: Path) -> AbstractContextManager[dict[str, Any]]:
    return nullcontext({"budget": {"max_calls": 3}})


CAUSES = {
    "connection refused": (_closed, "cannot connect to http://127.0.0.1:"),
    "key refused (401)": (
        _server(dialect=DIALECTS["openai"], models=[MODEL], api_key="sk-right"),
        "rejected the API key from OPENAI_API_KEY (401)",
    ),
    "model not found (404)": (_server(models=["other-model"]), f"model '{MODEL}' not found at"),
    "dataset missing": (_missing_dataset, "absent.json: file not found"),
    "budget refused": (_budget_refused, "budget.max_calls=3 is too small"),
}


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _fails_in_one_line(
    tmp_path: Path, config: dict, cause: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``optimize`` of ``config`` made to fail by ``cause`` into ``new/NAME``: exit 1, one line
    naming the cause."""
    make, said = CAUSES[cause]
    with make(tmp_path) as changes:
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump({**config, **changes}))
        assert main(["optimize", str(path), "-o", str(tmp_path / "new" / name), "-q"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("promptevolver: error: ") and said in line


@pytest.mark.parametrize("cause", list(CAUSES))
def test_a_run_that_cannot_start_leaves_no_new_folder(
    tmp_path: Path, cause: str, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _fails_in_one_line(tmp_path, SYNTHETIC, cause, "run", capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]  # neither new/run nor new


@pytest.mark.parametrize("cause", ["connection refused", "key refused (401)", "model not found (404)"])
def test_a_job_whose_server_cannot_serve_it_leaves_no_folder(
    tmp_path: Path, cause: str, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job of several metrics (one llm for all): one line for the job, not a failed job's files."""
    job = yaml.safe_load((ROOT / "configs" / "two_metrics.yaml").read_text())
    job["dataset"] = str(ROOT / "benchmarks" / "data" / "two_metrics.json")
    _fails_in_one_line(tmp_path, job, cause, "job", capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


@pytest.mark.parametrize("cause", ["connection refused", "budget refused"])
def test_an_empty_folder_given_as_output_is_left_empty(
    tmp_path: Path, cause: str, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with CAUSES[cause][0](tmp_path) as changes:
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump({**SYNTHETIC, **changes}))
        assert main(["optimize", str(config), "-o", str(out), "-q"]) == 1
    _one_line(capsys.readouterr().err)
    assert out.is_dir() and list(out.iterdir()) == []


def test_the_run_after_a_failed_start_runs_in_the_same_folder(
    tmp_path: Path, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**SYNTHETIC, "llm": _openai(f"http://127.0.0.1:{_closed_port()}/v1")}))
    run = tmp_path / "run"
    assert main(["optimize", str(config), "-o", str(run), "-q"]) == 1
    assert not run.exists()
    config.write_text(yaml.safe_dump(SYNTHETIC))
    assert main(["optimize", str(config), "-o", str(run), "-q"]) == 0
    assert rundir.run_status(run) == "finished"


def test_the_optimizer_given_a_new_run_dir_leaves_none_when_its_preflight_fails(tmp_path: Path) -> None:
    """The Python path: GeneticOptimizer.optimize(run_dir=NEW) against a closed port."""
    from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
    from promptevolver.llm.openai import OpenAIClient
    from promptevolver.simulation.synthetic import SyntheticSpec, generate

    llm = OpenAIClient(model=MODEL, base_url=f"http://127.0.0.1:{_closed_port()}/v1", api_key="sk-t")
    metric = AspectCritic(name="answer_correctness", definition="correct?")
    optimizer = GeneticOptimizer(metric=metric, llm=llm)
    data = generate(SyntheticSpec(n_samples=40, random_seed=0))
    with pytest.raises(PermanentLLMError, match="connection refused"):
        optimizer.optimize(data, BinaryMetricLoss(), {"population_size": 2}, run_dir=tmp_path / "a" / "run")
    assert list(tmp_path.iterdir()) == []


# --- a resume whose preflight fails ------------------------------------------------------------------


@pytest.fixture
def simulated_server() -> Iterator[LocalOpenAIServer]:
    """A local server answering as the simulated judge of the synthetic config's samples."""
    from promptevolver.llm import SimulatedJudgeLLM
    from promptevolver.simulation.synthetic import SyntheticSpec, generate
    from promptevolver.testing import simulated_handler

    spec = SyntheticSpec(**SYNTHETIC["dataset"]["synthetic"])
    with LocalOpenAIServer(
        simulated_handler(SimulatedJudgeLLM(dataset=generate(spec), random_seed=0)), models=[MODEL]
    ) as srv:
        yield srv


@pytest.fixture
def interrupted_openai_run(tmp_path: Path, key: None, simulated_server: LocalOpenAIServer) -> Path:
    """A run of the synthetic config against the simulated server, interrupted by Ctrl-C after
    30 calls (its checkpoint and journal in place)."""
    run = tmp_path / "run"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**SYNTHETIC, "llm": _openai(simulated_server.base_url)}))
    with pytest.raises(KeyboardInterrupt):
        execute(load_run_config(config), run, callbacks=[interrupt_after(30)])
    assert rundir.run_status(run) == "interrupted"
    for p in run.rglob("*"):  # times in 1970: a rewrite, even within the same clock tick, shows
        os.utime(p, ns=(0, 0), follow_symlinks=False)
    return run


@pytest.mark.parametrize("cause", ["connection refused", "key refused (401)", "model not found (404)"])
def test_a_resume_whose_preflight_fails_leaves_the_run_as_it_was(
    interrupted_openai_run: Path, tmp_path: Path, cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = interrupted_openai_run
    before = _tree(run)
    make, said = CAUSES[cause]
    with make(tmp_path) as changes:
        url = changes["llm"]["base_url"]
        assert main(["optimize", "--resume", str(run), "-q", "--set", f"llm.base_url={url}"]) == 1
    assert said in _one_line(capsys.readouterr().err)
    assert _tree(run) == before


def test_a_resume_refused_before_its_first_call_keeps_the_runs_config(
    interrupted_openai_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server answers, the run's own checks refuse the new settings (a cost bound on a model
    with no price): config.yaml stays the one the run wrote, so a plain --resume still works."""
    run = interrupted_openai_run
    before = (run / rundir.CONFIG_FILE).read_bytes()
    assert main(["optimize", "--resume", str(run), "-q", "--set", "budget.max_cost_usd=1"]) == 1
    assert "needs a price for every LLM" in _one_line(capsys.readouterr().err)
    assert (run / rundir.CONFIG_FILE).read_bytes() == before
    assert main(["optimize", "--resume", str(run), "-q"]) == 0


# --- the lock's part: what it removes, and what never ------------------------------------------------


class Stop(Exception):
    pass


def test_the_lock_of_a_folder_it_made_removes_it_with_its_new_parents_on_failure(tmp_path: Path) -> None:
    with pytest.raises(Stop), rundir.locked(tmp_path / "a" / "b" / "run") as lock:
        rundir.write_atomic(lock.parent / rundir.CONFIG_FILE, "{}")
        (lock.parent / rundir.JOURNAL_FILE).write_text("")
        with rundir.locked(lock.parent):  # re-entrant: the outermost block decides
            raise Stop
    assert list(tmp_path.iterdir()) == []


def test_the_lock_keeps_what_it_did_not_write_or_a_run_that_started(tmp_path: Path) -> None:
    noted, started, answered = tmp_path / "noted", tmp_path / "started", tmp_path / "answered"
    with pytest.raises(Stop), rundir.locked(noted):
        (noted / "notes.txt").write_text("mine")  # someone's file, written meanwhile
        raise Stop
    with pytest.raises(Stop), rundir.locked(started):
        rundir.write_json(started / rundir.CHECKPOINT_FILE, {"fingerprint": "f"})
        raise Stop
    with pytest.raises(Stop), rundir.locked(answered):
        (answered / rundir.JOURNAL_FILE).write_text('{"key": "k", "op": "judge", "text": "{}"}\n')
        raise Stop
    assert (noted / "notes.txt").read_text() == "mine"
    assert rundir.run_status(started) == rundir.run_status(answered) == "interrupted"


def test_the_lock_of_a_folder_that_held_something_removes_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with rundir.locked(run):
        rundir.write_atomic(run / rundir.CONFIG_FILE, "{}")  # a run that stopped at its preflight, before
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(Stop), rundir.locked(run):
        raise Stop
    assert sorted(p.name for p in run.iterdir()) == before == [rundir.OWNER_FILE, rundir.CONFIG_FILE]
