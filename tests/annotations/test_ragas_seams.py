"""Where a Ragas 0.4.3 user's annotation code meets ours: slices and batches that concatenate as
Ragas' lists did, ``[]`` for a prompt no sample holds, a missing file that is still a
``FileNotFoundError``, Ragas' ``EvaluationDataset`` methods, and seeding that never touches
Python's global ``random`` (the one difference on purpose)."""

from __future__ import annotations

import csv
import importlib.util
import json
import random
from pathlib import Path

import pytest

from promptevolver import MetricAnnotation, SingleMetricAnnotation
from promptevolver.annotations import (
    AnnotationFileNotFoundError,
    EvaluationDataset,
    PromptAnnotation,
    SampleAnnotation,
    SingleTurnSample,
)
from promptevolver.errors import AnnotationError

from ..conftest import AC_FILE


def _sample(output: float, *, accepted: bool = True, prompt: str = "p") -> SampleAnnotation:
    return SampleAnnotation(
        metric_input={"user_input": f"q{output}", "response": "r"},
        metric_output=output,
        prompts={prompt: PromptAnnotation(prompt_input={"x": 1}, prompt_output={"verdict": output})},
        is_accepted=accepted,
    )


@pytest.fixture
def ds() -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(AC_FILE)


# --- Slices and batches concatenate ----------------------------------------------------------------


def test_slices_concatenate_as_ragas_lists_did(ds: SingleMetricAnnotation) -> None:
    joined = ds[0:2] + ds[3:4]
    assert isinstance(joined, SingleMetricAnnotation)
    assert joined == ds.samples[0:2] + ds.samples[3:4]  # what Ragas' list concatenation gave
    assert (joined.name, joined.kind, joined.source) == (ds.name, ds.kind, ds.source)
    assert (ds[5:6] + [ds[0]]) == [ds[5], ds[0]]
    assert ([ds[0]] + ds[5:6]) == [ds[0], ds[5]]  # the list's samples first
    assert ds[0:0] + ds[0:0] == []


@pytest.mark.parametrize("batch_size", [1, 4, 7, 100])
def test_batches_sum_back_to_every_sample_once(ds: SingleMetricAnnotation, batch_size: int) -> None:
    for batches in (
        ds.batch(batch_size, random_seed=1),
        ds.stratified_batches(batch_size, "metric_output", random_seed=1),
    ):
        total = sum(batches, [])
        assert isinstance(total, SingleMetricAnnotation) and len(total) == len(ds)
        assert sorted(map(id, total)) == sorted(map(id, ds))


def test_a_set_equals_the_list_of_its_samples_in_order(ds: SingleMetricAnnotation) -> None:
    assert ds[0:3] == ds.samples[0:3] and ds[0:3] != ds.samples[1:4]
    assert ds[0:3] != list(reversed(ds.samples[0:3]))
    assert ds[0:3] == ds[0:3] and ds[0:3] != ds[1:4]


def test_concatenating_other_metrics_kinds_or_things_is_refused(ds: SingleMetricAnnotation) -> None:
    other = SingleMetricAnnotation(name="faithfulness", samples=[_sample(1.0)])
    with pytest.raises(ValueError, match="two metrics, 'answer_correctness' and 'faithfulness'"):
        ds[0:1] + other
    numeric = SingleMetricAnnotation(name=ds.name, samples=[_sample(3.5)], kind="numeric")
    with pytest.raises(ValueError, match="binary and numeric annotations"):
        ds[0:1] + numeric
    with pytest.raises(AnnotationError, match="0.5"):
        ds[0:1] + [_sample(0.5)]  # a label the binary set cannot hold
    with pytest.raises(TypeError, match="item 1 of the list added is a dict"):
        ds[0:1] + [ds[1], {"metric_output": 1}]
    for thing in (3, "x", (ds[0],), None):
        with pytest.raises(TypeError, match="unsupported operand"):
            ds[0:1] + thing  # type: ignore[operator]


