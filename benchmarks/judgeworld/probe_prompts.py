#!/usr/bin/env python3
"""How judgeworld reads promptevolver's judge and meta prompts: one short real run, every call inspected.

    /work/venv-bench/bin/python benchmarks/judgeworld/probe_prompts.py \\
        --world /work/bench-runs/jw/worlds/w200s1.json --out benchmarks/results/judgeworld/probe.md

Runs judgeworld's server in this process (its modules imported from --judgeworld; needs numpy),
wrapping two of its functions to record what it concluded: the instruction it extracted from each
judge call (``sim.extract_instruction``) and the inputs it read from each meta call
(``engineer.meta_inputs``). Then runs ``promptevolver optimize`` (this checkout, population 3,
1 generation) against it and compares, call by call:

* judge calls: the kind and output fields read; the extracted instruction against the instruction
  promptevolver sent (the system message up to its ``## Output format`` section); text the world
  added, and whether the judged sample was matched;
* meta calls: the kind; the operation the engineer performed; whether the current instruction,
  both crossover parents and the feedback items it read equal what promptevolver put in its
  ``## Current instruction`` / ``## Parent instruction A|B`` / ``## Feedback to apply`` sections;
  how many samples it counted as shown.

Writes a Markdown report (--out) and exits 1 if a call was read as another kind than sent.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from methods import _write_ours_config  # noqa: E402

OUR_SECTIONS = {
    "## Current instruction": "current_instruction",
    "## Parent instruction A": "parent_1",
    "## Parent instruction B": "parent_2",
    "## Feedback to apply": "feedbacks",
}


class _World:
    """The fields of methods._write_ours_config's world argument."""

    def __init__(self, path: Path, train: Path, metric: str, definition: str) -> None:
        self.path, self.train, self.metric, self.default_definition = path, train, metric, definition


def our_sections(user: str) -> dict[str, Any]:
    """promptevolver's meta-prompt sections (``## Heading`` to the next ``\\n\\n## ``)."""
    out: dict[str, Any] = {}
    for head, key in OUR_SECTIONS.items():
        m = re.search(re.escape(head) + r"\n(.*?)(?=\n\n## |\Z)", user, re.S)
        if m:
            body = m.group(1).strip()
            out[key] = (
                [ln[2:].strip() for ln in body.splitlines() if ln.startswith("- ")]
                if key == "feedbacks"
                else body
            )
    return out


