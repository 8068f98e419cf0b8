"""Annotation loading, human labels, expected outputs, errors and the sampling API.

Facts about the bundled files are recomputed from the raw JSON, never hard-coded, except the
sample counts stated in the data's own description (18 answer_correctness, 21 helpfulness with
5 rejected).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from promptevolver.annotations import (
    FIELD_ALIASES,
    AnnotationKeyError,
    MetricAnnotation,
    PromptAnnotation,
    SampleAnnotation,
    SingleMetricAnnotation,
)
from promptevolver.errors import AnnotationError

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
AC_FILE = DATA / "edited_chain_runs.json"
HELP_FILE = DATA / "annotated_data.json"
PROMPT = "single_turn_aspect_critic_prompt"


def raw_samples(path: Path) -> tuple[str, list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    ((name, samples),) = data.items()
    return name, samples


def expected_label(sample: dict[str, Any], binary: bool) -> float | None:
    """The human-label rule, written independently of the library."""
    if sample.get("target") is not None:
        return float(sample["target"])
    if sample["is_accepted"]:
        return float(sample["metric_output"])
    if binary:
        return 1.0 - float(sample["metric_output"])
    return None


def sample_dict(
    metric_output: float = 1,
    *,
    is_accepted: bool = True,
    target: float | None = None,
    edited: dict[str, Any] | None = None,
    i: int = 0,
) -> dict[str, Any]:
    return {
        "metric_input": {"user_input": f"q{i}", "response": f"a{i}"},
        "metric_output": metric_output,
        "is_accepted": is_accepted,
        "target": target,
        "prompts": {
            PROMPT: {
                "prompt_input": {"user_input": f"q{i}", "response": f"a{i}"},
                "prompt_output": {"reason": f"r{i}", "verdict": metric_output},
                "edited_output": edited,
            }
        },
    }


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def positions(subset: SingleMetricAnnotation, full: SingleMetricAnnotation) -> list[int]:
    """Positions in ``full`` of ``subset``'s samples (samples are shared objects, not copies)."""
    index = {id(s): i for i, s in enumerate(full)}
    return [index[id(s)] for s in subset]


@pytest.fixture
def ac() -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(AC_FILE)


@pytest.fixture
def helpfulness() -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(HELP_FILE)


# --- Loading the bundled files ------------------------------------------------------------------


@pytest.mark.parametrize("path", [AC_FILE, HELP_FILE], ids=["answer_correctness", "helpfulness"])
def test_bundled_files_load_with_both_loaders(path: Path) -> None:
    name, raw = raw_samples(path)
    single = SingleMetricAnnotation.from_json(path)
    multi = MetricAnnotation.from_json(path)

    assert single.name == name
    assert len(single) == len(raw)
    assert single.source == str(path)
    assert list(multi.root) == [name]
    assert multi[name] == single
    for sample, item in zip(single, raw):
        assert isinstance(sample, SampleAnnotation)
        assert sample.metric_output == item["metric_output"]
        assert sample.is_accepted == item["is_accepted"]
        assert sample.metric_input == item["metric_input"]
        assert set(sample.prompts) == set(item["prompts"])


def test_bundled_sizes_match_the_data_description(
    ac: SingleMetricAnnotation, helpfulness: SingleMetricAnnotation
) -> None:
    assert (ac.name, len(ac)) == ("answer_correctness", 18)
    assert (helpfulness.name, len(helpfulness)) == ("helpfulness", 21)
    assert sum(not s.is_accepted for s in helpfulness) == 5
    assert ac.is_binary and helpfulness.is_binary


def test_prompt_level_is_accepted_is_accepted(ac: SingleMetricAnnotation) -> None:
    _, raw = raw_samples(AC_FILE)
    assert any("is_accepted" in item["prompts"][PROMPT] for item in raw)
    for sample, item in zip(ac, raw):
        assert sample.prompts[PROMPT].is_accepted == item["prompts"][PROMPT].get("is_accepted")


def test_unknown_prompt_level_keys_are_kept() -> None:
    prompt = PromptAnnotation.model_validate({"prompt_input": {}, "is_accepted": False, "note": "x"})
    assert prompt.is_accepted is False
    assert prompt["note"] == "x"


def test_sequence_protocol(helpfulness: SingleMetricAnnotation) -> None:
    assert len(helpfulness) == len(helpfulness.samples)
    assert helpfulness[0] is helpfulness.samples[0]
    assert helpfulness[-1] is helpfulness.samples[-1]
    assert [s for s in helpfulness] == helpfulness.samples
    with pytest.raises(IndexError):
        helpfulness[len(helpfulness)]


