"""Issue 31, items 7 and 10: one clear line per bad input, before any LLM call, and an honest exit.

Every number a config can hold given ``.nan``, ``.inf`` or ``-.inf``; a fifo or ``/dev/zero`` in
place of every file the commands read; an output folder that cannot be written; SIGTERM; every
evaluation failing; ``examples --add`` beyond its caps, or adding nothing new (free)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.config._models import RUN_LEVEL_KEYS, RunConfig
from promptevolver.testing import LocalOpenAIServer

from ..conftest import AC_DEFINITION, AC_FILE
from ..rundirs import SYNTHETIC, optimize_into

CLI = [sys.executable, "-m", "promptevolver.cli"]
BASE: dict[str, Any] = {
    "dataset": str(AC_FILE),
    "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
    "optimizer": {"population_size": 4, "generations": 1},
    "random_seed": 0,
}


def _numeric_keys(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every dotted key of a number (int or float) in ``model`` and the sections below it (a
    mapping of sections, ``llm.prices``, under the key ``fake``: the simulated model's name)."""
    for name, info in model.model_fields.items():
        found = _types(info.annotation)
        sections = [t for t in found if isinstance(t, type) and issubclass(t, BaseModel)]
        if int in found or float in found:
            yield f"{prefix}{name}"
        keyed = typing.get_origin(info.annotation) is dict
        for section in sections:
            yield from _numeric_keys(section, f"{prefix}{name}." + ("fake." if keyed else ""))


def _types(annotation: Any) -> set[Any]:
    args = typing.get_args(annotation)
    return {annotation} if not args else set().union(*(_types(a) for a in args))


#: Keys set in one place only: under optimizer they are refused as such (tested elsewhere).
_ELSEWHERE = {"random_seed", "seeds", *(f"optimizer.{k}" for k in RUN_LEVEL_KEYS)}
NUMERIC_KEYS = sorted(k for k in _numeric_keys(RunConfig) if not any(k.startswith(e) for e in _ELSEWHERE))


def test_the_walk_finds_the_numbers_of_every_section() -> None:
    for key in ("optimizer.confidence", "llm.temperature", "metric.temperature", "budget.max_cost_usd"):
        assert key in NUMERIC_KEYS
    assert any(k.startswith("optimizer.examples.") for k in NUMERIC_KEYS) and len(NUMERIC_KEYS) > 30


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_no_number_of_a_config_takes_nan_or_infinity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """``confidence: .nan`` said "should be less than 1"; every key now says what is wrong."""
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(BASE))
    unclear = []
    for key in NUMERIC_KEYS:
        code = main(["estimate", str(config), "--set", f"{key}={value}"])
        err = capsys.readouterr().err
        said = [line for line in err.splitlines() if line.strip()]
        if code == 0 or len(said) != 1 or f"{key}: Input should be a finite number" not in said[0]:
            unclear.append((key, code, said))
    assert unclear == []


# -- not a regular file --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return optimize_into(
        tmp_path_factory.mktemp("inputs") / "run", {**SYNTHETIC, "optimizer": {"generations": 1}}
    )


def _special(kind: str, tmp_path: Path) -> str:
    if kind == "fifo":
        path = tmp_path / "input.json"
        os.mkfifo(path)
        return str(path)
    return "/dev/zero"


def _commands(bad: str, tmp_path: Path, finished: Path, retrieval: Path) -> dict[str, list[str]]:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**BASE, "dataset": bad}))
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(BASE))
    return {
        "config": ["estimate", bad],
        "dataset": ["estimate", str(config)],
        "--instructions": ["evaluate", str(good), "-i", bad],
        "--pool": ["suggest", str(finished), "--pool", bad, "-n", "2"],
        "--add": ["examples", str(retrieval), "--add", bad],
    }


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("given", ["config", "dataset", "--instructions", "--pool", "--add"])
def test_a_fifo_or_a_device_is_one_line_saying_what_it_is_never_a_hang(
    tmp_path: Path, finished: Path, retrieval_run: Path, kind: str, given: str
) -> None:
    bad = _special(kind, tmp_path)
    argv = _commands(bad, tmp_path, finished, retrieval_run)[given]
    proc = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120)
    said = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(said) == 1, proc.stderr
    what = "a fifo" if kind == "fifo" else "a device"
    assert f"is {what}, not a regular file" in said[0] and "not found" not in said[0], said


