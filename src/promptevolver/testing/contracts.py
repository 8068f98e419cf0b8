"""Contract suites for the things users plug in: an LLM client, a judge metric, a loss, an optimizer.

As Optuna ships ``optuna.testing.pytest_samplers`` and scikit-learn ``check_estimator``, each
suite is a class of ``test_*`` methods; subclass it in a test module under a name pytest collects
(``Test...``), give it the factory it asks for, and every check runs against your implementation::

    from promptevolver.testing.contracts import LLMClientContract

    class TestMyClient(LLMClientContract):
        def make_client(self):
            return MyClient(...)

The suites need no pytest import (plain ``assert`` with a message; call
``pytest.register_assert_rewrite("promptevolver.testing.contracts")`` in a ``conftest.py`` for
pytest's detailed assertion output). Our own test suite runs them on every implementation we
ship (``tests/llm/test_llm_contract.py``, ``tests/judge/test_metric_contract.py``,
``tests/evaluation/test_loss_contract.py``, ``tests/optimizers/test_optimizer_contract.py``).

* :class:`LLMClientContract` — what metrics and the optimizer rely on from an
  :class:`~promptevolver.llm._base.LLMClient`: completions in request order under concurrency,
  usage counted per operation (and ``Usage`` arithmetic), a client that outlives event loops,
  secrets absent from its ``repr``.
* :class:`MetricContract` — what the optimizer, the evaluator and the reports rely on from a
  :class:`~promptevolver.judge._protocol.Metric`: prompts and instructions as copies, unknown
  prompt names refused, given instructions used without changing the metric's own, exactly
  ``calls_per_evaluation`` calls for well-formed answers, LLM trouble and unparseable answers
  as failed judgements with a cause (never an exception, never a score), a missing field an
  :class:`~promptevolver.errors.AnnotationError` before any call.
* :class:`LossContract` — what the optimizer relies on from a
  :class:`~promptevolver.evaluation._losses.Loss`: direction, best value, ``worst()`` worse than
  any score, our keyword call and Ragas' ``(predicted, actual)`` giving the same float, an
  argument missing or given twice refused with ``TypeError``, bad input with ``ValueError``,
  order invariance, unit weights equal to none, per-sample quality of shape ``(n,)`` with 1 for a
  perfect prediction.
* :class:`OptimizerContract` — what a Ragas user and our runs rely on from an
  :class:`~promptevolver.optimizers.Optimizer`: built with ``(metric, llm)`` positionally or by
  keyword; ``optimize(dataset, loss, config)`` positionally or by keyword, and ``aoptimize``, give
  the same JSON-ready ``dict`` of the metric's prompt names → instructions; the metric keeps its
  own instructions; a missing metric or LLM raises Ragas' "No metric provided" / "No llm
  provided" before any call.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.errors import AnnotationError, PermanentLLMError
from promptevolver.evaluation import BinaryMetricLoss, Loss
from promptevolver.judge import AspectCritic, Judgement, Metric
from promptevolver.llm import ChatMessage, Completion, LLMClient, LLMRequest, ScriptedLLM, Usage
from promptevolver.optimizers import Optimizer
from promptevolver.simulation import SimulatedJudgeLLM
from promptevolver.simulation.synthetic import SyntheticSpec, generate

__all__ = ["LLMClientContract", "LossContract", "MetricContract", "OptimizerContract"]


async def _closing(client: Any, work: Any) -> Any:
    """Await ``work``, then close the client's connections of this loop (if it can)."""
    try:
        return await work
    finally:
        close = getattr(client, "aclose", None)
        if close is not None:
            await close()


def _complete_all(client: LLMClient, requests: Sequence[LLMRequest]) -> list[Completion]:
    """Send ``requests`` concurrently in a fresh event loop; answers in request order."""

    async def main() -> list[Completion]:
        return list(await asyncio.gather(*(client.complete(r) for r in requests)))

    return list(asyncio.run(_closing(client, main())))