def test_metric_annotation_indexing_iteration_and_len(tmp_path: Path) -> None:
    _, ac_raw = raw_samples(AC_FILE)
    _, help_raw = raw_samples(HELP_FILE)
    path = write_json(tmp_path / "both.json", {"answer_correctness": ac_raw, "helpfulness": help_raw})
    multi = MetricAnnotation.from_json(path)

    assert len(multi) == multi.n_samples == len(ac_raw) + len(help_raw)  # Ragas' len: annotations
    assert len(multi.keys()) == 2
    assert list(multi) == ["answer_correctness", "helpfulness"]
    assert [m.name for m in multi.values()] == ["answer_correctness", "helpfulness"]
    assert multi["helpfulness"].name == "helpfulness"
    assert len(multi["helpfulness"]) == len(help_raw)
    assert multi["answer_correctness"].samples == multi.root["answer_correctness"]
    with pytest.raises(KeyError, match="answer_correctness.*helpfulness"):
        multi["faithfulness"]
    with pytest.raises(AnnotationKeyError) as info:
        multi["faithfulness"]
    assert str(path) in str(info.value) and "'faithfulness'" in str(info.value)
    assert "faithfulness" not in multi and "helpfulness" in multi
    assert all(m.source == str(path) for m in multi.values())
    assert multi["helpfulness"].source == str(path)

    only = MetricAnnotation.from_json(path, metric_name="helpfulness")
    assert list(only.root) == ["helpfulness"]
    assert (
        SingleMetricAnnotation.from_json(path, metric_name="answer_correctness").name == "answer_correctness"
    )


def test_unknown_metric_name_lists_the_names_present(tmp_path: Path) -> None:
    _, ac_raw = raw_samples(AC_FILE)
    _, help_raw = raw_samples(HELP_FILE)
    path = write_json(tmp_path / "both.json", {"answer_correctness": ac_raw, "helpfulness": help_raw})
    for loader in (MetricAnnotation.from_json, SingleMetricAnnotation.from_json):
        with pytest.raises(AnnotationError) as info:
            loader(path, metric_name="faithfulness")
        message = str(info.value)
        assert "faithfulness" in message
        assert "answer_correctness" in message and "helpfulness" in message
        assert str(path) in message


def test_single_loader_needs_a_metric_name_for_a_multi_metric_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "two.json", {"m1": [sample_dict()], "m2": [sample_dict()]})
    with pytest.raises(AnnotationError, match="m1.*m2") as info:
        SingleMetricAnnotation.from_json(path)
    assert str(path) in str(info.value)


def test_name_samples_and_jsonl_files(tmp_path: Path) -> None:
    samples = [sample_dict(1, i=0), sample_dict(0, i=1)]
    named = SingleMetricAnnotation.from_json(
        write_json(tmp_path / "x.json", {"name": "m", "samples": samples})
    )
    assert named.name == "m" and [s.metric_output for s in named] == [1.0, 0.0]

    jsonl = tmp_path / "helpful_set.jsonl"
    jsonl.write_text("\n".join(json.dumps(s) for s in samples) + "\n\n", encoding="utf-8")
    loaded = SingleMetricAnnotation.from_json(jsonl)
    assert loaded.name == "helpful_set"
    assert loaded.samples == named.samples


# --- Labels and expected outputs ----------------------------------------------------------------


@pytest.mark.parametrize("path", [AC_FILE, HELP_FILE], ids=["answer_correctness", "helpfulness"])
def test_labels_follow_the_rule_on_bundled_data(path: Path) -> None:
    _, raw = raw_samples(path)
    binary = all(item["metric_output"] in (0, 1) for item in raw)
    dataset = SingleMetricAnnotation.from_json(path)
    assert dataset.labels() == [expected_label(item, binary) for item in raw]
    assert dataset.usable_indices() == [
        i for i, item in enumerate(raw) if expected_label(item, binary) is not None
    ]


def test_rejected_helpfulness_samples_get_flipped_labels(helpfulness: SingleMetricAnnotation) -> None:
    labels = helpfulness.labels()
    rejected = [i for i, s in enumerate(helpfulness) if not s.is_accepted]
    assert len(rejected) == 5
    for i in rejected:
        assert labels[i] == 1.0 - helpfulness[i].metric_output
        assert labels[i] != helpfulness[i].metric_output
    for i, s in enumerate(helpfulness):
        if s.is_accepted:
            assert labels[i] == s.metric_output