def test_a_list_joined_to_an_unkinded_set_takes_the_inferred_kind() -> None:
    unkinded = SingleMetricAnnotation.model_construct(name="m", samples=[_sample(1.0)], kind=None)
    assert (unkinded + [_sample(0.0)]).kind == "binary"
    assert (unkinded + [_sample(3.0), _sample(4.0)]).kind == "numeric"


# --- Prompt annotations ----------------------------------------------------------------------------


def test_a_prompt_no_sample_holds_gives_an_empty_list_as_in_ragas(ds: SingleMetricAnnotation) -> None:
    grouped = ds.get_prompt_annotations()
    assert grouped["a_prompt_nobody_ran"] == []
    present = SingleMetricAnnotation(name="m", samples=[_sample(1.0), _sample(0.0, accepted=False)])
    assert present.get_prompt_annotations()["p"] == [present[0].prompts["p"]]  # accepted only, as Ragas
    assert present.get_prompt_annotations(accepted_only=False)["p"] == [s.prompts["p"] for s in present]
    assert present.get_prompt_annotations()["q"] == []


# --- A missing file -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "load",
    [
        SingleMetricAnnotation.from_json,
        lambda p: MetricAnnotation.from_json(p, metric_name=None),
        EvaluationDataset.from_jsonl,
    ],
    ids=["SingleMetricAnnotation", "MetricAnnotation", "EvaluationDataset.from_jsonl"],
)
@pytest.mark.parametrize("name", ["absent.json", "absent.jsonl", "no_suffix"])
def test_a_missing_file_is_caught_by_a_ragas_except_and_by_ours(tmp_path: Path, load, name: str) -> None:
    path = tmp_path / name
    for caught in (FileNotFoundError, OSError, AnnotationError, ValueError):
        with pytest.raises(caught) as info:
            load(path)
        error = info.value
        assert type(error) is AnnotationFileNotFoundError
        assert str(error) == f"file {path}: file not found"
        assert (error.filename, error.errno, error.path) == (str(path), 2, str(path))


def test_a_directory_is_still_a_plain_annotation_error(tmp_path: Path) -> None:
    with pytest.raises(AnnotationError, match="is a directory") as info:
        SingleMetricAnnotation.from_json(tmp_path)
    assert not isinstance(info.value, FileNotFoundError)


# --- EvaluationDataset: Ragas' methods -------------------------------------------------------------

FEATURES = ["user_input", "retrieved_contexts", "response", "reference", "persona_name"]  # fields' order
ROWS = [
    {"user_input": "Where is Paris?", "response": "In France.", "retrieved_contexts": ["Paris, France"]},
    {"user_input": "Ünïcode?", "response": "Ja.", "reference": "Yes.", "persona_name": "Researcher"},
]


