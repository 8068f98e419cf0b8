"""``promptevolver export RUN --to promptfoo|deepeval|json``: the judge the run chose, its instruction as
is AND its teaching examples, in each target's own shape; a simulated run says it is a dry run."""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path

import pytest
import yaml

from promptevolver.cli import main
from promptevolver.rundir import read_chosen_judge

from ..conftest import AC_DEFINITION
from ..rundirs import optimize_into, result_of


def _kept(base: Path, policy: str) -> Path:
    """A run of the 24-sample synthetic set that kept teaching examples of ``policy``."""
    for seed in range(2, 8):
        config = {
            "dataset": {"synthetic": {"n_samples": 24, "random_seed": seed}},
            "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
            "optimizer": {"strategy": "examples", "examples": {"policy": policy}},
            "random_seed": seed,
        }
        run = optimize_into(base / f"{policy}-{seed}", config)
        if result_of(run)["examples"]["policy"] == policy:
            return run
    pytest.fail(f"no seed kept policy {policy}")


@pytest.fixture(scope="module")
def static_run(tmp_path_factory) -> Path:
    return _kept(tmp_path_factory.mktemp("export"), "static")


@pytest.fixture(scope="module")
def retrieval_run(tmp_path_factory) -> Path:
    return _kept(tmp_path_factory.mktemp("export"), "retrieval")


def _export(capsys, run: Path, *args: str) -> tuple[str, str]:
    assert main(["export", str(run), *args]) == 0
    out = capsys.readouterr()
    return out.out, out.err


def _shown(run: Path) -> list[dict]:
    """The static examples as the run's store holds them: (user_input, human label) in order."""
    store = result_of(run)["examples"]["store"]
    return [store["samples"][i] for i in store["static"]]


def test_promptfoo_gets_an_llm_rubric_holding_the_instruction_as_is_and_the_examples(static_run, capsys):
    out, err = _export(capsys, static_run, "--to", "promptfoo")
    config = yaml.safe_load(out)
    (assertion,) = config["defaultTest"]["assert"]
    assert assertion["type"] == "llm-rubric"
    rubric = assertion["value"]
    (instruction,) = result_of(static_run)["best_instructions"].values()
    assert rubric.startswith(instruction.strip() + "\n\n")
    assert "user_input: {{user_input}}" in rubric and "{{response}}" not in rubric  # the graded output
    for sample in _shown(static_run):
        assert f"user_input: {sample['metric_input']['user_input']}" in rubric
    assert "provider" not in assertion  # the simulated LLM is no provider
    assert out.startswith("# The answer_correctness judge chosen by promptevolver run")
    assert "# DRY RUN: chosen on the simulated LLM" in out
    assert "DRY RUN" in err


def test_deepeval_gets_a_geval_metric_with_the_instruction_and_examples_as_criteria(
    static_run, capsys, monkeypatch
):
    out, _ = _export(capsys, static_run, "--to", "deepeval")
    made: dict = {}
    metrics = types.ModuleType("deepeval.metrics")
    metrics.GEval = lambda **kwargs: made.update(kwargs) or "metric"  # type: ignore[attr-defined]
    cases = types.ModuleType("deepeval.test_case")
    cases.LLMTestCaseParams = types.SimpleNamespace(  # type: ignore[attr-defined]
        INPUT="input", ACTUAL_OUTPUT="actual_output", EXPECTED_OUTPUT="expected_output"
    )
    for name, module in (("deepeval", types.ModuleType("deepeval")), ("deepeval.metrics", metrics)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, "deepeval.test_case", cases)
    namespace: dict = {}
    exec(compile(out, "ac_judge.py", "exec"), namespace)
    assert namespace["answer_correctness"] == "metric"
    (instruction,) = result_of(static_run)["best_instructions"].values()
    assert made["name"] == "answer_correctness"
    assert made["criteria"].startswith(instruction.strip())
    assert all(s["metric_input"]["user_input"] in made["criteria"] for s in _shown(static_run))
    assert made["evaluation_params"] == ["input", "actual_output", "expected_output"]
    assert made["strict_mode"] is True
    assert "model" not in made  # verified on the simulated LLM: no model to name
    assert "DRY RUN" in ast.get_docstring(ast.parse(out))


