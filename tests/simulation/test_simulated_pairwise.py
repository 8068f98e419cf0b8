"""The simulated LLM on pairwise and classification judges: it recognises their samples (by the
fields the judge shows, and with the responses swapped), answers with the label names the
request's schema asks for, draws noise among the other classes, and warns when it knows fewer
than 90 % of the samples it judges (it answers those with coin flips)."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest

from promptevolver import AspectCritic, ClassificationJudge, PairwiseJudge, SingleMetricAnnotation
from promptevolver.annotations._labels import PAIRWISE
from promptevolver.judge import label_scale_of
from promptevolver.simulation._simulated_llm import SimulationCoverageWarning
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM

from ..conftest import ROOT

PANDALM = ROOT / "benchmarks" / "data" / "pandalm_pairwise.json"


@pytest.fixture(scope="module")
def pandalm() -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(PANDALM, scale=PAIRWISE).select(range(200))


def _judge_all(judge, llm, dataset):
    async def main():
        return await asyncio.gather(*[judge.ajudge(s.metric_input, llm=llm) for s in dataset.samples])

    return asyncio.run(main())


def test_pairwise_samples_are_known_in_both_orders_and_judged_as_recorded(pandalm):
    judge = PairwiseJudge(name="pandalm", definition="Which is better?", order_swap=True)
    llm = SimulatedMetricsLLM(
        dataset=pandalm, random_seed=0, prompt_name=judge.prompt_name, scale=judge.label_scale, noise=0.0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulationCoverageWarning)
        judged = _judge_all(judge, llm, pandalm)
    assert llm.known_share() == 1.0
    # no noise: the same verdict in both orders, unless the file holds the pair in the other order
    # too, with its own recorded verdict (PandaLM's judge said "a" in both orders of a few pairs)
    shown = {
        (s.metric_input["user_input"], s.metric_input["response_a"], s.metric_input["response_b"])
        for s in pandalm
    }
    for sample, j in zip(pandalm.samples, judged):
        twin = (
            sample.metric_input["user_input"],
            sample.metric_input["response_b"],
            sample.metric_input["response_a"],
        )
        assert j.details["order_swap"]["consistent"] or twin in shown
    recorded = [s.metric_output for s in pandalm.samples]
    replayed = [  # NaN: no recorded verdict; an inconsistent pair is a tie
        (j.score, r) for j, r in zip(judged, recorded) if r == r and j.details["order_swap"]["consistent"]
    ]
    assert len(replayed) > 150 and all(
        score == r for score, r in replayed
    )  # the seed replays the recorded judge
    assert {j.score for j in judged} == {0.0, 0.5, 1.0}


def test_a_judge_that_shows_fewer_fields_still_finds_its_samples(pandalm):
    rows = [
        {**s.model_dump(), "metric_input": {**s.metric_input, "source": "export 7"}}
        for s in pandalm.samples[:30]
    ]
    extra = SingleMetricAnnotation.model_validate({"name": "p", "samples": rows})
    judge = PairwiseJudge(name="p", definition="d")
    llm = SimulatedMetricsLLM(dataset=extra, random_seed=0, prompt_name=judge.prompt_name, scale=PAIRWISE)
    _judge_all(judge, llm, extra)
    assert llm.known_share() == 1.0


def test_it_warns_once_when_it_knows_under_90_percent_of_what_it_judges(pandalm):
    packed = [
        {
            **s.model_dump(),
            "metric_input": {
                "user_input": s.metric_input["user_input"],
                "response": s.metric_input["response_a"],
            },
        }
        for s in pandalm.samples[:60]
        if s.metric_input["response_a"]
    ][:40]
    other = SingleMetricAnnotation.model_validate({"name": "p", "samples": packed[:4] + []})
    critic = AspectCritic(name="p", definition="d")
    llm = SimulatedMetricsLLM(
        dataset=pandalm.select(range(40)), random_seed=0, prompt_name="x", scale=PAIRWISE
    )
    with pytest.warns(
        SimulationCoverageWarning, match=r"knows only 0 of the 20 samples.*coin flips.*hold.*response_a"
    ) as found:
        _judge_all(critic, llm, SingleMetricAnnotation.model_validate({"name": "p", "samples": packed}))
    assert len(found) == 1 and llm.known_share() == 0.0
    assert len(other) == 4


def test_classification_answers_names_and_noise_picks_the_other_classes():
    samples = [
        {
            "metric_input": {"user_input": f"message {i}", "response": f"text {i}"},
            "metric_output": i % 3,
            "is_accepted": True,
            "prompts": {
                "single_turn_classification_prompt": {
                    "prompt_input": {},
                    "prompt_output": {"reason": "r", "label": ["x", "y", "z"][i % 3]},
                }
            },
        }
        for i in range(60)
    ]
    judge = ClassificationJudge(name="c", definition="d", labels=["x", "y", "z"])
    data = SingleMetricAnnotation.model_validate({"name": "c", "samples": samples}).with_scale(
        label_scale_of(judge)
    )
    quiet = SimulatedMetricsLLM(
        dataset=data, random_seed=0, prompt_name=judge.prompt_name, scale=judge.label_scale, noise=0.0
    )
    assert [j.score for j in _judge_all(judge, quiet, data)] == [float(i % 3) for i in range(60)]
    noisy = SimulatedMetricsLLM(
        dataset=data, random_seed=0, prompt_name=judge.prompt_name, scale=judge.label_scale, noise=0.5
    )
    flipped = [
        (j.score, float(i % 3))
        for i, j in enumerate(_judge_all(judge, noisy, data))
        if j.score != float(i % 3)
    ]
    assert flipped and {s for s, _ in flipped} <= {0.0, 1.0, 2.0}
    assert len({(s - t) % 3 for s, t in flipped}) == 2  # both other classes are drawn
    raw = json.loads(noisy.answer(noisy_request(judge, data)))
    assert raw["label"] in ("x", "y", "z")


def noisy_request(judge, data):
    from promptevolver.llm._base import LLMRequest

    prompt = judge.get_prompts()[judge.prompt_name]
    messages = prompt.render(judge.prompt_inputs(data.samples[0].metric_input))
    return LLMRequest(messages, json_schema=prompt.json_schema())


def test_a_teaching_example_shown_with_a_named_verdict_teaches_as_a_number_does():
    from promptevolver.annotations._models import sample_key

    reasons = ["b is more concise", "b is more concise here", "b cites the source", "b cites the source too"]
    rows = [
        {
            "metric_input": {
                "user_input": f"task {i}",
                "response_a": f"long answer {i}",
                "response_b": f"short {i}",
            },
            "metric_output": 0,
            "is_accepted": True,
            "target": 0,
            "prompts": {
                "pairwise_comparison_prompt": {
                    "prompt_input": {},
                    "prompt_output": {"reason": "a is better", "verdict": "a"},
                    "edited_output": {"reason": r, "verdict": "b"},
                }
            },
        }
        for i, r in enumerate(reasons)
    ]
    data = SingleMetricAnnotation.model_validate({"name": "p", "samples": rows})
    judge = PairwiseJudge(name="p", definition="d", ties=False)
    llm = SimulatedMetricsLLM(dataset=data, random_seed=0, prompt_name=judge.prompt_name)
    assert llm.world.labels == ("b", "a")  # read off the file: binary, named
    judged, example = data.samples[0].metric_input, judge.prompt_inputs(data.samples[1].metric_input)
    truth = llm.truth(judged)
    assert llm.demo_effect(sample_key(judged), truth, [(example, {"verdict": "b"})]) == (1, 1)  # the human's
    assert llm.demo_effect(sample_key(judged), truth, [(example, {"verdict": "a"})]) == (0, 1)  # mis-teaches