def test_target_overrides_everything() -> None:
    dataset = SingleMetricAnnotation.model_validate(
        {
            "name": "m",
            "samples": [
                sample_dict(1, is_accepted=True, target=0),  # accepted, target disagrees
                sample_dict(1, is_accepted=False, target=1),  # rejected, target keeps the output
                sample_dict(0, is_accepted=False),  # rejected, flipped
                sample_dict(1, is_accepted=True),  # accepted
            ],
        }
    )
    assert dataset.labels() == [0.0, 1.0, 1.0, 1.0]


def test_non_binary_rejected_sample_has_no_label() -> None:
    dataset = SingleMetricAnnotation.model_validate(
        {
            "name": "score",
            "samples": [
                sample_dict(0.7, is_accepted=False),
                sample_dict(0.25, is_accepted=True),
                sample_dict(1, is_accepted=False),  # 0/1 value, but the metric is not binary
                sample_dict(0.4, is_accepted=False, target=0.9),
            ],
        }
    )
    assert not dataset.is_binary
    assert dataset.labels() == [None, 0.25, None, 0.9]
    assert dataset.usable_indices() == [1, 3]


@pytest.mark.parametrize("path", [AC_FILE, HELP_FILE], ids=["answer_correctness", "helpfulness"])
def test_expected_output_on_bundled_data(path: Path) -> None:
    _, raw = raw_samples(path)
    dataset = SingleMetricAnnotation.from_json(path)
    for sample, item in zip(dataset, raw):
        prompt = item["prompts"][PROMPT]
        if prompt.get("edited_output") is not None:
            want = prompt["edited_output"]
        elif item["is_accepted"]:
            want = prompt["prompt_output"]
        else:
            want = None
        assert sample.expected_output(PROMPT) == want
        assert sample.expected_output("no_such_prompt") is None


def test_expected_output_precedence() -> None:
    edit = {"reason": "human", "verdict": 0}
    edited_rejected = SampleAnnotation.model_validate(sample_dict(1, is_accepted=False, edited=edit))
    accepted = SampleAnnotation.model_validate(sample_dict(1, is_accepted=True))
    rejected = SampleAnnotation.model_validate(sample_dict(1, is_accepted=False))
    assert edited_rejected.expected_output(PROMPT) == edit
    assert accepted.expected_output(PROMPT) == {"reason": "r0", "verdict": 1}
    assert rejected.expected_output(PROMPT) is None


# --- Selection ----------------------------------------------------------------------------------


def test_filter_keeps_matching_samples_and_all_by_default(helpfulness: SingleMetricAnnotation) -> None:
    everything = helpfulness.filter()  # Ragas: no function keeps every sample
    assert positions(everything, helpfulness) == list(range(len(helpfulness)))
    accepted = helpfulness.filter(lambda s: s.is_accepted)
    assert accepted.samples == [s for s in helpfulness if s.is_accepted]
    assert len(accepted) == len(helpfulness) - 5
    positives = helpfulness.filter(lambda s: s.metric_output == 1)
    assert positives.samples == [s for s in helpfulness if s.metric_output == 1]
    assert accepted.name == helpfulness.name and accepted.source == helpfulness.source


def test_select_keeps_the_given_order(helpfulness: SingleMetricAnnotation) -> None:
    order = [5, 0, 20, 3, 3]
    chosen = helpfulness.select(order)
    assert [id(s) for s in chosen] == [id(helpfulness[i]) for i in order]
    assert helpfulness.select([]).samples == []


def test_get_prompt_annotations_groups_by_prompt_in_sample_order(ac: SingleMetricAnnotation) -> None:
    assert all(s.is_accepted for s in ac)
    grouped = ac.get_prompt_annotations()
    assert list(grouped) == [PROMPT]
    assert [id(p) for p in grouped[PROMPT]] == [id(s.prompts[PROMPT]) for s in ac]

    two = SingleMetricAnnotation.model_validate(
        {
            "name": "m",
            "samples": [
                {**sample_dict(i=0), "prompts": {"a": {"prompt_input": {"k": 0}}}},
                {
                    **sample_dict(i=1),
                    "prompts": {"b": {"prompt_input": {"k": 1}}, "a": {"prompt_input": {"k": 2}}},
                },
            ],
        }
    )
    got = {
        name: [p.prompt_input["k"] for p in prompts] for name, prompts in two.get_prompt_annotations().items()
    }
    assert got == {"a": [0, 2], "b": [1]}


