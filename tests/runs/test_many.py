"""Many judges in one job (``metrics:``, :mod:`promptevolver.runs.many`): config errors before any
call, one shared limit on requests in flight, each metric's result equal to its own run, a
failing metric reported while the others finish, resume, and the index page."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, MetricAnnotation, rundir
from promptevolver.cli import main
from promptevolver.config._models import BudgetConfig, load_config
from promptevolver.errors import AnnotationKeyError, ConfigError
from promptevolver.llm._base import Completion, LLMRequest, Usage
from promptevolver.llm._concurrency import InFlightLimit
from promptevolver.runs.many import optimize_many, split_budget
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM
from promptevolver.testing import LocalOpenAIServer

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
TWO = DATA / "two_metrics.json"
DEFINITIONS = {
    "answer_correctness": "Given the user_input, reference and response. Is the response correct "
    "compared with the reference",
    "helpfulness": "Is the response helpful to the user, addressing what they asked for?",
}
CONFIG = {"population_size": 4, "generations": 2, "random_seed": 3}


def _config(tmp_path: Path, data: Path = TWO, **extra: Any) -> Path:
    body = {
        "dataset": str(data),
        "metrics": {n: {"type": "aspect_critic", "definition": d} for n, d in DEFINITIONS.items()},
        "llm": {"provider": "fake"},
        "optimizer": {"population_size": 4, "generations": 2},
        "random_seed": 3,
        **extra,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


# --- config errors, before any call ----------------------------------------------------------------


def test_metric_and_metrics_together_or_neither_is_one_error_naming_the_keys(tmp_path: Path) -> None:
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump({"dataset": str(TWO), "metric": {"name": "x"}, "metrics": {}}))
    with pytest.raises(ConfigError, match=r"both.yaml: metric, metrics: give one of the two"):
        load_config(both)
    neither = tmp_path / "neither.yaml"
    neither.write_text(yaml.safe_dump({"dataset": str(TWO)}))
    with pytest.raises(ConfigError, match=r"neither.yaml: metric: missing \(or metrics:"):
        load_config(neither)


def test_a_metric_missing_from_the_file_stops_the_job_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LocalOpenAIServer(lambda body: '{"reason": "r", "verdict": 1}', models=["m"]) as server:
        llm = {"provider": "openai", "model": "m", "base_url": server.base_url, "cache": None}
        path = _config(tmp_path, llm=llm)
        raw = yaml.safe_load(path.read_text())
        raw["metrics"]["faithfulness"] = {"type": "aspect_critic", "definition": "Is it faithful?"}
        path.write_text(yaml.safe_dump(raw))
        code = main(["optimize", str(path), "-o", str(tmp_path / "run")])
        assert server.requests == []
    err = capsys.readouterr().err
    assert code == 1
    assert "metrics: ['faithfulness'] not in" in err and "'answer_correctness', 'helpfulness'" in err
    assert not (tmp_path / "run").exists()


def test_commands_of_one_metric_refuse_a_job_config_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", str(_config(tmp_path)), "-o", str(tmp_path / "bench")]) == 1
    assert "metrics: a config of several metrics (a job) is taken by `promptevolver optimize`" in (
        capsys.readouterr().err
    )


def test_a_new_job_into_a_directory_holding_one_is_refused_naming_what_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    with rundir.locked(run), rundir.locked(run / "helpfulness"):  # folders a job made
        pass
    (run / "helpfulness" / "checkpoint.json").write_text("{}")
    assert main(["optimize", str(_config(tmp_path)), "-o", str(run), "-q"]) == 1
    assert f"{run} holds a job (helpfulness/): continue it with promptevolver optimize --resume" in (
        capsys.readouterr().err
    )
    assert (run / "helpfulness" / "checkpoint.json").read_text() == "{}"


def test_python_api_refuses_an_absent_metric_before_any_call() -> None:
    data = MetricAnnotation.from_json(TWO)
    metric = AspectCritic(name="faithfulness", definition="Is it faithful?")
    with pytest.raises(AnnotationKeyError, match=r"\['faithfulness'\] are not in the annotations"):
        optimize_many({"faithfulness": metric}, data, llm=_NeverCalled())


class _NeverCalled:
    usage = Usage()

    async def complete(self, request: LLMRequest) -> Completion:
        raise AssertionError("no call may be made")


# --- each metric's result is its own run's ---------------------------------------------------------


def _judges() -> dict[str, AspectCritic]:
    return {n: AspectCritic(name=n, definition=d) for n, d in DEFINITIONS.items()}


def _simulated(data: MetricAnnotation, seed: int) -> dict[str, SimulatedMetricsLLM]:
    return {n: SimulatedMetricsLLM(dataset=data[n], random_seed=seed) for n in DEFINITIONS}


def test_each_metric_in_a_job_gives_what_its_own_run_with_the_same_seed_gives() -> None:
    data = MetricAnnotation.from_json(TWO)
    many = optimize_many(_judges(), data, llm=_simulated(data, 3), config=CONFIG)
    assert set(many) == set(DEFINITIONS) and not many.failed
    for name, metric in _judges().items():
        alone = GeneticOptimizer(metric=metric, llm=SimulatedMetricsLLM(dataset=data[name], random_seed=3))
        own = alone.optimize(data[name], BinaryMetricLoss(), CONFIG)
        assert many[name].best_instructions == own.best_instructions
        assert many[name].scores == own.scores
        assert many[name].usage["llm_calls"] == own.usage["llm_calls"]


def test_one_client_given_to_every_metric_counts_each_metrics_usage_as_its_own_run() -> None:
    data = MetricAnnotation.from_json(TWO)
    shared = SimulatedMetricsLLM(dataset=data["helpfulness"], random_seed=3)  # answers both metrics
    many = optimize_many(_judges(), data, llm=shared, config=CONFIG)
    assert not many.failed
    total = 0
    for name, metric in _judges().items():
        alone = SimulatedMetricsLLM(dataset=data["helpfulness"], random_seed=3)
        own = GeneticOptimizer(metric=metric, llm=alone).optimize(data[name], BinaryMetricLoss(), CONFIG)
        assert many[name].usage["llm_calls"] == own.usage["llm_calls"]
        assert many[name].usage["prompt_tokens"] == own.usage["prompt_tokens"]
        assert many[name].best_instructions == own.best_instructions
        total += sum(own.usage["llm_calls"].values())
    assert shared.usage.total_calls == total  # the one client answered both


class _Down:
    """A server that answers nothing: every call fails with HTTP 503."""

    usage = Usage()

    async def complete(self, request: LLMRequest) -> Completion:
        from promptevolver.errors import TransientLLMError

        self.usage.record_failure(request.operation, "http 503")
        raise TransientLLMError("service unavailable", status=503)


def test_a_metric_whose_llm_is_unusable_is_reported_with_its_cause_while_the_other_finishes() -> None:
    data = MetricAnnotation.from_json(TWO)
    llm = {
        "answer_correctness": _Down(),
        "helpfulness": SimulatedMetricsLLM(dataset=data["helpfulness"], random_seed=3),
    }
    many = optimize_many(_judges(), data, llm=llm, config=CONFIG)
    assert list(many) == ["helpfulness"]
    assert many.outcomes["helpfulness"].status == "done"
    reason = many.failed["answer_correctness"]
    assert "http 503" in reason
    with pytest.raises(KeyError, match="metric 'answer_correctness' failed: .*http 503"):
        many["answer_correctness"]
    assert many.to_dict()["metrics"]["answer_correctness"]["status"] == "failed"


# --- one limit, shared ----------------------------------------------------------------------------


class _Slow:
    """A simulated judge that takes a few milliseconds per call, counting calls in flight."""

    def __init__(self, inner: SimulatedMetricsLLM, name: str, flight: dict[str, Any]) -> None:
        self.inner, self.name, self.flight = inner, name, flight

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    async def complete(self, request: LLMRequest) -> Completion:
        f = self.flight
        f[self.name] += 1
        f["peak"] = max(f["peak"], f["answer_correctness"] + f["helpfulness"])
        f["both"] = f["both"] or (f["answer_correctness"] > 0 and f["helpfulness"] > 0)
        try:
            await asyncio.sleep(0.002)
            return await self.inner.complete(request)
        finally:
            f[self.name] -= 1


@pytest.mark.parametrize("limit", [1, 3])
def test_the_metrics_run_interleaved_within_one_limit_on_requests_in_flight(limit: int) -> None:
    data = MetricAnnotation.from_json(TWO)
    flight: dict[str, Any] = {"answer_correctness": 0, "helpfulness": 0, "peak": 0, "both": False}
    llm = {n: _Slow(c, n, flight) for n, c in _simulated(data, 3).items()}
    many = optimize_many(_judges(), data, llm=llm, config={**CONFIG, "max_concurrency": limit})
    assert not many.failed
    assert flight["peak"] == limit  # reached by the two together, never exceeded
    assert flight["both"] is (limit > 1)  # interleaved: both metrics' calls in flight at once


def test_a_share_of_a_limit_counts_against_the_same_slots_and_closes_alone() -> None:
    from promptevolver.errors import LLMError

    limit = InFlightLimit(2)
    a, b = limit.share(), limit.share()

    async def run() -> None:
        assert a.slots() is b.slots() is limit.slots()
        a.close(LLMError("stopped"))
        assert a.closed is not None and b.closed is None

    asyncio.run(run())


# --- the budget split ------------------------------------------------------------------------------


@pytest.mark.parametrize(("bound", "usable"), [(100, {"a": 18, "b": 21}), (7, {"a": 1, "b": 1, "c": 1})])
def test_the_budget_is_split_in_proportion_to_usable_samples_and_adds_up(
    bound: int, usable: dict[str, int]
) -> None:
    shares = split_budget(BudgetConfig(max_calls=bound, max_cost_usd=1.0), usable)
    assert sum(s.max_calls or 0 for s in shares.values()) == bound
    total = sum(usable.values())
    for name, share in shares.items():
        assert abs((share.max_calls or 0) - bound * usable[name] / total) < 1
        assert share.max_cost_usd == pytest.approx(usable[name] / total)
        assert share.max_tokens is None


# --- the run directory: a failing metric, resume, the index page ------------------------------------


def _broken_copy(tmp_path: Path) -> Path:
    """two_metrics.json with helpfulness's first label out of range (3 for a 0/1 verdict)."""
    raw = json.loads(TWO.read_text(encoding="utf-8"))
    raw["helpfulness"][0]["metric_output"] = 3
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def test_a_failing_metric_is_reported_while_the_other_finishes_then_resume_runs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _broken_copy(tmp_path)
    run = tmp_path / "run"
    # a budget: split by usable samples, which change when the broken metric is fixed
    config = _config(tmp_path, data, budget={"max_calls": 4000})
    assert main(["optimize", str(config), "-o", str(run), "-q"]) == 1
    out, err = capsys.readouterr()
    summary = json.loads((run / "result.json").read_text())
    assert summary["metrics"]["answer_correctness"]["status"] == "done"
    failed = summary["metrics"]["helpfulness"]
    assert (
        failed["status"] == "failed"
        and "sample 0" in failed["reason"]
        and summary["failed"] == ["helpfulness"]
    )
    assert re.search(r"helpfulness\s+failed\s+n/a\s+n/a", out)
    assert "1 of 2 metrics failed (helpfulness:" in err and f"optimize --resume {run}" in err
    assert (run / "answer_correctness" / "report.html").is_file()
    assert not (run / "helpfulness" / "result.json").exists()
    links = re.findall(r'href="([^"]+)"', (run / "index.html").read_text())
    assert links == ["answer_correctness/report.html"]

    kept = (run / "answer_correctness" / "result.json").stat().st_mtime_ns
    data.write_text(TWO.read_text(encoding="utf-8"), encoding="utf-8")  # the annotations fixed
    assert main(["optimize", "--resume", str(run), "-q"]) == 0
    summary = json.loads((run / "result.json").read_text())
    assert [m["status"] for m in summary["metrics"].values()] == ["done", "done"]
    assert (run / "answer_correctness" / "result.json").stat().st_mtime_ns == kept  # finished: kept
    ran_with = yaml.safe_load((run / "answer_correctness" / "config.yaml").read_text())
    reported = summary["metrics"]["answer_correctness"]["budget"]["max_calls"]
    assert reported == ran_with["budget"]["max_calls"] == 4000  # the budget it ran with (all of it)
    links = re.findall(r'href="([^"]+)"', (run / "index.html").read_text())
    assert links == ["answer_correctness/report.html", "helpfulness/report.html"]
    assert all((run / link).is_file() for link in links)


class _Interrupt(Exception):
    pass


def test_an_interrupted_job_resumes_each_unfinished_metric_to_the_uninterrupted_result(
    tmp_path: Path,
) -> None:
    from promptevolver.runs.many import execute_many

    config = load_config(_config(tmp_path))
    assert not isinstance(config, type(None))
    whole = execute_many(config, tmp_path / "whole")  # type: ignore[arg-type]

    def stop_helpfulness(name: str) -> list[Any]:
        def callback(event: Any) -> None:
            if name == "helpfulness" and event.kind == "llm_call" and event.data["calls"] >= 15:
                raise KeyboardInterrupt

        return [callback]

    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        execute_many(config, run, callbacks=stop_helpfulness)  # type: ignore[arg-type]
    assert (run / "helpfulness" / "checkpoint.json").is_file()
    assert not (run / "helpfulness" / "result.json").exists()
    resumed = execute_many(config, run, resume=True)  # type: ignore[arg-type]
    for name in DEFINITIONS:
        assert resumed[name].best_instructions == whole[name].best_instructions
        assert resumed[name].scores == whole[name].scores
