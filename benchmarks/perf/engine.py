"""Engine performance: overhead per judge evaluation, peak memory, growth with sample count.

Run: ``python -m benchmarks.perf.engine [--quick]``. Prints a Markdown table and writes
``benchmarks/results/engine.json``. Figures, never assertions: machines are shared and noisy.

1. **Overhead per evaluation** — a whole optimization on the 20,000-sample synthetic set with a
   zero-latency LLM that answers a constant verdict (time inside the LLM measured and
   subtracted): engine seconds / judge calls. Target ≤ 100 µs.
2. **Peak memory** — ``promptevolver optimize configs/synthetic_20000.yaml`` in a child process,
   its maximum resident set size. Target ≤ 1 GiB.
3. **Growth** — wall time of one seed of the 200 / 2,000 / 20,000-sample configs with the
   simulated LLM; the ratio to the 200-sample run (linear would be 10× and 100× for the whole
   pipeline; with the default sample caps the search itself stays flat).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.config._models import load_run_config
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.runs._optimize import execute
from promptevolver.simulation.synthetic import SyntheticSpec, generate

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"


class _TimedConstant:
    """A zero-latency LLM handler that records the seconds spent inside it."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, request: LLMRequest) -> str:
        start = time.perf_counter()
        if request.operation == "judge":
            text = '{"reason": "ok", "verdict": 1}'
        elif request.operation == "feedback":
            text = '{"feedback": ["be stricter"]}'
        else:
            text = json.dumps({"instruction": f"{request.operation} {request.sample_index}"})
        self.seconds += time.perf_counter() - start
        return text


def overhead_per_evaluation(n_samples: int, max_train: int) -> dict[str, float]:
    dataset = generate(SyntheticSpec(n_samples=n_samples, random_seed=0))
    handler = _TimedConstant()
    llm = ScriptedLLM(handler=handler)
    metric = AspectCritic(name="answer_correctness", definition="Is the response correct?")
    config = {
        "population_size": 6,
        "generations": 2,
        "random_seed": 0,
        "max_train_samples": max_train,
        "max_validation_samples": max_train,
        "patience": 5,
        "minibatch_size": 0,  # no screening: every candidate judged on all of train
    }
    start = time.perf_counter()
    result = GeneticOptimizer(metric=metric, llm=llm).optimize(
        dataset=dataset, loss=BinaryMetricLoss(), config=config
    )
    wall = time.perf_counter() - start
    judge = result.usage["llm_calls"]["judge"]
    return {
        "samples": n_samples,
        "judge_calls": judge,
        "wall_s": wall,
        "llm_s": handler.seconds,
        "engine_us_per_evaluation": (wall - handler.seconds) / judge * 1e6,
    }


def peak_memory_mib(config: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "promptevolver.cli", "optimize", str(config), "--output", out, "-q"],
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - start
    rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"config": config.name, "peak_rss_mib": rss_kib / 1024, "wall_s": wall}


def growth(names: list[str]) -> list[dict[str, float]]:
    rows = []
    for name in names:
        config = load_run_config(CONFIGS / f"{name}.yaml").model_copy(update={"random_seed": 0})
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            result = execute(config, out)
            wall = time.perf_counter() - start
        rows.append({"config": name, "wall_s": wall, "judge_calls": result.usage["llm_calls"]["judge"]})
    base = rows[0]["wall_s"]
    for row in rows:
        row["ratio_to_first"] = row["wall_s"] / base
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 samples instead of 20,000 where possible")
    args = parser.parse_args()
    n = 2000 if args.quick else 20000
    report = {
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "overhead": overhead_per_evaluation(n, max_train=2000),
        "memory": peak_memory_mib(
            CONFIGS / ("synthetic_2000.yaml" if args.quick else "synthetic_20000.yaml")
        ),
        "growth": growth(["synthetic_200", "synthetic_2000"] + ([] if args.quick else ["synthetic_20000"])),
    }
    out = ROOT / "benchmarks" / "results" / "engine.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    o, m = report["overhead"], report["memory"]
    print(
        f"overhead: {o['engine_us_per_evaluation']:.1f} µs per evaluation over {o['judge_calls']} "
        "judge calls "
        f"({o['samples']} samples; wall {o['wall_s']:.1f} s, of which LLM {o['llm_s']:.2f} s)"
    )
    print(f"peak memory: {m['peak_rss_mib']:.0f} MiB for {m['config']} (wall {m['wall_s']:.1f} s)")
    print("| config | wall s | × first | judge calls |\n|---|---|---|---|")
    for row in report["growth"]:
        print(
            f"| {row['config']} | {row['wall_s']:.2f} | {row['ratio_to_first']:.1f} | {row['judge_calls']} |"
        )


if __name__ == "__main__":
    main()
