"""Seeded chaos benchmark: faults, a dying server, kills and budgets, through real HTTP and real processes.

Every run is ``promptevolver optimize`` in a child process against a :class:`ChaosServer`
(``benchmarks/chaos/server.py``) in this process: the simulated judge over HTTP, with seeded faults
and a server-side ledger of every request, which is the truth the run's own reports are checked
against. Scenarios (each over ``--seeds``):

1. ``faults``: 10 % and 30 % of requests fail (429 with ``Retry-After: 0``, 500, an HTML body,
   or a cut-off JSON answer), drawn from a hash of (body, times seen) so retries get fresh draws;
   with the default ``llm.max_attempts: 4`` and, to let failures through the retries, with 2.
   Checked: the chosen candidate's held-out (validation) score vs the clean run's (the chosen
   instructions re-scored on the validation split by ``promptevolver evaluate`` against a clean
   server); ``usage.failures``, ``usage.retries`` and the answered calls vs the ledger.
2. ``server_down``: at a seeded point the server starts answering 503 to everything, or closes its
   port; the run must stop with one line and exit 1 (timed from the moment the server died), keep
   its checkpoint, and, once the server is back, ``--resume`` must finish without asking again
   anything answered before, with the result of an uninterrupted run.
3. ``kills``: SIGKILL at seeded points (``random``: at a random time; ``quiet``: the server holds
   new requests and the kill comes once every answer sent has had 0.5 s to arrive), one SIGINT per
   seed, and a ``late`` SIGKILL as soon as result.json exists (the report being written), each
   followed by ``--resume``, until the run finishes. Checked: every run-directory file parses
   after each kill, calls answered before a kill and asked again after it, result.json vs the
   uninterrupted run's (timing fields aside).
4. ``budgets``: ``max_calls``, ``max_tokens`` and ``max_cost_usd`` (with ``llm.prices``) at several
   levels under 10 % and 30 % faults, and at 60 % of a clean run's spend across four quiet kills
   and resumes; overshoot = spent - limit (spent as the server counted it), compared with the
   largest single call.

The fault draws and the points where the server dies are seeded exactly; kills are placed by
seeded answer counts and delays, so where they land in the client's work depends a little on the
machine's speed.

Usage::

    python -m benchmarks.chaos.faults [--seeds 0 1 2] [--samples 200] [--jobs 4] [--out benchmarks/results]

writes ``chaos.json`` (every run) and ``chaos.md`` (the summary) into ``--out``. About seven
minutes on two cores with four runs at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from benchmarks.chaos import summary as chaos_summary  # noqa: E402
from benchmarks.chaos.server import HTTP_FAULTS, ChaosServer, Entry  # noqa: E402
from promptevolver.simulation.synthetic import SyntheticSpec, generate  # noqa: E402

CLI = [sys.executable, "-m", "promptevolver.cli"]
#: Price used for the cost budgets, USD per 1M tokens.
PRICE = {"prompt": 1.0, "completion": 4.0}
#: Result fields that measure time, left out when two results are compared.
TIMING_FIELDS = ("duration_s",)


# -- running the CLI -----------------------------------------------------------------------------------


def config_text(
    port: int, seed: int, *, samples: int, attempts: int = 4, budget: dict[str, Any] | None = None
) -> str:
    """A run config against the server on ``port`` (the synthetic_200 setup, no response cache)."""
    llm: dict[str, Any] = {
        "provider": "openai",
        "model": "sim",
        "base_url": f"http://127.0.0.1:{port}/v1",
        "cache": None,
        "timeout_s": 10,
        "max_attempts": attempts,
        "prices": {"sim": PRICE},
    }
    config = {
        "dataset": {"synthetic": {"n_samples": samples, "random_seed": 0}},
        "metric": {
            "type": "aspect_critic",
            "name": "answer_correctness",
            "definition": "Given the user_input, reference and response. Is the response correct "
            "compared with the reference",
        },
        "llm": llm,
        "loss": {"type": "binary", "metric": "accuracy"},
        "optimizer": {"population_size": 6, "generations": 4},
        "random_seed": seed,
    }
    if budget:
        config["budget"] = budget
    return yaml.safe_dump(config, sort_keys=False)


@dataclass
class Session:
    """One CLI process: exit code, stderr lines, wall seconds, how it ended."""

    rc: int
    stderr: list[str]
    seconds: float
    ended_by: str = "itself"
    stopped_after_s: float | None = None  # from the trigger (server died) to the exit

    def stopped_cleanly(self) -> bool:
        """Exit 1 with one error line (``promptevolver: error: ...``) and no traceback; the
        plain progress lines a run prints when not on a terminal are not errors."""
        said = [line for line in self.stderr if line.startswith("promptevolver:")]
        return (
            self.rc == 1
            and len(said) == 1
            and said[0].startswith("promptevolver: error:")
            and not any("Traceback" in line for line in self.stderr)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rc": self.rc,
            "stderr": self.stderr[-3:],
            "stderr_lines": len(self.stderr),
            "seconds": round(self.seconds, 2),
            "ended_by": self.ended_by,
            "stopped_after_s": None if self.stopped_after_s is None else round(self.stopped_after_s, 2),
        }


#: Watches a running session; returns how it ended it (None: not yet), given the process.
Trigger = Callable[[subprocess.Popen[str], float], str | None]


def run_cli(
    server: ChaosServer, args: list[str], trigger: Trigger | None = None, timeout_s: float = 300
) -> Session:
    """Run ``promptevolver ARGS`` as the server's next session; ``trigger`` is polled every 5 ms."""
    server.session += 1
    env = {**os.environ, "OPENAI_API_KEY": "sk-chaos-bench"}
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([*CLI, *args], stdout=subprocess.DEVNULL, stderr=err, text=True, env=env)
        ended_by, fired_at = "itself", None
        while proc.poll() is None:
            if trigger is not None and fired_at is None:
                how = trigger(proc, time.monotonic() - start)
                if how is not None:
                    ended_by, fired_at = how, time.monotonic()
            if time.monotonic() - start > timeout_s:
                proc.kill()
                ended_by = "timeout"
            time.sleep(0.005)
        end = time.monotonic()
        err.seek(0)
        lines = [line for line in err.read().splitlines() if line.strip()]
    stopped = None if fired_at is None else end - fired_at
    return Session(proc.returncode, lines, end - start, ended_by, stopped)


