"""The chaos benchmark's summary: ``chaos.json`` (every run) → the table of ``chaos.md``.

Usage (``benchmarks/chaos/faults.py`` calls :func:`write` at its end)::

    python -m benchmarks.chaos.summary benchmarks/results/chaos.json

rewrites ``chaos.md`` next to it; a ``## Findings`` section already in that file is kept.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

#: A section of chaos.md written by hand, kept when the file is rewritten.
FINDINGS = "## Findings"

HEADER = [
    "scenario",
    "runs",
    "finished",
    "stopped cleanly (exit 1, one line)",
    "answered calls repeated after resume",
    "misreported: failures (HTTP; judge parse) / retries / calls / cost",
    "max budget overshoot",
    "chosen held-out vs clean",
]

Row = dict[str, Any]


def _rows(records: list[Row], scenario: str, **match: Any) -> list[Row]:
    return [r for r in records if r["scenario"] == scenario and all(r.get(k) == v for k, v in match.items())]


def held_out(rows: list[Row]) -> str:
    """Mean chosen held-out score vs the clean runs', with the mean and worst difference."""
    pairs = [(r["held_out"], r["clean_held_out"]) for r in rows if r.get("held_out") is not None]
    if not pairs:
        return "n/a"
    deltas = [a - b for a, b in pairs]
    mean, clean = float(np.mean([a for a, _ in pairs])), float(np.mean([b for _, b in pairs]))
    same = sum(bool(r.get("same_choice")) for r in rows if r.get("held_out") is not None)
    return (
        f"{mean:.3f} vs {clean:.3f} (Δ {np.mean(deltas):+.3f}, worst {min(deltas):+.3f}; "
        f"same choice {same}/{len(pairs)})"
    )


def in_flight(row: Row) -> int:
    """Answers a killed client never read (sent under 0.5 s before the kill, asked again later)."""
    repeated = row.get("repeated")
    return int(repeated["in_flight"]) if isinstance(repeated, dict) else 0


def repeats(rows: list[Row]) -> str:
    measured = [r for r in rows if "repeated" in r]
    if not measured:
        return "-"
    values = [r["repeated"] for r in measured]
    if isinstance(values[0], dict):
        flying = sum(in_flight(r) for r in measured)
        return f"{sum(v['answered'] for v in values)} (+{flying} in flight at a kill)"
    return str(sum(values))


def _total(values: Iterable[int | None]) -> str:
    """Sum of absolute values; n/a when one was not measured."""
    known = list(values)
    return "n/a" if any(v is None for v in known) else str(sum(abs(v) for v in known if v is not None))


def misreported(rows: list[Row]) -> str:
    """Totals of |reported − server| over the finished runs; calls net of answers never read."""
    measured = [r for r in rows if "calls_misreported" in r]
    if not measured:
        return "n/a"
    failures = _total(r["failures_misreported"] for r in measured)
    parse = _total(r.get("parse_failures_misreported") for r in measured)
    retries = _total(r["retries_misreported"] for r in measured)
    calls = sum(abs(r["calls_misreported"] + in_flight(r)) for r in measured)
    cost = sum(abs(r["cost_misreported_usd"]) for r in measured)
    paid = sum(r["truth"]["cost_usd"] for r in measured)
    cost_text = f"${cost:.4f} ({cost / paid:.0%})" if paid else "n/a"
    return f"{failures}; {parse} / {retries} / {calls} / {cost_text}"


def overshoot(rows: list[Row]) -> str:
    """The worst overshoot over the limit, in calls' worth of the run's largest call (runs refused
    before any call left out)."""
    spending = [r for r in rows if "overshoot" in r and r["spent"] > 0]
    if not spending:
        return "-"
    worst = max(spending, key=lambda r: r["overshoot_calls"])
    unit = {"max_calls": "calls", "max_tokens": "tokens", "max_cost_usd": "USD"}[worst["bound"]]
    amount = f"{worst['overshoot']:+.6f}" if unit == "USD" else f"{worst['overshoot']:+.0f}"
    verdict = "over" if worst["overshoot"] > 0 else "none over; closest"
    return f"{verdict}: {amount} {unit} = {worst['overshoot_calls']:+.1f} calls' worth ({worst['bound']})"


def stopped(rows: list[Row]) -> str:
    """Runs that stopped (all of a server-down scenario's first sessions; else the unfinished ones)
    with exit 1 and one stderr line, and how long the stops took after the server died."""
    if rows[0]["scenario"] == "kills":
        sigints = [x for r in rows for x in r["sessions"] if x["ended_by"] == "sigint"]
        clean = sum(x["rc"] == 130 and x["stderr_lines"] == 1 for x in sigints)
        return f"SIGINT: {clean}/{len(sigints)} exit 130 with one line" if sigints else "-"
    if rows[0]["scenario"] == "server_down":
        stoppers = rows
    else:
        stoppers = [r for r in rows if "stopped_cleanly" in r and not r.get("finished")]
    if not stoppers:
        return "-"
    text = f"{sum(bool(r['stopped_cleanly']) for r in stoppers)}/{len(stoppers)}"
    seconds = [r["stop_seconds"] for r in stoppers if r.get("stop_seconds") is not None]
    if not seconds:
        return text
    low, high = f"{min(seconds):.0f}", f"{max(seconds):.0f}"
    return text + (f", in {low} s" if low == high else f", in {low}–{high} s")


