"""Annotation files: every shape both loaders read, exact round trips, located errors, unusable
samples, the evaluation dataset, and the Ragas call shapes."""

from __future__ import annotations

import gc
import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest

from promptevolver.annotations import (
    AnnotationKeyError,
    EvaluationDataset,
    MetricAnnotation,
    PromptAnnotation,
    SampleAnnotation,
    SingleMetricAnnotation,
    SingleTurnSample,
    UnusableSample,
    UnusableSamplesWarning,
)
from promptevolver.errors import AnnotationError

from .test_annotations import AC_FILE, HELP_FILE, PROMPT, raw_samples, sample_dict, write_json

BUNDLED = pytest.mark.parametrize("path", [AC_FILE, HELP_FILE], ids=["answer_correctness", "helpfulness"])


def read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def write_jsonl(path: Path, items: list[Any]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


@pytest.fixture
def two_metrics(tmp_path: Path) -> Path:
    _, ac_raw = raw_samples(AC_FILE)
    _, help_raw = raw_samples(HELP_FILE)
    return write_json(tmp_path / "both.json", {"answer_correctness": ac_raw, "helpfulness": help_raw})


@pytest.fixture(autouse=True)
def _warnings_are_errors() -> Any:
    """A loader that warns where it should not fails the test; expected warnings use pytest.warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusableSamplesWarning)
        yield


# --- Shapes -------------------------------------------------------------------------------------


@BUNDLED
def test_single_loader_reads_a_ragas_file_holding_one_metric(path: Path) -> None:
    name, raw = raw_samples(path)
    dataset = SingleMetricAnnotation.from_json(path)
    assert (dataset.name, len(dataset), dataset.source) == (name, len(raw), str(path))
    assert SingleMetricAnnotation.from_json(path, metric_name=name) == dataset


def test_single_loader_on_several_metrics_needs_a_name_and_lists_them(two_metrics: Path) -> None:
    with pytest.raises(AnnotationError) as info:
        SingleMetricAnnotation.from_json(two_metrics)
    message = str(info.value)
    assert "answer_correctness" in message and "helpfulness" in message and "metric_name" in message
    assert info.value.path == str(two_metrics)
    chosen = SingleMetricAnnotation.from_json(two_metrics, metric_name="helpfulness")
    assert chosen == MetricAnnotation.from_json(two_metrics)["helpfulness"]


def test_every_shape_loads_with_both_loaders(tmp_path: Path) -> None:
    samples = [sample_dict(1, i=0), sample_dict(0, is_accepted=False, i=1)]
    files = {
        "ragas": write_json(tmp_path / "ragas.json", {"m": samples}),
        "named": write_json(tmp_path / "named.json", {"name": "m", "samples": samples}),
        "list": write_json(tmp_path / "m.json", samples),
        "jsonl": write_jsonl(tmp_path / "m.jsonl", samples),
    }
    want = SingleMetricAnnotation.model_validate({"name": "m", "samples": samples})
    for kind, path in files.items():
        single = SingleMetricAnnotation.from_json(path)
        multi = MetricAnnotation.from_json(path)
        assert single == want, kind
        assert list(multi.root) == ["m"] and multi["m"] == want, kind
        assert single.source == multi.source == str(path)


def test_list_and_jsonl_files_are_named_by_metric_name_else_the_stem(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "export-2024.jsonl", [sample_dict()])
    assert SingleMetricAnnotation.from_json(path).name == "export-2024"
    assert SingleMetricAnnotation.from_json(path, metric_name="faithfulness").name == "faithfulness"
    assert list(MetricAnnotation.from_json(path, metric_name="x").root) == ["x"]


def test_named_file_with_another_metric_name_is_an_error(tmp_path: Path) -> None:
    path = write_json(tmp_path / "named.json", {"name": "m", "samples": [sample_dict()]})
    for loader in (SingleMetricAnnotation.from_json, MetricAnnotation.from_json):
        with pytest.raises(AnnotationError, match=r"'other' not in file; metrics present: \['m'\]"):
            loader(path, metric_name="other")


def test_empty_files(tmp_path: Path) -> None:
    no_metrics = write_json(tmp_path / "empty.json", {})
    assert len(MetricAnnotation.from_json(no_metrics)) == 0  # no annotation
    with pytest.raises(AnnotationError, match="0 metrics"):
        SingleMetricAnnotation.from_json(no_metrics)
    no_samples = write_json(tmp_path / "none.json", {"m": []})
    assert len(SingleMetricAnnotation.from_json(no_samples)) == 0
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n", encoding="utf-8")
    assert len(SingleMetricAnnotation.from_json(blank)) == 0


def test_jsonl_skips_blank_lines_and_names_the_broken_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    good = json.dumps(sample_dict())
    path.write_text(f"{good}\n\n{good}\n{{broken\n{good}\n", encoding="utf-8")
    with pytest.raises(AnnotationError) as info:
        SingleMetricAnnotation.from_json(path)
    assert "line 4" in str(info.value) and str(path) in str(info.value)
    assert info.value.sample_index == 2


def test_jsonl_sample_errors_name_the_sample_index(tmp_path: Path) -> None:
    bad = {**sample_dict(), "is_accepted": "maybe"}
    path = write_jsonl(tmp_path / "m.jsonl", [sample_dict(), sample_dict(), bad])
    with pytest.raises(AnnotationError) as info:
        SingleMetricAnnotation.from_json(path)
    assert (info.value.sample_index, info.value.field, info.value.metric) == (2, "is_accepted", "m")


# --- Round trips ----------------------------------------------------------------------------------


@BUNDLED
def test_writing_a_loaded_ragas_file_gives_back_the_same_json(path: Path, tmp_path: Path) -> None:
    name, raw = raw_samples(path)
    multi_out, single_out = tmp_path / "multi.json", tmp_path / "single.json"
    MetricAnnotation.from_json(path).to_json(multi_out)
    SingleMetricAnnotation.from_json(path).to_json(single_out)
    assert read_json(multi_out) == read_json(path)  # no null fields added, nothing lost
    assert read_json(single_out) == {"name": name, "kind": "binary", "samples": raw}


@BUNDLED
def test_to_json_round_trips_object_and_file(path: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    original = SingleMetricAnnotation.from_json(path)
    original.to_json(first)
    again = SingleMetricAnnotation.from_json(first)
    again.to_json(second)
    assert again == original
    assert first.read_bytes() == second.read_bytes()

    multi = MetricAnnotation.from_json(path)
    multi.to_json(first)
    assert MetricAnnotation.from_json(first) == multi
    MetricAnnotation.from_json(first).to_json(second)
    assert first.read_bytes() == second.read_bytes()


@BUNDLED
def test_to_jsonl_round_trips(path: Path, tmp_path: Path) -> None:
    original = SingleMetricAnnotation.from_json(path)
    out = tmp_path / f"{original.name}.jsonl"
    original.to_jsonl(out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(original)
    assert [json.loads(line) for line in lines] == raw_samples(path)[1]
    assert SingleMetricAnnotation.from_json(out) == original
    elsewhere = tmp_path / "other.jsonl"
    original.to_jsonl(elsewhere)
    assert SingleMetricAnnotation.from_json(elsewhere, metric_name=original.name) == original


def test_round_trip_of_awkward_text_extras_and_nan(tmp_path: Path) -> None:
    item = sample_dict(1, target=0.0)
    item["metric_input"]["user_input"] = 'line\nbreak\r\u2028sep "quoted" é 😀 \\ \x00'
    item["extra"] = {"nested": [1, 2.5, None, True]}
    failed = {**sample_dict(i=1), "metric_output": float("nan")}
    original = SingleMetricAnnotation.model_validate({"name": "m", "samples": [item, failed]})
    for out in (tmp_path / "m.json", tmp_path / "m.jsonl"):
        (original.to_json if out.suffix == ".json" else original.to_jsonl)(out)
        with pytest.warns(UnusableSamplesWarning):
            again = SingleMetricAnnotation.from_json(out)
        assert again.samples[0] == original.samples[0]
        assert math.isnan(again.samples[1].metric_output)


# --- Errors ---------------------------------------------------------------------------------------


def test_errors_name_file_metric_sample_and_nested_field(two_metrics: Path, tmp_path: Path) -> None:
    data = read_json(two_metrics)
    data["helpfulness"][4]["prompts"][PROMPT]["edited_output"] = "not an object"
    path = write_json(tmp_path / "nested.json", data)
    for loader in (MetricAnnotation.from_json, SingleMetricAnnotation.from_json):
        with pytest.raises(AnnotationError) as info:
            loader(path, metric_name="helpfulness")
        err = info.value
        assert (err.metric, err.sample_index) == ("helpfulness", 4)
        assert err.field == f"prompts.{PROMPT}.edited_output"
        assert all(part in str(err) for part in (str(path), "'helpfulness'", "sample 4", err.field))


def test_error_counts_further_errors(tmp_path: Path) -> None:
    samples = [{**sample_dict(i=i), "is_accepted": "maybe"} for i in range(3)]
    with pytest.raises(AnnotationError, match="2 more error"):
        SingleMetricAnnotation.from_json(write_json(tmp_path / "m.json", {"m": samples}))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"metric_output": float("inf")}, "metric_output"),
        ({"target": float("nan")}, "target"),
        ({"metric_input": {"input": "q", "user_input": "q"}}, "metric_input"),
        ({"prompts": {PROMPT: {"prompt_input": {"actual_output": "a", "response": "a"}}}}, "prompts"),
        ({"prompts": {PROMPT: {"prompt_output": {}}}}, f"prompts.{PROMPT}.prompt_input"),
    ],
    ids=["infinite-output", "nan-target", "alias-twice", "prompt-alias-twice", "no-prompt-input"],
)
def test_invalid_values_are_located(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"m": [sample_dict(), {**sample_dict(), **change}]}), encoding="utf-8")
    with pytest.raises(AnnotationError) as info:
        MetricAnnotation.from_json(path)
    assert info.value.sample_index == 1
    assert info.value.field is not None and info.value.field.startswith(field)


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    directory = tmp_path / "dir.json"
    directory.mkdir()
    for loader in (SingleMetricAnnotation.from_json, MetricAnnotation.from_json):
        with pytest.raises(AnnotationError, match="is a directory, not an annotation file") as info:
            loader(directory)
        assert info.value.path == str(directory)
    with pytest.raises(AnnotationError, match="file not found"):
        SingleMetricAnnotation.from_json(tmp_path / "absent.json")


def test_sample_and_prompt_getitem_cover_every_field(tmp_path: Path) -> None:
    item = {**sample_dict(target=1), "annotator": "bob"}
    item["prompts"][PROMPT]["is_accepted"] = True
    sample = SampleAnnotation.model_validate(item)
    for field in SampleAnnotation.model_fields:
        assert sample[field] is getattr(sample, field)
    assert sample["annotator"] == "bob"
    prompt = sample["prompts"][PROMPT]
    for field in PromptAnnotation.model_fields:
        assert prompt[field] == item["prompts"][PROMPT][field]
    for model in (sample, prompt):
        with pytest.raises(AnnotationKeyError, match="'nope'") as info:
            model["nope"]
        assert isinstance(info.value, KeyError)
        assert "annotator" in str(info.value) or model is prompt  # lists the fields there are


# --- Field names of other libraries ---------------------------------------------------------------


def test_prompt_inputs_get_the_same_field_names_as_metric_inputs() -> None:
    item = sample_dict()
    other = {"input": "q", "actual_output": "a", "expected_output": "r", "retrieval_context": "c"}
    item["metric_input"] = dict(other)
    item["prompts"][PROMPT]["prompt_input"] = dict(other)
    sample = SampleAnnotation.model_validate(item)
    want = {"user_input": "q", "response": "a", "reference": "r", "retrieved_contexts": ["c"]}
    assert sample.metric_input == want
    assert sample.prompts[PROMPT].prompt_input == want


def test_contexts_already_lists_and_none_are_kept() -> None:
    item = sample_dict()
    item["metric_input"] = {"retrieved_contexts": None, "expected_context": ["a", "b"], "rubrics": {"1": "x"}}
    sample = SampleAnnotation.model_validate(item)
    assert sample.metric_input == {
        "retrieved_contexts": None,
        "reference_contexts": ["a", "b"],
        "rubrics": {"1": "x"},
    }


# --- Unusable samples -----------------------------------------------------------------------------


def non_binary_items() -> list[dict[str, Any]]:
    return [
        sample_dict(0.7, is_accepted=False),  # rejected, non-binary, no target
        sample_dict(0.25, is_accepted=True),
        {**sample_dict(i=2), "metric_output": float("nan")},  # failed judge call
        sample_dict(0.4, is_accepted=False, target=0.9),
        {**sample_dict(i=4), "metric_output": float("nan"), "target": 0.5},
    ]


def test_unusable_samples_are_reported_with_reasons() -> None:
    dataset = SingleMetricAnnotation.model_validate({"name": "score", "samples": non_binary_items()})
    assert dataset.labels() == [None, 0.25, None, 0.9, 0.5]
    unusable = dataset.unusable_samples()
    assert (
        [u.sample_index for u in unusable]
        == [0, 2]
        == [i for i in range(5) if i not in dataset.usable_indices()]
    )
    assert all(isinstance(u, UnusableSample) for u in unusable)
    assert "rejected" in unusable[0].reason and "non-binary" in unusable[0].reason
    assert "NaN" in unusable[1].reason


def test_loaders_warn_about_unusable_samples(tmp_path: Path) -> None:
    path = write_json(tmp_path / "scores.json", {"score": non_binary_items()})
    for loader in (SingleMetricAnnotation.from_json, MetricAnnotation.from_json):
        with pytest.warns(UnusableSamplesWarning) as record:
            loader(path)
        (warning,) = record
        message = str(warning.message)
        assert str(path) in message and "'score'" in message and "2 of 5" in message
        assert "[0]" in message and "[2]" in message
        assert warning.filename == __file__  # points at the caller's line


def test_nan_outputs_do_not_make_a_binary_metric_non_binary() -> None:
    items = [
        sample_dict(1),
        sample_dict(0, is_accepted=False),
        {**sample_dict(), "metric_output": float("nan")},
    ]
    dataset = SingleMetricAnnotation.model_validate({"name": "m", "samples": items})
    assert dataset.is_binary
    assert dataset.labels() == [1.0, 1.0, None]
    assert dataset.stratify_keys("metric_output") == [1.0, 0.0, None]
    assert [u.sample_index for u in dataset.unusable_samples()] == [2]


# --- Evaluation dataset ---------------------------------------------------------------------------


@BUNDLED
def test_to_evaluation_dataset_holds_the_metric_inputs(path: Path) -> None:
    dataset = SingleMetricAnnotation.from_json(path)
    evaluation = dataset.to_evaluation_dataset()
    assert isinstance(evaluation, EvaluationDataset)
    assert len(evaluation) == len(dataset)
    assert evaluation.to_list() == [
        {k: v for k, v in s.metric_input.items() if v is not None} for s in dataset
    ]
    assert all(isinstance(sample, SingleTurnSample) for sample in evaluation)
    assert evaluation[0].user_input == dataset[0].metric_input["user_input"]
    assert set(evaluation.features()) == {k for s in dataset for k in s.metric_input}
    assert evaluation[1:3].to_list() == evaluation.to_list()[1:3]
    assert EvaluationDataset.from_list(evaluation.to_list()) == evaluation
    assert f"len={len(dataset)}" in repr(evaluation)


def test_metric_annotation_to_evaluation_dataset_concatenates_metrics(two_metrics: Path) -> None:
    multi = MetricAnnotation.from_json(two_metrics)
    evaluation = multi.to_evaluation_dataset()
    assert len(evaluation) == multi.n_samples
    assert evaluation.to_list() == [t for m in multi.values() for t in m.to_evaluation_dataset().to_list()]


def test_evaluation_dataset_fields_aliases_and_extras() -> None:
    evaluation = EvaluationDataset.from_list(
        [{"input": "q", "retrieved_context": "c", "rubrics": {"score1": "bad"}, "tag": 7}, {"response": "r"}]
    )
    first = evaluation[0]
    assert (first.user_input, first.retrieved_contexts, first.rubrics) == ("q", ["c"], {"score1": "bad"})
    assert first.get_features() == ["user_input", "retrieved_contexts", "rubrics", "tag"]
    assert evaluation.to_list()[1] == {"response": "r"}


def test_multi_turn_inputs_are_located_errors(tmp_path: Path) -> None:
    items = [sample_dict(), sample_dict()]
    items[1]["metric_input"]["user_input"] = [{"content": "hi", "type": "human"}]
    dataset = SingleMetricAnnotation.from_json(write_json(tmp_path / "chat.json", {"chat": items}))
    with pytest.raises(AnnotationError) as info:
        dataset.to_evaluation_dataset()
    err = info.value
    assert (err.path, err.metric, err.sample_index, err.field) == (
        str(tmp_path / "chat.json"),
        "chat",
        1,
        "metric_input.user_input",
    )
    with pytest.raises(AnnotationError) as bare:
        EvaluationDataset.from_list([{}, {"user_input": 3}])
    assert (bare.value.sample_index, bare.value.field) == (1, "user_input")


# --- Sequence behaviour and the Ragas call shapes -------------------------------------------------


def test_slices_reprs_and_str() -> None:
    dataset = SingleMetricAnnotation.from_json(HELP_FILE)
    part = dataset[2:8:2]
    assert isinstance(part, SingleMetricAnnotation)
    assert part.samples == dataset.samples[2:8:2] and part.source == dataset.source
    assert repr(dataset) == str(dataset) == "SingleMetricAnnotation(name='helpfulness', len=21)"
    assert repr(MetricAnnotation.from_json(HELP_FILE)) == "MetricAnnotation({'helpfulness': 21})"


def test_ragas_call_shapes(two_metrics: Path) -> None:
    """The calls Ragas' optimizer and users make, with Ragas' positional signatures."""
    multi = MetricAnnotation.from_json(two_metrics, None)
    dataset = multi["helpfulness"]
    assert len(multi) == multi.n_samples == len(multi["answer_correctness"]) + len(dataset)  # Ragas' len
    assert len(dataset.sample(5, "metric_output")) == 5
    assert len(dataset.sample(5)) == 5
    batches = dataset.batch(4, True)
    assert [len(b) for b in batches] == [4] * (len(dataset) // 4)
    stratified = dataset.stratified_batches(3, "metric_output", False, True)
    assert all(len(b) == 3 for b in stratified)
    for batch in stratified:
        for sample in batch:
            assert sample["metric_input"]["user_input"]
            assert sample["prompts"][PROMPT]["prompt_output"]["verdict"] in (0, 1)
    train, test = dataset.train_test_split(0.2, 42)
    assert len(train) + len(test) == len(dataset)
    assert dataset.select([0, 1]).samples == dataset.samples[:2]
    assert len(dataset.filter()) == len(dataset)
    assert set(dataset.get_prompt_annotations()) == {PROMPT}
    assert len(dataset.to_evaluation_dataset()) == len(dataset)


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_restores_the_garbage_collector_state(tmp_path: Path, enabled: bool) -> None:
    good = write_json(tmp_path / "good.json", {"m": [sample_dict()]})
    bad = write_json(tmp_path / "bad.json", {"m": [{"metric_output": 1}]})
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        SingleMetricAnnotation.from_json(good)
        assert gc.isenabled() is enabled
        with pytest.raises(AnnotationError):
            MetricAnnotation.from_json(bad)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
