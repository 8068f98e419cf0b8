"""Does ``promptevolver suggest`` find the judge's errors on our own synthetic sets (the simulated LLM)?

    python -m benchmarks.quality.suggest_synthetic --out ../bench-runs/sugsyn --sets 400:1 600:2
    python -m benchmarks.quality.suggest_synthetic --out DIR --sets 500:11 --variant before --src OLD/src

For each synthetic set (``promptevolver.simulation.synthetic``: ``n_samples:random_seed``, the
simulated LLM mined from it, ``llm.provider: fake``):

1. **Run**: ``promptevolver optimize`` with ``optimizer.strategy: genetic`` and a 40 % held-out
   validation part (the genetic search never learns from it; it chooses the final candidate on
   it), kept in ``OUT/<set>/run`` and reused.
2. **Suggest**: ``promptevolver suggest RUN --pool POOL -n |POOL|``, the pool being the held-out
   samples' metric inputs. The simulated LLM knows them (it was mined from the whole file, as
   judgeworld knows its world): a held-out pool it can judge, which new traces are not (it draws
   their verdicts by a hash). suggest never calibrates on a pool trace.
3. **Error rates**: the chosen judge's first verdict against the human label, over the top
   ``--top`` and over the pool. The bar (issue 36): top >= 2 x pool and >= pool + 0.10.

``--src`` runs another source tree (a "before"); ``--variant`` names the measurement. Results:
``OUT/suggest_synthetic-VARIANT.md`` and ``.json``; ``--publish NAME`` copies them into
``benchmarks/results/``. A failed step is recorded with its cause (n/a) and makes the script
exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="work folder")
    ap.add_argument("--sets", nargs="+", default=["400:1"], metavar="N:SEED", help="synthetic sets")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="promptevolver source tree to run")
    ap.add_argument("--variant", default="default")
    ap.add_argument("--publish", metavar="NAME")
    return ap.parse_args(argv)


def cli(src: Path, args: list[str], log: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    with open(log, "wb") as out:
        subprocess.run(
            [sys.executable, "-m", "promptevolver.cli", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            check=True,
        )


def one_set(a: argparse.Namespace, n: int, seed: int) -> dict[str, Any]:
    from promptevolver.annotations import SingleMetricAnnotation
    from promptevolver.simulation.synthetic import SyntheticSpec, generate

    key = f"syn{n}s{seed}"
    work = a.out / key
    work.mkdir(parents=True, exist_ok=True)
    data_file = work / "annotations.json"
    if not data_file.exists():
        generate(SyntheticSpec(n_samples=n, random_seed=seed)).to_json(data_file)
    rec: dict[str, Any] = {"set": key, "status": "ok"}
    try:
        run = work / "run"
        if not (run / "result.json").is_file():
            config = {
                "dataset": str(data_file),
                "metric": {
                    "name": "answer_correctness",
                    "definition": "Given the user_input, reference and response. Is the response correct "
                    "compared with the reference",
                },
                "llm": {"provider": "fake"},
                "loss": {"type": "binary", "metric": "accuracy"},
                "optimizer": {
                    "strategy": "genetic",
                    "validation_fraction": 0.4,
                    "population_size": 4,
                    "generations": 3,
                },
                "random_seed": seed,
            }
            (work / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
            cli(a.src, ["optimize", str(work / "config.yaml"), "-o", str(run), "-q"], work / "optimize.log")
        result = json.loads((run / "result.json").read_text(encoding="utf-8"))
        held = result["split"]["validation_positions"]
        data = SingleMetricAnnotation.from_json(str(data_file))
        labels = data.labels()
        pool = work / "pool.jsonl"
        pool.write_text(
            "".join(json.dumps(data.samples[p].metric_input) + "\n" for p in held), encoding="utf-8"
        )
        sug = work / f"suggest-{a.variant}"
        sug.mkdir(exist_ok=True)
        ranked_file = sug / "ranked.jsonl"
        cli(
            a.src,
            ["suggest", str(run), "--pool", str(pool), "-n", str(len(held)), "--out", str(ranked_file)],
            sug / "suggest.log",
        )
        ranked = [json.loads(line) for line in ranked_file.read_text(encoding="utf-8").splitlines()]
        truth = [labels[p] for p in held]

        def rate(rows: list[dict[str, Any]]) -> float | None:
            pairs = [(next(iter(r["verdicts"].values())), truth[r["index"]]) for r in rows]
            measured = [(v, y) for v, y in pairs if v is not None]
            return sum(v != y for v, y in measured) / len(measured) if measured else None

        top, whole = rate(ranked[: a.top]), rate(ranked)
        rec.update(
            pool=len(held),
            error_top=top,
            error_pool=whole,
            meets_bar=top is not None and whole is not None and top >= 2 * whole and top >= whole + 0.10,
            summary=(sug / "suggest.log").read_text(encoding="utf-8").strip().splitlines()[-1],
        )
    except (subprocess.CalledProcessError, OSError, KeyError, ValueError) as exc:
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
    lines = [
        f"# suggest on synthetic sets (simulated LLM): top-{a.top} error rate vs the held-out pool "
        f"({a.variant})",
        "",
        "Each set: optimize (strategy genetic, 40 % held out, population 4, 3 generations); suggest "
        "ranks the held-out samples (no bound on calls). Error: the chosen judge's first verdict vs the "
        "human label.",
        "",
        f"| set | pool | error, top {a.top} | error, pool | bar met |",
        "|---|---|---|---|---|",
    ]
    for r in records:
        if r["status"] != "ok":
            lines.append(f"| {r['set']} | n/a ({r['status'][:80]}) | n/a | n/a | n/a |")
            continue
        lines.append(
            f"| {r['set']} | {r['pool']} | {_f(r['error_top'])} | {_f(r['error_pool'])} | "
            f"{'yes' if r['meets_bar'] else 'no'} |"
        )
    tops = [r["error_top"] for r in ok if r["error_top"] is not None]
    pools = [r["error_pool"] for r in ok if r["error_pool"] is not None]
    lines += [
        "",
        f"Over {len(ok)} sets: top {_stat(tops)}; pool {_stat(pools)}; bar met in "
        f"{sum(r['meets_bar'] for r in ok)} of {len(ok)}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    a.out = a.out.resolve()
    records = []
    for spec in a.sets:
        n, seed = (int(x) for x in spec.split(":"))
        rec = one_set(a, n, seed)
        records.append(rec)
        print(rec["set"], rec["status"], _f(rec.get("error_top")), _f(rec.get("error_pool")), flush=True)
    text = summarize(a, records)
    (a.out / f"suggest_synthetic-{a.variant}.md").write_text(text, encoding="utf-8")
    args = {k: v for k, v in vars(a).items() if k not in ("out", "src")}
    (a.out / f"suggest_synthetic-{a.variant}.json").write_text(
        json.dumps({"args": args, "records": records}, indent=1), encoding="utf-8"
    )
    print(text)
    if a.publish:
        shutil.copy(
            a.out / f"suggest_synthetic-{a.variant}.md", RESULTS / f"suggest_synthetic_{a.publish}.md"
        )
        shutil.copy(
            a.out / f"suggest_synthetic-{a.variant}.json", RESULTS / f"suggest_synthetic_{a.publish}.json"
        )
    return 0 if all(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
