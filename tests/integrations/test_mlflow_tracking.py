"""``tracking: {mlflow: ...}``: a run logs its params, stage figures and cost to a real MLflow server
as it goes; a dead or slow server gives one warning and the run goes on."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptevolver.cli import main

from ..conftest import AC_DEFINITION, AC_FILE
from .mlflow_server import NOT_INSTALLED, free_port

mlflow = pytest.importorskip("mlflow", reason=NOT_INSTALLED)


def _config(tmp_path: Path, tracking: str) -> Path:
    config = tmp_path / "ac.yaml"
    config.write_text(
        f"dataset: {AC_FILE}\n"
        "metric: {type: aspect_critic, name: answer_correctness, "
        f"definition: {json.dumps(AC_DEFINITION)}}}\n"
        f"tracking: {{mlflow: {tracking}}}\n"
    )
    return config


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("promptevolver: warning: MLflow tracking")]


def test_a_run_logs_params_stage_figures_and_cost_as_it_goes(mlflow_server, tmp_path, capsys):
    config = _config(tmp_path, f"{{tracking_uri: '{mlflow_server.uri}', experiment: tracked}}")
    run_dir = tmp_path / "run"
    assert main(["optimize", str(config), "-o", str(run_dir), "-q"]) == 0
    assert _warnings(capsys.readouterr().err) == []
    result = json.loads((run_dir / "result.json").read_text())
    client = mlflow.MlflowClient(mlflow_server.uri)
    (run,) = client.search_runs([client.get_experiment_by_name("tracked").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "answer_correctness (run)"
    params = run.data.params
    assert params["metric.name"] == "answer_correctness"
    assert params["optimizer.generations"] == str(result["config"]["generations"])
    assert params["random_seed"] == "42"
    metrics = run.data.metrics
    stages = result["stages"]
    ran = [s for s, f in stages.items() if f.get("judge_calls") or f.get("meta_calls")]
    assert {"distill", "verify"} <= set(ran)  # a stage that made no call may log nothing
    for stage in ran:
        assert metrics[f"{stage}/judge_calls"] == stages[stage]["judge_calls"]
        assert metrics[f"{stage}/meta_calls"] == stages[stage]["meta_calls"]
        assert metrics[f"{stage}/prompt_tokens"] == stages[stage]["prompt_tokens"]
    calls = result["usage"]["llm_calls"]
    assert metrics["llm_calls"] == calls["judge"] + calls["meta"]  # the last point of the running count
    history = client.get_metric_history(run.info.run_id, "llm_calls")
    assert len(history) >= 1 and max(p.step for p in history) == calls["judge"] + calls["meta"]
    assert metrics["prompt_tokens"] == result["usage"]["prompt_tokens"]
    measured = {k: v for k, v in result["scores"]["best"].items() if isinstance(v, int | float)}
    assert measured  # the chosen judge's figures, each under its split's name; n/a ones absent
    for split in ("train", "validation", "cross_validated"):
        assert metrics.get(f"chosen_{split}_accuracy") == measured.get(split)
    assert metrics["seed_train_accuracy"] == result["scores"]["seed"]["train"]
    assert "cost_usd" not in metrics  # no prices: not measured, never a 0.0
    assert run.data.tags["promptevolver.simulated_llm"] == "true"
    assert "simulated LLM" in run.data.tags["mlflow.note.content"]
    assert run.data.tags["promptevolver.stop_reason"] == result["stop_reason"]
    files = {f.path for f in client.list_artifacts(run.info.run_id)}
    assert {"result.json", "report.html", "report.md", "samples.jsonl"} <= files


def test_a_dead_server_gives_one_warning_and_the_run_goes_on(tmp_path, capsys):
    config = _config(tmp_path, f"{{tracking_uri: 'http://127.0.0.1:{free_port()}', timeout_s: 60}}")
    assert main(["optimize", str(config), "-o", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    (warning,) = _warnings(captured.err)
    assert "cannot connect" in warning and "the run goes on without it" in warning
    assert (tmp_path / "run" / "result.json").is_file()
    assert "answer_correctness: accuracy seed" in captured.out


@pytest.fixture
def silent_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """A server that takes connections and never answers: (its URI, the connections it holds)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", held
    listener.close()
    for connection in held:
        connection.close()


def test_a_slow_server_never_blocks_the_run_one_warning_after_the_wait(tmp_path, capsys, silent_server):
    uri, held = silent_server
    config = _config(tmp_path, f"{{tracking_uri: '{uri}', timeout_s: 1}}")
    assert main(["optimize", str(config), "-o", str(tmp_path / "run")]) == 0
    (warning,) = _warnings(capsys.readouterr().err)
    assert "did not take the run's figures within 1 s (tracking.mlflow.timeout_s)" in warning
    assert held  # the tracker did reach the server, which was still holding its request
    assert (tmp_path / "run" / "result.json").is_file()


def test_tracking_without_mlflow_is_one_config_line_before_the_run(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a)
    )
    config = _config(tmp_path, "{experiment: x}")
    assert main(["optimize", str(config), "-o", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[-1] == 'promptevolver: error: tracking.mlflow needs MLflow: pip install "promptevolver[mlflow]"'
    )
    assert not (tmp_path / "run" / "config.yaml").exists()


def test_credentials_in_the_tracking_uri_never_reach_the_run_directory(tmp_path, capsys):
    config = _config(
        tmp_path, f"{{tracking_uri: 'http://user:s3cret@127.0.0.1:{free_port()}', timeout_s: 30}}"
    )
    assert main(["optimize", str(config), "-o", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert "s3cret" not in err
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert b"s3cret" not in path.read_bytes(), path


def test_the_tracker_logs_a_priced_runs_cost_and_the_chosen_candidates_validation(mlflow_server):
    from promptevolver.integrations.mlflow import MlflowTracker
    from promptevolver.optimizers.events import Event

    tracker = MlflowTracker(
        tracking_uri=mlflow_server.uri, experiment="direct", params={"llm": {"model": "m", "prices": {}}}
    )
    for calls in (1, 2, 3):
        usage = {"prompt_tokens": 100 * calls, "completion_tokens": 10 * calls, "cost_usd": 0.001 * calls}
        tracker(Event("llm_call", 0, {"operation": "judge", "calls": calls, "bound": 9, **usage}))
    tracker(Event("candidate_evaluated", 0, {"candidate": 4, "split": "validation", "score": 0.75}))
    figures = {"judge_calls": 3, "meta_calls": 0, "seconds": 1.5, "waves": 2}
    tracker(Event("stage_end", 0, {"stage": "verify", "chosen": 4, "figures": figures}))
    tracker.finish(figures={"chosen_validation_accuracy": 0.75})
    assert tracker.run_id is not None
    run = mlflow.MlflowClient(mlflow_server.uri).get_run(tracker.run_id)
    assert run.data.params == {"llm.model": "m", "llm.prices": "{}"}
    assert run.data.metrics["cost_usd"] == pytest.approx(0.003)
    assert run.data.metrics["llm_calls"] == 3
    assert run.data.metrics["verify/judge_calls"] == 3
    assert run.data.metrics["verify/seconds"] == 1.5
    assert run.data.metrics["verify/chosen_validation"] == 0.75
    assert "verify/waves" not in run.data.metrics
    assert run.info.status == "FINISHED"