def test_get_prompt_annotations_skips_rejected_samples_unless_asked(
    helpfulness: SingleMetricAnnotation,
) -> None:
    accepted = [s.prompts[PROMPT] for s in helpfulness if s.is_accepted]
    assert [id(p) for p in helpfulness.get_prompt_annotations()[PROMPT]] == [id(p) for p in accepted]
    every = helpfulness.get_prompt_annotations(accepted_only=False)[PROMPT]
    assert [id(p) for p in every] == [id(s.prompts[PROMPT]) for s in helpfulness]
    assert helpfulness.filter(lambda s: not s.is_accepted).get_prompt_annotations() == {}


# --- Field aliases and round trips --------------------------------------------------------------


def test_field_aliases_are_renamed_and_contexts_wrapped(tmp_path: Path) -> None:
    item = sample_dict()
    item["metric_input"] = {
        "input": "question",
        "actual_output": "answer",
        "expected_output": "gold",
        "retrieved_context": "one context",
        "expected_context": ["c1", "c2"],
        "other": 3,
    }
    want = {
        "user_input": "question",
        "response": "answer",
        "reference": "gold",
        "retrieved_contexts": ["one context"],
        "reference_contexts": ["c1", "c2"],
        "other": 3,
    }
    assert SampleAnnotation.model_validate(item).metric_input == want
    loaded = MetricAnnotation.from_json(write_json(tmp_path / "alias.json", {"m": [item]}))
    assert loaded["m"][0].metric_input == want
    assert set(FIELD_ALIASES.values()) <= set(want)


@pytest.mark.parametrize("path", [AC_FILE, HELP_FILE], ids=["answer_correctness", "helpfulness"])
def test_single_metric_round_trip(path: Path, tmp_path: Path) -> None:
    original = SingleMetricAnnotation.from_json(path)
    out = tmp_path / "out.json"
    original.to_json(out)
    again = SingleMetricAnnotation.from_json(out)
    assert again == original
    assert again.labels() == original.labels()
    assert again.source == str(out)


def test_metric_annotation_round_trip(tmp_path: Path) -> None:
    _, ac_raw = raw_samples(AC_FILE)
    _, help_raw = raw_samples(HELP_FILE)
    both = MetricAnnotation.from_json(
        write_json(tmp_path / "both.json", {"answer_correctness": ac_raw, "helpfulness": help_raw})
    )
    out = tmp_path / "out.json"
    both.to_json(out)
    assert MetricAnnotation.from_json(out) == both
    assert list(json.loads(out.read_text(encoding="utf-8"))) == ["answer_correctness", "helpfulness"]


def test_round_trip_keeps_targets_extras_and_aliases(tmp_path: Path) -> None:
    item = sample_dict(0.5, is_accepted=False, target=0.75, edited={"reason": "e", "verdict": 1})
    item["metric_input"]["retrieved_context"] = "ctx"
    item["annotator"] = "alice"
    item["prompts"][PROMPT]["is_accepted"] = False
    original = SingleMetricAnnotation.model_validate({"name": "m", "samples": [item]})
    out = tmp_path / "m.json"
    original.to_json(out)
    again = SingleMetricAnnotation.from_json(out)
    assert again == original
    assert again[0]["annotator"] == "alice"
    assert again[0].metric_input["retrieved_contexts"] == ["ctx"]


# --- Errors -------------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    for loader in (MetricAnnotation.from_json, SingleMetricAnnotation.from_json):
        with pytest.raises(AnnotationError, match="not found") as info:
            loader(path)
        assert info.value.path == str(path)


def test_malformed_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"m": [\n  {"metric_output": 1,\n  }\n]}\n', encoding="utf-8")
    with pytest.raises(AnnotationError) as info:
        MetricAnnotation.from_json(path)
    assert "line 3" in str(info.value)
    assert str(path) in str(info.value)


def test_sample_missing_metric_input_names_file_index_and_field(tmp_path: Path) -> None:
    _, raw = raw_samples(HELP_FILE)
    del raw[7]["metric_input"]
    path = write_json(tmp_path / "missing_field.json", {"helpfulness": raw})
    for loader in (MetricAnnotation.from_json, SingleMetricAnnotation.from_json):
        with pytest.raises(AnnotationError) as info:
            loader(path)
        err = info.value
        assert (err.path, err.sample_index, err.field, err.metric) == (
            str(path),
            7,
            "metric_input",
            "helpfulness",
        )
        message = str(err)
        assert str(path) in message and "sample 7" in message and "metric_input" in message


