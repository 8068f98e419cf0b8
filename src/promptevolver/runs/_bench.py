"""Benchmarks from configs: every config over its seeds, one summary table.

``promptevolver bench CONFIG... --output DIR`` runs each config once per seed (``seeds:`` in the
config, else its ``random_seed``) and writes::

    DIR/<config name>/seed-<s>/      a run directory per seed (result.json, config.yaml, ...)
    DIR/summary.json                 per config: mean and std over seeds, plus the machine
    DIR/summary.md                   the same as a Markdown table

Columns: seed and best validation score (mean ± std over seeds), best train score, judge and
meta LLM calls, tokens (prompt + completion) and wall time in seconds (per seed, mean). A score a
run did not measure (None) is left out of the mean and counted in ``unmeasured``; with none
measured the figure is ``n/a``. Both summary files are written atomically.

Run directories are never clobbered: before any run, every target directory is checked, and if
some already hold a run the benchmark stops naming them, unless ``force`` (each is then started
afresh, as ``optimize --force``).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

from promptevolver.config import RunConfig, load_run_config
from promptevolver.errors import RunDirError
from promptevolver.optimizers import OptimizationResult
from promptevolver.optimizers.events import Callback
from promptevolver.rundir import check_ours, locked, run_status, write_atomic, write_json
from promptevolver.runs._optimize import execute

__all__ = ["machine", "run_benchmarks", "summarize_config"]


def machine() -> dict[str, Any]:
    """A description of this machine and the library versions that shape the figures."""
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "promptevolver": version("promptevolver"),
        "numpy": version("numpy"),
        "scikit-learn": version("scikit-learn"),
    }


def _mean_std(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean and population std of the measured values; ``unmeasured`` counts the None ones."""
    measured = [v for v in values if v is not None]
    stats: dict[str, Any] = {
        "mean": statistics.fmean(measured) if measured else None,
        "std": statistics.pstdev(measured) if len(measured) > 1 else (0.0 if measured else None),
    }
    if len(measured) < len(values):
        stats["unmeasured"] = len(values) - len(measured)
    return stats


def summarize_config(name: str, runs: Sequence[tuple[int, OptimizationResult, float]]) -> dict[str, Any]:
    """Aggregate (seed, result, wall seconds) of one config over its seeds."""
    results = [r for _, r, _ in runs]
    return {
        "config": name,
        "seeds": [s for s, _, _ in runs],
        "seed_validation": _mean_std([r.scores["seed"].get("validation") for r in results]),
        "best_validation": _mean_std([r.scores["best"].get("validation") for r in results]),
        "best_train": _mean_std([r.scores["best"].get("train") for r in results]),
        # small data: the refit's honest figure and the seed's beside it (neither has a validation one)
        "seed_cross_validated": _mean_std([r.scores["seed"].get("cross_validated") for r in results]),
        "best_cross_validated": _mean_std([r.scores["best"].get("cross_validated") for r in results]),
        "judge_calls": _mean_std([r.usage["llm_calls"]["judge"] for r in results]),
        "meta_calls": _mean_std([r.usage["llm_calls"]["meta"] for r in results]),
        "tokens": _mean_std([r.usage["prompt_tokens"] + r.usage["completion_tokens"] for r in results]),
        "wall_s": _mean_std([w for _, _, w in runs]),
        "stop_reasons": [r.stop_reason for r in results],
    }


