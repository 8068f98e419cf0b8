"""Benchmark: the two-prompt metric (configs/faithfulness_statements.yaml) over seeds.

Seed vs best MSE of the supported fraction on held-out samples (and MAE, re-judged), and the calls
each run spends (two judge calls an evaluation), with the simulated LLM. Writes
benchmarks/results/bench_statements.{json,md}.

Run: ``python -m benchmarks.quality.statements [--seeds 0 1 2 3 4] [--config PATH]``
"""

from __future__ import annotations

from benchmarks.quality.rubric import main

if __name__ == "__main__":
    main(
        "faithfulness_statements.yaml",
        "bench_statements",
        "Two-prompt metric (statement extractor + verifier, supported fraction), MSELoss",
    )