def groups(records: list[Row]) -> list[tuple[str, list[Row]]]:
    out: list[tuple[str, list[Row]]] = []
    for attempts in (4, 2):
        for rate in (0.1, 0.3):
            rows = _rows(records, "faults", rate=rate, max_attempts=attempts)
            out.append((f"faults {rate:.0%}, llm.max_attempts {attempts}", rows))
    for mode, what in (("503", "answers 503"), ("closed", "closes its port")):
        out.append((f"server {what} mid-run, back, --resume", _rows(records, "server_down", mode=mode)))
    out.append(("SIGKILL ×4 (1 after result.json) + SIGINT ×1 per run, --resume", _rows(records, "kills")))
    for rate in (0.1, 0.3):
        out.append((f"budgets under {rate:.0%} faults", _rows(records, "budget", rate=rate)))
    out.append(("budgets across 4 kills + resumes", _rows(records, "budget_resume")))
    return [(name, rows) for name, rows in out if rows]


def table(records: list[Row]) -> list[str]:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for name, rows in groups(records):
        cells = [
            name,
            str(len(rows)),
            str(sum(bool(r.get("finished")) for r in rows)),
            stopped(rows),
            repeats(rows),
            misreported(rows),
            overshoot(rows),
            held_out(rows),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def budget_table(records: list[Row]) -> list[str]:
    head = [
        "faults",
        "bound",
        "limit",
        "paid (server)",
        "reported",
        "overshoot (calls' worth)",
        "exit",
        "stop",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = _rows(records, "budget") + _rows(records, "budget_resume")
    for r in rows:
        faults = f"{r['rate']:.0%}" if "rate" in r else f"0 %, {r.get('interruptions', 0)} kills"
        rc = r["session"]["rc"] if "session" in r else r["sessions"][-1]["rc"]
        stop = r.get("stop_reason") or ("refused at start" if rc == 1 and not r["spent"] else "n/a")
        cells = [
            faults,
            r["bound"],
            f"{r['limit']:g}",
            f"{r['spent']:.6g}",
            f"{r.get('reported_spent', 'n/a')}",
            f"{r['overshoot']:+.6g} ({r['overshoot_calls']:+.1f})",
            str(rc),
            stop,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def run_dir_line(records: list[Row]) -> str:
    """What the run directories held after every stop and kill."""
    checked = [r for r in records if "files_unparsable" in r]
    stops = sum(
        1 for r in checked for x in r.get("sessions", [r.get("first", {})]) if x.get("ended_by") != "itself"
    )
    entries = [p.split(": ", 1)[1] for r in checked for p in r["files_unparsable"]]
    broken = sorted({e for e in entries if not e.endswith("temporary file left behind")})
    leftovers = sorted({e.split(": ")[0] for e in entries if e.endswith("temporary file left behind")})
    runs = sum(any(p.endswith("temporary file left behind") for p in r["files_unparsable"]) for r in checked)
    kept = [
        p
        for r in checked
        for p in r["files_unparsable"]
        if p.endswith("temporary file left behind") and p.startswith("after none")
    ]
    parsed = "every JSON, YAML and journal file parsed" if not broken else "unparsable: " + "; ".join(broken)
    left = "no temporary file left"
    if leftovers:
        after = f"{len(kept)} still there after the resume" if kept else "each removed by the resume"
        left = f"{len(leftovers)} temporary files left behind by a kill ({runs} runs; {after})"
    return f"Run directories after {stops} stops and kills: {parsed}; {left}."


def markdown(data: dict[str, Any], findings: str = "") -> str:
    records = data["runs"]
    clean = data["clean"]
    clean_line = "; ".join(
        f"seed {s}: held-out {c['held_out']:.3f}, {c['usage']['calls']} calls, {c['seconds']:.0f} s"
        for s, c in clean.items()
    )
    lines = [
        "# Chaos benchmark",
        "",
        f"{data['date']}; {data['machine']}; seeds {data['seeds']}, synthetic {data['samples']} samples, "
        f"{data['jobs']} runs at a time; {data['minutes']:.1f} min in all.",
        "",
        "Rerun: `python -m benchmarks.chaos.faults` (writes this file and `chaos.json`; the scenarios "
        "are in its "
        "docstring). Every run is `promptevolver optimize` in a child process against a local "
        "OpenAI-compatible server answering as the simulated judge, whose ledger of every request is the "
        "truth the run's reports are checked against.",
        "",
        f"Clean runs: {clean_line}.",
        "",
        *table(records),
        "",
        "Columns: *misreported* sums |reported − server| over the runs that wrote a result: "
        "`usage.failures` (HTTP) vs calls that gave up (`max_attempts` HTTP faults in a row, or faults "
        "still open when a stopping run ended); `usage.failures_by_cause.parse` vs judge evaluations "
        "that failed on parse (the answer and its re-ask both unusable); `usage.retries` vs the "
        "other HTTP faults, answered calls (net of answers a killed client never read), `usage.cost_usd` "
        "vs the cost of every answer sent, those never read included (share of it in brackets). "
        "*Repeated*: requests for a body the "
        "server had answered in an earlier session; *in flight*: its answer was sent under 0.5 s before "
        "the kill (the client never read it). *Held-out*: the chosen instructions re-scored on the "
        "validation split by `promptevolver evaluate` against a fault-free server; the clean runs' "
        "spread is the noise (binomial SE on 60 samples ≈ 0.05).",
        "",
        run_dir_line(records),
        "",
        "## Budgets",
        "",
        *budget_table(records),
        "",
    ]
    text = "\n".join(lines)
    return text + ("\n" + findings.strip() + "\n" if findings.strip() else "")


def write(data: dict[str, Any], md_path: Path) -> str:
    """Write ``chaos.md`` from ``data``, keeping the Findings section of the file there."""
    findings = ""
    if md_path.is_file():
        old = md_path.read_text()
        if FINDINGS in old:
            findings = old[old.index(FINDINGS) :]
    text = markdown(data, findings)
    md_path.write_text(text)
    return text


if __name__ == "__main__":
    source = Path(sys.argv[1])
    print(write(json.loads(source.read_text()), source.with_suffix(".md")))
