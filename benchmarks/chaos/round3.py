"""Chaos benchmark, round three (issue 31): user files, concurrent writers, hangs, bad input and
memory at scale. Every case runs ``promptevolver`` in child processes (the simulated judge, or a
local OpenAI-compatible server), throws one kind of trouble at it and counts:

* **load**: what was thrown (processes at once, bytes a second, a disk's size, samples...);
* **faults survived**: faults injected (a full disk, a kill, a trickling or endless body, a
  damaged file, a hostile answer) after which the run did what the issue asks (stopped with one
  line and resumed to the result of an uninterrupted run, or went on);
* **bad inputs tried**: inputs that must be refused (a link, a folder of the user's, a fifo, a
  ``.nan``...) and how many got one clear line (exit 1 or 2, no traceback, no hang);
* **data lost**: files of the user's changed or removed, answered calls lost, updates lost,
  active script in a report (must be 0).

Cases: ``links`` (a symbolic link at each of the 14 names a run writes, under resume, --force and
report), ``foreign`` (every writing command into a folder of the user's, ``-o .`` and ``-o ""``
with and without --force), ``writers`` (two ``examples --add`` at once, repeated; ``optimize
--resume JOB/metric`` while the job runs), ``disk`` (a tmpfs too small for the run, answers in
CJK, then made larger and resumed; a job whose one metric's folder fills up), ``damage`` (torn and
garbled journal lines, every checkpoint field damaged, config.yaml edited), ``hangs`` (embeddings
sent one byte a second or without end, with SIGINT twice), ``answers`` (1e15-token usage, ``verdict:
true``, refusals, damaged cache rows), ``report`` (hostile text in every field, rendered by
python-markdown), ``inputs`` (``.nan``/``.inf`` in every number of a config, fifos and
``/dev/zero``, read-only folders, SIGTERM, ``examples --add`` of 20,000 samples), ``memory``
(peak RSS at 5,000 to 20,000 annotations, goal 400 MiB), ``secrets`` (the canary key in every
file the cases wrote).

``disk`` and the read-only folders need ``mount`` (root, as in CI's container); without it those
rows say n/a.

Usage::

    python -m benchmarks.chaos.round3 [--only links disk ...] [--out benchmarks/results]

writes ``chaos_round3.json`` and the section "Round three" of ``chaos.md`` in ``--out``. About
twelve minutes on two cores.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml

from benchmarks.chaos.hostile import KEY, _wait
from promptevolver import rundir
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.simulation.synthetic import SyntheticSpec, generate
from promptevolver.testing import Fault, LocalOpenAIServer, simulated_handler

CLI = [sys.executable, "-m", "promptevolver.cli"]
#: A small process between the benchmark and a measured command: a child's peak RSS
#: (``ru_maxrss``) counts the pages it shared with its parent when it was forked or spawned, so a
#: command started from this process (grown to ~340 MiB by the in-process cases) reported the
#: benchmark's own size as its peak. The launcher, a bare interpreter, spawns the command, passes
#: SIGINT and SIGTERM on to it, writes its peak (KiB) to the file named first and exits with its code.
_LAUNCHER = r"""
import os, signal, sys
out, command = sys.argv[1], sys.argv[2:]
pid = os.posix_spawn(command[0], command, os.environ, setsigdef=(signal.SIGINT, signal.SIGTERM))
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda number, _frame: os.kill(pid, number))
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""
SECTION = "## Round three: user files, concurrent writers, hangs, memory (issue 31)"
ROOT = Path(__file__).resolve().parents[2]
DEFINITION = (
    "Given the user_input, reference and response. Is the response correct compared with the reference"
)


@dataclass
class Row:
    """One case: what was thrown, what it survived, what it refused, what was lost."""

    case: str
    load: str
    faults: int
    survived: int
    bad_inputs: int
    clear: int
    data_lost: int | None
    seconds: float
    detail: str

    @property
    def handled(self) -> bool:
        return self.survived == self.faults and self.clear == self.bad_inputs and self.data_lost == 0


def synthetic(n: int = 40, **optimizer: Any) -> dict[str, Any]:
    return {
        "dataset": {"synthetic": {"n_samples": n, "random_seed": 0}},
        "metric": {"name": "answer_correctness", "definition": DEFINITION},
        "optimizer": {"population_size": 4, "generations": 1, "strategy": "genetic", **optimizer},
        "random_seed": 0,
    }


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def cli(
    *args: str, timeout_s: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "OPENAI_API_KEY": KEY, **(env or {})},
    )


def one_clear_line(proc: subprocess.CompletedProcess[str] | Any, *, codes: tuple[int, ...] = (1,)) -> bool:
    """Exit 1 (or one of ``codes``) with exactly one ``promptevolver`` line on stderr, no traceback."""
    stderr = proc.stderr if isinstance(proc.stderr, str) else "\n".join(proc.stderr)
    said = [line for line in stderr.splitlines() if line.strip()]
    rc = getattr(proc, "returncode", getattr(proc, "rc", None))
    return (
        rc in codes and len(said) == 1 and said[0].startswith("promptevolver") and "Traceback" not in stderr
    )