@pytest.mark.parametrize("bad", ["high", [1], {"v": 1}, None])
def test_wrong_type_of_metric_output(tmp_path: Path, bad: Any) -> None:
    samples = [sample_dict(i=0), sample_dict(i=1)]
    samples[1]["metric_output"] = bad
    path = write_json(tmp_path / "bad_type.json", {"m": samples})
    with pytest.raises(AnnotationError) as info:
        MetricAnnotation.from_json(path)
    assert (info.value.sample_index, info.value.field) == (1, "metric_output")
    assert str(path) in str(info.value)


def _bad_files(tmp: Path) -> list[tuple[Path, dict[str, Any]]]:
    bad_utf8 = tmp / "latin1.json"
    bad_utf8.write_bytes(b'{"m": ["\xff"]}')
    truncated = tmp / "truncated.json"
    truncated.write_text('{"m": [', encoding="utf-8")
    not_list = write_json(tmp / "not_list.json", {"m": {"metric_output": 1}})
    scalar = write_json(tmp / "scalar.json", 3)
    sample_not_object = write_json(tmp / "sample_not_object.json", {"m": [sample_dict(), 5]})
    wrong_accept = write_json(tmp / "wrong_accept.json", {"m": [{**sample_dict(), "is_accepted": "maybe"}]})
    two = write_json(tmp / "two.json", {"m1": [], "m2": []})
    return [
        (tmp / "missing.json", {}),
        (bad_utf8, {}),
        (truncated, {}),
        (not_list, {}),
        (scalar, {}),
        (sample_not_object, {}),
        (wrong_accept, {}),
        (two, {}),
        (two, {"metric_name": "m3"}),
    ]


def test_every_annotation_error_names_the_path(tmp_path: Path) -> None:
    cases = _bad_files(tmp_path)
    raised = 0
    for path, kwargs in cases:
        for loader in (MetricAnnotation.from_json, SingleMetricAnnotation.from_json):
            try:
                loader(path, **kwargs)
            except AnnotationError as err:
                raised += 1
                assert str(path) in str(err), (loader, path, str(err))
                assert err.path == str(path)
    # Every case is an error for both loaders, except MetricAnnotation on the valid two-metric file.
    assert raised == 2 * len(cases) - 1


# --- Sampling API -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 7, 21])
def test_sample_gives_exactly_n_distinct_samples(helpfulness: SingleMetricAnnotation, n: int) -> None:
    chosen = helpfulness.sample(n, random_seed=3)
    pos = positions(chosen, helpfulness)
    assert len(pos) == n == len(set(pos))


def test_sample_rejects_impossible_sizes(helpfulness: SingleMetricAnnotation) -> None:
    with pytest.raises(ValueError):
        helpfulness.sample(len(helpfulness) + 1, random_seed=0)
    with pytest.raises(ValueError):
        helpfulness.sample(-1, random_seed=0)
    with pytest.raises(ValueError):
        helpfulness.sample(len(helpfulness) + 1, stratify_key="label", random_seed=0)


@pytest.mark.parametrize("key", [None, "label", "metric_output", "is_accepted"])
def test_sample_is_reproducible_and_seed_dependent(
    helpfulness: SingleMetricAnnotation, key: str | None
) -> None:
    def draw(seed: int) -> list[int]:
        return positions(helpfulness.sample(6, stratify_key=key, random_seed=seed), helpfulness)

    assert draw(11) == draw(11)
    assert len({tuple(draw(seed)) for seed in range(8)}) > 1
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    assert positions(helpfulness.sample(6, key, rng_a), helpfulness) == positions(
        helpfulness.sample(6, key, rng_b), helpfulness
    )


@pytest.mark.parametrize("key", ["label", "metric_output", "is_accepted", "metric_input.response"])
def test_stratified_sample_contains_every_class(helpfulness: SingleMetricAnnotation, key: str) -> None:
    classes = helpfulness.stratify_keys(key)
    n_classes = len(set(classes))
    for seed in range(10):
        chosen = positions(helpfulness.sample(n_classes, key, seed), helpfulness)
        assert {classes[i] for i in chosen} == set(classes)


