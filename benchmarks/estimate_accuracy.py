"""How close ``promptevolver estimate`` comes to the calls of actual runs (simulated judge).

Usage: ``python benchmarks/estimate_accuracy.py [CONFIG ...]`` (default: the bundled small
configs). Prints, per config, the actual LLM calls of each seed, their mean, the estimate and the
relative error. Rerun it after changing the search: the estimate's constants
(:class:`promptevolver.runs.estimate.CostModel`) are calibrated against these runs.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from promptevolver.config.build import build_llm, build_loss, build_metric, load_dataset
from promptevolver.config.models import RunConfig, load_run_config
from promptevolver.optimizers.genetic import GeneticOptimizer
from promptevolver.runs.estimate import estimate_dataset

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT / "configs" / f"{n}.yaml" for n in ("answer_correctness", "helpfulness", "synthetic_200")]


def actual_calls(config: RunConfig, seed: int) -> tuple[int, int]:
    """(judge, meta) calls of one run of ``config`` with ``seed`` (no run directory written)."""
    config = config.model_copy(update={"random_seed": seed})
    options, dataset = config.effective_optimizer(), load_dataset(config)
    llm = build_llm(config.llm, dataset=dataset, random_seed=options.random_seed)
    result = GeneticOptimizer(metric=build_metric(config.metric), llm=llm).optimize(
        dataset=dataset, loss=build_loss(config.loss), config=options
    )
    calls = result.usage["llm_calls"]
    return calls["judge"], calls["meta"]


def main(paths: list[Path]) -> None:
    print("| config | seeds | actual calls per seed (judge + meta) | actual mean | estimate | error |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        config = load_run_config(path)
        seeds = config.seeds or [config.effective_optimizer().random_seed]
        runs = [actual_calls(config, s) for s in seeds]
        mean = statistics.fmean(j + m for j, m in runs)
        e = estimate_dataset(config, load_dataset(config))
        per_seed = ", ".join(f"{j}+{m}" for j, m in runs)
        print(
            f"| {path.stem} | {len(seeds)} | {per_seed} | {mean:.0f} | "
            f"{e.judge_calls}+{e.meta_calls} = {e.total_calls} | {e.total_calls / mean - 1:+.0%} |"
        )


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or DEFAULT)