class LLMClientContract:
    """Checks of an :class:`~promptevolver.llm._base.LLMClient` (see the module docstring).

    Override :meth:`make_client`; optionally :meth:`expected_text` (the answer your client gives a
    request, to check the order of answers) and :attr:`secrets` (strings its ``repr`` must hide).
    """

    #: Strings (API keys, tokens) that must not appear in ``repr(client)``.
    secrets: Sequence[str] = ()

    def make_client(self) -> LLMClient:
        """A fresh client that answers any chat request (each test makes its own)."""
        raise NotImplementedError("subclass the contract and override make_client()")

    def expected_text(self, request: LLMRequest) -> str | None:
        """The text the client answers ``request`` with, or None when it cannot be known."""
        return None

    @staticmethod
    def request(i: int, operation: str = "judge") -> LLMRequest:
        """A one-message request ``question {i}`` for ``operation``."""
        return LLMRequest(messages=(ChatMessage("user", f"question {i}"),), operation=operation)

    def test_is_an_llm_client(self) -> None:
        client = self.make_client()
        assert isinstance(client, LLMClient), f"{type(client).__name__} lacks complete() or usage"
        assert isinstance(client.usage, Usage), f"usage is a {type(client.usage).__name__}, not Usage"

    def test_answers_are_completions_in_request_order(self) -> None:
        client = self.make_client()
        requests = [self.request(i) for i in range(12)]
        answers = _complete_all(client, requests)
        assert len(answers) == len(requests), f"{len(answers)} answers to {len(requests)} requests"
        for a in answers:
            assert isinstance(a, Completion) and isinstance(a.text, str), f"not a Completion: {a!r}"
            assert a.prompt_tokens >= 0 and a.completion_tokens >= 0, f"negative tokens: {a!r}"
        expected = [self.expected_text(r) for r in requests]
        for i, (want, got) in enumerate(zip(expected, answers)):
            assert want is None or got.text == want, f"answer {i} is {got.text!r}, expected {want!r}"

    def test_usage_counts_each_call_by_operation_and_supports_differences(self) -> None:
        client = self.make_client()
        before = client.usage.copy()
        _complete_all(client, [self.request(1), self.request(2, "rewrite"), self.request(3, "feedback")])
        spent = client.usage - before
        counted = spent.calls_by_operation
        assert counted == {"judge": 1, "rewrite": 1, "feedback": 1}, f"calls by operation {counted}"
        assert (spent.judge_calls, spent.meta_calls) == (1, 2), "judge and meta calls miscounted"
        assert spent.retries == spent.failures == spent.cache_hits == 0, f"nothing failed: {spent}"
        assert before.total_calls == 0, "usage.copy() must not follow later calls"

    def test_a_client_outlives_event_loops(self) -> None:
        client = self.make_client()
        _complete_all(client, [self.request(1)])
        _complete_all(client, [self.request(2)])
        assert client.usage.total_calls == 2, f"{client.usage.total_calls} calls counted over two loops"

    def test_repr_hides_secrets(self) -> None:
        text = repr(self.make_client())
        for secret in self.secrets:
            assert secret not in text, "a secret appears in repr(client)"


def _failing(request: LLMRequest) -> str:
    raise PermanentLLMError("denied by the contract's client", status=400)