@pytest.mark.parametrize("key", ["nonsense", "metric_input.nope", "metric_input", "prompts", "user_input"])
def test_stratify_keys_unknown_key(helpfulness: SingleMetricAnnotation, key: str) -> None:
    for call in (
        lambda: helpfulness.stratify_keys(key),
        lambda: helpfulness.sample(3, stratify_key=key, random_seed=0),
        lambda: helpfulness.stratified_batches(3, key, random_seed=0),
        lambda: helpfulness.train_test_split(stratify_key=key),
    ):
        with pytest.raises(AnnotationKeyError) as info:
            call()
        assert isinstance(info.value, KeyError) and isinstance(info.value, AnnotationError)
        message = str(info.value)
        assert repr(key) in message or key in message
        assert helpfulness.source is not None and helpfulness.source in message
        assert "'helpfulness'" in message
        assert not message.startswith(("'", '"'))  # not KeyError's quoted form


def test_stratify_key_hint_for_a_bare_metric_input_field(helpfulness: SingleMetricAnnotation) -> None:
    with pytest.raises(KeyError, match=r"did you mean 'metric_input\.user_input'"):
        helpfulness.stratify_keys("user_input")


def test_stratify_keys_forms(helpfulness: SingleMetricAnnotation) -> None:
    assert helpfulness.stratify_keys(None) == helpfulness.stratify_keys("label") == helpfulness.labels()
    assert helpfulness.stratify_keys("metric_output") == [s.metric_output for s in helpfulness]
    assert helpfulness.stratify_keys("is_accepted") == [s.is_accepted for s in helpfulness]
    assert helpfulness.stratify_keys("target") == [None] * len(helpfulness)
    assert helpfulness.stratify_keys("metric_input.response") == [
        s.metric_input["response"] for s in helpfulness
    ]


def test_stratify_keys_extra_fields_and_unhashable_inputs() -> None:
    items = [sample_dict(i % 2, i=i) for i in range(6)]
    for i, item in enumerate(items):
        item["annotator"] = "alice" if i < 4 else "bob"
        item["metric_input"]["retrieved_contexts"] = ["c"] * (i % 3)
    dataset = SingleMetricAnnotation.model_validate({"name": "m", "samples": items})
    assert dataset.stratify_keys("annotator") == ["alice"] * 4 + ["bob"] * 2
    contexts = dataset.stratify_keys("metric_input.retrieved_contexts")
    assert len(set(contexts)) == 3
    chosen = dataset.sample(3, stratify_key="metric_input.retrieved_contexts", random_seed=0)
    assert len({json.dumps(s.metric_input["retrieved_contexts"]) for s in chosen}) == 3


@pytest.mark.parametrize("path", [AC_FILE, HELP_FILE], ids=["answer_correctness", "helpfulness"])
@pytest.mark.parametrize("batch_size", [1, 4, 5, 30])
def test_stratified_batches_on_bundled_data(path: Path, batch_size: int) -> None:
    dataset = SingleMetricAnnotation.from_json(path)
    batches = dataset.stratified_batches(batch_size, "label", random_seed=7)
    flat = [i for batch in batches for i in positions(batch, dataset)]
    assert sorted(flat) == list(range(len(dataset)))  # disjoint and covering
    assert all(0 < len(b) <= batch_size for b in batches)
    again = dataset.stratified_batches(batch_size, "label", random_seed=7)
    assert [positions(b, dataset) for b in again] == [positions(b, dataset) for b in batches]

    dropped = dataset.stratified_batches(batch_size, "label", drop_last_batch=True, random_seed=7)
    assert len(dropped) == len(dataset) // batch_size
    kept = [i for batch in dropped for i in positions(batch, dataset)]
    assert len(kept) == len(set(kept)) and all(len(b) == batch_size for b in dropped)


def test_stratified_batches_mirror_label_proportions(helpfulness: SingleMetricAnnotation) -> None:
    labels = helpfulness.labels()
    batches = helpfulness.stratified_batches(5, "label", random_seed=1)
    n_batches = len(batches)
    for value in set(labels):
        share = labels.count(value) / n_batches
        for batch in batches:
            count = sum(label == value for label in batch.labels())
            assert abs(count - share) < 1


