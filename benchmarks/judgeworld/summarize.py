#!/usr/bin/env python3
"""Summarize judgeworld side-by-side records into summary.md and summary.json.

    python benchmarks/judgeworld/summarize.py --records benchmarks/results/judgeworld/records \\
        --records /work/bench-runs/jw-after/records --out /work/bench-runs/jw-after

Records (written by run.py) are read from each --records folder in order. A method's figures come
from the last folder that holds that method (e.g. ours re-measured), and the earlier folders'
records of the same method are shown beside them as ``<method>@before`` (e.g. the committed ours),
so a re-measurement is never mixed with the figures it replaces.

Figures per world size and per world: mean, sample standard deviation and min-max over generator
seeds x optimizer seeds of the test split's expected accuracy (judgeworld score.py ``expected``),
judge calls, meta calls (meta_instruction + meta_feedback) and the optimizer's wall time, all read
from the server's /stats of that run. Failed runs are counted and never averaged in.

Worlds built from real annotation files (``real_<stem>``, run.py ``--world-file``) are left out of the
summary; ``--real-files FILE`` writes their own page instead (default records folder
benchmarks/results/judgeworld/real_files/records):

    python benchmarks/judgeworld/summarize.py --real-files benchmarks/results/judgeworld/real_files.md
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COMMITTED = HERE.parents[1] / "benchmarks" / "results" / "judgeworld"

#: Column order of the tables; ``seed`` and ``oracle`` come from the reference records.
ORDER = [
    "seed",
    "ours_genetic",
    "ours_auto",
    "ours_distill",
    "ours_pop3",
    "ours_pop6",
    "ragas_pop3",
    "gepa",
    "distill4",
    "oracle",
]
LABELS = {
    "seed": "seed instr.",
    "ours_genetic": "ours genetic (defaults)",
    "ours_auto": "ours auto",
    "ours_distill": "ours distill",
    "ours_pop3": "ours pop 3",
    "ours_pop6": "ours pop 6, 6 gens",
    "ragas_pop3": "Ragas pop 3",
    "gepa": "GEPA",
    "distill4": "distill, 4 rounds",
    "oracle": "oracle",
}
#: Records folders of worlds built from real annotation files (run.py --world-file) start with this.
REAL_PREFIX = "real_"
#: Methods shown in the real-files table (n/a where a method was not run).
REAL_ORDER = ["seed", "oracle", "ours_auto", "ours_genetic", "distill4", "ragas_pop3", "gepa"]
#: Text kept from an existing real-files page: everything after this line (hand-written notes).
NOTES_MARKER = "<!-- notes: hand-written below this line, kept when the tables are rebuilt -->"

#: Issue 20's "Done when": accuracy >= min(max(distill-4, best of Ragas and GEPA) + MARGIN,
#: oracle - MARGIN); judge calls <= JUDGE_SHARE x GEPA's; tokens <= TOKEN_SHARE x GEPA's; with a
#: context window, within CTX_TOLERANCE of the same method without one.
MARGIN = 0.01
JUDGE_SHARE = 0.4
TOKEN_SHARE = 0.5
CTX_TOLERANCE = 0.01


def load(
    sources: list[Path], *, real: bool = False
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(reference record per world, run records) from ``sources`` (see module doc).

    A method's records come from the last source that holds it; the records of earlier sources
    for the same method are returned with ``tag`` ``<method>@before`` (a later source's record
    replacing an earlier one's for the same world and seed). Reference records: later wins.
    ``real``: only the worlds built from real annotation files (``real_<stem>``, run.py
    ``--world-file``); otherwise only the synthetic ones.
    """
    refs: dict[str, dict[str, Any]] = {}
    by_source: list[dict[str, dict[tuple[str, int], dict[str, Any]]]] = []
    for src in sources:
        tags: dict[str, dict[tuple[str, int], dict[str, Any]]] = defaultdict(dict)
        if src.is_dir():
            for f in sorted(src.glob("*/reference.json")):
                if is_real_world(f.parent.name) == real:
                    refs[f.parent.name] = json.loads(f.read_text(encoding="utf-8"))
            for f in sorted(src.glob("*/*/s*.json")):
                if is_real_world(f.parent.parent.name) != real:
                    continue
                rec = json.loads(f.read_text(encoding="utf-8"))
                tags[f.parent.name][(rec["world"], int(rec["opt_seed"]))] = rec
        by_source.append(tags)
    out: list[dict[str, Any]] = []
    for tag in sorted({t for tags in by_source for t in tags}):
        last = max(i for i, tags in enumerate(by_source) if tag in tags)
        before: dict[tuple[str, int], dict[str, Any]] = {}
        for tags in by_source[:last]:
            before.update(tags.get(tag, {}))
        out += [{**rec, "tag": f"{tag}@before"} for _, rec in sorted(before.items())]
        out += [{**rec, "tag": tag} for _, rec in sorted(by_source[last][tag].items())]
    return refs, out


