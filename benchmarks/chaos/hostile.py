"""Chaos benchmark, hostile servers (issue 24): each case is ``promptevolver optimize`` in a child
process against a local OpenAI-compatible server (the simulated judge over real HTTP,
:class:`~promptevolver.testing.LocalOpenAIServer` and the chaos benchmark's
:class:`benchmarks.chaos.server.ChaosServer`) that misbehaves in one way:

* ``slow body``: five answers sent one byte a second (each read is quick; a whole body takes
  minutes), ``llm.timeout_s: 3``;
* ``endless body``: five answers whose body never ends;
* ``huge answers``: every answer's text is 20 MB (``judge_max_tokens`` 256);
* ``negative usage``: every answer reports ``prompt_tokens -500000, completion_tokens -7``;
* ``preflight faults``: a server without ``/models`` whose first chat answers are 500, 429, 503,
  and a server failing 30 % of all requests (as judgeworld's ``server.py --fail-rate 0.3``);
* ``second process``: a second ``optimize`` on the directory a first one is writing;
* ``credentials in base_url``: ``http://alice:SECRET@host/v1``;
* ``budget``: population 30 with ``budget.max_calls`` at the seed's evaluation and the final
  choice, and at what an unbounded run spends; ``max_tokens`` at 35 % of it;
* ``resume, changed judge``: ``--resume`` with a new definition, model temperature and judges.

Each row says what the run did (exit code, its last stderr line, seconds, the child's peak memory,
the run directory's size) and whether that is the handling the issue asks for.

Usage::

    python -m benchmarks.chaos.hostile [--samples 200] [--out benchmarks/results]

writes ``chaos_hostile.json`` and the section "Hostile servers" of ``chaos.md`` in ``--out``.
About three minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks.chaos.faults import config_text  # noqa: E402
from benchmarks.chaos.server import ChaosServer  # noqa: E402
from promptevolver.annotations import SingleMetricAnnotation  # noqa: E402
from promptevolver.llm import SimulatedJudgeLLM  # noqa: E402
from promptevolver.simulation.synthetic import SyntheticSpec, generate  # noqa: E402
from promptevolver.testing import Fault, LocalOpenAIServer, simulated_handler  # noqa: E402

CLI = [sys.executable, "-m", "promptevolver.cli"]
KEY = "sk-chaos-hostile-bench"
SECTION = "## Hostile servers (issue 24)"


@dataclass
class Row:
    """One case: what was done, what happened, whether that is the handling asked for."""

    case: str
    expected: str
    rc: int
    last_line: str
    seconds: float
    peak_mb: float
    run_dir_mb: float
    figures: str
    handled: bool


@dataclass
class Proc:
    rc: int
    stderr: list[str]
    seconds: float
    peak_mb: float


def run_cli(args: list[str], *, timeout_s: float = 600, env: dict[str, str] | None = None) -> Proc:
    """``promptevolver ARGS`` in a child; its exit code, stderr lines, seconds and peak RSS (MB)."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [*CLI, *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": KEY, **(env or {})},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        status, usage = _wait(proc, start, timeout_s)
        err.seek(0)
        lines = [line for line in err.read().splitlines() if line.strip()]
    return Proc(os.waitstatus_to_exitcode(status), lines, time.monotonic() - start, usage.ru_maxrss / 1024)


def _wait(proc: subprocess.Popen[str], start: float, timeout_s: float) -> tuple[int, Any]:
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if time.monotonic() - start > timeout_s:
            proc.kill()
        time.sleep(0.01)


def size_mb(directory: Path) -> float:
    return (
        sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 1e6
        if directory.exists()
        else 0.0
    )


def config(port: int, samples: int, **changes: Any) -> dict[str, Any]:
    """The chaos benchmark's config against ``port`` (a smaller search), with ``changes``
    (``section.key``: value) applied."""
    data = yaml.safe_load(config_text(port, 0, samples=samples))
    data["optimizer"] = {"population_size": 4, "generations": 2}
    for dotted, value in changes.items():
        section, key = dotted.split(".")
        data.setdefault(section, {})[key] = value
    return data


def optimize(work: Path, name: str, data: dict[str, Any], *extra: str, **kw: Any) -> tuple[Proc, Path]:
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = work / name
    return run_cli(["optimize", str(path), "-o", str(out), *extra], **kw), out


def result(out: Path) -> dict[str, Any] | None:
    path = out / "result.json"
    return json.loads(path.read_text()) if path.is_file() else None


