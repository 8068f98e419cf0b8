#!/usr/bin/env python3
"""The chosen judge of an ours run, as a whole, on a world's test split: its instruction AND its
teaching examples (result.json's ``examples`` block), scored by judgeworld's ``World.score`` with
the examples the result's store gives each test input (expected accuracy, exact; as a
temperature-0 server call showing them would be answered).

``score.py`` (what run.py scores every method with) reads an instruction only; a result that kept
an example policy (``policy`` retrieval or static) would be scored without its examples. This is
the one home of that scoring: run.py calls it for ours (under ``--ours-python``, which has
promptevolver's dependencies) and examples.py imports :func:`score_result`.

    python benchmarks/judgeworld/score_judge.py --judgeworld ../shared/judgeworld \
        --world OUT/worlds/w200s1.json --result RUN/out/result.json

prints ``{"policy": ..., "accuracy_expected": ..., "n": ...}`` (JSON). Needs promptevolver importable
(this checkout's ``src/`` first on ``PYTHONPATH``) and ``JUDGEWORLD_TRAIN_FRAC`` set as for the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def score_result(judgeworld: Path, world_path: Path, result: dict[str, Any]) -> dict[str, Any]:
    """Expected test accuracy of ``result``'s chosen judge with its examples (none: instruction only)."""
    sys.path.insert(0, str(judgeworld))
    from world import Params, resolve_world

    from promptevolver.optimizers._result import _store

    w = resolve_world(str(world_path), None)
    index = {(s.user_input or "", s.response or ""): i for i, s in enumerate(w.samples) if s.canonical == i}
    block = result.get("examples") or {}
    policy = block.get("policy", "none")
    demos = None
    if policy != "none":
        store = _store(block["store"])

        def demos(i: int) -> list[tuple[int, int, str | None]]:
            s = w.samples[i]
            shown = store.examples_for(policy, {"user_input": s.user_input, "response": s.response})
            out = []
            for ex in shown:
                j = index[(ex.metric_input.get("user_input") or "", ex.metric_input.get("response") or "")]
                reason = (ex.expected_output(store.prompt_name or "") or {}).get("reason")
                out.append((j, int(ex.human_label(binary=True) or 0), reason))
            return out

    instruction = next(iter(result["best_instructions"].values()))
    r = w.score(instruction, Params(), "test", 0, draws=1, demos=demos)
    return {"policy": policy, "accuracy_expected": round(r["accuracy_expected"], 6), "n": r["n"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgeworld", type=Path, required=True)
    ap.add_argument("--world", type=Path, required=True)
    ap.add_argument("--result", type=Path, required=True)
    a = ap.parse_args(argv)
    result = json.loads(a.result.read_text(encoding="utf-8"))
    print(json.dumps(score_result(a.judgeworld, a.world, result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
