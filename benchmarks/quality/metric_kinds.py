"""Shared part of the metric-kind benchmarks (rubric.py, statements.py,
ragas_metric.py): seed vs best on held-out samples, and calls, over seeds.

For each seed, one optimization (the simulated LLM: free and deterministic); then the seed's and
the best instructions are judged again on the run's validation samples by a fresh evaluator over
the same simulated world, for the agreement figures (MSE, MAE and, on an ordinal scale, exact,
within-one and weighted kappa; accuracy, F1 and kappa for a binary judge). Those re-judging calls
are not counted. Writes ``<results>/<name>.json`` (every seed) and ``<name>.md`` (mean ± std).
"""

from __future__ import annotations

import asyncio
import importlib.metadata as md
import json
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from promptevolver import SingleMetricAnnotation
from promptevolver.evaluation._agreement import agreement_of
from promptevolver.evaluation._evaluator import Evaluator
from promptevolver.judge._protocol import Metric
from promptevolver.llm._base import LLMClient
from promptevolver.optimizers._result import OptimizationResult

RESULTS = Path(__file__).resolve().parents[1] / "results"


@dataclass(frozen=True)
class Setup:
    """What one seed's run needs: the dataset, the metric, a fresh LLM for a seed, and how to run."""

    dataset: SingleMetricAnnotation
    metric: Metric
    make_llm: Callable[[int], LLMClient]
    optimize: Callable[[int, LLMClient], OptimizationResult]
    binary: bool


def _figures(setup: Setup, result: OptimizationResult, seed: int) -> dict[str, dict[str, Any]]:
    positions = result.split["validation_positions"]
    evaluator = Evaluator(
        metric=setup.metric, llm=setup.make_llm(seed), dataset=setup.dataset, max_concurrency=16
    )
    out = {}
    for who in ("seed", "best"):
        instructions = result.seed_instructions if who == "seed" else result.best_instructions
        judged = asyncio.run(evaluator.evaluate(instructions, positions))
        out[who] = agreement_of(judged, positions, setup.dataset.labels(), binary=setup.binary).to_dict()
    return out


def run_seed(setup: Setup, seed: int) -> dict[str, Any]:
    """One seed: the optimization's scores and calls, and the re-judged validation figures."""
    started = time.perf_counter()
    result = setup.optimize(seed, setup.make_llm(seed))
    wall = time.perf_counter() - started
    return {
        "seed": seed,
        "scores": result.scores,
        "loss": result.loss,
        "judge_calls": result.usage["llm_calls"]["judge"],
        "meta_calls": result.usage["llm_calls"]["meta"],
        "tokens": result.usage["prompt_tokens"] + result.usage["completion_tokens"],
        "stop_reason": result.stop_reason,
        "improved": result.improved,
        "validation": _figures(setup, result, seed),
        "best_instructions": result.best_instructions,
        "wall_s": round(wall, 2),
    }


def _stat(values: Sequence[float | None], digits: int) -> str:
    measured = [v for v in values if v is not None]
    if not measured:
        return "n/a"
    std = statistics.pstdev(measured) if len(measured) > 1 else 0.0
    return f"{statistics.fmean(measured):.{digits}f} ± {std:.{digits}f}"


def _rows(runs: Sequence[dict[str, Any]], binary: bool) -> list[tuple[str, str, str]]:
    """(figure, seed, best) rows of the Markdown table."""
    keys = (
        ["accuracy", "f1", "cohen_kappa"]
        if binary
        else ["mse", "mae", "exact", "within_one", "weighted_kappa"]
    )
    rows = [
        (
            f"validation fitness ({runs[0]['loss']['name']})",
            _stat([r["scores"]["seed"]["validation"] for r in runs], 4),
            _stat([r["scores"]["best"]["validation"] for r in runs], 4),
        ),
        (
            "train fitness",
            _stat([r["scores"]["seed"]["train"] for r in runs], 4),
            _stat([r["scores"]["best"]["train"] for r in runs], 4),
        ),
    ]
    for key in keys:
        seed = [r["validation"]["seed"].get(key) for r in runs]
        best = [r["validation"]["best"].get(key) for r in runs]
        if any(v is not None for v in seed + best):
            rows.append((f"validation {key.replace('_', ' ')} (re-judged)", _stat(seed, 3), _stat(best, 3)))
    return rows


def _never_worse(runs: Sequence[dict[str, Any]]) -> int:
    """Seeds whose chosen candidate is at least as good as the seed on validation."""
    count = 0
    for r in runs:
        seed, best = r["scores"]["seed"]["validation"], r["scores"]["best"]["validation"]
        lower = not r["loss"]["higher_is_better"]
        count += seed is not None and best is not None and (best <= seed if lower else best >= seed)
    return count


def write(
    name: str, title: str, runs: Sequence[dict[str, Any]], binary: bool, notes: Sequence[str] = ()
) -> Path:
    """Write ``<name>.json`` and ``<name>.md`` under benchmarks/results; return the .md path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    env = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "promptevolver": md.version("promptevolver"),
    }
    (RESULTS / f"{name}.json").write_text(json.dumps({"machine": env, "runs": list(runs)}, indent=2) + "\n")
    calls = [r["judge_calls"] + r["meta_calls"] for r in runs]
    lines = [
        f"# {title} ({env['date']})",
        "",
        f"{len(runs)} seeds ({', '.join(str(r['seed']) for r in runs)}); simulated LLM; "
        f"promptevolver {env['promptevolver']}, Python {env['python']}.",
        "",
        "| figure | seed instructions | best instructions |",
        "|---|---|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in _rows(runs, binary)),
        "",
        f"Calls per run: {_stat([float(c) for c in calls], 0)} "
        f"(judge {_stat([float(r['judge_calls']) for r in runs], 0)}, "
        f"meta {_stat([float(r['meta_calls']) for r in runs], 0)}); "
        f"tokens {_stat([float(r['tokens']) for r in runs], 0)}; "
        f"wall {_stat([r['wall_s'] for r in runs], 2)} s.",
        f"Chosen candidate never worse than the seed on validation: {_never_worse(runs)} of "
        f"{len(runs)} seeds; a changed instruction chosen in {sum(r['improved'] for r in runs)}.",
        *(f"\n{n}" for n in notes),
        "",
    ]
    path = RESULTS / f"{name}.md"
    path.write_text("\n".join(lines))
    return path


def bench(name: str, title: str, setup: Setup, seeds: Sequence[int], notes: Sequence[str] = ()) -> Path:
    """Run every seed, write the results, print the table; return the .md path."""
    runs = [run_seed(setup, s) for s in seeds]
    path = write(name, title, runs, setup.binary, notes)
    print(path.read_text())
    return path