@pytest.mark.parametrize("test_size", [0.2, 0.5, 1, 6])
def test_train_test_split_on_bundled_data(helpfulness: SingleMetricAnnotation, test_size: float) -> None:
    # group_key "sample": every sample a group of its own, so the test part has exactly test_size
    # (the file asks 6 questions 21 times; grouped splits are tested in test_grouped_splits.py)
    train, test = helpfulness.train_test_split(test_size=test_size, random_seed=4, group_key="sample")
    tr, te = positions(train, helpfulness), positions(test, helpfulness)
    assert not set(tr) & set(te)
    assert sorted(tr + te) == list(range(len(helpfulness)))
    want = test_size if isinstance(test_size, int) else round(test_size * len(helpfulness))
    assert len(te) == want
    train2, test2 = helpfulness.train_test_split(test_size=test_size, random_seed=4, group_key="sample")
    assert (positions(train2, helpfulness), positions(test2, helpfulness)) == (tr, te)
    grouped_train, grouped_test = helpfulness.train_test_split(test_size=test_size, random_seed=4)
    asked = lambda part: {s.metric_input["user_input"] for s in part}  # noqa: E731
    assert not asked(grouped_train) & asked(grouped_test)


def test_train_test_split_is_stratified_and_default_seeded(ac: SingleMetricAnnotation) -> None:
    (_, test_a), (_, test_b) = ac.train_test_split(), ac.train_test_split()
    assert positions(test_a, ac) == positions(test_b, ac)
    assert set(test_a.labels()) == set(ac.labels())  # both classes in a 4-sample test set


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, 0, 21, -1])
def test_train_test_split_rejects_bad_sizes(helpfulness: SingleMetricAnnotation, bad: float) -> None:
    with pytest.raises(ValueError):
        helpfulness.train_test_split(test_size=bad)


def _np_state_equal(a: Any, b: Any) -> bool:
    return a[0] == b[0] and np.array_equal(a[1], b[1]) and tuple(a[2:]) == tuple(b[2:])


@pytest.mark.parametrize("seed", [0, None])
def test_sampling_never_touches_global_random_state(
    helpfulness: SingleMetricAnnotation, seed: int | None
) -> None:
    random.seed(1234)
    np.random.seed(1234)
    py_state, np_state = random.getstate(), np.random.get_state()

    helpfulness.sample(5, random_seed=seed)
    helpfulness.sample(5, stratify_key="label", random_seed=seed)
    helpfulness.stratified_batches(4, "label", random_seed=seed)
    helpfulness.stratified_batches(4, "label", drop_last_batch=True, replace=True, random_seed=seed)
    helpfulness.train_test_split(random_seed=seed)
    helpfulness.batch(4, random_seed=seed)

    assert random.getstate() == py_state
    assert _np_state_equal(np.random.get_state(), np_state)


# --- Edge cases of the sampling API, each with its defined outcome ------------------------------


def toy(n: int, label: Any = None) -> SingleMetricAnnotation:
    """``n`` accepted samples; labels alternate 1/0 unless ``label`` fixes them all."""
    items = [sample_dict(i % 2 if label is None else label, i=i) for i in range(n)]
    return SingleMetricAnnotation.model_validate({"name": "toy", "samples": items})


@pytest.mark.parametrize("replace", [False, True])
def test_batch_size_larger_than_the_data(replace: bool) -> None:
    dataset = toy(5)
    (only,) = dataset.stratified_batches(8, "label", replace=replace, random_seed=0)
    assert sorted(positions(only, dataset)) == list(range(5))  # one batch of everything, no repeats
    assert dataset.stratified_batches(8, "label", drop_last_batch=True, replace=replace, random_seed=0) == []
    (shuffled,) = dataset.batch(8, random_seed=0)
    assert sorted(positions(shuffled, dataset)) == list(range(5))
    assert dataset.batch(8, drop_last_batch=True, random_seed=0) == []


def test_single_class_batches_are_balanced_by_size() -> None:
    dataset = toy(10, label=1)
    batches = dataset.stratified_batches(3, "label", random_seed=0)
    assert sorted(len(b) for b in batches) == [2, 2, 3, 3]
    assert sorted(i for b in batches for i in positions(b, dataset)) == list(range(10))
    assert len(dataset.sample(4, stratify_key="label", random_seed=0)) == 4


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("replace", [False, True])
def test_empty_dataset(drop_last: bool, replace: bool) -> None:
    empty = toy(0)
    assert empty.stratified_batches(3, "label", drop_last, replace, random_seed=0) == []
    assert empty.stratified_batches(3, "metric_input.user_input", random_seed=0) == []
    assert empty.batch(3, drop_last, random_seed=0) == []
    assert len(empty.sample(0, random_seed=0)) == 0
    assert empty.labels() == [] and empty.unusable_samples() == [] and not empty.is_binary
    with pytest.raises(ValueError, match="at least 2"):
        empty.train_test_split()


