"""Many judges in one job against separate runs, judge out of process (judgeworld), 100 ms a call.

Run from the repository root (issue 25 A's "Done when", measured with a real server)::

    python -m benchmarks.perf.many_metrics_judgeworld --judgeworld /work/shared/judgeworld \\
        [--seeds 0 1 2] [--size 200] [--gen-seeds 1 2] [--latency-ms 100]

Writes ``benchmarks/results/many_metrics_judgeworld.json`` and ``.md``. Figures, never
assertions: the machine is shared.

Two synthetic judgeworld worlds (``gen_world.py --n SIZE --seed G --metric NAME``, one per
``--gen-seeds`` value, each with its own metric name) are joined into one two-metric Ragas
annotation file. judgeworld's ``server.py`` serves both worlds (``--world`` twice) with
``--latency-ms`` per chat call, in its own process, so this process spends no CPU on the judge's
answers. For each optimizer seed, each metric is optimized by ``promptevolver optimize`` as a
separate run (a ``metric:`` config) and both together as one job (a ``metrics:`` config); every
one of those three runs gets a **fresh server** (judgeworld's noise depends on its call history),
the same seed and the defaults (``llm.max_concurrency`` 16, strategy auto), judge and prompt
engineer both the server (model names ``judge`` and ``engineer``).

Reported per seed: wall time of the job against the sum of the two separate runs (the CLI
process, start to exit, and the run's own ``duration_s``), judge and meta calls counted by the
server (``/stats``) per world, whether each metric's chosen instructions and validation figures
are the same both ways, each stage's waves, and the requests in flight seen by the server (from
its ``--trace``: a call's start is taken as its answer time minus the latency).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.judgeworld.jw import Server, jw_env, launch
from promptevolver.llm._concurrency import waves

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
#: The two metrics' names in the joined annotation file (one per generated world).
NAMES = ("correctness_a", "correctness_b")


def make_worlds(
    judgeworld: Path, work: Path, size: int, gen_seeds: list[int]
) -> tuple[list[Path], Path, dict[str, str]]:
    """Generate one world per generator seed (each with its own metric name) and join them into
    one annotation file; returns the world files, the joined file and name → default definition."""
    worlds_dir = work / "worlds"
    worlds_dir.mkdir(parents=True, exist_ok=True)
    paths, joined, definitions = [], {}, {}
    for name, gen_seed in zip(NAMES, gen_seeds, strict=True):
        path = worlds_dir / f"{name}_w{size}s{gen_seed}.json"
        if not path.exists():
            cmd = [sys.executable, str(judgeworld / "gen_world.py"), "--n", str(size)]
            cmd += ["--seed", str(gen_seed), "--metric", name, "--out", str(path)]
            subprocess.run(cmd, check=True, env=jw_env(0.5), capture_output=True, text=True)
        data = json.loads(path.read_text(encoding="utf-8"))
        lexicon = json.loads(path.with_name(path.stem + ".lexicon.json").read_text(encoding="utf-8"))
        joined[name] = data[name]
        definitions[name] = lexicon["default_definition"]
        paths.append(path)
    dataset = work / "two_metrics.json"
    dataset.write_text(json.dumps(joined), encoding="utf-8")
    return paths, dataset, definitions


def start_server(
    judgeworld: Path, worlds: list[Path], run_dir: Path, latency_ms: float, keep_alive: bool = False
) -> Server:
    """A fresh judgeworld server serving every world in ``worlds``, tracing each call
    (``keep_alive``: its ``--keep-alive``, connections kept open as real providers keep them)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    port_file = run_dir / "server.port"
    port_file.unlink(missing_ok=True)
    cmd = [sys.executable, str(judgeworld / "server.py")]
    for w in worlds:
        cmd += ["--world", str(w)]
    cmd += ["--port", "0", "--port-file", str(port_file), "--latency-ms", str(latency_ms)]
    cmd += ["--stats-out", str(run_dir / "server-stats.json"), "--trace", str(run_dir / "trace.jsonl")]
    cmd += ["--keep-alive"] if keep_alive else []
    return launch(cmd, port_file, run_dir / "server.log", jw_env(0.5))


