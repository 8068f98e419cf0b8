"""The judge's prompt is matched to the annotation file's prompt keys, never silently missed."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import AspectCritic, SingleMetricAnnotation
from promptevolver.cli import main
from promptevolver.config._prompt_match import match_prompt, prompt_keys
from promptevolver.errors import ConfigError
from promptevolver.judge._rubric import RubricJudge
from promptevolver.judge._statements import StatementSupport
from promptevolver.report._data import load_run

from ..conftest import AC_FILE
from ..rundirs import AC_CONFIG

DEFAULT = AspectCritic.PROMPT_NAME


def _renamed(tmp_path: Path, *names: str) -> Path:
    """A copy of the answer_correctness file whose prompt traces sit under ``names`` (the first
    holds the original trace, the others a copy of it)."""
    raw = json.loads(AC_FILE.read_text())
    for sample in raw["answer_correctness"]:
        trace = sample["prompts"].pop(DEFAULT)
        sample["prompts"] = {name: dict(trace) for name in names}
    path = tmp_path / f"renamed-{'-'.join(names) or 'none'}.json"
    path.write_text(json.dumps(raw))
    return path


def _match(data: SingleMetricAnnotation, prompt_name: str | None):
    return match_prompt(data, prompt_name, judge_prompts=[DEFAULT], renamable=True)


def _config(tmp_path: Path, data: Path, **changes: Any) -> Path:
    raw = yaml.safe_load(AC_CONFIG.read_text())
    raw.update(dataset=str(data), **changes)
    path = tmp_path / f"config-{data.stem}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- the rules ------------------------------------------------------------------------------------


def test_the_files_only_prompt_is_used_and_named(tmp_path):
    data = SingleMetricAnnotation.from_json(_renamed(tmp_path, "aspect_critic_prompt"))
    match = _match(data, None)
    assert (match.rename, match.how) == ("aspect_critic_prompt", "only")
    assert match.describe() == "prompt: 'aspect_critic_prompt' (the only prompt in the file)"


def test_a_given_prompt_name_must_be_in_the_file_and_the_error_lists_the_keys(tmp_path):
    data = SingleMetricAnnotation.from_json(_renamed(tmp_path, "first", "second"))
    assert prompt_keys(data) == ("first", "second")
    assert _match(data, "second").how == "given"
    with pytest.raises(ConfigError, match=r"prompt_name 'third' is not a prompt.*\['first', 'second'\]"):
        _match(data, "third")


def test_several_prompts_without_the_judges_own_need_prompt_name(tmp_path):
    data = SingleMetricAnnotation.from_json(_renamed(tmp_path, "first", "second"))
    with pytest.raises(ConfigError, match=r"has 2 prompts \['first', 'second'\]: set prompt_name"):
        _match(data, None)
    among = SingleMetricAnnotation.from_json(_renamed(tmp_path, "first", DEFAULT))
    assert _match(among, None).how == "default"


def test_a_file_without_prompt_traces_says_there_is_no_reason_to_learn_from(tmp_path):
    data = SingleMetricAnnotation.from_json(_renamed(tmp_path))
    match = _match(data, None)
    assert (match.rename, match.how) == (DEFAULT, "absent")
    assert "no human-corrected reason" in match.describe()


def test_judges_with_fixed_prompt_names_need_every_one_in_the_file(tmp_path):
    both = [StatementSupport.EXTRACTOR, StatementSupport.VERIFIER]
    data = SingleMetricAnnotation.from_json(_renamed(tmp_path, *both))
    match = match_prompt(data, None, judge_prompts=both, renamable=False)
    assert (match.names, match.rename) == (tuple(both), None)
    assert match.describe().startswith("prompts: 'statement_generator_prompt', 'n_l_i_statement_prompt'")
    half = SingleMetricAnnotation.from_json(_renamed(tmp_path, StatementSupport.EXTRACTOR))
    with pytest.raises(ConfigError, match=r"prompt\(s\) \['n_l_i_statement_prompt'\] are not in the file"):
        match_prompt(half, None, judge_prompts=both, renamable=False)
    with pytest.raises(ConfigError, match="fixed names"):
        match_prompt(data, "other", judge_prompts=both, renamable=False)
    rubric = [RubricJudge.PROMPT_NAME]
    with pytest.raises(ConfigError, match="single_turn_simple_criteria_prompt"):
        match_prompt(
            SingleMetricAnnotation.from_json(_renamed(tmp_path, "x")),
            None,
            judge_prompts=rubric,
            renamable=False,
        )


def test_aspect_critic_takes_the_prompt_name_as_an_argument():
    critic = AspectCritic(name="m", definition="d", prompt_name="aspect_critic_prompt")
    assert list(critic.get_prompts()) == ["aspect_critic_prompt"] == list(critic.get_instructions())
    with pytest.raises(ValueError, match="prompt_name"):
        AspectCritic(name="m", definition="d", prompt_name=" ")


# --- through a run ---------------------------------------------------------------------------------


def test_a_run_on_a_renamed_prompt_learns_exactly_as_on_the_original(tmp_path, capsys):
    renamed = _config(tmp_path, _renamed(tmp_path, "aspect_critic_prompt"))
    assert (
        main(["optimize", str(renamed), "-o", str(tmp_path / "renamed"), "--set", "optimizer.generations=2"])
        == 0
    )
    err = capsys.readouterr().err
    assert "prompt: 'aspect_critic_prompt' (the only prompt in the file)" in err
    original = _config(tmp_path, AC_FILE)
    assert (
        main(
            [
                "optimize",
                str(original),
                "-o",
                str(tmp_path / "original"),
                "-q",
                "--set",
                "optimizer.generations=2",
            ]
        )
        == 0
    )
    ours, theirs = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("renamed", "original"))
    assert list(ours["best_instructions"]) == ["aspect_critic_prompt"]
    assert ours["scores"] == theirs["scores"] and ours["usage"]["llm_calls"] == theirs["usage"]["llm_calls"]
    assert [c["instructions"]["aspect_critic_prompt"] for c in ours["lineage"]] == [
        c["instructions"][DEFAULT] for c in theirs["lineage"]
    ]
    assert (
        yaml.safe_load((tmp_path / "renamed" / "config.yaml").read_text())["prompt_name"]
        == "aspect_critic_prompt"
    )
    reasons = [
        [
            (d.position, d.human_reason, d.human_action)
            for s in ("train", "validation")
            for d in f.disagreements(s)
        ]
        for f in (load_run(tmp_path / "renamed"), load_run(tmp_path / "original"))
    ]
    assert reasons[0] == reasons[1] and all(reason for _, reason, _ in reasons[0])  # the report shows them


def test_the_runs_judge_and_snippet_carry_the_prompt_name(tmp_path, capsys):
    config = _config(tmp_path, _renamed(tmp_path, "aspect_critic_prompt"))
    run = tmp_path / "run"
    assert main(["optimize", str(config), "-o", str(run), "-q", "--set", "optimizer.generations=1"]) == 0
    capsys.readouterr()
    judge = AspectCritic.from_result(run)
    assert judge.prompt_name == "aspect_critic_prompt"
    exported = json.loads((run / "best_instructions.json").read_text())
    assert judge.get_instructions() == exported["instructions"]
    snippet = runpy.run_path(str(run / "apply_best.py"))
    assert snippet["metric"].get_instructions() == judge.get_instructions()
    assert main(["evaluate", str(config), "-i", str(run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] > 0


def test_several_prompts_stop_the_run_with_one_line_and_prompt_name_settles_it(tmp_path, capsys):
    data = _renamed(tmp_path, "first", "second")
    config = _config(tmp_path, data)
    assert main(["optimize", str(config), "-o", str(tmp_path / "x")]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "['first', 'second']" in line and "prompt_name" in line
    assert not (tmp_path / "x").exists()
    argv = ["optimize", str(config), "-o", str(tmp_path / "y"), "-q", "--set", "prompt_name=second"]
    assert main(argv) == 0
    assert list(json.loads((tmp_path / "y" / "result.json").read_text())["best_instructions"]) == ["second"]
    assert main(["estimate", str(config), "-q"]) == 1
    assert "set prompt_name" in _one_line(capsys.readouterr().err)


# --- Python callers build the judge themselves ----------------------------------------------------


@pytest.mark.parametrize("names", [("my_prompt",), ("a", "b")])
def test_python_optimize_refuses_a_judge_whose_prompt_is_not_in_the_file(tmp_path, names):
    """A default AspectCritic on a file whose trace key differs would lose every corrected reason:
    the optimizer refuses before any LLM call, and naming the file's prompt makes it run."""
    from promptevolver import BinaryMetricLoss, GeneticOptimizer
    from promptevolver.llm._base import BaseLLMClient

    data = SingleMetricAnnotation.from_json(_renamed(tmp_path, *names))

    class Refuse(BaseLLMClient):
        async def _send(self, request):
            raise AssertionError("an LLM call before the prompt names were checked")

    judge = AspectCritic(name=data.name, definition="Is the response correct?")
    with pytest.raises(ConfigError) as err:
        GeneticOptimizer(metric=judge, llm=Refuse()).optimize(dataset=data, loss=BinaryMetricLoss())
    message = str(err.value)
    assert DEFAULT in message and all(n in message for n in names) and "prompt_name" in message
    named = AspectCritic(name=data.name, definition="Is the response correct?", prompt_name=names[0])
    assert list(named.get_prompts()) == [names[0]]
    from promptevolver.optimizers._split import check_prompt_names

    check_prompt_names(data, named)  # no error: the humans' reasons are found
