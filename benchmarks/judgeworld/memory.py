#!/usr/bin/env python3
"""Incremental memory on judgeworld: a run on half the train annotations, then the other half
added with ``promptevolver examples RUN --add`` (no search), against a run on all of them.

    python benchmarks/judgeworld/memory.py --judgeworld ../shared/judgeworld --out /work/bench-runs/jw-memory
    python benchmarks/judgeworld/memory.py --out DIR --worlds c600

Worlds and split as ``examples.py`` (c200, c600: ``--criterion-cues``; 60/40, split seed 0). The
train split is halved by position (even / odd samples: ``half_a``, ``half_b``). Per world, each
step against a fresh judgeworld server:

1. ``half``: ``strategy: examples``, ``examples: {policy: retrieval, k: 3}`` on ``half_a``;
2. ``half+add``: ``promptevolver examples RUN --add half_b.json`` on that run (its store grows by
   ``half_b``; its validation samples re-judged before and after; 0 meta calls);
3. ``full``: the same config on the whole train split (``examples.py``'s ``examples_retrieval``).

Each is scored on the test split by judgeworld's ``World.score`` with the examples its store
gives each test input (``examples.py``'s ``score``). One JSON record per step in OUT/records, the
table in OUT/summary.md. A failed step is recorded with its cause and shown as n/a.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from examples import METHODS, TRAIN_FRAC, make_world, run_one, score  # noqa: E402
from jw import World, jw_env, start_server  # noqa: E402
from methods import REPO  # noqa: E402

METHOD = "examples_retrieval"


def halves(world: World, out: Path, key: str) -> tuple[Path, Path]:
    """The train split's even and odd samples as two annotation files (same format)."""
    data = json.loads(world.train.read_text(encoding="utf-8"))
    paths = []
    for name, start in (("half_a", 0), ("half_b", 1)):
        path = out / "worlds" / f"{key}.{name}.json"
        part = _subset(data, world.metric, start)
        path.write_text(json.dumps(part), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def _subset(data: Any, metric: str, start: int) -> Any:
    """``data`` (a Ragas annotation file) with every other sample of ``metric`` from ``start``."""
    if isinstance(data, dict) and "samples" in data:
        return {**data, "samples": data["samples"][start::2]}
    if isinstance(data, dict) and metric in data:
        return {**data, metric: _subset(data[metric], metric, start)}
    if isinstance(data, list):
        return data[start::2]
    raise ValueError(
        f"unknown annotation layout: keys {sorted(data) if isinstance(data, dict) else type(data)}"
    )


def _run(args: argparse.Namespace, world: World, key: str, step: str) -> dict[str, Any]:
    """``examples.py``'s ``examples_retrieval`` run on ``world``'s train file, named ``step``,
    scored on the test split at once (before any later step changes its store)."""
    METHODS.setdefault(step, METHODS[METHOD])
    record = run_one(args, world, key, step)
    if "error" not in record:
        score(args, world, record)
        block = json.loads(Path(record["result_path"]).read_text(encoding="utf-8"))["examples"]
        record["pool"] = len((block.get("store") or {}).get("positions", []))
    return record


def add_half(args: argparse.Namespace, world: World, run: dict[str, Any], added: Path) -> dict[str, Any]:
    """``promptevolver examples RUN --add added`` against a fresh server; the record."""
    run_dir = Path(run["result_path"]).parent
    record: dict[str, Any] = {"world": run["world"], "method": "half+add", "seed": args.seed}
    started = time.perf_counter()
    with start_server(
        args.judgeworld, world, run_dir.parent / "add", latency_ms=0.0, train_frac=TRAIN_FRAC
    ) as server:
        cmd = [
            args.python,
            "-m",
            "promptevolver.cli",
            "examples",
            str(run_dir),
            "--add",
            str(added),
            "--json",
        ]
        cmd += [
            "--set",
            f"llm.base_url={server.base_url}",
            "--set",
            f"reflection_llm.base_url={server.base_url}",
        ]
        env = jw_env(TRAIN_FRAC, {"PYTHONPATH": str(REPO / "src"), "OPENAI_API_KEY": "dummy"})
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        stats = server.stats()
    record["wall_s"] = round(time.perf_counter() - started, 1)
    if proc.returncode != 0:
        record["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return record
    update = json.loads(proc.stdout)
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    record.update(
        policy=result["examples"]["policy"],
        update=update,
        calls={"judge": update["judge_calls"], "meta": update["meta_calls"]},
        server_calls=stats.get("calls"),
        instruction=next(iter(result["best_instructions"].values())),
        result_path=str(run_dir / "result.json"),
    )
    return record


def summary(records: list[dict[str, Any]]) -> str:
    lines = [
        "| world | step | pool | validation before → after | test expected | judge calls | meta calls |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['world']} | {r['method']} | n/a | n/a | n/a ({r['error']}) | n/a | n/a |")
            continue
        u = r.get("update") or {}
        held = u.get("held_out") or {}
        pool = f"{u['pool_before']} → {u['pool_after']}" if u else str(r.get("pool", "n/a"))
        figure = held.get("figure")
        moved = (
            f"{held['before'][figure]:.3f} → {held['after'][figure]:.3f} (n = {held['n']})"
            if figure and held["before"].get(figure) is not None and held["after"].get(figure) is not None
            else ""
        )
        lines.append(
            f"| {r['world']} | {r['method']} | {pool} | {moved} | {r['test_expected']:.3f} | "
            f"{r['calls']['judge']} | {r['calls']['meta']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgeworld", type=Path, default=REPO.parent / "shared" / "judgeworld")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--worlds", nargs="+", default=["c200", "c600"], choices=["c200", "c600", "p200", "p600"])
    ap.add_argument("--seed", type=int, default=0, help="the optimizer's seed")
    ap.add_argument("--python", default=sys.executable, help="interpreter with promptevolver's dependencies")
    args = ap.parse_args(argv)
    os.environ["JUDGEWORLD_TRAIN_FRAC"] = str(TRAIN_FRAC)
    sys.path.insert(0, str(args.judgeworld))
    sys.path.insert(1, str(REPO / "src"))
    records, failed = [], False
    (args.out / "records").mkdir(parents=True, exist_ok=True)
    for key in args.worlds:
        world = make_world(args.judgeworld, args.out, key)
        half_a, half_b = halves(world, args.out, key)
        half_world = dataclasses.replace(world, train=half_a)
        steps = [_run(args, half_world, key, "half")]
        if "error" not in steps[0]:
            steps.append(add_half(args, world, steps[0], half_b))
            if "error" not in steps[-1]:
                score(args, world, steps[-1])
        steps.append(_run(args, world, key, "full"))
        for record in steps:
            failed |= "error" in record
            path = args.out / "records" / f"{key}-{record['method'].replace('+', '_')}.json"
            path.write_text(json.dumps(record, indent=1), encoding="utf-8")
            print(
                json.dumps(
                    {k: record.get(k) for k in ("world", "method", "policy", "test_expected", "calls")}
                )
            )
            records.append(record)
    (args.out / "summary.md").write_text(summary(records), encoding="utf-8")
    print(summary(records))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
