"""Issue 31, items 1 to 3: nothing of the user's is lost. No file is written through a symbolic
link; nothing is written into, or removed from, a folder promptevolver did not make (``--force``
included); every writer of a run directory takes its lock, so a second one is refused before it
changes anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.errors import RunDirError

from ..rundirs import SYNTHETIC, optimize_into

SMALL = {**SYNTHETIC, "optimizer": {**SYNTHETIC["optimizer"], "generations": 1}}
#: Every name a run writes into its directory (files and the plots folder), the lock and the marker.
WRITTEN = (*rundir.RUN_FILES, rundir.LOCK_FILE, rundir.OWNER_FILE)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return optimize_into(tmp_path_factory.mktemp("user-files") / "run", SMALL)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    return path


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` (links as links: their target path), by relative path."""
    found: dict[str, bytes | None] = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        if p.is_symlink():
            found[key] = os.readlink(p).encode()
        else:
            found[key] = p.read_bytes() if p.is_file() else None
    return found


def _one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err and lines[0].startswith("promptevolver"), err
    return lines[0]


# -- item 1: symbolic links are never followed ------------------------------------------------------


@pytest.mark.parametrize("name", WRITTEN)
@pytest.mark.parametrize("command", ["resume", "force", "report"])
def test_a_link_at_any_name_a_run_writes_is_refused_and_its_target_untouched(
    tmp_path: Path, finished: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    """Each name a run writes, replaced by a link to a file (or folder) of the user's, under each
    command that writes a run directory: refused with one line naming the link; the target and
    the run directory unchanged."""
    victim = tmp_path / "precious"
    victim.mkdir()
    (victim / "thesis.txt").write_text("years of work\n")
    target = victim if name == rundir.PLOTS_DIR else victim / "thesis.txt"
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    entry = run / name
    if entry.is_dir():
        shutil.rmtree(entry)
    elif entry.exists():
        entry.unlink()
    entry.symlink_to(target)
    before, kept = _snapshot(victim), _snapshot(run)
    argv = {
        "resume": ["optimize", "--resume", str(run), "--set", "optimizer.generations=2", "-q"],
        "force": ["optimize", str(_config(tmp_path)), "-o", str(run), "--force", "-q"],
        "report": ["report", str(run), "-q"],
    }[command]
    assert main(argv) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert f"{entry} is a symbolic link" in line, line
    assert _snapshot(victim) == before and _snapshot(run) == kept


def test_the_journal_of_the_python_api_is_never_written_through_a_link(tmp_path: Path) -> None:
    from promptevolver.llm._journal import Journal

    victim = tmp_path / "notes.txt"
    victim.write_text("mine\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / rundir.JOURNAL_FILE).symlink_to(victim)
    for fresh in (True, False):
        with pytest.raises(RunDirError, match="is a symbolic link"):
            Journal(tmp_path / "run" / rundir.JOURNAL_FILE, fresh=fresh)
    assert victim.read_text() == "mine\n"


def test_write_atomic_replaces_no_link_and_a_lock_file_link_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (tmp_path / "out.json").symlink_to(victim)
    with pytest.raises(RunDirError, match="is a symbolic link"):
        rundir.write_atomic(tmp_path / "out.json", "{}")
    run = tmp_path / "run"
    run.mkdir()
    (run / rundir.LOCK_FILE).symlink_to(victim)
    with pytest.raises(RunDirError, match="is a symbolic link"), rundir.locked(run):
        pass
    assert victim.read_text() == "mine" and (tmp_path / "out.json").is_symlink()


# -- item 2: a folder we did not make -----------------------------------------------------------------


def _users_folder(folder: Path) -> Path:
    """A folder of the user's holding files with a run's names (and others), none of them ours."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / rundir.CONFIG_FILE).write_text("my: own config\n")
    (folder / rundir.REPORT_MD).write_text("# my report\n")
    (folder / rundir.RESULT_FILE).write_text('{"mine": true}\n')
    (folder / rundir.PLOTS_DIR).mkdir(exist_ok=True)
    (folder / rundir.PLOTS_DIR / "figure.png").write_bytes(b"\x89PNG mine")
    (folder / "README.md").write_text("hello\n")
    return folder


def _writers(tmp_path: Path, finished: Path) -> dict[str, Callable[[Path], list[str]]]:
    """Every command that writes into a folder: folder -> its command line."""
    config = _config(tmp_path)
    job = tmp_path / "job.yaml"
    job.write_text((Path(__file__).parents[2] / "configs" / "two_metrics.yaml").read_text())
    return {
        "optimize -o": lambda d: ["optimize", str(config), "-o", str(d)],
        "optimize -o --force": lambda d: ["optimize", str(config), "-o", str(d), "--force"],
        "optimize --resume": lambda d: ["optimize", "--resume", str(d)],
        "job -o --force": lambda d: ["optimize", str(job), "-o", str(d), "--force"],
        "report": lambda d: ["report", str(d)],
        "examples --remove": lambda d: ["examples", str(d), "--remove", "0"],
        "bench -o --force": lambda d: ["bench", str(config), "-o", str(d), "--force"],
    }


WRITERS = [
    "optimize -o",
    "optimize -o --force",
    "optimize --resume",
    "job -o --force",
    "report",
    "examples --remove",
    "bench -o --force",
]


@pytest.mark.parametrize("writer", WRITERS)
def test_no_command_writes_into_or_removes_from_a_folder_it_did_not_make(
    tmp_path: Path, finished: Path, capsys: pytest.CaptureFixture[str], writer: str
) -> None:
    folder = _users_folder(tmp_path / "mine")
    before = _snapshot(folder)
    assert main([*_writers(tmp_path, finished)[writer](folder), "-q"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    if "-o" in writer:  # a new run there: refused as not ours (the others fail reading the user's files)
        assert "promptevolver did not write (README.md" in line, line
    assert _snapshot(folder) == before


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_output_the_current_folder_of_the_user_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], force: list[str]
) -> None:
    """``-o .`` and ``-o ""`` in a folder of the user's (with --force too): refused, nothing changed."""
    config = _config(tmp_path)
    folder = _users_folder(tmp_path / "project")
    before = _snapshot(folder)
    monkeypatch.chdir(folder)
    for output in (".", ""):
        assert main(["optimize", str(config), "-o", output, "-q", *force]) == 1
        assert "promptevolver did not write" in _one_error_line(capsys.readouterr().err)
    assert _snapshot(folder) == before


def test_a_new_run_marks_its_folder_and_force_removes_only_its_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = optimize_into(tmp_path / "run", SMALL)
    assert (run / rundir.OWNER_FILE).is_file()
    (run / "my_notes.txt").write_text("keep me")
    (run / rundir.PLOTS_DIR / "mine.png").write_bytes(b"x")  # the plots folder is the run's
    assert main(["optimize", str(_config(tmp_path)), "-o", str(run), "--force", "-q"]) == 0
    assert (run / "my_notes.txt").read_text() == "keep me"
    assert not (run / rundir.PLOTS_DIR / "mine.png").exists() and (run / rundir.RESULT_FILE).is_file()


def test_an_empty_folder_of_the_user_is_used_and_marked(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run = optimize_into(tmp_path / "empty", SMALL)
    assert (run / rundir.OWNER_FILE).is_file() and (run / rundir.RESULT_FILE).is_file()


def test_a_run_written_before_the_marker_existed_is_still_resumed_and_marked(
    tmp_path: Path, finished: Path
) -> None:
    run = tmp_path / "old"
    shutil.copytree(finished, run)
    (run / rundir.OWNER_FILE).unlink()
    rundir.check_ours(run)  # only run files, and a result.json of ours: a run of ours
    assert main(["optimize", "--resume", str(run), "--set", "optimizer.generations=2", "-q"]) == 0
    assert (run / rundir.OWNER_FILE).is_file()
    (run / rundir.OWNER_FILE).unlink()
    (run / "notes.txt").write_text("x")  # with a file of the user's beside it: refused
    with pytest.raises(RunDirError, match=r"did not write \(notes.txt"):
        rundir.check_ours(run)


def test_clear_run_refuses_an_unmarked_folder(tmp_path: Path) -> None:
    folder = _users_folder(tmp_path / "mine")
    before = _snapshot(folder)
    with pytest.raises(RunDirError, match="not a folder promptevolver made"):
        rundir.clear_run(folder)
    assert _snapshot(folder) == before


# -- item 3: every writer takes the lock --------------------------------------------------------------

_HOLD = """
import sys, time
from promptevolver.rundir import locked
with locked(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(600)
"""


class _Holder:
    """Another process holding the lock of a run directory."""

    def __init__(self, directory: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(directory)], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "locked"

    def __enter__(self) -> _Holder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.mark.parametrize("writer", [w for w in WRITERS if not w.startswith(("job", "bench"))])
def test_every_command_that_writes_a_run_directory_is_refused_while_another_process_writes_it(
    tmp_path: Path, finished: Path, capsys: pytest.CaptureFixture[str], writer: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    argv = _writers(tmp_path, finished)[writer](run)
    if writer == "optimize --resume":
        argv += ["--set", "optimizer.generations=2"]
    with _Holder(run) as holder:
        before = _snapshot(run)
        assert main([*argv, "-q"]) == 1
        line = _one_error_line(capsys.readouterr().err)
        assert f"pid {holder.proc.pid}" in line and "another promptevolver process" in line, line
        assert _snapshot(run) == before


def test_a_job_locks_each_metric_folder_so_resuming_one_metric_alone_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``optimize --resume JOB/metric`` while the job runs: refused (it used to make 116
    duplicate calls and tear a journal line)."""
    from promptevolver.runs import many

    job = tmp_path / "job"
    config = Path(__file__).parents[2] / "configs" / "two_metrics.yaml"
    seen: list[tuple[int, str]] = []

    async def resume_one_while_running(plans, earlier):  # the job's run, replaced by a probe
        for plan in plans:
            (plan.run_dir / rundir.CHECKPOINT_FILE).write_text("{}")  # looks resumable
            argv = [sys.executable, "-m", "promptevolver.cli", "optimize", "--resume", str(plan.run_dir)]
            other = subprocess.run(argv, capture_output=True, text=True)
            seen.append((other.returncode, other.stderr))
        return dict(earlier)

    original = many._run_job
    many._run_job = resume_one_while_running
    try:
        main(["optimize", str(config), "-o", str(job), "-q"])
    finally:
        many._run_job = original
    assert len(seen) == 2
    for code, err in seen:
        assert code == 1 and "another promptevolver process" in _one_error_line(err)
        assert f"pid {os.getpid()}" in err


def test_the_python_api_takes_the_lock_of_its_run_dir(tmp_path: Path) -> None:
    from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
    from promptevolver.llm import SimulatedJudgeLLM
    from promptevolver.simulation.synthetic import SyntheticSpec, generate

    dataset = generate(SyntheticSpec(n_samples=40, random_seed=0))
    optimizer = GeneticOptimizer(
        metric=AspectCritic(name=dataset.name, definition="Is it correct?"),
        llm=SimulatedJudgeLLM(dataset=dataset, random_seed=0),
    )
    run = tmp_path / "run"
    with _Holder(run):
        with pytest.raises(RunDirError, match="another promptevolver process"):
            optimizer.optimize(dataset=dataset, loss=BinaryMetricLoss(), run_dir=run)
        assert sorted(p.name for p in run.iterdir()) == [rundir.LOCK_FILE, rundir.OWNER_FILE]  # the holder's


# -- a job's report: the job's lock and each metric folder's, no link followed -----------------------


@pytest.fixture(scope="module")
def finished_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("user-files-job") / "job"
    config = Path(__file__).parents[2] / "configs" / "two_metrics.yaml"
    assert main(["optimize", str(config), "-o", str(run), "-q", "--set", "optimizer.generations=1"]) == 0
    return run


def _job_metric(run: Path) -> Path:
    names = list(rundir.read_json(run / rundir.RESULT_FILE)["metrics"])
    assert len(names) == 2
    return run / names[-1]


@pytest.mark.parametrize("held", ["job", "metric"])
def test_the_report_of_a_job_is_refused_while_another_process_writes_the_job_or_one_metric(
    tmp_path: Path, finished_job: Path, capsys: pytest.CaptureFixture[str], held: str
) -> None:
    """``report JOB`` rewrites every metric's report and the job's index: it holds the locks a
    running job holds, so it is refused, changing nothing, while the job or one metric's resume
    runs."""
    run = tmp_path / "job"
    shutil.copytree(finished_job, run)
    with _Holder(run if held == "job" else _job_metric(run)) as holder:
        before = _snapshot(run)
        assert main(["report", str(run), "-q"]) == 1
        line = _one_error_line(capsys.readouterr().err)
        assert f"pid {holder.proc.pid}" in line and "another promptevolver process" in line, line
        assert _snapshot(run) == before
    assert main(["report", str(run), "-q"]) == 0  # free again: written


@pytest.mark.parametrize("where", ["job", "metric"])
def test_the_report_of_a_job_writes_through_no_link(
    tmp_path: Path, finished_job: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    victim = tmp_path / "thesis.txt"
    victim.write_text("years of work\n")
    run = tmp_path / "job"
    shutil.copytree(finished_job, run)
    entry = run / rundir.INDEX_HTML if where == "job" else _job_metric(run) / rundir.REPORT_MD
    entry.unlink()
    entry.symlink_to(victim)
    before = _snapshot(run)
    assert main(["report", str(run), "-q"]) == 1
    assert f"{entry} is a symbolic link" in _one_error_line(capsys.readouterr().err)
    assert victim.read_text() == "years of work\n" and _snapshot(run) == before
