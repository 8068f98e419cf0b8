"""The simulated LLM for rubric scores and for statements + verdicts: an instruction that names a
criterion of the prompt at fault really fixes the answer; answers are deterministic; binary worlds
are unchanged; the prompt engineer learns these criteria from shown samples."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from promptevolver import RubricJudge, SingleMetricAnnotation, StatementSupport
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.optimizers.operators import _meta_prompts as ops
from promptevolver.simulation._criteria import sample_key
from promptevolver.simulation._synthetic_rubric import RubricSpec, generate_rubric
from promptevolver.simulation._synthetic_statements import StatementsSpec, generate_statements
from promptevolver.simulation._worlds import EXTRACTOR_PREFIX, RUBRIC_PREFIX, VERIFIER_PREFIX
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM, output_kind

EX, VER = StatementSupport.EXTRACTOR, StatementSupport.VERIFIER
RUBRIC = RubricJudge.PROMPT_NAME


@pytest.fixture(scope="module")
def rubric_set() -> SingleMetricAnnotation:
    return generate_rubric(RubricSpec(n_samples=80, random_seed=3))


@pytest.fixture(scope="module")
def statement_set() -> SingleMetricAnnotation:
    return generate_statements(StatementsSpec(n_samples=80, random_seed=3))


def judged(llm: Any, metric: Any, inputs: dict[str, Any], instructions: dict[str, str] | None = None) -> Any:
    return asyncio.run(metric.ajudge(inputs, llm=llm, instructions=instructions))


def naming(llm: SimulatedMetricsLLM, instruction: str, key: str, prefix: str) -> str:
    """``instruction`` plus a line naming every criterion of ``prefix`` the sample carries."""
    truth = llm.world.samples[key]
    phrases = [llm.world.criteria[c].phrase for c in truth.criteria if c.startswith(prefix)]
    return instruction + "".join(f"\n- the response shows {p}" for p in phrases)


def test_output_kinds_are_told_apart_by_schema():
    rubric, statements = RubricJudge(name="h", definition="d"), StatementSupport()
    assert output_kind(rubric.get_prompts()[RUBRIC].json_schema()) == "score"
    assert output_kind(statements.get_prompts()[EX].json_schema()) == "statements"
    assert output_kind(statements.get_prompts()[VER].json_schema()) == "verdicts"
    assert output_kind({"properties": {"reason": {}, "verdict": {}}}) is None


def test_a_rubric_score_is_the_recorded_one_unless_a_criterion_of_the_sample_is_named(rubric_set):
    llm = SimulatedMetricsLLM(dataset=rubric_set, random_seed=0, noise=0.0)
    metric = RubricJudge(name="helpfulness", definition="How helpful is it?")
    seed = metric.get_instructions()[RUBRIC]
    labels, fixed = rubric_set.labels(), 0
    for i, sample in enumerate(rubric_set):
        recorded = sample.prompts[RUBRIC].prompt_output["score"]
        assert judged(llm, metric, sample.metric_input).score == recorded
        key = sample_key(sample.metric_input)
        if labels[i] is not None and labels[i] != recorded:
            assert any(c.startswith(RUBRIC_PREFIX) for c in llm.world.samples[key].criteria)
            named = {RUBRIC: naming(llm, seed, key, RUBRIC_PREFIX)}
            assert judged(llm, metric, sample.metric_input, named).score == labels[i]
            fixed += 1
    assert fixed >= 10


def test_rubric_noise_moves_one_level_within_range_and_is_deterministic(rubric_set):
    metric = RubricJudge(name="helpfulness", definition="How helpful is it?")
    sample = rubric_set[0].metric_input
    variants = [{RUBRIC: f"Score it, variant {k}."} for k in range(150)]
    runs = []
    for seed in (1, 1, 2):
        llm = SimulatedMetricsLLM(dataset=rubric_set, random_seed=seed, noise=0.3)
        runs.append([judged(llm, metric, sample, v).score for v in variants])
    assert runs[0] == runs[1] != runs[2]
    recorded = rubric_set[0].prompts[RUBRIC].prompt_output["score"]
    moved = [v for v in runs[0] if v != recorded]
    assert 20 <= len(moved) <= 70 and all(abs(v - recorded) == 1 and 1 <= v <= 5 for v in moved)


def _statement_case(llm: SimulatedMetricsLLM, sample: Any) -> tuple[str, dict[str, str]]:
    key = sample_key(sample.metric_input)
    seed = StatementSupport().get_instructions()
    both = {
        EX: naming(llm, seed[EX], key, EXTRACTOR_PREFIX),
        VER: naming(llm, seed[VER], key, VERIFIER_PREFIX),
    }
    return key, both


def test_statements_and_verdicts_are_fixed_by_naming_the_criteria_of_the_prompt_at_fault(statement_set):
    llm = SimulatedMetricsLLM(dataset=statement_set, random_seed=0, noise=0.0)
    metric = StatementSupport()
    seed = metric.get_instructions()
    labels, fixed = statement_set.labels(), {EX: 0, VER: 0}
    for i, sample in enumerate(statement_set):
        assert judged(llm, metric, sample.metric_input).score == pytest.approx(sample.metric_output)
        if labels[i] is None or labels[i] == pytest.approx(sample.metric_output):
            continue
        _, both = _statement_case(llm, sample)
        assert judged(llm, metric, sample.metric_input, both).score == pytest.approx(labels[i])
        for name in (EX, VER):  # the other prompt's instruction alone leaves this one's error
            edit = sample.prompts[name].edited_output
            if not (edit and edit.get("reason")):
                continue
            fixed[name] += 1
            other = {n: both[n] if n != name else seed[n] for n in both}
            outputs = judged(llm, metric, sample.metric_input, other).details["outputs"]
            recorded = sample.prompts[name].prompt_output
            if name == EX:
                assert outputs[EX] == recorded
            else:
                got = {v["statement"]: v["verdict"] for v in outputs[VER]["statements"]}
                was = {v["statement"]: v["verdict"] for v in recorded["statements"]}
                assert {k: got[k] for k in was if k in got} == {k: was[k] for k in was if k in got}
    assert fixed[EX] >= 5 and fixed[VER] >= 5


def test_a_rejected_sample_with_a_target_blames_the_verifier(statement_set):
    llm = SimulatedMetricsLLM(dataset=statement_set, random_seed=0, noise=0.0)
    rejected = [s for s in statement_set if not s.is_accepted and s.target is not None]
    assert rejected and llm.statements is not None
    for sample in rejected:
        key = sample_key(sample.metric_input)
        truths = [t for t in llm.statements.verdicts.values() if t.sample == key]
        assert any(t.human != t.original for t in truths)
        assert sum(t.human for t in truths) / len(truths) == pytest.approx(sample.target)
        assert any(c.startswith(VERIFIER_PREFIX) for c in llm.world.samples[key].criteria)


def test_the_prompt_engineer_learns_a_prompt_s_criteria_from_its_corrections(statement_set):
    llm = SimulatedMetricsLLM(dataset=statement_set, random_seed=0, noise=0.0)
    metric = StatementSupport()
    edited = [s for s in statement_set if (s.prompts[EX].edited_output or {}).get("reason")]
    lines = []
    for s in edited[:6]:
        expected = {"reason": s.prompts[EX].edited_output["reason"], "verdict": s.target}
        lines.append(json.dumps({"input": metric.prompt_inputs(s.metric_input), "expected_output": expected}))
    user = f"{ops.EXAMPLES}\n" + "\n".join(lines) + f"\n\n{ops.ANSWER}\nAnswer."
    request = LLMRequest(
        (ChatMessage("system", "s"), ChatMessage("user", user)), operation="reverse_engineer"
    )
    instruction = json.loads(llm.answer(request))["instruction"]
    named = llm.named(instruction)
    assert any(c.startswith(EXTRACTOR_PREFIX) for c in named)


def test_a_binary_world_answers_and_identifies_itself_as_before(ac_dataset, ac_metric):
    plain = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=4)
    extended = SimulatedMetricsLLM(dataset=ac_dataset, random_seed=4)
    assert extended.scores is None and extended.statements is None
    assert extended.cache_identity() == plain.cache_identity()
    for sample in list(ac_dataset)[:8]:
        assert judged(extended, ac_metric, sample.metric_input) == judged(
            plain, ac_metric, sample.metric_input
        )


def test_unknown_inputs_get_plausible_answers():
    data = generate_statements(StatementsSpec(n_samples=12, random_seed=1))
    llm = SimulatedMetricsLLM(dataset=data, random_seed=0, noise=0.0)
    inputs = {"user_input": "q?", "response": "One claim. Another claim!", "retrieved_contexts": ["c"]}
    judgement = judged(llm, StatementSupport(), inputs)
    assert judgement.details["outputs"][EX]["statements"] == ["One claim.", "Another claim!"]
    assert judgement.score in (0.0, 0.5, 1.0)
    rubric_llm = SimulatedMetricsLLM(dataset=generate_rubric(RubricSpec(n_samples=12)), random_seed=0)
    assert judged(rubric_llm, RubricJudge(name="h", definition="d"), inputs).score in (1, 2, 3, 4, 5)


@pytest.mark.parametrize("kind", ["rubric", "binary"])
def test_the_engineer_writes_score_directions_for_a_rubric_and_verdicts_for_a_binary_metric(
    kind, rubric_set, ac_dataset
):
    """The rubric demo's 1-5 instruction ended in "Give verdict 0 (no) when:" rules."""
    from promptevolver.simulation import _writer as writer

    llm = SimulatedMetricsLLM(dataset=rubric_set if kind == "rubric" else ac_dataset, random_seed=0)
    world = llm.world
    criteria = sorted(world.criteria.values(), key=lambda c: c.id)
    both = [next(c for c in criteria if c.verdict == v) for v in (0, 1)]
    text = writer.compose(["Score the response from 1 to 5."], (), both, world, max_criteria=12)
    items = [writer.feedback_item(c, has_reference=world.has_reference, scored=world.scored) for c in both]
    if kind == "rubric":
        assert world.scored and "Score lower when:" in text and "Score higher when:" in text
        assert items[0].startswith("Score lower when ") and items[1].startswith("Score higher when ")
        assert "verdict" not in text.lower() and not any("verdict" in i.lower() for i in items)
    else:
        assert (
            not world.scored and "Give verdict 0 (no) when:" in text and "Give verdict 1 (yes) when:" in text
        )
    parsed = writer.parse(text, writer.Coverage(world))
    assert writer.compose(parsed.base, parsed.lines, [], world, max_criteria=12) == text  # headers rebuilt
    assert parsed.named() == {c.id for c in both}