def test_json_is_the_chosen_judge_record_with_its_examples_as_shown(static_run, tmp_path, capsys):
    path = tmp_path / "judge.json"
    out, _ = _export(capsys, static_run, "--to", "json", "-o", str(path))
    assert out == f"wrote the answer_correctness judge for json to {path}\n"
    data = json.loads(path.read_text())
    assert read_chosen_judge(path) == read_chosen_judge(static_run)  # the same record, read back
    assert data["instructions"] == result_of(static_run)["best_instructions"]
    assert [e["inputs"]["user_input"] for e in data["shown_examples"]] == [
        s["metric_input"]["user_input"] for s in _shown(static_run)
    ]
    assert data["figures"]["validation"] == result_of(static_run)["scores"]["best"]["validation"]
    # the simulator that verified it, with its seed: evaluate of the export asks the same one
    assert data["model"] == {
        "provider": "simulated",
        "model": None,
        "random_seed": result_of(static_run)["config"]["random_seed"],
    }
    assert data["dry_run"].startswith("dry run")


@pytest.mark.parametrize("target", ["promptfoo", "deepeval"])
def test_examples_retrieved_per_input_are_refused_by_a_static_rubric(retrieval_run, target, capsys):
    assert main(["export", str(retrieval_run), "--to", target]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "retrieves its 3 teaching examples per input" in line and "--to json or --to mlflow" in line


def test_json_carries_a_retrieval_judges_pool(retrieval_run, capsys):
    out, _ = _export(capsys, retrieval_run, "--to", "json")
    data = json.loads(out)
    assert len(data["shown_examples"]) == len(data["examples"]["store"]["samples"]) > 3
    assert data["shown_examples_note"].startswith("retrieval: per input, the 3 most similar")


def test_an_existing_output_is_never_replaced_without_force(static_run, tmp_path, capsys):
    path = tmp_path / "judge.yaml"
    path.write_text("mine")
    assert main(["export", str(static_run), "--to", "promptfoo", "-o", str(path)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert path.read_text() == "mine"


def test_options_of_another_target_are_a_usage_error(static_run, tmp_path, capsys):
    assert main(["export", str(static_run), "--to", "json", "--prompt-name", "x"]) == 2
    assert main(["export", str(static_run), "--to", "mlflow", "-o", str(tmp_path / "x")]) == 2
    assert main(["export", str(tmp_path), "--to", "json"]) == 1  # not a run directory
    err = capsys.readouterr().err
    assert "--prompt-name: for --to mlflow only" in err and "no result.json" in err


@pytest.mark.parametrize("to", ["promptfoo", "deepeval"])
def test_every_export_names_the_figure_the_judge_was_chosen_on(tmp_path, capsys, to):
    """A small run holds nothing out: its export says the cross-validated figure it was chosen on,
    never ``validation n/a`` alone; a run with a validation part says that figure."""
    for seed in range(2, 12):  # a run that learned something (a kept seed is scored on every sample)
        small = optimize_into(
            tmp_path / f"small-{seed}",
            {
                "dataset": {"synthetic": {"n_samples": 30, "random_seed": seed}},
                "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
                "random_seed": seed,
            },
        )
        best = result_of(small)["scores"]["best"]
        if best.get("cross_validated") is not None:
            break
    else:
        pytest.fail("no small run refit its recipe")
    assert best["validation"] is None
    out, _ = _export(capsys, small, "--to", to)
    assert f"chosen cross-validated {best['cross_validated']:.3f} over 2 folds" in out
    assert "validation n/a" not in out
