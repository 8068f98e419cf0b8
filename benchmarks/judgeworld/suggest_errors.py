#!/usr/bin/env python3
"""Does ``promptevolver suggest`` find the judge's errors? Its top-ranked traces' error rate against
the pool's, on held-out pools of judgeworld worlds.

    python benchmarks/judgeworld/suggest_errors.py --out ../bench-runs/sugerr --worlds 500:1 300:2 800:3
    python benchmarks/judgeworld/suggest_errors.py --out DIR --worlds 400:11 600:12 --publish heldback

For each world (``gen_world.py --n SIZE --seed GEN_SEED``, split 60/40 by its ``split.py``):

1. **Run**: ``promptevolver optimize`` on the whole train split (judge and engineer the judgeworld
   server, optimizer seed ``--opt-seed``); kept in ``OUT/<world>/run`` and reused when present
   (``--fresh`` runs it again), so the ranking can be measured again after a change of ``suggest``
   without paying for the optimization.
2. **Suggest**: ``promptevolver suggest RUN --pool POOL -n |POOL|`` on a fresh server, the pool
   being the test split's metric inputs (JSONL: no label, no recorded verdict): traces the run
   never saw. The whole pool is ranked (the first ``--top`` lines are what ``-n TOP`` returns:
   the pick is greedy).
3. **Error rates**: the chosen judge's verdict in each suggestion (its first answer, what the
   ``verdicts`` line shows first) against the trace's human label from the test split: over the
   top ``--top`` and over every judged trace of the pool.

The bar (issue 36): top error rate >= 2 x the pool's and >= the pool's + 0.10.

Records go to ``OUT/<world>/record-VARIANT.json``; the summary (per world, then mean ± sample std
over worlds) to ``OUT/suggest_errors-VARIANT.md`` and ``.json`` (``--variant``: several
measurements, e.g. before and after a change, or with ``--calls-per-trace``, share the kept runs);
``--publish NAME`` copies both into
``benchmarks/results/judgeworld/suggest_errors_NAME.md`` and ``.json``. A failed step is recorded
with its cause, shown as n/a, and makes the script exit 1. judgeworld runs only as subprocesses of
its own scripts (``jw.py``).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jw import World, ensure_world, jw_env, start_server  # noqa: E402
from methods import REPO, _write_ours_config  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "judgeworld"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgeworld", type=Path, default=REPO.parent / "shared" / "judgeworld")
    ap.add_argument("--out", type=Path, required=True, help="work folder")
    ap.add_argument(
        "--worlds", nargs="+", default=["500:1"], metavar="SIZE:SEED", help="gen_world.py --n and --seed"
    )
    ap.add_argument("--opt-seed", type=int, default=0, help="optimize --seed")
    ap.add_argument("--top", type=int, default=20, help="top traces compared with the pool")
    bound = ap.add_mutually_exclusive_group()
    bound.add_argument("--max-calls", type=int, default=None, help="suggest --max-calls (default: no bound)")
    bound.add_argument(
        "--calls-per-trace", type=float, default=None, help="suggest --max-calls: this many times the pool"
    )
    ap.add_argument(
        "--variant", default="default", help="name of this measurement (several share the kept runs)"
    )
    ap.add_argument("--reasks", type=int, default=2, help="suggest --reasks")
    ap.add_argument("--population", type=int, default=3, help="optimizer.population_size")
    ap.add_argument("--train-frac", type=float, default=0.6)
    ap.add_argument("--fresh", action="store_true", help="optimize again even where a run is kept")
    ap.add_argument("--ours-python", default=sys.executable, help="interpreter with promptevolver's deps")
    ap.add_argument(
        "--ours-src", type=Path, default=REPO / "src", help="promptevolver source tree to run (a 'before')"
    )
    ap.add_argument("--publish", metavar="NAME", help=f"copy the summary into {RESULTS.relative_to(REPO)}")
    return ap.parse_args(argv)


def ours(a: argparse.Namespace, args: list[str], log: Path, cwd: Path) -> None:
    """``promptevolver ARGS`` with this checkout's src/; raises CalledProcessError on failure."""
    env = {"PYTHONPATH": str(a.ours_src), "OPENAI_API_KEY": "dummy"}
    with open(log, "wb") as out:
        subprocess.run(
            [a.ours_python, "-m", "promptevolver.cli", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=jw_env(a.train_frac, env),
            cwd=cwd,
            check=True,
        )


def human(sample: dict[str, Any]) -> int:
    """judgeworld's human label: target, else metric_output if accepted, else its flip."""
    if sample.get("target") is not None:
        return int(sample["target"])
    out = int(sample["metric_output"])
    return out if sample["is_accepted"] else 1 - out


def optimize(a: argparse.Namespace, world: World, work: Path) -> dict[str, Any]:
    """The run on the whole train split (kept in ``work/run``; reused unless ``--fresh``)."""
    run = work / "run"
    if (run / "result.json").is_file() and not a.fresh:
        return {"reused": True}
    if run.exists():
        shutil.rmtree(run)
    with start_server(a.judgeworld, world, work / "opt", latency_ms=0.0, train_frac=a.train_frac) as server:
        config = _write_ours_config(world, server.base_url, work / "opt", {"population_size": a.population})
        t0 = time.monotonic()
        args = ["optimize", str(config), "-o", str(run), "--seed", str(a.opt_seed), "-q"]
        ours(a, args, work / "opt" / "run.log", work)
        return {"reused": False, "wall_s": round(time.monotonic() - t0, 1)}


def suggest(a: argparse.Namespace, world: World, work: Path, pool: Path, size: int) -> dict[str, Any]:
    """The whole pool ranked by ``promptevolver suggest`` (one JSON object per trace, best first)."""
    sug = work / f"suggest-{a.variant}"
    out = sug / "ranked.jsonl"
    with start_server(a.judgeworld, world, sug, latency_ms=0.0, train_frac=a.train_frac) as server:
        args = ["suggest", str(work / "run"), "--pool", str(pool), "-n", str(size)]
        args += ["--reasks", str(a.reasks), "--out", str(out)]
        bound = a.max_calls if a.calls_per_trace is None else round(a.calls_per_trace * size)
        args += [] if bound is None else ["--max-calls", str(bound)]
        for key in ("llm", "reflection_llm"):
            args += ["--set", f"{key}.base_url={server.base_url}"]
        t0 = time.monotonic()
        ours(a, args, sug / "suggest.log", work)
        wall = time.monotonic() - t0
        calls = server.stats()["calls"]["judge"]
    ranked = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {"ranked": ranked, "server_judge_calls": calls, "wall_s": round(wall, 1)}


def error_rate(rows: list[dict[str, Any]], labels: list[int]) -> tuple[float | None, int]:
    """Share of rows whose chosen verdict differs from the human label, over rows with a verdict."""
    pairs = [(next(iter(r["verdicts"].values())), labels[r["index"]]) for r in rows]
    measured = [(v, y) for v, y in pairs if v is not None]
    return (sum(v != y for v, y in measured) / len(measured) if measured else None), len(measured)


def one_world(a: argparse.Namespace, size: int, gen_seed: int) -> dict[str, Any]:
    world = ensure_world(a.judgeworld, a.out / "worlds", size, gen_seed, a.train_frac)
    work = a.out / world.key
    work.mkdir(parents=True, exist_ok=True)
    test = json.loads(world.test.read_text(encoding="utf-8"))[world.metric]
    pool = work / "pool.jsonl"
    pool.write_text("".join(json.dumps(s["metric_input"]) + "\n" for s in test), encoding="utf-8")
    labels = [human(s) for s in test]
    rec: dict[str, Any] = {"world": world.key, "pool": len(test), "status": "ok"}
    try:
        rec["optimize"] = optimize(a, world, work)
        got = suggest(a, dataclasses.replace(world), work, pool, len(test))
        ranked = got.pop("ranked")
        top, top_n = error_rate(ranked[: a.top], labels)
        whole, whole_n = error_rate(ranked, labels)
        rec["suggest"] = {**got, "error_top": top, "judged_top": top_n, "error_pool": whole}
        rec["suggest"]["judged_pool"] = whole_n
        rec["suggest"]["meets_bar"] = (
            top is not None and whole is not None and top >= 2 * whole and top >= whole + 0.10
        )
        rec["suggest"]["why_top3"] = [r["why"] for r in ranked[:3]]
    except (subprocess.CalledProcessError, RuntimeError, OSError, KeyError, ValueError) as exc:
        rec["status"] = f"failed: {type(exc).__name__}: {exc}"
    return rec


def _stat(values: list[float]) -> str:
    if not values:
        return "n/a"
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {spread:.3f} (min {min(values):.3f}, max {max(values):.3f})"


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def summarize(a: argparse.Namespace, records: list[dict[str, Any]]) -> str:
    ok = [r for r in records if r["status"] == "ok"]
    tops = [r["suggest"]["error_top"] for r in ok if r["suggest"]["error_top"] is not None]
    pools = [r["suggest"]["error_pool"] for r in ok if r["suggest"]["error_pool"] is not None]
    lift = [
        r["suggest"]["error_top"] - r["suggest"]["error_pool"]
        for r in ok
        if r["suggest"]["error_top"] is not None and r["suggest"]["error_pool"] is not None
    ]
    met = sum(r["suggest"]["meets_bar"] for r in ok)
    bound = "no bound" if a.max_calls is None else str(a.max_calls)
    if a.calls_per_trace is not None:
        bound = f"{a.calls_per_trace:g} x the pool size"
    lines = [
        "# suggest: the chosen judge's error rate, top-ranked traces vs the held-out pool (judgeworld)",
        "",
        f"Each world: optimize on its whole train split (60 %, seed {a.opt_seed}, population "
        f"{a.population}); suggest ranks the test split (40 %: traces the run never saw) with "
        f"--reasks {a.reasks}, --max-calls {bound}. Error: the chosen judge's first verdict vs the "
        f"human label. Bar: top-{a.top} error rate >= 2 x the pool's and >= the pool's + 0.10.",
        "",
        "| world | pool | error, top " + str(a.top) + " | error, pool | lift | bar met | judge calls |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if r["status"] != "ok":
            lines.append(f"| {r['world']} | {r['pool']} | n/a ({r['status'][:80]}) | n/a | n/a | n/a | n/a |")
            continue
        s = r["suggest"]
        gain = None if s["error_top"] is None or s["error_pool"] is None else s["error_top"] - s["error_pool"]
        lines.append(
            f"| {r['world']} | {r['pool']} | {_f(s['error_top'])} | {_f(s['error_pool'])} | {_f(gain)} | "
            f"{'yes' if s['meets_bar'] else 'no'} | {s['server_judge_calls']} |"
        )
    lines += [
        "",
        f"Over {len(ok)} worlds (mean ± sample std, min, max): top {_stat(tops)}; pool {_stat(pools)}; "
        f"lift {_stat(lift)}; bar met in {met} of {len(ok)}.",
    ]
    if ok:
        lines += ["", f"The top three `why` lines of {ok[0]['world']}:", ""]
        lines += [f"- {w}" for w in ok[0]["suggest"]["why_top3"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    a.out, a.judgeworld = a.out.resolve(), a.judgeworld.resolve()
    records = []
    for spec in a.worlds:
        size, gen_seed = (int(x) for x in spec.split(":"))
        rec = one_world(a, size, gen_seed)
        (a.out / rec["world"]).mkdir(parents=True, exist_ok=True)
        record = a.out / rec["world"] / f"record-{a.variant}.json"
        record.write_text(json.dumps(rec, indent=1), encoding="utf-8")
        records.append(rec)
        s = rec.get("suggest", {})
        print(f"{rec['world']}: {rec['status']} top {_f(s.get('error_top'))} pool {_f(s.get('error_pool'))}")
    text = summarize(a, records)
    (a.out / f"suggest_errors-{a.variant}.md").write_text(text, encoding="utf-8")
    skip = ("ours_python", "ours_src", "out", "judgeworld")
    args = {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items() if k not in skip}
    (a.out / f"suggest_errors-{a.variant}.json").write_text(
        json.dumps({"args": args, "records": records}, indent=1), encoding="utf-8"
    )
    print(text)
    if a.publish:
        RESULTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(a.out / f"suggest_errors-{a.variant}.md", RESULTS / f"suggest_errors_{a.publish}.md")
        shutil.copy(a.out / f"suggest_errors-{a.variant}.json", RESULTS / f"suggest_errors_{a.publish}.json")
    return 0 if all(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