# -- an output folder that cannot be written -------------------------------------------------------------


def _unwritable(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Creating a file in ``folder`` fails as in a read-only folder (chmod does not stop root)."""
    real = os.open

    def refusing(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT and Path(os.fspath(path)).parent == folder:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)


@pytest.mark.parametrize("command", ["suggest --out", "evaluate --samples-out", "examples", "report"])
def test_an_unwritable_output_is_refused_before_any_llm_call(
    tmp_path: Path,
    finished: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(BASE))
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"user_input": "q", "response": "a", "reference": "r"}) + "\n")
    argv, folder = {
        "suggest --out": (
            ["suggest", str(run), "--pool", str(pool), "-n", "1", "--out", str(readonly / "s.jsonl")],
            readonly,
        ),
        "evaluate --samples-out": (
            ["evaluate", str(good), "-i", str(run), "--samples-out", str(readonly / "x.jsonl")],
            readonly,
        ),
        "examples": (["examples", str(run), "--remove", "0"], run),
        "report": (["report", str(run)], run),
    }[command]
    calls: list[str] = []

    def no_call(name: str) -> Any:
        def called(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"{name} was reached")

        return called

    from promptevolver.runs import _evaluate, memory, suggest

    monkeypatch.setattr(_evaluate, "score_instructions", no_call("evaluate"))
    monkeypatch.setattr(memory, "score_instructions", no_call("examples"))
    monkeypatch.setattr(suggest, "build_llm", no_call("suggest"))
    _unwritable(monkeypatch, folder)
    assert main([*argv, "-q"]) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and "cannot be written (Permission denied)" in said[0], said
    assert calls == []
    if command != "report":
        assert "no LLM call was made" in said[0]


# -- SIGTERM --------------------------------------------------------------------------------------------


def test_sigterm_stops_with_one_line_exit_143_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signal always arrives mid-run: the judge's server holds every call once the run's first
    checkpoint exists, until the test has sent SIGTERM (no race with a fast machine)."""
    import threading

    from promptevolver.llm import SimulatedJudgeLLM
    from promptevolver.simulation.synthetic import SyntheticSpec, generate
    from promptevolver.testing import simulated_handler

    spec = {"n_samples": 200, "random_seed": 0}
    answer = simulated_handler(SimulatedJudgeLLM(dataset=generate(SyntheticSpec(**spec)), random_seed=0))
    run = tmp_path / "run"
    held, release = threading.Event(), threading.Event()

    def handler(body: dict[str, Any]) -> str:
        if (run / rundir.CHECKPOINT_FILE).exists() and not release.is_set():
            held.set()
            release.wait(60)
        return answer(body)

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**SYNTHETIC, "dataset": {"synthetic": spec}}))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LocalOpenAIServer(handler, models=["m"]) as srv:
        llm = _openai(srv)
        proc = subprocess.Popen(
            [*CLI, "optimize", str(config), "-o", str(run), "-q", *llm], stderr=subprocess.PIPE, text=True
        )
        try:
            assert held.wait(120), "the run never reached a call after its first checkpoint"
            proc.send_signal(signal.SIGTERM)
            err = proc.communicate(timeout=120)[1]
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        said = [line for line in err.splitlines() if line.strip()]
        assert proc.returncode == 143 and len(said) == 1, err
        assert said[0].startswith("promptevolver: stopped by SIGTERM") and "--resume" in said[0]
        assert main(["optimize", "--resume", str(run), "-q", *llm]) == 0


# -- every evaluation failed -----------------------------------------------------------------------------


