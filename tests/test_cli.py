"""The command line: every command's success and error paths, exit codes, one-line errors,
--quiet/--verbose/--debug, --set overrides and --version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import promptevolver
from promptevolver import cli
from promptevolver.cli import main

from .conftest import AC_DEFINITION, ROOT

AC_CONFIG = ROOT / "configs" / "answer_correctness.yaml"
COMMANDS = ("optimize", "evaluate", "estimate", "report", "bench", "examples")
ESTIMATE_KEYS = {"judge_calls", "meta_calls", "total_calls", "prompt_tokens", "completion_tokens", "cost_usd"}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("cli") / "ac"
    assert main(["optimize", str(AC_CONFIG), "--output", str(directory), "-q"]) == 0
    return directory


def _config(tmp_path: Path, **changes) -> Path:
    raw = yaml.safe_load(AC_CONFIG.read_text())
    raw["dataset"] = str((AC_CONFIG.parent / raw["dataset"]).resolve())
    raw.update(changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- conventions --------------------------------------------------------------------------------


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"promptevolver {promptevolver.__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_examples(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "examples:" in out and f"promptevolver {command}" in out
    assert "--quiet" in out and "--verbose" in out and "--debug" in out


def test_top_level_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(command in out for command in COMMANDS)


@pytest.mark.parametrize(
    "argv",
    [[], ["frobnicate"], ["optimize", "--bogus-flag"], ["estimate"], ["evaluate", "x.yaml"], ["report"]],
)
def test_malformed_command_lines_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "error:" in line and "--help" in line


def test_quiet_and_verbose_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["estimate", str(AC_CONFIG), "-q", "-v"])
    assert exc.value.code == 2


def test_an_unexpected_error_is_one_line_unless_debug(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("something broke")

    monkeypatch.setitem(cli._COMMANDS, "estimate", broken)
    assert main(["estimate", str(AC_CONFIG)]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "internal error: RuntimeError: something broke" in line and "--debug" in line
    with pytest.raises(RuntimeError, match="something broke"):
        main(["estimate", str(AC_CONFIG), "--debug"])


def test_debug_shows_the_traceback_of_our_errors(tmp_path):
    with pytest.raises(promptevolver.ConfigError, match="config file not found"):
        main(["estimate", str(tmp_path / "missing.yaml"), "--debug"])


# --- optimize ----------------------------------------------------------------------------------------


def test_optimize_prints_the_outcome_and_where_the_report_is(tmp_path, capsys):
    out_dir = tmp_path / "run"
    assert main(["optimize", str(AC_CONFIG), "-o", str(out_dir), "--set", "optimizer.generations=1"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].startswith("answer_correctness: accuracy seed train")
    assert f"report: {out_dir / 'report.html'}" in captured.out
    assert str(out_dir / "apply_best.py") in captured.out
    assert "\r" not in captured.err  # no progress bar: stderr is not a terminal
    # plain lines instead: the first as the first phase starts, before anything answered
    assert "distillation (meta calls only): started, waiting for the first answer; 0 of ~" in captured.err
    assert json.loads((out_dir / "result.json").read_text())["config"]["generations"] == 1


def test_optimize_verbose_prints_each_generation_and_quiet_one_line(tmp_path, capsys):
    assert (
        main(
            ["optimize", str(AC_CONFIG), "-o", str(tmp_path / "v"), "-v", "--set", "optimizer.generations=1"]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "distillation done:" in err and "verification done:" in err  # the default pipeline's stages
    assert (
        main(
            ["optimize", str(AC_CONFIG), "-o", str(tmp_path / "q"), "-q", "--set", "optimizer.generations=1"]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 1 and captured.err == ""


def test_optimize_without_a_config_is_a_usage_error(capsys):
    assert main(["optimize", "-o", "somewhere"]) == 2
    assert "--resume" in _one_error_line(capsys.readouterr().err)


def test_set_values_are_yaml_typed(tmp_path):
    out_dir = tmp_path / "run"
    argv = ["optimize", str(AC_CONFIG), "-o", str(out_dir), "-q"]
    argv += ["--set", "optimizer.reverse_engineer=false", "--set", "optimizer.generations=0"]
    argv += ["--set", "llm.noise=0.0", "--set", "seeds=[1, 2]", "--set", "optimizer.strategy=genetic"]
    assert main(argv) == 0
    config = yaml.safe_load((out_dir / "config.yaml").read_text())
    assert config["optimizer"]["reverse_engineer"] is False and config["optimizer"]["generations"] == 0
    assert config["llm"]["noise"] == 0.0 and config["seeds"] == [1, 2]
    result = json.loads((out_dir / "result.json").read_text())
    assert result["usage"]["llm_calls"]["meta"] == 0  # no reverse engineering, no generations


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("optimizer.generationz=5", "'generationz' in optimizer; did you mean 'generations'?"),
        ("optimiser.generations=5", "'optimiser' in the config; did you mean 'optimizer'?"),
        (
            "optimizer.random_seed=5",
            "random_seed: set it at the top level (random_seed), not under optimizer",
        ),
        ("optimizer.budget={max_calls: 9}", "budget: set it at the top level (budget), not under optimizer"),
        (
            "optimizer.max_concurrency=2",
            "max_concurrency: set it as llm.max_concurrency, not under optimizer",
        ),
        ("optimizer.generations.x=5", "optimizer.generations has no sub-keys"),
        ("optimizer.generations", "KEY.PATH=VALUE"),
        ("optimizer.generations=[", "not valid YAML"),
    ],
)
def test_bad_set_is_a_usage_error_naming_the_key(override, named, capsys):
    assert main(["estimate", str(AC_CONFIG), "--set", override]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert named in line


def test_the_key_list_offers_only_keys_the_config_takes_there(capsys):
    """optimizer's list offered random_seed, budget and max_concurrency, then refused them."""
    assert main(["estimate", str(AC_CONFIG), "--set", "optimizer.zzz=5"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    offered = line.split("keys: ", 1)[1]
    assert "'generations'" in offered and "did you mean" not in line
    assert not any(f"'{k}'" in offered for k in ("random_seed", "budget", "max_concurrency"))


def test_set_value_out_of_range_fails_naming_the_key_path(capsys):
    assert main(["estimate", str(AC_CONFIG), "--set", "optimizer.generations=-1"]) == 1
    assert "optimizer.generations" in _one_error_line(capsys.readouterr().err)


def test_set_reaches_nested_and_free_form_keys(capsys):
    argv = ["estimate", str(AC_CONFIG), "--json", "--set", "dataset={synthetic: {n_samples: 60}}"]
    argv += ["--set", "llm.prices.fake={prompt: 1.0, completion: 2.0}"]
    assert main(argv) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["usable"] == 60 and e["cost_usd"] > 0  # train: the 48 judged (max_train_samples)


def test_resume_of_a_directory_that_is_not_a_run_says_so(tmp_path, capsys):
    assert main(["optimize", "--resume", str(tmp_path / "nope")]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert line == f"promptevolver: error: {tmp_path / 'nope'}: not a run directory (no config.yaml in it)"


def test_the_outcome_line_says_na_for_a_score_not_measured(capsys):
    from promptevolver.optimizers._result import OptimizationResult

    result = OptimizationResult(
        metric="m",
        seed_instructions={"p": "a"},
        best_instructions={"p": "a"},
        loss={"name": "BinaryMetricLoss", "metric": "accuracy"},
        scores={"seed": {"train": 0.5, "validation": None}, "best": {"train": None, "validation": None}},
        history=[],
        usage={"llm_calls": {"judge": 3, "meta": 0}},
        lineage=[],
        best_id=0,
        stop_reason="generations",
        split={},
        operator_stats={},
        config={},
        random_seed=0,
        duration_s=0.0,
    )
    cli._print_outcome(result, Path("runs/x"), quiet=True)
    assert capsys.readouterr().out.strip() == (
        "m: accuracy seed train 0.500 validation n/a | best train n/a validation n/a | "
        "LLM calls: 3 judge + 0 meta = 3"
    )


def test_resume_accepts_a_longer_run(run, tmp_path):
    copy = tmp_path / "resumed"
    shutil.copytree(run, copy)
    assert main(["optimize", "--resume", str(copy), "-q", "--set", "optimizer.generations=6"]) == 0
    assert yaml.safe_load((copy / "config.yaml").read_text())["optimizer"]["generations"] == 6


# --- evaluate ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def held_out_run(tmp_path_factory) -> Path:
    """The bundled run in the held-out regime (no refit: a validation part is set aside)."""
    directory = tmp_path_factory.mktemp("cli") / "ac"
    args = ["optimize", str(AC_CONFIG), "--output", str(directory), "-q"]
    assert main([*args, "--set", "optimizer.refit_below=0", "--set", "optimizer.small_data=0"]) == 0
    return directory


def test_evaluate_on_the_validation_split_reproduces_the_runs_score(held_out_run, capsys):
    run = held_out_run
    assert (
        main(["evaluate", str(AC_CONFIG), "-i", str(run / "result.json"), "--split", "validation", "--json"])
        == 0
    )
    card = json.loads(capsys.readouterr().out)
    result = json.loads((run / "result.json").read_text())
    assert card["split"] == "validation" and card["n"] == result["split"]["validation"]
    assert card["accuracy"] == pytest.approx(result["scores"]["best"]["validation"])
    assert {"f1", "cohen_kappa", "confusion", "judge_calls"} <= set(card)


def test_evaluate_prints_the_figures_for_all_samples(run, capsys):
    argv = ["evaluate", str(AC_CONFIG), "-i", str(run / "best_instructions.json"), "--split", "all"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "on all usable samples (18)" in out
    assert (
        "accuracy" in out and "Cohen's kappa" in out and "confusion" in out and "LLM calls: 18 judge" in out
    )


def test_evaluate_takes_a_plain_mapping_and_quiet_prints_one_line(tmp_path, capsys):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"single_turn_aspect_critic_prompt": f"Judge strictly. {AC_DEFINITION}"}))
    assert main(["evaluate", str(AC_CONFIG), "-i", str(path), "-q"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("accuracy ")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "not found"),
        ("not json", "not valid JSON"),
        (json.dumps({"no_such_prompt": "x"}), "unknown prompt(s) ['no_such_prompt']"),
    ],
)
def test_evaluate_bad_instructions_fail_with_one_line(tmp_path, capsys, content, expected):
    path = tmp_path / "instructions.json"
    if content is not None:
        path.write_text(content)
    assert main(["evaluate", str(AC_CONFIG), "-i", str(path)]) == 1
    assert expected in _one_error_line(capsys.readouterr().err)


