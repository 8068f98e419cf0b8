"""``estimate`` reads the run's one evidence classification (:func:`promptevolver.optimizers.classify`):
a verdict correction whose human also rewrote the reason is one correction, for every judge shape
``estimate`` supports (before, ``estimate`` counted it once as a wrong verdict and again as an
edited reason)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from promptevolver.annotations import AnnotationDocument, HumanLabel, labelled_sample
from promptevolver.config import build_metric, load_dataset, resolve_prompt
from promptevolver.config._models import RunConfig, load_run_config
from promptevolver.judge import label_scale_of, label_target_of
from promptevolver.optimizers import classify, evidence_prompt
from promptevolver.runs._estimate import Estimate, estimate

from ..conftest import ROOT

#: Samples the human relabels, each with a reason of their own.
RELABELLED = 3
CLASSES = ["refund", "question", "complaint"]


def _bundled(name: str) -> RunConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bundled files list their unusable samples
        return load_run_config(ROOT / "configs" / f"{name}.yaml")


def _classification(tmp_path: Path) -> RunConfig:
    """A small file of a named-class judge: the recorded judge takes a polite refund for a question."""
    samples = []
    for i in range(60):
        truth = i % 3
        wrong = i % 9 == 0
        said = 1 if wrong else truth
        output = {"reason": "it reads as a question", "label": CLASSES[said]}
        edited = {"reason": "asking for the money back is a refund", "label": CLASSES[truth]}
        samples.append(
            {
                "metric_input": {
                    "user_input": f"ticket {i}: " + ["my money back", "how do I", "awful"][truth]
                },
                "metric_output": said,
                "is_accepted": not wrong,
                "target": truth,
                "prompts": {
                    "single_turn_classification_prompt": {
                        "prompt_input": {},
                        "prompt_output": output,
                        "edited_output": edited if wrong else None,
                    }
                },
            }
        )
    data = tmp_path / "tickets.json"
    data.write_text(json.dumps({"tickets": samples}), encoding="utf-8")
    metric = {
        "type": "classification",
        "name": "tickets",
        "definition": "What the ticket is",
        "labels": CLASSES,
    }
    return RunConfig.model_validate(
        {"dataset": str(data), "metric": metric, "loss": {"type": "classification", "metric": "macro_f1"}}
    )


SHAPES = {
    "binary": lambda tmp: _bundled("answer_correctness"),
    "rubric": lambda tmp: _bundled("helpfulness_rubric"),
    "pairwise": lambda tmp: _bundled("llmbar_pairwise"),
    "two prompts": lambda tmp: _bundled("faithfulness_statements"),
    "classification": _classification,
}


def _estimate(config: RunConfig) -> Estimate:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimate(config)


def _relabelled(config: RunConfig, tmp_path: Path) -> tuple[RunConfig, list[int]]:
    """``config`` on a copy of its file where the human gives ``RELABELLED`` samples the recorded
    judge got right another label, and says why (as the review page writes a label)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = load_dataset(config)
        metric = build_metric(config.metric, prompt_name=resolve_prompt(config, dataset).rename)
    labels = dataset.labels()
    usable = [p for p, y in enumerate(labels) if y is not None]
    agree = [
        p for p, e in classify(dataset, labels, usable, evidence_prompt(metric)).items() if e.kind == "agree"
    ]
    document = AnnotationDocument.open(Path(str(config.dataset)), metric_name=dataset.name)
    scale, target = label_scale_of(metric), label_target_of(metric)
    assert scale is not None and target is not None
    chosen = agree[:RELABELLED]
    for p in chosen:
        label = labels[p]
        values = scale.values or scale.value_range or ()
        other = next(v for v in values if v != label)
        human = HumanLabel(other, f"the answer misses point {p}", "tester", "2026-12-05T00:00:00Z")
        document.replace(p, labelled_sample(document.samples[p], human, target))
    copy = tmp_path / Path(str(config.dataset)).name
    copy.write_text(document.dumps(), encoding="utf-8")
    return config.model_copy(update={"dataset": copy}), chosen


@pytest.mark.parametrize("shape", SHAPES)
def test_a_verdict_correction_that_also_edits_the_reason_is_one_correction(shape, tmp_path):
    config = SHAPES[shape](tmp_path)
    before = _estimate(config)
    relabelled, chosen = _relabelled(config, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = load_dataset(relabelled)
        metric = build_metric(relabelled.metric, prompt_name=resolve_prompt(relabelled, dataset).rename)
    labels = dataset.labels()
    evidence = classify(
        dataset, labels, [p for p, y in enumerate(labels) if y is not None], evidence_prompt(metric)
    )
    assert all(evidence[p].kind == "verdict" for p in chosen)
    if evidence_prompt(metric) is not None:  # the class of input: a verdict correction that says why
        assert all(evidence[p].human_reason for p in chosen)
    after = _estimate(relabelled)
    assert (after.usable, after.train_part) == (before.usable, before.train_part)
    added = after.train_part * RELABELLED / after.usable
    assert after.corrections == pytest.approx(before.corrections + added, abs=0.1)


@pytest.mark.parametrize("name", ["answer_correctness", "helpfulness_rubric"])
def test_estimate_counts_the_corrections_a_run_learns_from(name):
    """Where the run learns from every usable annotation (small data: no split to round), the
    estimate's corrections are exactly the run's ``stages.distill.corrections`` (6 and 33; the
    double count said 8 and 60)."""
    from promptevolver.config import build_llm, build_loss
    from promptevolver.optimizers import GeneticOptimizer

    config = _bundled(name)
    expected = _estimate(config)
    options = config.effective_optimizer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = load_dataset(config)
        llm = build_llm(config.llm, dataset=dataset, random_seed=options.random_seed)
        result = GeneticOptimizer(metric=build_metric(config.metric), llm=llm).optimize(
            dataset=dataset, loss=build_loss(config.loss), config=options
        )
    distill = result.stage_records.distill
    assert distill is not None
    assert (expected.corrections, expected.train_part) == (distill.corrections, expected.usable)
