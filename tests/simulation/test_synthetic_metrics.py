"""Synthetic rubric and statements annotation sets: seeded, labelled as documented, and the bundled
files are what the generator writes."""

from __future__ import annotations

import importlib.util
import math

import pytest

from promptevolver import RubricJudge, StatementSupport
from promptevolver.simulation import SyntheticSpec
from promptevolver.simulation._synthetic_rubric import RubricSpec, generate_rubric
from promptevolver.simulation._synthetic_statements import (
    EXTRACTOR_CRITERIA,
    StatementsSpec,
    generate_statements,
)

from ..conftest import ROOT

EX, VER = StatementSupport.EXTRACTOR, StatementSupport.VERIFIER
RUBRIC = RubricJudge.PROMPT_NAME


def test_same_spec_same_set_and_another_seed_another():
    rubric = generate_rubric(RubricSpec(n_samples=30))
    assert rubric == generate_rubric(RubricSpec(n_samples=30))
    assert rubric != generate_rubric(RubricSpec(n_samples=30, random_seed=1))
    statements = generate_statements(StatementsSpec(n_samples=20))
    assert statements == generate_statements(StatementsSpec(n_samples=20))


def test_rubric_samples_follow_the_label_rules():
    data = generate_rubric(RubricSpec(n_samples=300, random_seed=2, disagreement_rate=0.4))
    labels = data.labels()
    kinds = {"agree": 0, "edited": 0, "rejected_target": 0, "unusable": 0}
    for sample, label in zip(data, labels):
        prompt = sample.prompts[RUBRIC]
        recorded = prompt.prompt_output["score"]
        assert sample.metric_output == recorded and 1 <= recorded <= 5
        if prompt.edited_output is not None:
            kinds["edited"] += 1
            assert sample.is_accepted and label == sample.target == prompt.edited_output["score"] != recorded
            assert abs(label - recorded) in (1, 2)
        elif not sample.is_accepted:
            kinds["rejected_target" if label is not None else "unusable"] += 1
            assert label is None or label == sample.target != recorded
        else:
            kinds["agree"] += 1
            assert label == recorded and sample.target is None
    assert all(count > 0 for count in kinds.values())
    assert 0.3 < (kinds["edited"] + kinds["rejected_target"] + kinds["unusable"]) / 300 < 0.5
    assert [u.sample_index for u in data.unusable_samples()] == [i for i, y in enumerate(labels) if y is None]


def test_rubric_spec_checks_its_values():
    with pytest.raises(ValueError, match="level_weights"):
        RubricSpec(n_samples=5, level_weights=(1, 2))
    with pytest.raises(ValueError, match="score_range"):
        RubricSpec(n_samples=5, score_range=(3, 3))
    with pytest.raises(ValueError, match="reject_rate"):
        RubricSpec(n_samples=5, reject_rate=1.5)


def _fraction(verdicts: list[dict]) -> float:
    return sum(v["verdict"] for v in verdicts) / len(verdicts)


def test_statement_samples_score_the_supported_fraction_of_each_side():
    data = generate_statements(StatementsSpec(n_samples=300, random_seed=2))
    labels = data.labels()
    extractor_edits = verifier_edits = rejected = 0
    for sample, label in zip(data, labels):
        ex, ver = sample.prompts[EX], sample.prompts[VER]
        assert ex.prompt_output["statements"] == [v["statement"] for v in ver.prompt_output["statements"]]
        assert sample.metric_output == pytest.approx(_fraction(ver.prompt_output["statements"]))
        assert ex.prompt_input == StatementSupport.extractor_inputs(sample.metric_input)
        if ex.edited_output is not None:
            extractor_edits += 1
            note = ex.edited_output["reason"]
            assert note in EXTRACTOR_CRITERIA.values() or note.startswith("Keep this")
            assert ver.edited_output is not None
            assert [v["statement"] for v in ver.edited_output["statements"]] == ex.edited_output["statements"]
        if ver.edited_output is not None:
            verifier_edits += bool(ver.edited_output.get("reason"))
            assert sample.is_accepted and label == pytest.approx(_fraction(ver.edited_output["statements"]))
        if not sample.is_accepted:
            rejected += 1
            assert ex.edited_output is None and ver.edited_output is None  # only verifier errors are rejected
            assert label is None or label == sample.target
        if label is not None:
            assert 0.0 <= label <= 1.0 and not math.isnan(label)
    assert extractor_edits > 20 and verifier_edits > 20 and rejected > 5


def test_the_bundled_files_are_the_generators_output():
    path = ROOT / "benchmarks" / "synthetic" / "make_metric_data.py"
    spec = importlib.util.spec_from_file_location("make_metric_data", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0


@pytest.mark.parametrize("make", [SyntheticSpec, RubricSpec, StatementsSpec])
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n_samples", 0),
        ("random_seed", -1),
        ("random_seed", True),
        ("reject_rate", 1.5),
        ("reject_rate", -0.1),
    ],
)
def test_every_synthetic_spec_refuses_what_numpy_or_probability_cannot_take(make, field, value):
    """One check for every spec (``synthetic.check_spec``): the rubric and statements specs took
    a negative seed until numpy refused it mid-generation."""
    kwargs = {"n_samples": 10, field: value}
    with pytest.raises(ValueError, match=field):
        make(**kwargs)