def run_benchmarks(
    configs: Sequence[str | Path],
    output: str | Path,
    *,
    log: Callable[[str], None] = lambda _: None,
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    force: bool = False,
    callbacks: Callable[[str, RunConfig], Sequence[Callback]] | None = None,
) -> dict[str, Any]:
    """Run every config over its seeds and write the run directories and the summary.

    ``edit`` changes each raw config mapping before validation (the CLI's ``--set``); ``force``
    starts afresh in run directories that already hold a run; ``callbacks(label, config)`` gives
    each run's optimizer callbacks (``label``: ``"<config> seed <s>"``; e.g. progress).

    Raises:
        RunDirError: without ``force``, some run directories already hold a run (before any run);
            ``output`` is a folder promptevolver did not make, or another process writes it.
        ConfigError, AnnotationError, BudgetExceededError: as for one run (the first failure stops).
    """
    out = Path(output)
    plan = [(Path(path).stem, load_run_config(path, edit=edit)) for path in configs]
    dirs = {(name, seed): out / name / f"seed-{seed}" for name, config in plan for seed in _seeds(config)}
    check_ours(out)
    taken = [str(d) for d in dirs.values() if run_status(d) != "new"]
    if taken and not force:
        raise RunDirError(_taken(taken))
    with locked(out):  # the benchmark's folder: one benchmark at a time writes its summary
        return _run_all(plan, dirs, out, log=log, force=force, callbacks=callbacks)


def _run_all(
    plan: Sequence[tuple[str, RunConfig]],
    dirs: dict[tuple[str, int], Path],
    out: Path,
    *,
    log: Callable[[str], None],
    force: bool,
    callbacks: Callable[[str, RunConfig], Sequence[Callback]] | None,
) -> dict[str, Any]:
    rows = []
    for name, config in plan:
        runs = []
        for seed in _seeds(config):
            started = time.perf_counter()
            seeded = config.model_copy(update={"random_seed": seed})
            extra = callbacks(f"{name} seed {seed}", seeded) if callbacks is not None else ()
            result = execute(seeded, dirs[(name, seed)], force=force, callbacks=extra)
            runs.append((seed, result, time.perf_counter() - started))
            seed_val, best_val = (result.scores[who].get("validation") for who in ("seed", "best"))
            log(f"{name} seed {seed}: validation {_f(seed_val)} -> {_f(best_val)}")
        rows.append(summarize_config(name, runs))
    summary = {"machine": machine(), "configs": rows}
    write_json(out / "summary.json", summary, indent=2)
    write_atomic(out / "summary.md", to_markdown(summary))
    return summary


def _taken(taken: Sequence[str]) -> str:
    some = ", ".join(taken[:3]) + (", ..." if len(taken) > 3 else "")
    which = (
        "1 run directory of this benchmark already holds"
        if len(taken) == 1
        else f"{len(taken)} run directories of this benchmark already hold"
    )
    return f"{which} a run ({some}); nothing was run. Choose another --output, or rerun them with --force"


def _seeds(config: RunConfig) -> list[int]:
    return config.seeds or [config.effective_optimizer().random_seed]


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _pm(stat: dict[str, Any], digits: int) -> str:
    if stat["mean"] is None:
        return "n/a"
    text = f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"
    return text + (f" ({stat['unmeasured']} n/a)" if stat.get("unmeasured") else "")


def to_markdown(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table with a machine line."""
    m = summary["machine"]
    lines = [
        f"# Benchmark summary ({m['date']})",
        "",
        f"Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}; promptevolver "
        f"{m['promptevolver']}, numpy {m['numpy']}, scikit-learn {m['scikit-learn']}.",
        "",
        "| config | seeds | seed validation | best validation | best train | seed cross-validated "
        "| best cross-validated | judge calls | meta calls | tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary["configs"]:
        lines.append(
            f"| {r['config']} | {len(r['seeds'])} | {_pm(r['seed_validation'], 3)} "
            f"| {_pm(r['best_validation'], 3)} | {_pm(r['best_train'], 3)} "
            f"| {_pm(r['seed_cross_validated'], 3)} "
            f"| {_pm(r['best_cross_validated'], 3)} "
            f"| {_pm(r['judge_calls'], 0)} | {_pm(r['meta_calls'], 0)} "
            f"| {r['tokens']['mean']:.0f} | {r['wall_s']['mean']:.1f} |"
        )
    return "\n".join(lines) + "\n"
