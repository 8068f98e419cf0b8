"""The simulated judge: better instructions really help, answers are deterministic, meta calls
use only what the prompt shows."""

from __future__ import annotations

import asyncio
import json

from promptevolver import AspectCritic, SingleMetricAnnotation
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm.base import ChatMessage, LLMRequest
from promptevolver.optimizers.operators import meta_prompts as ops
from promptevolver.simulation.simulated_llm import sample_key, stem, words


def _judge(
    llm: SimulatedJudgeLLM, metric: AspectCritic, sample_inputs: dict, instruction: str
) -> float | None:
    result = asyncio.run(
        metric.ajudge(sample_inputs, llm=llm, instructions={metric.PROMPT_NAME: instruction})
    )
    return result.score


def _disagreements(llm: SimulatedJudgeLLM, ds: SingleMetricAnnotation) -> list[int]:
    return [i for i, s in enumerate(ds) if (t := llm.world[sample_key(s.metric_input)]).original != t.label]


def test_noise_free_judge_returns_original_verdict_unless_instruction_addresses_correction(
    ac_dataset, ac_metric
):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0, noise=0.0)
    seed = ac_metric.get_instructions()[ac_metric.PROMPT_NAME]
    labels = ac_dataset.labels()
    disagreeing = _disagreements(llm, ac_dataset)
    assert disagreeing, "the bundled file has human corrections that changed the verdict"
    for i, sample in enumerate(ac_dataset):
        original = sample.prompts[ac_metric.PROMPT_NAME].prompt_output["verdict"]
        assert _judge(llm, ac_metric, sample.metric_input, seed) == original
        truth = llm.world[sample_key(sample.metric_input)]
        fixed = seed + "\nCheck in particular: " + ", ".join(truth.terms) + "."
        assert _judge(llm, ac_metric, sample.metric_input, fixed) == labels[i]


def test_correction_terms_come_from_the_human_reason(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0)
    for i in _disagreements(llm, ac_dataset):
        sample = ac_dataset[i]
        reason = sample.prompts["single_turn_aspect_critic_prompt"].edited_output["reason"]
        terms = llm.world[sample_key(sample.metric_input)].terms
        assert terms and set(terms) <= words(reason)


def test_rejected_samples_without_edit_use_input_text(help_dataset):
    llm = SimulatedJudgeLLM(dataset=help_dataset, random_seed=0)
    rejected = [s for s in help_dataset if not s.is_accepted]
    assert rejected
    for sample in rejected:
        truth = llm.world[sample_key(sample.metric_input)]
        assert truth.label == 1 - sample.metric_output
        text = " ".join(v for v in sample.metric_input.values() if isinstance(v, str))
        assert set(truth.terms) <= words(text)


def test_same_request_same_answer_and_noise_depends_on_seed(ac_dataset, ac_metric):
    sample = ac_dataset[0].metric_input
    instructions = [f"Judge carefully variant {k}." for k in range(200)]
    runs = []
    for seed in (1, 1, 2):
        llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=seed, noise=0.3)
        runs.append([_judge(llm, ac_metric, sample, text) for text in instructions])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    flips = sum(v != ac_dataset[0].metric_output for v in runs[0])
    assert 30 <= flips <= 90  # ~30% of 200


def test_long_instructions_are_noisier(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0, noise=0.01, free_words=10)
    assert llm.noise_rate("short one") == 0.01
    assert llm.noise_rate(" ".join(["word"] * 60)) > 0.05
    assert llm.noise_rate(" ".join(["word"] * 10_000)) == 0.5


def test_unknown_sample_is_answered_deterministically(ac_dataset, ac_metric):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0)
    unknown = {"user_input": "What is 2 + 2?", "response": "4"}
    first = _judge(llm, ac_metric, unknown, "Judge it.")
    assert first in (0.0, 1.0)
    assert _judge(llm, ac_metric, unknown, "Judge it.") == first


def test_malformed_rate_produces_failures_not_verdicts(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0, malformed_rate=1.0)
    metric = AspectCritic(name="answer_correctness", definition="Is it correct?", max_reasks=1)
    result = asyncio.run(metric.ajudge(ac_dataset[0].metric_input, llm=llm))
    assert result.failed and result.raw and "unparseable" in (result.error or "")


def _meta(llm: SimulatedJudgeLLM, user: str, operation: str) -> dict:
    request = LLMRequest((ChatMessage("system", "x"), ChatMessage("user", user)), operation=operation)
    return json.loads(asyncio.run(llm.complete(request)).text)


def test_reverse_engineering_uses_only_shown_reasons(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0)
    examples = [
        ops.Example(
            {"user_input": "q", "response": "r"}, {"reason": "The zebra stripes are misplaced", "verdict": 0}
        ),
        ops.Example(
            {"user_input": "q2", "response": "r2"}, {"reason": "Mentions the volcano wrongly", "verdict": 0}
        ),
    ]

    async def run() -> str | None:
        out = await ops.reverse_engineer(
            llm, metric_name="m", examples=examples, temperature=0.0, sample_index=0
        )
        return out.value  # type: ignore[return-value]

    instruction = asyncio.run(run())
    assert instruction is not None
    shown = words("The zebra stripes are misplaced Mentions the volcano wrongly")
    _, terms = instruction.split("Check in particular:")
    assert {stem(t.strip(" .")) for t in terms.split(",")} <= shown


def test_feedback_rewrite_crossover_round_trip(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0)
    failing = [
        ops.Example(
            {"user_input": "q", "response": "r"},
            {"reason": "Confuses nitrogen with oxygen", "verdict": 0},
            judged={"reason": "fine", "verdict": 1},
        )
    ]

    async def run() -> tuple:
        fb = await ops.feedback(
            llm, instruction="Judge it.", failures=failing, max_feedbacks=2, temperature=0.0, sample_index=0
        )
        rw = await ops.rewrite(
            llm, instruction="Judge it.", feedback_items=fb.value, temperature=0.0, sample_index=0
        )
        cx = await ops.crossover(
            llm,
            parent_a=rw.value,
            parent_b="Judge it.\nCheck in particular: volcano.",
            temperature=0.0,
            sample_index=0,
        )
        return fb, rw, cx

    fb, rw, cx = asyncio.run(run())
    assert fb.value and "nitrogen" in fb.value[0]
    assert "nitrogen" in rw.value and rw.value.startswith("Judge it.")
    assert "nitrogen" in cx.value and "volcano" in cx.value
    assert llm.usage.calls_by_operation == {"feedback": 1, "rewrite": 1, "crossover": 1}