def test_list_dict_and_jsonl_round_trips(tmp_path: Path) -> None:
    dataset = EvaluationDataset.from_list(ROWS, backend="local/csv", name="qa")
    assert (dataset.backend, dataset.name, len(dataset)) == ("local/csv", "qa", 2)
    assert dataset.to_list() == ROWS
    assert EvaluationDataset.from_dict(ROWS).to_list() == ROWS  # Ragas' from_dict takes records
    columns = {"user_input": ["a", "b"], "response": ["x", "y"]}
    assert EvaluationDataset.from_dict(columns).to_list() == [
        {"user_input": "a", "response": "x"},
        {"user_input": "b", "response": "y"},
    ]
    with pytest.raises(ValueError, match="columns of different lengths"):
        EvaluationDataset.from_dict({"user_input": ["a", "b"], "response": ["x"]})
    dataset.to_jsonl(tmp_path / "d.jsonl")
    lines = (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == ROWS and "Ünïcode" in lines[1]
    assert EvaluationDataset.from_jsonl(tmp_path / "d.jsonl").to_list() == ROWS


def test_from_jsonl_names_the_bad_line(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"user_input": "a"}\n{"user_input": 3}\n', encoding="utf-8")
    with pytest.raises(AnnotationError, match="sample 1, field 'user_input'"):
        EvaluationDataset.from_jsonl(tmp_path / "d.jsonl")
    (tmp_path / "e.jsonl").write_text('{"user_input": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(AnnotationError, match="line 2"):
        EvaluationDataset.from_jsonl(tmp_path / "e.jsonl")


def test_csv_has_every_feature_as_a_column_and_lists_as_json(tmp_path: Path) -> None:
    EvaluationDataset.from_list(ROWS).to_csv(tmp_path / "d.csv")
    with (tmp_path / "d.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == FEATURES
    assert json.loads(rows[0]["retrieved_contexts"]) == ["Paris, France"]
    assert rows[1]["retrieved_contexts"] == "" and rows[1]["user_input"] == "Ünïcode?"
    EvaluationDataset(samples=[]).to_csv(tmp_path / "empty.csv")
    assert not (tmp_path / "empty.csv").exists()  # as Ragas: nothing to write


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="needs pandas (pip install pandas)")
def test_pandas_round_trip_keeps_absent_fields_absent() -> None:
    frame = EvaluationDataset.from_list(ROWS).to_pandas()
    assert list(frame.columns) == FEATURES
    assert EvaluationDataset.from_pandas(frame).to_list() == ROWS


NO_DATASETS = importlib.util.find_spec("datasets") is None


@pytest.mark.skipif(NO_DATASETS, reason="needs datasets (pip install datasets)")
def test_hugging_face_round_trip_keeps_every_samples_fields() -> None:
    dataset = EvaluationDataset.from_list(ROWS)  # the second sample has fields the first has not
    hf = dataset.to_hf_dataset()
    assert hf.column_names == FEATURES
    assert EvaluationDataset.from_hf_dataset(hf) == dataset


def test_inspection_and_slices_keep_what_ragas_keeps() -> None:
    dataset = EvaluationDataset.from_list(ROWS, backend="inmemory", name="qa")
    assert dataset.get_sample_type() is SingleTurnSample and dataset.is_multi_turn() is False
    assert dataset.features() == FEATURES
    part = dataset[1:]
    assert (part.backend, part.name, part.to_list()) == ("inmemory", "qa", ROWS[1:])
    assert str(dataset) == repr(dataset) == f"EvaluationDataset(features={dataset.features()}, len=2)"
    assert dataset.validate_samples(dataset.samples) == dataset.samples
    with pytest.raises(ValueError, match="Sample at index 1 is of type <class 'dict'>"):
        dataset.validate_samples([dataset[0], {"user_input": "x"}])  # type: ignore[list-item]
    assert dataset[0].to_string() == (
        "\nuser_input:\n\tWhere is Paris?\n"
        "\nretrieved_contexts:\n\t['Paris, France']\n"
        "\nresponse:\n\tIn France.\n"
    )


def test_the_annotations_to_evaluation_dataset_has_ragas_methods(ds: SingleMetricAnnotation) -> None:
    dataset = ds.to_evaluation_dataset()
    assert dataset.to_list() == [s.metric_input for s in ds] and dataset.get_sample_type() is SingleTurnSample


# --- Seeding: the difference on purpose ------------------------------------------------------------


def test_sampling_neither_reads_nor_advances_pythons_global_random(ds: SingleMetricAnnotation) -> None:
    random.seed(0)
    before = random.getstate()
    ds.sample(5, random_seed=3)
    ds.batch(4, random_seed=3)
    ds.stratified_batches(4, "metric_output", random_seed=3)
    ds.train_test_split(random_seed=3)
    assert random.getstate() == before  # the user's own random stream is left as it was
    assert ds.sample(5, random_seed=3) == ds.sample(5, random_seed=3)
    assert [b == c for b, c in zip(ds.batch(4, random_seed=3), ds.batch(4, random_seed=3))] == [True] * 5


def test_random_seed_zero_does_not_seed_sampling(ds: SingleMetricAnnotation) -> None:
    """Ragas drew from the global ``random`` (``random.seed(0)`` made it repeat); here an unseeded
    call draws fresh entropy: over 20 tries, two draws of 9 of 18 samples differ at least once."""
    draws = []
    for _ in range(20):
        random.seed(0)
        draws.append([id(s) for s in ds.sample(9)])
    assert len({tuple(d) for d in draws}) > 1