def is_real_world(world: str) -> bool:
    """Whether a records folder name is a world built from a real annotation file (``real_<stem>``)."""
    return world.startswith(REAL_PREFIX)


def spread(values: list[float]) -> dict[str, Any]:
    """n, mean, sample std (None below 2 values), min and max of ``values`` (None when empty)."""
    if not values:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else None,
        "min": min(values),
        "max": max(values),
    }


def aggregate(recs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in recs if r["status"] == "ok"]
    calls = [r["server_stats"]["calls"] for r in recs if "server_stats" in r]
    ss = [r["server_stats"] for r in recs if "server_stats" in r]
    return {
        "runs": len(recs),
        "failed": len(recs) - len(ok),
        "failures": [f"{r['world']} s{r['opt_seed']}: {r['status']}" for r in recs if r["status"] != "ok"],
        "test_expected": spread([r["test"]["expected"] for r in ok]),
        "judge_calls": spread([float(r["server_stats"]["calls"]["judge"]) for r in ok]),
        "tokens": spread([float(r["server_stats"]["tokens_approx"]) for r in ok]),
        "meta_calls": spread(
            [
                float(
                    r["server_stats"]["calls"]["meta_instruction"]
                    + r["server_stats"]["calls"]["meta_feedback"]
                )
                for r in ok
            ]
        ),
        "wall_s": spread([r["wall_s"] for r in ok]),
        "seed_kept": sum(
            1
            for r in ok
            if r.get("seed_instruction") is not None
            and " ".join(r["instruction"].split()) == " ".join(r["seed_instruction"].split())
        ),
        "other_calls": sum(c["other"] for c in calls),
        "unmatched": sum(s["judge_unmatched"] for s in ss),
        "weak_matches": sum(s["judge_weak_matches"] for s in ss),
    }


def reference_aggregate(refs: list[dict[str, Any]], which: str) -> dict[str, Any]:
    return {
        "runs": len(refs),
        "failed": 0,
        "failures": [],
        "test_expected": spread([r[which]["expected"] for r in refs]),
        "judge_calls": spread([]),
        "tokens": spread([]),
        "meta_calls": spread([]),
        "wall_s": spread([]),
    }


