"""GeneticOptimizer behaviour on controlled worlds: honest selection, call accounting, rules."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, InsufficientDataError, MSELoss
from promptevolver.errors import AnnotationError
from promptevolver.llm._base import LLMRequest

from ..helpers import PROMPT, make_dataset, rule_llm


def _metric() -> AspectCritic:
    return AspectCritic(name="toy", definition="Is the answer right?")


def _labels(ds):
    return [int(y) for y in ds.labels()]


def _run(ds, llm, loss=None, **config):
    opt = GeneticOptimizer(metric=_metric(), llm=llm)
    config = {"random_seed": 3, "strategy": "genetic", **config}  # the genetic search's own rules
    return opt.optimize(dataset=ds, loss=loss or BinaryMetricLoss(), config=config)


def _original_or_fixed(ds, fixed_when: str):
    labels = _labels(ds)
    originals = [int(s.prompts[PROMPT].prompt_output["verdict"]) for s in ds]
    return lambda instruction, i: labels[i] if fixed_when in instruction else originals[i]


def test_seed_is_kept_when_nothing_beats_it():
    ds = make_dataset(20, wrong=4)
    labels = _labels(ds)
    # The seed is right everywhere; every other instruction is wrong everywhere.
    llm = rule_llm(ds, lambda ins, i: labels[i] if "Criteria Definition" in ins else 1 - labels[i])
    result = _run(ds, llm)
    assert result.best_id == 0 and not result.improved
    assert dict(result) == result.seed_instructions
    assert result.scores["best"] == result.scores["seed"] == {"train": 1.0, "validation": 1.0}


def test_better_instruction_found_and_chosen_on_validation():
    ds = make_dataset(30, wrong=10)
    writer_calls: list[str] = []

    def writer(request: LLMRequest) -> str:
        writer_calls.append(request.operation)
        if request.operation == "feedback":
            return json.dumps({"feedback": ["mention GOOD"]})
        if request.operation == "rewrite":
            return json.dumps({"instruction": "GOOD judge"})
        return json.dumps({"instruction": f"plain {request.operation} {request.sample_index}"})

    llm = rule_llm(ds, _original_or_fixed(ds, "GOOD"), writer)
    result = _run(ds, llm, generations=3)
    assert result[PROMPT] == "GOOD judge"
    assert result.scores["best"]["validation"] == 1.0
    assert result.scores["seed"]["validation"] < 1.0
    best = result.lineage[result.best_id]
    assert best["operator"] == "mutation" and best["parents"]
    assert "feedback" in writer_calls and "rewrite" in writer_calls


def test_each_candidate_sample_pair_judged_once():
    ds = make_dataset(20, wrong=6)
    llm = rule_llm(ds, _original_or_fixed(ds, "never"))
    result = _run(ds, llm, generations=3, population_size=4)
    judge_requests = [r for r in llm.requests if r.operation == "judge"]
    seen = [(r.messages[0].content, r.messages[1].content) for r in judge_requests]
    assert len(seen) == len(set(seen))
    assert result.usage["llm_calls"]["judge"] == len(judge_requests)
    assert result.usage["llm_calls"]["meta"] == len(llm.requests) - len(judge_requests)


def test_mse_is_minimised():
    ds = make_dataset(30, wrong=10)
    # GOOD instructions get every label right (MSE 0); the seed gets 10 wrong.
    answers = {"rewrite": {"instruction": "GOOD one"}, "feedback": {"feedback": ["x"]}}

    def writer(request: LLMRequest) -> str:
        return json.dumps(answers.get(request.operation, {"instruction": "bad"}))

    llm = rule_llm(ds, _original_or_fixed(ds, "GOOD"), writer)
    result = _run(ds, llm, loss=MSELoss(), generations=1)
    assert result[PROMPT] == "GOOD one"
    assert result.scores["best"]["validation"] == 0.0 < result.scores["seed"]["validation"]
    assert result.loss["higher_is_better"] is False


def test_population_size_one_returns_the_evaluated_seed():
    ds = make_dataset(20, wrong=4)
    llm = rule_llm(ds, _original_or_fixed(ds, "never"))
    result = _run(ds, llm, population_size=1)
    assert result.best_id == 0 and result.stop_reason == "population_size_1"
    assert result.usage["llm_calls"]["meta"] == 0
    assert result.usage["llm_calls"]["judge"] == 20


def test_metric_is_unchanged_after_optimize():
    ds = make_dataset(20, wrong=6)
    metric = _metric()
    before = metric.get_instructions()
    GeneticOptimizer(metric=metric, llm=rule_llm(ds, _original_or_fixed(ds, "GOOD"))).optimize(
        dataset=ds, loss=BinaryMetricLoss(), config={"generations": 2}
    )
    assert metric.get_instructions() == before


def test_failed_evaluations_never_win():
    ds = make_dataset(20, wrong=6)
    labels = _labels(ds)

    def writer(request: LLMRequest) -> str:
        return json.dumps(
            {"instruction": "BROKEN"} if request.operation == "rewrite" else {"feedback": ["x"]}
        )

    def handler_judge(instruction: str, i: int) -> int:
        return labels[i] if "BROKEN" not in instruction else 7  # 7 is not a valid verdict → failure

    result = _run(ds, rule_llm(ds, handler_judge, writer), generations=1)
    assert result.best_id == 0
    broken = [c for c in result.lineage if c["instructions"][PROMPT] == "BROKEN"]
    assert broken and broken[0]["failures"] > 0


def test_rejected_and_duplicate_operator_outputs_are_counted():
    ds = make_dataset(20, wrong=6)

    rewrites = []

    def writer(request: LLMRequest) -> str:
        if request.operation == "rewrite":
            rewrites.append(request)
            if len(rewrites) > 3:  # later mutations answer with cut-off JSON
                return '```json\n{"instruction": "cut'
            return json.dumps({"instruction": "same text"})
        if request.operation == "feedback":
            return json.dumps({"feedback": ["x"]})
        return '```json\n{"instruction": "cut'

    result = _run(ds, rule_llm(ds, _original_or_fixed(ds, "never"), writer), generations=2, population_size=4)
    assert result.operator_stats["duplicates"] >= 2  # three initial offspring rewritten to one text
    assert any(
        "truncated" in reason or "unparseable" in reason for reason in result.operator_stats["rejected"]
    )


def test_too_few_usable_annotations():
    ds = make_dataset(9, wrong=2)
    with pytest.raises(InsufficientDataError, match="9 usable annotations"):
        _run(ds, rule_llm(ds, lambda ins, i: 1))


def test_sample_missing_required_field_names_the_sample():
    ds = make_dataset(12, wrong=2)
    ds.samples[5].metric_input.pop("response")
    with pytest.raises(AnnotationError) as err:
        _run(ds, rule_llm(ds, lambda ins, i: 1))
    assert err.value.sample_index == 5 and "response" in str(err.value)


def test_unknown_config_key_is_refused():
    ds = make_dataset(12, wrong=2)
    with pytest.raises(ValidationError, match="populaton_size"):
        _run(ds, rule_llm(ds, lambda ins, i: 1), populaton_size=3)


def test_unknown_keyword_is_refused_but_ragas_keywords_accepted():
    ds = make_dataset(12, wrong=2)
    opt = GeneticOptimizer(metric=_metric(), llm=rule_llm(ds, lambda ins, i: 1))
    with pytest.raises(TypeError, match="bogus"):
        opt.optimize(dataset=ds, loss=BinaryMetricLoss(), bogus=1)
    result = opt.optimize(
        dataset=ds, loss=BinaryMetricLoss(), config={"population_size": 1}, with_debugging_logs=False
    )
    assert result.stop_reason and result.best_id in {c["id"] for c in result.lineage}


def test_rejected_binary_samples_are_learned_from():
    ds = make_dataset(20, wrong=0, rejected=6)
    seen_in_feedback: list[str] = []

    def writer(request: LLMRequest) -> str:
        if request.operation == "feedback":
            seen_in_feedback.append(request.messages[-1].content)
            return json.dumps({"feedback": ["GOOD"]})
        if request.operation == "rewrite":
            return json.dumps({"instruction": "GOOD"})
        return json.dumps({"instruction": f"x {request.sample_index}"})

    result = _run(ds, rule_llm(ds, _original_or_fixed(ds, "GOOD"), writer), generations=2)
    assert result.split["regime"] == "out-of-bag" and result.split["train"] == 20  # every sample learned from
    assert result[PROMPT] == "GOOD"
    assert seen_in_feedback and '"expected_output":{"verdict"' in seen_in_feedback[0]