def write_configs(work: Path, dataset: Path, definitions: dict[str, str], base_url: str) -> dict[str, Path]:
    """One config per metric (``metric:``) and the job's (``metrics:``), keyed by name and ``job``
    (JSON is YAML). Only the server address differs between servers, so it is written per run."""
    llm = {"provider": "openai", "model": "judge", "base_url": base_url, "api_key_env": "OPENAI_API_KEY"}
    llm["cache"] = None
    common = {
        "dataset": str(dataset),
        "llm": llm,
        "reflection_llm": {**llm, "model": "engineer"},
        "loss": {"type": "binary", "metric": "accuracy"},
    }
    specs = {n: {"type": "aspect_critic", "definition": d} for n, d in definitions.items()}
    configs = {n: {**common, "metric_name": n, "metric": {**s, "name": n}} for n, s in specs.items()}
    configs["job"] = {**common, "metrics": specs}
    paths = {}
    for key, config in configs.items():
        path = work / f"{key}.yaml"
        path.write_text(json.dumps(config, indent=2), encoding="utf-8")
        paths[key] = path
    return paths


def run_cli(
    python: str, src: Path, config: Path, out: Path, seed: int
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """``promptevolver optimize`` in its own process: wall seconds, its CPU seconds, the process."""
    cmd = [python, "-m", "promptevolver.cli", "optimize", str(config), "--output", str(out)]
    cmd += ["--seed", str(seed), "-q", "--force"]
    env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_API_KEY": "dummy"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def import_cpu(python: str, src: Path) -> float:
    """CPU seconds of a process that only imports what ``promptevolver optimize`` imports (its
    start-up, paid once per process)."""
    modules = ("cli", "runs.many", "report", "llm.openai")
    # the report's writer through its face (lazy): the same import in trees before and after issue 22
    code = "import " + ", ".join(f"promptevolver.{m}" for m in modules)
    code += "; promptevolver.report.write_report"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run([python, "-c", code], check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_flight(trace: Path, latency_s: float) -> dict[str, Any]:
    """Requests in flight as the server saw them: each call spans [answered − latency, answered].

    ``mean_busy`` is the mean over the time at least one call was in flight; ``waves`` the longest
    chain of calls that waited for one another."""
    ends = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if "kind" in rec:
            ends.append(float(rec["t"]))
    intervals = [(t - latency_s, t) for t in ends]
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = peak = 0
    busy = area = 0.0
    last = events[0][0] if events else 0.0
    for t, step in events:
        if now > 0:
            busy += t - last
            area += now * (t - last)
        now += step
        peak = max(peak, now)
        last = t
    return {
        "calls": len(intervals),
        "peak": peak,
        "mean_busy": area / busy if busy else None,
        "busy_s": busy,
        "waves": waves(intervals),
    }


def server_calls(stats: dict[str, Any]) -> dict[str, Any]:
    c = stats["calls"]
    return {
        "judge": c["judge"],
        "meta": c["meta_instruction"] + c["meta_feedback"],
        "other": c["other"],
        "judge_by_world": stats["judge"].get("by_world", {}),
        "unmatched": stats["judge"]["unmatched_calls"],
        "weak": stats["judge"]["weak_fuzzy_matches"],
    }


def metric_figures(result: dict[str, Any]) -> dict[str, Any]:
    """A metric's result.json: what is compared and the stages' waves and seconds."""
    stages = {}
    seconds = result.get("stage_seconds") or {}
    for name, report in (result.get("stages") or {}).items():
        if isinstance(report, dict) and report.get("waves") is not None:
            stages[name] = {k: report.get(k) for k in ("waves", "judge_calls", "meta_calls")}
            stages[name]["seconds"] = seconds.get(name)
    return {
        "best_instructions": result["best_instructions"],
        "validation": {k: result["scores"][k].get("validation") for k in ("seed", "best")},
        "llm_calls": result["usage"]["llm_calls"],
        "produced_by": result.get("produced_by"),
        "stop_reason": result.get("stop_reason"),
        "duration_s": result.get("duration_s"),
        "stages": stages,
    }


def one_run(
    a: argparse.Namespace,
    worlds: list[Path],
    work: Path,
    dataset: Path,
    definitions: dict[str, str],
    key: str,
    seed: int,
) -> dict[str, Any]:
    """``key`` (a metric name, or ``job``) on a fresh server: timings, server calls, results."""
    run_dir = work / "runs" / f"s{seed}" / key
    server = start_server(a.judgeworld, worlds, run_dir, a.latency_ms, a.keep_alive)
    try:
        configs = write_configs(run_dir, dataset, definitions, server.base_url)
        wall, cpu, proc = run_cli(a.python, a.src, configs[key], run_dir / "out", seed)
        stats = server.stats()
        server_cpu = cpu_seconds(server.proc.pid)
    finally:
        server.stop()
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{key} seed {seed}: exit {proc.returncode}: {' | '.join(tail)}")
    out = run_dir / "out"
    top = json.loads((out / "result.json").read_text(encoding="utf-8"))
    if key == "job":
        metrics = {n: metric_figures(json.loads((out / n / "result.json").read_text())) for n in NAMES}
    else:
        metrics = {key: metric_figures(top)}
    return {
        "process_s": wall,
        "process_cpu_s": cpu,
        "server_cpu_s": server_cpu,
        "duration_s": top.get("duration_s"),
        "server": server_calls(stats),
        "in_flight": in_flight(run_dir / "trace.jsonl", a.latency_ms / 1000),
        "metrics": metrics,
    }


def one_seed(
    a: argparse.Namespace,
    worlds: list[Path],
    work: Path,
    dataset: Path,
    definitions: dict[str, str],
    seed: int,
) -> dict[str, Any]:
    separate = {n: one_run(a, worlds, work, dataset, definitions, n, seed) for n in NAMES}
    job = one_run(a, worlds, work, dataset, definitions, "job", seed)
    compared = {}
    for n in NAMES:
        own, joint = separate[n]["metrics"][n], job["metrics"][n]
        own_judge = separate[n]["server"]["judge_by_world"]
        world = next(iter(own_judge)) if len(own_judge) == 1 else None
        judge_own = separate[n]["server"]["judge"]
        judge_job = job["server"]["judge_by_world"].get(world) if world else None
        compared[n] = {
            "world": world,
            "judge_separate": judge_own,
            "judge_job": judge_job,
            "judge_diff": None if judge_job is None else (judge_job - judge_own) / judge_own,
            "client_calls_separate": own["llm_calls"],
            "client_calls_job": joint["llm_calls"],
            "same_instructions": own["best_instructions"] == joint["best_instructions"],
            "same_validation": own["validation"] == joint["validation"],
            "validation": joint["validation"],
            "produced_by": joint["produced_by"],
        }
    sep_process = sum(separate[n]["process_s"] for n in NAMES)
    sep_duration = sum(separate[n]["duration_s"] for n in NAMES)
    judge_sep = sum(separate[n]["server"]["judge"] for n in NAMES)
    meta_sep = sum(separate[n]["server"]["meta"] for n in NAMES)
    return {
        "seed": seed,
        "separate": separate,
        "job": job,
        "metrics": compared,
        "process_ratio": job["process_s"] / sep_process,
        "duration_ratio": _job_optimizing_s(job) / sep_duration,
        "separate_process_s": sep_process,
        "separate_duration_s": sep_duration,
        "judge_calls": {
            "separate": judge_sep,
            "job": job["server"]["judge"],
            "diff": (job["server"]["judge"] - judge_sep) / judge_sep,
        },
        "meta_calls": {"separate": meta_sep, "job": job["server"]["meta"]},
        "waves": {
            "separate": sum(separate[n]["in_flight"]["waves"] for n in NAMES),
            "job": job["in_flight"]["waves"],
        },
    }


def _job_optimizing_s(job: dict[str, Any]) -> float:
    """The job's optimization: its metrics start together, so the longest one's ``duration_s``
    (the job's own ``duration_s`` adds writing every metric's report, a separate run's does not)."""
    return max(m["duration_s"] for m in job["metrics"].values())


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f} (mean {sum(values) / len(values):.2f})"


def markdown(records: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lat = meta["latency_ms"]
    lines = [
        f"# Many judges in one job vs separate runs, judge out of process ({lat:g} ms per call)",
        "",
        "`python -m benchmarks.perf.many_metrics_judgeworld`: two synthetic judgeworld worlds "
        f"(`gen_world.py --n {meta['size']}`, generator seeds {meta['gen_seeds']}, metric names "
        f"{', '.join(f'`{n}`' for n in NAMES)}) joined into one annotation file; judgeworld's server "
        f"serves both, {lat:g} ms per chat call, in its own process; a fresh server for each run. "
        "Defaults (strategy auto, `llm.max_concurrency` 16). Target (issue 25 A): job ≤ 0.75× the "
        "sum of the separate runs, judge calls within 2 %, the same chosen instructions.",
        "",
        "Wall time two ways: the CLI process, start to exit (what a user waits for: each separate run "
        "pays the start-up's imports and writes its report, the job once and twice), and the "
        "optimization alone (each run's `duration_s`; for the job its longest metric's, as both start "
        "together). Server: "
        + (
            "connections kept open (`--keep-alive`)."
            if meta.get("keep_alive")
            else "judgeworld's default, one connection per request."
        ),
        "",
        "| seed | separate, process s (summed) | job, process s | ratio | separate, optimizing s (summed) "
        "| job, optimizing s | ratio | judge calls separate → job | meta calls | waves separate → job |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        j, m, w = r["judge_calls"], r["meta_calls"], r["waves"]
        optimizing = _job_optimizing_s(r["job"])
        lines.append(
            f"| {r['seed']} | {r['separate_process_s']:.1f} | {r['job']['process_s']:.1f} "
            f"| {r['process_ratio']:.2f} | {r['separate_duration_s']:.1f} | {optimizing:.1f} "
            f"| {optimizing / r['separate_duration_s']:.2f} "
            f"| {j['separate']} → {j['job']} ({j['diff'] * 100:+.1f} %) "
            f"| {m['separate']} → {m['job']} | {w['separate']} → {w['job']} |"
        )
    lines += [
        "",
        f"Wall-time ratio, CLI process: {_spread([r['process_ratio'] for r in records])}; optimizing "
        f"alone: {_spread([_job_optimizing_s(r['job']) / r['separate_duration_s'] for r in records])}.",
        "",
        "| seed | metric | judge calls separate → job (server, its world) | same instructions "
        "| same validation | validation seed → best | produced by |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        for n, c in r["metrics"].items():
            v = c["validation"]
            diff = "n/a" if c["judge_diff"] is None else f"{c['judge_diff'] * 100:+.1f} %"
            lines.append(
                f"| {r['seed']} | {n} | {c['judge_separate']} → {c['judge_job']} ({diff}) "
                f"| {'yes' if c['same_instructions'] else 'no'} | {'yes' if c['same_validation'] else 'no'} "
                f"| {_f(v['seed'])} → {_f(v['best'])} | {c['produced_by']} |"
            )
    lines += [
        "",
        "Requests in flight as the server saw them (mean over the time any was in flight; peak); CPU "
        "seconds of our process (the CLI: start-up, the run, its reports) and of the server; CPU a call: "
        f"ours without the start-up's imports ({_f(meta.get('import_cpu_s'), 1)} s, measured alone), "
        "over the calls the server answered:",
        "",
        "| seed | run | calls | busy s | mean in flight | peak | waves | CPU s ours / server "
        "| CPU ms a call, ours / server | stages: waves (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        for key, run in [*r["separate"].items(), ("job", r["job"])]:
            f = run["in_flight"]
            stages = "; ".join(
                f"{n}: " + ", ".join(f"{s} {d['waves']} ({d['seconds']:.1f})" for s, d in m["stages"].items())
                for n, m in run["metrics"].items()
            )
            lines.append(
                f"| {r['seed']} | {key} | {f['calls']} | {f['busy_s']:.1f} | {_f(f['mean_busy'], 1)} "
                f"| {f['peak']} | {f['waves']} | {run['process_cpu_s']:.1f} / {_f(run['server_cpu_s'], 1)} "
                f"| {_per_call(_minus(run['process_cpu_s'], meta.get('import_cpu_s')), f['calls'])} / "
                f"{_per_call(run['server_cpu_s'], f['calls'])} | {stages} |"
            )
    return "\n".join(lines) + "\n"


def _commit(src: Path) -> str | None:
    """The git commit of the tree holding ``src`` (``+dirty`` with edits under it; None outside git)."""
    git = ["git", "-C", str(src)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "."], capture_output=True, text=True)
    except OSError:
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _machine(meta: dict[str, Any]) -> str:
    return (
        f"\nSource measured: {meta.get('src_commit') or 'n/a'}. Machine: {meta['cpus']} CPUs, 1-minute "
        f"load average {meta['load_average_1min']:.1f} when the "
        "run ended (shared; the judge's CPU is the server's process, on the same machine).\n"
    )


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _per_call(seconds: float | None, calls: int) -> str:
    return "n/a" if seconds is None or not calls else f"{seconds / calls * 1000:.0f}"


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judgeworld", type=Path, default=ROOT.parent / "shared" / "judgeworld")
    parser.add_argument("--work", type=Path, default=Path("/tmp/many_metrics_judgeworld"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--gen-seeds", type=int, nargs=2, default=[1, 2])
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument(
        "--keep-alive", action="store_true", help="the server keeps connections open (judgeworld closes each)"
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter with promptevolver's deps")
    parser.add_argument("--out", default="many_metrics_judgeworld", help="file name (no suffix) in results")
    parser.add_argument(
        "--src",
        type=Path,
        default=ROOT / "src",
        help="promptevolver source tree measured (default this one's)",
    )
    parser.add_argument("--render", action="store_true", help="only rewrite OUT.md from OUT.json")
    a = parser.parse_args()
    if a.render:
        saved = json.loads((RESULTS / f"{a.out}.json").read_text(encoding="utf-8"))
        (RESULTS / f"{a.out}.md").write_text(markdown(saved["records"], saved) + _machine(saved))
        return
    worlds, dataset, definitions = make_worlds(a.judgeworld, a.work, a.size, a.gen_seeds)
    records = []
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {"latency_ms": a.latency_ms, "size": a.size, "gen_seeds": a.gen_seeds}
    meta |= {
        "src_commit": _commit(a.src),
        "keep_alive": a.keep_alive,
        "import_cpu_s": min(import_cpu(a.python, a.src) for _ in range(3)),
    }
    for seed in a.seeds:
        records.append(one_seed(a, worlds, a.work, dataset, definitions, seed))
        r = records[-1]
        (RESULTS / f"{a.out}.json").write_text(json.dumps({**meta, "records": records}, indent=2) + "\n")
        print(
            f"seed {seed}: process ratio {r['process_ratio']:.2f}, run ratio {r['duration_ratio']:.2f}",
            flush=True,
        )
    meta |= {
        "python": platform.python_version(),
        "load_average_1min": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }
    (RESULTS / f"{a.out}.json").write_text(json.dumps({**meta, "records": records}, indent=2) + "\n")
    text = markdown(records, meta) + _machine(meta)
    (RESULTS / f"{a.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
