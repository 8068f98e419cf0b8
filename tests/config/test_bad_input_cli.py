"""Bad input through the command line: every case of issue 13's bad-input list ends with exit
code 1 (bad data or config) or 2 (usage) and one line on stderr naming the key or the file, no
traceback, before any LLM call (the LLM client fails the test if called) and before anything is
written to the run directory."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver.cli import main
from promptevolver.config import _build as build
from promptevolver.llm._base import LLMRequest
from promptevolver.llm._fake import ScriptedLLM
from promptevolver.simulation.synthetic import SyntheticSpec, generate

from ..conftest import AC_DEFINITION, AC_FILE


@pytest.fixture(autouse=True)
def llm_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[LLMRequest]]:
    """Every LLM client of a run records its requests and fails them; the test asserts none came."""
    calls: list[LLMRequest] = []

    def refuse(request: LLMRequest) -> Exception:
        calls.append(request)
        return AssertionError("an LLM call was made before the input error was reported")

    monkeypatch.setattr(build, "_build_client", lambda *a, **k: ScriptedLLM(handler=refuse, max_attempts=1))
    yield calls
    assert calls == [], f"{len(calls)} LLM call(s) were made"


def config(tmp_path: Path, text: str | None = None, **changes: Any) -> Path:
    raw: dict[str, Any] = {
        "dataset": str(AC_FILE),
        "metric": {"type": "aspect_critic", "name": "answer_correctness", "definition": AC_DEFINITION},
        "llm": {"provider": "fake"},
        "optimizer": {"population_size": 2, "generations": 1},
    }
    raw.update(changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False) + (text or ""), encoding="utf-8")
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return code, lines[0]


def annotations(tmp_path: Path, change: Callable[[list[dict[str, Any]]], None], n: int = 2000) -> Path:
    """A binary annotation file of ``n`` samples (the synthetic generator's), edited by ``change``."""
    dataset = generate(SyntheticSpec(n_samples=n, random_seed=3, name="answer_correctness"))
    path = tmp_path / "annotations.json"
    dataset.to_json(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["kind"]  # as a Ragas export: the kind is inferred
    change(data["samples"])
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def optimize(cfg: Path, out: Path, *extra: str) -> list[str]:
    return ["optimize", str(cfg), "-o", str(out), *extra]


# --- The cases ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0.5, 2, -1, 1e308, "1", True])
def test_one_bad_label_among_2000_binary_samples_fails_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any
) -> None:
    """Before: 146 samples dropped with a warning, 7,446 calls, then a late internal error."""

    def spoil(samples: list[dict[str, Any]]) -> None:
        samples[1234]["metric_output"] = value

    data = annotations(tmp_path, spoil)
    out = tmp_path / "run"
    code, line = run(optimize(config(tmp_path, dataset=str(data)), out), capsys)
    assert code == 1
    assert line.startswith(f"promptevolver: error: file {data}, metric 'answer_correctness', sample 1234, ")
    assert "field 'metric_output'" in line
    assert not out.exists()  # nothing written, nothing to resume


def test_the_same_file_is_refused_by_evaluate_and_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = annotations(tmp_path, lambda s: s[7].update(target=0.5), n=300)
    cfg = config(tmp_path, dataset=str(data))
    instructions = tmp_path / "instructions.json"
    instructions.write_text(json.dumps({"single_turn_aspect_critic_prompt": "Judge."}), encoding="utf-8")
    for argv in (["evaluate", str(cfg), "-i", str(instructions)], ["estimate", str(cfg)]):
        code, line = run(argv, capsys)
        assert code == 1 and "sample 7, field 'target'" in line and str(data) in line


def test_numeric_labels_under_a_binary_metric_name_the_file_sample_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kind comes from the metric: scores under an aspect critic (0/1 verdicts) are refused."""

    def scores(samples: list[dict[str, Any]]) -> None:
        for i, sample in enumerate(samples):
            sample.update(metric_output=(i % 5) / 4 + 0.1, is_accepted=True)

    data = annotations(tmp_path, scores, n=50)
    code, line = run(optimize(config(tmp_path, dataset=str(data)), tmp_path / "run"), capsys)
    assert code == 1 and str(data) in line and "sample 0, field 'metric_output'" in line
    assert "binary as AspectCritic gives verdicts 0 or 1" in line and "metric type: rubric" in line


def test_a_metric_given_twice_in_the_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "twice.json"
    samples = json.loads(AC_FILE.read_text(encoding="utf-8"))["answer_correctness"]
    one = json.dumps(samples)
    data.write_text(
        f'{{"answer_correctness": {one}, "answer_correctness": {json.dumps(samples[:3])}}}', "utf-8"
    )
    code, line = run(optimize(config(tmp_path, dataset=str(data)), tmp_path / "run"), capsys)
    assert code == 1 and str(data) in line and "metric 'answer_correctness' is given twice" in line


def test_a_yaml_key_given_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = config(tmp_path, optimizer={"population_size": 2, "generations": 4})
    cfg.write_text(
        cfg.read_text(encoding="utf-8").replace("generations: 4", "generations: 4\n  generations: 0")
    )
    code, line = run(optimize(cfg, tmp_path / "run"), capsys)
    assert code == 1 and line.startswith(
        f"promptevolver: error: {cfg}: optimizer.generations: key given twice"
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"random_seed": -1}, "random_seed: must be a whole number >= 0"),
        (
            {"metric": {"name": "answer_correctness", "definition": ""}},
            "metric.definition: must not be empty",
        ),
        (
            {"dataset": {"synthetic": {"n_samples": 5}}},
            "dataset.synthetic.n_samples: Input should be greater",
        ),
    ],
    ids=["negative-seed", "empty-definition", "synthetic-n_samples"],
)
def test_config_values_name_their_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], expected: str
) -> None:
    cfg = config(tmp_path, **changes)
    code, line = run(optimize(cfg, tmp_path / "run"), capsys)
    assert code == 1 and line.startswith(f"promptevolver: error: {cfg}: ") and expected in line
    assert "internal error" not in line and "lax-or-strict" not in line


@pytest.mark.parametrize("seed", ["-5", "1.5", "x"])
def test_seed_option_must_be_a_whole_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(optimize(config(tmp_path), tmp_path / "run", "--seed", seed))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "argument --seed: must be a whole number >= 0" in err


def test_nesting_too_deep_names_the_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "deep.json"
    data.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    code, line = run(optimize(config(tmp_path, dataset=str(data)), tmp_path / "run"), capsys)
    assert code == 1 and f"file {data}" in line and "nested too deeply" in line


def test_a_dataset_that_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    code, line = run(optimize(config(tmp_path, dataset=str(folder)), tmp_path / "run"), capsys)
    assert code == 1 and f"file {folder}: is a directory, not an annotation file" in line


def test_a_config_that_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = run(optimize(tmp_path, tmp_path / "run"), capsys)
    assert code == 1 and f"{tmp_path}: is a directory, not a config file" in line


@pytest.mark.parametrize("below", [False, True], ids=["the-file", "below-a-file"])
def test_output_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], below: bool) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep me", encoding="utf-8")
    out = taken / "run" if below else taken
    cfg = config(tmp_path)
    for argv in (optimize(cfg, out), ["bench", str(cfg), "-o", str(out)], ["optimize", "--resume", str(out)]):
        code, line = run(argv, capsys)
        assert code == 2 and str(out) in line and "is a file, not a directory" in line
        assert taken.read_text(encoding="utf-8") == "keep me"


def test_a_score_file_declared_numeric_runs_under_mse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The remedy the error names is reachable from a config: a judge of scores (type: rubric)."""

    def mostly_ones(samples: list[dict[str, Any]]) -> None:
        for i, sample in enumerate(samples):
            sample.update(metric_output=1 if i % 3 else 0.6, is_accepted=True)

    data = annotations(tmp_path, mostly_ones, n=60)
    cfg = config(tmp_path, dataset=str(data), loss={"type": "mse"})
    code, line = run(["estimate", str(cfg)], capsys)
    assert code == 1 and "sample 0, field 'metric_output': 0.6 is not a binary label" in line
    assert "metric type: rubric" in line
    declared = json.loads(data.read_text(encoding="utf-8")) | {"kind": "numeric"}
    data.write_text(json.dumps(declared), encoding="utf-8")
    assert run(["estimate", str(cfg)], capsys)[0] == 1  # the file cannot overrule the metric
    for sample in declared["samples"]:  # the aspect critic's traces are not a rubric's
        sample.pop("prompts", None)
    data.write_text(json.dumps(declared), encoding="utf-8")
    rubric = {
        "type": "rubric",
        "name": "answer_correctness",
        "definition": AC_DEFINITION,
        "score_range": [0, 1],
    }
    scores = config(tmp_path, dataset=str(data), loss={"type": "mse"}, metric=rubric)
    assert main(["estimate", str(scores), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["judge_calls"] > 0
