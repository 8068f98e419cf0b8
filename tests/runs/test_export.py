"""The exports of a run (best_instructions.json, apply_best.py) and loading them back
(rundir.load_instructions, AspectCritic.from_result), on real runs of the simulated judge."""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy

import pytest

from promptevolver import AspectCritic, ConfigError, JudgeEnsemble
from promptevolver.config._models import MetricConfig
from promptevolver.rundir import ChosenJudge, load_instructions
from promptevolver.runs import _export as export
from promptevolver.runs._export import apply_snippet, write_exports

from ..conftest import AC_DEFINITION
from ..rundirs import leftovers, result_of

PROMPT = AspectCritic.PROMPT_NAME


def test_best_instructions_json_and_from_result_load_the_best(improved):
    best = result_of(improved)["best_instructions"]
    assert json.loads((improved / "best_instructions.json").read_text())["instructions"] == best
    assert load_instructions(improved) == best == load_instructions(improved / "best_instructions.json")
    metric = AspectCritic.from_result(improved)
    assert metric.get_instructions() == best
    assert (metric.name, metric.definition) == ("answer_correctness", AC_DEFINITION)
    named = AspectCritic.from_result(improved / "result.json", name="other", definition="Is it right?")
    assert named.name == "other" and named.get_instructions() == best


def test_the_release_0_1_import_path_still_loads_instructions(improved):
    assert export.load_instructions is load_instructions
    assert export.load_instructions(improved) == result_of(improved)["best_instructions"]


def test_apply_snippet_runs_and_applies_the_best(improved):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        namespace = runpy.run_path(str(improved / "apply_best.py"), run_name="__main__")
    best = result_of(improved)["best_instructions"]
    assert namespace["metric"].get_instructions() == best
    assert best[PROMPT] in out.getvalue()


def test_apply_snippet_rebuilds_a_judge_ensemble(tmp_path):
    config = MetricConfig(
        name="m", definition="Is it 'right'?\nSay so.", num_judges=3, aggregation_method="mean"
    )
    path = tmp_path / "apply.py"
    path.write_text(apply_snippet({PROMPT: 'Be "strict" \\ careful.\nLine two.'}, config))
    namespace = runpy.run_path(str(path))
    metric = namespace["metric"]
    assert isinstance(metric, JudgeEnsemble) and metric.num_judges == 3
    assert metric.get_instructions() == {PROMPT: 'Be "strict" \\ careful.\nLine two.'}


def test_from_result_errors_name_the_problem(tmp_path):
    plain = tmp_path / "instructions.json"
    plain.write_text(json.dumps({PROMPT: "Judge it."}))
    with pytest.raises(ConfigError, match="pass name= and definition="):
        AspectCritic.from_result(plain)
    assert AspectCritic.from_result(plain, name="n", definition="d").get_instructions() == {
        PROMPT: "Judge it."
    }
    plain.write_text(json.dumps({"no_such_prompt": "x"}))
    with pytest.raises(KeyError, match="no_such_prompt"):
        AspectCritic.from_result(plain, name="n", definition="d")
    plain.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="prompt name"):
        load_instructions(plain)
    with pytest.raises(ConfigError, match="not found"):
        load_instructions(tmp_path / "missing.json")


def test_from_result_refuses_a_result_of_a_newer_format(improved, tmp_path):
    result = {**result_of(improved), "format_version": 99}
    (tmp_path / "result.json").write_text(json.dumps(result))
    with pytest.raises(ConfigError, match="format version 99 was written by a newer promptevolver"):
        AspectCritic.from_result(tmp_path, name="n", definition="d")


def test_exports_are_written_atomically(tmp_path, monkeypatch):
    metric = MetricConfig(name="m", definition="d")
    write_exports(tmp_path, ChosenJudge(instructions={PROMPT: "old"}), metric)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_exports(tmp_path, ChosenJudge(instructions={PROMPT: "new"}), metric)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert leftovers(tmp_path) == []
    monkeypatch.undo()
    paths = write_exports(tmp_path, ChosenJudge(instructions={PROMPT: "new"}), metric)
    assert [p.name for p in paths] == ["best_instructions.json", "apply_best.py"]
    assert json.loads(paths[0].read_text())["instructions"] == {PROMPT: "new"}
    assert "'new'" in paths[1].read_text()


def test_from_result_says_when_the_judge_it_loads_was_chosen_on_the_simulated_llm(improved, tmp_path):
    """Every place that shows or exports a dry run's judge says so (the summary, the report,
    best_instructions.json, apply_best.py, the gate); loading it in Python warned nothing, even
    with -W always (a newcomer's check). Instructions written by hand are no dry run: no warning."""
    import warnings

    from promptevolver.rundir import DRY_RUN_NOTE

    assert result_of(improved)["simulated_llm"]
    with pytest.warns(UserWarning, match="dry run: chosen on the simulated LLM") as caught:
        AspectCritic.from_result(improved)
    assert any(DRY_RUN_NOTE in str(w.message) and str(improved) in str(w.message) for w in caught)
    plain = tmp_path / "mine.json"
    plain.write_text(json.dumps({PROMPT: "Is the answer right?"}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AspectCritic.from_result(plain, name="n", definition="d")
