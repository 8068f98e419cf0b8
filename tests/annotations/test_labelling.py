"""Human labels written into annotation files (a review page's writes): every written file loads
with the standard loader and gives the label that was given, in whatever shape the file was, with
every other key kept."""

from __future__ import annotations

import json
import math

import pytest

from promptevolver.annotations import MetricAnnotation, SampleAnnotation, SingleMetricAnnotation
from promptevolver.annotations._labelling import (
    AnnotationDocument,
    HumanLabel,
    LabelTarget,
    labelled_sample,
    new_sample,
    recorded_label,
)
from promptevolver.errors import AnnotationError

PROMPT = "single_turn_aspect_critic_prompt"
BINARY = LabelTarget(PROMPT, "verdict", binary=True)
RUBRIC = LabelTarget("single_turn_simple_criteria_prompt", "score", binary=False)
AT = "2026-12-04T21:00:00Z"


def _sample(verdict: int = 1, **extra: object) -> dict:
    inputs = {"user_input": "Capital of France?", "response": "Lyon.", "reference": "Paris"}
    return {
        "metric_input": inputs,
        "metric_output": verdict,
        "prompts": {
            PROMPT: {
                "prompt_input": inputs,
                "prompt_output": {"reason": "It names a city.", "verdict": verdict},
                "edited_output": None,
                "is_accepted": True,
            }
        },
        "is_accepted": True,
        **extra,
    }


def _label(value: float, reason: str | None = None) -> HumanLabel:
    return HumanLabel(value, reason, "ana", AT)


def _loaded(sample: dict, *, binary: bool = True) -> tuple[float | None, dict | None]:
    s = SampleAnnotation.model_validate(sample)
    return s.human_label(binary=binary), s.expected_output(next(iter(s.prompts)))


# --- labels in a sample ------------------------------------------------------------------------------


@pytest.mark.parametrize("verdict", [0, 1])
def test_accepting_keeps_the_judge_output_and_records_who_and_when(verdict):
    out = labelled_sample(_sample(verdict, is_accepted=False), _label(verdict), BINARY)
    assert out["is_accepted"] is True and out["prompts"][PROMPT]["is_accepted"] is True
    assert out["prompts"][PROMPT]["edited_output"] is None and "target" not in out
    assert (out["annotator"], out["annotated_at"]) == ("ana", AT)
    assert _loaded(out)[0] == verdict


@pytest.mark.parametrize("verdict", [0, 1])
def test_rejecting_a_verdict_flips_it_with_the_corrected_reason(verdict):
    out = labelled_sample(_sample(verdict), _label(1 - verdict, "It names Lyon, not Paris."), BINARY)
    assert out["is_accepted"] is False and "target" not in out  # a binary flip needs none
    edited = out["prompts"][PROMPT]["edited_output"]
    assert edited == {"reason": "It names Lyon, not Paris.", "verdict": 1 - verdict}
    label, expected = _loaded(out)
    assert label == 1 - verdict and expected == edited


def test_an_accepted_verdict_with_a_new_reason_keeps_the_reason():
    out = labelled_sample(_sample(0), _label(0, "  Lyon is not Paris.  "), BINARY)
    assert out["is_accepted"] is True
    assert out["prompts"][PROMPT]["edited_output"] == {"reason": "Lyon is not Paris.", "verdict": 0}


def test_relabelling_replaces_the_earlier_label_and_a_target_follows_it():
    first = labelled_sample(_sample(1, target=0), _label(0, "wrong city"), BINARY)
    assert first["target"] == 0
    again = labelled_sample(first, _label(1), BINARY)
    assert again["target"] == 1 and again["is_accepted"] is True
    assert again["prompts"][PROMPT]["edited_output"] is None
    assert _loaded(again)[0] == 1


def test_other_keys_are_kept_and_the_input_is_not_changed():
    sample = _sample(1, trace_id="t-7", prompts_extra={"k": [1, 2]})
    before = json.dumps(sample)
    out = labelled_sample(sample, _label(0, "no"), BINARY)
    assert json.dumps(sample) == before
    assert out["trace_id"] == "t-7" and out["prompts_extra"] == {"k": [1, 2]}
    assert out["metric_input"] == sample["metric_input"]