class MetricContract:
    """Checks of a :class:`~promptevolver.judge._protocol.Metric` (see the module docstring).

    Override :meth:`make_metric`, :meth:`answer` (a well-formed answer to any request the metric
    makes) and :attr:`inputs` (a sample's fields with everything the metric needs); set
    :attr:`score_range` to the scores the metric can give (inclusive).
    """

    #: A sample's fields (``metric_input`` of an annotation) holding every field the metric needs.
    inputs: Mapping[str, Any] = {"user_input": "Where is the Eiffel Tower?", "response": "In Paris."}
    #: Lowest and highest score the metric can give.
    score_range: tuple[float, float] = (0.0, 1.0)

    def make_metric(self) -> Metric:
        """A fresh metric (each test makes its own)."""
        raise NotImplementedError("subclass the contract and override make_metric()")

    def answer(self, request: LLMRequest) -> str:
        """A well-formed answer (JSON text) to ``request``, one of the metric's calls."""
        raise NotImplementedError("subclass the contract and override answer()")

    def judge(self, metric: Metric, llm: LLMClient, **kwargs: Any) -> Judgement:
        """``metric.ajudge(self.inputs, llm=llm, **kwargs)`` in a fresh event loop."""
        return asyncio.run(metric.ajudge(dict(self.inputs), llm=llm, **kwargs))

    def test_is_a_metric(self) -> None:
        metric = self.make_metric()
        assert isinstance(metric, Metric), f"{type(metric).__name__} lacks a member of Metric"
        assert isinstance(metric.name, str) and metric.name, f"name {metric.name!r}"
        calls = metric.calls_per_evaluation
        assert isinstance(calls, int) and calls >= 1, f"calls_per_evaluation {calls!r}"
        prompts, instructions = metric.get_prompts(), metric.get_instructions()
        assert prompts and list(prompts) == list(instructions), "prompts and instructions differ in names"
        assert all(isinstance(v, str) and v for v in instructions.values()), "an empty instruction"

    def test_prompts_and_instructions_are_copies(self) -> None:
        metric = self.make_metric()
        own = metric.get_instructions()
        metric.get_prompts().clear()
        changed = metric.get_instructions()
        for name in changed:
            changed[name] = "changed by the caller"
        assert metric.get_instructions() == own, "get_instructions() returned the metric's own mapping"
        assert list(metric.get_prompts()) == list(own), "get_prompts() returned the metric's own mapping"

    def test_instructions_round_trip_and_unknown_prompt_names_are_refused(self) -> None:
        metric = self.make_metric()
        new = {name: f"{text} Be strict ({name})." for name, text in metric.get_instructions().items()}
        metric.set_instructions(new)
        assert metric.get_instructions() == new, "set_instructions() then get_instructions() differ"
        for call in (
            lambda: metric.set_instructions({"no_such_prompt": "x"}),
            lambda: metric.set_prompts(no_such_prompt=next(iter(metric.get_prompts().values()))),
        ):
            try:
                call()
            except KeyError:
                continue
            raise AssertionError("an unknown prompt name was accepted (expected KeyError)")
        assert metric.get_instructions() == new, "a refused name changed the instructions"

    def test_a_well_formed_answer_is_a_score_in_range_after_calls_per_evaluation_calls(self) -> None:
        metric = self.make_metric()
        llm = ScriptedLLM(handler=self.answer)
        judged = self.judge(metric, llm)
        assert isinstance(judged, Judgement), f"ajudge returned {type(judged).__name__}"
        assert not judged.failed, f"a well-formed answer failed: {judged.cause}: {judged.error}"
        assert judged.score is not None and math.isfinite(judged.score), f"score {judged.score!r}"
        low, high = self.score_range
        assert low <= judged.score <= high, f"score {judged.score} outside {self.score_range}"
        made = llm.usage.total_calls
        assert made == metric.calls_per_evaluation, f"{made} calls, calls_per_evaluation says otherwise"
        json.dumps(judged.details)  # details are JSON-ready (result files, reports)

    def test_given_instructions_are_used_and_the_metric_keeps_its_own(self) -> None:
        metric = self.make_metric()
        own = metric.get_instructions()
        other = {name: f"CONTRACT-INSTRUCTION-{i}" for i, name in enumerate(own)}
        llm = ScriptedLLM(handler=self.answer)
        judged = self.judge(metric, llm, instructions=other)
        assert not judged.failed, f"failed with given instructions: {judged.error}"
        shown = " ".join(m.content for r in llm.requests for m in r.messages)
        for name, text in other.items():
            assert text in shown, f"the given instruction of {name!r} was not sent"
        assert metric.get_instructions() == own, "ajudge(instructions=...) changed the metric"

    def test_llm_trouble_is_a_failed_judgement_with_its_cause(self) -> None:
        judged = self.judge(self.make_metric(), ScriptedLLM(handler=_failing, max_attempts=1))
        assert judged.failed and judged.score is None, f"a failed call gave a score: {judged!r}"
        assert judged.cause and judged.error, f"a failure without its cause: {judged!r}"

    def test_an_unparseable_answer_is_a_failed_judgement_never_a_score(self) -> None:
        judged = self.judge(self.make_metric(), ScriptedLLM(handler=lambda r: "no JSON here"))
        assert judged.failed and judged.score is None, f"an unparseable answer gave a score: {judged!r}"
        assert judged.cause, f"a failure without its cause: {judged!r}"

    def test_a_missing_field_is_an_annotation_error_before_any_call(self) -> None:
        metric, llm = self.make_metric(), ScriptedLLM(handler=self.answer)
        for call in (
            lambda: metric.prompt_inputs({}),
            lambda: asyncio.run(metric.ajudge({}, llm=llm)),
        ):
            try:
                call()
            except AnnotationError:
                continue
            raise AssertionError("a sample without fields was accepted (expected AnnotationError)")
        assert llm.usage.total_calls == 0, "an LLM call was made for a sample missing fields"