def test_evaluate_validation_needs_a_run(tmp_path, capsys):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"single_turn_aspect_critic_prompt": "Judge."}))
    assert main(["evaluate", str(AC_CONFIG), "-i", str(path), "--split", "validation"]) == 2
    assert "--run DIR" in _one_error_line(capsys.readouterr().err)


# --- estimate ----------------------------------------------------------------------------------------


def test_estimate_json_is_one_object_with_the_documented_keys(capsys):
    assert main(["estimate", str(AC_CONFIG), "--json"]) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1
    e = json.loads(out)
    assert set(e) >= ESTIMATE_KEYS and e["total_calls"] == e["judge_calls"] + e["meta_calls"]


def test_estimate_explains_itself_and_verbose_adds_phases(capsys):
    assert main(["estimate", str(AC_CONFIG)]) == 0
    out = capsys.readouterr().out
    assert "no LLM called" in out and "expected LLM calls" in out and "(simulated LLM)" in out
    assert main(["estimate", str(AC_CONFIG), "-v"]) == 0
    assert "distill:" in capsys.readouterr().out
    assert main(["estimate", str(AC_CONFIG), "-v", "--set", "optimizer.strategy=genetic"]) == 0
    assert "initial:" in capsys.readouterr().out


def test_estimate_of_a_real_model_without_prices_says_the_cost_is_unknown(tmp_path, capsys):
    config = _config(tmp_path, llm={"provider": "openai", "model": "my-local-model"})
    assert main(["estimate", str(config), "-q"]) == 0
    out = capsys.readouterr().out
    assert "cost: unknown (no price for 'my-local-model' in llm.prices or the price table" in out