def row(case: str, expected: str, proc: Proc, out: Path | None, figures: str, handled: bool) -> Row:
    said = [line for line in proc.stderr if line.startswith("promptevolver:")]
    last = (said or proc.stderr or [""])[-1]
    return Row(
        case,
        expected,
        proc.rc,
        re.sub(r"/tmp/\S+", "DIR", last)[:160],
        round(proc.seconds, 1),
        round(proc.peak_mb),
        round(size_mb(out), 2) if out else 0.0,
        figures,
        handled,
    )


def one_error_line(proc: Proc) -> bool:
    said = [line for line in proc.stderr if line.startswith("promptevolver:")]
    return (
        proc.rc == 1
        and len(said) == 1
        and said[0].startswith("promptevolver: error:")
        and not any("Traceback" in line for line in proc.stderr)
    )


# -- servers -----------------------------------------------------------------------------------------


class HugeServer(LocalOpenAIServer):
    """Every answer's text is ``megabytes`` MB."""

    def __init__(self, handler: Any, megabytes: int) -> None:
        super().__init__(handler, models=["sim"])
        self.text = "x" * (megabytes * 1_000_000)

    def _completion(self, body: dict[str, Any], text: str | None = None) -> dict[str, Any]:
        return super()._completion(body, self.text)


class NegativeUsageServer(LocalOpenAIServer):
    """Every answer reports negative token counts."""

    def _completion(self, body: dict[str, Any], text: str | None = None) -> dict[str, Any]:
        completion = super()._completion(body, text)
        completion["usage"] = {"prompt_tokens": -500000, "completion_tokens": -7, "total_tokens": -500007}
        return completion


class NoModelList(ChaosServer):
    """The chaos server without ``GET /models``: the preflight's chat call meets the faults."""

    def __init__(self, dataset: SingleMetricAnnotation, rate: float) -> None:
        super().__init__(dataset, rate=rate, seed=1)
        self.models_endpoint = False


# -- cases ----------------------------------------------------------------------------------------------

Case = Callable[[Path, SingleMetricAnnotation, int], list[Row]]


def slow_and_endless(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    rows = []
    for name, fault, expected in (
        (
            "slow body (1 byte/s) x5",
            Fault.slow_body(1.0),
            "finishes; each slow answer a timeout at 3 s, retried",
        ),
        ("endless body x5", Fault.endless_body(), "finishes; each endless answer cut off as too long"),
    ):
        with LocalOpenAIServer(
            simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42)), models=["sim"]
        ) as srv:
            srv.inject(*[fault] * 5)
            proc, out = optimize(
                work, name.split()[0], config(srv.port, samples, **{"llm.timeout_s": 3}), timeout_s=300
            )
        res = result(out)
        usage = (res or {}).get("usage", {})
        causes = usage.get("failures_by_cause", "n/a")
        figures = f"retries {usage.get('retries', 'n/a')}, failures by cause {causes}"
        rows.append(row(name, expected, proc, out, figures, proc.rc == 0 and proc.seconds < 120))
    return rows


def huge(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))
    with HugeServer(handler, megabytes=20) as srv:
        proc, out = optimize(work, "huge", config(srv.port, samples), timeout_s=300)
    ok = one_error_line(proc) and "too long" in proc.stderr[-1] and proc.peak_mb < 1000 and size_mb(out) < 5
    return [
        row(
            "huge answers (20 MB each, 256 tokens asked)",
            "stops with one line (answers too long), memory and files small",
            proc,
            out,
            "the seed's evaluations all fail as too long",
            ok,
        )
    ]


def negative_usage(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))
    with NegativeUsageServer(handler, models=["sim"]) as srv:
        proc, out = optimize(work, "negative", config(srv.port, samples, **{"budget.max_tokens": 400_000}))
    usage = (result(out) or {}).get("usage", {})
    cost, tokens = usage.get("cost_usd"), usage.get("prompt_tokens")
    ok = proc.rc == 0 and cost is not None and cost > 0 and tokens is not None and tokens > 0
    figures = f"cost_usd {cost}, prompt_tokens {tokens}, completion_tokens {usage.get('completion_tokens')}"
    return [
        row(
            "negative usage (-500000 / -7), max_tokens 400000",
            "finishes; tokens counted locally, cost > 0",
            proc,
            out,
            figures,
            ok,
        )
    ]