class LossContract:
    """Checks of a :class:`~promptevolver.evaluation._losses.Loss` (see the module docstring).

    Override :meth:`make_loss`; set :attr:`y_true` (labels) and :attr:`y_wrong` (predictions
    with some wrong, of the same length) to values your loss accepts.
    """

    #: Human labels, shape ``(n,)``.
    y_true: Sequence[float] = (1, 0, 1, 1, 0, 1, 0, 0, 1, 1)
    #: Predictions with some errors, shape ``(n,)``; the loss must rank them below perfect ones.
    y_wrong: Sequence[float] = (1, 1, 0, 1, 0, 1, 0, 1, 1, 0)

    def make_loss(self) -> Loss:
        """A fresh loss."""
        raise NotImplementedError("subclass the contract and override make_loss()")

    def test_it_declares_its_direction_and_describes_itself(self) -> None:
        loss = self.make_loss()
        assert isinstance(loss, Loss), f"{type(loss).__name__} is not a Loss"
        assert isinstance(loss.higher_is_better, bool), "higher_is_better must be a bool"
        described = loss.describe()
        assert described.get("higher_is_better") == loss.higher_is_better, f"describe() says {described}"
        assert described.get("name"), f"describe() names no loss: {described}"
        json.dumps(described)  # the ``loss`` block of result.json

    def test_perfect_predictions_score_best_and_beat_wrong_ones(self) -> None:
        loss = self.make_loss()
        perfect = loss(y_true=self.y_true, y_pred=self.y_true)
        wrong = loss(y_true=self.y_true, y_pred=self.y_wrong)
        assert loss.better(perfect, wrong), f"perfect {perfect} does not beat wrong {wrong}"
        assert not loss.better(wrong, perfect) and not loss.better(perfect, perfect), "better() is not strict"
        if loss.best_possible is not None:
            assert math.isclose(perfect, loss.best_possible), (
                f"perfect {perfect} != best {loss.best_possible}"
            )
        for score in (perfect, wrong):
            assert loss.better(score, loss.worst()), f"worst() {loss.worst()} is not worse than {score}"

    def test_ragas_call_shapes_give_the_same_value(self) -> None:
        loss: Any = self.make_loss()
        ours = loss(y_true=self.y_true, y_pred=self.y_wrong)
        for shape, value in (
            ("loss(predicted, actual)", loss(list(self.y_wrong), list(self.y_true))),
            ("loss(predicted=, actual=)", loss(actual=self.y_true, predicted=self.y_wrong)),
            ("loss(predicted, y_true=)", loss(self.y_wrong, y_true=self.y_true)),
        ):
            assert isinstance(value, float), f"{shape} returned a {type(value).__name__}, not a float"
            assert math.isclose(value, ours, abs_tol=1e-12), f"{shape} gave {value}, y_true=/y_pred= {ours}"

    def test_an_argument_missing_or_given_twice_is_a_type_error(self) -> None:
        loss: Any = self.make_loss()
        t, p = self.y_true, self.y_wrong
        for call, what in (
            (lambda: loss(p, t, y_true=t), "labels as actual and y_true="),
            (lambda: loss(p, y_pred=p, y_true=t), "predictions as predicted and y_pred="),
            (lambda: loss(y_true=t), "no predictions"),
            (lambda: loss(p), "no labels"),
        ):
            try:
                call()
            except TypeError:
                continue
            raise AssertionError(f"{what} was accepted (expected TypeError)")

    def test_bad_input_is_a_value_error(self) -> None:
        loss = self.make_loss()
        t = list(self.y_true)
        for y_true, y_pred, what in (
            (t, t[:-1], "unequal lengths"),
            ([], [], "empty input"),
            (t, [math.nan, *t[1:]], "a NaN prediction"),
            ([t], [t], "2-D input"),
        ):
            try:
                loss(y_true=y_true, y_pred=y_pred)
            except ValueError:
                continue
            raise AssertionError(f"{what} was accepted (expected ValueError)")
        try:
            loss(y_true=t, y_pred=t, sample_weight=[1.0] * (len(t) - 1))
        except ValueError:
            return
        raise AssertionError("sample_weight of the wrong shape was accepted (expected ValueError)")

    def test_the_order_of_samples_does_not_matter_and_unit_weights_equal_none(self) -> None:
        loss = self.make_loss()
        t, p = np.asarray(self.y_true, dtype=float), np.asarray(self.y_wrong, dtype=float)
        value = loss(y_true=t, y_pred=p)
        order = np.random.default_rng(0).permutation(len(t))
        shuffled = loss(y_true=t[order], y_pred=p[order])
        assert math.isclose(value, shuffled, abs_tol=1e-12), f"{value} changed to {shuffled} on reordering"
        weighted = loss(y_true=t, y_pred=p, sample_weight=np.ones(len(t)))
        assert math.isclose(value, weighted, abs_tol=1e-12), f"unit weights gave {weighted}, none {value}"

    def test_per_sample_quality_is_one_where_perfect_and_lower_where_wrong(self) -> None:
        loss = self.make_loss()
        t, p = np.asarray(self.y_true, dtype=float), np.asarray(self.y_wrong, dtype=float)
        quality = np.asarray(loss.per_sample_correct(y_true=t, y_pred=p), dtype=float)
        assert quality.shape == t.shape, f"per_sample_correct shape {quality.shape}, expected {t.shape}"
        assert np.all(quality[t == p] == 1.0), "a perfect prediction's quality is not 1"
        assert np.all(quality[t != p] < 1.0), "a wrong prediction's quality is 1"


