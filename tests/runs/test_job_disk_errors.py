"""Issue 31, item 5 (and the names of item 1): one metric's disk error does not abort a job of
several; a metric name that is one of the run directory's own files, or would become code, is
refused when the config is read, before any call."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.report import _write as report_writer

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
TWO = DATA / "two_metrics.json"
DEFINITIONS = {
    "answer_correctness": "Given the user_input, reference and response. Is the response correct "
    "compared with the reference",
    "helpfulness": "Is the response helpful to the user, addressing what they asked for?",
}


def _job(tmp_path: Path, metrics: dict[str, Any] | None = None) -> Path:
    body = {
        "dataset": str(TWO),
        "metrics": metrics or {n: {"type": "aspect_critic", "definition": d} for n, d in DEFINITIONS.items()},
        "llm": {"provider": "fake"},
        "optimizer": {"population_size": 4, "generations": 1},
        "random_seed": 3,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


@pytest.mark.parametrize("when", ["checkpoint", "report"])
def test_a_full_disk_in_one_metrics_folder_fails_that_metric_only_and_the_job_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], when: str
) -> None:
    """ENOSPC in helpfulness/ (while checkpointing, or writing its report at the end): the
    other metric's result.json and report are written, the job's result.json names the failed
    metric with the file and the resume; the resume finishes it."""
    job = tmp_path / "job"
    real = rundir.write_atomic
    target = rundir.CHECKPOINT_FILE if when == "checkpoint" else rundir.REPORT_MD
    hits: list[Path] = []

    def full_disk(path: str | Path, data: str | bytes) -> Path:
        p = Path(path)
        if p.parent.name == "helpfulness" and p.name == target and not hits:
            hits.append(p)
            raise OSError(errno.ENOSPC, "No space left on device", str(p))  # as write_atomic says it
        return real(path, data)

    monkeypatch.setattr(rundir, "write_atomic", full_disk)
    monkeypatch.setattr(report_writer, "write_atomic", full_disk)
    assert main(["optimize", str(_job(tmp_path)), "-o", str(job), "-q"]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    assert f"No space left on device while writing {job / 'helpfulness' / target}" in err
    assert "--resume" in err
    assert (job / "answer_correctness" / rundir.RESULT_FILE).is_file()
    assert (job / "answer_correctness" / rundir.REPORT_MD).is_file()
    top = json.loads((job / rundir.RESULT_FILE).read_text())
    assert top["failed"] == ["helpfulness"] and "No space left" in top["metrics"]["helpfulness"]["reason"]
    assert hits
    assert main(["optimize", "--resume", str(job), "-q"]) == 0
    assert (job / "helpfulness" / rundir.RESULT_FILE).is_file()


def test_a_full_disk_writing_the_jobs_own_files_is_one_line_with_the_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job"
    real = rundir.write_atomic

    def full_disk(path: str | Path, data: str | bytes) -> Path:
        if Path(path) == job / rundir.INDEX_HTML:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, data)

    monkeypatch.setattr(rundir, "write_atomic", full_disk)
    assert main(["optimize", str(_job(tmp_path)), "-o", str(job), "-q"]) == 1
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and f"while writing {job / rundir.INDEX_HTML}" in line
    assert f"promptevolver optimize --resume {job}" in line


@pytest.mark.parametrize(
    "name",
    [*rundir.RUN_FILES, rundir.LOCK_FILE, rundir.OWNER_FILE, "RESULT.JSON", "Index.Html"],
)
def test_a_metric_named_like_a_file_of_the_run_directory_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    metrics = {name: {"type": "aspect_critic", "definition": "Is it correct?"}}
    assert main(["optimize", str(_job(tmp_path, metrics)), "-o", str(tmp_path / "job"), "-q"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and repr(name) in err
    assert not (tmp_path / "job").exists()


@pytest.mark.parametrize(
    "name",
    [
        'x"""\nimport os; os.system("touch pwned")\n"""',
        "<script>alert(1)</script>",
        "a b",
        "../escape",
        "new\nline",
    ],
)
def test_a_metric_name_that_would_become_code_or_markup_is_refused_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "dataset": {"synthetic": {"n_samples": 40, "random_seed": 0}},
                "metric": {"name": name, "definition": "Is it correct?"},
            }
        )
    )
    assert main(["optimize", str(config), "-o", str(tmp_path / "run"), "-q"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "metric.name" in err and "a metric's name is also a folder's name" in err
    assert not (tmp_path / "run").exists() and not Path("pwned").exists()
