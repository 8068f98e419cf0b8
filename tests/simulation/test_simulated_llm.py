"""The simulated judge and prompt engineer: criteria mined from corrections decide verdicts,
answers are deterministic, meta calls name only criteria of shown samples, instructions read
as a person would write them, and naming everything is not optimal."""

from __future__ import annotations

import asyncio
import copy
import json
import re

import numpy as np
import pytest

from promptevolver import AspectCritic, SingleMetricAnnotation
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.optimizers.operators import _meta_prompts as ops
from promptevolver.simulation import _phrases as ph
from promptevolver.simulation import _writer as writer
from promptevolver.simulation._simulated_llm import NOISE_REASON, sample_key
from promptevolver.simulation.synthetic import SyntheticSpec, generate

from ..conftest import AC_DEFINITION

PROMPT = AspectCritic.PROMPT_NAME


@pytest.fixture(scope="module")
def synth() -> SingleMetricAnnotation:
    return generate(SyntheticSpec(n_samples=300, random_seed=3))


def _judge(llm: SimulatedJudgeLLM, metric: AspectCritic, inputs: dict, instruction: str, index: int = 0):
    prompt = metric.get_prompts()[PROMPT].with_instruction(instruction)
    messages = prompt.render(metric.prompt_inputs(inputs))
    return json.loads(llm.answer(LLMRequest(messages, sample_index=index)))


def _accuracy(llm: SimulatedJudgeLLM, ds: SingleMetricAnnotation, instruction: str, draws: int = 3) -> float:
    metric = AspectCritic(name=ds.name, definition=AC_DEFINITION)
    labels = ds.labels()
    hits = [
        _judge(llm, metric, s.metric_input, instruction, k)["verdict"] == labels[i]
        for i, s in enumerate(ds)
        for k in range(draws)
    ]
    return float(np.mean(hits))


def _example(sample, with_reason: bool = True) -> ops.Example:
    edited = sample.prompts[PROMPT].edited_output or {}
    expected = {"verdict": int(sample.metric_output)}
    if with_reason and edited.get("reason"):
        expected["reason"] = edited["reason"]
    return ops.Example(dict(sample.metric_input), expected)


def _reverse(llm: SimulatedJudgeLLM, examples: list[ops.Example], index: int = 0) -> str | None:
    out = asyncio.run(
        ops.reverse_engineer(
            llm, metric_name="answer_correctness", examples=examples, temperature=0.0, sample_index=index
        )
    )
    return out.value  # type: ignore[return-value]


# --- judge ---------------------------------------------------------------------------------------


def test_judge_follows_the_human_exactly_when_the_instruction_names_a_criterion_of_the_sample(
    ac_dataset, ac_metric
):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0, noise=0.0)
    seed = ac_metric.get_instructions()[PROMPT]
    labels = ac_dataset.labels()
    disagreeing = [i for i, s in enumerate(ac_dataset) if llm.truth(s.metric_input).disagrees]
    assert disagreeing, "the bundled file has human corrections that changed the verdict"
    for i, sample in enumerate(ac_dataset):
        truth = llm.truth(sample.metric_input)
        original = sample.prompts[PROMPT].prompt_output["verdict"]
        assert _judge(llm, ac_metric, sample.metric_input, seed)["verdict"] == original
        for cid in truth.criteria:
            named = seed + "\n" + llm.sentence(llm.world.criteria[cid])
            assert _judge(llm, ac_metric, sample.metric_input, named)["verdict"] == labels[i]
    other = [
        c
        for c in llm.world.criteria.values()
        if not set(c.samples) & {sample_key(ac_dataset[disagreeing[0]].metric_input)}
    ]
    truth = llm.truth(ac_dataset[disagreeing[0]].metric_input)
    for crit in other:
        unrelated = seed + "\n" + llm.sentence(crit)
        assert (
            _judge(llm, ac_metric, ac_dataset[disagreeing[0]].metric_input, unrelated)["verdict"]
            == truth.original
        )