def _is_json_object(line: str) -> bool:
    """True for a line that is one JSON object (a sample line of our meta-prompts)."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judgeworld", type=Path, default=REPO.parent / "shared" / "judgeworld")
    ap.add_argument("--world", type=Path, required=True, help="a generated world JSON (lexicon beside it)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/jw-probe"))
    ap.add_argument("--out", type=Path, default=None, help="Markdown report (default: stdout)")
    ap.add_argument("--train-frac", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    os.environ["JUDGEWORLD_TRAIN_FRAC"] = str(a.train_frac)
    sys.path.insert(0, str(a.judgeworld.resolve()))
    import engineer as jw_engineer
    import server as jw_server
    import sim as jw_sim
    from world import Params, resolve_world

    w = resolve_world(str(a.world), None, None)
    calls: list[dict[str, Any]] = []
    local = threading.local()

    orig_extract, orig_inputs = jw_sim.extract_instruction, jw_engineer.meta_inputs

    def extract(pr: Any, texts: list[str]) -> str:
        text = orig_extract(pr, texts)
        local.rec["extracted"] = text
        local.rec["sample_texts"] = len(texts)
        return text

    def inputs(pr: Any) -> dict[str, Any]:
        inp = orig_inputs(pr)
        local.rec.setdefault("meta_inputs", inp)
        return inp

    jw_sim.extract_instruction, jw_engineer.meta_inputs = extract, inputs
    sim = jw_sim.Simulator([w], Params())
    orig_chat = sim.chat
    eng = sim.engineer
    orig_icall, orig_fcall = eng.instruction_call, eng.feedback_call

    def icall(pr: Any, key: str) -> Any:
        res = orig_icall(pr, key)
        local.rec.update(operation=res.operation, shown=len(res.shown), added=len(res.added))
        return res

    def fcall(pr: Any, key: str, max_feedbacks: int = 3) -> Any:
        res = orig_fcall(pr, key, max_feedbacks)
        local.rec.update(operation=res.operation, shown=len(res.shown), added=len(res.added))
        return res

    eng.instruction_call, eng.feedback_call = icall, fcall
    orig_judge = sim._judge

    def judge(pr: Any) -> Any:
        outs, info = orig_judge(pr)
        uid = info.get("sample")
        local.rec["judged"] = None if uid is None else w.samples[int(uid.rsplit(":", 1)[1])]
        return outs, info

    sim._judge = judge

    def chat(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        local.rec = {"body": body}
        status, payload = orig_chat(body)
        local.rec["answer"] = payload["choices"][0]["message"].get("content") if status == 200 else None
        calls.append(local.rec)
        return status, payload

    sim.chat = chat
    jw_server.Handler.sim = sim
    jw_server.Handler.extra = {"port": 0, "verbose": False, "keep_alive": False}
    httpd = jw_server.Server(("127.0.0.1", 0), jw_server.Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"

    split = a.work / "split"
    subprocess.run(
        [sys.executable, str(a.judgeworld / "split.py"), "--world", str(a.world), "--out-dir", str(split)],
        check=True,
        capture_output=True,
    )
    stem = a.world.name[: -len(".json")]
    lex = json.loads(a.world.with_name(stem + ".lexicon.json").read_text(encoding="utf-8"))
    world = _World(a.world, split / f"{stem}.train.json", lex["metric"], lex["default_definition"])
    run_dir = a.work / "ours"
    config = _write_ours_config(world, base_url, run_dir, {"population_size": 3, "generations": 1})
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OPENAI_API_KEY": "dummy"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "promptevolver.cli",
            "optimize",
            str(config),
            "--output",
            str(run_dir / "out"),
            "--seed",
            str(a.seed),
            "-q",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    httpd.shutdown()
    if proc.returncode != 0:
        print(
            f"probe: promptevolver optimize failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr
        )
        return 1
    report, misread = render(calls, sim.stats.snapshot())
    if a.out:
        a.out.write_text(report, encoding="utf-8")
    else:
        print(report)
    return 1 if misread else 0


def render(calls: list[dict[str, Any]], stats: dict[str, Any]) -> tuple[str, int]:
    from prompts import parse_request

    kinds: Counter[tuple[str, str]] = Counter()
    judge_extra: Counter[str] = Counter()
    judge_exact = judge_n = judge_right_sample = 0
    meta_rows: list[str] = []
    misread = 0
    for c in calls:
        body = c["body"]
        pr = parse_request(body)
        model = body.get("model", "")
        kinds[(model, pr.kind)] += 1
        expected_kind = "judge" if model == "judge" else "meta"
        if (expected_kind == "judge") != (pr.kind == "judge") or pr.kind == "other":
            misread += 1
        msgs = body["messages"]
        if pr.kind == "judge":
            judge_n += 1
            sent_inputs = json.loads(msgs[1]["content"].split("\n", 1)[1])
            judged = c.get("judged")
            if judged is not None and (judged.response, judged.user_input) == (
                sent_inputs.get("response"),
                sent_inputs.get("user_input"),
            ):
                judge_right_sample += 1
            sent = msgs[0]["content"].rsplit("\n\n## Output format\n", 1)[0].strip()
            got = c.get("extracted", "")
            if got == sent:
                judge_exact += 1
            elif got.startswith(sent):
                judge_extra[re.sub(r"\s+", " ", got[len(sent) :]).strip()] += 1
            else:
                judge_extra["(does not start with the instruction sent) " + got[:200]] += 1
        else:
            user = [m["content"] for m in msgs if m["role"] == "user"][-1]
            ours = our_sections(user)
            sent_examples = sum(1 for ln in user.splitlines() if _is_json_object(ln))
            inp = c.get("meta_inputs") or {}
            checks = []
            for key, val in ours.items():
                read = inp.get(key)
                checks.append(f"{key} {'read exactly' if read == val else 'MISREAD'}")
            if not ours:
                checks.append(
                    "no instruction/parent/feedback section (reverse engineering): "
                    f"inputs read {sorted(inp) or 'none'}"
                )
            meta_rows.append(
                f"| {pr.kind} | {', '.join(pr.out_fields)} | {c.get('operation', '?')} | "
                f"{c.get('shown', '?')} of {sent_examples} | {c.get('added', '?')} | {'; '.join(checks)} |"
            )
    lines = [
        "# How judgeworld reads promptevolver's prompts",
        "",
        "Written by `benchmarks/judgeworld/probe_prompts.py`: one `promptevolver optimize` run "
        "(population 3, 1 generation) against an in-process judgeworld server; every call inspected.",
        "",
        "## Calls by model name and the kind the world read",
        "",
        "| model sent | kind read | calls |",
        "|---|---|---|",
    ]
    lines += [f"| {m} | {k} | {n} |" for (m, k), n in sorted(kinds.items())]
    j = stats["judge"]
    lines += [
        "",
        "## Judge calls",
        "",
        f"{judge_n} judge calls; unmatched samples {j['unmatched_calls']}, weak matches "
        f"{j['weak_fuzzy_matches']}; the sample judged is the sample sent (same response and "
        f"user_input) in {judge_right_sample} of {judge_n}. Instruction the world extracted equals the "
        f"instruction sent in "
        f"{judge_exact} of {judge_n}; in the others it is the instruction sent followed by:",
        "",
    ]
    lines += [f"- {n} calls: `{t}`" for t, n in judge_extra.most_common()] or ["- (none)"]
    lines += [
        "",
        "## Meta calls (in order)",
        "",
        "| kind read | output fields read | engineer's operation | samples counted as shown, of those sent "
        "| criteria named | inputs |",
        "|---|---|---|---|---|---|",
    ]
    lines += meta_rows
    lines += [
        "",
        f"Samples counted as shown over all meta calls: {stats['meta']['samples_shown']}; criteria named: "
        f"{sum(stats['meta']['criteria_named'].values())}.",
        "",
    ]
    return "\n".join(lines), misread


if __name__ == "__main__":
    sys.exit(main())
