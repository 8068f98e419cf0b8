"""Many judges in one job against separate runs, at 100 ms per LLM call (issue 25 A).

Run: ``python -m benchmarks.perf.many_metrics [--seeds 42 0 1] [--latency 0.1]`` from the
repository root. Writes ``benchmarks/results/many_metrics.json`` and ``.md``. Figures, never
assertions: the machine is shared.

For each seed, the two metrics of ``configs/two_metrics.yaml`` (``benchmarks/data/two_metrics.json``,
from the Ragas docs) are optimized twice on the simulated judge with a fixed ``--latency`` per call
(an ``asyncio.sleep`` before each answer, so the wall time is that of a slow server, not of this
machine): once as two separate runs one after the other (their wall times summed), once as one job
(:func:`promptevolver.runs.many.optimize_many`, one limit of ``llm.max_concurrency`` requests in
flight shared by both). Reported: both wall times and their ratio (target ≤ 0.75), each metric's
judge and meta calls both ways (target: within 2 %), and whether each metric's chosen instructions
and validation figures are the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, MetricAnnotation
from promptevolver.config._models import ManyConfig, load_config
from promptevolver.llm._base import Completion, LLMRequest, Usage
from promptevolver.llm._concurrency import waves
from promptevolver.runs.many import optimize_many
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "two_metrics.yaml"
RESULTS = ROOT / "benchmarks" / "results"


class Latency:
    """The simulated judge, answering after ``seconds``; each call's (start, end) goes to ``calls``."""

    def __init__(self, inner: SimulatedMetricsLLM, seconds: float, calls: list[tuple[float, float]]) -> None:
        self.inner, self.seconds, self.calls = inner, seconds, calls

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    async def complete(self, request: LLMRequest) -> Completion:
        start = time.monotonic()
        await asyncio.sleep(self.seconds)
        try:
            return await self.inner.complete(request)
        finally:
            self.calls.append((start, time.monotonic()))


def _setup(
    config: ManyConfig, seed: int, latency: float, calls: list[tuple[float, float]]
) -> tuple[MetricAnnotation, dict[str, Any], Any]:
    data = MetricAnnotation.from_json(config.dataset)
    judges = {n: AspectCritic(name=n, definition=spec.definition) for n, spec in config.metrics.items()}
    llms = {
        n: Latency(SimulatedMetricsLLM(dataset=data[n], random_seed=seed), latency, calls) for n in judges
    }
    options = config.model_copy(update={"random_seed": seed}).effective_optimizer()
    return data, {"judges": judges, "llms": llms}, options


def _figures(result: Any) -> dict[str, Any]:
    return {
        "calls": result.usage["llm_calls"],
        "best_instructions": result.best_instructions,
        "validation": {k: result.scores[k].get("validation") for k in ("seed", "best")},
    }


def one_seed(config: ManyConfig, seed: int, latency: float) -> dict[str, Any]:
    calls: list[tuple[float, float]] = []
    data, made, options = _setup(config, seed, latency, calls)
    separate: dict[str, Any] = {}
    separate_s = separate_cpu = 0.0
    separate_waves = 0
    for name, judge in made["judges"].items():
        calls.clear()
        started, cpu = time.perf_counter(), time.process_time()
        result = GeneticOptimizer(metric=judge, llm=made["llms"][name]).optimize(
            data[name], BinaryMetricLoss(), options
        )
        separate_s += time.perf_counter() - started
        separate_cpu += time.process_time() - cpu
        separate_waves += waves(calls)
        separate[name] = _figures(result)
    calls.clear()
    data, made, options = _setup(config, seed, latency, calls)  # fresh clients: usage from zero
    started, cpu = time.perf_counter(), time.process_time()
    many = optimize_many(made["judges"], data, llm=made["llms"], config=options)
    job_s, job_cpu, job_waves = time.perf_counter() - started, time.process_time() - cpu, waves(calls)
    metrics = {}
    for name in made["judges"]:
        own, joint = separate[name], _figures(many[name])
        calls_own = own["calls"]["judge"] + own["calls"]["meta"]
        calls_job = joint["calls"]["judge"] + joint["calls"]["meta"]
        metrics[name] = {
            "separate_calls": own["calls"],
            "job_calls": joint["calls"],
            "calls_difference": (calls_job - calls_own) / calls_own,
            "same_instructions": own["best_instructions"] == joint["best_instructions"],
            "same_validation": own["validation"] == joint["validation"],
            "validation": joint["validation"],
        }
    return {
        "seed": seed,
        "separate_s": separate_s,
        "job_s": job_s,
        "ratio": job_s / separate_s,
        "separate_cpu_s": separate_cpu,
        "job_cpu_s": job_cpu,
        "separate_waves": separate_waves,
        "job_waves": job_waves,
        "waves_ratio": job_waves / separate_waves,
        "metrics": metrics,
    }