def summarize(refs: dict[str, dict[str, Any]], recs: list[dict[str, Any]]) -> dict[str, Any]:
    """Nested figures: by_size[size][column], by_world[world][column], latency[...]."""
    main = [r for r in recs if not r.get("latency_ms")]
    lat = [r for r in recs if r.get("latency_ms")]
    by_size: dict[str, dict[str, Any]] = {}
    by_world: dict[str, dict[str, Any]] = {}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    wgroups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in main:
        groups[(str(r["size"]), r["tag"])].append(r)
        wgroups[(r["world"], r["tag"])].append(r)
    sizes = sorted({str(r["size"]) for r in refs.values()} | {k[0] for k in groups}, key=int)
    for size in sizes:
        srefs = [r for r in refs.values() if str(r["size"]) == size]
        col = by_size.setdefault(size, {"worlds": sorted({r["world"] for r in srefs})})
        if srefs:
            col["seed"] = reference_aggregate(srefs, "seed")
            col["oracle"] = reference_aggregate(srefs, "oracle")
        for (s, tag), rs in groups.items():
            if s == size:
                col[tag] = aggregate(rs)
    for world in sorted(set(refs) | {k[0] for k in wgroups}, key=_world_key):
        col = by_world.setdefault(world, {})
        if world in refs:
            col["seed"] = reference_aggregate([refs[world]], "seed")
            col["oracle"] = reference_aggregate([refs[world]], "oracle")
        for (w, tag), rs in wgroups.items():
            if w == world:
                col[tag] = aggregate(rs)
    base_wall = {(r["world"], r["tag"], r["opt_seed"]): r.get("wall_s") for r in main}
    latency = [
        {
            "world": r["world"],
            "method": r["tag"],
            "opt_seed": r["opt_seed"],
            "latency_ms": r["latency_ms"],
            "status": r["status"],
            "wall_s": r.get("wall_s"),
            "judge_calls": r.get("server_stats", {}).get("calls", {}).get("judge"),
            "meta_calls": _meta(r),
            "tokens": r.get("server_stats", {}).get("tokens_approx"),
            "test_expected": r.get("test", {}).get("expected"),
            "waves": _waves(r, base_wall.get((r["world"], _strip_lat(r["tag"]), r["opt_seed"]))),
        }
        for r in lat
    ]
    return {
        "by_size": by_size,
        "by_world": by_world,
        "targets": targets(refs, by_world, main),
        "latency": latency,
        "misread_check": _misread(main + lat),
        "runs": len(recs),
    }


def targets(
    refs: dict[str, dict[str, Any]], by_world: dict[str, dict[str, Any]], recs: list[dict[str, Any]]
) -> dict[str, Any]:
    """Issue 20's "Done when" per world, and how each ours method measures against it.

    Per world, from the anchors' means over optimizer seeds (latency 0, no context limit):
    ``accuracy`` = min(max(distill-4, Ragas pop 3, GEPA) + MARGIN, oracle - MARGIN) (None when
    distill-4 or the oracle is missing; Ragas or GEPA may be missing), ``judge_calls`` =
    JUDGE_SHARE x GEPA's mean judge calls, ``tokens`` = TOKEN_SHARE x GEPA's mean tokens (None
    without GEPA). For every ours method on that world (context-window variants too): its mean and
    minimum accuracy, runs below the seed instruction, mean judge calls and tokens, each check
    (None when its target is unknown) and ``pass`` (every check known and met; a context-window
    variant must also be within CTX_TOLERANCE of the same method without the limit).
    """
    out: dict[str, Any] = {}
    for world, col in by_world.items():

        def mean(tag: str, key: str = "test_expected", col: dict[str, Any] = col) -> float | None:
            agg = col.get(tag)
            return None if agg is None else agg[key]["mean"]

        peers = [v for v in (mean("ragas_pop3"), mean("gepa")) if v is not None]
        distill, oracle = mean("distill4"), mean("oracle")
        acc_target = None
        if distill is not None and oracle is not None:
            acc_target = min(max([distill, *peers]) + MARGIN, oracle - MARGIN)
        gepa_judge, gepa_tokens = mean("gepa", "judge_calls"), mean("gepa", "tokens")
        t: dict[str, Any] = {
            "distill4": distill,
            "best_of_ragas_gepa": max(peers) if peers else None,
            "oracle": oracle,
            "seed": mean("seed"),
            "accuracy": acc_target,
            "judge_calls": None if gepa_judge is None else JUDGE_SHARE * gepa_judge,
            "tokens": None if gepa_tokens is None else TOKEN_SHARE * gepa_tokens,
            "methods": {},
        }
        seed = refs.get(world, {}).get("seed", {}).get("expected")
        for tag in (x for x in _columns(col) if x.startswith("ours") and "@" not in x):
            agg = col[tag]
            runs = [r for r in recs if r["world"] == world and r["tag"] == tag and r["status"] == "ok"]
            m = {
                "runs": agg["runs"],
                "failed": agg["failed"],
                "accuracy": agg["test_expected"]["mean"],
                "accuracy_min": agg["test_expected"]["min"],
                "runs_below_seed": None if seed is None else sum(r["test"]["expected"] < seed for r in runs),
                "judge_calls": agg["judge_calls"]["mean"],
                "tokens": agg["tokens"]["mean"],
            }
            checks = {
                "accuracy": _at_least(m["accuracy"], acc_target),
                "judge_calls": _at_least(t["judge_calls"], m["judge_calls"]),
                "tokens": _at_least(t["tokens"], m["tokens"]),
                "never_below_seed": None if m["runs_below_seed"] is None else m["runs_below_seed"] == 0,
                "no_failed_run": m["failed"] == 0,
            }
            base = re.sub(r"-ctx\d+", "", tag)
            if base != tag:
                unlimited = mean(base)
                m["accuracy_without_limit"] = unlimited
                checks["same_within_ctx_tolerance"] = (
                    None
                    if unlimited is None or m["accuracy"] is None
                    else abs(m["accuracy"] - unlimited) <= CTX_TOLERANCE
                )
            m["checks"] = checks
            m["pass"] = all(v is True for v in checks.values())
            t["methods"][tag] = m
        out[world] = t
    return out


