"""Teaching examples round-trip through a real Ragas metric (ragas 0.4.3): the prompt's own
few-shot examples are what the adapter shows the seed, a static set is written into the prompt's
``examples`` and a retrieval store into a ``FewShotPydanticPrompt``, and Ragas' own scoring then
sends them. Skipped, with the reason, when Ragas is not installed."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest

from promptevolver import SingleMetricAnnotation
from promptevolver.judge._examples import ExampleStore
from promptevolver.judge._prompts import rendered_examples, split_rendered
from promptevolver.llm import LLMRequest, ScriptedLLM

from ..conftest import AC_DEFINITION, AC_FILE

ragas = pytest.importorskip(
    "ragas", reason='Ragas is not installed: pip install -e ".[ragas]" (pinned to ragas 0.4.3; .ci/run does)'
)

from promptevolver.integrations.ragas import (  # noqa: E402
    RagasMetric,
    RetrievalExamples,
    optimize_ragas_metric,
    write_back,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from ragas.metrics import AspectCritic, SimpleCriteriaScore  # noqa: E402
    from ragas.prompt.few_shot_pydantic_prompt import FewShotPydanticPrompt  # noqa: E402

from .test_ragas import _RecordingRagasLLM  # noqa: E402

AC_PROMPT = "single_turn_aspect_critic_prompt"
ANSWER = json.dumps({"reason": "ok", "verdict": 1})


@pytest.fixture
def dataset() -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(AC_FILE)


def _block(store: ExampleStore, policy: str) -> dict[str, Any]:
    return {"policy": policy, "key": store.key(policy), "store": store.to_dict()}


def _ragas_scores(metric: Any, sample: Any) -> str:
    """The prompt text Ragas' own scoring sends for ``sample`` (a SampleAnnotation)."""
    metric.llm = _RecordingRagasLLM(ANSWER)
    fields = {k: v for k, v in sample.metric_input.items() if k in ("user_input", "response", "reference")}
    assert asyncio.run(metric.single_turn_ascore(ragas.dataset_schema.SingleTurnSample(**fields))) == 1
    return str(metric.llm.prompts[-1])


