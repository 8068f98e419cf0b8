"""Benchmark: the 1–5 rubric judge (configs/helpfulness_rubric.yaml) over seeds.

Seed vs best MSE on held-out samples (and MAE, exact, within-one, weighted kappa, re-judged), and
the calls each run spends, with the simulated LLM. Writes benchmarks/results/bench_rubric.{json,md}.

Run: ``python -m benchmarks.quality.rubric [--seeds 0 1 2 3 4] [--config PATH]``
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

from benchmarks.quality.metric_kinds import Setup, bench  # noqa: E402
from promptevolver import GeneticOptimizer  # noqa: E402
from promptevolver.config._build import build_llm, build_loss, build_metric, load_dataset  # noqa: E402
from promptevolver.config._models import RunConfig, load_run_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def setup_of(config: RunConfig) -> Setup:
    """A benchmark setup that runs ``config`` as ``promptevolver optimize`` does, one seed at a time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bundled files list their unusable samples
        dataset = load_dataset(config)
    metric = build_metric(config.metric, temperature=config.llm.temperature)

    def make_llm(seed: int):  # type: ignore[no-untyped-def]
        return build_llm(config.llm, dataset=dataset, random_seed=seed)

    def optimize(seed: int, llm):  # type: ignore[no-untyped-def]
        options = config.model_copy(update={"random_seed": seed}).effective_optimizer()
        return GeneticOptimizer(metric=metric, llm=llm).optimize(dataset, build_loss(config.loss), options)

    return Setup(dataset, metric, make_llm, optimize, binary=config.loss.type == "binary")


def main(default: str, name: str, title: str) -> None:
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / default)
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="default: the config's seeds")
    args = parser.parse_args()
    config = load_run_config(args.config)
    bench(name, title, setup_of(config), args.seeds or config.seeds or [42])


if __name__ == "__main__":
    main("helpfulness_rubric.yaml", "bench_rubric", "Rubric judge (1-5 helpfulness), MSELoss")