def test_answer_correctness_has_a_generic_criterion_taught_by_edited_reasons_of_agreeing_samples(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0)
    generic = llm.world.generic()
    assert generic
    for crit in generic:
        truths = [llm.world.samples[k] for k in crit.samples]
        assert any(t.disagrees for t in truths) and any(not t.disagrees for t in truths)
        assert all(t.edited_reason for t in truths)


def test_matching_ignores_case_punctuation_plural_s_and_ly():
    assert ph.key_sequence("Wrongly MENTIONS; the Facts!") == ph.key_sequence("wrong mention the fact")
    assert ph.contains(
        ph.key_sequence("It has unit-conversion errors."), ph.key_sequence("unit conversion error")
    )
    assert not ph.contains(ph.key_sequence("unit of conversion"), ph.key_sequence("unit conversion"))


def test_same_request_same_answer_and_noise_depends_on_seed(ac_dataset, ac_metric):
    sample = ac_dataset[0].metric_input
    instructions = [f"Judge carefully variant {k}." for k in range(200)]
    runs = []
    for seed in (1, 1, 2):
        llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=seed, noise=0.3)
        runs.append([_judge(llm, ac_metric, sample, text)["verdict"] for text in instructions])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    flips = sum(v != ac_dataset[0].metric_output for v in runs[0])
    assert 30 <= flips <= 90  # ~30 % of 200


def test_answers_do_not_depend_on_the_order_of_calls(synth):
    metric = AspectCritic(name=synth.name, definition=AC_DEFINITION)
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=4, noise=0.2)
    crit = llm.world.generic()[0]
    prompt = metric.get_prompts()[PROMPT]
    requests = [
        LLMRequest(prompt.with_instruction(text).render(metric.prompt_inputs(s.metric_input)), sample_index=k)
        for s in list(synth)[:40]
        for text in ("Judge it.", "Judge it.\n" + llm.sentence(crit))
        for k in (0, 1)
    ]
    forward = {id(r): llm.answer(r) for r in requests}
    order = np.random.default_rng(0).permutation(len(requests))
    fresh = SimulatedJudgeLLM(dataset=synth, random_seed=4, noise=0.2)
    assert all(fresh.answer(requests[i]) == forward[id(requests[i])] for i in order)


def test_penalties_long_crammed_and_repetitive_instructions_are_noisier(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=0, noise=0.01, free_words=50, max_criteria=3)
    assert llm.noise_rate("Judge it.") == 0.01
    varied = " ".join(f"w{k}" for k in range(150))
    assert llm.noise_rate(varied) == pytest.approx(0.01 + 100 * 0.002)
    assert llm.noise_rate(" ".join(["word"] * 60)) > llm.noise_rate(" ".join(f"v{k}" for k in range(60)))
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=0, noise=0.01, max_criteria=3)
    crits = list(llm.world.criteria.values())
    three = "\n".join(llm.sentence(c) for c in crits[:3])
    six = "\n".join(llm.sentence(c) for c in crits[:6])
    assert len(llm.named(six)) == 6
    assert llm.noise_rate(three) == 0.01
    assert llm.noise_rate(six) == pytest.approx(0.01 + 3 * 0.04)
    assert llm.noise_rate(" ".join(f"w{k}" for k in range(10_000))) == 0.5


def test_noise_flips_carry_a_generic_reason(ac_dataset, ac_metric):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0, noise=0.5)
    answers = [_judge(llm, ac_metric, ac_dataset[0].metric_input, "Judge it.", k) for k in range(40)]
    flipped = [a for a in answers if a["verdict"] != ac_dataset[0].metric_output]
    assert flipped and all(a["reason"] == NOISE_REASON for a in flipped)


def test_the_oracle_beats_the_seed_and_pasting_everything_does_not(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=1)
    seed = AC_DEFINITION
    oracle = writer.compose([seed], [], llm.world.generic(), llm.world, max_criteria=100)
    clauses = [writer.clause(c, has_reference=llm.world.has_reference) for c in llm.world.criteria.values()]
    everything = "\n".join([seed, *(f"- {c}" for c in clauses)])  # pasted, as no careful writer would
    assert len(llm.world.criteria) > 3 * len(llm.world.generic())
    seed_acc, oracle_acc, all_acc = (_accuracy(llm, synth, text) for text in (seed, oracle, everything))
    assert oracle_acc > seed_acc + 0.05
    assert all_acc < seed_acc
    assert llm.noise_rate(everything) == 0.5


