"""JudgeEnsemble: several judges of one metric, aggregation, timeout, concurrency bound, custom
prompts, callbacks, config, and optimization of a wrapped metric end to end."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, get_args

import pytest
import yaml

from promptevolver import (
    AnnotationError,
    AspectCritic,
    BinaryMetricLoss,
    ConfigError,
    EvaluationItem,
    GeneticOptimizer,
    JudgeEnsemble,
    Judgement,
)
from promptevolver.cli import main
from promptevolver.config._build import build_metric
from promptevolver.config._models import MetricConfig, load_run_config
from promptevolver.errors import BudgetExceededError, PermanentLLMError
from promptevolver.evaluation._evaluator import Evaluator, score
from promptevolver.judge._ensemble import AGGREGATIONS, EvaluationEvent
from promptevolver.judge._prompts import split_rendered
from promptevolver.judge._protocol import Metric
from promptevolver.llm import ScriptedLLM, SimulatedJudgeLLM
from promptevolver.llm._base import BaseLLMClient, Completion, LLMClient, LLMRequest

from ..conftest import AC_DEFINITION, AC_FILE
from ..helpers import make_dataset

PROMPT = AspectCritic.PROMPT_NAME
NAME = "answer_correctness"
INPUTS = {"user_input": "What is 2 + 2?", "response": "4", "reference": "4"}
Verdict = int | float | BaseException


def answer(verdict: float, reason: str = "because") -> str:
    return json.dumps({"reason": reason, "verdict": verdict})


def critic(**kwargs: Any) -> AspectCritic:
    return AspectCritic(name=NAME, definition=AC_DEFINITION, max_reasks=0, **kwargs)


def ensemble(num_judges: int, metric: Any = None, **kwargs: Any) -> JudgeEnsemble:
    return JudgeEnsemble(metric=metric or critic(), num_judges=num_judges, **kwargs)


def by_judge(verdicts: list[Verdict]) -> ScriptedLLM:
    """Judge ``i`` (its request's sample_index) answers ``verdicts[i]``, reason ``judge i``."""

    def handler(request: LLMRequest) -> str | BaseException:
        v = verdicts[request.sample_index]
        return v if isinstance(v, BaseException) else answer(v, f"judge {request.sample_index}")

    return ScriptedLLM(handler=handler, max_attempts=1)


def judge(ens: JudgeEnsemble, llm: LLMClient, inputs: Mapping[str, Any] = INPUTS, **kw: Any) -> Judgement:
    return asyncio.run(ens.ajudge(inputs, llm=llm, **kw))


class AsyncLLM(BaseLLMClient):
    """A fake whose calls take a few event-loop turns; it counts the requests in flight.

    ``verdict(request)`` gives each answer; a request whose sample_index is in ``hang`` never
    answers (until cancelled).
    """

    def __init__(
        self, verdict: Callable[[LLMRequest], float] = lambda r: 1, *, hang: frozenset[int] = frozenset()
    ) -> None:
        super().__init__(max_attempts=1, retry_initial_s=0.0, max_concurrency=1000)
        self.verdict, self.hang = verdict, hang
        self.requests: list[LLMRequest] = []
        self.in_flight = self.max_in_flight = 0

    async def _send(self, request: LLMRequest) -> Completion:
        self.requests.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if request.sample_index in self.hang:
                await asyncio.Event().wait()
            for _ in range(3):
                await asyncio.sleep(0)
            return Completion(text=answer(self.verdict(request)))
        finally:
            self.in_flight -= 1


class NumericCritic(AspectCritic):
    """A stub judge with numeric scores: judge ``i`` scores ``scores[i]`` (no LLM call)."""

    def __init__(self, scores: list[float]) -> None:
        super().__init__(name="relevance", definition="How relevant is the response?")
        self.scores = scores

    async def ajudge(self, inputs: Mapping[str, Any], **kwargs: Any) -> Judgement:
        i = kwargs["sample_index"]
        return Judgement(score=self.scores[i], reason=f"judge {i}")


# --- one evaluation: separate judge calls, aggregation ---------------------------------------
def test_each_judge_is_a_separate_request_with_its_own_sample_index():
    llm = by_judge([1, 1, 1])
    result = judge(ensemble(3, temperature=0.7), llm)
    assert sorted(r.sample_index for r in llm.requests) == [0, 1, 2]
    assert {r.temperature for r in llm.requests} == {0.7}
    assert len({r.messages for r in llm.requests}) == 1
    assert llm.usage.judge_calls == 3
    assert result.score == 1.0 and result.details is not None
    assert result.details["scores"] == {
        NAME: 1.0,
        f"{NAME}_judge_0": 1.0,
        f"{NAME}_judge_1": 1.0,
        f"{NAME}_judge_2": 1.0,
    }
    assert result.details["reasons"] == {f"{NAME}_judge_{i}": f"judge {i}" for i in range(3)}
    assert result.details["errors"] == {}


def test_judge_temperature_defaults_to_the_wrapped_metric():
    llm = by_judge([1, 1])
    judge(ensemble(2, metric=critic(temperature=0.3)), llm)
    assert {r.temperature for r in llm.requests} == {0.3}


@pytest.mark.parametrize(
    ("verdicts", "expected", "reason"),
    [
        ([1, 1, 0], 1.0, "judge 0"),
        ([0, 1, 1], 1.0, "judge 1"),
        ([1, 0, 0], 0.0, "judge 1"),
        ([1, 0], 0.0, "judge 1"),  # even count, tie → 0
        ([1, 1, 0, 0], 0.0, "judge 2"),  # tie → 0
        ([0, 1, 1, 1], 1.0, "judge 1"),
        ([1], 1.0, "judge 0"),
    ],
)
def test_majority_vote_and_its_tie_rule(verdicts, expected, reason):
    result = judge(ensemble(len(verdicts)), by_judge(verdicts))
    assert result.score == expected
    assert result.reason == reason  # the first judge that agrees with the outcome


def test_a_failed_judge_is_excluded_and_reported():
    bad = PermanentLLMError("400 bad request")
    result = judge(ensemble(3), by_judge([0, bad, 0]))
    assert result.score == 0.0 and not result.failed
    assert result.details is not None
    assert result.details["scores"][f"{NAME}_judge_1"] is None
    assert "PermanentLLMError" in result.details["errors"][f"{NAME}_judge_1"]
    assert set(result.details["reasons"]) == {f"{NAME}_judge_0", f"{NAME}_judge_2"}


def test_failures_can_leave_a_tie_which_gives_0():
    result = judge(ensemble(3), by_judge([1, PermanentLLMError("no"), 0]))
    assert result.score == 0.0


def test_an_unparseable_answer_fails_only_its_judge():
    llm = ScriptedLLM(handler=lambda r: "not json" if r.sample_index == 2 else answer(1))
    result = judge(ensemble(3), llm)
    assert result.score == 1.0
    assert result.details is not None
    assert "unparseable" in result.details["errors"][f"{NAME}_judge_2"]


def test_all_judges_failing_fails_the_evaluation():
    result = judge(ensemble(3), by_judge([PermanentLLMError(f"down {i}") for i in range(3)]))
    assert result.failed and result.score is None
    assert result.error is not None and result.error.startswith("all 3 judges failed")
    assert all(f"judge {i}: PermanentLLMError: down {i}" in result.error for i in range(3))
    assert result.details is not None
    assert result.details["scores"][NAME] is None and len(result.details["errors"]) == 3


@pytest.mark.parametrize(("method", "expected"), [("mean", 0.5), ("median", 0.4), ("min", 0.2), ("max", 0.9)])
def test_numeric_aggregation(method, expected):
    ens = JudgeEnsemble(metric=NumericCritic([0.2, 0.9, 0.4]), num_judges=3, aggregation_method=method)
    result = judge(ens, by_judge([]))
    assert result.score == pytest.approx(expected)
    assert result.details is not None and result.details["scores"]["relevance"] == pytest.approx(expected)


def test_numeric_aggregation_of_binary_verdicts():
    assert judge(ensemble(3, aggregation_method="mean"), by_judge([1, 1, 0])).score == pytest.approx(2 / 3)
    assert judge(ensemble(2, aggregation_method="median"), by_judge([1, 0])).score == 0.5
    assert judge(ensemble(3, aggregation_method="min"), by_judge([1, 1, 0])).score == 0.0


def test_majority_of_numeric_scores_is_a_failed_evaluation_not_a_guess():
    ens = JudgeEnsemble(metric=NumericCritic([0.2, 0.9, 0.4]), num_judges=3)
    result = judge(ens, by_judge([]))
    assert result.failed and result.error is not None and "binary" in result.error


# --- timeout and concurrency ------------------------------------------------------------------
def test_judges_not_done_within_the_timeout_count_as_failed():
    llm = AsyncLLM(hang=frozenset({1}))
    result = judge(ensemble(3, timeout_s=0.2), llm)
    assert result.score == 1.0
    assert result.details is not None
    assert "timed out" in result.details["errors"][f"{NAME}_judge_1"]
    assert llm.in_flight == 0  # the hanging call was cancelled
    assert llm.usage.judge_calls == 2 and llm.usage.failures == 0


def test_all_judges_timing_out_fails_the_evaluation():
    result = judge(ensemble(2, timeout_s=0.05), AsyncLLM(hang=frozenset({0, 1})))
    assert result.failed and result.error is not None
    assert result.error.count("timed out") == 2


@pytest.mark.parametrize(("bound", "expected"), [(2, 2), (1, 1), (None, 6)])
def test_max_concurrent_judges_bounds_the_calls_in_flight(bound, expected):
    llm = AsyncLLM()
    result = judge(ensemble(6, max_concurrent_judges=bound), llm)
    assert result.score == 1.0
    assert llm.max_in_flight == expected and len(llm.requests) == 6


# --- field names -------------------------------------------------------------------------------
def test_both_naming_schemes_give_the_same_request():
    ragas = {**INPUTS, "retrieved_contexts": ["Arithmetic."], "reference_contexts": ["Math."]}
    other = {
        "input": INPUTS["user_input"],
        "actual_output": INPUTS["response"],
        "expected_output": INPUTS["reference"],
        "retrieved_context": "Arithmetic.",  # a single string becomes a one-element list
        "expected_context": ["Math."],
        "rubrics": {"1": "correct"},
    }
    a, b = by_judge([1]), by_judge([1])
    judge(ensemble(1), a, ragas)
    judge(ensemble(1), b, other)
    assert a.requests[0].messages == b.requests[0].messages
    rendered = split_rendered(a.requests[0].messages)
    assert rendered is not None and rendered[1]["retrieved_contexts"] == ["Arithmetic."]


def test_a_missing_required_field_is_a_clear_error_naming_it():
    llm = by_judge([1, 1])
    with pytest.raises(AnnotationError, match=r"needs 'response' \(or 'actual_output'\)") as exc:
        judge(ensemble(2), llm, {"input": "What is 2 + 2?"})
    assert exc.value.field == "metric_input.response"
    assert llm.requests == []


def test_a_bad_item_in_a_batch_names_its_position_and_nothing_is_sent():
    llm = by_judge([1])
    with pytest.raises(AnnotationError, match="sample 1") as exc:
        ensemble(1).evaluate([INPUTS, {"response": "4"}], llm=llm)
    assert exc.value.sample_index == 1 and exc.value.field == "metric_input.user_input"
    assert llm.requests == []


# --- custom prompt lifecycle -------------------------------------------------------------------
def instruction_of(request: LLMRequest) -> str:
    rendered = split_rendered(request.messages)
    assert rendered is not None
    return rendered[0]


def test_evaluate_one_item_or_a_list():
    ens, llm = ensemble(3), by_judge([1, 0, 1])
    single = ens.evaluate(INPUTS, llm=llm)
    assert isinstance(single, Judgement) and single.score == 1.0
    many = ens.evaluate([INPUTS, EvaluationItem(INPUTS), {"inputs": INPUTS}], llm=llm)
    assert [j.score for j in many] == [1.0, 1.0, 1.0]


def test_custom_instructions_apply_to_their_item_only_and_the_metric_is_unchanged():
    ens, llm = ensemble(2), by_judge([1, 1])
    before = ens.get_instructions()
    ens.evaluate({"inputs": INPUTS, "instructions": {PROMPT: "Custom judge."}}, llm=llm)
    assert {instruction_of(r) for r in llm.requests} == {"Custom judge."}
    assert ens.get_instructions() == before
    ens.evaluate(INPUTS, llm=llm)
    assert instruction_of(llm.requests[-1]) == before[PROMPT]


def test_mixed_batches_run_concurrently_without_leaking_instructions():
    texts = [None, "Instruction A.", "Instruction B."]
    items = [
        EvaluationItem({**INPUTS, "user_input": f"question {i}"}, {PROMPT: texts[i % 3]} if i % 3 else None)
        for i in range(9)
    ]
    uniform = [
        EvaluationItem({**INPUTS, "user_input": f"other {i}"}, {PROMPT: "Instruction C."}) for i in range(4)
    ]
    llm = AsyncLLM(verdict=lambda r: int(instruction_of(r) == "Instruction A."))
    ens = ensemble(3)
    seed = ens.get_instructions()[PROMPT]

    async def both() -> tuple[list[Judgement], list[Judgement]]:
        return await asyncio.gather(ens.aevaluate(items, llm=llm), ens.aevaluate(uniform, llm=llm))

    mixed, same = asyncio.run(both())
    seen: dict[str, set[str]] = {}
    for request in llm.requests:
        rendered = split_rendered(request.messages)
        assert rendered is not None
        seen.setdefault(rendered[1]["user_input"], set()).add(rendered[0])
    for i in range(9):
        assert seen[f"question {i}"] == {texts[i % 3] or seed}
    assert all(seen[f"other {i}"] == {"Instruction C."} for i in range(4))
    assert [j.score for j in mixed] == [float(i % 3 == 1) for i in range(9)]  # results in item order
    assert [j.score for j in same] == [0.0] * 4
    assert llm.max_in_flight > 3  # items ran in parallel, not one after another
    assert ens.get_instructions()[PROMPT] == seed


def test_unknown_custom_prompt_is_rejected_before_any_call():
    ens, llm = ensemble(1), by_judge([1])
    with pytest.raises(KeyError, match="unknown prompt"):
        ens.evaluate({"inputs": INPUTS, "instructions": {"no_such_prompt": "x"}}, llm=llm)
    assert llm.requests == []


def test_instructions_are_restored_when_the_evaluation_raises():
    def explode(event: EvaluationEvent) -> None:
        raise RuntimeError("callback failed")

    ens, llm = ensemble(2, callbacks=[explode]), by_judge([1, 1])
    before = ens.get_instructions()
    with pytest.raises(RuntimeError, match="callback failed"):
        ens.evaluate([{"inputs": INPUTS, "instructions": {PROMPT: "Custom."}}] * 2, llm=llm)
    assert ens.get_instructions() == before


def test_custom_instructions_context_manager_applies_and_restores_also_on_error():
    ens, llm = ensemble(1), by_judge([1])
    before = ens.get_instructions()
    with pytest.raises(RuntimeError, match="boom"), ens.custom_instructions({PROMPT: "Temporary."}):
        assert ens.get_instructions() == {PROMPT: "Temporary."}
        judge(ens, llm)
        raise RuntimeError("boom")
    assert instruction_of(llm.requests[0]) == "Temporary."
    assert ens.get_instructions() == before
    with pytest.raises(KeyError), ens.custom_instructions({"nope": "x"}):
        pass
    assert ens.get_instructions() == before


def test_evaluate_refuses_to_run_inside_an_event_loop():
    async def inside() -> None:
        ensemble(1).evaluate(INPUTS, llm=by_judge([1]))

    with pytest.raises(RuntimeError, match="aevaluate"):
        asyncio.run(inside())


# --- callbacks ---------------------------------------------------------------------------------
def test_callbacks_get_one_event_per_evaluation_sync_or_async():
    seen: list[EvaluationEvent] = []
    awaited: list[str] = []

    async def async_callback(event: EvaluationEvent) -> None:
        awaited.append(event.metric)

    ens = ensemble(2, name="strict_correctness", callbacks=[seen.append, async_callback])
    ens.evaluate([{"input": "q", "actual_output": "a"}, INPUTS], llm=by_judge([1, 0]))
    assert len(seen) == 2 and awaited == ["strict_correctness"] * 2
    event = next(e for e in seen if e.inputs["user_input"] == "q")
    assert event.metric == "strict_correctness" and event.inputs == {"user_input": "q", "response": "a"}
    assert event.instructions == ens.get_instructions() and event.duration_s >= 0
    assert event.judgement.details is not None
    assert set(event.judgement.details["scores"]) == {
        "strict_correctness",
        "strict_correctness_judge_0",
        "strict_correctness_judge_1",
    }


# --- construction and protocol -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_judges": 0}, "num_judges"),
        ({"aggregation_method": "vote"}, "known: majority, mean, median, min, max"),
        ({"max_concurrent_judges": 0}, "max_concurrent_judges"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"temperature": 3.0}, "temperature"),
        ({"name": " "}, "name"),
    ],
)
def test_bad_arguments_are_refused_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        JudgeEnsemble(metric=critic(), **kwargs)