def markdown(records: list[dict[str, Any]], latency: float, limit: int) -> str:
    lines = [
        f"# Many judges in one job vs separate runs ({latency * 1000:.0f} ms per LLM call)",
        "",
        "`python -m benchmarks.perf.many_metrics` on `configs/two_metrics.yaml` (simulated judge with "
        f"a fixed {latency * 1000:.0f} ms latency, `llm.max_concurrency` {limit} for the job and for each "
        "separate run). Targets: job wall time ≤ 0.75× the sum of the separate runs; judge calls "
        "within 2 %; the same chosen instructions and validation figures.",
        "",
        "| seed | separate runs (s, summed) | one job (s) | ratio | metric | calls separate | calls job "
        "| calls diff | same instructions | same validation |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        for i, (name, m) in enumerate(r["metrics"].items()):
            head = (
                [str(r["seed"]), f"{r['separate_s']:.2f}", f"{r['job_s']:.2f}", f"{r['ratio']:.2f}"]
                if i == 0
                else ["", "", "", ""]
            )
            sep, job = m["separate_calls"], m["job_calls"]
            lines.append(
                "| "
                + " | ".join(
                    [
                        *head,
                        name,
                        f"{sep['judge']} + {sep['meta']}",
                        f"{job['judge']} + {job['meta']}",
                        f"{m['calls_difference'] * 100:+.1f} %",
                        "yes" if m["same_instructions"] else "no",
                        "yes" if m["same_validation"] else "no",
                    ]
                )
                + " |"
            )
    ratios = [r["ratio"] for r in records]
    mean = sum(ratios) / len(ratios)
    lines += [
        "",
        f"Wall-time ratio over seeds: {min(ratios):.2f}–{max(ratios):.2f} (mean {mean:.2f}).",
        "",
        "Where the time goes: *waves* are the longest chain of LLM calls that waited for one another "
        "(`promptevolver.llm._concurrency.waves`; wall time ≈ waves × latency + the CPU time the calls "
        "do not hide), CPU is this process's CPU seconds (the simulated judge's and the engine's "
        "work, on one thread).",
        "",
        "| seed | waves separate (summed) | waves job | waves ratio | CPU s separate | CPU s job |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['seed']} | {r['separate_waves']} | {r['job_waves']} | {r['waves_ratio']:.2f} "
            f"| {r['separate_cpu_s']:.2f} | {r['job_cpu_s']:.2f} |"
        )
    w = [r["waves_ratio"] for r in records]
    lines += ["", f"Waves ratio over seeds: {min(w):.2f}–{max(w):.2f} (mean {sum(w) / len(w):.2f})."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 0, 1])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per LLM call")
    parser.add_argument("--max-concurrency", type=int, default=None, help="instead of the config's")
    parser.add_argument("--out", default="many_metrics", help="file name (no suffix) in benchmarks/results")
    args = parser.parse_args()
    config = load_config(CONFIG)
    assert isinstance(config, ManyConfig)
    if args.max_concurrency is not None:
        llm = config.llm.model_copy(update={"max_concurrency": args.max_concurrency})
        config = config.model_copy(update={"llm": llm})
    records = [one_seed(config, seed, args.latency) for seed in args.seeds]
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {
        "latency_s": args.latency,
        "python": platform.python_version(),
        "config": str(CONFIG.relative_to(ROOT)),
        "max_concurrency": config.llm.max_concurrency,
        "load_average_1min": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }
    (RESULTS / f"{args.out}.json").write_text(json.dumps({**meta, "records": records}, indent=2) + "\n")
    text = markdown(records, args.latency, config.llm.max_concurrency) + (
        f"\nMachine: {meta['cpus']} CPUs, 1-minute load average {meta['load_average_1min']:.1f} when the "
        "run ended (a shared machine: the CPU part of the wall times is inflated by the other load).\n"
    )
    (RESULTS / f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