def preflight_faults(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    rows = []
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))
    with LocalOpenAIServer(handler, models=["sim"], models_endpoint=False) as srv:
        srv.inject(Fault.server_error(500), Fault.rate_limit(retry_after=0), Fault.server_error(503))
        proc, out = optimize(work, "preflight", config(srv.port, samples))
    rows.append(
        row(
            "preflight: 500, 429, 503 then answers",
            "starts (retried) and finishes",
            proc,
            out,
            "",
            proc.rc == 0,
        )
    )
    with NoModelList(dataset, rate=0.3) as srv:
        proc, out = optimize(work, "failrate", config(srv.port, samples))
        faults = sum(1 for e in srv.ledger if e.outcome != "ok")
    rows.append(
        row(
            "30 % of all requests fail, preflight included",
            "starts and finishes",
            proc,
            out,
            f"{faults} faults of {len(srv.ledger)} requests",
            proc.rc == 0,
        )
    )
    return rows


def second_process(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))
    # Slow answers while the second process starts (a start takes a while on a loaded machine),
    # then fast ones: the first run must still be running when the second one arrives.
    with LocalOpenAIServer(handler, models=["sim"], latency_s=2.0) as srv:
        data = config(srv.port, samples)
        path = work / "twice.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        out = work / "twice"
        env = {**os.environ, "OPENAI_API_KEY": KEY}
        first = subprocess.Popen(
            [*CLI, "optimize", str(path), "-o", str(out), "-q"], env=env, stderr=subprocess.DEVNULL
        )
        while not (out / "config.yaml").exists() and first.poll() is None:
            time.sleep(0.01)
        second = run_cli(["optimize", str(path), "-o", str(out)])
        srv.latency_s = 0.0
        first.wait()
        calls_first = len(srv.requests)
    res = result(out)
    answered = sum((res or {}).get("usage", {}).get("llm_calls", {}).values())
    ok = (
        one_error_line(second)
        and "another promptevolver process (pid" in second.stderr[-1]
        and first.returncode == 0
    )
    figures = (
        f"first exit {first.returncode}; server saw {calls_first} chat requests, "
        f"the first run reports {answered} calls"
    )
    return [
        row(
            "a second process on one --output",
            "refused naming pid, host, start; first run unharmed",
            second,
            None,
            figures,
            ok,
        )
    ]


def credentials(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))
    with LocalOpenAIServer(handler, models=["sim"]) as srv:
        data = config(srv.port, samples)
        data["llm"]["base_url"] = srv.base_url.replace("http://", "http://alice:SECRETPW@")
        proc, out = optimize(work, "userinfo", data)
        requests = len(srv.requests) + len(srv.get_requests)
    text = "\n".join(proc.stderr)
    ok = one_error_line(proc) and "SECRETPW" not in text and requests == 0
    return [
        row(
            "credentials in base_url",
            "one line, secret nowhere, 0 requests",
            proc,
            out,
            f"{requests} requests",
            ok,
        )
    ]


def budgets(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    rows = []
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))
    with LocalOpenAIServer(handler, models=["sim"]) as srv:
        base = config(srv.port, samples, **{"optimizer.population_size": 30, "optimizer.generations": 3})
        probe, _ = optimize(work, "probe", {**base, "budget": {"max_calls": 1}})
        minimum = int(re.search(r"\((\d+) in all", probe.stderr[-1]).group(1))
        free, free_out = optimize(work, "free", base)
        needed = sum(result(free_out)["usage"]["llm_calls"].values())
        tokens = result(free_out)["usage"]["prompt_tokens"] + result(free_out)["usage"]["completion_tokens"]
        for label, bound in (
            (f"max_calls {minimum} (seed + final choice)", {"max_calls": minimum}),
            (f"max_calls {needed} (what the run needs)", {"max_calls": needed}),
            (f"max_tokens {int(tokens * 0.35)} (35 %)", {"max_tokens": int(tokens * 0.35)}),
        ):
            before = len(srv.requests)
            proc, out = optimize(work, f"budget{len(rows)}", {**base, "budget": bound})
            res = result(out) or {}
            spent = len(srv.requests) - before
            calls = sum(res.get("usage", {}).get("llm_calls", {}).values()) if res else None
            limit = bound.get("max_calls")
            ok = proc.rc == 0 and res.get("stop_reason") in ("budget", "exhausted", "patience", "generations")
            ok = ok and (limit is None or spent <= limit)
            if limit == needed:
                ok = ok and spent >= 0.75 * needed
            figures = (
                f"{spent} requests (free run {needed}), result calls {calls}, stop {res.get('stop_reason')}"
            )
            rows.append(
                row(f"population 30, {label}", "result.json, within the bound", proc, out, figures, ok)
            )
    return rows