def test_the_ensemble_is_a_metric_whose_prompts_are_the_wrapped_metrics():
    inner = critic()
    ens = JudgeEnsemble(metric=inner, num_judges=3)
    assert isinstance(ens, Metric) and ens.name == NAME and ens.calls_per_evaluation == 3
    ens.set_instructions({PROMPT: "New."})
    assert inner.get_instructions() == ens.get_instructions() == {PROMPT: "New."}
    assert ens.get_prompts() == inner.get_prompts()
    assert ens.prompt_inputs({"input": "q", "actual_output": "a", "rubrics": {}}) == {
        "user_input": "q",
        "response": "a",
    }


# --- config ------------------------------------------------------------------------------------
def test_config_aggregation_names_match_the_implementation():
    literal = get_args(MetricConfig.model_fields["aggregation_method"].annotation)[0]
    assert set(get_args(literal)) == set(AGGREGATIONS)


def test_build_metric_returns_an_ensemble_when_asked():
    plain = MetricConfig(name=NAME, definition=AC_DEFINITION)
    assert isinstance(build_metric(plain), AspectCritic)
    config = MetricConfig(
        name=NAME,
        definition=AC_DEFINITION,
        num_judges=3,
        aggregation_method="median",
        max_concurrent_judges=2,
        timeout_s=30,
        temperature=0.8,
    )
    built = build_metric(config, temperature=0.0)
    assert isinstance(built, JudgeEnsemble)
    assert (built.num_judges, built.aggregation_method, built.max_concurrent_judges, built.timeout_s) == (
        3,
        "median",
        2,
        30,
    )
    assert isinstance(built.metric, AspectCritic) and built.metric.temperature == 0.8
    majority = build_metric(MetricConfig(name=NAME, definition=AC_DEFINITION, num_judges=2))
    assert isinstance(majority, JudgeEnsemble) and majority.aggregation_method == "majority"


