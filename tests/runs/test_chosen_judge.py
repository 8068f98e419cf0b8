"""One record of the chosen judge (rundir.ChosenJudge, read by rundir.read_chosen_judge): every
export and every consumer of a run's choice judges as the run chose, teaching examples included.

For each example policy a run can keep (none, static, retrieval) and each way to hand the chosen
judge over (the run directory, its result.json, its best_instructions.json, a copy of that file
away from its run, the judges' from_result, apply_best.py, assert_agreement, an
OptimizationResult), the verdicts on the same samples are the same, and so is the figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import runpy
import shutil
import warnings
from pathlib import Path

import pytest
import yaml

from promptevolver import AspectCritic, ConfigError, RubricJudge
from promptevolver.cli import main
from promptevolver.config._build import build_llm, load_dataset
from promptevolver.config._models import load_run_config
from promptevolver.optimizers import OptimizationResult
from promptevolver.rundir import DRY_RUN_NOTE, ChosenJudge, read_chosen_judge, read_result
from promptevolver.testing import assert_agreement

from ..conftest import AC_DEFINITION
from ..rundirs import optimize_into, result_of

POLICIES = ("none", "static", "retrieval")


def _config(policy: str, seed: int) -> dict:
    return {
        "dataset": {"synthetic": {"n_samples": 24, "random_seed": seed}},
        "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
        "optimizer": {"strategy": "examples", "examples": {"policy": policy}},
        "random_seed": seed,
    }


@pytest.fixture(scope="module", params=POLICIES)
def kept(request, tmp_path_factory) -> tuple[str, Path]:
    """A run that kept teaching examples of the policy (the first seed of a few whose examples
    stage keeps it; ``none``: a run without examples), and its config file."""
    base = tmp_path_factory.mktemp(f"chosen-{request.param}")
    for seed in range(6):
        run = optimize_into(base / f"run-{seed}", _config(request.param, seed))
        if result_of(run)["examples"]["policy"] == request.param:
            return request.param, run
    pytest.fail(f"no seed kept policy {request.param}; pick another synthetic set")


def _config_file(run: Path) -> Path:
    return run.with_suffix(".yaml")


def _evaluate(capsys, config: Path, given: Path, *args: str) -> tuple[dict, list[dict]]:
    """``evaluate --json --samples-out``: the card and the per-sample rows."""
    rows = given.parent / f"{given.name}.samples.jsonl"
    assert main(["evaluate", str(config), "-i", str(given), "--json", "--samples-out", str(rows), *args]) == 0
    card = json.loads(capsys.readouterr().out)
    return card, [json.loads(line) for line in rows.read_text().splitlines()]


def _verdicts(rows: list[dict]) -> dict[int, float]:
    return {row["position"]: row["verdict"] for row in rows}


def test_every_file_of_the_chosen_judge_reads_as_one_record(kept):
    policy, run = kept
    records = [read_chosen_judge(p) for p in (run, run / "result.json", run / "best_instructions.json")]
    assert records[0] == records[1] == records[2]
    record = records[0]
    result = read_result(run)
    assert record.instructions == result["best_instructions"]
    assert record.example_policy == policy and record.has_examples == (policy != "none")
    assert record.examples.get("store") == result["examples"].get("store")
    assert record.figures["train"] == result["scores"]["best"]["train"]
    assert record.figures["validation"] == result["scores"]["best"]["validation"]
    assert record.figures["candidate"] == result["best_id"]
    seed = result["random_seed"]
    assert record.model == {"provider": "simulated", "model": None, "random_seed": seed} and record.dry_run
    assert OptimizationResult.from_dict(result).chosen_judge() == record


def test_evaluate_of_the_run_and_of_its_exported_file_say_the_same(kept, tmp_path, capsys):
    """The newcomer's three figures for one judge (the run, its best_instructions.json, the
    summary) are one: the exported file carries the examples, so it judges as the run does."""
    _, run = kept
    config = _config_file(run)
    of_run, rows = _evaluate(capsys, config, run)
    of_file, file_rows = _evaluate(capsys, config, run / "best_instructions.json")
    assert (of_file["accuracy"], of_file["n"]) == (of_run["accuracy"], of_run["n"])
    assert _verdicts(file_rows) == _verdicts(rows)
    assert of_run["accuracy"] == pytest.approx(result_of(run)["scores"]["best"]["validation"])
    moved = shutil.copy(run / "best_instructions.json", tmp_path / "shipped.json")  # away from its run
    all_of_run, all_rows = _evaluate(capsys, config, run, "--split", "all")
    all_of_moved, moved_rows = _evaluate(capsys, config, Path(moved))
    assert all_of_moved["accuracy"] == all_of_run["accuracy"] and _verdicts(moved_rows) == _verdicts(all_rows)


def test_assert_agreement_measures_what_evaluate_does(kept, capsys):
    _, run = kept
    config = _config_file(run)
    card, _ = _evaluate(capsys, config, run)
    for given in (run, run / "result.json", run / "best_instructions.json"):
        gate = assert_agreement(config, instructions=given, at_least=0.0)
        assert (gate.value, gate.n) == (pytest.approx(card["accuracy"]), card["n"])
    result = OptimizationResult.from_dict(read_result(run))
    gate = assert_agreement(config, instructions=result, run=run, at_least=0.0)
    assert gate.value == pytest.approx(card["accuracy"])


def test_from_result_and_apply_best_judge_as_the_run_chose(kept, capsys):
    policy, run = kept
    config_file = _config_file(run)
    _, rows = _evaluate(capsys, config_file, run)
    config = load_run_config(config_file)
    dataset = load_dataset(config)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        snippet = runpy.run_path(str(run / "apply_best.py"), run_name="__main__")
    assert ("DRY RUN" in out.getvalue()) and ("DRY RUN" in (run / "apply_best.py").read_text())
    judges = {"from_result": AspectCritic.from_result(run), "apply_best.py": snippet["metric"]}
    for where, judge in judges.items():
        assert judge.example_policy == policy, where
        llm = build_llm(config.llm, dataset=dataset, random_seed=config.random_seed)

        async def judged(judge=judge, llm=llm) -> dict[int, float | None]:
            inputs = {r["position"]: dataset.samples[r["position"]].metric_input for r in rows}
            scores = await asyncio.gather(*(judge.ajudge(i, llm=llm) for i in inputs.values()))
            return {p: s.score for p, s in zip(inputs, scores)}

        assert asyncio.run(judged()) == _verdicts(rows), where


def test_set_instructions_warns_when_it_would_drop_the_examples(kept):
    policy, run = kept
    judge = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        judge.set_instructions(run)
    dropped = [w for w in caught if "teaching examples" in str(w.message)]
    assert bool(dropped) == (policy != "none")
    assert judge.example_policy == "none"
    judge.apply_chosen(run)
    assert judge.example_policy == policy


def test_the_record_round_trips_and_a_plain_mapping_is_still_read(tmp_path):
    record = ChosenJudge(
        instructions={"p": "Judge it."},
        metric="m",
        figures={"train": 0.5, "validation": None},
        model={"provider": "openai", "model": "gpt-4o-mini"},
        simulated_llm=False,
    )
    path = tmp_path / "best_instructions.json"
    path.write_text(json.dumps(record.to_dict()))
    assert read_chosen_judge(path) == record and "dry_run" not in record.to_dict()
    simulated = ChosenJudge(instructions={"p": "x"}, simulated_llm=True)
    assert simulated.to_dict()["dry_run"] == DRY_RUN_NOTE
    path.write_text(json.dumps({"p": "Judge it."}))
    plain = read_chosen_judge(path)
    assert (plain.instructions, plain.example_policy, plain.simulated_llm, plain.figures) == (
        {"p": "Judge it."},
        "none",
        None,
        {},
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"instructions": {"p": 1}}, "prompt name"),
        ({"instructions": {"p": "x"}, "examples": {"policy": "other"}}, "policy none, static or retrieval"),
        ({"instructions": {"p": "x"}, "examples": {"policy": "static"}}, "examples.store is missing"),
        ({"instructions": {"p": "x"}, "format_version": 99}, "format version 99"),
        ([1, 2], "prompt name"),
    ],
)
def test_a_bad_record_is_one_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "best_instructions.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=message) as exc:
        read_chosen_judge(path)
    assert str(exc.value).startswith(str(path))


def test_from_result_of_another_judge_kind_names_the_class_to_use(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    config = {"metric": {"type": "rubric", "name": "helpfulness", "definition": "How helpful?"}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    (run / "best_instructions.json").write_text(json.dumps({RubricJudge.PROMPT_NAME: "Rate it."}))
    with pytest.raises(ConfigError, match="RubricJudge.from_result"):
        AspectCritic.from_result(run)
    judge = RubricJudge.from_result(run)
    assert judge.get_instructions() == {RubricJudge.PROMPT_NAME: "Rate it."}
    assert judge.score_range == (1.0, 5.0)


def test_the_printed_chosen_judge_is_the_record(kept):
    """What optimize prints under the summary: the instruction, the examples it is shown with
    when it kept some, DRY RUN first when the simulated LLM judged; from the one record."""
    from promptevolver.runs._outcome import outcome_lines

    policy, run = kept
    result = OptimizationResult.from_dict(read_result(run))
    text = "\n".join(outcome_lines(result, run))
    assert "DRY RUN: " in text and text.index("DRY RUN") < text.index("best instruction for")
    for instruction in read_chosen_judge(run).instructions.values():
        assert instruction in text
    assert ("shown with teaching examples" in text) == (policy != "none")
    real = OptimizationResult.from_dict({**read_result(run), "simulated_llm": False, "notes": []})
    assert "DRY RUN" not in "\n".join(outcome_lines(real, run))


def test_the_summary_figure_is_reproduced_whatever_seed_the_config_says(kept, tmp_path, capsys):
    """A run made with --seed S, evaluated with a config whose random_seed is another (the
    newcomer's seed-4 run): the simulated LLM the judge was verified on is the run's (its answers
    are its seed's), so evaluate -i RUN, its exported file and assert_agreement give the figure of
    the summary line, examples kept or not."""
    _, run = kept
    other = yaml.safe_load(_config_file(run).read_text())
    other["random_seed"] = other["random_seed"] + 100
    config = tmp_path / "other_seed.yaml"
    config.write_text(yaml.safe_dump(other))
    summary = result_of(run)["scores"]["best"]["validation"]
    of_run, _ = _evaluate(capsys, config, run)
    of_file, _ = _evaluate(capsys, config, run / "best_instructions.json")
    assert of_run["accuracy"] == pytest.approx(summary) == of_file["accuracy"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert assert_agreement(config, instructions=run, at_least=0.0).value == pytest.approx(summary)


def test_the_report_marks_the_instruction_it_shows_as_a_dry_run(kept):
    _, run = kept
    md = (run / "report.md").read_text()
    wording = md.split("## What changed in the instruction", 1)[1].split("\n## ", 1)[0]
    assert "DRY RUN: chosen on the simulated LLM" in wording
