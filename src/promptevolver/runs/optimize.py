"""Run directories: what an ``optimize`` run leaves behind.

Layout::

    DIR/config.yaml        the effective run config (paths absolute), written first
    DIR/checkpoint.json    search state after the last finished generation (see checkpoint.py)
    DIR/best_so_far.json   best train candidate at the last checkpoint
    DIR/result.json        the result contract (README "Where results go"; OptimizationResult.to_dict())
    DIR/report.md, DIR/report.html, DIR/plots/   the run report (see report.py)
    DIR/best_instructions.json, DIR/apply_best.py   the best instructions to take away (export.py)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from promptevolver.config.build import build_llm, build_loss, build_metric, load_dataset
from promptevolver.config.models import RunConfig
from promptevolver.optimizers.events import Callback
from promptevolver.optimizers.genetic import GeneticOptimizer
from promptevolver.optimizers.result import OptimizationResult
from promptevolver.report.write import write_report
from promptevolver.runs.export import write_exports

__all__ = ["CONFIG_FILE", "RESULT_FILE", "execute", "write_config", "write_result"]

RESULT_FILE = "result.json"
CONFIG_FILE = "config.yaml"


def write_config(directory: str | Path, config: RunConfig) -> Path:
    """Write ``config`` as DIR/config.yaml (directory created if needed); return its path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    with (out / CONFIG_FILE).open("w", encoding="utf-8") as fh:
        yaml.safe_dump(config.dump(relative_to=out), fh, sort_keys=False)
    return out / CONFIG_FILE


def write_result(directory: str | Path, result: OptimizationResult) -> Path:
    """Write DIR/result.json; return its path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    result.to_json(out / RESULT_FILE)
    return out / RESULT_FILE


def execute(
    config: RunConfig,
    run_dir: str | Path,
    *,
    resume: bool = False,
    progress: bool = False,
    callbacks: Sequence[Callback] = (),
) -> OptimizationResult:
    """Build everything ``config`` names, optimize, and write the run directory.

    Writes config.yaml first, a checkpoint after every generation, and at the end result.json,
    the exports and the report. ``callbacks`` receive the optimizer's events.

    Raises:
        PromptEvolverError: bad data, config, budget or checkpoint (see :mod:`promptevolver.errors`).
        KeyboardInterrupt: the run was interrupted; the last checkpoint stays valid.
    """
    opt_config = config.effective_optimizer()
    dataset = load_dataset(config)
    llm = build_llm(config.llm, dataset=dataset, random_seed=opt_config.random_seed)
    reflection = None
    if config.reflection_llm is not None:
        reflection = build_llm(config.reflection_llm, dataset=dataset, random_seed=opt_config.random_seed)
    metric = build_metric(config.metric, temperature=config.llm.temperature)
    optimizer = GeneticOptimizer(
        metric=metric, llm=llm, reflection_llm=reflection, progress=progress, callbacks=callbacks
    )
    write_config(run_dir, config)
    result = optimizer.optimize(dataset, build_loss(config.loss), opt_config, run_dir=run_dir, resume=resume)
    write_result(run_dir, result)
    write_exports(run_dir, result.best_instructions, config.metric)
    write_report(run_dir, dataset=dataset)
    return result
