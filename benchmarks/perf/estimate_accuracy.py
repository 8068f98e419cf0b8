"""How close ``promptevolver estimate`` comes to the calls of actual runs (simulated judge).

Usage::

    python -m benchmarks.perf.estimate_accuracy [CONFIG ...]  # the bundled configs and a few synthetic sets
    python -m benchmarks.perf.estimate_accuracy --fit         # ... and refit the CostModel constants

Prints, per config, the actual LLM calls of each seed, their mean, the estimate and the relative
error. ``--fit`` searches a grid of :class:`promptevolver.runs._estimate.CostModel` constants for
the smallest mean absolute relative error over those runs and prints the best: rerun it after
changing the search or the simulated judge, and copy the constants into ``CostModel``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from dataclasses import replace
from pathlib import Path

from promptevolver.config._build import build_llm, build_loss, build_metric, load_dataset
from promptevolver.config._models import RunConfig, load_run_config
from promptevolver.optimizers._genetic import GeneticOptimizer
from promptevolver.runs._estimate import CostModel, estimate_dataset

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = [ROOT / "configs" / f"{n}.yaml" for n in ("answer_correctness", "helpfulness", "synthetic_200")]
#: Synthetic sets beside the bundled configs: (samples, population, generations).
SYNTHETIC = [(60, 3, 4), (120, 4, 4), (400, 3, 4), (400, 6, 4)]
GRID = {
    "pass_rate": [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "keep_rate": [0.6, 0.7, 0.8, 0.9, 1.0],
    "learn_rate": [0.2, 0.35, 0.5, 0.7, 0.9],
    "unlearnable": [0.0, 0.2, 0.4, 0.6],
    "novelty": [0.7, 0.85, 1.0],
    "fixes_per_round": [2.0, 4.0, 6.0, 8.0, 12.0, float("inf")],
}


def actual_calls(config: RunConfig, seed: int) -> int:
    """LLM calls of one run of ``config`` with ``seed`` (no run directory written)."""
    config = config.model_copy(update={"random_seed": seed})
    options, dataset = config.effective_optimizer(), load_dataset(config)
    llm = build_llm(config.llm, dataset=dataset, random_seed=options.random_seed)
    result = GeneticOptimizer(metric=build_metric(config.metric), llm=llm).optimize(
        dataset=dataset, loss=build_loss(config.loss), config=options
    )
    return sum(result.usage["llm_calls"].values())


def configs(paths: list[Path]) -> list[tuple[str, RunConfig]]:
    out = [(p.stem, load_run_config(p)) for p in paths]
    base = load_run_config(DEFAULT[0])
    for n, pop, gens in SYNTHETIC:
        update = {"population_size": pop, "generations": gens}
        out.append(
            (
                f"synthetic {n}, pop {pop}",
                base.model_copy(
                    update={
                        "dataset": {"synthetic": {"n_samples": n, "random_seed": 1}},
                        "optimizer": base.optimizer.model_copy(update=update),
                        "seeds": [0, 1, 2],
                    }
                ),
            )
        )
    return [(name, RunConfig.model_validate(c.dump())) for name, c in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--fit", action="store_true", help="refit the CostModel constants on the runs")
    parser.add_argument(
        "--runs-file", type=Path, help="JSON of actual calls per config: read if present, else written"
    )
    args = parser.parse_args()
    known = json.loads(args.runs_file.read_text()) if args.runs_file and args.runs_file.is_file() else {}
    runs = []
    print("| config | seeds | actual calls per seed | actual mean | estimate | error |")
    print("|---|---|---|---|---|---|")
    for name, config in configs(args.configs or DEFAULT):
        seeds = config.seeds or [config.effective_optimizer().random_seed]
        calls = known.get(name) or [actual_calls(config, s) for s in seeds]
        known[name] = calls
        mean = statistics.fmean(calls)
        dataset = load_dataset(config)
        e = estimate_dataset(config, dataset)
        runs.append((config, dataset, mean))
        shown, error = ", ".join(map(str, calls)), e.total_calls / mean - 1
        print(f"| {name} | {len(seeds)} | {shown} | {mean:.0f} | {e.total_calls} | {error:+.0%} |")
    if args.runs_file:
        args.runs_file.write_text(json.dumps(known, indent=1))
    if args.fit:
        best = None
        for values in itertools.product(*GRID.values()):
            model = replace(CostModel(), **dict(zip(GRID, values)))
            errors = [abs(estimate_dataset(c, d, model=model).total_calls / m - 1) for c, d, m in runs]
            score = (statistics.fmean(errors), max(errors))
            if best is None or score < best[0]:
                best = (score, dict(zip(GRID, values)))
        assert best is not None
        print(f"\nbest constants: {best[1]}; mean |error| {best[0][0]:.1%}, largest {best[0][1]:.1%}")
        model = replace(CostModel(), **best[1])
        for (name, _), (c, d, m) in zip(configs(args.configs or DEFAULT), runs):
            print(f"  {name}: {estimate_dataset(c, d, model=model).total_calls / m - 1:+.0%}")


if __name__ == "__main__":
    main()
