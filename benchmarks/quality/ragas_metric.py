"""Benchmark: real Ragas metric objects optimized through the Ragas integration, over seeds.

* a ``ragas.metrics.AspectCritic`` (helpfulness) on benchmarks/data/annotated_data.json (accuracy);
* a ``ragas.metrics.SimpleCriteriaScore`` (1–5 helpfulness) on benchmarks/data/helpfulness_rubric.json
  (MSELoss).

Each seed: ``optimize_ragas_metric`` with the simulated LLM over the file, the best instructions
written back into the Ragas object (checked), seed vs best on held-out samples and the calls
spent. Needs Ragas: ``pip install -e ".[ragas]"``. Writes
benchmarks/results/bench_ragas_{aspect_critic,simple_criteria}.{json,md}.

Run: ``python -m benchmarks.quality.ragas_metric [--seeds 0 1 2 3 4]``
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

from benchmarks.quality.metric_kinds import Setup, bench  # noqa: E402
from promptevolver import SingleMetricAnnotation  # noqa: E402
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = {"population_size": 6, "generations": 4}


def setup(file: str, make_metric: Callable[[], Any], **adapter: Any) -> Setup:
    """A setup optimizing a fresh Ragas metric per seed and checking the write-back."""
    from promptevolver.integrations.ragas import RagasMetric, optimize_ragas_metric

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = SingleMetricAnnotation.from_json(DATA / file)
    judge = RagasMetric(make_metric(), **adapter)

    def make_llm(seed: int) -> SimulatedMetricsLLM:
        return SimulatedMetricsLLM(dataset=dataset, random_seed=seed)

    def optimize(seed: int, llm: Any) -> Any:
        metric = make_metric()
        result = optimize_ragas_metric(
            metric, dataset, llm=llm, config={**CONFIG, "random_seed": seed}, **adapter
        )
        applied = {name: metric.get_prompts()[name].instruction for name in result}
        assert applied == result.best_instructions, "the best instructions were not written back"
        return result

    return Setup(dataset, judge, make_llm, optimize, binary=judge.kind == "binary")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    try:
        from promptevolver.integrations.ragas import import_ragas

        metrics = import_ragas()
    except ImportError as exc:
        print(f"bench_ragas_metric: {exc}", file=sys.stderr)
        return 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        critic, criteria = metrics.AspectCritic, metrics.SimpleCriteriaScore
    import ragas

    note = f"Ragas {ragas.__version__}; the write-back into the Ragas object is checked every seed."
    bench(
        "bench_ragas_aspect_critic",
        "Ragas AspectCritic (helpfulness) through the integration, accuracy",
        setup(
            "annotated_data.json",
            lambda: critic(
                name="helpfulness",
                definition=("Is the response helpful to the user, addressing what they asked for?"),
            ),
        ),
        args.seeds,
        [note],
    )
    bench(
        "bench_ragas_simple_criteria",
        "Ragas SimpleCriteriaScore (1-5 helpfulness) through the integration, MSELoss",
        setup(
            "helpfulness_rubric.json",
            lambda: criteria(
                name="helpfulness", definition="How helpful is the response, compared with the reference?"
            ),
            score_range=(1, 5),
        ),
        args.seeds,
        [note],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