@pytest.fixture
def broken_judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalOpenAIServer]:
    """A server that answers every call, never with the JSON a judge asks for."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LocalOpenAIServer(lambda body: "I'd rather not say.", models=["m"]) as srv:
        yield srv


def _openai(srv: LocalOpenAIServer) -> list[str]:
    return [
        "--set",
        "llm.provider=openai",
        "--set",
        "llm.model=m",
        "--set",
        f"llm.base_url={srv.base_url}",
        "--set",
        "llm.cache=null",
    ]


def test_evaluate_exits_1_when_every_evaluation_failed(
    tmp_path: Path, finished: Path, broken_judge: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({**BASE, "dataset": SYNTHETIC["dataset"], "metric": SYNTHETIC["metric"]}))
    assert main(["evaluate", str(good), "-i", str(finished), "-q", *_openai(broken_judge)]) == 1
    err = capsys.readouterr().err
    assert "every one of the" in err and "evaluations failed (cause parse)" in err


def test_suggest_exits_1_and_writes_nothing_when_every_evaluation_failed(
    tmp_path: Path, finished: Path, broken_judge: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(
        "".join(
            json.dumps({"user_input": f"q{i}", "response": "a", "reference": "r"}) + "\n" for i in range(3)
        )
    )
    out = tmp_path / "out.jsonl"
    argv = [
        "suggest",
        str(finished),
        "--pool",
        str(pool),
        "-n",
        "2",
        "--out",
        str(out),
        "-q",
        *_openai(broken_judge),
    ]
    assert main(argv) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and "evaluations failed (cause parse)" in said[0] and not out.exists()


def test_evaluate_of_a_job_exits_1_naming_each_metric_whose_every_evaluation_failed(
    tmp_path: Path, broken_judge: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    config = Path(__file__).parents[2] / "configs" / "two_metrics.yaml"
    job = tmp_path / "job"
    assert main(["optimize", str(config), "-o", str(job), "-q", "--set", "optimizer.generations=1"]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(config), "-i", str(job), "-q", *_openai(broken_judge)]) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("promptevolver")]
    names = list(yaml.safe_load(config.read_text())["metrics"])
    assert len(said) == len(names), said
    for name, line in zip(names, said):
        assert line.startswith(f"promptevolver: error: {name}: every one of the ")
        assert line.endswith("evaluations failed (cause parse): nothing was measured")


# -- examples --add: caps, and a no-op costs nothing --------------------------------------------------


@pytest.fixture(scope="module")
def retrieval_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ..helpers import make_dataset
    from ..optimizers.test_examples_stage import DEFINITION, _llm, _optimize

    run = tmp_path_factory.mktemp("examples") / "run"
    with rundir.locked(run):
        pass
    ds = make_dataset(60, 24)
    result = _optimize(
        ds, _llm(ds, examples_help=True), strategy="examples", examples={"policy": "retrieval"}
    )
    ds.to_json(run / "annotations.json")
    (run / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "metric": {"name": ds.name, "definition": DEFINITION},
                "dataset": str(run / "annotations.json"),
                "llm": {"provider": "fake"},
            }
        )
    )
    result.to_json(run / "result.json")
    return run


def _added(run: Path, tmp_path: Path, n: int, *, long_field: str | None = None) -> Path:
    data = json.loads((run / "annotations.json").read_text())
    template = data["samples"][0]
    samples = []
    for i in range(n):
        sample = json.loads(json.dumps(template))
        sample["metric_input"] = {"user_input": f"new question {i}", "response": f"new answer {i}"}
        samples.append(sample)
    if long_field is not None:
        samples[-1]["metric_input"][long_field] = "x" * 20_001
    path = tmp_path / "added.json"
    path.write_text(json.dumps({**data, "samples": samples}))
    return path


def test_adding_more_samples_than_a_store_holds_is_refused_before_any_call(
    retrieval_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from promptevolver.runs.memory import MAX_POOL

    before = (retrieval_run / "result.json").read_bytes()
    assert (
        main(
            [
                "examples",
                str(retrieval_run),
                "--add",
                str(_added(retrieval_run, tmp_path, MAX_POOL + 1)),
                "-q",
            ]
        )
        == 1
    )
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and f"more than {MAX_POOL}" in said[0]
    assert (retrieval_run / "result.json").read_bytes() == before


def test_an_added_sample_with_a_huge_field_is_refused_naming_it(
    retrieval_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _added(retrieval_run, tmp_path, 3, long_field="response")
    assert main(["examples", str(retrieval_run), "--add", str(path), "-q"]) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and "sample 2" in said[0] and "metric_input.response" in said[0], said
    assert "20,001 characters" in said[0]


def test_adding_only_samples_already_in_the_pool_costs_nothing_and_changes_nothing(
    retrieval_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(retrieval_run, run)
    added = _added(run, tmp_path, 3)
    assert main(["examples", str(run), "--add", str(added), "-q"]) == 0
    before = (run / "result.json").read_bytes()
    capsys.readouterr()
    assert main(["examples", str(run), "--add", str(added)]) == 0  # the same samples again
    out = capsys.readouterr().out
    assert "nothing changed" in out and "0 judge calls" in out
    assert (run / "result.json").read_bytes() == before
