"""How well the final-choice rule picks, measured on the test split of judgeworld worlds.

For every run of ours under ``--runs`` (a ``run.py`` output folder), the seed and every finalist
of the run's final choice (``result.json`` ``final_choice``) are scored on the world's test split
with judgeworld's ``score.py`` (expected accuracy). The recorded per-finalist Δ and ``p_better``
then replay the rule at several ``confidence`` thresholds, without new runs:

* **kept the seed though a finalist was better**: the rule returned the seed while some finalist
  scored at least ``--margin`` above it on test;
* **returned a worse candidate**: the rule returned a finalist that scored at least ``--margin``
  below the seed on test;
* **mean test accuracy** of what the rule returns, beside the best finalist's (an oracle choice).

Usage::

    python3 benchmarks/judgeworld/choice_rule.py --runs ../bench-runs/final1 \\
        --out benchmarks/results/judgeworld/choice_rule.md
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import jw

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def _finalists(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in result.get("final_choice", {}).get("finalists", []) if f.get("delta") is not None]


def _score(judgeworld: Path, world: jw.World, instructions: dict[str, str], work: Path) -> float:
    text = "\n".join(instructions.values())
    rows = jw.score_instruction(judgeworld, world, text, work, train_frac=0.6)
    return float(rows[-1]["accuracy_expected"])


def collect(runs: Path, judgeworld: Path) -> list[dict[str, Any]]:
    """One record per run: the seed's and each finalist's test accuracy, Δ and p."""
    out = []
    for result_file in sorted(runs.glob("runs/w*/ours_*/s*/**/result.json")):
        parts = result_file.relative_to(runs / "runs").parts
        key = parts[0]
        size, gen_seed = int(key[1 : key.index("s")]), int(key[key.index("s") + 1 :])
        world = jw.ensure_world(judgeworld, runs / "worlds", size, gen_seed, 0.6)
        result = json.loads(result_file.read_text())
        by_id = {c["id"]: c for c in result["lineage"]}
        work = result_file.parent / "choice_rule"
        seed = _score(judgeworld, world, result["seed_instructions"], work)
        finalists = [
            {**f, "test": _score(judgeworld, world, by_id[f["id"]]["instructions"], work)}
            for f in _finalists(result)
        ]
        out.append({"run": "/".join(parts[:3]), "seed": seed, "finalists": finalists})
    return out


def replay(records: list[dict[str, Any]], threshold: float, margin: float) -> dict[str, float]:
    """The rule at ``threshold`` over the records: error rates and mean test accuracy."""
    kept_better = returned_worse = 0
    chosen_acc, oracle_acc = [], []
    for r in records:
        eligible = [f for f in r["finalists"] if f.get("eligible", True) and f["delta"] > 0]
        best = max(eligible, key=lambda f: f["delta"], default=None)
        chosen = best if best is not None and best["p_better"] >= threshold else None
        chosen_test = r["seed"] if chosen is None else chosen["test"]
        top = max([r["seed"], *(f["test"] for f in r["finalists"])])
        kept_better += chosen is None and top >= r["seed"] + margin
        returned_worse += chosen is not None and chosen_test <= r["seed"] - margin
        chosen_acc.append(chosen_test)
        oracle_acc.append(top)
    n = max(1, len(records))
    return {
        "threshold": threshold,
        "runs": len(records),
        "kept_seed_though_better": kept_better / n,
        "returned_worse": returned_worse / n,
        "mean_test": statistics.fmean(chosen_acc) if chosen_acc else float("nan"),
        "oracle_mean_test": statistics.fmean(oracle_acc) if oracle_acc else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True, help="a run.py output folder")
    parser.add_argument(
        "--judgeworld", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "judgeworld"
    )
    parser.add_argument("--margin", type=float, default=0.01, help="test accuracy difference that counts")
    parser.add_argument(
        "--out", type=Path, help="write the table (Markdown) and the records (JSON beside it)"
    )
    args = parser.parse_args()
    records = collect(args.runs, args.judgeworld)
    rows = [replay(records, t, args.margin) for t in THRESHOLDS]
    lines = [
        f"Final-choice rule replayed on {len(records)} runs of `{args.runs.name}` (margin {args.margin:g}).",
        "",
        "| confidence | kept the seed, a finalist better | returned worse | mean test (chosen) "
        "| mean test (best) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['threshold']:g} | {r['kept_seed_though_better']:.0%} | {r['returned_worse']:.0%} | "
            f"{r['mean_test']:.3f} | {r['oracle_mean_test']:.3f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps({"rows": rows, "records": records}, indent=1))


if __name__ == "__main__":
    main()
