#!/usr/bin/env python3
"""Teaching examples on judgeworld: instruction only, examples only, both; with and without cues.

    python benchmarks/judgeworld/examples.py --out /work/bench-runs/jw-examples
    python benchmarks/judgeworld/examples.py --out DIR --worlds c200 c600 --methods examples_retrieval

Worlds (judgeworld's gen_world.py; ``c`` = ``--criterion-cues``): c200 (``--n 200 --seed 1``),
c600 (``--n 600 --seed 7``), p200 and p600 (the same without cues); each split 60/40 by split.py
(``JUDGEWORLD_TRAIN_FRAC=0.6``, split seed 0). Methods (``optimizer:`` settings of
``promptevolver optimize`` on the train split, against a fresh judgeworld server per run):

* ``examples_retrieval``: ``strategy: examples``, ``examples: {policy: retrieval, k: 3}``;
* ``examples_auto``: ``strategy: examples`` (static and retrieval verified against none);
* ``default``: the default config (distill, verify, examples ``auto``);
* ``none``: the default config with ``examples: {policy: none}`` (instruction only);
* ``static``: the default config with ``examples: {policy: static, k: 3}`` (a static set kept
  only if it wins; when the search runs it evolves the set).

Each run's result is scored on the test split by judgeworld's ``World.score`` (expected accuracy,
exact) with the examples the result's store gives each test input (``examples_for``; none under
policy ``none``), as a temperature-0 server call showing them would be answered. The reference
is ``harness_fewshot.py``'s (default instruction, train split as the pool, k = 3) computed here on
the same worlds and split. One JSON record per run in OUT/records, the table in OUT/summary.md.
Runs are sequential; a failed run is recorded with its cause and shown as n/a.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from jw import World, jw_env, start_server  # noqa: E402
from methods import REPO, _write_ours_config  # noqa: E402

WORLDS = {
    "c200": (200, 1, True),
    "c600": (600, 7, True),
    "p200": (200, 1, False),
    "p600": (600, 7, False),
}
METHODS: dict[str, dict[str, Any]] = {
    "examples_retrieval": {"strategy": "examples", "examples": {"policy": "retrieval", "k": 3}},
    "examples_auto": {"strategy": "examples"},
    "default": {},
    "none": {"examples": {"policy": "none"}},
    "static": {"examples": {"policy": "static", "k": 3}},
}
TRAIN_FRAC = 0.6
#: judgeworld /stats judge fields kept in a record (did the server recognise the examples?).
SERVER_FIELDS = ("calls_with_demos", "demos_used", "demos_teaching", "self_demos")


def make_world(judgeworld: Path, out: Path, key: str) -> World:
    """Generate world ``key`` (if absent) and its split."""
    n, seed, cues = WORLDS[key]
    worlds = out / "worlds"
    worlds.mkdir(parents=True, exist_ok=True)
    path = worlds / f"{key}.json"
    env = jw_env(TRAIN_FRAC)
    if not path.exists():
        cmd = [sys.executable, str(judgeworld / "gen_world.py"), "--n", str(n), "--seed", str(seed)]
        cmd += ["--out", str(path)] + (["--criterion-cues"] if cues else [])
        subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    split_dir = worlds / f"{key}.split"
    train, test = split_dir / f"{key}.train.json", split_dir / f"{key}.test.json"
    if not (train.exists() and test.exists()):
        cmd = [sys.executable, str(judgeworld / "split.py"), "--world", str(path)]
        cmd += ["--out-dir", str(split_dir)]
        subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    lex = json.loads((worlds / f"{key}.lexicon.json").read_text(encoding="utf-8"))
    return World(n, seed, path, train, test, lex["metric"], lex["default_definition"])


def run_one(args: argparse.Namespace, world: World, key: str, method: str) -> dict[str, Any]:
    """One optimize run against a fresh server; the record (figures, or the failure's cause)."""
    run_dir = args.out / "runs" / key / method
    record: dict[str, Any] = {"world": key, "method": method, "optimizer": METHODS[method], "seed": args.seed}
    started = time.perf_counter()
    with start_server(args.judgeworld, world, run_dir, latency_ms=0.0, train_frac=TRAIN_FRAC) as server:
        config = _write_ours_config(world, server.base_url, run_dir, METHODS[method])
        cmd = [args.python, "-m", "promptevolver.cli", "optimize", str(config)]
        cmd += ["--output", str(run_dir / "out"), "--seed", str(args.seed), "-q", "--force"]
        env = jw_env(TRAIN_FRAC, {"PYTHONPATH": str(REPO / "src"), "OPENAI_API_KEY": "dummy"})
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        stats = server.stats()
    record["wall_s"] = round(time.perf_counter() - started, 1)
    if proc.returncode != 0:
        record["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return record
    result = json.loads((run_dir / "out" / "result.json").read_text(encoding="utf-8"))
    judge = stats.get("judge", {})
    record.update(
        policy=(result.get("examples") or {}).get("policy", "none"),
        produced_by=result.get("produced_by"),
        calls=result["usage"]["llm_calls"],
        prompt_tokens_per_call=result["usage"].get("prompt_tokens_per_call", {}),
        server_judge={k: judge.get(k) for k in SERVER_FIELDS},
        instruction=next(iter(result["best_instructions"].values())),
        examples_stage=(result.get("stages") or {}).get("examples"),
        result_path=str(run_dir / "out" / "result.json"),
    )
    return record


def score(args: argparse.Namespace, world: World, record: dict[str, Any]) -> None:
    """Expected test accuracy of the record's judge, with its examples (score_judge.py)."""
    from score_judge import score_result

    result = json.loads(Path(record["result_path"]).read_text(encoding="utf-8"))
    r = score_result(args.judgeworld, world.path, result)
    record["test_expected"] = round(r["accuracy_expected"], 4)
    record["test_n"] = r["n"]


def reference(world: World) -> dict[str, float]:
    """harness_fewshot.py's figures on this world: default instruction, k = 3."""
    import harness_fewshot as hf
    from world import Params, resolve_world

    w = resolve_world(str(world.path), None)
    sp = w.split(0)
    instr = w.default_instruction()
    out = {}
    for name, pol in (
        ("instruction_only", None),
        ("static3", hf.most_corrected(w, sp["train"], 3)),
        ("retrieval3", hf.retrieval_policy(w, sp["train"], 3)),
    ):
        out[name] = round(w.score(instr, Params(), "test", 0, draws=1, demos=pol)["accuracy_expected"], 4)
    return out


def summary(records: list[dict[str, Any]], refs: dict[str, dict[str, float]]) -> str:
    lines = [
        "| world | method | policy | test expected | judge calls | meta calls | prompt tokens / judge call |",
        "|---|---|---|---|---|---|---|",
    ]
    for world, ref in refs.items():
        lines.append(
            f"| {world} | harness_fewshot (default instruction) | none / static-3 / retrieval-3 | "
            f"{ref['instruction_only']:.3f} / {ref['static3']:.3f} / {ref['retrieval3']:.3f} | | | |"
        )
        for r in (r for r in records if r["world"] == world):
            if "error" in r:
                lines.append(f"| {world} | {r['method']} | n/a | n/a ({r['error']}) | n/a | n/a | n/a |")
                continue
            per_call = r["prompt_tokens_per_call"].get("judge")
            lines.append(
                f"| {world} | {r['method']} | {r['policy']} | {r['test_expected']:.3f} | "
                f"{r['calls']['judge']} | {r['calls']['meta']} | {'n/a' if per_call is None else per_call} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgeworld", type=Path, default=REPO.parent / "shared" / "judgeworld")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--seed", type=int, default=0, help="the optimizer's seed")
    ap.add_argument("--python", default=sys.executable, help="interpreter with promptevolver's dependencies")
    args = ap.parse_args(argv)
    os.environ["JUDGEWORLD_TRAIN_FRAC"] = str(TRAIN_FRAC)
    sys.path.insert(0, str(args.judgeworld))
    sys.path.insert(1, str(REPO / "src"))
    records, refs, failed = [], {}, False
    (args.out / "records").mkdir(parents=True, exist_ok=True)
    for key in args.worlds:
        world = make_world(args.judgeworld, args.out, key)
        refs[key] = reference(world)
        for method in args.methods:
            record = run_one(args, world, key, method)
            if "error" not in record:
                score(args, world, record)
            failed |= "error" in record
            records.append(record)
            path = args.out / "records" / f"{key}-{method}.json"
            path.write_text(json.dumps(record, indent=1), encoding="utf-8")
            brief = ("world", "method", "policy", "test_expected", "calls")
            print(json.dumps({k: record.get(k) for k in brief}))
    (args.out / "references.json").write_text(json.dumps(refs, indent=1), encoding="utf-8")
    (args.out / "summary.md").write_text(summary(records, refs), encoding="utf-8")
    print(summary(records, refs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