def snapshot(folder: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        found[key] = os.readlink(p).encode() if p.is_symlink() else (p.read_bytes() if p.is_file() else None)
    return found


def lost(before: dict[str, bytes | None], after: dict[str, bytes | None]) -> int:
    """Entries of ``before`` changed or gone in ``after``."""
    return sum(1 for k, v in before.items() if after.get(k, b"\0gone") != v)


def finished_run(work: Path, name: str = "run", **optimizer: Any) -> Path:
    config = write_config(work / f"{name}.yaml", synthetic(**optimizer))
    proc = cli("optimize", str(config), "-o", str(work / name), "-q")
    assert proc.returncode == 0, proc.stderr
    return work / name


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[bool]:
    """A tmpfs of ``size`` mounted at ``path`` (False when mounting is not allowed here)."""
    path.mkdir(parents=True, exist_ok=True)
    ok = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    try:
        yield ok.returncode == 0
    finally:
        if ok.returncode == 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def grow(path: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True, capture_output=True)


# -- cases -------------------------------------------------------------------------------------------


def links(work: Path) -> list[Row]:
    start = time.monotonic()
    run = finished_run(work)
    names = (*rundir.RUN_FILES, rundir.LOCK_FILE, rundir.OWNER_FILE)
    tried = clear = damage = 0
    for name in names:
        for command in ("resume", "force", "report"):
            victim = work / "precious"
            shutil.rmtree(victim, ignore_errors=True)
            victim.mkdir()
            (victim / "thesis.txt").write_text("years of work\n")
            copy = work / "copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(run, copy)
            entry = copy / name
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            elif entry.exists() or entry.is_symlink():
                entry.unlink()
            entry.symlink_to(victim if name == rundir.PLOTS_DIR else victim / "thesis.txt")
            before, kept = snapshot(victim), snapshot(copy)
            args = {
                "resume": ["optimize", "--resume", str(copy), "--set", "optimizer.generations=2"],
                "force": ["optimize", str(work / "run.yaml"), "-o", str(copy), "--force"],
                "report": ["report", str(copy)],
            }[command]
            proc = _in_process(*args, "-q")
            tried += 1
            clear += one_clear_line(proc) and "is a symbolic link" in "\n".join(proc.stderr)
            damage += lost(before, snapshot(victim)) + lost(kept, snapshot(copy))
    return [
        Row(
            "a link at each name a run writes (14) x resume, --force, report",
            f"{tried} commands",
            0,
            0,
            tried,
            clear,
            damage,
            round(time.monotonic() - start, 1),
            "the link's target and the run directory compared byte for byte",
        )
    ]


def _users_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / rundir.CONFIG_FILE).write_text("my: own config\n")
    (folder / rundir.REPORT_MD).write_text("# my report\n")
    (folder / rundir.RESULT_FILE).write_text('{"mine": true}\n')
    (folder / rundir.PLOTS_DIR).mkdir(exist_ok=True)
    (folder / rundir.PLOTS_DIR / "figure.png").write_bytes(b"\x89PNG mine")
    (folder / "README.md").write_text("hello\n")
    return folder


def foreign(work: Path) -> list[Row]:
    start = time.monotonic()
    run = finished_run(work)
    config = work / "run.yaml"
    job = work / "job.yaml"
    job.write_text(
        (ROOT / "configs" / "two_metrics.yaml").read_text().replace("../benchmarks", str(ROOT / "benchmarks"))
    )
    writers: dict[str, Callable[[Path], list[str]]] = {
        "optimize -o": lambda d: ["optimize", str(config), "-o", str(d)],
        "optimize -o --force": lambda d: ["optimize", str(config), "-o", str(d), "--force"],
        "optimize --resume": lambda d: ["optimize", "--resume", str(d)],
        "job -o --force": lambda d: ["optimize", str(job), "-o", str(d), "--force"],
        "report": lambda d: ["report", str(d)],
        "examples --remove": lambda d: ["examples", str(d), "--remove", "0"],
        "bench -o --force": lambda d: ["bench", str(config), "-o", str(d), "--force"],
    }
    tried = clear = damage = 0
    for name, argv in writers.items():
        folder = _users_folder(work / f"mine-{len(name)}-{tried}")
        before = snapshot(folder)
        proc = _in_process(*argv(folder), "-q")
        tried += 1
        clear += one_clear_line(proc)
        damage += lost(before, snapshot(folder)) + (len(snapshot(folder)) - len(before))
    for output in (".", ""):
        for force in ([], ["--force"]):
            folder = _users_folder(work / f"project-{tried}")
            before = snapshot(folder)
            with contextlib.chdir(folder):
                proc = _in_process("optimize", str(config), "-o", output, "-q", *force)
            tried += 1
            clear += one_clear_line(proc) and "promptevolver did not write" in "\n".join(proc.stderr)
            damage += lost(before, snapshot(folder)) + (len(snapshot(folder)) - len(before))
    del run
    return [
        Row(
            "every writing command into a folder of the user's; -o . and -o '' (with --force too)",
            f"{tried} commands",
            0,
            0,
            tried,
            clear,
            damage,
            round(time.monotonic() - start, 1),
            "config.yaml, report.md, result.json, plots/ and README.md of the user's compared, none added",
        )
    ]


