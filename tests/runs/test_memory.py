"""Incremental memory (``promptevolver examples``): annotations added to a finished run's example
store, or removed from it, re-verified on the run's validation samples without a search."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest
import yaml

from promptevolver import SingleMetricAnnotation, UnusableSamplesWarning, rundir
from promptevolver.cli import main
from promptevolver.errors import AnnotationError, ConfigError
from promptevolver.judge._examples import ExampleStore
from promptevolver.rundir import load_examples, read_result
from promptevolver.runs.memory import changed_store, update_examples

from ..helpers import make_dataset
from ..optimizers.test_examples_stage import DEFINITION, _llm, _optimize


@pytest.fixture(scope="module")
def ds():
    return make_dataset(60, 24)


@pytest.fixture
def run_dir(ds, tmp_path):
    """A finished run whose judge shows retrieved examples, with the config to re-judge it."""
    result = _optimize(
        ds, _llm(ds, examples_help=True), strategy="examples", examples={"policy": "retrieval"}
    )
    assert result.example_policy == "retrieval"
    with rundir.locked(tmp_path):  # made a run directory (marked as ours) before its files
        pass
    ds.to_json(tmp_path / "annotations.json")
    config = {
        "metric": {"name": ds.name, "definition": DEFINITION},
        "dataset": str(tmp_path / "annotations.json"),
        "llm": {"provider": "fake"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result.to_json(tmp_path / "result.json")
    return tmp_path


def _more(n: int) -> SingleMetricAnnotation:
    data = json.loads(make_dataset(n, 0).model_dump_json())
    for i, s in enumerate(data["samples"]):
        s["metric_input"] = {"user_input": f"new question {i}", "response": f"new answer {i}"}
    return SingleMetricAnnotation.model_validate(data)


def test_adding_annotations_grows_the_store_and_records_held_out_figures(run_dir, ds, tmp_path):
    before = load_examples(run_dir)["store"]
    more = _more(4)
    more.to_json(tmp_path / "more.json")
    record = asyncio.run(update_examples(run_dir, add=tmp_path / "more.json"))
    after = load_examples(run_dir)
    assert record["added"] == 4 and record["pool_after"] == len(before["positions"]) + 4
    assert record["added_positions"] == [len(ds.samples) + i for i in range(4)]
    assert [s["metric_input"] for s in after["store"]["samples"][-4:]] == [
        s.metric_input for s in more.samples
    ]
    held = record["held_out"]
    validation = read_result(run_dir)["split"]["validation_positions"]
    assert held["n"] == len(validation) and held["figure"] == "accuracy"
    assert held["before"]["n"] == held["after"]["n"] == len(validation)
    assert record["meta_calls"] == 0 and record["judge_calls"] == 2 * len(validation)
    assert after["updates"] == [record]
    written = (run_dir / "result.json").read_bytes()
    again = asyncio.run(update_examples(run_dir, add=tmp_path / "more.json"))  # the same file twice
    assert again["added"] == 0 and again["already_in_the_pool"] == 4
    assert not again["changed"] and again["judge_calls"] == 0  # a no-op costs nothing (issue 31)
    assert (run_dir / "result.json").read_bytes() == written


def test_removing_every_example_leaves_the_judge_without_and_its_prompts_shorter(run_dir):
    pool = load_examples(run_dir)["store"]["positions"]
    record = asyncio.run(update_examples(run_dir, remove=pool))
    assert record["removed"] == sorted(pool) and record["pool_after"] == 0
    tokens = record["prompt_tokens_per_judge_call"]
    assert tokens["after"] < tokens["before"]
    assert load_examples(run_dir)["store"]["positions"] == []


def test_bad_requests_fail_before_any_llm_call(run_dir, tmp_path):
    unchanged = (run_dir / "result.json").read_text()
    with pytest.raises(ConfigError, match=r"positions \[9999\] to remove are not in the run's example store"):
        asyncio.run(update_examples(run_dir, remove=[9999]))
    for bad in (0.5, float("nan")):  # a binary label that is no verdict; a failed judge call
        data = json.loads(_more(3).model_dump_json())
        data["samples"][1]["metric_output"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(data))
        with (
            warnings.catch_warnings(),
            pytest.raises(AnnotationError, match=r"bad\.json.*sample 1|sample 1.*bad"),
        ):
            warnings.simplefilter("ignore", UnusableSamplesWarning)
            asyncio.run(update_examples(run_dir, add=tmp_path / "bad.json"))
    with pytest.raises(ConfigError, match="nothing to change"):
        asyncio.run(update_examples(run_dir))
    assert (run_dir / "result.json").read_text() == unchanged


def test_a_run_without_examples_has_no_store_to_change(ds, tmp_path):
    result = _optimize(
        ds, _llm(ds, examples_help=False), strategy="examples", examples={"policy": "retrieval"}
    )
    assert result.example_policy == "none"
    result.to_json(tmp_path / "result.json")
    with pytest.raises(ConfigError, match="shows no teaching examples"):
        asyncio.run(update_examples(tmp_path, remove=[0]))


def test_the_cli_updates_the_run_and_prints_one_line(run_dir, capsys):
    pool = load_examples(run_dir)["store"]["positions"]
    assert main(["examples", str(run_dir), "--remove", f"{pool[0]},{pool[1]}"]) == 0
    out = capsys.readouterr().out
    assert "-2 removed" in out and "0 meta calls" in out and "held-out accuracy" in out
    assert main(["examples", str(run_dir)]) == 2
    assert "--add FILE, --remove IDS" in capsys.readouterr().err


def test_a_static_set_loses_removed_samples_and_added_ones_join_the_pool_only():
    ds = make_dataset(12, 6)
    store = ExampleStore(ds.samples[:8], [10, 11, 12, 13, 14, 15, 16, 17], k=3, static=[1, 4, 6])
    more = _more(2)
    changed, record = changed_store(store, "static", add=more, remove=[14, 10], first_position=100)
    assert record["static_before"] == [11, 14, 16] and record["static_after"] == [11, 16]
    assert changed.positions == [11, 12, 13, 15, 16, 17, 100, 101]
    assert changed.examples_for("static", {}) == [ds.samples[1], ds.samples[6]]
    assert record["removed"] == [10, 14] and record["added_positions"] == [100, 101]
