#!/usr/bin/env python3
"""Small worlds (issue 29): ours against the distill baseline, the oracle and the learnable ceiling,
and whether the cross-validated figure is honest.

Reads the run folders ``run.py`` wrote (``OUT/records/<world>/{ref,ours_auto,distill4}``,
``OUT/runs/<world>/ours_auto/s<seed>/out/result.json``, ``OUT/worlds/<world>.json``) for one or
more ``--out`` folders and writes one Markdown table (stdout, or ``--md FILE``) and the figures as
JSON (``--json FILE``):

* per world: the seed instruction's, ours' (mean ± population std over optimizer seeds, min), the
  distill baseline's (4 rounds) and the oracle's expected test accuracy; the **learnable ceiling**
  (the default instruction naming every criterion relevant to the test split that at least one
  train sample carries: no method that learns from the train split can name the others); judge
  calls and tokens (judgeworld's ``/stats``); ours' tokens as a multiple of the baseline's;
* the issue's target per world: mean ≥ min(distill-4 + 0.01, oracle − 0.01), every run ≥ the seed,
  tokens ≤ 4 × distill-4's — and, beside it, whether ours reaches the learnable ceiling;
* honesty: each run's cross-validated figure (``scores.best.cross_validated``, measured on the train
  split by the run itself) against its test-split expected accuracy.

Run with the system ``python3`` (numpy; judgeworld's modules are imported from ``--judgeworld``):

    python3 benchmarks/judgeworld/small.py --judgeworld ../shared/judgeworld --out RUNS1 RUNS2 --md T.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import sys
from pathlib import Path
from typing import Any


def _load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def ceiling(judgeworld: Path, world_path: Path) -> tuple[float, list[str]]:
    """Expected test accuracy of the default instruction naming every test-relevant generic
    criterion with a train carrier, and those criteria."""
    sys.path.insert(0, str(judgeworld))
    from world import Params, resolve_world

    w = resolve_world(str(world_path), None)
    split = w.split(0)
    train, test = set(split["train"]), set(split["test"])
    criteria = w.criteria.values() if isinstance(w.criteria, dict) else w.criteria
    learnable = sorted(
        c.id
        for c in criteria
        if c.kind == "generic" and any(s in test for s in c.samples) and any(s in train for s in c.samples)
    )
    instruction = w.oracle_instruction(only=learnable) if learnable else w.default_instruction()
    return float(w.score(instruction, Params(), "test", 0)["accuracy_expected"]), learnable


def world_row(judgeworld: Path, out: Path, world: str) -> dict[str, Any]:
    rec = out / "records" / world
    ref = _load(rec / "reference.json")
    ours = [_load(p) for p in sorted((rec / "ours_auto").glob("s*.json"))]
    base = [_load(p) for p in sorted((rec / "distill4").glob("s*.json"))]
    ours = [r for r in ours if r.get("status") == "ok"]
    cv = []
    for r in ours:
        seed = r.get("opt_seed", r["params"].get("seed"))
        path = out / "runs" / world / "ours_auto" / f"s{seed}" / "out" / "result.json"
        result = _load(path) if path.exists() else {}
        figure = ((result.get("scores") or {}).get("best") or {}).get("cross_validated")
        cv.append({"seed": seed, "cross_validated": figure, "test": r["test"]["expected"]})
    top, learnable = ceiling(judgeworld, out / "worlds" / f"{world}.json")
    acc = [r["test"]["expected"] for r in ours]
    tok = [r["server_stats"]["tokens_approx"] for r in ours]
    judge = [r["server_stats"]["calls"]["judge"] for r in ours]
    d4 = base[0]["test"]["expected"] if base else None
    d4_tok = base[0]["server_stats"]["tokens_approx"] if base else None
    oracle, seed_acc = ref["oracle"]["expected"], ref["seed"]["expected"]
    target = None if d4 is None else min(d4 + 0.01, oracle - 0.01)
    mean = st.fmean(acc) if acc else None
    return {
        "world": world,
        "n_test": ref["seed"]["n"],
        "seed": seed_acc,
        "ours_mean": mean,
        "ours_std": st.pstdev(acc) if len(acc) > 1 else 0.0,
        "ours_min": min(acc) if acc else None,
        "ours_judge_calls": st.fmean(judge) if judge else None,
        "ours_tokens": st.fmean(tok) if tok else None,
        "distill4": d4,
        "distill4_tokens": d4_tok,
        "oracle": oracle,
        "ceiling": top,
        "learnable": learnable,
        "target": target,
        "accuracy_met": None if target is None or mean is None else mean >= target - 1e-9,
        "ceiling_met": None if mean is None else mean >= top - 1e-9,
        "never_below_seed": all(a >= seed_acc - 1e-9 for a in acc),
        "tokens_ratio": None if not tok or not d4_tok else st.fmean(tok) / d4_tok,
        "runs": cv,
    }


def _f(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def markdown(rows: list[dict[str, Any]]) -> str:
    head = (
        "| world | test n | seed | ours (mean ± std, min) | judge calls | tokens | distill-4 (tokens) "
        "| × distill-4 tokens | oracle | learnable ceiling | target | met |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        met = "✓" if r["accuracy_met"] else ("✗ (= ceiling)" if r["ceiling_met"] else "✗")
        lines.append(
            f"| {r['world']} | {r['n_test']} | {_f(r['seed'])} | {_f(r['ours_mean'])} ± {_f(r['ours_std'])}, "
            f"{_f(r['ours_min'])} | {_f(r['ours_judge_calls'], 0)} | {_f(r['ours_tokens'], 0)} | "
            f"{_f(r['distill4'])} ({_f(r['distill4_tokens'], 0)}) | {_f(r['tokens_ratio'], 2)} | "
            f"{_f(r['oracle'])} | {_f(r['ceiling'])} | {_f(r['target'])} | {met} |"
        )
    pairs = [
        (x["cross_validated"], x["test"]) for r in rows for x in r["runs"] if x["cross_validated"] is not None
    ]
    honest = ""
    if pairs:
        gaps = [c - t for c, t in pairs]
        honest = (
            f"\nHonesty: over {len(pairs)} runs the cross-validated figure minus the test figure is "
            f"{st.fmean(gaps):+.3f} on average (std {st.pstdev(gaps):.3f}, min {min(gaps):+.3f}, max "
            f"{max(gaps):+.3f}); mean cross-validated {st.fmean(c for c, _ in pairs):.3f}, mean test "
            f"{st.fmean(t for _, t in pairs):.3f}.\n"
        )
    return head + "\n".join(lines) + "\n" + honest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgeworld", type=Path, required=True)
    ap.add_argument("--out", type=Path, nargs="+", required=True, help="run.py output folders")
    ap.add_argument("--md", type=Path)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    os.environ.setdefault("JUDGEWORLD_TRAIN_FRAC", "0.6")
    rows = []
    for out in a.out:
        for world in sorted(p.name for p in (out / "records").iterdir() if p.is_dir()):
            if (out / "records" / world / "reference.json").exists():
                rows.append(world_row(a.judgeworld, out, world))
    text = markdown(rows)
    if a.md:
        a.md.write_text(text, encoding="utf-8")
    else:
        print(text)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
