"""Running a config: build everything it names, optimize, and fill the run directory.

The run directory's files (their names, atomic writes and readers) belong to
:mod:`promptevolver.rundir`; this module writes config.yaml and result.json through it, and the
exports (:mod:`promptevolver.runs.export`) and the report (:mod:`promptevolver.report`) at the end.
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
from promptevolver.rundir import CONFIG_FILE, RESULT_FILE, write_atomic
from promptevolver.runs.export import write_exports

__all__ = ["CONFIG_FILE", "RESULT_FILE", "execute", "write_config", "write_result"]


def write_config(directory: str | Path, config: RunConfig) -> Path:
    """Write ``config`` as DIR/config.yaml atomically (directory created if needed); return its path.

    Raises:
        OSError: the file cannot be written (an existing one is left intact).
    """
    text = yaml.safe_dump(config.dump(relative_to=Path(directory)), sort_keys=False)
    return write_atomic(Path(directory) / CONFIG_FILE, text)


def write_result(directory: str | Path, result: OptimizationResult) -> Path:
    """Write DIR/result.json atomically (with its ``format_version``); return its path.

    Raises:
        OSError: the file cannot be written (an existing one is left intact).
    """
    path = Path(directory) / RESULT_FILE
    result.to_json(path)
    return path


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
