"""The label space: one place answering "what labels can a human give for this metric"
(``LabelScale.label_space``, reached through ``label_scale_of``), for every judge kind; nominal
labels are checked against it when a run binds the annotations to its metric."""

from __future__ import annotations

import pytest

from promptevolver import AspectCritic, SingleMetricAnnotation
from promptevolver.annotations import LabelChoice, LabelScale
from promptevolver.errors import AnnotationError
from promptevolver.judge import JudgeEnsemble, RubricJudge, StatementSupport, label_scale_of


def _names(scale: LabelScale | None) -> list[tuple[float, str]] | None:
    assert scale is not None
    space = scale.label_space()
    return None if space is None else [(c.value, c.name) for c in space]


def test_every_judge_of_ours_declares_its_label_space():
    assert _names(label_scale_of(AspectCritic(name="m", definition="d"))) == [(0.0, "no"), (1.0, "yes")]
    rubric = RubricJudge(name="m", definition="d", score_range=(1, 3))
    assert _names(label_scale_of(rubric)) == [(1.0, "1"), (2.0, "2"), (3.0, "3")]
    assert (
        _names(label_scale_of(RubricJudge(name="m", definition="d", score_range=(0, 1), discrete=False)))
        is None
    )
    assert _names(label_scale_of(StatementSupport(name="m"))) is None
    ensemble = JudgeEnsemble(metric=AspectCritic(name="m", definition="d"), num_judges=3)
    assert _names(label_scale_of(ensemble)) == [(0.0, "no"), (1.0, "yes")]


def test_a_nominal_scale_names_its_classes_and_a_stored_value():
    scale = LabelScale("nominal", choices=(LabelChoice(1, "a"), LabelChoice(0, "b"), LabelChoice(0.5, "tie")))
    assert scale.values == (1, 0, 0.5)
    assert scale.name_of(0.5) == "tie" and scale.name_of(7.0) == "7"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "nominal"}, "at least two choices"),
        ({"kind": "nominal", "choices": (LabelChoice(0, "x"), LabelChoice(0, "y"))}, "distinct"),
        ({"kind": "binary", "choices": (LabelChoice(0, "x"), LabelChoice(2, "y"))}, "0 and 1"),
        (
            {
                "kind": "nominal",
                "low": 0.0,
                "high": 1.0,
                "choices": (LabelChoice(0, "x"), LabelChoice(1, "y")),
            },
            "range",
        ),
        ({"kind": "numeric", "low": 0.5, "high": 2.0, "discrete": True}, "whole-number"),
    ],
)
def test_a_scale_that_cannot_be_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LabelScale(**kwargs)


def test_a_nominal_label_outside_the_classes_names_the_sample_field_and_classes():
    samples = [
        {"metric_input": {"user_input": "q", "response": "r"}, "metric_output": v, "is_accepted": True}
        for v in (0, 1, 2)
    ]
    data = SingleMetricAnnotation.model_validate({"name": "m", "samples": samples})
    scale = LabelScale("nominal", choices=(LabelChoice(0, "x"), LabelChoice(1, "y")))
    with pytest.raises(
        AnnotationError,
        match=r"sample 2.*metric_output.*2 is not a label of this metric, whose labels are 0 \(x\), 1 \(y\)",
    ):
        data.with_scale(scale)
    wide = LabelScale("nominal", choices=(LabelChoice(0, "x"), LabelChoice(1, "y"), LabelChoice(2, "z")))
    assert data.with_scale(wide).kind == "nominal"