def _retrieval_run(work: Path) -> Path:
    config = synthetic(200, strategy="examples", examples={"policy": "retrieval", "k": 3})
    config["optimizer"].pop("population_size")
    config["optimizer"].pop("generations")
    path = write_config(work / "retrieval.yaml", config)
    proc = cli("optimize", str(path), "-o", str(work / "retrieval"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert (
        json.loads((work / "retrieval" / rundir.RESULT_FILE).read_text())["examples"]["policy"] == "retrieval"
    )
    return work / "retrieval"


def _added(run: Path, path: Path, n: int, first: int) -> Path:
    data = json.loads((run / rundir.RESULT_FILE).read_text())["examples"]["store"]["samples"][0]
    samples = []
    for i in range(n):
        sample = json.loads(json.dumps(data))
        sample["metric_input"] = {**sample["metric_input"], "user_input": f"new question {first + i}"}
        samples.append(sample)
    path.write_text(json.dumps({"answer_correctness": samples}))
    return path


def writers(work: Path) -> list[Row]:
    rows = []
    start = time.monotonic()
    run = _retrieval_run(work)
    rounds, refused, written, updates_lost = 6, 0, 0, 0
    for r in range(rounds):
        files = [_added(run, work / f"add-{r}-{i}.json", 2, 100 * r + 10 * i) for i in range(2)]
        before = len(json.loads((run / rundir.RESULT_FILE).read_text())["examples"].get("updates", []))
        procs = [
            subprocess.Popen(
                [*CLI, "examples", str(run), "--add", str(f), "-q"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for f in files
        ]
        outs = [p.communicate(timeout=300) for p in procs]
        ok = sum(p.returncode == 0 for p in procs)
        refused += sum(
            p.returncode == 1 and "another promptevolver process" in e for p, (_, e) in zip(procs, outs)
        )
        after = len(json.loads((run / rundir.RESULT_FILE).read_text())["examples"].get("updates", []))
        written += after - before
        updates_lost += ok - (after - before)
    rows.append(
        Row(
            "two examples --add at once",
            f"{rounds} rounds of 2 processes",
            0,
            0,
            0,
            0,
            updates_lost,
            round(time.monotonic() - start, 1),
            f"{written} updates written, {refused} second writers refused naming the holder, "
            f"{2 * rounds - written - refused} other",
        )
    )
    start = time.monotonic()
    rows.append(_resume_one_metric_of_a_running_job(work, start))
    return rows


def _resume_one_metric_of_a_running_job(work: Path, start: float) -> Row:
    from promptevolver.annotations import MetricAnnotation

    data = MetricAnnotation.from_json(ROOT / "benchmarks" / "data" / "two_metrics.json")
    judge = SimulatedJudgeLLM(dataset=data["helpfulness"], random_seed=3)  # answers both metrics
    srv = LocalOpenAIServer(simulated_handler(judge), models=["sim"], latency_s=1.0).start()
    job_dir = work / "job"
    job = work / "job.yaml"
    config = yaml.safe_load((ROOT / "configs" / "two_metrics.yaml").read_text())
    config["dataset"] = str(ROOT / "benchmarks" / "data" / "two_metrics.json")
    config["llm"] = {"provider": "openai", "model": "sim", "base_url": srv.base_url, "cache": None}
    write_config(job, config)
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    command = [*CLI, "optimize", str(job), "-o", str(job_dir), "-q"]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    while first.poll() is None and not (job_dir / "helpfulness" / rundir.CHECKPOINT_FILE).exists():
        time.sleep(0.01)
    resumes = [
        subprocess.Popen(
            [*CLI, "optimize", "--resume", str(job_dir / "helpfulness"), "-q"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    tries = clear = after = 0
    for proc in resumes:  # each either ran into the job (refused naming it) or came after it
        err = proc.communicate(timeout=900)[1]
        one = proc.returncode == 1 and len(err.strip().splitlines()) == 1
        if one and f"pid {first.pid}" in err:
            tries += 1
            clear += 1
        elif (
            one
            and "another promptevolver process" in err
            or proc.returncode == 0
            and first.poll() is not None
        ):
            after += 1  # refused by another resume, or ran, once the job had ended
        else:
            tries += 1  # neither refused by the job nor after it: a second writer let in
    first.wait(timeout=900)
    torn = sum(
        len(raw.splitlines()) - len([x for x in raw.splitlines() if _parses(x)])
        for raw in (p.read_text(errors="replace") for p in job_dir.rglob(rundir.JOURNAL_FILE))
    )
    alone = work / "alone"
    srv.latency_s = 0.0
    cli("optimize", str(job), "-o", str(alone), "-q")
    srv.stop()
    same = all(
        json.loads((job_dir / m / rundir.RESULT_FILE).read_text())["best_instructions"]
        == json.loads((alone / m / rundir.RESULT_FILE).read_text())["best_instructions"]
        for m in ("answer_correctness", "helpfulness")
    )
    return Row(
        "optimize --resume JOB/metric while the job runs",
        f"{tries} resumes during one job (3 processes at once)",
        0,
        0,
        tries,
        clear,
        torn + (0 if same and first.returncode == 0 else 1),
        round(time.monotonic() - start, 1),
        f"job exit {first.returncode}; {after} resumes came after it (refused by another, or ran); "
        f"torn journal lines {torn}; each "
        f"metric's result equals a job run alone: {'yes' if same else 'no'}",
    )


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


class CJKServer(LocalOpenAIServer):
    """The simulated judge whose reasons are long CJK text (three bytes a character)."""

    def _completion(self, body: dict[str, Any], text: str | None = None) -> dict[str, Any]:
        completion = super()._completion(body, text)
        message = completion["choices"][0]["message"]
        try:
            answer = json.loads(message["content"])
        except ValueError:
            return completion
        if isinstance(answer, dict) and "reason" in answer:
            answer["reason"] = "答案与参考一致，理由如下：" * 12 + str(answer["reason"])
            message["content"] = json.dumps(answer, ensure_ascii=False)
        return completion


def disk(work: Path) -> list[Row]:
    start = time.monotonic()
    dataset = generate(SyntheticSpec(n_samples=200, random_seed=0))
    rows = []
    sizes = ("96k", "160k", "256k", "400k")
    faults = survived = repeated = 0
    detail: list[str] = []
    with CJKServer(
        simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42)), models=["sim"]
    ) as srv:
        base = synthetic(200)
        base["llm"] = {"provider": "openai", "model": "sim", "base_url": srv.base_url, "cache": None}
        config = write_config(work / "cjk.yaml", base)
        clean = work / "clean"
        assert cli("optimize", str(config), "-o", str(clean), "-q").returncode == 0
        best = json.loads((clean / rundir.RESULT_FILE).read_text())["best_instructions"]
        for size in sizes:
            mount = work / f"disk-{size}"
            with tmpfs(mount, size) as mounted:
                if not mounted:
                    return [
                        Row(
                            "a full disk (tmpfs), CJK answers, then --resume",
                            "n/a: mount not allowed",
                            0,
                            0,
                            0,
                            0,
                            None,
                            0.0,
                            "",
                        )
                    ]
                run = mount / "run"
                seen = len(srv.requests)  # (a copy: read from here on)
                stopped = cli("optimize", str(config), "-o", str(run), "-q")
                first = [json.dumps(r, sort_keys=True) for r in srv.requests[seen:]]
                if stopped.returncode == 0:
                    detail.append(f"{size}: fitted")
                    continue
                faults += 1
                grow(mount, "64m")
                seen = len(srv.requests)  # (a copy: read from here on)
                resumed = cli("optimize", "--resume", str(run), "-q")
                again = [json.dumps(r, sort_keys=True) for r in srv.requests[seen:]]
                asked_again = len(set(first) & set(again))
                repeated += asked_again
                same = json.loads((run / rundir.RESULT_FILE).read_text())["best_instructions"] == best
                line = one_clear_line(stopped) and "No space left on device while writing" in stopped.stderr
                survived += line and resumed.returncode == 0 and same
                detail.append(
                    f"{size}: one line {'yes' if line else 'NO: ' + repr(stopped.stderr[-300:])}, "
                    "resume exit "
                    f"{resumed.returncode}, result as a clean run's {'yes' if same else 'no'}, {asked_again} "
                    "answers asked again"
                )
    rows.append(
        Row(
            "a full disk (tmpfs of 96-400 KB), CJK answers, then made larger and --resume",
            f"{len(sizes)} disk sizes; {repeated} answers asked again in all",
            faults,
            survived,
            0,
            0,
            faults - survived,
            round(time.monotonic() - start, 1),
            "; ".join(detail)
            + "; lost = answered calls asked again after the resume (the result must equal a clean run's)",
        )
    )
    rows += _job_disk(work)
    return rows


def _job_disk(work: Path) -> list[Row]:
    start = time.monotonic()
    job_dir = work / "fulljob"
    with rundir.locked(job_dir):
        pass
    (job_dir / "helpfulness").mkdir()
    job = work / "job.yaml"
    job.write_text(
        (ROOT / "configs" / "two_metrics.yaml").read_text().replace("../benchmarks", str(ROOT / "benchmarks"))
    )
    with tmpfs(job_dir / "helpfulness", "48k") as mounted:
        if not mounted:
            return [
                Row(
                    "a job whose one metric's folder fills up",
                    "n/a: mount not allowed",
                    0,
                    0,
                    0,
                    0,
                    None,
                    0.0,
                    "",
                )
            ]
        with rundir.locked(job_dir / "helpfulness"):
            pass
        stopped = cli("optimize", str(job), "-o", str(job_dir), "-q")
        other = (job_dir / "answer_correctness" / rundir.RESULT_FILE).is_file() and (
            job_dir / "answer_correctness" / rundir.REPORT_HTML
        ).is_file()
        top = (
            json.loads((job_dir / rundir.RESULT_FILE).read_text())
            if (job_dir / rundir.RESULT_FILE).is_file()
            else {}
        )
        grow(job_dir / "helpfulness", "64m")
        resumed = cli("optimize", "--resume", str(job_dir), "-q")
        done = (job_dir / "helpfulness" / rundir.RESULT_FILE).is_file()
    ok = (
        stopped.returncode == 1
        and other
        and top.get("failed") == ["helpfulness"]
        and resumed.returncode == 0
        and done
    )
    reason = (top.get("metrics", {}).get("helpfulness") or {}).get("reason") or ""
    return [
        Row(
            "a job whose one metric's folder fills up (48 KB tmpfs)",
            "2 metrics",
            1,
            int(ok),
            0,
            0,
            0 if other else 1,
            round(time.monotonic() - start, 1),
            f"other metric's result.json and report written: {'yes' if other else 'no'}; reason: "
            f"{_short(reason)}; resume exit {resumed.returncode}",
        )
    ]


def _short(text: str) -> str:
    line = [x for x in text.splitlines() if x.strip()]
    return re.sub(r"/tmp/\S+", "DIR", (line[-1] if line else ""))[:140]


def damage(work: Path) -> list[Row]:
    start = time.monotonic()
    rows = []
    # torn journals: an interrupted run, its journal cut at seeded byte offsets, garbage inserted
    config = write_config(work / "big.yaml", synthetic(200, generations=3))
    run = work / "interrupted"
    proc = subprocess.Popen([*CLI, "optimize", str(config), "-o", str(run), "-q"], stderr=subprocess.DEVNULL)
    while proc.poll() is None and not (run / rundir.CHECKPOINT_FILE).exists():
        time.sleep(0.01)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    journal = (run / rundir.JOURNAL_FILE).read_bytes()
    lines = journal.splitlines()
    tried = clear = 0
    bad = 0
    for trial in range(8):
        copy = work / f"torn-{trial}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(run, copy)
        cjk = json.dumps(
            {"key": "0" * 64, "op": "judge", "text": "正确。答案与参考一致", "pt": 3, "ct": 2},
            ensure_ascii=False,
        ).encode()
        cut = cjk[: 40 + trial * 3]
        middle = max(1, len(lines) // 2 - trial)
        garbled = [*lines[:middle], b"\x00\xffgarbage", *lines[middle:], cut]
        (copy / rundir.JOURNAL_FILE).write_bytes(b"\n".join(garbled))
        resumed = cli("optimize", "--resume", str(copy), "-q")
        tried += 1
        clear += resumed.returncode == 0
        bad += "internal error" in resumed.stderr
    rows.append(
        Row(
            "journal torn mid-character and garbled mid-file, then --resume",
            f"{tried} journals",
            tried,
            clear,
            0,
            0,
            bad,
            round(time.monotonic() - start, 1),
            "every resume finishes; lost = internal errors",
        )
    )
    # every checkpoint field damaged
    start = time.monotonic()
    finished = finished_run(work, "fields")
    data = json.loads((finished / rundir.CHECKPOINT_FILE).read_text())
    paths = [(k,) for k in data] + [("state", k) for k in data["state"]]
    paths += [("state", "candidates", 0, k) for k in data["state"]["candidates"][0]]
    paths += [("memo", 0, i) for i in range(3)]
    tried = clear = internal = 0
    for path in paths:
        for kind in ("wrong", "null"):
            damaged = json.loads(json.dumps(data))
            node = damaged
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = None if kind == "null" else ("x" if not isinstance(node[path[-1]], str) else 7)
            copy = work / "field"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(finished, copy)
            (copy / rundir.CHECKPOINT_FILE).write_text(json.dumps(damaged))
            proc = _in_process("optimize", "--resume", str(copy), "--set", "optimizer.generations=2", "-q")
            tried += 1
            clear += proc.rc == 0 or one_clear_line(proc)
            internal += "internal error" in "\n".join(proc.stderr)
    rows.append(
        Row(
            "every checkpoint field set to another type or null, then --resume",
            f"{len(paths)} fields x 2",
            0,
            0,
            tried,
            clear,
            internal,
            round(time.monotonic() - start, 1),
            "resumed, or one line naming the field; lost = internal errors",
        )
    )
    # config.yaml edited between runs
    start = time.monotonic()
    tried = clear = changed = 0
    for key, value in (("llm.noise", 0.3), ("llm.temperature", 0.9), ("metric.definition", "Polite?")):
        copy = work / "edited"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(finished, copy)
        text = yaml.safe_load((copy / rundir.CONFIG_FILE).read_text())
        section, name = key.split(".")
        text[section][name] = value
        (copy / rundir.CONFIG_FILE).write_text(yaml.safe_dump(text, sort_keys=False))
        before = snapshot(copy)
        proc = cli("optimize", "--resume", str(copy), "--set", "optimizer.generations=2", "-q")
        tried += 1
        clear += one_clear_line(proc) and key in proc.stderr
        changed += lost(before, snapshot(copy))
    rows.append(
        Row(
            "config.yaml edited between runs (model settings, definition), then --resume",
            f"{tried} edits",
            0,
            0,
            tried,
            clear,
            changed,
            round(time.monotonic() - start, 1),
            "refused naming the key, nothing written",
        )
    )
    return rows


@dataclass
class InProcess:
    rc: int
    stderr: list[str]


def _in_process(*argv: str) -> InProcess:
    from promptevolver.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(list(argv))
    return InProcess(rc, [line for line in err.getvalue().splitlines() if line.strip()])


def measured(command: list[str], peak: Path) -> list[str]:
    """``command`` run through :data:`_LAUNCHER`, its own peak RSS written to ``peak``."""
    return [sys.executable, "-c", _LAUNCHER, str(peak), *command]


def peak_mib(peak: Path) -> float | None:
    """The peak RSS (MiB) :func:`measured` wrote; None when the command left none."""
    try:
        return int(peak.read_text()) / 1024
    except (OSError, ValueError):
        return None


def run_measured(args: list[str], *, timeout_s: float, work: Path) -> tuple[int, float | None]:
    """``promptevolver ARGS`` in a child of :data:`_LAUNCHER`: its exit code and own peak RSS."""
    peak = work / f"peak-{time.monotonic_ns()}.txt"
    proc = subprocess.Popen(
        measured([*CLI, *args], peak),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OPENAI_API_KEY": KEY},
        start_new_session=True,
    )
    status, _ = _wait(proc, time.monotonic(), timeout_s)
    end_group(proc)
    return os.waitstatus_to_exitcode(status), peak_mib(peak)


def end_group(proc: subprocess.Popen[Any]) -> None:
    """Kill what is left of a measured command's process group (a launcher killed at its timeout
    leaves the command running)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def hangs(work: Path) -> list[Row]:
    rows = []
    for label, fault, timeout in (
        ("embeddings sent 1 byte/s, timeout_s 5, SIGINT twice (was past 600 s)", Fault.slow_body(1.0), 5.0),
        ("embeddings body without end (a 300 MB body took 1.26 GB)", Fault.endless_body(), 5.0),
    ):
        start = time.monotonic()
        with LocalOpenAIServer(lambda body: "unused", models=["e"]) as srv:
            srv.inject(*[fault] * 40)
            config = synthetic(
                200,
                strategy="examples",
                examples={
                    "policy": "retrieval",
                    "similarity": "embeddings",
                    "embeddings": {
                        "model": "e",
                        "base_url": srv.base_url,
                        "cache": None,
                        "timeout_s": timeout,
                        "max_attempts": 2,
                    },
                },
            )
            config["optimizer"].pop("population_size")
            config["optimizer"].pop("generations")
            path = write_config(work / "emb.yaml", config)
            out = work / f"emb-{len(rows)}"
            began = time.monotonic()
            peak_file = work / f"emb-{len(rows)}.peak"
            with tempfile.TemporaryFile("w+") as errors:
                proc = subprocess.Popen(
                    measured([*CLI, "optimize", str(path), "-o", str(out), "-q"], peak_file),
                    stderr=errors,
                    text=True,
                    env={**os.environ, "OPENAI_API_KEY": KEY},
                    start_new_session=True,  # the launcher and the command: one group to end
                )
                interrupted = fault.kind == "slow_body"
                if interrupted:
                    time.sleep(2 * timeout)
                    proc.send_signal(signal.SIGINT)
                    time.sleep(0.5)
                    proc.send_signal(signal.SIGINT)
                sigint_at = time.monotonic()
                _wait(proc, began, max(120, 30 * timeout))
                end_group(proc)
                stop_s = time.monotonic() - (sigint_at if interrupted else began)
                errors.seek(0)
                err = errors.read()
        found = peak_mib(peak_file)  # its own peak memory
        peak = "n/a" if found is None else f"{found:.0f} MiB"
        bound = 3 * timeout if interrupted else 3 * timeout * 2 + 10
        ok = proc.returncode in (1, 130) and stop_s <= bound and "Traceback" not in err
        rows.append(
            Row(
                label,
                f"{'2 SIGINT' if interrupted else 'endless body'}; timeout_s {timeout:g}",
                1,
                int(ok),
                0,
                0,
                0,
                round(time.monotonic() - start, 1),
                f"exit {proc.returncode} in {stop_s:.1f} s "
                f"{'after the first SIGINT' if interrupted else 'from the start'} "
                f"(bound {bound:g} s); peak {peak}; '{_short(err)}'",
            )
        )
    return rows


class HostileAnswers(LocalOpenAIServer):
    """Every answer reports 1e15 tokens; every 7th says ``verdict: true``; every 11th refuses."""

    def __init__(self, handler: Any) -> None:
        super().__init__(handler, models=["sim"])
        self.count = 0

    def _completion(self, body: dict[str, Any], text: str | None = None) -> dict[str, Any]:
        completion = super()._completion(body, text)
        self.count += 1
        completion["usage"] = {
            "prompt_tokens": 10**15,
            "completion_tokens": 10**15,
            "total_tokens": 2 * 10**15,
        }
        message = completion["choices"][0]["message"]
        if self.count % 11 == 0:
            message["content"], message["refusal"] = None, "I can't help with that."
        elif self.count % 7 == 0:
            message["content"] = re.sub(r'"verdict":\s*[01]', '"verdict": true', message["content"] or "")
        return completion


def answers(work: Path) -> list[Row]:
    start = time.monotonic()
    dataset = generate(SyntheticSpec(n_samples=200, random_seed=0))
    with HostileAnswers(simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=42))) as srv:
        cache = work / "cache.sqlite"
        config = synthetic(200)
        config["llm"] = {
            "provider": "openai",
            "model": "sim",
            "base_url": srv.base_url,
            "cache": str(cache),
            "max_attempts": 2,
        }
        config["llm"]["prices"] = {"sim": {"prompt": 0.15, "completion": 0.6}}
        path = write_config(work / "hostile.yaml", config)
        first = cli("optimize", str(path), "-o", str(work / "first"), "-q")
        import sqlite3

        with sqlite3.connect(cache) as conn:  # damage about 60 % of the rows
            conn.execute("UPDATE responses SET prompt_tokens = 'many' WHERE key < '5'")
            conn.execute("UPDATE responses SET text = x'00ff' WHERE key >= 'b'")
        second = cli("optimize", str(path), "-o", str(work / "second"), "-q")
    results = [
        json.loads((work / d / rundir.RESULT_FILE).read_text())
        for d in ("first", "second")
        if (work / d / rundir.RESULT_FILE).is_file()
    ]
    costs = [r["usage"].get("cost_usd") for r in results]
    causes = [r["usage"].get("failures_by_cause") for r in results]
    ok = first.returncode == 0 and second.returncode == 0 and all(c is not None and c < 1.0 for c in costs)
    ok = ok and "internal error" not in first.stderr + second.stderr
    faults = srv.count // 7 + srv.count // 11 + 2
    return [
        Row(
            "answers: usage of 1e15 tokens each, verdict: true, refusals; then damaged cache rows",
            f"{srv.count} answers",
            faults,
            faults if ok else 0,
            0,
            0,
            0,
            round(time.monotonic() - start, 1),
            f"exits {first.returncode}, {second.returncode}; cost USD {costs} (was $34 billion); "
            f"failures by cause {causes}",
        )
    ]


def report(work: Path) -> list[Row]:
    import markdown

    start = time.monotonic()
    payloads = [
        "<script>alert('md')</script>",
        '<img src=x onerror="alert(1)">',
        "[click me](javascript:alert(2))",
        "```\n<script>alert('fence')</script>\n```",
        '<a href="javascript:alert(3)">link</a>',
        "<!-- hidden --><iframe src=//evil.example></iframe>",
    ]
    data = json.loads((ROOT / "benchmarks" / "data" / "edited_chain_runs.json").read_text())
    count = [0]

    def poison(value: Any) -> Any:
        if isinstance(value, str):
            count[0] += 1
            return f"{value} {payloads[count[0] % len(payloads)]}"
        if isinstance(value, dict):
            return {k: poison(v) for k, v in value.items()}
        if isinstance(value, list):
            return [poison(v) for v in value]
        return value

    (work / "hostile.json").write_text(json.dumps({k: poison(v) for k, v in data.items()}))
    config = {
        "dataset": str(work / "hostile.json"),
        "metric": {"name": "answer_correctness", "definition": DEFINITION},
        "optimizer": {"population_size": 4, "generations": 1, "strategy": "genetic"},
        "random_seed": 0,
    }
    proc = cli("optimize", str(write_config(work / "xss.yaml", config)), "-o", str(work / "xss"), "-q")
    md = (work / "xss" / rundir.REPORT_MD).read_text() if proc.returncode == 0 else ""
    page = markdown.markdown(md, extensions=["tables", "fenced_code"])
    html_page = (work / "xss" / rundir.REPORT_HTML).read_text() if proc.returncode == 0 else ""
    found = len(active_markup(page)) + len(active_markup(html_page))
    return [
        Row(
            "hostile text in every string field of the annotations, report.md rendered by python-markdown",
            f"{count[0]} fields",
            0,
            0,
            count[0],
            count[0] if proc.returncode == 0 else 0,
            found if proc.returncode == 0 else None,
            round(time.monotonic() - start, 1),
            "lost = active elements (script, img, iframe, on...=, javascript:, comments) rendered",
        )
    ]


class _Active(HTMLParser):
    """Active markup in a page: script, iframe, object and embed elements, images other than our
    plots, event-handler attributes, ``javascript:`` links and sources, comments."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("script", "iframe", "object", "embed"):
            self.found.append(tag)
        if tag == "img" and not (values.get("src") or "").startswith(("plots/", "data:image/png;base64,")):
            self.found.append("img")
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"{tag} {name}")

    def handle_comment(self, data: str) -> None:
        self.found.append("comment")


def active_markup(page: str) -> list[str]:
    parser = _Active()
    parser.feed(page)
    return parser.found


def _numeric_keys() -> list[str]:
    """Every dotted key of a number in a run config (a mapping of sections under the key
    ``fake``), but those set in one place only (their ``optimizer.`` twins are refused as such)."""
    import typing

    from pydantic import BaseModel

    from promptevolver.config._models import RUN_LEVEL_KEYS, RunConfig

    def types(annotation: Any) -> set[Any]:
        args = typing.get_args(annotation)
        return {annotation} if not args else set().union(*(types(a) for a in args))

    def walk(model: type[BaseModel], prefix: str) -> Iterator[str]:
        for name, info in model.model_fields.items():
            found = types(info.annotation)
            if int in found or float in found:
                yield f"{prefix}{name}"
            keyed = "fake." if typing.get_origin(info.annotation) is dict else ""
            for section in (t for t in found if isinstance(t, type) and issubclass(t, BaseModel)):
                yield from walk(section, f"{prefix}{name}.{keyed}")

    elsewhere = ("random_seed", "seeds", *(f"optimizer.{k}" for k in RUN_LEVEL_KEYS))
    return sorted(k for k in walk(RunConfig, "") if not k.startswith(elsewhere))


def inputs(work: Path) -> list[Row]:
    rows = []
    start = time.monotonic()
    base = write_config(work / "base.yaml", synthetic())
    tried = clear = 0
    for key in _numeric_keys():
        for value in (".nan", ".inf", "-.inf"):
            proc = _in_process("estimate", str(base), "--set", f"{key}={value}")
            tried += 1
            clear += one_clear_line(proc) and f"{key}: Input should be a finite number" in proc.stderr[0]
    rows.append(
        Row(
            "nan and infinities in every number a config holds",
            f"{tried // 3} keys x 3",
            0,
            0,
            tried,
            clear,
            0,
            round(time.monotonic() - start, 1),
            "estimate --set KEY=VALUE",
        )
    )
    start = time.monotonic()
    run = finished_run(work)
    retrieval = _retrieval_run(work)
    fifo = work / "fifo.json"
    os.mkfifo(fifo)
    tried = clear = 0
    for bad in (str(fifo), "/dev/zero"):
        config = write_config(work / "special.yaml", {**synthetic(), "dataset": bad})
        for argv in (
            ["estimate", bad],
            ["estimate", str(config)],
            ["evaluate", str(base), "-i", bad],
            ["suggest", str(run), "--pool", bad, "-n", "2"],
            ["examples", str(retrieval), "--add", bad],
        ):
            try:
                proc = cli(*argv, timeout_s=60)
                tried += 1
                clear += one_clear_line(proc) and "not a regular file" in proc.stderr
            except subprocess.TimeoutExpired:
                tried += 1
    rows.append(
        Row(
            "a fifo or /dev/zero as config, dataset, --instructions, --pool, --add",
            f"{tried} commands",
            0,
            0,
            tried,
            clear,
            0,
            round(time.monotonic() - start, 1),
            "one line saying what it is, never a hang",
        )
    )
    # read-only folders (a read-only bind mount: chmod does not stop root)
    start = time.monotonic()
    readonly = work / "readonly"
    readonly.mkdir()
    tried = clear = 0
    mounted = (
        subprocess.run(["mount", "--bind", str(readonly), str(readonly)], capture_output=True).returncode == 0
    )
    if mounted:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(readonly)], capture_output=True)
        pool = work / "pool.jsonl"
        pool.write_text(
            "".join(
                json.dumps({"user_input": f"q{i}", "response": "a", "reference": "r"}) + "\n"
                for i in range(3)
            )
        )
        for argv in (
            ["suggest", str(run), "--pool", str(pool), "-n", "1", "--out", str(readonly / "s.jsonl")],
            ["evaluate", str(base), "-i", str(run), "--samples-out", str(readonly / "x.jsonl")],
            ["optimize", str(base), "-o", str(readonly / "run")],
        ):
            proc = cli(*argv, "-q")
            tried += 1
            clear += one_clear_line(proc) and "cannot be written" in proc.stderr
        subprocess.run(["umount", "-l", str(readonly)], capture_output=True)
    rows.append(
        Row(
            "an unwritable output folder (read-only mount)",
            f"{tried} commands" if mounted else "n/a: mount not allowed",
            0,
            0,
            tried,
            clear,
            0 if mounted else None,
            round(time.monotonic() - start, 1),
            "refused before any LLM call",
        )
    )
    # SIGTERM at a random point, three times, then resume
    start = time.monotonic()
    config = write_config(work / "term.yaml", synthetic(200, generations=3))
    faults = survived = 0
    for trial in range(3):
        out = work / f"term-{trial}"
        proc = subprocess.Popen(
            [*CLI, "optimize", str(config), "-o", str(out), "-q"], stderr=subprocess.PIPE, text=True
        )
        while proc.poll() is None and not (out / rundir.CHECKPOINT_FILE).exists():
            time.sleep(0.01)
        time.sleep(0.2 + 0.4 * trial)
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=120)[1]
        if proc.returncode == 0:
            continue
        faults += 1
        resumed = cli("optimize", "--resume", str(out), "-q")
        said = [x for x in err.splitlines() if x.strip()]
        survived += (
            proc.returncode == 143
            and len(said) == 1
            and "stopped by SIGTERM" in said[0]
            and resumed.returncode == 0
        )
    rows.append(
        Row(
            "SIGTERM at a random point, then --resume",
            f"{faults} signals",
            faults,
            survived,
            0,
            0,
            0,
            round(time.monotonic() - start, 1),
            "exit 143 with one line; the resume finishes",
        )
    )
    # examples --add beyond the caps, and a no-op add
    start = time.monotonic()
    store = json.loads((retrieval / rundir.RESULT_FILE).read_text())["examples"]["store"]["samples"]
    many = [
        {**store[0], "metric_input": {**store[0]["metric_input"], "user_input": f"q{i}"}}
        for i in range(20_000)
    ]
    (work / "many.json").write_text(json.dumps({"answer_correctness": many}))
    big = [{**store[0], "metric_input": {**store[0]["metric_input"], "response": "x" * 5_000_000}}]
    (work / "big.json").write_text(json.dumps({"answer_correctness": big}))
    (work / "same.json").write_text(json.dumps({"answer_correctness": store[:10]}))
    before = (retrieval / rundir.RESULT_FILE).read_bytes()
    tried = clear = 0
    for name in ("many.json", "big.json"):
        proc = cli("examples", str(retrieval), "--add", str(work / name), "-q")
        tried += 1
        clear += one_clear_line(proc)
    same = cli("examples", str(retrieval), "--add", str(work / "same.json"))
    free = (
        same.returncode == 0
        and "0 judge calls" in same.stdout
        and (retrieval / rundir.RESULT_FILE).read_bytes() == before
    )
    rows.append(
        Row(
            "examples --add of 20,000 samples, of a 5 MB response; of samples already in the pool",
            "3 adds",
            0,
            0,
            tried,
            clear,
            0 if (retrieval / rundir.RESULT_FILE).read_bytes() == before else 1,
            round(time.monotonic() - start, 1),
            "refused before any call; the no-op add: "
            + ("0 judge calls, result.json untouched" if free else "NOT free"),
        )
    )
    return rows


def memory(work: Path) -> list[Row]:
    rows = []
    start = time.monotonic()
    peaks = {}
    for n in (5_000, 10_000, 20_000):
        config = yaml.safe_load((ROOT / "configs" / "synthetic_20000.yaml").read_text())
        config["dataset"]["synthetic"]["n_samples"] = n
        path = write_config(work / f"m{n}.yaml", config)
        rc, peak = run_measured(
            ["optimize", str(path), "-o", str(work / f"m{n}"), "-q"], timeout_s=1200, work=work
        )
        peaks[n] = peak if rc == 0 else None
    slope = (peaks[20_000] - peaks[5_000]) / 15 if all(peaks.values()) else None
    ok = peaks[20_000] is not None and peaks[20_000] <= 400
    rows.append(
        Row(
            "20,000 annotations on the simulated LLM (goal: peak RSS <= 400 MiB, linear)",
            "5,000 / 10,000 / 20,000 annotations",
            1,
            int(ok),
            0,
            0,
            0,
            round(time.monotonic() - start, 1),
            "peak RSS "
            + " / ".join(f"{v:.0f}" if v else "n/a" for v in peaks.values())
            + " MiB"
            + (f"; {slope:.1f} MiB per 1,000 annotations" if slope else "")
            + " (before: 228 / 316 / 575 MiB)",
        )
    )
    return rows


def secrets(work: Path) -> list[Row]:
    """The canary key every command was given (``OPENAI_API_KEY``) searched in every file the
    cases before this one left (run directories, journals, caches, reports, exports)."""
    start = time.monotonic()
    files = [p for p in work.parent.rglob("*") if p.is_file() and not p.is_symlink()]
    holding = []
    for path in files:
        with contextlib.suppress(OSError):
            if KEY.encode() in path.read_bytes():
                holding.append(path.relative_to(work.parent))
    return [
        Row(
            "the canary API key searched in every file the cases wrote",
            f"{len(files):,} files",
            0,
            0,
            0,
            0,
            len(holding),
            round(time.monotonic() - start, 1),
            "files holding it: " + (", ".join(map(str, holding[:5])) or "none"),
        )
    ]


CASES: list[Callable[[Path], list[Row]]] = [
    links,
    foreign,
    writers,
    disk,
    damage,
    hangs,
    answers,
    report,
    inputs,
    memory,
    secrets,
]


#: What building this benchmark found, beyond the issue's list (kept with the figures).
FINDINGS = """
Found while building it, and fixed: on a full disk the calls still in flight wrote to the journal
after the run had closed it ("I/O operation on closed file" tracebacks after the one error line);
the first failed write now stops the journal and later answers are asked again on resume (0 to 35
per stop over the runs so far, as calls in flight at a kill). Answers that arrive while nothing can
be written are the one cost of a full disk: every run resumed to the result of an uninterrupted run.

Memory: a command's peak RSS is its own, read through a small launcher (a child's `ru_maxrss`
counts the pages it shared with the benchmark when it was forked, so rows measured before
2026-12-05 could show the benchmark's own size). Where pandas is installed (the `ragas` and
`mlflow` extras bring it, as in these runs), scikit-learn imports it and pandas imports pyarrow:
about 80 MiB more at every size; three runs on 2026-12-05 gave 402, 402 and 388 MiB at 20,000
annotations, so the goal is at its edge there. In a base install (`pip install -e .`,
`/usr/bin/time`) the same runs peak at 236 / 262 / 321 MiB.

Open (2026-12-05): the embeddings-trickle case failed once in three full runs: the command
stopped 0.6 s after the first SIGINT with exit 130, but its stderr ended in a `KeyboardInterrupt`
traceback (the second SIGINT came 0.5 s after the first, as the command finished). 18 reruns of
the case with the second SIGINT 0.05 to 0.7 s after the first did not reproduce it.
"""


def markdown_section(meta: dict[str, Any], rows: list[Row]) -> str:
    faults = sum(r.faults for r in rows)
    survived = sum(r.survived for r in rows)
    tried = sum(r.bad_inputs for r in rows)
    clear = sum(r.clear for r in rows)
    lost = sum(r.data_lost or 0 for r in rows)
    head = (
        f"{SECTION}\n\n{meta['date']}; {meta['cpus']} CPUs, Python {meta['python']}; "
        f"{meta['minutes']:.1f} min in all. Rerun: `python -m benchmarks.chaos.round3` (the cases are "
        "in its docstring). Commands run in child processes, or through the CLI's `main` in this one "
        "where only their files matter; *data lost* counts the user's files "
        "changed or removed, answered calls or updates lost, and active script in a report.\n\n"
        f"Totals: faults survived {survived} of {faults}; bad inputs refused with one clear line {clear} of "
        f"{tried}; data lost {lost}. Handled as asked: {sum(r.handled for r in rows)} of {len(rows)} "
        "cases.\n\n"
        "| case | load | faults survived | bad inputs tried (one clear line) | data lost | s | detail |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r.case} | {r.load} | {r.survived} of {r.faults} | {r.bad_inputs} ({r.clear}) | "
        f"{'n/a' if r.data_lost is None else r.data_lost} | {r.seconds:g} | {r.detail.replace('|', '/')} |\n"
        for r in rows
    )
    return head + body + FINDINGS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--only", nargs="*", default=None, help="run only the cases with these names")
    parser.add_argument("--merge", action="store_true", help="keep the rows of the cases not run now")
    args = parser.parse_args(argv)
    start = time.monotonic()
    found: list[tuple[str, Row]] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("XDG_CACHE_HOME", str(Path(tmp) / "xdg"))
        for case in CASES:
            if args.only and case.__name__ not in args.only:
                continue
            work = Path(tmp) / case.__name__
            work.mkdir()
            for r in case(work):
                print(f"{'ok ' if r.handled else 'NO '} {r.case}: {r.detail}", flush=True)
                found.append((case.__name__, r))
    minutes = (time.monotonic() - start) / 60
    order = [c.__name__ for c in CASES]
    if args.merge and (args.out / "chaos_round3.json").is_file():
        earlier = json.loads((args.out / "chaos_round3.json").read_text())
        ran = {name for name, _ in found}
        found += [(r.pop("group"), Row(**r)) for r in earlier["rows"] if r["group"] not in ran]
        minutes += earlier.get("minutes", 0.0)
    found.sort(key=lambda item: order.index(item[0]))
    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "minutes": minutes,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "chaos_round3.json").write_text(
        json.dumps({**meta, "rows": [{"group": g, **asdict(r)} for g, r in found]}, indent=2) + "\n"
    )
    section = markdown_section(meta, [r for _, r in found])
    write_section_as(args.out / "chaos.md", section)
    print(section)


def write_section_as(path: Path, section: str) -> None:
    """Put ``section`` into ``path`` in place of an earlier one (or at the end)."""
    text = path.read_text() if path.is_file() else ""
    begin = text.find(SECTION)
    if begin >= 0:
        end = text.find("\n## ", begin + len(SECTION))
        text = text[:begin] + section + (text[end + 1 :] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


if __name__ == "__main__":
    main()