def test_unknown_sample_is_answered_deterministically(ac_dataset, ac_metric):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0)
    unknown = {"user_input": "What is 2 + 2?", "response": "4"}
    first = _judge(llm, ac_metric, unknown, "Judge it.")
    assert first["verdict"] in (0, 1)
    assert _judge(llm, ac_metric, unknown, "Judge it.") == first


def test_malformed_rate_produces_failures_not_verdicts(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0, malformed_rate=1.0)
    metric = AspectCritic(name="answer_correctness", definition="Is it correct?", max_reasks=1)
    result = asyncio.run(metric.ajudge(ac_dataset[0].metric_input, llm=llm))
    assert result.failed and result.raw and "unparseable" in (result.error or "")


# --- the prompt engineer -------------------------------------------------------------------------


def test_no_leakage_a_criterion_is_named_only_if_a_shown_sample_carries_it(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=2, p_discover=1.0)
    rng = np.random.default_rng(0)
    samples = list(synth)
    for trial in range(30):
        shown = [samples[i] for i in rng.choice(len(samples), size=4, replace=False)]
        carried = {c for s in shown for c in llm.truth(s.metric_input).criteria}
        instruction = _reverse(llm, [_example(s) for s in shown], trial)
        assert instruction is not None
        named = llm.named(instruction)
        assert named <= carried
        rules = [c for c in carried if writer.general(llm.world.criteria[c], llm.world)]  # careful
        assert set(sorted(rules, key=lambda c: (llm.world.criteria[c].kind != "generic", c))[:16]) <= named


def test_discovery_is_seeded_and_grows_with_evidence(synth):
    """Discovery is one draw per (seed, prompt, criterion): vary the seed to sample it."""
    base = SimulatedJudgeLLM(dataset=synth, random_seed=5, p_discover=0.5)
    crit = max(base.world.generic(), key=lambda c: len(c.samples))
    carriers = [s for s in synth if sample_key(s.metric_input) in set(crit.samples)]

    def found(seed: int, shown: list) -> bool:
        llm = copy.copy(base)
        llm.random_seed = seed
        return crit.id in llm.named(_reverse(llm, [_example(s) for s in shown]) or "")

    one = [found(k, carriers[:1]) for k in range(60)]
    three = [found(k, carriers[:3]) for k in range(60)]
    assert 15 <= sum(one) <= 45  # p = 0.5
    assert sum(three) > sum(one)
    assert one == [found(k, carriers[:1]) for k in range(60)]  # the same seed, the same answer


def test_readability_criteria_are_whole_words_of_the_corrections_in_natural_sentences(
    ac_dataset, help_dataset, synth
):
    for ds in (ac_dataset, help_dataset, synth):
        llm = SimulatedJudgeLLM(dataset=ds, random_seed=0)
        texts = " ".join(
            f"{s.prompts[PROMPT].edited_output.get('reason', '') if s.prompts[PROMPT].edited_output else ''} "
            + " ".join(str(v) for v in s.metric_input.values() if isinstance(v, str))
            for s in ds
        )
        vocabulary = set(re.findall(r"[A-Za-z0-9']+", texts.replace("’", "'")))
        for crit in llm.world.criteria.values():
            words = crit.phrase.split()
            assert words and all(w in vocabulary or w.capitalize() in vocabulary for w in words), crit
            sentence = llm.sentence(crit)
            assert re.fullmatch(r"Give verdict [01] \((yes|no)\) when [^\n]+\.", sentence), sentence
            assert crit.phrase in sentence and llm.named(sentence) >= {crit.id}


def test_answer_correctness_instruction_reads_naturally(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0, p_discover=1.0)
    shown = [s for s in ac_dataset if s.prompts[PROMPT].edited_output][:4]
    instruction = _reverse(llm, [_example(s) for s in shown])
    assert instruction is not None
    assert "Give verdict 0 (no) when:\n- anything the response says is wrong" in instruction
    assert not re.search(r"\b(didn|rent|countri)\b", instruction)


