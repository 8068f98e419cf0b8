"""How close ``promptevolver estimate`` comes to the calls and tokens of actual runs (simulated judge).

Usage::

    python -m benchmarks.perf.estimate_accuracy [CONFIG ...]  # the bundled configs and the synthetic sets
    python -m benchmarks.perf.estimate_accuracy --fit         # ... and refit the CostModel constants

The set: the bundled single-metric configs in ``configs/`` (all but the 20,000-sample one) and
synthetic sets (:class:`promptevolver.simulation.SyntheticSpec`) — small ones of 20–90 samples,
below ``refit_below``, from several generator seeds, where the pipeline cross-validates its recipe
and refits it, and a few larger ones — each run with 3 optimizer seeds. Prints, per config, the
actual judge and meta calls (mean over the seeds) beside the estimate's, with relative errors,
and the tokens; then the mean absolute relative error over the whole set, and over its small
(refit) and larger parts. ``--fit`` searches a grid of
:class:`promptevolver.runs._estimate.CostModel` constants for the smallest mean absolute relative
error of the total calls over those runs and prints the best: rerun it after changing the search
or the simulated judge, and copy the constants into ``CostModel``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

from promptevolver.config._build import build_llm, build_loss, build_metric, load_dataset
from promptevolver.config._models import RunConfig, load_run_config
from promptevolver.optimizers._genetic import GeneticOptimizer
from promptevolver.optimizers._split import refits
from promptevolver.runs._estimate import CostModel, Estimate, estimate_dataset

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = (
    "answer_correctness",
    "helpfulness",
    "helpfulness_rubric",
    "faithfulness_statements",
    "llmbar_pairwise",
    "pandalm_pairwise",
    "synthetic_200",
    "synthetic_2000",
)
DEFAULT = [ROOT / "configs" / f"{n}.yaml" for n in BUNDLED]
#: Optimizer seeds of every config.
SEEDS = [0, 1, 2]
#: Small synthetic sets (below ``refit_below``): sizes, and the generator seeds of each.
SMALL = [20, 30, 45, 60, 75, 90]
SMALL_GENERATORS = [1, 2, 3]
#: Larger synthetic sets beside the bundled configs: (samples, population, generations).
SYNTHETIC = [(120, 4, 4), (400, 3, 4), (400, 6, 4)]
GRID = {
    "pass_rate": [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "keep_rate": [0.6, 0.7, 0.8, 0.9, 1.0],
    "learn_rate": [0.2, 0.35, 0.5, 0.7, 0.9],
    "unlearnable": [0.0, 0.2, 0.4, 0.6],
    "novelty": [0.7, 0.85, 1.0],
    "fixes_per_round": [2.0, 4.0, 6.0, 8.0, 12.0, float("inf")],
}
#: The constants of small data with a refit, fitted on the refit configs alone (they change no other
#: estimate), to the mean of the judge and meta calls' absolute relative errors.
SMALL_GRID = {
    "fold_corrections": [1.0, 1.5, 2.0, 3.0, 4.0],
    "rejected_rewrites": [0.0, 0.2, 0.3, 0.4, 0.5, 0.6],
    "fold_round_corrections": [8.0, 16.0, 32.0, 64.0, 128.0, float("inf")],
}
#: What one run is measured by (the run's ``usage``; the estimate's fields of the same name).
FIGURES = ("judge_calls", "meta_calls", "tokens")


def actual(config: RunConfig, seed: int) -> dict[str, int]:
    """Judge and meta calls and tokens of one run of ``config`` with ``seed`` (no run directory)."""
    config = config.model_copy(update={"random_seed": seed})
    options, dataset = config.effective_optimizer(), load_dataset(config)
    llm = build_llm(config.llm, dataset=dataset, random_seed=options.random_seed)
    result = GeneticOptimizer(metric=build_metric(config.metric), llm=llm).optimize(
        dataset=dataset, loss=build_loss(config.loss), config=options
    )
    usage = result.usage
    return {
        "judge_calls": usage["llm_calls"]["judge"],
        "meta_calls": usage["llm_calls"]["meta"],
        "tokens": usage["prompt_tokens"] + usage["completion_tokens"],
    }


def estimated(e: Estimate) -> dict[str, int]:
    return {
        "judge_calls": e.judge_calls,
        "meta_calls": e.meta_calls,
        "tokens": e.prompt_tokens + e.completion_tokens,
    }


def synthetic(base: RunConfig, n: int, generator: int, update: dict[str, Any] | None = None) -> RunConfig:
    """``base`` on a synthetic set of ``n`` samples drawn with ``generator``."""
    data = base.dump()
    data["dataset"] = {"synthetic": {"n_samples": n, "random_seed": generator}}
    data["optimizer"] = {**data.get("optimizer", {}), **(update or {})}
    return RunConfig.model_validate({**data, "seeds": SEEDS})


def configs(paths: list[Path]) -> list[tuple[str, RunConfig]]:
    out = [(p.stem, load_run_config(p).model_copy(update={"seeds": SEEDS})) for p in paths]
    base = load_run_config(DEFAULT[0])
    out += [(f"synthetic {n}, gen {g}", synthetic(base, n, g)) for n in SMALL for g in SMALL_GENERATORS]
    for n, pop, gens in SYNTHETIC:
        update = {"population_size": pop, "generations": gens}
        out.append((f"synthetic {n}, pop {pop}", synthetic(base, n, 1, update)))
    return out


def _error(estimate: float, mean: float) -> float | None:
    return None if mean == 0 else estimate / mean - 1


def _shown(error: float | None) -> str:
    return "n/a" if error is None else f"{error:+.0%}"


def _mare(rows: list[dict[str, Any]], figure: str) -> str:
    errors = [abs(r["errors"][figure]) for r in rows if r["errors"][figure] is not None]
    if not errors:
        return "n/a"
    spread = statistics.pstdev(errors)
    mean, largest = statistics.fmean(errors), max(errors)
    return f"{mean:.1%} (sd {spread:.1%}, largest {largest:.0%}; {len(errors)} configs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--fit", action="store_true", help="refit the CostModel constants on the runs")
    parser.add_argument(
        "--runs-file",
        type=Path,
        help="JSON of actual figures per config and seed: read if present, else written",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the bundled files' unusable samples, said once per load
    known = json.loads(args.runs_file.read_text()) if args.runs_file and args.runs_file.is_file() else {}
    rows: list[dict[str, Any]] = []
    print(
        "| config | usable | judge calls: actual mean / estimate / error | meta calls: actual mean / "
        "estimate / error | total error | tokens: actual mean / estimate / error |"
    )
    print("|---|---|---|---|---|---|")
    for name, config in configs(args.configs or DEFAULT):
        runs = known.get(name)
        if not runs or not isinstance(runs[0], dict):  # older files kept the total calls alone
            runs = [actual(config, s) for s in SEEDS]
        known[name] = runs
        if args.runs_file:  # after each config: an interrupted benchmark keeps what it measured
            args.runs_file.write_text(json.dumps(known, indent=1))
        dataset = load_dataset(config)
        e = estimated(estimate_dataset(config, dataset))
        mean = {f: statistics.fmean(r[f] for r in runs) for f in FIGURES}
        total = mean["judge_calls"] + mean["meta_calls"]
        errors = {f: _error(e[f], mean[f]) for f in FIGURES}
        errors["calls"] = _error(e["judge_calls"] + e["meta_calls"], total)
        usable = sum(y is not None for y in dataset.labels())
        small = refits(usable, config.effective_optimizer())
        row = {"name": name, "config": config, "dataset": dataset, "mean": mean, "errors": errors}
        rows.append({**row, "small": small})
        print(
            f"| {name} | {usable}{' (refit)' if small else ''} | "
            f"{mean['judge_calls']:.1f} / {e['judge_calls']} / {_shown(errors['judge_calls'])} | "
            f"{mean['meta_calls']:.1f} / {e['meta_calls']} / {_shown(errors['meta_calls'])} | "
            f"{_shown(errors['calls'])} | "
            f"{mean['tokens']:,.0f} / {e['tokens']:,} / {_shown(errors['tokens'])} |"
        )
    print("\nmean absolute relative error (sd, largest):")
    for part, chosen in (
        ("all", rows),
        ("small (refit)", [r for r in rows if r["small"]]),
        ("larger", [r for r in rows if not r["small"]]),
    ):
        figures = "; ".join(f"{f} {_mare(chosen, f)}" for f in ("calls", *FIGURES))
        print(f"- {part}: {figures}")
    if args.fit:
        fit(rows)


def fit(rows: list[dict[str, Any]]) -> None:
    """Search :data:`GRID` on the larger configs for the constants with the smallest mean (then
    largest) absolute relative error of the total calls, and :data:`SMALL_GRID` on the refit ones
    for the smallest mean of the judge and meta calls' errors."""
    larger = [r for r in rows if not r["small"]]
    small = [r for r in rows if r["small"]]

    def calls(e: Estimate, r: dict[str, Any]) -> float:
        return abs(e.total_calls / (r["mean"]["judge_calls"] + r["mean"]["meta_calls"]) - 1)

    def parts(e: Estimate, r: dict[str, Any]) -> float:
        return statistics.fmean(
            abs(getattr(e, f) / r["mean"][f] - 1) for f in ("judge_calls", "meta_calls") if r["mean"][f]
        )

    for grid, chosen, error in ((GRID, larger, calls), (SMALL_GRID, small, parts)):
        if not chosen:
            continue
        best = None
        for values in itertools.product(*grid.values()):
            model = replace(CostModel(), **dict(zip(grid, values)))
            errors = [error(estimate_dataset(r["config"], r["dataset"], model=model), r) for r in chosen]
            score = (statistics.fmean(errors), max(errors))
            if best is None or score < best[0]:
                best = (score, dict(zip(grid, values)))
        assert best is not None
        print(f"\nbest constants: {best[1]}; mean |error| {best[0][0]:.1%}, largest {best[0][1]:.1%}")
        model = replace(CostModel(), **best[1])
        for r in chosen:
            print(f"  {r['name']}: {error(estimate_dataset(r['config'], r['dataset'], model=model), r):.0%}")


if __name__ == "__main__":
    main()
