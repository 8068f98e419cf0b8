#!/usr/bin/env python3
"""Is ``promptevolver suggest`` worth it? Suggested vs random batches of labels on judgeworld.

    python benchmarks/judgeworld/suggest.py --out ../bench-runs/suggest                # 5 seeds
    python benchmarks/judgeworld/suggest.py --out DIR --gen-seed 2 --seeds 0 1 --publish

For one judgeworld world (``gen_world.py --n SIZE --seed GEN_SEED``, split 60/40 by its
``split.py``) and each seed S:

1. **Labelled start**: a seeded random ``--keep`` share of the train split keeps its labels
   (written as an annotation file); the rest of the train split is the **pool** (written as JSONL
   of metric inputs: no label, no judge output).
2. **Run A**: ``promptevolver optimize`` on the labelled start (judge and engineer the judgeworld
   server, optimizer seed S, population 3; a fresh server per run, as ``run.py`` does).
3. **Suggest**: ``promptevolver suggest A --pool POOL -n |POOL| --max-calls M`` on a fresh server:
   the whole pool ranked (its first ``--batch`` lines are what ``-n BATCH`` returns: the pick is
   greedy). The chosen judge's error rate (its verdict in the suggestion vs the trace's human
   label) on the batch and on the whole pool is recorded, with the calls made.
4. **Run B** on the start plus the suggested batch (their full annotations from the train split);
   **run C** on the start plus a seeded random batch of the same size from the pool.
5. Each run's instruction is scored on the test split by judgeworld's ``score.py`` (expected
   accuracy, the figure ``run.py`` compares).

Records go to ``OUT/records/s<seed>.json``; the summary (mean ± sample std over seeds, the paired
difference B − C, error rates) to ``OUT/suggest.md`` and ``.json``; ``--publish`` copies both into
``benchmarks/results/judgeworld/suggest_<world>.md`` and ``.json``. A failed step is recorded with
its cause, shown as n/a, and makes the script exit 1. judgeworld is only run as subprocesses of
its own scripts (see ``jw.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jw import World, ensure_world, jw_env, score_instruction, start_server  # noqa: E402
from methods import REPO, _write_ours_config  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "judgeworld"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgeworld", type=Path, default=REPO.parent / "shared" / "judgeworld")
    ap.add_argument("--out", type=Path, required=True, help="work folder")
    ap.add_argument("--size", type=int, default=400, help="world size (gen_world.py --n)")
    ap.add_argument("--gen-seed", type=int, default=1, help="gen_world.py --seed")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--keep", type=float, default=0.25, help="share of the train split labelled at start")
    ap.add_argument("--batch", type=int, default=20, help="labels added (suggested or random)")
    ap.add_argument("--max-calls", type=int, default=1200, help="suggest --max-calls")
    ap.add_argument("--population", type=int, default=3, help="optimizer.population_size")
    ap.add_argument("--train-frac", type=float, default=0.6)
    ap.add_argument(
        "--ours-python", default=sys.executable, help="interpreter with promptevolver's dependencies"
    )
    ap.add_argument(
        "--publish", action="store_true", help=f"copy the summary into {RESULTS.relative_to(REPO)}"
    )
    ap.add_argument("--summarize", action="store_true", help="rewrite the summary from OUT/records only")
    return ap.parse_args(argv)


def env() -> dict[str, str]:
    return {"PYTHONPATH": str(REPO / "src"), "OPENAI_API_KEY": "dummy"}


def ours(a: argparse.Namespace, args: list[str], log: Path, cwd: Path) -> None:
    """``promptevolver ARGS`` with this checkout's src/; raises CalledProcessError on failure."""
    with open(log, "wb") as out:
        subprocess.run(
            [a.ours_python, "-m", "promptevolver.cli", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=jw_env(a.train_frac, env()),
            cwd=cwd,
            check=True,
        )


def optimize(a: argparse.Namespace, world: World, dataset: Path, seed: int, work: Path) -> dict[str, Any]:
    """One optimize run on ``dataset`` against a fresh server; its chosen instruction scored on test."""
    work.mkdir(parents=True, exist_ok=True)
    with start_server(a.judgeworld, world, work, latency_ms=0.0, train_frac=a.train_frac) as server:
        config = _write_ours_config(
            dataclasses.replace(world, train=dataset),
            server.base_url,
            work,
            {"population_size": a.population},
        )
        t0 = time.monotonic()
        ours(
            a,
            ["optimize", str(config), "-o", str(work / "out"), "--seed", str(seed), "-q"],
            work / "run.log",
            work,
        )
        wall = time.monotonic() - t0
        judge_calls = server.stats()["calls"]["judge"]
    result = json.loads((work / "out" / "result.json").read_text(encoding="utf-8"))
    instruction = next(iter(result["best_instructions"].values()))
    test = score_instruction(a.judgeworld, world, instruction, work, train_frac=a.train_frac)[0]
    return {
        "samples": len(json.loads(dataset.read_text(encoding="utf-8"))[world.metric]),
        "test_expected": test["accuracy_expected"],
        "covered": test["covered_criteria"],
        "best_id": result["best_id"],
        "server_judge_calls": judge_calls,
        "wall_s": round(wall, 1),
    }


def suggest(
    a: argparse.Namespace, world: World, run: Path, pool: Path, size: int, work: Path
) -> list[dict[str, Any]]:
    """The whole pool ranked by ``promptevolver suggest`` (one JSON object per trace, best first)."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / "ranked.jsonl"
    with start_server(a.judgeworld, world, work, latency_ms=0.0, train_frac=a.train_frac) as server:
        args = ["suggest", str(run), "--pool", str(pool), "-n", str(size), "--max-calls", str(a.max_calls)]
        args += [
            "--set",
            f"llm.base_url={server.base_url}",
            "--set",
            f"reflection_llm.base_url={server.base_url}",
        ]
        ours(a, [*args, "--out", str(out)], work / "suggest.log", work)
        stats = server.stats()["calls"]
    (work / "server_calls.json").write_text(json.dumps(stats))
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def human(sample: dict[str, Any]) -> int:
    """judgeworld's human label: target, else metric_output if accepted, else its flip."""
    if sample.get("target") is not None:
        return int(sample["target"])
    out = int(sample["metric_output"])
    return out if sample["is_accepted"] else 1 - out


def error_rate(rows: list[dict[str, Any]], labels: list[int]) -> tuple[float | None, int]:
    """Share of rows whose chosen verdict differs from the human label, over rows with a verdict."""
    pairs = [(next(iter(r["verdicts"].values())), labels[r["index"]]) for r in rows]
    measured = [(v, y) for v, y in pairs if v is not None]
    return (sum(v != y for v, y in measured) / len(measured) if measured else None), len(measured)


def one_seed(a: argparse.Namespace, world: World, seed: int) -> dict[str, Any]:
    base = a.out / "runs" / f"s{seed}"
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    train = json.loads(world.train.read_text(encoding="utf-8"))[world.metric]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(train)).tolist()
    keep = order[: round(a.keep * len(train))]
    rest = sorted(order[len(keep) :])
    labeled = base / "labeled.json"
    labeled.write_text(json.dumps({world.metric: [train[i] for i in sorted(keep)]}), encoding="utf-8")
    pool = base / "pool.jsonl"
    pool.write_text("".join(json.dumps(train[i]["metric_input"]) + "\n" for i in rest), encoding="utf-8")
    labels = [human(train[i]) for i in rest]
    rec: dict[str, Any] = {"seed": seed, "labeled": len(keep), "pool": len(rest), "status": "ok"}
    try:
        rec["start"] = optimize(a, world, labeled, seed, base / "A")
        ranked = suggest(a, world, base / "A" / "out", pool, len(rest), base / "suggest")
        batch = [r["index"] for r in ranked[: a.batch]]
        random_batch = sorted(rng.choice(len(rest), size=a.batch, replace=False).tolist())
        top_rate, top_n = error_rate(ranked[: a.batch], labels)
        pool_rate, pool_n = error_rate(ranked, labels)
        rand_rate, _ = error_rate([r for r in ranked if r["index"] in set(random_batch)], labels)
        calls = json.loads((base / "suggest" / "server_calls.json").read_text())
        rec["suggest"] = {
            "batch": batch,
            "error_batch": top_rate,
            "error_pool": pool_rate,
            "error_random_batch": rand_rate,
            "judged_batch": top_n,
            "judged_pool": pool_n,
            "server_judge_calls": calls["judge"],
            "corrections_batch": sum(_disagrees(train[rest[i]]) for i in batch),
            "corrections_random": sum(_disagrees(train[rest[i]]) for i in random_batch),
            "why_examples": [r["why"] for r in ranked[:3]],
        }
        for name, extra in (("suggested", batch), ("random", random_batch)):
            path = base / f"{name}.json"
            samples = [train[i] for i in sorted(keep)] + [train[rest[i]] for i in extra]
            path.write_text(json.dumps({world.metric: samples}), encoding="utf-8")
            rec[name] = optimize(a, world, path, seed, base / name)
    except (subprocess.CalledProcessError, RuntimeError, OSError, KeyError, ValueError) as exc:
        rec["status"] = f"failed: {type(exc).__name__}: {exc}"
    return rec