class OptimizerContract:
    """Checks of an :class:`~promptevolver.optimizers.Optimizer` (see the module docstring).

    Set :attr:`optimizer_class` (and :attr:`options`, keyword arguments it needs beside metric and
    llm); optionally override :meth:`make_parts` (default: a 24-sample synthetic binary set, an
    ``AspectCritic``, the simulated judge LLM and accuracy) and :attr:`config`. Each check builds
    fresh parts; an optimizer must give the same result for the same seeded config.
    """

    #: The optimizer under test, called as ``optimizer_class(metric, llm, **options)``.
    optimizer_class: type[Optimizer[Any]]
    #: Keyword arguments of :attr:`optimizer_class` besides ``metric`` and ``llm``.
    options: Mapping[str, Any] = {}
    #: The ``config`` given to ``optimize`` (seeded: two runs must agree).
    config: Mapping[str, Any] = {"population_size": 3, "random_seed": 0}
    #: Whether ``optimize`` needs an LLM (then a missing one raises "No llm provided").
    needs_llm: bool = True

    def make_parts(self) -> tuple[Metric, LLMClient, SingleMetricAnnotation, Loss]:
        """A fresh (metric, llm, dataset, loss) for one check."""
        dataset = generate(SyntheticSpec(n_samples=24, random_seed=0))
        metric = AspectCritic(
            name=dataset.name, definition="Is the response correct compared with the reference?"
        )
        return metric, SimulatedJudgeLLM(dataset=dataset, random_seed=0), dataset, BinaryMetricLoss()

    def _optimizer(self, metric: Metric | None, llm: LLMClient | None) -> Optimizer[Any]:
        return self.optimizer_class(metric, llm, **self.options)

    def test_it_is_built_with_metric_and_llm_positionally_or_by_keyword(self) -> None:
        metric, llm, _, _ = self.make_parts()
        for optimizer in (
            self.optimizer_class(metric, llm, **self.options),
            self.optimizer_class(metric=metric, llm=llm, **self.options),
        ):
            assert isinstance(optimizer, Optimizer), f"{type(optimizer).__name__} is not an Optimizer"
            assert optimizer.metric is metric and optimizer.llm is llm, "metric or llm not kept as given"

    def test_optimize_gives_a_json_ready_dict_of_the_metrics_prompts(self) -> None:
        metric, llm, dataset, loss = self.make_parts()
        result = self._optimizer(metric, llm).optimize(dataset, loss, dict(self.config))
        assert isinstance(result, dict), f"optimize returned a {type(result).__name__}, not a dict (Ragas')"
        prompts = set(metric.get_instructions())
        named = sorted(result)
        assert result and set(result) <= prompts, f"prompt names {named}, the metric's {sorted(prompts)}"
        assert all(isinstance(v, str) and v for v in result.values()), "an empty or non-text instruction"
        assert json.loads(json.dumps(result)) == dict(result), "json.dump(result) does not round-trip"

    def test_positional_keyword_and_async_calls_agree(self) -> None:
        results = []
        for call in ("positional", "keyword", "async"):
            metric, llm, dataset, loss = self.make_parts()
            optimizer, config = self._optimizer(metric, llm), dict(self.config)
            if call == "positional":
                result = optimizer.optimize(dataset, loss, config)
            elif call == "keyword":
                result = optimizer.optimize(dataset=dataset, loss=loss, config=config)
            else:
                result = asyncio.run(optimizer.aoptimize(dataset=dataset, loss=loss, config=config))
            results.append(dict(result))
        assert results[0] == results[1] == results[2], f"the three calls disagree: {results}"

    def test_the_metric_keeps_its_own_instructions(self) -> None:
        metric, llm, dataset, loss = self.make_parts()
        own = metric.get_instructions()
        self._optimizer(metric, llm).optimize(dataset, loss, dict(self.config))
        assert metric.get_instructions() == own, "optimize() changed the metric (apply the result yourself)"

    def test_a_missing_metric_or_llm_is_refused_with_ragas_messages(self) -> None:
        metric, llm, dataset, loss = self.make_parts()
        cases: list[tuple[Metric | None, LLMClient | None, str]] = [(None, llm, "No metric provided")]
        if self.needs_llm:
            cases.append((metric, None, "No llm provided"))
        for given_metric, given_llm, message in cases:
            try:
                self._optimizer(given_metric, given_llm).optimize(dataset, loss, dict(self.config))
            except ValueError as error:
                assert message in str(error), f"{error} does not say {message!r}"
                continue
            raise AssertionError(f"optimize() ran without raising ValueError({message!r})")
        assert llm.usage.total_calls == 0, "an LLM call was made before the refusal"
