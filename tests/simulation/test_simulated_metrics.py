"""The simulated LLM for rubric scores and for statements + verdicts: an instruction that addresses
the human's correction really fixes the score; answers are deterministic; binary worlds unchanged."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from promptevolver import RubricJudge, SingleMetricAnnotation, StatementSupport
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.simulation.simulated_llm import sample_key, words
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM, output_kind
from promptevolver.simulation.synthetic_rubric import RubricSpec, generate_rubric
from promptevolver.simulation.synthetic_statements import StatementsSpec, generate_statements
from promptevolver.simulation.worlds import context_key

EX, VER = StatementSupport.EXTRACTOR, StatementSupport.VERIFIER


@pytest.fixture(scope="module")
def rubric_set() -> SingleMetricAnnotation:
    return generate_rubric(RubricSpec(n_samples=80, random_seed=3))


@pytest.fixture(scope="module")
def statement_set() -> SingleMetricAnnotation:
    return generate_statements(StatementsSpec(n_samples=80, random_seed=3))


def score(llm: Any, metric: Any, inputs: dict[str, Any], instructions: dict[str, str] | None = None) -> Any:
    return asyncio.run(metric.ajudge(inputs, llm=llm, instructions=instructions)).score


def judged(llm: Any, metric: Any, inputs: dict[str, Any], instructions: dict[str, str]) -> Any:
    return asyncio.run(metric.ajudge(inputs, llm=llm, instructions=instructions))


def with_terms(instruction: str, terms: tuple[str, ...]) -> str:
    return instruction + "\nCheck in particular: " + ", ".join(terms) + "."


def test_output_kinds_are_told_apart_by_schema():
    rubric, statements = RubricJudge(name="h", definition="d"), StatementSupport()
    assert output_kind(rubric.get_prompts()[RubricJudge.PROMPT_NAME].json_schema()) == "score"
    assert output_kind(statements.get_prompts()[EX].json_schema()) == "statements"
    assert output_kind(statements.get_prompts()[VER].json_schema()) == "verdicts"
    assert output_kind({"properties": {"reason": {}, "verdict": {}}}) is None


def test_a_rubric_score_is_the_recorded_one_unless_the_instruction_addresses_the_correction(rubric_set):
    llm = SimulatedMetricsLLM(dataset=rubric_set, random_seed=0, noise=0.0)
    metric = RubricJudge(name="helpfulness", definition="How helpful is it?")
    seed = metric.get_instructions()[RubricJudge.PROMPT_NAME]
    labels, fixed = rubric_set.labels(), 0
    assert llm.scores is not None
    for i, sample in enumerate(rubric_set):
        recorded = sample.prompts[RubricJudge.PROMPT_NAME].prompt_output["score"]
        assert score(llm, metric, sample.metric_input) == recorded
        truth = llm.scores.truths[sample_key(sample.metric_input)]
        if labels[i] is not None and labels[i] != recorded:
            assert truth.terms
            addressed = {RubricJudge.PROMPT_NAME: with_terms(seed, truth.terms)}
            assert score(llm, metric, sample.metric_input, addressed) == labels[i]
            fixed += 1
    assert fixed >= 10


def test_rubric_correction_terms_come_from_the_edited_reason(rubric_set):
    llm = SimulatedMetricsLLM(dataset=rubric_set, random_seed=0)
    assert llm.scores is not None
    edited = [s for s in rubric_set if s.prompts[RubricJudge.PROMPT_NAME].edited_output]
    assert edited
    for sample in edited:
        reason = sample.prompts[RubricJudge.PROMPT_NAME].edited_output["reason"]
        assert set(llm.scores.truths[sample_key(sample.metric_input)].terms) <= words(reason)


def test_rubric_noise_moves_one_level_within_range_and_is_deterministic(rubric_set):
    metric = RubricJudge(name="helpfulness", definition="How helpful is it?")
    sample = rubric_set[0].metric_input
    variants = [{RubricJudge.PROMPT_NAME: f"Score it, variant {k}."} for k in range(150)]
    runs = []
    for seed in (1, 1, 2):
        llm = SimulatedMetricsLLM(dataset=rubric_set, random_seed=seed, noise=0.3)
        runs.append([score(llm, metric, sample, v) for v in variants])
    assert runs[0] == runs[1] != runs[2]
    recorded = rubric_set[0].prompts[RubricJudge.PROMPT_NAME].prompt_output["score"]
    moved = [v for v in runs[0] if v != recorded]
    assert 20 <= len(moved) <= 70 and all(abs(v - recorded) == 1 and 1 <= v <= 5 for v in moved)


def test_statements_and_verdicts_are_fixed_by_addressing_the_prompt_that_erred(statement_set):
    llm = SimulatedMetricsLLM(dataset=statement_set, random_seed=0, noise=0.0)
    assert llm.statements is not None
    metric = StatementSupport()
    seed = metric.get_instructions()
    labels = statement_set.labels()
    fixed = {EX: 0, VER: 0}
    for i, sample in enumerate(statement_set):
        recorded = sample.metric_output
        assert score(llm, metric, sample.metric_input) == pytest.approx(recorded)
        if labels[i] is None or labels[i] == pytest.approx(recorded):
            continue
        key = sample_key(StatementSupport.extractor_inputs(sample.metric_input))
        extraction = llm.statements.extractions[key]
        context = context_key(StatementSupport.verifier_inputs(sample.metric_input, [])["context"])
        ver_terms = {t.terms for (c, _), t in llm.statements.verdicts.items() if c == context and t.terms}
        both = {
            EX: with_terms(seed[EX], extraction.terms),
            VER: with_terms(seed[VER], next(iter(ver_terms), ())),
        }
        assert score(llm, metric, sample.metric_input, both) == pytest.approx(labels[i])
        for name in (EX, VER):  # the other prompt's instruction alone leaves this one's error
            edit = sample.prompts[name].edited_output
            if edit and edit.get("reason"):
                fixed[name] += 1
                other = {n: both[n] if n != name else seed[n] for n in both}
                outputs = judged(llm, metric, sample.metric_input, other).details["outputs"]
                recorded_output = sample.prompts[name].prompt_output
                if name == EX:
                    assert outputs[EX] == recorded_output
                else:
                    got = {v["statement"]: v["verdict"] for v in outputs[VER]["statements"]}
                    was = {v["statement"]: v["verdict"] for v in recorded_output["statements"]}
                    assert {k: got[k] for k in was if k in got} == {k: was[k] for k in was if k in got}
    assert fixed[EX] >= 5 and fixed[VER] >= 5


def test_a_rejected_sample_with_a_target_blames_the_verifier(statement_set):
    llm = SimulatedMetricsLLM(dataset=statement_set, random_seed=0, noise=0.0)
    rejected = [s for s in statement_set if not s.is_accepted and s.target is not None]
    assert rejected and llm.statements is not None
    for sample in rejected:
        context = context_key(StatementSupport.verifier_inputs(sample.metric_input, [])["context"])
        truths = [t for (c, _), t in llm.statements.verdicts.items() if c == context]
        flipped = [t for t in truths if t.human != t.original]
        text = " ".join(v for v in sample.metric_input.values() if isinstance(v, str))
        assert flipped and all(set(t.terms) <= words(text) for t in flipped)
        supported = sum(t.human for t in truths) / len(truths)
        assert supported == pytest.approx(sample.target)


def test_a_binary_world_answers_and_identifies_itself_as_before(ac_dataset, ac_metric):
    plain = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=4)
    extended = SimulatedMetricsLLM(dataset=ac_dataset, random_seed=4)
    assert extended.scores is None and extended.statements is None
    assert extended.cache_identity() == plain.cache_identity()
    for sample in list(ac_dataset)[:8]:
        assert score(extended, ac_metric, sample.metric_input) == score(plain, ac_metric, sample.metric_input)


def test_unknown_inputs_get_plausible_answers():
    data = generate_statements(StatementsSpec(n_samples=12, random_seed=1))
    llm = SimulatedMetricsLLM(dataset=data, random_seed=0, noise=0.0)
    inputs = {"user_input": "q?", "response": "One claim. Another claim!", "retrieved_contexts": ["c"]}
    judgement = asyncio.run(StatementSupport().ajudge(inputs, llm=llm))
    assert judgement.details is not None
    assert judgement.details["outputs"][EX]["statements"] == ["One claim.", "Another claim!"]
    assert judgement.score in (0.0, 0.5, 1.0)
    rubric_llm = SimulatedMetricsLLM(dataset=generate_rubric(RubricSpec(n_samples=12)), random_seed=0)
    answer = json.loads(rubric_llm.answer(llm_request_for(RubricJudge(name="h", definition="d"), inputs)))
    assert answer["score"] in (1, 2, 3, 4, 5)


def llm_request_for(metric: RubricJudge, inputs: dict[str, Any]) -> Any:
    from promptevolver.llm.base import LLMRequest

    prompt = metric.get_prompts()[RubricJudge.PROMPT_NAME]
    return LLMRequest(prompt.render(metric.prompt_inputs(inputs)), json_schema=prompt.json_schema())
