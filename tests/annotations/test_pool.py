"""Reading a pool of traces to annotate: metric-input rows or an annotation file, labels ignored."""

from __future__ import annotations

import json

import pytest

from promptevolver.annotations._pool import read_pool
from promptevolver.errors import AnnotationError

from ..conftest import ROOT

ROW = {"user_input": "q", "response": "a", "reference": "r"}


def test_jsonl_rows_are_traces_in_file_order_with_ragas_field_names(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_text(json.dumps(ROW) + "\n\n" + json.dumps({"input": "q2", "actual_output": "a2"}) + "\n")
    assert read_pool(path) == [ROW, {"user_input": "q2", "response": "a2"}]


def test_rows_carrying_a_metric_input_give_only_their_inputs(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_text(json.dumps({"metric_input": ROW, "metric_output": 1, "is_accepted": True}) + "\n")
    assert read_pool(path) == [ROW]


def test_an_annotation_file_gives_its_metric_inputs():
    path = ROOT / "benchmarks" / "data" / "edited_chain_runs.json"
    data = json.loads(path.read_text())["answer_correctness"]
    assert read_pool(path) == [s["metric_input"] for s in data]
    assert read_pool(path, metric_name="answer_correctness") == read_pool(path)


def test_a_file_of_several_metrics_needs_the_name(tmp_path):
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"a": [{"metric_input": ROW}], "b": [{"metric_input": ROW}]}))
    with pytest.raises(AnnotationError, match="several metrics"):
        read_pool(path)
    assert read_pool(path, metric_name="b") == [ROW]


@pytest.mark.parametrize(
    ("lines", "index", "field"),
    [
        ([json.dumps(ROW), "[1, 2]"], 1, None),
        ([json.dumps(ROW), json.dumps({"metric_input": "text"})], 1, "metric_input"),
        (["{}"], 0, None),
        ([json.dumps({"input": "q", "user_input": "q"})], 0, None),
    ],
)
def test_a_bad_trace_names_file_and_index(tmp_path, lines, index, field):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(AnnotationError) as err:
        read_pool(path)
    assert err.value.sample_index == index and err.value.field == field and str(path) in str(err.value)


def test_an_empty_pool_is_an_error(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(AnnotationError, match="no trace"):
        read_pool(path)
