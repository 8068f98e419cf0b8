"""Scale benchmark of the annotation API on a seeded 20,000-sample Ragas-format file.

Writes the file to a temporary directory, then measures, each against a plain ``json.load`` of the
same file: loading (``SingleMetricAnnotation.from_json``), ``labels()``,
``stratified_batches(batch_size=3)``, ``train_test_split``; and memory (tracemalloc, in a separate
pass so that tracing does not slow the timings): the peak while each runs and what its result
keeps. Prints a table; exits with status 1 when loading is slower than ``--max-load-ratio`` ×
``json.load``.

Run: ``python -m benchmarks.perf.annotations [--samples 20000] [--seed 0] [--repeat 5]``

The synthetic samples mimic ``benchmarks/data/*.json``: one binary ``answer_correctness``
metric, one ``single_turn_aspect_critic_prompt`` per sample whose ``prompt_input`` repeats the
metric input with null contexts; text lengths follow the bundled files (user input median ≈ 100
characters, response ≈ 400, reference ≈ 650, reason ≈ 200, a long tail to ≈ 2,000); about 30 %
edited outputs, 15 % rejected samples and a prompt-level ``is_accepted`` on half the samples.
The bundled files hold ≈ 2.4–3.6 kB per sample; so do these.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from promptevolver.annotations import MetricAnnotation, SingleMetricAnnotation

PROMPT = "single_turn_aspect_critic_prompt"
BASELINE = "json.load (baseline)"
LOAD = "SingleMetricAnnotation.from_json"
_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but "
    "have an they you were her she there been one all we their has would when if so what out up more "
    "about into than them can only other new some could time these two may then do first any like now "
    "my such make over our even most made after also did many before must through back years where much "
    "your way well down should because each just those people how too little state good very world "
    "still own see men work long here get both between life being under never day same another know "
    "while last might us great old year off come since against go came right used take three theory "
    "sensory adaptation perception energy response reference question answer correct café naïve — “quoted”"
).split()
#: (median characters, lognormal sigma, minimum, maximum) of each text field, from the bundled files.
_LENGTHS = {
    "user_input": (100, 0.9, 40, 2000),
    "response": (400, 0.8, 24, 1900),
    "reference": (650, 0.25, 400, 950),
    "reason": (200, 0.3, 120, 310),
}


def _text(rng: np.random.Generator, field: str) -> str:
    median, sigma, low, high = _LENGTHS[field]
    target = int(np.clip(rng.lognormal(np.log(median), sigma), low, high))
    words = rng.choice(len(_WORDS), size=target // 5 + 1)
    text = " ".join(_WORDS[i] for i in words)
    if field != "reason" and rng.random() < 0.2:
        text = text.replace(" the ", "\n\nthe ", 1)
    return text[:target]


def synthetic_sample(rng: np.random.Generator) -> dict[str, Any]:
    """One Ragas-format sample of a binary judge with realistic text lengths."""
    inputs = {name: _text(rng, name) for name in ("user_input", "response", "reference")}
    verdict = int(rng.random() < 0.6)
    accepted = bool(rng.random() >= 0.15)
    edited = None
    if rng.random() < 0.3:
        edited = {"reason": _text(rng, "reason"), "verdict": verdict if accepted else 1 - verdict}
    prompt: dict[str, Any] = {
        "prompt_input": {**inputs, "retrieved_contexts": None, "reference_contexts": None},
        "prompt_output": {"reason": _text(rng, "reason"), "verdict": verdict},
        "edited_output": edited,
    }
    if rng.random() < 0.5:
        prompt["is_accepted"] = accepted
    return {
        "metric_input": inputs,
        "metric_output": verdict,
        "prompts": {PROMPT: prompt},
        "is_accepted": accepted,
    }


def write_ragas_file(path: Path, n_samples: int, random_seed: int) -> Path:
    """Write ``{"answer_correctness": [n_samples samples]}`` (indented like Ragas' exports)."""
    rng = np.random.default_rng(random_seed)
    samples = [synthetic_sample(rng) for _ in range(n_samples)]
    with path.open("w", encoding="utf-8") as fh:
        json.dump({"answer_correctness": samples}, fh, ensure_ascii=False, indent=2)
    return path


def _json_load(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _json_load_gc_paused(path: Path) -> Any:
    gc.disable()
    try:
        return _json_load(path)
    finally:
        gc.enable()


def best_times(ops: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Best wall time of each operation over ``repeat`` rounds, in seconds.

    Rounds interleave the operations, so that a slow spell of the machine hits the baseline and
    the others alike; memory is garbage-collected before each call.
    """
    best = dict.fromkeys(ops, float("inf"))
    for _ in range(repeat):
        for name, function in ops.items():
            gc.collect()
            start = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def traced_memory(function: Callable[[], Any]) -> tuple[float, float]:
    """(peak while ``function`` runs, retained by its result) of traced memory, in MB."""
    gc.collect()
    tracemalloc.start()
    result = function()
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak / 1e6, retained / 1e6


def operations(path: Path) -> dict[str, Callable[[], Any]]:
    """The measured operations; all but the loads run on a dataset loaded once."""
    dataset = SingleMetricAnnotation.from_json(path)
    return {
        BASELINE: lambda: _json_load(path),
        "json.load, GC paused (reference)": lambda: _json_load_gc_paused(path),
        LOAD: lambda: SingleMetricAnnotation.from_json(path),
        "MetricAnnotation.from_json": lambda: MetricAnnotation.from_json(path),
        "labels()": dataset.labels,
        "stratified_batches(3, 'label')": lambda: dataset.stratified_batches(3, "label", random_seed=0),
        "stratified_batches(3, 'metric_output', replace)": lambda: dataset.stratified_batches(
            3, "metric_output", replace=True, random_seed=0
        ),
        "train_test_split(0.3)": lambda: dataset.train_test_split(test_size=0.3, random_seed=42),
        "sample(n // 20, 'label')": lambda: dataset.sample(len(dataset) // 20, "label", random_seed=0),
    }


Row = tuple[str, float, float, float]


def run(n_samples: int, random_seed: int, repeat: int) -> list[Row]:
    """(operation, best seconds, peak MB, retained MB) rows; the first is the json.load baseline."""
    with tempfile.TemporaryDirectory() as tmp:
        path = write_ragas_file(Path(tmp) / "annotations.json", n_samples, random_seed)
        size_mb = path.stat().st_size / 1e6
        print(f"{n_samples} samples, {size_mb:.1f} MB ({path.stat().st_size / n_samples:.0f} B/sample)")
        ops = operations(path)
        seconds = best_times(ops, repeat)
        rows = [(name, seconds[name], *traced_memory(op)) for name, op in ops.items()]
    return rows


def print_table(rows: list[Row]) -> None:
    baseline = rows[0][1]
    print(f"{'operation':<50} {'time (s)':>9} {'× json.load':>12} {'peak MB':>8} {'kept MB':>8}")
    for name, seconds, peak, retained in rows:
        print(f"{name:<50} {seconds:>9.3f} {seconds / baseline:>12.2f} {peak:>8.1f} {retained:>8.1f}")
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    print(f"process max RSS: {maxrss:.0f} MB (peak/kept: tracemalloc; kept = held by the result)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--max-load-ratio", type=float, default=3.0)
    args = parser.parse_args(argv)
    rows = run(args.samples, args.seed, args.repeat)
    print_table(rows)
    seconds = {row[0]: row[1] for row in rows}
    ratio = seconds[LOAD] / seconds[BASELINE]
    if ratio > args.max_load_ratio:
        print(f"FAIL: loading takes {ratio:.2f}× json.load (target ≤ {args.max_load_ratio}×)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