def test_feedback_names_the_most_evidenced_uncovered_criteria_first_and_at_most_k(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=0, p_discover=1.0)
    generic = sorted(llm.world.generic(), key=lambda c: -len(c.samples))[:2]
    by_key = {sample_key(s.metric_input): s for s in synth}
    failing = [by_key[k] for k in generic[0].samples[:3]] + [by_key[k] for k in generic[1].samples[:1]]
    examples = [
        ops.Example(dict(s.metric_input), _example(s).expected, judged={"reason": "x", "verdict": 1})
        for s in failing
    ]
    covered = "Judge it.\n" + llm.sentence(generic[1])

    def run(k: int, instruction: str) -> list[str]:
        out = asyncio.run(
            ops.feedback(
                llm,
                instruction=instruction,
                failures=examples,
                max_feedbacks=k,
                temperature=0.0,
                sample_index=0,
            )
        )
        return out.value or []  # type: ignore[return-value]

    items = run(3, "Judge it.")
    assert 1 <= len(items) <= 3  # some feedback, never more than max_feedbacks asked for
    assert llm.named(items[0]) >= {generic[0].id}
    assert len(run(1, "Judge it.")) == 1
    assert all(generic[1].id not in llm.named(item) for item in run(3, covered))


def test_feedback_rewrite_crossover_round_trip(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=0, p_discover=1.0)
    a, b = sorted(llm.world.generic(), key=lambda c: -len(c.samples))[:2]
    by_key = {sample_key(s.metric_input): s for s in synth}
    failing = [
        ops.Example(
            dict(by_key[a.samples[0]].metric_input),
            _example(by_key[a.samples[0]]).expected,
            judged={"reason": "fine", "verdict": 1 - a.verdict},
        )
    ]

    async def run() -> tuple:
        fb = await ops.feedback(
            llm, instruction="Judge it.", failures=failing, max_feedbacks=1, temperature=0.0, sample_index=0
        )
        rw = await ops.rewrite(
            llm, instruction="Judge it.", feedback_items=fb.value, temperature=0.0, sample_index=0
        )
        other = "Be strict.\n" + llm.sentence(b) + "\n" + llm.sentence(a)
        cx = await ops.crossover(llm, parent_a=rw.value, parent_b=other, temperature=0.0, sample_index=0)
        same = await ops.rewrite(
            llm, instruction="Judge it.", feedback_items=["Be nicer."], temperature=0.0, sample_index=0
        )
        return fb, rw, cx, same

    fb, rw, cx, same = asyncio.run(run())
    assert fb.value and llm.named(fb.value[0]) >= {a.id}
    assert rw.value.startswith("Judge it.") and llm.named(rw.value) == {a.id}
    assert llm.named(cx.value) == {a.id, b.id} and cx.value.startswith("Judge it.")
    assert sum(a.phrase in line for line in cx.value.splitlines()) == 1  # no duplicate criterion line
    assert same.value is None and same.rejected == "unchanged instruction"
    assert llm.usage.calls_by_operation == {"feedback": 1, "rewrite": 2, "crossover": 1}


def test_sections_are_read_by_heading_and_unknown_sections_are_shown_samples_too(synth):
    llm = SimulatedJudgeLLM(dataset=synth, random_seed=0, p_discover=1.0)
    crit = max(llm.world.generic(), key=lambda c: len(c.samples))
    sample = next(s for s in synth if sample_key(s.metric_input) == crit.samples[0])
    user = (
        "## Current instruction\nJudge it.\n\n"
        f"## Passing samples (for contrast)\n{_example(sample).line()}\n\n"
        f"## Failing samples\n\n## Answer\nGive at most 2 changes."
    )
    request = LLMRequest((ChatMessage("system", "x"), ChatMessage("user", user)), operation="feedback")
    items = json.loads(llm.answer(request))["feedback"]
    assert items and crit.id in llm.named(items[0])


def test_unrecognised_prompt_gets_an_error_object(ac_dataset):
    llm = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=0)
    request = LLMRequest((ChatMessage("system", "x"), ChatMessage("user", "Write a poem.")))
    assert "error" in json.loads(llm.answer(request))