def test_estimate_errors_exit_1(tmp_path, capsys):
    assert main(["estimate", str(tmp_path / "missing.yaml")]) == 1
    assert "config file not found" in _one_error_line(capsys.readouterr().err)
    config = _config(tmp_path, budget={"max_calls": 5})
    assert main(["estimate", str(config)]) == 1
    assert "budget.max_calls=5 is too small" in _one_error_line(capsys.readouterr().err)


@pytest.mark.filterwarnings("ignore:.*have no human label")  # the bundled files' unusable samples
@pytest.mark.parametrize("command", ["estimate", "optimize"])
@pytest.mark.parametrize(
    "config_name", ["answer_correctness", "helpfulness_rubric", "faithfulness_statements"]
)
def test_a_usable_sample_missing_a_field_the_judge_shows_fails_at_load(
    tmp_path, capsys, command, config_name
):
    """Every judge kind, estimate and optimize alike: one line naming the file, sample and field,
    before any LLM call and before a run directory exists (``estimate`` used to count the sample
    as usable and exit 0)."""
    from promptevolver import SingleMetricAnnotation

    source = ROOT / "configs" / f"{config_name}.yaml"
    raw = yaml.safe_load(source.read_text())
    data_path = (source.parent / raw["dataset"]).resolve()
    name = raw.get("metric_name") or raw["metric"]["name"]
    dataset = SingleMetricAnnotation.from_json(data_path, metric_name=name)
    position = dataset.usable_indices()[1]
    data = json.loads(data_path.read_text())
    entry = data[name]
    samples = entry["samples"] if isinstance(entry, dict) else entry
    samples[position]["metric_input"].pop("response")
    (tmp_path / "data.json").write_text(json.dumps(data))
    raw["dataset"] = str(tmp_path / "data.json")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    argv = [command, str(config)] + (["--output", str(out)] if command == "optimize" else [])
    assert main(argv) == 1
    err = capsys.readouterr().err
    errors = [x for x in err.splitlines() if not x.startswith("promptevolver: warning:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    line = errors[0]
    assert f"sample {position}" in line and "field 'metric_input.response'" in line and "data.json" in line
    assert "(it has 'user_input'" in line  # what the sample holds instead: a renamed column shows
    assert not out.exists()


# --- report and bench --------------------------------------------------------------------------------


def test_report_regenerates_the_files(run, capsys):
    (run / "report.html").unlink()
    (run / "report.md").unlink()
    assert main(["report", str(run)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(run / "report.html")
    assert (run / "report.html").is_file() and (run / "report.md").is_file()
    assert "report.md" in captured.err


@pytest.fixture
def moved_run(tmp_path) -> Path:
    """A finished run whose config.yaml names its annotations relative to it (both in one tree),
    then moved one folder deeper: the relative path no longer reaches them."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(AC_CONFIG.parent / yaml.safe_load(AC_CONFIG.read_text())["dataset"], project / "data.json")
    raw = yaml.safe_load(AC_CONFIG.read_text())
    raw["dataset"] = "data.json"
    (project / "config.yaml").write_text(yaml.safe_dump(raw))
    run = project / "runs" / "ac"
    assert main(["optimize", str(project / "config.yaml"), "--output", str(run), "-q"]) == 0
    assert not Path(yaml.safe_load((run / "config.yaml").read_text())["dataset"]).is_absolute()
    moved = project / "runs" / "deeper" / "ac"
    shutil.copytree(run, moved)
    return moved


def test_report_of_a_run_whose_annotations_cannot_be_loaded_leaves_its_files_as_they_were(moved_run, capsys):
    """Rebuilt without its annotations a report would lose every per-sample result (samples.jsonl
    emptied): refused, in one line naming why and where the path comes from; nothing rewritten."""
    kept = {n: (moved_run / n).read_bytes() for n in ("report.md", "report.html", "samples.jsonl")}
    assert kept["samples.jsonl"].count(b"\n") == 18
    assert main(["report", str(moved_run)]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "report is not rebuilt" in line and "file not found" in line
    assert f"the `dataset` in {moved_run / 'config.yaml'}" in line and "left as they were" in line
    assert {n: (moved_run / n).read_bytes() for n in kept} == kept


def test_resuming_a_run_whose_annotations_are_not_found_names_the_key(moved_run, capsys):
    args = ["optimize", "--resume", str(moved_run), "--set", "optimizer.generations=8"]
    assert main(args) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "file not found" in line
    assert f"the `dataset` in {moved_run / 'config.yaml'}" in line
    assert "a relative path there is its folder's" in line


def test_a_config_whose_annotations_are_not_found_names_the_file_and_key(tmp_path, capsys):
    config = _config(tmp_path, dataset="nowhere.json")
    assert main(["optimize", str(config), "--output", str(tmp_path / "out")]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert f"file {tmp_path / 'nowhere.json'}: file not found (the `dataset` in {config};" in line
    assert not (tmp_path / "out").exists()


def test_report_of_a_directory_without_a_run_fails_with_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 1
    assert "not a run directory (no result.json in it)" in _one_error_line(capsys.readouterr().err)


def test_bench_runs_a_config_and_prints_the_summary(tmp_path, capsys):
    config = _config(tmp_path, seeds=[0], optimizer={"population_size": 3, "generations": 1})
    assert main(["bench", str(config), "-o", str(tmp_path / "bench"), "-q"]) == 0
    assert "| config |" in capsys.readouterr().out
    assert (tmp_path / "bench" / "summary.json").is_file()


def test_bench_with_a_missing_config_fails(tmp_path, capsys):
    assert main(["bench", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "b")]) == 1
    assert "config file not found" in _one_error_line(capsys.readouterr().err)


def test_bench_takes_set_overrides(tmp_path, capsys):
    config = ROOT / "configs" / "answer_correctness.yaml"
    code = main(
        [
            "bench",
            str(config),
            "-o",
            str(tmp_path / "b"),
            "-q",
            "--set",
            "seeds=[3]",
            "--set",
            "optimizer.population_size=1",
            "--set",
            "optimizer.strategy=genetic",
        ]
    )
    assert code == 0
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    (row,) = summary["configs"]
    assert row["seeds"] == [3] and row["stop_reasons"] == ["population_size_1"]
    assert row["meta_calls"]["mean"] == 0
    assert main(["bench", str(config), "-o", str(tmp_path / "c"), "--set", "optimizer.populaton_size=1"]) == 2
    assert "populaton_size" in capsys.readouterr().err


@pytest.mark.parametrize("files", [(), ("checkpoint",), ("checkpoint", "best_so_far")])
def test_the_interrupt_line_names_only_the_files_the_run_directory_holds(tmp_path, files):
    """After Ctrl-C the line says what is there: a run stopped before its first generation has a
    checkpoint and no best_so_far.json (a newcomer's resume found the line naming a missing file)."""
    from promptevolver import rundir

    names = {"checkpoint": rundir.CHECKPOINT_FILE, "best_so_far": rundir.BEST_SO_FAR_FILE}
    for f in files:
        (tmp_path / names[f]).write_text("{}")
    line = cli._interrupted(tmp_path)
    for key, name in names.items():
        assert (name in line) == (key in files), line
    assert ("--resume" in line) == bool(files)


def test_evaluate_on_a_refit_scores_every_sample_and_says_it_is_in_sample(run, capsys):
    """Small data: the chosen judge was refit on every annotation, so no sample is held out from it:
    evaluate scores all of them and says the figure is in-sample, naming the run's cross-validated
    one; --split validation is refused with that reason."""
    result = json.loads((run / "result.json").read_text())
    assert result["final_choice"]["regime"] == "cross-validated" and result["best_id"] != 0
    assert main(["evaluate", str(AC_CONFIG), "-i", str(run), "--json"]) == 0
    out = capsys.readouterr()
    card = json.loads(out.out)
    assert "warning" in out.err and "in-sample" in out.err and "cross-validated" in out.err
    assert card["split"] == "all" and card["n"] == result["split"]["train"]
    figure = f"{result['scores']['best']['cross_validated']:.3f}"
    assert main(["evaluate", str(AC_CONFIG), "-i", str(run), "--split", "validation"]) == 2
    err = capsys.readouterr().err
    assert "refit on every annotation" in err and figure in err and "--split all" in err


def test_other_instructions_against_a_refit_s_run_are_scored_on_every_sample_saying_why(
    run, tmp_path, capsys
):
    """Its seed instruction, asked on the validation split of a refit's run: nothing was held out
    (the result was refit on every annotation), so every sample is scored, and the warning says
    that — never that the run kept its seed (a newcomer read that of a run whose refit was chosen)."""
    result = json.loads((run / "result.json").read_text())
    assert result["best_id"] != 0
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps(result["seed_instructions"]))
    argv = ["evaluate", str(AC_CONFIG), "-i", str(seed), "--split", "validation", "--run", str(run), "--json"]
    main(argv)
    err = capsys.readouterr().err
    assert "holds no sample out" in err and "refit on every one" in err and "seed kept" not in err
