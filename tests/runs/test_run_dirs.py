"""Run directories are never clobbered: what a new run, a rerun, --force and --resume do to one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.config._models import load_run_config
from promptevolver.errors import CheckpointError, RunDirError
from promptevolver.runs._optimize import execute
from promptevolver.runs._resume import check_run_dir, check_same_search, resume_point

from ..conftest import AC_DEFINITION
from ..rundirs import AC_CONFIG, SYNTHETIC, interrupt_after


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def synthetic_config(tmp_path) -> Path:
    path = tmp_path / "synthetic.yaml"
    path.write_text(yaml.safe_dump(SYNTHETIC))
    return path


def _interrupted(tmp_path: Path, config_path: Path, after_calls: int) -> Path:
    directory = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        execute(load_run_config(config_path), directory, callbacks=[interrupt_after(after_calls)])
    return directory


# --- what a directory holds ----------------------------------------------------------------------


def test_run_status_of_new_interrupted_and_finished_directories(tmp_path, kept_seed):
    assert rundir.run_status(tmp_path / "missing") == "new"
    (tmp_path / "notes.txt").write_text("mine")
    assert rundir.run_status(tmp_path) == "new"  # other files are not a run
    (tmp_path / rundir.CONFIG_FILE).write_text("{}")
    (tmp_path / rundir.JOURNAL_FILE).write_text("")
    assert rundir.run_status(tmp_path) == "new"  # stopped before its first checkpoint: no call made
    (tmp_path / rundir.JOURNAL_FILE).write_text('{"key": "k", "op": "judge", "text": "{}"}\n')
    assert rundir.run_status(tmp_path) == "interrupted"
    (tmp_path / rundir.JOURNAL_FILE).unlink()
    (tmp_path / rundir.CHECKPOINT_FILE).write_text("{}")
    assert rundir.run_status(tmp_path) == "interrupted"
    assert rundir.run_status(kept_seed) == "finished"


def test_a_run_stopped_by_the_preflight_can_simply_be_run_again(tmp_path, capsys, monkeypatch):
    """Before: "holds an interrupted run; continue it with --resume", then --resume said
    "nothing to resume; start it again", and starting again was refused: a loop."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    closed = [
        "--set",
        "llm.provider=openai",
        "--set",
        "llm.model=m",
        "--set",
        "llm.base_url=http://127.0.0.1:9/v1",
    ]
    run = tmp_path / "pf"
    for _ in range(2):
        assert main(["optimize", str(AC_CONFIG), "-o", str(run), *closed]) == 1
        assert "cannot connect to http://127.0.0.1:9/v1" in _one_line(capsys.readouterr().err)
    assert main(["optimize", str(AC_CONFIG), "-o", str(run), "-q"]) == 0  # the simulated LLM
    assert rundir.run_status(run) == "finished"


def test_clear_run_removes_run_files_only(tmp_path, kept_seed):
    copy = tmp_path / "copy"
    shutil.copytree(kept_seed, copy)
    (copy / "notes.txt").write_text("mine")
    removed = rundir.clear_run(copy)
    assert {p.name for p in removed} >= {rundir.RESULT_FILE, rundir.CHECKPOINT_FILE, rundir.PLOTS_DIR}
    assert sorted(p.name for p in copy.iterdir()) == [rundir.OWNER_FILE, "notes.txt"]  # still ours


# --- a new run ------------------------------------------------------------------------------------


