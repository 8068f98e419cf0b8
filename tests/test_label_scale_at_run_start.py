"""The label kind comes from the metric: when a run starts, before any LLM call, an aspect critic's
annotations must be 0/1 and a rubric's must lie in its score range, else one error naming the
file, the sample and the field (the CLI: one line, exit 1). A 0-2 rubric whose labels are mostly
0 and 1 runs as the rubric it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, MSELoss, SingleMetricAnnotation
from promptevolver.cli import main
from promptevolver.errors import AnnotationError
from promptevolver.judge._rubric import RubricJudge
from promptevolver.llm._fake import ScriptedLLM

from .annotations.test_annotations import sample_dict
from .conftest import AC_DEFINITION

RUBRIC_0_2 = [1, 1, 1, 0, 0, 0, 2, 2, 2]


def _file(tmp_path: Path, values: list[Any], *, target_at: int | None = None, rubric: bool = False) -> Path:
    items = [sample_dict(v, is_accepted=True, i=i) for i, v in enumerate(values)]
    if target_at is not None:
        items[target_at]["target"] = 9
    for item in items if rubric else []:  # the rubric judge's prompt, with a score
        trace = item["prompts"].pop(AspectCritic.PROMPT_NAME)
        trace["prompt_output"] = {"reason": trace["prompt_output"]["reason"], "score": item["metric_output"]}
        item["prompts"][RubricJudge.PROMPT_NAME] = trace
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"m": items}), encoding="utf-8")
    return path


def _config(tmp_path: Path, data: Path, metric: dict[str, Any], loss: dict[str, Any]) -> Path:
    config = {
        "dataset": str(data),
        "metric": {"name": "m", "definition": "Is the response good?", **metric},
        "loss": loss,
        "optimizer": {"population_size": 2, "generations": 1},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


BINARY = ({"type": "aspect_critic"}, {"type": "binary", "metric": "accuracy"})
RUBRIC_1_5 = ({"type": "rubric", "score_range": [1, 5]}, {"type": "mse"})


@pytest.mark.parametrize(
    ("metric", "values", "bad_index", "target_at"),
    [
        (BINARY, RUBRIC_0_2, 6, None),  # the labels under a binary judge: the first 2
        (BINARY, [0, 1, 0.5, 1, 0, 1, 0, 1, 0, 1, 0, 1], 2, None),
        (BINARY, [0, 1] * 6, 3, 3),  # a target of 9
        (RUBRIC_1_5, [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 1], 5, None),
        (RUBRIC_1_5, [1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 1], 5, None),
        (RUBRIC_1_5, [1, 2, 3, 4, 5] * 3, 7, 7),
    ],
    ids=["binary-2", "binary-0.5", "binary-target", "rubric-6", "rubric-0", "rubric-target"],
)
@pytest.mark.parametrize("command", ["optimize", "estimate", "evaluate"])
def test_a_label_that_does_not_fit_the_metric_is_one_line_naming_file_sample_and_field(
    tmp_path, capsys, command, metric, values, bad_index, target_at
) -> None:
    data = _file(tmp_path, values, target_at=target_at)
    config = _config(tmp_path, data, *metric)
    prompt = AspectCritic.PROMPT_NAME if metric is BINARY else RubricJudge.PROMPT_NAME
    instructions = tmp_path / "instructions.json"
    instructions.write_text(json.dumps({prompt: "Judge it."}), encoding="utf-8")
    args = {
        "optimize": ["optimize", str(config), "-o", str(tmp_path / "run")],
        "estimate": ["estimate", str(config)],
        "evaluate": ["evaluate", str(config), "-i", str(instructions), "--split", "all"],
    }[command]
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    field = "target" if target_at is not None else "metric_output"
    assert str(data) in err and f"sample {bad_index}" in err and f"field {field!r}" in err, err
    assert not (tmp_path / "run" / "journal.jsonl").exists()  # nothing ran


@pytest.mark.parametrize(
    ("metric", "loss"),
    [
        (AspectCritic(name="m", definition=AC_DEFINITION), BinaryMetricLoss()),
        (RubricJudge(name="m", definition="Is the response good?", score_range=(1, 5)), MSELoss()),
    ],
    ids=["aspect_critic", "rubric_1_5"],
)
def test_the_python_api_checks_the_labels_against_the_metric_before_any_call(metric, loss) -> None:
    items = [sample_dict(v, i=i) for i, v in enumerate(RUBRIC_0_2 * 2)]
    dataset = SingleMetricAnnotation(name="m", samples=items)  # type: ignore[arg-type]
    assert dataset.kind == "numeric"  # any finite number loads, as in Ragas
    llm = ScriptedLLM(responses=[])  # any call would fail the run another way
    optimizer = GeneticOptimizer(metric=metric, llm=llm)
    with pytest.raises(AnnotationError) as info:
        optimizer.optimize(dataset=dataset, loss=loss, config={"population_size": 2, "generations": 1})
    bad = 6 if isinstance(metric, AspectCritic) else 3  # the first 2, or the first 0 below 1-5
    assert (info.value.sample_index, info.value.field) == (bad, "metric_output")
    assert llm.requests == []  # before any call


def test_a_0_2_rubric_of_mostly_0_and_1_runs_as_a_rubric(tmp_path, capsys) -> None:
    values = RUBRIC_0_2 * 3
    data = _file(tmp_path, values, rubric=True)
    config = _config(tmp_path, data, {"type": "rubric", "score_range": [0, 2]}, {"type": "mse"})
    assert main(["optimize", str(config), "-o", str(tmp_path / "run"), "-q"]) == 0, capsys.readouterr().err
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["loss"]["name"] == "MSELoss" and result["usage"]["llm_calls"]["judge"] > 0