def changed_judge(work: Path, dataset: SingleMetricAnnotation, samples: int) -> list[Row]:
    handler = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))
    with LocalOpenAIServer(handler, models=["sim"]) as srv:
        data = config(srv.port, samples, **{"optimizer.generations": 1})
        first, out = optimize(work, "resumed", data, "-q")
        before = (out / "config.yaml").read_bytes()
        sets = [
            "optimizer.generations=2",
            "metric.definition=Is the answer polite?",
            "llm.temperature=0.9",
            "metric.num_judges=3",
        ]
        args = ["optimize", "--resume", str(out)]
        for item in sets:
            args += ["--set", item]
        asked = len(srv.requests)
        proc = run_cli(args)
        calls = len(srv.requests) - asked
    ok = (
        one_error_line(proc)
        and "metric.definition" in proc.stderr[-1]
        and (out / "config.yaml").read_bytes() == before
    )
    return [
        row(
            "resume with a new definition, temperature, 3 judges",
            "refused naming the keys; config.yaml kept; 0 calls",
            proc,
            out,
            f"{calls} chat requests by the resume",
            ok and calls == 0,
        )
    ]


CASES: list[Case] = [
    slow_and_endless,
    huge,
    negative_usage,
    preflight_faults,
    second_process,
    credentials,
    budgets,
    changed_judge,
]


# -- output ----------------------------------------------------------------------------------------------


def markdown(meta: dict[str, Any], rows: list[Row]) -> str:
    head = (
        f"{SECTION}\n\n{meta['date']}; {meta['cpus']} CPUs, Python {meta['python']}; synthetic "
        f"{meta['samples']} samples; {meta['minutes']:.1f} min in all. "
        "Rerun: `python -m benchmarks.chaos.hostile` "
        "(the cases are in its docstring). Each case is `promptevolver optimize` in a child process "
        "against a local server misbehaving one way; *peak* is the child's peak memory.\n\n"
        f"Handled as asked: {sum(r.handled for r in rows)} of {len(rows)}.\n\n"
        "| case | asked for | exit | last line | s | peak MB | run dir MB | figures | handled |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r.case} | {r.expected} | {r.rc} | {r.last_line.replace('|', '/')} | {r.seconds:g} | "
        f"{r.peak_mb:g} | {r.run_dir_mb:g} | {r.figures.replace('|', '/')} | "
        f"{'yes' if r.handled else '**no**'} |\n"
        for r in rows
    )
    return head + body


_ORDER = (
    "slow",
    "endless",
    "huge",
    "negative",
    "preflight",
    "30 %",
    "a second",
    "credentials",
    "population",
    "resume",
)


def _order(case: str) -> int:
    return next((i for i, start in enumerate(_ORDER) if case.startswith(start)), len(_ORDER))


def write_section(path: Path, section: str) -> None:
    """Put ``section`` into ``path`` in place of an earlier one (or at the end)."""
    text = path.read_text() if path.is_file() else ""
    start = text.find(SECTION)
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + (text[end + 1 :] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument(
        "--only", nargs="*", default=None, help="run only the cases with these function names"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the rows of --out/chaos_hostile.json of the cases not run now",
    )
    args = parser.parse_args(argv)
    dataset = generate(SyntheticSpec(n_samples=args.samples, random_seed=0))
    start = time.monotonic()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if args.only and case.__name__ not in args.only:
                continue
            work = Path(tmp) / case.__name__
            work.mkdir()
            got = case(work, dataset, args.samples)
            for r in got:
                print(
                    f"{'ok ' if r.handled else 'NO '} {r.case}: rc {r.rc}, {r.seconds} s; {r.last_line}",
                    flush=True,
                )
            rows += got
    minutes = (time.monotonic() - start) / 60
    if args.merge and (args.out / "chaos_hostile.json").is_file():
        earlier = json.loads((args.out / "chaos_hostile.json").read_text())
        ran = {r.case for r in rows}
        kept = [Row(**r) for r in earlier["rows"] if r["case"] not in ran]
        rows = sorted(kept + rows, key=lambda r: _order(r.case))
        minutes += earlier.get("minutes", 0.0)
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "samples": args.samples,
        "minutes": minutes,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "chaos_hostile.json").write_text(
        json.dumps({**meta, "rows": [asdict(r) for r in rows]}, indent=2) + "\n"
    )
    write_section(args.out / "chaos.md", markdown(meta, rows))
    print(markdown(meta, rows))


if __name__ == "__main__":
    main()