def optimize(
    server: ChaosServer, work: Path, name: str, seed: int, *, samples: int, **config: Any
) -> tuple[Path, Path]:
    """Write a config for ``server`` into ``work/name.yaml``; return it and its run directory."""
    cfg = work / f"{name}.yaml"
    cfg.write_text(config_text(server.port, seed, samples=samples, **config))
    return cfg, work / name


# -- reading the ledger ------------------------------------------------------------------------------


def answered(entries: Iterable[Entry]) -> Counter[str]:
    """Body key → answers sent."""
    return Counter(e.key for e in entries if e.answered)


def given_up(entries: list[Entry], attempts: int) -> int:
    """Calls the client must have given up on: ``attempts`` HTTP faults in a row for one body, or
    a run of faults still open when its session ended (the run stopped on a dead server and its
    calls in backoff gave up early) — per session; a body's faults are only broken by an answer."""
    runs: Counter[tuple[int, str]] = Counter()
    failed = 0
    for e in entries:
        slot = (e.session, e.key)
        if e.outcome in HTTP_FAULTS:
            runs[slot] += 1
            if runs[slot] == attempts:
                failed, runs[slot] = failed + 1, 0
        else:
            runs[slot] = 0
    return failed + sum(1 for n in runs.values() if n)


def truth(entries: list[Entry], attempts: int) -> dict[str, Any]:
    """What the server did: requests, answers, faults by kind, calls given up, tokens."""
    outcomes = Counter(e.outcome for e in entries)
    http_faults = sum(n for o, n in outcomes.items() if o in HTTP_FAULTS)
    return {
        "requests": len(entries),
        "answered": sum(1 for e in entries if e.answered),
        "outcomes": dict(sorted(outcomes.items())),
        "http_faults": http_faults,
        "given_up": given_up(entries, attempts),
        "judge_parse_failures": sum(1 for e in entries if e.kind == "reask" and e.outcome == "badtext"),
        "meta_unusable": sum(1 for e in entries if e.kind == "meta" and e.outcome == "badtext"),
        "tokens": sum(e.tokens for e in entries if e.answered),
        "cost_usd": sum(cost_usd(e) for e in entries if e.answered),
        "largest_call_tokens": max((e.tokens for e in entries if e.answered), default=0),
    }


