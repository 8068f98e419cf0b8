"""The optimizer end to end through OpenAIClient over real HTTP, with injected faults and a cache.

The local server answers with the simulated judge (``simulated_handler``), so these runs see the
same answers as in-process runs, through the SDK, the network stack and the retry machinery.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, SingleMetricAnnotation
from promptevolver.cli import main
from promptevolver.config._models import default_cache
from promptevolver.llm import CachedLLM, OpenAIClient, Price, SimulatedJudgeLLM
from promptevolver.optimizers import OptimizationResult
from promptevolver.testing import Fault, LocalOpenAIServer, simulated_handler

from ..conftest import AC_DEFINITION, AC_FILE

KEY = "sk-test-E2E-5f4dcc3b5aa765d61d8327deb882cf99"
CONFIG = {"population_size": 3, "generations": 2, "random_seed": 42}


def simulated(dataset: SingleMetricAnnotation) -> SimulatedJudgeLLM:
    # noise 0: the noise draw depends on sample_index, which does not cross the wire
    return SimulatedJudgeLLM(dataset=dataset, random_seed=42, noise=0.0)


@pytest.fixture
def server(ac_dataset: SingleMetricAnnotation) -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(simulated_handler(simulated(ac_dataset)), models=["sim"]) as srv:
        yield srv


def client(server: LocalOpenAIServer, **kwargs: Any) -> OpenAIClient:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "sim",
        "api_key": KEY,
        "retry_initial_s": 0.001,
        "retry_max_s": 0.05,
        "timeout_s": 1.0,
        "max_attempts": 8,
    }
    return OpenAIClient(**(options | kwargs))


def optimize(llm: Any, dataset: SingleMetricAnnotation, metric: AspectCritic) -> OptimizationResult:
    """One run in its own event loop, closing the client's connections before the loop ends."""

    async def main() -> OptimizationResult:
        async with llm:
            optimizer = GeneticOptimizer(metric=metric, llm=llm)
            result = await optimizer.aoptimize(dataset=dataset, loss=BinaryMetricLoss(), config=CONFIG)
            assert isinstance(result, OptimizationResult)
            return result

    return asyncio.run(main())


def test_http_run_matches_the_in_process_run(
    server: LocalOpenAIServer, ac_dataset: SingleMetricAnnotation, ac_metric: AspectCritic
) -> None:
    over_http = optimize(client(server), ac_dataset, ac_metric)
    in_process = optimize(simulated(ac_dataset), ac_dataset, ac_metric)
    assert dict(over_http) == dict(in_process) and over_http.scores == in_process.scores
    assert over_http.usage == in_process.usage  # same calls and tokens (the server counts words too)
    assert over_http.usage["retries"] == over_http.usage["failures"] == 0
    assert len(server.requests) == sum(over_http.usage["calls_by_operation"].values())
    assert set(over_http.usage["calls_by_operation"]) >= {"judge", "feedback", "rewrite"}


def test_run_through_every_fault_counts_retries_and_failures(
    server: LocalOpenAIServer, ac_dataset: SingleMetricAnnotation, ac_metric: AspectCritic
) -> None:
    transient = [
        Fault.rate_limit(retry_after=0.01),
        Fault.server_error(500),
        Fault.server_error(503),
        Fault.delay(8.0),  # past the 4 s timeout below
        Fault.malformed_body(),
        Fault.truncated_body(),
        Fault.drop_connection(),
    ]
    permanent = [Fault.error(400, "Invalid request: the prompt is too long.")]
    cut_off = [Fault.answer('{"reason": "The response is')]  # answered, but not usable JSON
    server.inject(*transient, *permanent, *cut_off)
    # a 4 s timeout: an answer of a loaded machine is never taken for the injected delay (with
    # 1 s, calls slowed by the load timed out too and the retries counted 9, not 7)
    llm = client(server, price=Price(prompt=0.15, completion=0.60), timeout_s=4.0)

    result = optimize(llm, ac_dataset, ac_metric)

    usage = result.usage
    assert server.pending_faults == 0
    assert usage["retries"] == len(transient)
    assert usage["failures"] == len(permanent)
    assert sum(usage["retries_by_operation"].values()) == len(transient)
    assert sum(usage["failures_by_operation"].values()) == len(permanent)
    calls = sum(usage["calls_by_operation"].values())
    # every request the server saw is an answered call, a retried attempt or a final failure
    assert len(server.requests) == calls + usage["retries"] + usage["failures"]
    expected_cost = (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.60) / 1e6
    assert usage["cost_usd"] == pytest.approx(expected_cost)
    assert result.held_out["best"] >= result.held_out["seed"]  # held out, or cross-validated (small data)


def test_second_identical_run_makes_no_server_calls(
    server: LocalOpenAIServer, ac_dataset: SingleMetricAnnotation, ac_metric: AspectCritic, tmp_path: Path
) -> None:
    path = tmp_path / "responses.sqlite"
    first = optimize(CachedLLM(inner=client(server), path=path), ac_dataset, ac_metric)
    sent = len(server.requests)
    second = optimize(CachedLLM(inner=client(server), path=path), ac_dataset, ac_metric)

    assert len(server.requests) == sent > 0
    assert dict(second) == dict(first) and second.scores == first.scores
    assert second.usage["llm_calls"] == {"judge": 0, "meta": 0}
    assert second.usage["prompt_tokens"] == 0
    assert second.usage["cache_hits"] == sum(first.usage["calls_by_operation"].values())
    assert second.usage["cache_hits_by_operation"] == first.usage["calls_by_operation"]
    for file in tmp_path.iterdir():  # the database and any WAL/shared-memory file
        assert KEY.encode() not in file.read_bytes()
        assert b"sk-test" not in file.read_bytes()


def test_rerun_of_the_same_config_makes_no_new_calls(
    server: LocalOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # the cache is not written here: it is the user's (XDG)
    monkeypatch.setenv("PE_TEST_KEY", KEY)
    config = tmp_path / "run.yaml"
    config.write_text(
        f"dataset: {AC_FILE}\n"
        f"metric: {{name: answer_correctness, definition: {json.dumps(AC_DEFINITION)}}}\n"
        f"llm: {{provider: openai, model: sim, base_url: '{server.base_url}', api_key_env: PE_TEST_KEY}}\n"
        "optimizer: {population_size: 3, generations: 1}\n"
    )
    assert main(["optimize", str(config), "--output", "first", "--quiet"]) == 0
    sent = len(server.requests)
    assert main(["optimize", str(config), "--output", "second", "--quiet"]) == 0
    assert len(server.requests) == sent > 0
    first, second = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("first", "second"))
    assert second["best_instructions"] == first["best_instructions"]
    assert second["usage"]["cache_hits"] == sent and second["usage"]["llm_calls"] == {"judge": 0, "meta": 0}
    assert default_cache().is_file() and not (tmp_path / ".promptevolver").exists()
    written = (tmp_path / "second" / "config.yaml").read_text() + capsys.readouterr().out
    assert KEY not in written and "PE_TEST_KEY" in written