def test_a_bad_ensemble_key_names_the_file_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    config = {
        "dataset": str(AC_FILE),
        "metric": {"name": NAME, "definition": "d", "aggregation_method": "vote"},
    }
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"bad.yaml: metric.aggregation_method"):
        load_run_config(path)


# --- optimization of a wrapped metric ----------------------------------------------------------
class RecordingSimulatedLLM(SimulatedJudgeLLM):
    """The simulated judge, recording each judge call's sample_index."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.judge_indices: list[int] = []

    async def _send(self, request: LLMRequest) -> Completion:
        if request.operation == "judge":
            self.judge_indices.append(request.sample_index)
        return await super()._send(request)


def optimize_with_ensemble(ac_dataset: Any) -> tuple[Any, list[EvaluationEvent], RecordingSimulatedLLM]:
    events: list[EvaluationEvent] = []
    metric = JudgeEnsemble(metric=critic(), num_judges=3, callbacks=[events.append])
    llm = RecordingSimulatedLLM(dataset=ac_dataset, random_seed=42)
    seed = metric.get_instructions()
    result = GeneticOptimizer(metric=metric, llm=llm).optimize(
        dataset=ac_dataset,
        loss=BinaryMetricLoss(metric="accuracy"),
        config={"population_size": 4, "generations": 2, "random_seed": 42},
    )
    assert metric.get_instructions() == seed  # optimize() leaves the metric unchanged
    return result, events, llm


def test_the_evaluator_scores_the_aggregated_verdict():
    dataset = make_dataset(6, wrong=0)
    evaluator = Evaluator(metric=ensemble(3), llm=by_judge([1, 0, 0]), dataset=dataset, max_concurrency=4)
    judged = asyncio.run(evaluator.evaluate({PROMPT: "Judge."}, range(6)))
    assert [judged[p].score for p in range(6)] == [0.0] * 6  # judge 0 says 1, the majority 0
    fitness = score(BinaryMetricLoss(metric="accuracy"), judged, list(range(6)), dataset.labels())
    assert fitness.value == 0.5 and fitness.failures == 0


def test_genetic_optimizer_optimizes_a_three_judge_ensemble(ac_dataset):
    result, events, llm = optimize_with_ensemble(ac_dataset)
    usage = result.usage
    assert usage["failures"] == 0 and all(not e.judgement.failed for e in events)
    assert usage["llm_calls"]["judge"] == 3 * len(events) > 0  # judge calls are counted per judge
    assert sorted(set(llm.judge_indices)) == [0, 1, 2]
    assert [llm.judge_indices.count(i) for i in range(3)] == [len(events)] * 3
    assert all(e.judgement.details is not None and len(e.judgement.details["reasons"]) == 3 for e in events)
    assert result.held_out["best"] >= result.held_out["seed"]
    assert set(result.best_instructions) == {PROMPT}
    again, _, _ = optimize_with_ensemble(ac_dataset)  # twin run: concurrency does not change it
    assert dict(again) == dict(result) and again.history == result.history


def test_cli_optimizes_an_ensemble_from_yaml_and_resumes(tmp_path):
    config = {
        "dataset": str(AC_FILE),
        "metric": {
            "type": "aspect_critic",
            "name": NAME,
            "definition": AC_DEFINITION,
            "num_judges": 3,
            "aggregation_method": "majority",
        },
        "llm": {"provider": "fake"},
        "optimizer": {"population_size": 3, "generations": 1},
        "random_seed": 42,
    }
    path = tmp_path / "ensemble.yaml"
    path.write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    assert main(["optimize", str(path), "--output", str(run), "-q"]) == 0
    result = json.loads((run / "result.json").read_text())
    judge_calls = result["usage"]["llm_calls"]["judge"]
    assert judge_calls > 0 and judge_calls % 3 == 0 and result["usage"]["failures"] == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["metric"]["num_judges"] == 3
    assert main(["optimize", "--resume", str(run), "-q"]) == 0  # judgements with details reload
    assert json.loads((run / "result.json").read_text())["best_instructions"] == result["best_instructions"]


def test_a_call_budget_holds_with_three_judges(ac_dataset):
    metric = JudgeEnsemble(metric=critic(), num_judges=3)
    try:
        result = GeneticOptimizer(
            metric=metric, llm=SimulatedJudgeLLM(dataset=ac_dataset, random_seed=42)
        ).optimize(
            dataset=ac_dataset,
            loss=BinaryMetricLoss(metric="accuracy"),
            config={"population_size": 4, "generations": 4, "random_seed": 42, "budget": {"max_calls": 150}},
        )
    except BudgetExceededError:
        return  # refused up front: fine
    assert sum(result.usage["llm_calls"].values()) <= 150


def test_the_wrapped_metric_may_be_given_positionally_as_in_the_wrapper_it_mirrors():
    critic = AspectCritic(name="answer_correctness", definition=AC_DEFINITION)
    by_position = JudgeEnsemble(critic, num_judges=3)
    by_keyword = JudgeEnsemble(metric=critic, num_judges=3)
    assert by_position.metric is critic is by_keyword.metric
    assert by_position.get_instructions() == by_keyword.get_instructions() == critic.get_instructions()
    with pytest.raises(TypeError):
        JudgeEnsemble(critic, 3)  # the options stay keyword-only