def _disagrees(sample: dict[str, Any]) -> bool:
    """A correction: the recorded (naive) judge verdict differs from the human label."""
    prompt = next(iter(sample["prompts"].values()))
    return int(prompt["prompt_output"]["verdict"]) != human(sample)


def _stat(values: list[float]) -> str:
    if not values:
        return "n/a"
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {spread:.3f} (min {min(values):.3f}, max {max(values):.3f})"


def summarize(a: argparse.Namespace, world: World, records: list[dict[str, Any]]) -> str:
    ok = [r for r in records if r["status"] == "ok"]
    col = {k: [r[k]["test_expected"] for r in ok] for k in ("start", "suggested", "random")}
    diff = [s - r for s, r in zip(col["suggested"], col["random"])]
    err_b = [r["suggest"]["error_batch"] for r in ok if r["suggest"]["error_batch"] is not None]
    err_p = [r["suggest"]["error_pool"] for r in ok if r["suggest"]["error_pool"] is not None]
    err_r = [r["suggest"]["error_random_batch"] for r in ok if r["suggest"]["error_random_batch"] is not None]
    wins = sum(d > 0 for d in diff)
    pool_mean = statistics.fmean(err_p) if err_p else 0.0
    ratio = f"{statistics.fmean(err_b) / pool_mean:.2f}" if err_b and pool_mean else "n/a"
    doubled = sum(
        (s := r["suggest"])["error_batch"] is not None
        and s["error_pool"]
        and s["error_batch"] >= 2 * s["error_pool"]
        for r in ok
    )
    lines = [
        f"# suggest vs random batches on judgeworld ({world.key}: {world.size} samples, train 60 %)",
        "",
        f"Start: {a.keep:.0%} of the train split labelled (seeded random), the rest the pool; "
        f"batch {a.batch} labels; suggest --max-calls {a.max_calls}; optimizer population {a.population}; "
        f"seeds {', '.join(str(r['seed']) for r in records)} "
        f"({len(ok)} ok, {len(records) - len(ok)} failed). "
        "Figures: mean ± sample std over seeds (min, max); test = judgeworld score.py expected "
        "accuracy on the test split.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| test, start (run A) | {_stat(col['start'])} |",
        f"| test, start + suggested batch (B) | {_stat(col['suggested'])} |",
        f"| test, start + random batch (C) | {_stat(col['random'])} |",
        f"| B − C, paired | {_stat(diff)}; B better in {wins} of {len(diff)} seeds |",
        f"| chosen judge's error rate, suggested batch | {_stat(err_b)} |",
        f"| chosen judge's error rate, whole pool | {_stat(err_p)} |",
        f"| chosen judge's error rate, random batch | {_stat(err_r)} |",
        f"| ratio suggested / pool (of the means) | {ratio}; at least 2 in {doubled} of {len(ok)} seeds |",
        f"| corrections in batch (naive ≠ human), suggested vs random | "
        f"{_stat([r['suggest']['corrections_batch'] for r in ok])} vs "
        f"{_stat([r['suggest']['corrections_random'] for r in ok])} |",
        f"| suggest judge calls (server count) | {_stat([r['suggest']['server_judge_calls'] for r in ok])} |",
        "",
        "Per seed:",
        "",
        "| seed | start | suggested | random | error batch / pool | judge calls |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        if r["status"] != "ok":
            lines.append(f"| {r['seed']} | n/a ({r['status'][:80]}) | n/a | n/a | n/a | n/a |")
            continue
        s = r["suggest"]
        lines.append(
            f"| {r['seed']} | {r['start']['test_expected']:.3f} | {r['suggested']['test_expected']:.3f} | "
            f"{r['random']['test_expected']:.3f} | {s['error_batch']:.2f} / {s['error_pool']:.2f} | "
            f"{s['server_judge_calls']} |"
        )
    if ok:
        lines += ["", "The top three `why` lines of seed " + str(ok[0]["seed"]) + ":", ""]
        lines += [f"- {w}" for w in ok[0]["suggest"]["why_examples"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    a.out, a.judgeworld = a.out.resolve(), a.judgeworld.resolve()
    world = ensure_world(a.judgeworld, a.out / "worlds", a.size, a.gen_seed, a.train_frac)
    records = []
    for seed in [] if a.summarize else a.seeds:
        rec = one_seed(a, world, seed)
        path = a.out / "records" / f"s{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec, indent=1), encoding="utf-8")
        records.append(rec)
        print(
            f"seed {seed}: {rec['status']}",
            {k: rec[k]["test_expected"] for k in ("start", "suggested", "random") if k in rec},
            flush=True,
        )
    if a.summarize:
        records = [json.loads((a.out / "records" / f"s{seed}.json").read_text()) for seed in a.seeds]
    text = summarize(a, world, records)
    (a.out / "suggest.md").write_text(text, encoding="utf-8")
    (a.out / "suggest.json").write_text(
        json.dumps({"args": _args(a), "records": records}, indent=1), encoding="utf-8"
    )
    print(text)
    if a.publish:
        RESULTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(a.out / "suggest.md", RESULTS / f"suggest_{world.key}.md")
        shutil.copy(a.out / "suggest.json", RESULTS / f"suggest_{world.key}.json")
    return 0 if all(r["status"] == "ok" for r in records) else 1


def _args(a: argparse.Namespace) -> dict[str, Any]:
    return {
        k: str(v) if isinstance(v, Path) else v
        for k, v in vars(a).items()
        if k not in ("judgeworld", "out", "ours_python", "publish", "summarize")
    }


if __name__ == "__main__":
    sys.exit(main())