def test_a_rejected_score_carries_the_human_score_as_target():
    judged = {
        "metric_input": {"user_input": "q", "response": "r"},
        "metric_output": 4,
        "prompts": {RUBRIC.prompt_name: {"prompt_input": {}, "prompt_output": {"reason": "ok", "score": 4}}},
        "is_accepted": True,
    }
    out = labelled_sample(judged, _label(2.0, "misses half"), RUBRIC)
    assert out["target"] == 2 and out["is_accepted"] is False
    assert out["prompts"][RUBRIC.prompt_name]["edited_output"] == {"reason": "misses half", "score": 2}
    assert _loaded(out, binary=False)[0] == 2.0
    kept = labelled_sample(judged, _label(4.0), RUBRIC)
    assert "target" not in kept and _loaded(kept, binary=False)[0] == 4.0


@pytest.mark.parametrize("judge_value", [None, 1.0])
def test_a_pool_trace_becomes_a_sample_with_or_without_a_judge_verdict(judge_value):
    fresh = new_sample(
        {"user_input": "q", "response": "r"}, judge_value=judge_value, judge_reason="says so", target=BINARY
    )
    out = labelled_sample(fresh, _label(0.0, "it does not"), BINARY)
    if judge_value is None:
        assert math.isnan(out["metric_output"]) and out["target"] == 0
        assert out["prompts"][PROMPT]["prompt_output"] is None
    else:
        assert out["metric_output"] == 1 and "target" not in out
        assert out["prompts"][PROMPT]["prompt_output"] == {"reason": "says so", "verdict": 1}
    assert _loaded(out)[0] == 0.0


@pytest.mark.parametrize("binary", [False, True])
def test_a_label_of_several_prompts_is_the_samples_own_and_touches_no_prompt(binary):
    """A metric of several prompts (no one prompt's output is its score): ``target`` and
    ``is_accepted`` carry the label, the reason goes under ``human_reason``, and each prompt's
    traces, the human's earlier corrections of them included, stay as they were."""
    several = LabelTarget(None, "score", binary=binary)
    sample = _sample(1)
    sample["prompts"]["second_prompt"] = {
        "prompt_input": {"statements": ["Lyon."]},
        "prompt_output": {"statements": [{"statement": "Lyon.", "verdict": 1}]},
        "edited_output": {"statements": [{"statement": "Lyon.", "verdict": 0}], "reason": "not Paris"},
    }
    out = labelled_sample(sample, _label(0, "Lyon is not Paris."), several)
    assert out["prompts"] == sample["prompts"] and out["is_accepted"] is False
    assert out["human_reason"] == "Lyon is not Paris."
    assert SampleAnnotation.model_validate(out).human_label(binary=binary) == 0
    # what the report, samples.jsonl and the meta calls show as the human's reason: a prompt's own
    # corrected reason where it has one, else the label's
    labelled = SampleAnnotation.model_validate(out)
    assert labelled.human_reason(PROMPT) == "Lyon is not Paris."
    assert labelled.human_reason("second_prompt") == "not Paris"
    got = recorded_label(SampleAnnotation.model_validate(out), prompt_name=None, binary=binary)
    assert got is not None and (got["value"], got["reason"]) == (0, "Lyon is not Paris.")
    again = labelled_sample(out, _label(1), several)  # a later label replaces it, reason and all
    assert (
        "human_reason" not in again and again["is_accepted"] is True and again["prompts"] == sample["prompts"]
    )
    assert SampleAnnotation.model_validate(again).human_label(binary=binary) == 1
    fresh = new_sample({"user_input": "u"}, judge_value=0.5, judge_reason="half", target=several)
    assert fresh["prompts"] == {} and fresh["metric_output"] == 0.5