def cost_usd(entry: Entry) -> float:
    """What an answered request cost at :data:`PRICE`, in USD."""
    return (entry.prompt_tokens * PRICE["prompt"] + entry.completion_tokens * PRICE["completion"]) / 1e6


def excess_answers(entries: list[Entry], clean: Counter[str]) -> int:
    """Answers sent beyond what the uninterrupted run was sent, body by body."""
    return sum(max(0, n - clean[k]) for k, n in answered(entries).items())


def repeated_after(entries: list[Entry], session: int) -> list[Entry]:
    """Requests of later sessions for bodies answered in ``session`` or before."""
    before = {e.key for e in entries if e.answered and e.session <= session}
    return [e for e in entries if e.session > session and e.key in before]


# -- reading results -----------------------------------------------------------------------------------


def read_result(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "result.json"
    return json.loads(path.read_text()) if path.is_file() else None


def without_timing(value: Any) -> Any:
    """``value`` with the timing fields removed (recursively)."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def result_diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Fields on which two results differ, timing aside: ``usage.cost_usd``, ``history[].waves``..."""
    a, b = without_timing(a), without_timing(b)
    out: set[str] = set()
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            out.update(f"{key}.{k}" for k in set(x) | set(y) if x.get(k) != y.get(k))
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for p, q in zip(x, y):
                if isinstance(p, dict) and isinstance(q, dict):
                    out.update(f"{key}[].{k}" for k in set(p) | set(q) if p.get(k) != q.get(k))
                elif p != q:
                    out.add(f"{key}[]")
        else:
            out.add(key)
    return sorted(out)


def run_dir_problems(run_dir: Path) -> list[str]:
    """Files of a run directory that do not parse (a journal's last line may be torn by a kill)."""
    problems = []
    for path in sorted(run_dir.glob("*")):
        if path.is_dir():
            continue
        try:
            text = path.read_text()
            if path.suffix == ".json":
                json.loads(text)
            elif path.suffix == ".yaml":
                yaml.safe_load(text)
            elif path.suffix == ".jsonl":
                lines = text.splitlines()
                for line in lines[:-1] if not text.endswith("\n") else lines:
                    json.loads(line)
            elif path.suffix in (".tmp", "") or path.name.endswith(".tmp"):
                problems.append(f"{path.name}: temporary file left behind")
        except (ValueError, yaml.YAMLError) as exc:
            problems.append(f"{path.name}: {type(exc).__name__}: {exc}"[:200])
    return problems


def usage_figures(result: dict[str, Any]) -> dict[str, Any]:
    u = result["usage"]
    return {
        "calls": sum(u["llm_calls"].values()),
        "retries": u["retries"],
        "failures": u["failures"],
        "parse_failures": (u.get("failures_by_cause") or {}).get("parse", 0),
        "tokens": u["prompt_tokens"] + u["completion_tokens"],
        "cost_usd": u["cost_usd"],
        "lineage_failures": sum(c.get("failures") or 0 for c in result.get("lineage", [])),
        "rejected_offspring": sum((result.get("operator_stats") or {}).get("rejected", {}).values()),
    }


def misreported(result: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    """What result.json's usage says minus what the server did (0 everywhere: reported right)."""
    usage = usage_figures(result)
    return {
        "failures_misreported": usage["failures"] - usage["parse_failures"] - t["given_up"],
        "parse_failures_misreported": usage["parse_failures"] - t["judge_parse_failures"],
        "retries_misreported": usage["retries"] - (t["http_faults"] - t["given_up"]),
        "calls_misreported": usage["calls"] - t["answered"],
        "tokens_misreported": usage["tokens"] - t["tokens"],
        "cost_misreported_usd": round(usage["cost_usd"] - t["cost_usd"], 9),
    }


# -- the benchmark ---------------------------------------------------------------------------------


@dataclass
class Clean:
    """The uninterrupted, fault-free run of one seed."""

    result: dict[str, Any]
    answered: Counter[str]
    seconds: float
    requests: int


@dataclass
class Bench:
    work: Path
    samples: int
    seeds: list[int]
    clean: dict[int, Clean] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.dataset = generate(SyntheticSpec(n_samples=self.samples, random_seed=0))

    def server(self, *, rate: float = 0.0, seed: int = 0) -> ChaosServer:
        return ChaosServer(self.dataset, rate=rate, seed=seed).start()

    def record(self, scenario: str, **fields: Any) -> dict[str, Any]:
        row = {"scenario": scenario, **fields}
        self.records.append(row)
        brief = {k: v for k, v in row.items() if not isinstance(v, (dict, list))}
        print(json.dumps(brief), flush=True)
        return row

    # -- clean runs and held-out re-scoring ------------------------------------------------------------

    def clean_run(self, seed: int) -> Clean:
        if seed not in self.clean:
            server = self.server()
            try:
                cfg, out = optimize(server, self.work, f"clean-{seed}", seed, samples=self.samples)
                session = run_cli(server, ["optimize", str(cfg), "-o", str(out), "--quiet"])
                result = read_result(out)
                if session.rc != 0 or result is None:
                    raise RuntimeError(f"clean run of seed {seed} failed: {session.stderr}")
                self.clean[seed] = Clean(result, answered(server.ledger), session.seconds, len(server.ledger))
            finally:
                server.stop()
        return self.clean[seed]

    def held_out(self, run_dir: Path, seed: int) -> float:
        """The validation accuracy of ``run_dir``'s chosen instructions, scored by ``promptevolver
        evaluate`` against a fault-free server."""
        server = self.server()
        try:
            cfg, _ = optimize(server, self.work, f"evaluate-{run_dir.name}", seed, samples=self.samples)
            args = ["evaluate", str(cfg), "-i", str(run_dir / "best_instructions.json")]
            env = {**os.environ, "OPENAI_API_KEY": "sk-chaos-bench"}
            out = subprocess.run(
                [*CLI, *args, "--split", "validation", "--run", str(run_dir), "--json"],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
        finally:
            server.stop()
        return float(json.loads(out.stdout)["accuracy"])

    def chosen_held_out(self, run_dir: Path, seed: int) -> float:
        """Held-out score of the chosen instructions: the clean run's when they are the same."""
        clean = self.clean_run(seed).result
        result = read_result(run_dir)
        assert result is not None
        if result["best_instructions"] == clean["best_instructions"]:
            return float(clean["scores"]["best"]["validation"])
        return self.held_out(run_dir, seed)


def compared_with_clean(bench: Bench, run_dir: Path, seed: int) -> dict[str, Any]:
    """How ``run_dir``'s result differs from the clean run of ``seed``, and its chosen held-out score."""
    clean, result = bench.clean_run(seed).result, read_result(run_dir)
    assert result is not None
    return {
        "differs_from_clean": result_diff(result, clean),
        "same_choice": result["best_instructions"] == clean["best_instructions"],
        "held_out": bench.chosen_held_out(run_dir, seed),
        "clean_held_out": clean["scores"]["best"]["validation"],
    }


# -- scenario 1: faults ----------------------------------------------------------------------------------


def faults(bench: Bench, seed: int, rate: float, attempts: int) -> dict[str, Any]:
    clean = bench.clean_run(seed)
    server = bench.server(rate=rate, seed=seed)
    try:
        cfg, out = optimize(
            server,
            bench.work,
            f"faults-{rate:g}-{attempts}-{seed}",
            seed,
            samples=bench.samples,
            attempts=attempts,
        )
        session = run_cli(server, ["optimize", str(cfg), "-o", str(out), "--quiet"])
    finally:
        server.stop()
    result, t = read_result(out), truth(server.ledger, attempts)
    row: dict[str, Any] = {
        "seed": seed,
        "rate": rate,
        "max_attempts": attempts,
        "session": session.to_dict(),
        "truth": t,
    }
    row["finished"] = session.rc == 0 and result is not None
    row["stopped_cleanly"] = session.stopped_cleanly() and result is None
    row["clean_held_out"] = clean.result["scores"]["best"]["validation"]
    if result is None:
        return bench.record("faults", **row)
    row.update(
        usage=usage_figures(result),
        reported_validation=result["scores"]["best"]["validation"],
        **compared_with_clean(bench, out, seed),
        **misreported(result, t),
    )
    return bench.record("faults", **row)


# -- scenario 2: the server dies and comes back -----------------------------------------------------


def server_down(bench: Bench, seed: int, mode: str) -> dict[str, Any]:
    """``mode``: ``503`` (every request answered 503) or ``closed`` (the port closes)."""
    clean = bench.clean_run(seed)
    at = int(np.random.default_rng([seed, 2]).uniform(0.2, 0.8) * clean.requests)
    server, died = bench.server(), [0.0]

    def die(proc: subprocess.Popen[str], elapsed: float) -> str | None:
        if len(server.ledger) < at:
            return None
        died[0] = time.monotonic()
        if mode == "closed":
            server.close()
        else:
            server.down = True
        return f"server {mode}"

    try:
        cfg, out = optimize(server, bench.work, f"down-{mode}-{seed}", seed, samples=bench.samples)
        first = run_cli(server, ["optimize", str(cfg), "-o", str(out)], die)
        after = [e.arrived_at - died[0] for e in server.ledger if e.session == 1 and e.arrived_at >= died[0]]
        files_after_stop = run_dir_problems(out)
        checkpoint = (out / "checkpoint.json").is_file()
        if mode == "closed":
            server.reopen()
        server.down = False
        second = run_cli(server, ["optimize", "--resume", str(out), "--quiet"])
    finally:
        server.stop()
    result = read_result(out)
    row: dict[str, Any] = {
        "seed": seed,
        "mode": mode,
        "died_at_request": at,
        "first": first.to_dict(),
        "second": second.to_dict(),
        "stopped_cleanly": first.stopped_cleanly(),
        "stop_seconds": first.stopped_after_s,
        "requests_after_death": len(after),  # the server saw them (none reach a closed port)
        "last_request_after_death_s": round(max(after), 2) if after else None,
        "checkpoint_kept": checkpoint,
        "files_unparsable": files_after_stop,
        "finished": second.rc == 0 and result is not None,
        "repeated": len(repeated_after(server.ledger, 1)),
        "excess_answers": excess_answers(server.ledger, clean.answered),
        "truth": truth(server.ledger, 4),
    }
    if result is not None:
        row.update(compared_with_clean(bench, out, seed), **misreported(result, row["truth"]))
        if mode == "closed":  # attempts refused at the closed port never reach the server: not measured
            row["failures_misreported"] = row["retries_misreported"] = None
    return bench.record("server_down", **row)


# -- scenario 3: kills at random points --------------------------------------------------------------

#: How long every answer sent has to reach the client before a ``quiet`` kill, in seconds.
QUIET_S = 0.5


def interrupter(
    server: ChaosServer, how: str, answers: int, kills: dict[str, float], delay_s: float = 0.0
) -> Trigger:
    """A trigger interrupting a session ``how`` once the server has sent ``answers`` answers in all
    (this session and the earlier ones): ``random`` (SIGKILL) and ``sigint`` (SIGINT) ``delay_s``
    seconds later, wherever the client is then; ``quiet`` (SIGKILL) once the server has held every
    new request for :data:`QUIET_S` seconds after its last answer, so every answer sent had time to
    arrive. The kill time goes into ``kills`` under the session number."""
    session, reached = server.session + 1, [0.0]

    def fire(proc: subprocess.Popen[str], elapsed: float) -> str | None:
        if not reached[0]:
            if sum(1 for e in server.ledger if e.answered) < answers:
                return None
            reached[0] = time.monotonic()
        if how in ("random", "sigint"):
            if time.monotonic() - reached[0] < delay_s:
                return None
            kills[str(session)] = time.monotonic()
            proc.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
            return how
        server.freeze()
        while time.monotonic() - server.last_answer_at() < QUIET_S:
            time.sleep(0.01)
        kills[str(session)] = time.monotonic()
        proc.kill()
        proc.wait()
        server.thaw()
        return how

    return fire


def late_kill(server: ChaosServer, result: Path, kills: dict[str, float]) -> Trigger:
    """A trigger sending SIGKILL as soon as ``result`` exists: while the exports and the report are
    written, after the last checkpoint."""
    session = server.session + 1

    def fire(proc: subprocess.Popen[str], elapsed: float) -> str | None:
        if not result.is_file():
            return None
        kills[str(session)] = time.monotonic()
        proc.kill()
        return "late"

    return fire


def classify_repeats(entries: list[Entry], kills: dict[str, float]) -> dict[str, int]:
    """Requests for bodies answered in an earlier session, by how long before that session's end
    the answer was sent: ``in_flight`` (under :data:`QUIET_S`: the client may never have read it)
    or ``answered`` (it had time to arrive: a true repeat)."""
    last_answer: dict[str, Entry] = {}
    counts: Counter[str] = Counter()
    for e in entries:
        prior = last_answer.get(e.key)
        if prior is not None and prior.session < e.session:
            end = kills.get(str(prior.session))
            gap = None if end is None or prior.sent_at is None else end - prior.sent_at
            counts["in_flight" if gap is not None and gap < QUIET_S else "answered"] += 1
        if e.answered:
            last_answer[e.key] = e
    return {"answered": counts["answered"], "in_flight": counts["in_flight"]}


def kills(bench: Bench, seed: int) -> dict[str, Any]:
    clean = bench.clean_run(seed)
    rng = np.random.default_rng([seed, 3])
    plan = [str(h) for h in rng.permutation(["random", "random", "quiet", "sigint"])]
    points = np.sort(rng.uniform(0.05, 0.95, size=len(plan))) * clean.requests
    server = bench.server()
    sessions: list[dict[str, Any]] = []
    problems: list[str] = []
    killed_at: dict[str, float] = {}
    try:
        cfg, out = optimize(server, bench.work, f"kills-{seed}", seed, samples=bench.samples)
        args = ["optimize", str(cfg), "-o", str(out), "--quiet"]
        for i, how in enumerate([*plan, "late", "none", "none"]):
            trigger = None
            if how == "late":
                trigger = late_kill(server, out / "result.json", killed_at)
            elif how != "none":
                delay = float(rng.uniform(0.0, 0.3))
                trigger = interrupter(server, how, int(points[i]), killed_at, delay)
            session = run_cli(server, args, trigger)
            sessions.append(
                {"interruption": how, "result_written": (out / "result.json").is_file(), **session.to_dict()}
            )
            problems += [f"after {how}: {p}" for p in run_dir_problems(out)]
            if session.rc == 0:
                break
            args = ["optimize", "--resume", str(out), "--quiet"]
    finally:
        server.stop()
    result = read_result(out)
    sigint = [s for s in sessions if s["ended_by"] == "sigint"]
    row: dict[str, Any] = {
        "seed": seed,
        "sessions": sessions,
        "interruptions": sum(1 for s in sessions if s["ended_by"] != "itself"),
        "sigint_exit_130": all(s["rc"] == 130 for s in sigint) if sigint else None,
        "files_unparsable": problems,
        "finished": result is not None and sessions[-1]["rc"] == 0,
        "repeated": classify_repeats(server.ledger, killed_at),
        "excess_answers": excess_answers(server.ledger, clean.answered),
        "truth": truth(server.ledger, 4),
    }
    if result is not None:
        row.update(compared_with_clean(bench, out, seed), **misreported(result, row["truth"]))
    return bench.record("kills", **row)


# -- scenario 4: budgets under faults --------------------------------------------------------------


def budget_levels(clean: Clean) -> list[tuple[str, float]]:
    """(bound, limit): a tiny one of each, then about a third and two thirds of a clean run's spend."""
    u = usage_figures(clean.result)
    levels: list[tuple[str, float]] = [("max_calls", 50), ("max_tokens", 100), ("max_cost_usd", 1e-6)]
    for share in (0.35, 0.7):
        levels += [
            ("max_calls", int(share * u["calls"])),
            ("max_tokens", int(share * u["tokens"])),
            ("max_cost_usd", round(share * u["cost_usd"], 6)),
        ]
    return levels


def budget_figures(
    ledger: list[Entry], bound: str, limit: float, result: dict[str, Any] | None
) -> dict[str, Any]:
    """Spent (as the server counted it), overshoot over ``limit``, in calls' worth of the largest
    call, and what the result reported."""
    t = truth(ledger, 4)
    spent = {"max_calls": t["answered"], "max_tokens": t["tokens"], "max_cost_usd": t["cost_usd"]}[bound]
    largest = {
        "max_calls": 1,
        "max_tokens": t["largest_call_tokens"],
        "max_cost_usd": max((cost_usd(e) for e in ledger if e.answered), default=0.0),
    }[bound]
    over = spent - limit
    row: dict[str, Any] = {
        "bound": bound,
        "limit": limit,
        "spent": spent,
        "largest_call": largest,
        "overshoot": over,
        "overshoot_calls": over / largest if largest else 0.0,
        "truth": t,
    }
    if result is not None:
        usage = usage_figures(result)
        row["reported_spent"] = {"max_calls": usage["calls"], "max_tokens": usage["tokens"]}.get(
            bound, usage["cost_usd"]
        )
        row["stop_reason"] = result["stop_reason"]
    return row


def budget(bench: Bench, seed: int, rate: float, bound: str, limit: float) -> dict[str, Any]:
    server = bench.server(rate=rate, seed=seed)
    try:
        name = f"budget-{bound}-{limit:g}-{rate:g}-{seed}"
        cfg, out = optimize(server, bench.work, name, seed, samples=bench.samples, budget={bound: limit})
        session = run_cli(server, ["optimize", str(cfg), "-o", str(out), "--quiet"])
    finally:
        server.stop()
    result = read_result(out)
    row = budget_figures(server.ledger, bound, limit, result)
    row.update(
        seed=seed,
        rate=rate,
        session=session.to_dict(),
        finished=session.rc == 0 and result is not None,
        stopped_cleanly=session.stopped_cleanly(),
        stop_reason=None if result is None else result["stop_reason"],
    )
    return bench.record("budget", **row)


#: Where the budget-across-resumes runs are killed: shares of a clean run's requests.
RESUME_KILLS = (0.2, 0.35, 0.5, 0.65)


def budget_resume(bench: Bench, seed: int, bound: str) -> dict[str, Any]:
    """A budget of 60 % of a clean run's spend; quiet kills at :data:`RESUME_KILLS` of its requests,
    each followed by ``--resume``: the bound must hold across all the sessions."""
    clean = bench.clean_run(seed)
    u = usage_figures(clean.result)
    limit = {"max_calls": int(0.6 * u["calls"]), "max_tokens": int(0.6 * u["tokens"])}.get(
        bound, round(0.6 * u["cost_usd"], 6)
    )
    server, killed_at = bench.server(), dict[str, float]()
    sessions: list[Session] = []
    try:
        name = f"budget-resume-{bound}-{seed}"
        cfg, out = optimize(server, bench.work, name, seed, samples=bench.samples, budget={bound: limit})
        args = ["optimize", str(cfg), "-o", str(out), "--quiet"]
        for share in (*RESUME_KILLS, None):
            kill = (
                None
                if share is None
                else interrupter(server, "quiet", int(share * clean.requests), killed_at)
            )
            sessions.append(run_cli(server, args, kill))
            if sessions[-1].rc == 0:
                break
            args = ["optimize", "--resume", str(out), "--quiet"]
    finally:
        server.stop()
    return bench.record(
        "budget_resume",
        **budget_figures(server.ledger, bound, limit, read_result(out)),
        seed=seed,
        sessions=[s.to_dict() for s in sessions],
        interruptions=sum(s.ended_by != "itself" for s in sessions),
        finished=sessions[-1].rc == 0,
    )


# -- main ------------------------------------------------------------------------------------------


def jobs(bench: Bench, only: set[str]) -> list[Callable[[], dict[str, Any]]]:
    """Every run of the benchmark, the slowest first."""
    todo: list[Callable[[], dict[str, Any]]] = []
    seeds, first = bench.seeds, bench.seeds[0]
    if "faults" in only:
        for attempts, rate in ((4, 0.3), (4, 0.1), (2, 0.3), (2, 0.1)):
            todo += [partial(faults, bench, s, rate, attempts) for s in seeds]
    if "down" in only:
        todo += [partial(server_down, bench, s, mode) for s in seeds for mode in ("503", "closed")]
    if "kills" in only:
        todo += [partial(kills, bench, s) for s in seeds]
    if "budgets" in only:
        levels = budget_levels(bench.clean_run(first))
        todo += [partial(budget, bench, first, rate, b, v) for rate in (0.3, 0.1) for b, v in levels]
        todo += [partial(budget_resume, bench, first, b) for b in ("max_calls", "max_tokens", "max_cost_usd")]
    return todo


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=4, help="runs at once (each its own server)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results")
    parser.add_argument("--only", nargs="+", choices=("faults", "down", "kills", "budgets"), default=None)
    args = parser.parse_args(argv)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # Started in the background (`cmd &`): SIGINT is ignored here and in every child started
        # from here, so the SIGINT of the kills scenario would not reach the CLI.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        bench = Bench(Path(tmp), args.samples, args.seeds)
        list(pool.map(bench.clean_run, args.seeds))
        futures = [
            pool.submit(job) for job in jobs(bench, set(args.only or ("faults", "down", "kills", "budgets")))
        ]
        for future in futures:
            future.result()
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
        "seeds": args.seeds,
        "samples": args.samples,
        "jobs": args.jobs,
        "minutes": (time.monotonic() - start) / 60,
    }
    clean = {
        str(s): {
            "seconds": round(c.seconds, 2),
            "requests": c.requests,
            "usage": usage_figures(c.result),
            "held_out": c.result["scores"]["best"]["validation"],
        }
        for s, c in sorted(bench.clean.items())
    }
    args.out.mkdir(parents=True, exist_ok=True)
    records = sorted(bench.records, key=lambda r: json.dumps([r["scenario"], r.get("seed"), r.get("rate")]))
    (args.out / "chaos.json").write_text(
        json.dumps({**meta, "clean": clean, "runs": records}, indent=1) + "\n"
    )
    print(chaos_summary.write({**meta, "clean": clean, "runs": records}, args.out / "chaos.md"))


if __name__ == "__main__":
    main()
