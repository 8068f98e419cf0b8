"""The behaviour fingerprint of a source tree: what a refactor must leave byte-identical.

For each small committed config (answer_correctness, helpfulness, synthetic_200,
helpfulness_rubric, faithfulness_statements), each strategy (auto, distill, genetic, examples)
and two seeds, one run with the simulated LLM; its result.json (less the wall-clock figures
``duration_s`` and ``stage_seconds``), every event the run emitted and its final checkpoint (less
``elapsed_before`` and each stage's ``seconds``), each written as canonical JSON, and its
report.md (written again with every wall-clock figure 0), into
``OUT/<config>-<strategy>-seed<N>/``. Two trees behave the same on these runs when their
fingerprints are equal file for file::

    python -m benchmarks.perf.fingerprint --out /tmp/fp-before          # on main
    python -m benchmarks.perf.fingerprint --out /tmp/fp-after --against /tmp/fp-before

``--against`` prints every case whose files differ and exits 1 when one does. ``--jobs`` runs
cases in that many processes (the machine has 2 cores). Not a timing: a measurement of sameness.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

CONFIGS = (
    "answer_correctness",
    "helpfulness",
    "synthetic_200",
    "helpfulness_rubric",
    "faithfulness_statements",
)
STRATEGIES = ("auto", "distill", "genetic", "examples")
SEEDS = (0, 1)
ROOT = Path(__file__).resolve().parents[2]
FILES = ("result.json", "events.json", "checkpoint.json", "report.md")
#: Wall-clock fields, which differ between any two runs.
TIMINGS = {"duration_s", "stage_seconds", "elapsed_before", "seconds"}


def _canonical(value: Any) -> Any:
    """``value`` without the wall-clock fields (at any depth)."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _dump(value: Any) -> str:
    return json.dumps(_canonical(value), indent=1, default=repr) + "\n"  # key order kept: it is written


def run_case(name: str, strategy: str, seed: int, out: Path) -> str:
    """Run one case and write its fingerprint into ``out``; return the case's name."""
    from promptevolver import UnusableSamplesWarning
    from promptevolver.config import load_run_config
    from promptevolver.rundir import CHECKPOINT_FILE, RESULT_FILE
    from promptevolver.runs import execute

    case = f"{name}-{strategy}-seed{seed}"
    config = load_run_config(ROOT / "configs" / f"{name}.yaml")
    optimizer = config.optimizer.model_copy(update={"strategy": strategy})
    config = config.model_copy(update={"random_seed": seed, "optimizer": optimizer})
    events: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSamplesWarning)
        run_dir = Path(tmp) / "run"
        execute(
            config,
            run_dir,
            callbacks=[lambda e: events.append({"kind": e.kind, "generation": e.generation, **e.data})],
        )
        result = json.loads((run_dir / RESULT_FILE).read_text(encoding="utf-8"))
        checkpoint = json.loads((run_dir / CHECKPOINT_FILE).read_text(encoding="utf-8"))
        report = _report(run_dir, result)
    target = out / case
    target.mkdir(parents=True, exist_ok=True)
    (target / "result.json").write_text(_dump(result), encoding="utf-8")
    (target / "events.json").write_text(_dump(events), encoding="utf-8")
    (target / "checkpoint.json").write_text(_dump(checkpoint), encoding="utf-8")
    (target / "report.md").write_text(report, encoding="utf-8")
    return case


def _report(run_dir: Path, result: dict[str, Any]) -> str:
    """The run's report.md, written again from its result.json with every wall-clock figure 0 (the
    tree's own folder written ``<root>``: two trees compare equal wherever they stand)."""
    from promptevolver.report import write_report
    from promptevolver.rundir import RESULT_FILE

    timeless = {
        **result,
        "duration_s": 0.0,
        "stage_seconds": dict.fromkeys(result.get("stage_seconds", {}), 0.0),
    }
    (run_dir / RESULT_FILE).write_text(json.dumps(timeless), encoding="utf-8")
    write_report(run_dir)
    return (run_dir / "report.md").read_text(encoding="utf-8").replace(str(ROOT), "<root>")


def _differences(out: Path, against: Path) -> list[str]:
    cases = sorted({p.name for p in out.iterdir()} | {p.name for p in against.iterdir()})
    differ = []
    for case in cases:
        for name in FILES:
            mine, theirs = out / case / name, against / case / name
            if not mine.is_file() or not theirs.is_file() or mine.read_bytes() != theirs.read_bytes():
                differ.append(f"{case}/{name}")
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder the fingerprint is written into")
    parser.add_argument("--against", type=Path, help="a fingerprint to compare with (exit 1 on a difference)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS))
    parser.add_argument("--strategies", nargs="*", default=list(STRATEGIES))
    args = parser.parse_args(argv)
    cases = [(n, st, s) for n in args.configs for st in args.strategies for s in SEEDS]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, n, st, s, args.out) for n, st, s in cases]
        for future in futures:
            print(future.result(), flush=True)
    if args.against is None:
        return 0
    differ = _differences(args.out, args.against)
    for line in differ:
        print(f"differs: {line}")
    print(f"{len(cases) - len({d.split('/')[0] for d in differ})} of {len(cases)} cases identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
