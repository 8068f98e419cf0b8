"""The cross-fit stage (``phases.cross_fit``): after verification, a short ladder learns from the
held-out corrections the verified rung still gets wrong, and is checked on the learning samples
its lessons never saw. Judges and prompt engineers are rules (``rule_llm``): the distilled rung
fixes the even samples, a cross-fit rung (``cross`` in its instruction) either fixes every sample
or breaks every sample."""

from __future__ import annotations

import json

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.llm._base import LLMRequest
from promptevolver.report._write import write_report
from promptevolver.runs._evaluate import learned_from_validation
from promptevolver.runs._outcome import outcome_lines

from ..helpers import make_dataset, rule_llm

DISTILL_SLOTS = 1_000_000  # the distillation stage's meta-call slots are below this; cross-fit's above


def _run(cross_fixes: bool, run_dir=None, resume=False, **config):
    ds = make_dataset(120, 60)
    labels = [int(y) for y in ds.labels()]
    wrong = [1 - y for y in labels]
    calls = {"cross_fit": 0}

    def judge(instruction: str, i: int) -> int:
        if "cross" in instruction:
            return labels[i] if cross_fixes else wrong[i]
        if "careful" in instruction and i % 2 == 0:
            return labels[i]
        return int(ds.samples[i].prompts[next(iter(ds.samples[i].prompts))].prompt_output["verdict"])

    def writer(request: LLMRequest) -> str:
        crossing = DISTILL_SLOTS <= request.sample_index < 2 * DISTILL_SLOTS
        calls["cross_fit"] += crossing
        if request.operation == "feedback":
            lesson = "check the cross rule" if crossing else "be careful with parity"
            return json.dumps({"feedback": [{"lesson": lesson, "explains": [1, 3]}]})
        return json.dumps({"instruction": f"careful {'cross ' if crossing else ''}{request.sample_index}"})

    metric = AspectCritic(name=ds.name, definition="Is the answer right?")
    llm = rule_llm(ds, judge, writer)
    opt = GeneticOptimizer(metric=metric, llm=llm)
    cfg = {"random_seed": 3, "strategy": "distill", **config}
    result = opt.optimize(ds, BinaryMetricLoss(), cfg, run_dir=run_dir, resume=resume)
    calls["all"] = len(llm.requests)
    return result, calls


def test_lessons_from_the_held_out_corrections_are_kept_when_the_learning_samples_agree(tmp_path):
    result, calls = _run(cross_fixes=True, run_dir=tmp_path)
    stage = result.stages["cross_fit"]
    assert calls["cross_fit"] > 0 and stage["meta_calls"] > 0 and stage["judge_calls"] > 0
    assert stage["corrections"] > 0  # the odd held-out corrections the distilled rung still gets wrong
    best = next(c for c in result.lineage if c["id"] == result.best_id)
    assert (
        best["operator"] == "cross_fit"
        and "cross" in result.best_instructions[next(iter(result.best_instructions))]
    )
    assert result.produced_by == "cross_fit"
    assert stage["delta"] > 0 and stage["p_better"] > 0.9
    # it learned from the validation samples: no held-out figure, said so, never a number
    assert result.scores["best"]["validation"] is None
    assert result.final_choice["stage"] == "cross_fit" and "n/a" in result.final_choice["why"]
    summary = outcome_lines(result, tmp_path)
    assert "best train" in summary[0] and "validation n/a" in summary[0].split("best train")[1]
    assert "cross-fit" in summary[1]
    result.to_json(tmp_path / "result.json")
    assert learned_from_validation(tmp_path, result.best_instructions) is not None
    assert learned_from_validation(tmp_path, result.seed_instructions) is None
    write_report(tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "Cross-fit: a ladder from" in report and "Kept:" in report


def test_lessons_that_hurt_on_the_learning_samples_are_not_kept():
    result, calls = _run(cross_fixes=False)
    stage = result.stages["cross_fit"]
    assert calls["cross_fit"] > 0 and stage["rungs"]
    assert stage["produced"] == [stage["base"]] and result.best_id == stage["base"]
    assert "hurt" in stage["why"] or "futility" in stage["why"]
    assert result.produced_by == "distill"
    assert result.scores["best"]["validation"] is not None  # the verified rung keeps its held-out figure


@pytest.mark.parametrize("config", [{"cross_fit": False}, {"small_data": 1000}])
def test_without_cross_fit_or_held_out_samples_the_stage_does_not_run(config):
    result, calls = _run(cross_fixes=True, **config)
    assert calls["cross_fit"] == 0
    assert result.stages["cross_fit"]["ran"] is False
    assert result.produced_by != "cross_fit"


def test_a_resume_after_the_cross_fit_repeats_no_call(tmp_path):
    first, _ = _run(cross_fixes=True, run_dir=tmp_path)
    again, calls = _run(cross_fixes=True, run_dir=tmp_path, resume=True)
    assert calls["all"] == 0
    assert again.best_instructions == first.best_instructions and again.best_id == first.best_id