def _shown(adapter: RagasMetric, sample: Any, **kwargs: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The teaching examples the adapter renders for ``sample`` (one scripted call)."""
    llm = ScriptedLLM([ANSWER])
    asyncio.run(adapter.ajudge(sample.metric_input, llm=llm, **kwargs))
    return rendered_examples(llm.requests[0].messages)


def test_a_ragas_prompts_own_examples_are_what_the_adapter_shows_without_examples(dataset):
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    prompt = critic.get_prompts()[AC_PROMPT]
    given = dataset.samples[2].metric_input
    prompt.examples = [
        (
            prompt.input_model(user_input=given["user_input"], response=given["response"]),
            prompt.output_model(reason="it answers the question", verdict=0),
        ),
    ]
    critic.set_prompts(**{AC_PROMPT: prompt})
    adapter = RagasMetric(critic)
    own = _shown(adapter, dataset.samples[5])
    assert own == [
        (
            {"user_input": given["user_input"], "response": given["response"]},
            {"verdict": 0, "reason": "it answers the question"},
        )
    ]
    replaced = _shown(adapter, dataset.samples[5], examples=[dataset.samples[7]])
    assert [inputs["response"] for inputs, _ in replaced] == [dataset.samples[7].metric_input["response"]]
    assert _shown(adapter, dataset.samples[5], examples=[]) == []  # an empty list: none at all


def test_a_static_set_is_written_into_the_prompts_examples_and_ragas_sends_it(dataset):
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    store = ExampleStore(dataset.samples[:8], range(8), k=2, static=[1, 4])
    write_back(critic, {AC_PROMPT: "Judge the numbers."}, examples=_block(store, "static"))
    prompt = critic.get_prompts()[AC_PROMPT]
    assert prompt.instruction == "Judge the numbers."
    assert [pair[0].response for pair in prompt.examples] == [
        dataset.samples[i]["metric_input"]["response"] for i in (1, 4)
    ]
    assert [pair[1].verdict for pair in prompt.examples] == [
        int(dataset.samples[i].metric_output) for i in (1, 4)
    ]
    sent = _ragas_scores(critic, dataset.samples[10])
    for i in (1, 4):
        assert dataset.samples[i].metric_input["response"] in sent
    assert dataset.samples[0].metric_input["response"] not in sent
    # read back: the adapter of the written metric shows the seed the same two examples
    shown = _shown(RagasMetric(critic), dataset.samples[10])
    assert [inputs["response"] for inputs, _ in shown] == [
        dataset.samples[i].metric_input["response"] for i in (1, 4)
    ]


def test_a_retrieval_store_is_attached_and_ragas_retrieves_per_input_as_the_run_did(dataset):
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    pool = dataset.samples[:12]
    store = ExampleStore(pool, range(12), k=2)
    write_back(critic, {AC_PROMPT: "Judge the numbers."}, examples=_block(store, "retrieval"))
    prompt = critic.get_prompts()[AC_PROMPT]
    assert isinstance(prompt, FewShotPydanticPrompt) and isinstance(prompt.example_store, RetrievalExamples)
    assert prompt.instruction == "Judge the numbers." and prompt.top_k_for_examples == 2
    judged = pool[3]  # a pool sample: never shown its own annotation
    expected = [s.metric_input["response"] for s in store.examples_for("retrieval", judged.metric_input)]
    assert len(expected) == 2
    sent = _ragas_scores(critic, judged)
    assert all(text in sent for text in expected)
    assert sent.count(judged.metric_input["response"]) == 1  # the judged input only
    shown = _shown(RagasMetric(critic), judged)  # read back: the seed is shown what Ragas retrieves
    assert [inputs["response"] for inputs, _ in shown] == expected


def test_a_retrieval_store_takes_ragas_add_example(dataset):
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    store = ExampleStore(dataset.samples[:4], range(4), k=1)
    write_back(critic, {AC_PROMPT: "x"}, examples=_block(store, "retrieval"))
    prompt = critic.get_prompts()[AC_PROMPT]
    new = dataset.samples[9].metric_input
    prompt.add_example(
        prompt.input_model(user_input=new["user_input"], response=new["response"] + " extra"),
        prompt.output_model(reason="added", verdict=0),
    )
    assert len(prompt.example_store.store) == 5
    pairs = prompt.example_store.get_examples(
        prompt.input_model(user_input=new["user_input"], response=new["response"])
    )
    assert [(p[0].response, p[1].verdict, p[1].reason) for p in pairs] == [
        (new["response"] + " extra", 0, "added")
    ]


def test_a_score_metric_gets_score_examples(dataset):
    scorer = SimpleCriteriaScore(name="helpfulness", definition="How helpful is the response?")
    store = ExampleStore(dataset.samples[:4], range(4), k=1, binary=False, static=[2])
    write_back(scorer, {"single_turn_simple_criteria_prompt": "Score it."}, examples=_block(store, "static"))
    ((given, answer),) = scorer.get_prompts()["single_turn_simple_criteria_prompt"].examples
    assert answer.score == int(dataset.samples[2].metric_output) and answer.reason == ""


def test_write_back_refuses_an_unknown_policy_and_changes_nothing(dataset):
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    before = critic.get_prompts()[AC_PROMPT].instruction
    store = ExampleStore(dataset.samples[:4], range(4), k=1)
    with pytest.raises(ValueError, match="unknown example policy 'nearest'"):
        write_back(critic, {AC_PROMPT: "x"}, examples={**_block(store, "static"), "policy": "nearest"})
    assert (
        critic.get_prompts()[AC_PROMPT].instruction == before
        and critic.get_prompts()[AC_PROMPT].examples == []
    )


def _teachable(dataset: SingleMetricAnnotation):
    """A judge that gets a sample right only when shown teaching examples (wrong without)."""
    labels = {json.dumps(s.metric_input["response"]): int(s.metric_output) for s in dataset.samples}

    def answer(request: LLMRequest) -> str:
        rendered = split_rendered(request.messages)
        assert rendered is not None
        label = labels[json.dumps(rendered[1]["response"])]
        verdict = label if rendered_examples(request.messages) else 1 - label
        return json.dumps({"reason": "r", "verdict": verdict})

    return ScriptedLLM(handler=answer)


def test_optimize_ragas_metric_round_trips_chosen_retrieval_examples(dataset, tmp_path):
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    config = {"strategy": "examples", "examples": {"policy": "retrieval", "k": 2}, "random_seed": 0}
    result = optimize_ragas_metric(critic, dataset, llm=_teachable(dataset), config=config)
    assert result.example_policy == "retrieval" and result.usage["llm_calls"]["meta"] == 0
    prompt = critic.get_prompts()[AC_PROMPT]
    assert isinstance(prompt, FewShotPydanticPrompt)
    judged = dataset.samples[0]
    expected = [s.metric_input["response"] for s in result.examples_for(judged.metric_input)]
    sent = _ragas_scores(critic, judged)
    assert len(expected) == 2 and all(text in sent for text in expected)
    result.to_json(tmp_path / "result.json")
    again = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    write_back(again, tmp_path)  # from the run directory: the same store, the same retrieval
    assert _ragas_scores(again, judged) == sent
