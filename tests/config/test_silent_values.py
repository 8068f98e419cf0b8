"""Issue 24, items 8 and 9: values that were silently accepted or explained unclearly get one
clear error (naming the file, key, sample and field) or warning, before any LLM call."""

from __future__ import annotations

import copy
import errno
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main

from ..conftest import AC_DEFINITION, AC_FILE

BASE: dict[str, Any] = {
    "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
    "optimizer": {"population_size": 4, "generations": 1},
    "random_seed": 0,
}


def _write(tmp_path: Path, data: Any, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _run(
    tmp_path: Path, capsys, *sets: str, dataset: Path = AC_FILE, quiet: bool = True
) -> tuple[int, list[str]]:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({**BASE, "dataset": str(dataset)}))
    argv = ["optimize", str(config), "-o", str(tmp_path / "run"), *(["-q"] if quiet else [])]
    for item in sets:
        argv += ["--set", item]
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, [line for line in err.splitlines() if line.strip()]


# -- config values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("optimizer.generations=true", "optimizer.generations: expected a number, got true"),
        ("optimizer.population_size=false", "optimizer.population_size: expected a number, got false"),
        ("budget.max_calls=true", "budget.max_calls: expected a number, got true"),
        ("llm.timeout_s=true", "llm.timeout_s: expected a number, got true"),
        ("optimizer.elite_count=10", "elite_count: 10 elites cannot be kept in a population of 4"),
        ("budget.max_cost_usd=.nan", "budget.max_cost_usd: Input should be a finite number"),
        ("llm.timeout_s=.inf", "llm.timeout_s: Input should be a finite number"),
    ],
)
def test_a_value_that_makes_no_sense_is_one_error_naming_the_key(tmp_path, capsys, override, said):
    rc, lines = _run(tmp_path, capsys, override)
    assert rc == 1 and len(lines) == 1 and said in lines[0], lines
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("sets", "said"),
    [
        (
            ("optimizer.mutation_weight=0", "optimizer.crossover_weight=0"),
            "mutation_weight and optimizer.crossover_weight are both 0: no offspring",
        ),
        (("optimizer.population_size=101", "optimizer.generations=0"), "population_size=101 is large"),
    ],
)
def test_a_costly_or_idle_setting_is_warned_about(tmp_path, capsys, sets, said, monkeypatch):
    # Stop right after the config is read: the warning is given before anything else.
    from promptevolver.runs import _optimize as optimize

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(optimize, "load_dataset", stop)
    rc, lines = _run(tmp_path, capsys, *sets, quiet=False)
    warned = [line for line in lines if line.startswith("promptevolver: warning:")]
    assert rc == 130 and len(warned) == 1 and said in warned[0], lines


def test_sensible_boolean_and_numbers_are_still_accepted(tmp_path, capsys, monkeypatch):
    from promptevolver.runs import _optimize as optimize

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(optimize, "load_dataset", stop)
    rc, lines = _run(
        tmp_path, capsys, "optimizer.reverse_engineer=false", "optimizer.elite_count=4", quiet=False
    )
    assert rc == 130 and not any("warning" in line or "error" in line for line in lines), lines


# -- annotation values -----------------------------------------------------------------------------


def _annotations() -> dict[str, Any]:
    return copy.deepcopy(json.loads(AC_FILE.read_text()))


@pytest.mark.parametrize("verdict", [2, "yes", None, True, 0.5, -1])
@pytest.mark.parametrize("part", ["prompt_output", "edited_output"])
def test_a_recorded_verdict_that_is_not_0_or_1_is_one_error_naming_the_sample(
    tmp_path, capsys, verdict, part
):
    data = _annotations()
    prompt = data["answer_correctness"][3]["prompts"]["single_turn_aspect_critic_prompt"]
    prompt[part] = {**(prompt.get(part) or {"reason": "r"}), "verdict": verdict}
    rc, lines = _run(tmp_path, capsys, dataset=_write(tmp_path, data))
    assert rc == 1 and len(lines) == 1, lines
    assert "sample 3" in lines[0] and f"prompts.single_turn_aspect_critic_prompt.{part}.verdict" in lines[0]
    assert "data.json" in lines[0] and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("response", 12345), ("user_input", ["a"]), ("reference", {"x": 1}), ("retrieved_contexts", ["a", 3])],
)
def test_an_input_that_is_not_text_is_one_error_naming_the_sample_and_field(tmp_path, capsys, field, value):
    data = _annotations()
    data["answer_correctness"][5]["metric_input"][field] = value
    rc, lines = _run(tmp_path, capsys, dataset=_write(tmp_path, data))
    assert rc == 1 and len(lines) == 1, lines
    assert "sample 5" in lines[0] and f"metric_input.{field}" in lines[0]


def test_a_metric_without_samples_says_so(tmp_path, capsys):
    rc, lines = _run(tmp_path, capsys, dataset=_write(tmp_path, {"answer_correctness": []}))
    assert rc == 1 and len(lines) == 1 and "has no samples" in lines[0], lines
    assert "numeric" not in lines[0]


# -- a full disk -----------------------------------------------------------------------------------


@pytest.mark.parametrize("after_writes", [0, 3])
def test_a_full_disk_names_the_run_and_says_whether_it_can_be_resumed(
    tmp_path, capsys, monkeypatch, after_writes
):
    real = rundir.os.fsync
    writes = []

    def fsync(fd: int) -> None:
        writes.append(fd)
        if len(writes) > after_writes:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(rundir.os, "fsync", fsync)
    rc, lines = _run(tmp_path, capsys)
    assert rc == 1 and len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("promptevolver: error: No space left on device while writing")
    assert str(tmp_path / "run") in line
    resumable = (tmp_path / "run" / rundir.CHECKPOINT_FILE).is_file()
    assert ("--resume" in line) == resumable and ("start it again" in line) == (not resumable)
