"""``promptevolver review`` writes a label where each metric shape keeps its human label, and
``optimize`` reads it back as the label the human gave.

The shapes whose label is not a number in one prompt's output field: a metric of two prompts
(statement support, as Ragas' faithfulness, and an ensemble of it), whose score no one prompt's
output holds, and the judges that answer names (pairwise with and without ties, classification).
Each goes through the review queue of a real run (``build_queue(FILE, run=RUN)``, the queue the
server serves), into the file, then back through ``load_dataset`` and ``classify``, the loaders
a run reads. The page itself, in a browser: tests/runs/test_review_browser.py."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from promptevolver import rundir
from promptevolver.annotations import HUMAN_REASON, LabelScale
from promptevolver.config import build_metric, load_dataset, resolve_prompt
from promptevolver.config._models import RunConfig
from promptevolver.optimizers import classify, evidence_prompt
from promptevolver.runs._review_queue import ReviewError, ReviewQueue, build_queue

from ..conftest import DATA
from ..rundirs import optimize_into

REASON = "The second statement is in the context, word for word."
CLASSES = ["refund", "question", "complaint"]


def _bundled_slice(file: str, metric: str, n: int = 30) -> Callable[[Path], Path]:
    """The first ``n`` samples of a bundled annotation file, written into a folder."""

    def write(folder: Path) -> Path:
        samples = json.loads((DATA / f"{file}.json").read_text())[metric][:n]
        path = folder / f"{metric}.json"
        path.write_text(json.dumps({metric: samples}))
        return path

    return write


def _tickets(folder: Path) -> Path:
    """A classification file: the recorded judge takes a polite refund for a question."""
    samples = []
    for i in range(30):
        truth = i % 3
        said = 1 if i % 9 == 0 else truth
        samples.append(
            {
                "metric_input": {
                    "user_input": f"ticket {i}: " + ["my money back", "how do I", "awful"][truth]
                },
                "metric_output": said,
                "is_accepted": said == truth,
                "target": truth,
                "prompts": {
                    "single_turn_classification_prompt": {
                        "prompt_input": {},
                        "prompt_output": {"reason": "it reads as it reads", "label": CLASSES[said]},
                    }
                },
            }
        )
    path = folder / "tickets.json"
    path.write_text(json.dumps({"tickets": samples}))
    return path


@dataclass(frozen=True)
class Shape:
    """One metric shape: its data, its config's ``metric`` and ``loss``, a trace of its inputs
    for a pool, the prompt its label goes to (None: the sample's own) and the name the judge
    answers for a label value (None: the number)."""

    data: Callable[[Path], Path]
    metric: dict[str, Any]
    loss: dict[str, Any]
    trace: dict[str, Any]
    prompt: str | None
    names: dict[float, str] | None = None


STATEMENTS = {"type": "statement_support", "name": "faithfulness"}
RAG_TRACE = {
    "user_input": "What does the record say about the harbour?",
    "response": "The harbour opened in 1820. The harbour has two piers.",
    "retrieved_contexts": ["The harbour opened in 1820 and was rebuilt later."],
}
PAIR_TRACE = {"user_input": "Name a prime.", "response_a": "7 is prime.", "response_b": "9 is prime."}
SHAPES = {
    "two prompts": Shape(
        _bundled_slice("faithfulness_statements", "faithfulness"),
        STATEMENTS,
        {"type": "mse"},
        RAG_TRACE,
        None,
    ),
    "an ensemble of two prompts": Shape(
        _bundled_slice("faithfulness_statements", "faithfulness"),
        {**STATEMENTS, "num_judges": 2, "aggregation_method": "mean"},
        {"type": "mse"},
        RAG_TRACE,
        None,
    ),
    "pairwise with ties": Shape(
        _bundled_slice("pandalm_pairwise", "pandalm"),
        {
            "type": "pairwise",
            "name": "pandalm",
            "definition": "Which response follows the instruction better?",
        },
        {"type": "classification"},
        PAIR_TRACE,
        "pairwise_comparison_prompt",
        {1.0: "a", 0.0: "b", 0.5: "tie"},
    ),
    "pairwise without ties": Shape(
        _bundled_slice("llmbar_pairwise", "llmbar"),
        {
            "type": "pairwise",
            "name": "llmbar",
            "ties": False,
            "definition": "Which output follows the instruction?",
        },
        {"type": "binary"},
        PAIR_TRACE,
        "pairwise_comparison_prompt",
        {1.0: "a", 0.0: "b"},
    ),
    "classification": Shape(
        _tickets,
        {"type": "classification", "name": "tickets", "definition": "What the ticket is", "labels": CLASSES},
        {"type": "classification"},
        {"user_input": "ticket 99: my money back"},
        "single_turn_classification_prompt",
        {0.0: "refund", 1.0: "question", 2.0: "complaint"},
    ),
}


@dataclass(frozen=True)
class Made:
    shape: Shape
    data: Path
    run: Path


@pytest.fixture(scope="module", params=list(SHAPES), ids=list(SHAPES))
def made(request, tmp_path_factory) -> Made:
    """A finished run of each shape on its data (the simulated judge; a few seconds each)."""
    shape = SHAPES[request.param]
    folder = tmp_path_factory.mktemp(request.param.replace(" ", "-"))
    data = shape.data(folder)
    config = {
        "dataset": str(data),
        "metric": shape.metric,
        "loss": shape.loss,
        "llm": {"provider": "fake"},
        "random_seed": 0,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bundled files list their unusable samples
        run = optimize_into(folder / "run", config)
    return Made(shape, data, run)


def _config_on(made: Made, data: Path) -> RunConfig:
    """The run's config reading ``data`` (what ``optimize`` on a relabelled file reads)."""
    return rundir.read_config(made.run).model_copy(update={"dataset": data})


def _loaded(made: Made, data: Path) -> tuple[Any, list[float | None], Any]:
    """(dataset, labels, metric) as a run on ``data`` reads them."""
    config = _config_on(made, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = load_dataset(config)
    metric = build_metric(config.metric, prompt_name=resolve_prompt(config, dataset).rename)
    return dataset, dataset.labels(), metric


def _another_label(scale: LabelScale, *taken: float | None) -> float:
    """A label of ``scale`` that none of ``taken`` is (the judge's verdict, the current label)."""
    candidates = scale.values if scale.values is not None else (0.0, 1.0, 0.25)
    return next(v for v in candidates if v not in taken)


def _written(path: Path, metric: str, position: int) -> dict[str, Any]:
    return dict(json.loads(path.read_text())[metric][position])


def _check_written(shape: Shape, before: dict[str, Any], after: dict[str, Any], value: float) -> None:
    """The label is where the shape keeps it: the sample's own for several prompts (no prompt
    touched: their edits are the human's corrections of each prompt), else the prompt's edited
    output, holding the verdict as the judge answers it."""
    assert after["is_accepted"] is False and after["annotator"] == "ana"
    if shape.prompt is None:
        assert after["target"] == value and after[HUMAN_REASON] == REASON
        assert after["prompts"] == before["prompts"]
        return
    assert set(after["prompts"]) == set(before["prompts"]) == {shape.prompt}
    edited = after["prompts"][shape.prompt]["edited_output"]
    field = "label" if shape.metric["type"] == "classification" else "verdict"
    expected = shape.names[value] if shape.names else value
    assert edited[field] == expected and edited["reason"] == REASON
    assert HUMAN_REASON not in after


def test_a_label_given_on_the_page_is_the_label_optimize_reads_for_every_metric_shape(made, tmp_path):
    data = tmp_path / made.data.name
    shutil.copy(made.data, data)
    queue = build_queue(data, run=made.run)
    assert queue.target.prompt_name == made.shape.prompt
    assert all(i.chosen is not None and i.chosen["error"] is None for i in queue.items)  # the run's judge
    dataset, labels, _ = _loaded(made, data)
    item = next(i for i in queue.items if i.position is not None and labels[i.position] is not None)
    position = item.position
    assert position is not None
    value = _another_label(queue.scale, dataset.samples[position].metric_output, labels[position])
    before = _written(data, dataset.name, position)

    queue.label(item.id, {"verdict": value, "reason": REASON, "annotator": "ana"})

    _check_written(made.shape, before, _written(data, dataset.name, position), value)
    dataset, labels, metric = _loaded(made, data)
    assert labels[position] == value  # the label the optimizer learns from
    evidence = classify(dataset, labels, [position], evidence_prompt(metric))[position]
    assert evidence.kind == "verdict"  # the judge's recorded verdict is not the human's
    if made.shape.prompt is not None:  # the human's reason is read as a correction that says why
        assert evidence.human_reason
    again = build_queue(data, run=made.run).item(item.id).label  # a restart shows what was given
    assert again is not None and (again["value"], again["reason"]) == (value, REASON)


def test_a_pool_trace_labelled_on_the_page_is_a_sample_optimize_reads(made, tmp_path):
    pool = tmp_path / "traces.jsonl"
    pool.write_text(json.dumps(made.shape.trace) + "\n")
    labels_file = tmp_path / "labels.json"
    queue = build_queue(labels_file, run=made.run, pool=pool)
    (item,) = queue.items
    value = _another_label(queue.scale, (item.judge or {}).get("verdict"))

    queue.label(item.id, {"verdict": value, "reason": REASON, "annotator": "ana"})

    dataset, labels, _ = _loaded(made, labels_file)
    assert labels == [value]
    sample = json.loads(labels_file.read_text())[dataset.name][0]
    if made.shape.prompt is None:  # no prompt's output is known, and none is made up
        assert sample["prompts"] == {} and sample[HUMAN_REASON] == REASON
    else:
        recorded = sample["prompts"][made.shape.prompt]["prompt_output"]
        judged = (item.judge or {})["verdict"]
        assert recorded[queue.target.label_field] == (made.shape.names or {}).get(judged, judged)


def test_a_two_prompt_file_without_a_run_keeps_each_prompts_corrections(tmp_path):
    """The newcomer's case: the bundled faithfulness file reviewed on its own. Its first sample
    holds the human's corrected statements (the extractor's ``edited_output``); a score given on
    the page is the sample's label and leaves that correction as it was."""
    data = _bundled_slice("faithfulness_statements", "faithfulness")(tmp_path)
    queue = build_queue(data)
    assert queue.target.prompt_name is None and queue.scale.kind == "numeric"
    item = queue.items[0]
    before = _written(data, "faithfulness", 0)
    assert before["prompts"]["statement_generator_prompt"]["edited_output"] is not None
    value = _another_label(queue.scale, before["metric_output"], before.get("target"))

    queue.label(item.id, {"verdict": value, "reason": REASON, "annotator": "ana"})

    _check_written(SHAPES["two prompts"], before, _written(data, "faithfulness", 0), value)
    config = RunConfig.model_validate({"dataset": str(data), "metric": STATEMENTS, "loss": {"type": "mse"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_dataset(config).labels()[0] == value
    relabel = queue.label(item.id, {"verdict": value, "reason": None, "annotator": "ana"})
    assert relabel.label is not None and relabel.label["reason"] is None  # a new label replaces it
    assert HUMAN_REASON not in _written(data, "faithfulness", 0)


def test_a_label_outside_a_two_prompt_metrics_scale_is_one_error_naming_item_and_field(tmp_path):
    data = _bundled_slice("faithfulness_statements", "faithfulness")(tmp_path)
    queue: ReviewQueue = build_queue(data)
    before = data.read_bytes()
    item = queue.items[2]
    for body, said in [
        ({"verdict": 1.5, "annotator": "ana"}, "verdict 1.5 is not a label of this metric"),
        ({"verdict": 0.5, "reason": 3, "annotator": "ana"}, "reason must be a string"),
    ]:
        with pytest.raises(ReviewError) as exc:
            queue.label(item.id, body)
        message = str(exc.value)
        assert message.startswith(f"item {item.id}: ") and said in message and "\n" not in message
        assert exc.value.status == 400
    assert data.read_bytes() == before