def _at_least(value: float | None, bound: float | None) -> bool | None:
    """value >= bound, None when either is unknown (compared to 1e-9)."""
    return None if value is None or bound is None else value >= bound - 1e-9


def _ktok(tokens: float | None) -> str:
    return "n/a" if tokens is None else f"{tokens / 1000:,.0f}k tok"


def render_targets(tg: dict[str, Any]) -> list[str]:
    """The "Done when" table of issue 20: targets per world, then each ours method's pass/fail."""
    if not tg:
        return []

    def f3(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    def f0(v: float | None) -> str:
        return "n/a" if v is None else f"{v:,.0f}"

    lines = [
        "",
        '## Issue 20 targets ("Done when")',
        "",
        f"Per world, from the anchors' means: accuracy ≥ min(max(distill-4, best of Ragas pop 3 and "
        f"GEPA) + {MARGIN}, oracle − {MARGIN}); judge calls ≤ {JUDGE_SHARE} × GEPA's; tokens ≤ "
        f"{TOKEN_SHARE} × GEPA's (GEPA at its recorded `max_metric_calls`, 800). n/a: an anchor is "
        "missing.",
        "",
        "| world | seed | distill-4 | best of Ragas, GEPA | oracle | accuracy target | judge calls ≤ "
        "| tokens ≤ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for world, t in tg.items():
        lines.append(
            f"| {world} | {f3(t['seed'])} | {f3(t['distill4'])} | {f3(t['best_of_ragas_gepa'])} | "
            f"{f3(t['oracle'])} | **{f3(t['accuracy'])}** | {f0(t['judge_calls'])} | {f0(t['tokens'])} |"
        )
    rows = [(w, tag, m) for w, t in tg.items() for tag, m in t["methods"].items()]
    if rows:
        lines += [
            "",
            "Each ours method against them: mean (min) accuracy over optimizer seeds, runs below the "
            f"seed instruction, mean judge calls and tokens; with a context window also the same "
            f"method without one (must be within {CTX_TOLERANCE}). Pass = every check met; a failed "
            "run or a missing target fails.",
            "",
            "| world | method | runs | accuracy (min) | acc. ok | below seed | judge calls | calls ok "
            "| tokens | tokens ok | without limit | pass |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]

        def yn(v: bool | None) -> str:
            return "n/a" if v is None else ("yes" if v else "**no**")

        for world, tag, m in rows:
            c = m["checks"]
            lines.append(
                f"| {world} | {_label(tag)} | {m['runs'] - m['failed']}/{m['runs']} | "
                f"{f3(m['accuracy'])} ({f3(m['accuracy_min'])}) | {yn(c['accuracy'])} | "
                f"{'n/a' if m['runs_below_seed'] is None else m['runs_below_seed']} | "
                f"{f0(m['judge_calls'])} | {yn(c['judge_calls'])} | {_ktok(m['tokens'])} | "
                f"{yn(c['tokens'])} | "
                f"{f3(m['accuracy_without_limit']) if 'accuracy_without_limit' in m else '—'} | "
                f"{'**PASS**' if m['pass'] else 'FAIL'} |"
            )
        by_tag: dict[str, list[bool]] = defaultdict(list)
        for _, tag, m in rows:
            by_tag[tag].append(m["pass"])
        lines += [""] + [
            f"- {_label(tag)}: passes on {sum(v)} of {len(v)} worlds" for tag, v in sorted(by_tag.items())
        ]
    return lines


def _waves(r: dict[str, Any], wall_at_0: float | None) -> float | None:
    """Sequential call waves implied by the latency: (wall at L - wall at 0 for the same run) / L."""
    if r.get("wall_s") is None or wall_at_0 is None:
        return None
    return (r["wall_s"] - wall_at_0) / (r["latency_ms"] / 1000.0)


def _latency_means(rows: list[dict[str, Any]]) -> list[str]:
    """One line per (world, latency): mean wall per method and ours / Ragas."""
    groups: dict[tuple[str, float], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["wall_s"] is not None:
            groups[(r["world"], r["latency_ms"])][_strip_lat(r["method"])].append(r["wall_s"])
    out = []
    for (world, lat), by in sorted(groups.items()):
        means = {m: statistics.fmean(v) for m, v in by.items()}
        parts = [f"{_label(m)} {v:.1f} s (n={len(by[m])})" for m, v in sorted(means.items())]
        ratio = "".join(
            f"; {_label(m)} / Ragas pop 3 = {means[m] / means['ragas_pop3']:.2f}"
            for m in sorted(means)
            if m.startswith("ours") and "ragas_pop3" in means
        )
        out.append(f"- {world} at {lat:g} ms: mean wall " + ", ".join(parts) + ratio)
    return out


def _meta(r: dict[str, Any]) -> int | None:
    c = r.get("server_stats", {}).get("calls")
    return None if c is None else c["meta_instruction"] + c["meta_feedback"]


def _misread(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per method: other-kind calls, unmatched and weak judge matches, and for ours whether the calls
    by model name (judge / engineer) equal the calls by kind the server read."""
    out: dict[str, Any] = {}
    for r in recs:
        if "server_stats" not in r:
            continue
        s = r["server_stats"]
        m = out.setdefault(
            r["tag"],
            {
                "runs": 0,
                "other": 0,
                "unmatched": 0,
                "weak_matches": 0,
                "kind_model_mismatch_runs": 0,
                "client_server_judge_mismatch_runs": 0,
            },
        )
        m["runs"] += 1
        m["other"] += s["calls"]["other"]
        m["unmatched"] += s["judge_unmatched"]
        m["weak_matches"] += s["judge_weak_matches"]
        if r["method"].startswith("ours"):
            models = s.get("models", {})
            meta = s["calls"]["meta_instruction"] + s["calls"]["meta_feedback"]
            if models.get("judge", 0) != s["calls"]["judge"] or models.get("engineer", 0) != meta:
                m["kind_model_mismatch_runs"] += 1
            client = r.get("client_calls") or {}
            if client and client.get("judge") != s["calls"]["judge"]:
                m["client_server_judge_mismatch_runs"] += 1
    return out


def _world_key(w: str) -> tuple[int, int, str]:
    """Sort key of ``w<size>s<seed>[suffix]`` names: size, seed, suffix (other names last)."""
    m = re.fullmatch(r"w(\d+)s(\d+)(.*)", w)
    return (int(m[1]), int(m[2]), m[3]) if m else (sys.maxsize, 0, w)


def _fmt(agg: dict[str, Any] | None, key: str, digits: int = 3, spread_kind: str = "std") -> str:
    if agg is None:
        return "n/a"
    s = agg[key]
    if s["mean"] is None:
        return "n/a" if key == "test_expected" or agg["runs"] else "—"
    fmt = f"{{:.{digits}f}}" if digits else "{:,.0f}"
    txt = fmt.format(s["mean"])
    if spread_kind == "std" and s["std"] is not None:
        txt += " ± " + fmt.format(s["std"])
    elif spread_kind == "range" and s["n"] > 1:
        txt += f" ({fmt.format(s['min'])}–{fmt.format(s['max'])})"
    if agg.get("failed"):
        txt += f" [{agg['failed']} failed]"
    return txt


def _columns(col: dict[str, Any]) -> list[str]:
    """Known columns in ORDER, each after its @before twin and followed by its server-condition
    variants (``-ctx16000``), then any others."""
    out = []
    for k in ORDER:
        out += [t for t in (f"{k}@before", k) if t in col]
        out += sorted(t for t in col if t.startswith(f"{k}-") and t not in out)
    return out + sorted(k for k in col if k not in out and k != "worlds")


def _strip_lat(tag: str) -> str:
    """The method tag without its latency part: ``ours_pop3-lat200@before`` -> ``ours_pop3@before``."""
    return re.sub(r"-lat[0-9.]+", "", tag)


def _label(tag: str) -> str:
    """``ours_genetic-ctx16000@before`` -> ``ours genetic (defaults), 16k context (before)``."""
    base, _, before = tag.partition("@")
    name, *conds = base.split("-")
    words = []
    for c in conds:
        if c.startswith("ctx") and c[3:].isdigit():
            words.append(f"{int(c[3:]) / 1000:g}k context")
        elif c.startswith("lat"):
            words.append(f"{c[3:]} ms")
        else:
            words.append(c)
    return ", ".join([LABELS.get(name, name), *words]) + (" (before)" if before else "")


def render(summary: dict[str, Any]) -> str:
    bs = summary["by_size"]
    lines = [
        "# judgeworld side by side",
        "",
        "Expected accuracy on the test split (40 %) of synthetic judgeworld worlds, mean ± sample std over "
        "generator seeds × optimizer seeds (a deterministic method: one run per world); in parentheses "
        "judge calls and tokens (all calls, judgeworld's `/stats` `total_tokens_approx`, k = 1,000), "
        "as counted by the server (mean). Written by "
        "`benchmarks/judgeworld/summarize.py` from the records beside this file; see "
        "`benchmarks/judgeworld/README.md`.",
        "",
    ]
    tags = []
    for col in bs.values():
        tags += [t for t in _columns(col) if t not in tags]
    head = ["world size", *[_label(t) for t in tags]]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, col in bs.items():
        cells = [f"{int(size):,} ({len(col.get('worlds', []))} worlds)"]
        for t in tags:
            agg = col.get(t)
            if agg is None:
                cells.append("n/a")
                continue
            txt = _fmt(agg, "test_expected")
            if agg["judge_calls"]["mean"] is not None:
                txt += f" ({agg['judge_calls']['mean']:,.0f}; {_ktok(agg['tokens']['mean'])})"
            cells.append(txt)
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Per world size: spread and cost",
        "",
        "min–max in parentheses; meta = meta_instruction + meta_feedback calls; wall = the optimizer's own "
        "wall time in seconds (server latency 0).",
        "",
    ]
    lines += [
        "| size | method | runs | test expected | min–max | judge calls | tokens | meta calls | wall s "
        "| seed kept |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size, col in bs.items():
        for t in _columns(col):
            agg = col[t]
            te = agg["test_expected"]
            rng = "n/a" if te["mean"] is None else f"{te['min']:.3f}–{te['max']:.3f}"
            lines.append(
                f"| {int(size):,} | {_label(t)} | {agg['runs'] - agg['failed']}/{agg['runs']} | "
                f"{_fmt(agg, 'test_expected')} | {rng} | {_fmt(agg, 'judge_calls', 0, 'range')} | "
                f"{_fmt(agg, 'tokens', 0, 'range')} | "
                f"{_fmt(agg, 'meta_calls', 0, 'range')} | {_fmt(agg, 'wall_s', 1, 'range')} | "
                f"{agg.get('seed_kept', '—') if t.startswith('ours') else '—'} |"
            )
    lines += [
        "",
        "## Per world",
        "",
        "| world | method | test expected | judge calls | tokens | meta calls | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for world, col in summary["by_world"].items():
        for t in _columns(col):
            agg = col[t]
            lines.append(
                f"| {world} | {_label(t)} | {_fmt(agg, 'test_expected')} | "
                f"{_fmt(agg, 'judge_calls', 0, 'range')} | {_fmt(agg, 'tokens', 0, 'range')} | "
                f"{_fmt(agg, 'meta_calls', 0, 'range')} | {_fmt(agg, 'wall_s', 1, 'range')} |"
            )
    lines += render_targets(summary["targets"])
    if summary["latency"]:
        lines += [
            "",
            "## Latency",
            "",
            "Server latency per chat call; wall = the optimizer's own wall time; waves = (wall at this "
            "latency - wall of the same run at latency 0) / latency, the sequential rounds of calls "
            "(approximate: the machine is shared).",
            "",
            "| world | method | seed | latency ms | wall s | waves | judge calls | meta calls "
            "| test expected |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in summary["latency"]:
            wall = "n/a" if r["wall_s"] is None else f"{r['wall_s']:.1f}"
            waves = "n/a" if r["waves"] is None else f"{r['waves']:.0f}"
            te = "n/a" if r["test_expected"] is None else f"{r['test_expected']:.3f}"
            lines.append(
                f"| {r['world']} | {_label(_strip_lat(r['method']))} | "
                f"{r['opt_seed']} | {r['latency_ms']:g} | {wall} | {waves} | {r['judge_calls']} | "
                f"{r['meta_calls']} | {te} |"
            )
        lines += ["", *_latency_means(summary["latency"])]
    lines += [
        "",
        "## How the world read the requests",
        "",
        "Summed over runs: calls the server classed as *other* (neither judge nor meta), judge calls "
        "whose sample it could not match (coin-flip verdict) or matched only weakly; for ours, runs "
        "where calls by model name (`judge`, `engineer`) differ from calls by kind, and runs where our "
        "own judge-call count differs from the server's.",
        "",
        "| method | runs | other | unmatched | weak | kind≠model runs | client≠server runs |",
        "|---|---|---|---|---|---|---|",
    ]
    for tag, m in sorted(summary["misread_check"].items()):
        ours = tag.startswith("ours")
        lines.append(
            f"| {tag} | {m['runs']} | {m['other']} | {m['unmatched']} | {m['weak_matches']} | "
            f"{m['kind_model_mismatch_runs'] if ours else '—'} | "
            f"{m['client_server_judge_mismatch_runs'] if ours else '—'} |"
        )
    fails = [f for col in bs.values() for t in _columns(col) for f in col[t].get("failures", [])]
    if fails:
        lines += ["", "## Failed runs", ""] + [f"- {f}" for f in fails]
    return "\n".join(lines) + "\n"


def write_summary(sources: list[Path], out: Path) -> dict[str, Any]:
    refs, recs = load(sources)
    summary = summarize(refs, recs)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(render(summary), encoding="utf-8")
    return summary


def render_real(refs: dict[str, dict[str, Any]], recs: list[dict[str, Any]]) -> str:
    """The real-files page: per world, every method of REAL_ORDER (n/a when not run), test expected
    accuracy (mean ± sample std, min–max), runs, judge calls, tokens, meta calls; then issue 20's
    check "ours auto >= max(Ragas, distill)" on the means."""
    worlds = sorted(set(refs) | {r["world"] for r in recs})
    lines = [
        "# judgeworld on the bundled real annotation files",
        "",
        "Worlds built from `benchmarks/data/*.json` with the hand-written lexicons of "
        "`benchmarks/judgeworld/lexicons/` (one reading of the annotations; see its README), by "
        "`benchmarks/judgeworld/run.py --world-file`. judgeworld's seeded stratified split, train 60 % / "
        "test 40 %, every run on a fresh server. *test expected*: judgeworld's expected accuracy "
        "(score.py `expected`) of the returned instruction on the test split, mean ± sample std "
        "(min–max) over optimizer seeds; a deterministic method (distill) runs once. Judge calls, "
        "meta calls and tokens (characters / 4) are the server's `/stats`, means over the runs. "
        "`n/a`: not measured (or every run failed).",
        "",
    ]
    for world in worlds:
        ref = refs.get(world)
        wrecs = [r for r in recs if r["world"] == world and "@" not in r["tag"]]
        size = ref["size"] if ref else (wrecs[0]["size"] if wrecs else "?")
        test_n = ref["seed"]["n"] if ref else "?"
        lines += [
            f"## {world} ({size} samples, test split {test_n})",
            "",
            "| method | runs ok | test expected | min–max | judge calls | tokens | meta calls "
            "| instruction kept = seed |",
            "|---|---|---|---|---|---|---|---|",
        ]
        aggs: dict[str, dict[str, Any] | None] = {}
        for name in REAL_ORDER:
            if name in ("seed", "oracle"):
                agg = reference_aggregate([ref], name) if ref else None
                aggs[name] = agg
                lines.append(f"| {LABELS[name]} | — | {_fmt(agg, 'test_expected')} | — | — | — | — | — |")
                continue
            rs = [r for r in wrecs if r["tag"] == name]
            agg = aggregate(rs) if rs else None
            aggs[name] = agg
            if agg is None:
                lines.append(f"| {LABELS[name]} | n/a | n/a | n/a | n/a | n/a | n/a | n/a |")
                continue
            te = agg["test_expected"]
            rng = f"{te['min']:.3f}–{te['max']:.3f}" if te["n"] else "n/a"
            lines.append(
                f"| {LABELS[name]} | {agg['runs'] - agg['failed']}/{agg['runs']} | "
                f"{_fmt(agg, 'test_expected')} | {rng} | {_fmt(agg, 'judge_calls', 0)} | "
                f"{_fmt(agg, 'tokens', 0)} | {_fmt(agg, 'meta_calls', 0)} | "
                f"{agg['seed_kept'] if name.startswith('ours') else '—'} |"
            )
        for name, agg in aggs.items():
            for failure in (agg or {}).get("failures", []):
                lines.append(f"\nFailed ({LABELS.get(name, name)}): {failure}")

        ours = _mean(aggs, "ours_auto")
        peers = [m for m in (_mean(aggs, "ragas_pop3"), _mean(aggs, "distill4")) if m is not None]
        if ours is None or len(peers) < 2:
            verdict = "n/a (ours auto, Ragas or distill not measured)"
        else:
            verdict = f"{ours:.3f} vs {max(peers):.3f}: " + ("met" if ours >= max(peers) else "**not met**")
        lines += ["", f"Issue 20, ours auto >= max(Ragas, distill) on the mean: {verdict}", ""]
    return "\n".join(lines) + "\n"


def _mean(aggs: dict[str, dict[str, Any] | None], name: str) -> float | None:
    agg = aggs.get(name)
    return None if agg is None else agg["test_expected"]["mean"]


def write_real_files(sources: list[Path], out_md: Path) -> None:
    """Rebuild the real-files page ``out_md`` from ``sources`` (the real worlds' records), keeping
    the hand-written notes after NOTES_MARKER of an existing page."""
    refs, recs = load(sources, real=True)
    text = render_real(refs, recs)
    old = out_md.read_text(encoding="utf-8") if out_md.exists() else ""
    tail = old.split(NOTES_MARKER, 1)[1] if NOTES_MARKER in old else "\n"
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(text + "\n" + NOTES_MARKER + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--records",
        type=Path,
        action="append",
        default=None,
        help=f"records folder (repeatable; default {COMMITTED / 'records'})",
    )
    ap.add_argument("--out", type=Path, default=COMMITTED)
    ap.add_argument(
        "--real-files",
        type=Path,
        default=None,
        help="write the real-files page (worlds from real annotation files) here instead of the summary",
    )
    a = ap.parse_args(argv)
    if a.real_files:
        write_real_files(a.records or [COMMITTED / "real_files" / "records"], a.real_files)
        print(a.real_files)
        return 0
    write_summary(a.records or [COMMITTED / "records"], a.out)
    print(a.out / "summary.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
