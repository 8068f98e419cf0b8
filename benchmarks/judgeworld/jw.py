"""Driving an external judgeworld checkout from the outside: worlds, splits, servers, stats, scores.

judgeworld (an independent simulated LLM judge / prompt engineer, not part of promptevolver) is only
ever run as subprocesses of its own scripts, found under the directory passed as ``judgeworld``;
nothing of it is imported or copied here. Every subprocess gets ``JUDGEWORLD_TRAIN_FRAC`` (the train
share of its seeded stratified split) so that the split, the harnesses and the scorer agree.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "LEXICONS",
    "Server",
    "World",
    "ensure_file_world",
    "ensure_world",
    "jw_env",
    "score_instruction",
    "start_server",
    "world_key",
]

#: The committed hand-written lexicons of the bundled real annotation files (``<stem>.lexicon.json``).
LEXICONS = Path(__file__).resolve().parent / "lexicons"

#: Seconds to wait for a server to write its port file and answer /health.
SERVER_START_TIMEOUT_S = 60.0


def jw_env(train_frac: float, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for every judgeworld-related subprocess (split share, no hash randomness)."""
    env = dict(os.environ)
    env["JUDGEWORLD_TRAIN_FRAC"] = str(train_frac)
    env["PYTHONHASHSEED"] = "0"
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class World:
    """A world on disk (generated synthetic, or a real annotation file) and its train/test split files.

    ``path`` is the world's annotation JSON (its lexicon sits beside it); ``train``/``test`` are the
    split's annotation files; ``metric`` and ``default_definition`` come from the lexicon. A world
    built from a real file has ``name`` (``real_<file stem>``, its key), ``size`` = its sample count
    and ``gen_seed`` 0.
    """

    size: int
    gen_seed: int
    path: Path
    train: Path
    test: Path
    metric: str
    default_definition: str

    criterion_cues: bool = False
    name: str | None = None

    @property
    def key(self) -> str:
        return self.name or world_key(self.size, self.gen_seed, self.criterion_cues)


def world_key(size: int, gen_seed: int, criterion_cues: bool = False) -> str:
    """``w<size>s<gen_seed>``, with ``c`` appended for a world generated with ``--criterion-cues``."""
    return f"w{size}s{gen_seed}" + ("c" if criterion_cues else "")


def ensure_world(
    judgeworld: Path,
    worlds_dir: Path,
    size: int,
    gen_seed: int,
    train_frac: float,
    *,
    criterion_cues: bool = False,
) -> World:
    """Generate the world (if absent) with gen_world.py and write its split with split.py.

    ``criterion_cues``: gen_world.py ``--criterion-cues`` (one sentence per fact-error kind in the
    responses showing it; labels, criteria and split unchanged).

    Raises:
        subprocess.CalledProcessError: a judgeworld script failed.
    """
    worlds_dir.mkdir(parents=True, exist_ok=True)
    key = world_key(size, gen_seed, criterion_cues)
    path = worlds_dir / f"{key}.json"
    lexicon = worlds_dir / f"{key}.lexicon.json"
    env = jw_env(train_frac)
    if not (path.exists() and lexicon.exists()):
        subprocess.run(
            [
                sys.executable,
                str(judgeworld / "gen_world.py"),
                "--n",
                str(size),
                "--seed",
                str(gen_seed),
                "--out",
                str(path),
                *(["--criterion-cues"] if criterion_cues else []),
            ],
            check=True,
            env=env,
            capture_output=True,
            text=True,
        )
    split_dir = worlds_dir / f"{key}.split{train_frac:g}"
    train, test = split_dir / f"{key}.train.json", split_dir / f"{key}.test.json"
    if not (train.exists() and test.exists()):
        subprocess.run(
            [sys.executable, str(judgeworld / "split.py"), "--world", str(path), "--out-dir", str(split_dir)],
            check=True,
            env=env,
            capture_output=True,
            text=True,
        )
    lex = json.loads(lexicon.read_text(encoding="utf-8"))
    return World(size, gen_seed, path, train, test, lex["metric"], lex["default_definition"], criterion_cues)