def test_a_judge_that_answers_names_gets_its_name_in_the_edited_output():
    """A pairwise judge answers ``a`` / ``b`` / ``tie``: the human's verdict is written as the judge
    answers it, beside its recorded ``"verdict": "a"``, and the value stays the label's number."""
    pairwise = LabelTarget(
        "pairwise_comparison_prompt", "verdict", False, ((1.0, "a"), (0.0, "b"), (0.5, "tie"))
    )
    sample = {
        "metric_input": {"user_input": "q", "response_a": "x", "response_b": "y"},
        "metric_output": 1.0,
        "is_accepted": True,
        "prompts": {
            "pairwise_comparison_prompt": {
                "prompt_input": {},
                "prompt_output": {"reason": "r", "verdict": "a"},
            }
        },
    }
    out = labelled_sample(sample, _label(0.5, "equally good"), pairwise)
    assert out["prompts"]["pairwise_comparison_prompt"]["edited_output"] == {
        "reason": "equally good",
        "verdict": "tie",
    }
    assert out["target"] == 0.5 and SampleAnnotation.model_validate(out).human_label(binary=False) == 0.5
    fresh = new_sample(sample["metric_input"], judge_value=0.0, judge_reason="b is better", target=pairwise)
    assert fresh["prompts"]["pairwise_comparison_prompt"]["prompt_output"] == {
        "reason": "b is better",
        "verdict": "b",
    }


def test_the_recorded_label_reads_back_what_was_written():
    out = labelled_sample(_sample(1), _label(0, "wrong city"), BINARY)
    sample = SampleAnnotation.model_validate(out)
    got = recorded_label(sample, prompt_name=PROMPT, binary=True)
    assert got == {"value": 0.0, "reason": "wrong city", "accepted": False, "annotator": "ana", "at": AT}
    unusable = SampleAnnotation.model_validate({**_sample(), "metric_output": float("nan")})
    assert recorded_label(unusable, prompt_name=PROMPT, binary=True) is None


# --- the document: shapes kept -------------------------------------------------------------------


def _write(path, data) -> None:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(s) + "\n" for s in data))
    else:
        path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("metrics.json", lambda s: {"other": [s], "m": [s, s]}),
        ("named.json", lambda s: {"name": "m", "kind": "binary", "samples": [s, s]}),
        ("list.json", lambda s: [s, s]),
        ("m.jsonl", lambda s: [s, s]),
    ],
)
def test_every_file_shape_is_written_back_in_its_shape_with_the_label(tmp_path, name, make):
    path = tmp_path / name
    _write(path, make(_sample(1)))
    doc = AnnotationDocument.open(path, metric_name="m")
    assert doc.metric == "m" and len(doc.samples) == 2
    doc.replace(1, labelled_sample(doc.samples[1], _label(0, "no"), BINARY))
    doc.append(
        labelled_sample(
            new_sample(
                {"user_input": "u", "response": "v"}, judge_value=None, judge_reason=None, target=BINARY
            ),
            _label(1),
            BINARY,
        )
    )
    path.write_text(doc.dumps())
    loaded = SingleMetricAnnotation.from_json(str(path), metric_name="m")
    assert loaded.labels() == [1.0, 0.0, 1.0]
    if name == "metrics.json":
        assert len(MetricAnnotation.from_json(str(path))["other"]) == 1  # the other metric is kept
    if name == "named.json":
        assert json.loads(path.read_text())["kind"] == "binary"


def test_a_new_file_is_created_in_ragas_shape(tmp_path):
    path = tmp_path / "new.json"
    doc = AnnotationDocument.open(path, metric_name="m", create=True)
    assert doc.samples == [] and not path.exists()
    fresh = new_sample({"user_input": "u", "response": "v"}, judge_value=1, judge_reason="r", target=BINARY)
    doc.append(labelled_sample(fresh, _label(1), BINARY))
    path.write_text(doc.dumps())
    assert list(json.loads(path.read_text())) == ["m"]
    assert SingleMetricAnnotation.from_json(str(path)).labels() == [1.0]


def test_an_invalid_sample_is_refused_naming_it(tmp_path):
    path = tmp_path / "a.json"
    _write(path, {"m": [_sample(1)]})
    doc = AnnotationDocument.open(path)
    with pytest.raises(AnnotationError, match=r"sample 1, field 'is_accepted'"):
        doc.append({**_sample(1), "is_accepted": "yes"})
    assert len(doc.samples) == 1
    with pytest.raises(AnnotationError, match="holds 2 metrics"):
        _write(path, {"a": [], "b": []})
        AnnotationDocument.open(path)