def test_rerunning_into_an_interrupted_run_says_so_and_points_to_resume(tmp_path, synthetic_config, capsys):
    directory = _interrupted(tmp_path, synthetic_config, 60)
    before = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
    assert main(["optimize", str(synthetic_config), "-o", str(directory)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "interrupted run" in line and f"promptevolver optimize --resume {directory}" in line
    assert "--force" in line
    assert {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()} == before


def test_rerunning_into_a_finished_run_is_refused_and_changes_nothing(tmp_path, kept_seed, capsys):
    copy = tmp_path / "finished"
    shutil.copytree(kept_seed, copy)
    before = (copy / rundir.RESULT_FILE).read_bytes()
    assert main(["optimize", str(AC_CONFIG), "-o", str(copy), "-q"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "finished run" in line and "--force" in line
    assert "cannot be extended (every operator plan" in line  # it stopped `exhausted`: for good
    assert (copy / rundir.RESULT_FILE).read_bytes() == before


def test_a_finished_search_that_may_go_on_is_offered_its_extension(tmp_path, synthetic_config, capsys):
    run = tmp_path / "search"
    assert main(["optimize", str(synthetic_config), "-o", str(run), "-q"]) == 0
    assert json.loads((run / rundir.RESULT_FILE).read_text())["stop_reason"] in ("generations", "patience")
    assert main(["optimize", str(synthetic_config), "-o", str(run), "-q"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert f"extend it with: promptevolver optimize --resume {run} --set optimizer.generations=N" in line


def test_a_finished_run_whose_stop_reason_holds_is_not_offered_an_extension(tmp_path, capsys):
    """The pipeline's run ends for good ("distilled": no search warranted); the refusal offered
    `--resume ... --set optimizer.generations=N`, which then only said to expect no generation."""
    run = tmp_path / "ac"
    assert main(["optimize", str(AC_CONFIG), "-o", str(run), "-q"]) == 0
    assert json.loads((run / rundir.RESULT_FILE).read_text())["stop_reason"] == "distilled"
    assert main(["optimize", str(AC_CONFIG), "-o", str(run), "-q"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "finished run" in line and "--force" in line and "cannot be extended" in line
    assert "--resume" not in line and "optimizer.strategy=genetic" in line


def test_force_starts_afresh_and_leaves_no_stale_file(tmp_path, kept_seed):
    copy = tmp_path / "forced"
    shutil.copytree(kept_seed, copy)
    (copy / rundir.RESULT_FILE).write_text('{"stale": true}')
    (copy / rundir.PLOTS_DIR / "stale.png").write_bytes(b"x")
    (copy / "notes.txt").write_text("mine")
    assert main(["optimize", str(AC_CONFIG), "-o", str(copy), "-q", "--force"]) == 0
    assert "stale" not in json.loads((copy / rundir.RESULT_FILE).read_text())
    assert not (copy / rundir.PLOTS_DIR / "stale.png").exists()
    assert (copy / "notes.txt").read_text() == "mine"


def test_force_does_not_go_with_resume(tmp_path, capsys):
    assert main(["optimize", "--resume", str(tmp_path), "--force"]) == 2
    assert "--force" in _one_line(capsys.readouterr().err)


# --- resuming -------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_config", [False, True])
def test_resuming_a_folder_that_is_no_run_says_so_and_writes_nothing(tmp_path, with_config, capsys):
    nope = tmp_path / "nope"
    argv = ["optimize", *([str(AC_CONFIG)] if with_config else []), "--resume", str(nope)]
    assert main(argv) == 1
    assert "not a run directory" in _one_line(capsys.readouterr().err)
    assert not nope.exists()


def test_check_run_dir_names_a_run_that_never_checkpointed(tmp_path):
    (tmp_path / rundir.CONFIG_FILE).write_text("{}")
    with pytest.raises(RunDirError, match="wrote no checkpoint.json"):
        check_run_dir(tmp_path, resume=True)


def test_resume_point_counts_what_will_not_be_asked_again(tmp_path, synthetic_config):
    directory = _interrupted(tmp_path, synthetic_config, 60)
    data = json.loads((directory / rundir.CHECKPOINT_FILE).read_text())
    lines = [json.loads(x) for x in (directory / rundir.JOURNAL_FILE).read_text().splitlines()]
    after = [x for x in lines[data["journal_entries"] :] if "text" in x]
    point = resume_point(directory)
    assert point.judgements == len(data["memo"]) and point.candidates == len(data["state"]["candidates"])
    assert point.journaled == len(after) > 0
    text = point.describe(generations=2)
    assert f"{len(after)} answers of the interrupted step replayed from journal.jsonl" in text
    assert "none of these LLM calls is made again" in text


def test_resume_prints_where_it_resumed_and_finishes_like_an_uninterrupted_run(
    tmp_path, synthetic_config, capsys
):
    directory = _interrupted(tmp_path, synthetic_config, 60)
    point = resume_point(directory)
    assert main(["optimize", "--resume", str(directory)]) == 0
    err = capsys.readouterr().err
    assert point.describe(generations=2) in err.splitlines()
    whole = tmp_path / "whole"
    assert main(["optimize", str(synthetic_config), "-o", str(whole), "-q"]) == 0
    resumed, fresh = (json.loads((d / rundir.RESULT_FILE).read_text()) for d in (directory, whole))
    assert resumed["best_instructions"] == fresh["best_instructions"]
    assert resumed["usage"]["llm_calls"] == fresh["usage"]["llm_calls"]
    for name, stage in fresh["stages"].items():  # the replayed answers count in their stage
        for figure in ("judge_calls", "meta_calls", "prompt_tokens", "completion_tokens"):
            assert resumed["stages"][name].get(figure) == stage.get(figure), (name, figure)


def test_a_resume_that_changes_the_search_is_refused_naming_files_and_values(tmp_path, kept_seed, capsys):
    copy = tmp_path / "resumed"
    shutil.copytree(kept_seed, copy)
    before = (copy / rundir.CONFIG_FILE).read_bytes()
    argv = ["optimize", "--resume", str(copy), "--set", "optimizer.population_size=9"]
    assert main(argv) == 1
    line = _one_line(capsys.readouterr().err)
    assert str(copy / rundir.CHECKPOINT_FILE) in line and str(copy / rundir.CONFIG_FILE) in line
    assert "population_size 6 -> 9" in line
    assert (copy / rundir.CONFIG_FILE).read_bytes() == before


def test_check_same_search_allows_the_resumable_changes(kept_seed):
    config = rundir.read_config(kept_seed)
    longer = config.model_copy(
        update={"optimizer": config.optimizer.model_copy(update={"generations": 9, "patience": 5})}
    )
    check_same_search(kept_seed, longer, source="x.yaml")
    other = config.model_copy(update={"optimizer": config.optimizer.model_copy(update={"elite_count": 2})})
    with pytest.raises(CheckpointError, match="x.yaml changes the search"):
        check_same_search(kept_seed, other, source="x.yaml")


def test_a_checkpoint_of_other_data_names_the_files_and_keeps_the_runs_config(tmp_path, kept_seed, capsys):
    copy = tmp_path / "other-data"
    shutil.copytree(kept_seed, copy)
    before = (copy / rundir.CONFIG_FILE).read_bytes()
    other = tmp_path / "other.yaml"
    raw = yaml.safe_load(before)
    raw["dataset"] = str((AC_CONFIG.parent / "../benchmarks/data/annotated_data.json").resolve())
    raw["metric_name"] = "helpfulness"
    other.write_text(yaml.safe_dump(raw))
    assert main(["optimize", str(other), "--resume", str(copy)]) == 1
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "another dataset or loss" in line and str(other) in line and "annotated_data.json" in line
    assert (copy / rundir.CONFIG_FILE).read_bytes() == before


def test_ctrl_c_points_to_resume_only_when_there_is_a_checkpoint(
    tmp_path, synthetic_config, monkeypatch, capsys
):
    from promptevolver.runs import _optimize as optimize

    def interrupted(config):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(optimize, "load_dataset", interrupted)
        assert main(["optimize", str(synthetic_config), "-o", str(tmp_path / "early"), "-q"]) == 130
    assert _one_line(capsys.readouterr().err).endswith(
        "before the run's first checkpoint in " + str(tmp_path / "early") + ": nothing to resume"
    )
    assert rundir.run_status(tmp_path / "early") == "new"  # a plain rerun starts it
    late = tmp_path / "late"
    with monkeypatch.context() as patch:
        patch.setattr(optimize, "GeneticOptimizer", _interrupting(optimize.GeneticOptimizer))
        assert main(["optimize", str(synthetic_config), "-o", str(late), "-q"]) == 130
    assert _one_line(capsys.readouterr().err).endswith(
        f"continue with: promptevolver optimize --resume {late}"
    )


def _interrupting(cls):
    def build(**kwargs):
        kwargs["callbacks"] = [*kwargs.get("callbacks", ()), interrupt_after(30)]
        return cls(**kwargs)

    return build


def test_extending_a_run_that_stopped_on_patience_says_patience_must_rise_too(tmp_path, capsys):
    run = tmp_path / "s200"
    config = AC_CONFIG.parent / "synthetic_200.yaml"
    short = ["--set", "optimizer.patience=1", "--set", "optimizer.generations=8", "--seed", "0"]
    short += ["--set", "optimizer.strategy=genetic"]  # the search's own stop rules
    assert main(["optimize", str(config), "-o", str(run), "-q", *short]) == 0
    first = json.loads((run / rundir.RESULT_FILE).read_text())
    assert first["stop_reason"] == "patience" and len(first["history"]) < 9
    capsys.readouterr()
    assert main(["optimize", "--resume", str(run), "--set", "optimizer.generations=10"]) == 0
    err = capsys.readouterr().err
    assert "patience still holds" in err and "--set optimizer.patience=" in err
    same = json.loads((run / rundir.RESULT_FILE).read_text())
    assert len(same["history"]) == len(first["history"])  # as the line said: no new generation
    extend = ["--set", "optimizer.generations=10", "--set", "optimizer.patience=3"]
    assert main(["optimize", "--resume", str(run), *extend]) == 0
    assert "still holds" not in capsys.readouterr().err
    longer = json.loads((run / rundir.RESULT_FILE).read_text())
    assert len(longer["history"]) > len(first["history"])


def test_extending_an_exhausted_search_says_no_generation_will_come(tmp_path, capsys):
    run = tmp_path / "ac"
    genetic = ["--set", "optimizer.strategy=genetic"]
    assert main(["optimize", str(AC_CONFIG), "-o", str(run), "-q", "--seed", "42", *genetic]) == 0
    assert json.loads((run / rundir.CHECKPOINT_FILE).read_text())["state"]["exhausted"]
    capsys.readouterr()
    extend = ["--set", "optimizer.generations=6", "--set", "optimizer.patience=4"]
    assert main(["optimize", "--resume", str(run), *extend]) == 0
    assert "every operator plan the population allows had been tried" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("generation", "stages", "stop", "said", "not_said"),
    [
        (0, ("distill",), None, "after the pipeline's distillation", "generation 0"),
        (0, ("distill", "verify"), None, "after the pipeline's distillation, verification", "generation"),
        (0, (), None, "after the initial population, generation 0 of 4", "pipeline"),
        (2, ("distill", "verify", "search"), None, "after generation 2 of 4", "pipeline"),
        (0, ("distill", "verify"), "distilled", "stopped after the pipeline's distillation", "generation 0"),
        (3, (), "generations", "it stopped after generation 3", "pipeline"),
    ],
)
def test_the_resume_line_says_where_the_run_stopped_in_the_pipeline_or_the_search(
    generation, stages, stop, said, not_said
):
    """A run interrupted in verification was said to resume 'after the initial population,
    generation 0 of 4' (a newcomer's report): the line names the pipeline's stages done."""
    from promptevolver.runs._resume import ResumePoint

    point = ResumePoint(Path("runs/x"), generation, 5, 10, 0, stop, stages=stages)
    text = point.describe(generations=4)
    assert said in text and not_said not in text


def test_a_resume_before_anything_was_checkpointed_names_no_population():
    """Interrupted before its first step finished (under strategy auto: the distillation) a run
    was said to resume because "the initial population had not finished" (a newcomer's report)."""
    from promptevolver.runs._resume import ResumePoint

    text = ResumePoint(Path("runs/x"), 0, 0, 0, 6, None).describe(generations=4)
    assert "from its start (its first step, the distillation or a search's initial population" in text
    assert "the initial population had not finished" not in text


PIPELINE = {
    "dataset": {"synthetic": {"n_samples": 120, "random_seed": 0}},
    "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
    "random_seed": 0,
}


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("pipeline")
    config = base / "pipeline.yaml"
    config.write_text(yaml.safe_dump(PIPELINE))
    whole = base / "whole"
    assert main(["optimize", str(config), "-o", str(whole), "-q"]) == 0
    return config, json.loads((whole / rundir.RESULT_FILE).read_text())


@pytest.mark.parametrize("stage", ["distill", "verify", "examples", "cross_fit"])
def test_a_resumed_pipeline_counts_each_stages_calls_as_an_uninterrupted_run(tmp_path, pipeline_run, stage):
    """Interrupted halfway through each stage: the interrupted step's answers are replayed from
    the journal, not sent again, and still count in the stage that made them (a newcomer found
    verify at 102 judge calls after a resume, 128 without one)."""
    config, fresh = pipeline_run
    order = list(fresh["stages"])
    figures = [fresh["stages"][s] for s in order]
    calls = [f.get("judge_calls", 0) + f.get("meta_calls", 0) for f in figures]
    start = sum(calls[: order.index(stage)])
    assert calls[order.index(stage)] >= 2, f"the fixture's run made no calls in {stage}"
    directory = _interrupted(tmp_path, config, start + calls[order.index(stage)] // 2)
    assert main(["optimize", "--resume", str(directory), "-q"]) == 0
    resumed = json.loads((directory / rundir.RESULT_FILE).read_text())
    assert resumed["usage"]["llm_calls"] == fresh["usage"]["llm_calls"]
    for name, stage in fresh["stages"].items():
        for figure in ("judge_calls", "meta_calls", "prompt_tokens", "completion_tokens"):
            assert resumed["stages"][name].get(figure) == stage.get(figure), (name, figure)