@pytest.mark.parametrize("batch_size", [0, -1])
@pytest.mark.parametrize("n", [0, 4])
def test_non_positive_batch_size_is_an_error(batch_size: int, n: int) -> None:
    dataset = toy(n)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        dataset.stratified_batches(batch_size, "label", random_seed=0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        dataset.batch(batch_size, random_seed=0)


def test_sample_zero_and_negative(helpfulness: SingleMetricAnnotation) -> None:
    for key in (None, "label"):
        empty = helpfulness.sample(0, stratify_key=key, random_seed=0)
        assert len(empty) == 0 and empty.name == helpfulness.name
    with pytest.raises(ValueError, match=r"n must be in \[0, 21\].*got -1"):
        helpfulness.sample(-1)


def test_split_needs_two_samples_and_a_sane_size() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        toy(1).train_test_split(test_size=0.5)
    train, test = toy(2).train_test_split(test_size=0.01)
    assert (len(train), len(test)) == (1, 1)  # a fraction is clipped to [1, n - 1]
    with pytest.raises(ValueError, match="fraction or a count"):
        toy(4).train_test_split(test_size=True)


def test_train_test_split_fraction_and_count_agree(helpfulness: SingleMetricAnnotation) -> None:
    by_fraction = helpfulness.train_test_split(test_size=6 / 21, random_seed=3)
    by_count = helpfulness.train_test_split(test_size=6, random_seed=3)
    assert [positions(s, helpfulness) for s in by_fraction] == [positions(s, helpfulness) for s in by_count]
    with_generator = helpfulness.train_test_split(test_size=6, random_seed=np.random.default_rng(3))
    assert [positions(s, helpfulness) for s in with_generator] == [
        positions(s, helpfulness) for s in by_count
    ]


def test_train_test_split_default_stratifies_on_the_human_label(helpfulness: SingleMetricAnnotation) -> None:
    labels = helpfulness.labels()
    assert labels != [s.metric_output for s in helpfulness]  # rejected samples make them differ
    _, test = helpfulness.train_test_split(test_size=7, random_seed=0, group_key="sample")
    counts = {value: test.labels().count(value) for value in set(labels)}
    for value, count in counts.items():
        assert abs(count - 7 * labels.count(value) / len(labels)) < 1


@pytest.mark.parametrize("metric_name", [None, "helpfulness"])
def test_len_counts_annotations_over_all_metrics_as_ragas_does(tmp_path: Path, metric_name) -> None:
    _, ac_raw = raw_samples(AC_FILE)
    _, help_raw = raw_samples(HELP_FILE)
    path = write_json(tmp_path / "both.json", {"answer_correctness": ac_raw, "helpfulness": help_raw})
    ours = MetricAnnotation.from_json(path, metric_name=metric_name)
    expected = len(help_raw) + (len(ac_raw) if metric_name is None else 0)
    assert len(ours) == expected == sum(len(m) for m in ours.values())
    assert len(MetricAnnotation.from_json(write_json(tmp_path / "none.json", {}))) == 0
    ragas_schema = pytest.importorskip("ragas.dataset_schema", reason="the Ragas extra is not installed")
    assert len(ragas_schema.MetricAnnotation.from_json(str(path), metric_name)) == expected


def test_metric_annotation_reads_like_a_dict_of_metric_names(tmp_path: Path) -> None:
    _, ac_raw = raw_samples(AC_FILE)
    _, help_raw = raw_samples(HELP_FILE)
    path = write_json(tmp_path / "both.json", {"answer_correctness": ac_raw, "helpfulness": help_raw})
    multi = MetricAnnotation.from_json(path)

    assert list(multi) == list(multi.keys()) == ["answer_correctness", "helpfulness"] == list(multi.root)
    assert [(name, m.name, len(m)) for name, m in multi.items()] == [
        ("answer_correctness", "answer_correctness", len(ac_raw)),
        ("helpfulness", "helpfulness", len(help_raw)),
    ]
    assert dict(multi) == {name: multi[name] for name in multi.root}
    assert multi.get("helpfulness") == multi["helpfulness"] and multi.get("faithfulness") is None
    assert len(multi.keys()) == len(multi.values()) == len(multi.items()) == 2
    assert "helpfulness" in multi and "faithfulness" not in multi
    with pytest.raises(TypeError):
        multi["faithfulness"] = multi["helpfulness"]  # type: ignore[index]
    assert MetricAnnotation.from_json(path) == multi  # Ragas' classmethod and equality kept