def ensure_file_world(
    judgeworld: Path, worlds_dir: Path, data_file: Path, train_frac: float, *, lexicon_dir: Path = LEXICONS
) -> World:
    """A world from a real annotation file: copy it and ``<stem>.lexicon.json`` (from ``lexicon_dir``)
    side by side into ``worlds_dir``, check the lexicon with judgeworld's ``World.validate()`` and write
    the split with split.py (the same seeded stratified split as for synthetic worlds).

    Raises:
        FileNotFoundError: no lexicon ``<stem>.lexicon.json`` in ``lexicon_dir``.
        ValueError: judgeworld finds the world inconsistent (a disagreement without a criterion, a
            trigger in the default definition, ...); the message names the file and the problems.
        subprocess.CalledProcessError: a judgeworld script failed.
    """
    stem = data_file.name.removesuffix(".json")
    lexicon_src = lexicon_dir / f"{stem}.lexicon.json"
    if not lexicon_src.is_file():
        raise FileNotFoundError(
            f"{data_file}: no lexicon {lexicon_src} (judgeworld needs one for a real file)"
        )
    worlds_dir.mkdir(parents=True, exist_ok=True)
    name = f"real_{stem}"
    path, lexicon = worlds_dir / f"{name}.json", worlds_dir / f"{name}.lexicon.json"
    for src, dst in ((data_file, path), (lexicon_src, lexicon)):
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)
    env = jw_env(train_frac)
    probe = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(judgeworld)!r})\n"
        "from world import resolve_world\n"
        f"w = resolve_world({str(path)!r})\n"
        "print(json.dumps({'n': len(w.samples), 'problems': w.validate()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, env=env, capture_output=True, text=True)
    checked = json.loads(out.stdout.strip().splitlines()[-1])
    if checked["problems"]:
        raise ValueError(f"{data_file} with {lexicon_src}: {'; '.join(checked['problems'])}")
    split_dir = worlds_dir / f"{name}.split{train_frac:g}"
    train, test = split_dir / f"{name}.train.json", split_dir / f"{name}.test.json"
    subprocess.run(
        [sys.executable, str(judgeworld / "split.py"), "--world", str(path), "--out-dir", str(split_dir)],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    lex = json.loads(lexicon.read_text(encoding="utf-8"))
    return World(int(checked["n"]), 0, path, train, test, lex["metric"], lex["default_definition"], name=name)


class Server:
    """A running judgeworld server (``server.py``) on 127.0.0.1, stopped by its own PID."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def reset_stats(self) -> None:
        req = urllib.request.Request(self.root + "/stats/reset", data=b"{}", method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.root + "/stats", timeout=30) as resp:
            return dict(json.load(resp))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    judgeworld: Path,
    world: World,
    run_dir: Path,
    *,
    latency_ms: float,
    train_frac: float,
    trace: bool = False,
    max_context_tokens: int = 0,
) -> Server:
    """Start ``server.py`` for ``world`` on a free port (port 0 + port file), logs in ``run_dir``.

    ``max_context_tokens`` > 0 makes the server answer longer prompts with HTTP 400
    ``context_length_exceeded`` (a model's context window); 0: no limit.

    A fresh server per optimizer run: judgeworld keeps per-(instruction, sample) call indices and
    meta-call indices across ``/stats/reset``, so a fresh process makes every run start alike.

    Raises:
        RuntimeError: the server exited or did not answer within SERVER_START_TIMEOUT_S seconds.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    port_file = run_dir / "server.port"
    port_file.unlink(missing_ok=True)
    log = run_dir / "server.log"
    cmd = [
        sys.executable,
        str(judgeworld / "server.py"),
        "--world",
        str(world.path),
        "--port",
        "0",
        "--port-file",
        str(port_file),
        "--latency-ms",
        str(latency_ms),
        "--stats-out",
        str(run_dir / "server-stats.json"),
    ]
    if trace:
        cmd += ["--trace", str(run_dir / "trace.jsonl")]
    if max_context_tokens:
        cmd += ["--max-context-tokens", str(max_context_tokens)]
    return launch(cmd, port_file, log, jw_env(train_frac))


def launch(cmd: list[str], port_file: Path, log: Path, env: dict[str, str]) -> Server:
    """Start the judgeworld server command ``cmd`` (it writes its port to ``port_file``; its
    output goes to ``log``) and wait until it answers ``/health``.

    Raises:
        RuntimeError: it exited, or did not answer within ``SERVER_START_TIMEOUT_S`` (killed then).
    """
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"judgeworld server exited with {proc.returncode}; see {log}")
        text = port_file.read_text().strip() if port_file.exists() else ""
        if text:
            server = Server(proc, int(text), log)
            try:
                urllib.request.urlopen(server.root + "/health", timeout=5).read()
                return server
            except OSError:
                pass
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"judgeworld server did not start within {SERVER_START_TIMEOUT_S:.0f} s; see {log}")


def score_instruction(
    judgeworld: Path,
    world: World,
    instruction: str | None,
    work: Path,
    *,
    train_frac: float,
    default: bool = False,
    oracle: bool = False,
) -> list[dict[str, Any]]:
    """score.py --json on the test split: one row per instruction (default, oracle, then ``instruction``).

    Each row holds ``label``, ``accuracy_expected`` (the figure compared), ``accuracy_noiseless``,
    ``flip_probability``, ``chars``, ``covered_criteria``... as score.py prints them.

    Raises:
        subprocess.CalledProcessError: score.py failed.
    """
    cmd = [
        sys.executable,
        str(judgeworld / "score.py"),
        "--world",
        str(world.path),
        "--split",
        "test",
        "--json",
    ]
    if default:
        cmd.append("--default")
    if oracle:
        cmd.append("--oracle")
    if instruction is not None:
        work.mkdir(parents=True, exist_ok=True)
        f = work / "instruction.txt"
        f.write_text(instruction, encoding="utf-8")
        cmd += ["--instruction-file", str(f)]
    out = subprocess.run(cmd, check=True, env=jw_env(train_frac), capture_output=True, text=True).stdout
    return list(json.loads(out)["results"])
