"""Run directories for tests: real runs of the simulated judge written by the CLI, and copies to
degrade (shared by the tests of rundir's readers, runs/ and report/)."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver.cli import main
from promptevolver.optimizers.events import Event

from .conftest import AC_DEFINITION, ROOT

AC_CONFIG = ROOT / "configs" / "answer_correctness.yaml"
SYNTHETIC = {
    "dataset": {"synthetic": {"n_samples": 40, "random_seed": 0}},
    "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
    "optimizer": {"population_size": 4, "generations": 2, "strategy": "genetic"},  # a search's run dir
    "random_seed": 0,
}


def optimize_into(directory: Path, config: dict[str, Any] | Path, *args: str) -> Path:
    """``promptevolver optimize CONFIG -o DIR -q ARGS`` (a dict is written next to DIR first); DIR."""
    if isinstance(config, dict):
        path = directory.with_suffix(".yaml")
        path.write_text(yaml.safe_dump(config))
        config = path
    assert main(["optimize", str(config), "--output", str(directory), "-q", *args]) == 0
    return directory


def improved_run(base: Path) -> Path:
    """A run whose best candidate beats the seed on validation (synthetic, 40 samples; the first
    seed of a few for which the search improves, so a test does not hang on one seed's luck)."""
    for seed in range(4):
        run = optimize_into(base / f"improved-{seed}", {**SYNTHETIC, "random_seed": seed})
        if result_of(run)["best_id"] != 0:
            return run
    pytest.fail("no seed of the synthetic config gave a run that beats the seed; pick another config")


def kept_seed_run(base: Path) -> Path:
    """A run that keeps the seed over measured finalists: the 40-sample synthetic set, held out
    (no out-of-bag), with a confidence no finalist reaches."""
    optimizer = {**SYNTHETIC["optimizer"], "small_data": 0, "confidence": 0.999}
    run = optimize_into(base / "kept", {**SYNTHETIC, "optimizer": optimizer})
    assert result_of(run)["best_id"] == 0
    return run


def ac_run(base: Path) -> Path:
    """A genetic-search run of the bundled answer_correctness config (18 annotations: out-of-bag,
    small data): generations, patience and resume points to test."""
    return optimize_into(base / "ac", AC_CONFIG, "--set", "optimizer.strategy=genetic")


def pipeline_run(base: Path) -> Path:
    """A run of the bundled answer_correctness config with the default strategy (the pipeline)."""
    return optimize_into(base / "pipeline", AC_CONFIG)


def result_of(run: Path) -> dict[str, Any]:
    return json.loads((run / "result.json").read_text())


def rewrite_result(run: Path, **changes: Any) -> dict[str, Any]:
    """Change top-level keys of ``run``'s result.json in place (None removes a key); the new dict."""
    result = result_of(run)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    (run / "result.json").write_text(json.dumps(result))
    return result


def copy_run(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / run.name
    shutil.copytree(run, target)
    return target


def leftovers(directory: Path) -> list[str]:
    """Temporary files left anywhere under ``directory``."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*.tmp"))


def interrupt_after(calls: int) -> Callable[[Event], None]:
    """A callback that presses Ctrl-C (a real SIGINT, as a terminal sends) once ``calls`` LLM calls
    were answered; asyncio.run cancels the run and raises KeyboardInterrupt."""
    sent: list[bool] = []

    def callback(event: Event) -> None:
        if event.kind == "llm_call" and event.data["calls"] >= calls and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)

    return callback
