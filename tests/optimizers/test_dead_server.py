"""A server that dies mid-run stops the run after a bounded number of attempts, retries in
backoff give up at once, a flaky but healthy server never stops a run, and the stop message
quotes the server's or the OS's own words without secrets (real HTTP)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import threading
from typing import Any

import pytest

from promptevolver import BinaryMetricLoss, GeneticOptimizer, SingleMetricAnnotation
from promptevolver.errors import LLMUnusableError, TransientLLMError
from promptevolver.judge._aspect_critic import AspectCritic
from promptevolver.llm import OpenAIClient, ScriptedLLM, SimulatedJudgeLLM
from promptevolver.llm._attempts import watched
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.llm._retry import RUN_OF_FAILURES
from promptevolver.optimizers import OptimizationResult
from promptevolver.optimizers.events import Event
from promptevolver.optimizers.operators import _meta_prompts as meta_prompts
from promptevolver.optimizers.strategies._failures import ServerWatch
from promptevolver.simulation.synthetic import SyntheticSpec, generate
from promptevolver.testing import LocalOpenAIServer, simulated_handler

CONCURRENCY = 16
CONFIG = {"strategy": "genetic", "population_size": 4, "generations": 3, "random_seed": 5, "patience": 5}
SECRET = "hunter2-query-secret"


class Dying:
    """The simulated judge; once ``dead``, every request fails (HTTP 500) and is counted."""

    def __init__(self, dataset: SingleMetricAnnotation, *, flaky_share: float = 0.0) -> None:
        self.answer = simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=1, noise=0.0))
        self.lock = threading.Lock()
        self.dead = False
        self.after_death = 0
        self.flaky_share = flaky_share  # fail this share of attempts, drawn per (body, attempt)
        self.seen: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> str:
        key = json.dumps(body, sort_keys=True)
        with self.lock:
            if self.dead:
                self.after_death += 1
                raise RuntimeError("upstream model crashed")
            nth = self.seen[key] = self.seen.get(key, 0) + 1
        draw = int(hashlib.sha256(f"{key}{nth}".encode()).hexdigest(), 16) % 1000 / 1000
        if draw < self.flaky_share:
            raise RuntimeError("transient hiccup")
        return self.answer(body)


def _optimize(
    base_url: str,
    dataset: SingleMetricAnnotation,
    metric: AspectCritic,
    on_event: Any = None,
    *,
    run_dir: Any = None,
    resume: bool = False,
) -> OptimizationResult:
    async def main() -> OptimizationResult:
        client = OpenAIClient(
            model="sim",
            base_url=f"{base_url}?api-key={SECRET}",
            api_key="sk-test-dead-server",
            max_attempts=4,
            retry_initial_s=0.05,
            retry_max_s=0.2,
            timeout_s=5.0,
            max_concurrency=CONCURRENCY,
        )
        async with client as llm:
            callbacks = [on_event] if on_event is not None else []
            optimizer = GeneticOptimizer(metric=metric, llm=llm, callbacks=callbacks)
            config = {**CONFIG, "max_concurrency": CONCURRENCY}
            return await optimizer.aoptimize(
                dataset=dataset, loss=BinaryMetricLoss(), config=config, run_dir=run_dir, resume=resume
            )

    return asyncio.run(main())


def _after_calls(n: int, act: Any) -> Any:
    """An event callback that calls ``act()`` once, at the ``n``-th answered LLM call."""
    count = [0]

    def on_event(event: Event) -> None:
        if event.kind == "llm_call":
            count[0] += 1
            if count[0] == n:
                act()

    return on_event


@pytest.mark.parametrize("answered_first", [1, 25])
def test_a_server_failing_everything_stops_the_run_without_retrying_every_call(
    ac_dataset, ac_metric, answered_first
):
    server_side = Dying(ac_dataset)
    with LocalOpenAIServer(server_side, models=["sim"]) as server, pytest.raises(LLMUnusableError) as stop:
        _optimize(
            server.base_url,
            ac_dataset,
            ac_metric,
            _after_calls(answered_first, lambda: setattr(server_side, "dead", True)),
        )
    # at most the run of failed attempts that decides the stop plus those already in flight; calls
    # in backoff give up instead of retrying (without the attempt rule: 32 calls x 4 attempts). The
    # step's share rule may stop it first, after fewer attempts (when the calls that gave up are
    # enough evaluations of the step: it depends on how fast the retries come round).
    assert 0 < server_side.after_death <= RUN_OF_FAILURES + CONCURRENCY
    message = str(stop.value)
    by_run = "attempts in a row failed" in message and server_side.after_death >= RUN_OF_FAILURES
    by_share = "evaluations failed (more than max_failure_rate=0.2" in message
    # or the search ran out of generations while the server answered nothing (never a result
    # as if its plans or generations had simply run out)
    by_end = (
        "attempts failed on the server's side" in message and server_side.after_death >= RUN_OF_FAILURES // 2
    )
    by_meta = "meta calls in a row failed on the server's side" in message
    assert (by_run or by_share or by_end or by_meta) and "dominant cause http 500" in message, message
    assert "upstream model crashed" in message  # the server's own words
    assert "sk-test-dead-server" not in message and SECRET not in message


@pytest.mark.parametrize("answered_first", [60, 150])
def test_after_a_dead_server_stop_and_a_resume_only_calls_sent_count_as_failures(
    ac_metric, tmp_path, answered_first
):
    """The requests the stopping run never sent (the run stopping, a spent budget) are not
    failed calls: after the resume, ``usage.failures`` counts calls that gave up at the server,
    each with at least one failed attempt there (62 more than that before)."""
    dataset = generate(SyntheticSpec(n_samples=200, random_seed=0))
    server_side = Dying(dataset)
    with LocalOpenAIServer(server_side, models=["sim"]) as server:
        kill = _after_calls(answered_first, lambda: setattr(server_side, "dead", True))
        with pytest.raises(LLMUnusableError):
            _optimize(server.base_url, dataset, ac_metric, kill, run_dir=tmp_path)
        failed_attempts = server_side.after_death
        server_side.dead = False
        result = _optimize(server.base_url, dataset, ac_metric, run_dir=tmp_path, resume=True)
    usage = result.usage
    assert set(usage["failures_by_cause"]) <= {"http 500"}, usage["failures_by_cause"]
    assert 0 < usage["failures"] <= failed_attempts


def test_a_closed_port_is_reported_with_the_os_reason_and_no_secret():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def main() -> TransientLLMError:
        url = f"http://127.0.0.1:{port}/v1?api-key={SECRET}"  # userinfo is refused: test_hostile_server
        async with OpenAIClient(
            model="sim", base_url=url, api_key="sk-test-dead-server", max_attempts=1
        ) as llm:
            with pytest.raises(TransientLLMError) as failed:
                await llm.complete(LLMRequest((ChatMessage("user", "hi"),)))
            return failed.value

    error = asyncio.run(main())
    assert error.cause == "transport" and "connection refused" in str(error).lower()
    assert "sk-test-dead-server" not in str(error) and SECRET not in str(error)


def test_a_flaky_but_answering_server_never_stops_the_run(ac_dataset, ac_metric):
    flaky = Dying(ac_dataset, flaky_share=0.3)
    with LocalOpenAIServer(flaky, models=["sim"]) as server:
        result = _optimize(server.base_url, ac_dataset, ac_metric)
    assert result.usage["retries"] > 0 and len(result.history) >= 1


def test_a_call_waiting_in_backoff_gives_up_with_its_error_when_the_watch_stops():
    async def main() -> tuple[ScriptedLLM, BaseException | None]:
        llm = ScriptedLLM([TransientLLMError("busy", status=503)] * 4, max_attempts=4, retry_initial_s=3600.0)
        llm.retry_max_s = 3600.0
        watch = ServerWatch(on_dead=lambda *args: None)
        call = asyncio.ensure_future(watched(llm, watch).complete(LLMRequest(())))
        await asyncio.sleep(0.05)  # the first attempt failed; the call sleeps an hour's backoff
        watch.stop()
        try:
            await asyncio.wait_for(call, timeout=10)  # a guard against hanging, not a timing check
        except TransientLLMError as exc:
            return llm, exc
        return llm, None

    llm, error = asyncio.run(main())
    assert isinstance(error, TransientLLMError) and error.status == 503  # its own error, not a new one
    assert len(llm.requests) == 1 and llm.usage.retries == 0  # never re-sent, no retry counted
    assert llm.usage.failures_by_cause == {"http 503": 1}


def test_a_failed_meta_call_keeps_the_servers_words(ac_dataset):
    def refuse(body: dict[str, Any]) -> str:
        raise RuntimeError("meta model overloaded")

    async def main(url: str) -> meta_prompts.OperatorOutcome:
        async with OpenAIClient(model="sim", base_url=url, api_key="sk-x", max_attempts=1) as llm:
            return await meta_prompts.rewrite(
                llm, instruction="Judge it.", feedback_items=["Be strict."], temperature=0.0, sample_index=0
            )

    with LocalOpenAIServer(refuse, models=["sim"]) as server:
        out = asyncio.run(main(server.base_url))
    assert out.value is None and out.rejected == "llm error: http 500"  # the counted reason stays short
    assert out.error is not None and "meta model overloaded" in out.error


@pytest.mark.parametrize("generations", [2, 6])
def test_a_meta_server_that_answers_nothing_stops_the_search_with_its_cause(generations):
    """The judge answers, the prompt engineer's server fails every call (after its retries): the
    search never ends as 'exhausted' or 'generations' with the seed as if its plans had run out
    (a failed plan was not tried: it is planned again); it stops with the cause."""
    from ..helpers import make_dataset, rule_llm

    ds = make_dataset(30, wrong=10)
    labels = [int(y) for y in ds.labels()]

    def writer(request: LLMRequest) -> str:
        raise TransientLLMError("reflection model crashed", status=500)

    llm = rule_llm(ds, lambda instruction, i: labels[i] if i % 3 else 1 - labels[i], writer)
    metric = AspectCritic(name="answer_correctness", definition="Is the response correct?")
    config = {**CONFIG, "generations": generations, "patience": generations}
    with pytest.raises(LLMUnusableError) as stop:
        GeneticOptimizer(metric=metric, llm=llm).optimize(dataset=ds, loss=BinaryMetricLoss(), config=config)
    message = str(stop.value)
    assert "failed on the server's side" in message and "dominant cause http 500" in message, message
    assert "reflection model crashed" in message
