"""A real MLflow tracking server for the tests, and traces with feedback logged through MLflow's API.

:func:`running_server` starts ``mlflow server`` on 127.0.0.1 (a free port) with a SQLite backend
store and a temporary artifact root (without MLflow's job runner: two processes, not ten), waits
until it answers ``/health``, and stops it (its whole process group) afterwards.
:func:`log_labelled_traces` logs one trace per annotated sample with the judge's feedback
(``LLM_JUDGE``) and the human's (``HUMAN``: agreeing with ``log_feedback``, correcting with
``override_feedback``, as MLflow's UI does), all through ``mlflow``'s own API.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Seconds a server may take to answer /health (measured: 5-9 s on 2 loaded cores).
START_TIMEOUT_S = 180.0
#: What the MLflow tests skip with when the extra is not installed.
NOT_INSTALLED = 'MLflow is not installed: pip install -e ".[mlflow]" (CI installs it; .ci/run)'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Server:
    uri: str
    folder: Path
    started_in_s: float


@contextlib.contextmanager
def running_server(folder: Path) -> Iterator[Server]:
    """``mlflow server`` on 127.0.0.1 with ``folder``/mlflow.db and ``folder``/artifacts; stopped on exit.

    Raises:
        RuntimeError: the server did not answer within :data:`START_TIMEOUT_S` (its log's tail).
    """
    port = free_port()
    log = (folder / "server.log").open("wb")
    # No job runner: MLflow's starts eight more processes (huey consumers) that no test uses.
    quiet = {
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    }
    env = {**os.environ, **quiet}
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination", str(folder / "artifacts"),
        "--workers", "1",
    ]  # fmt: skip
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        _wait(uri, process, folder / "server.log")
        yield Server(uri=uri, folder=folder, started_in_s=time.perf_counter() - started)
    finally:
        _stop(process)
        log.close()


def _wait(uri: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"mlflow server exited with {process.returncode}: {_tail(log)}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
            if answer.status == 200:
                return
        time.sleep(0.25)
    raise RuntimeError(f"mlflow server did not answer {uri}/health in {START_TIMEOUT_S:.0f} s: {_tail(log)}")


def _tail(log: Path) -> str:
    return " | ".join(log.read_text(errors="replace").splitlines()[-5:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group (it started one: the server and its workers), then
    SIGKILL after 3 s (it may take 10 s and more to shut down gracefully, which nothing here needs)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


# --- traces ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Logged:
    """What :func:`log_labelled_traces` logged: the trace ids of the samples (in order), and of the
    traces that carry only the judge's or only a human's feedback."""

    trace_ids: list[str]
    judge_only: list[str]
    human_only: list[str]


def _source(kind: str, source_id: str) -> Any:
    from mlflow.entities import AssessmentSource, AssessmentSourceType

    return AssessmentSource(source_type=getattr(AssessmentSourceType, kind), source_id=source_id)


def _trace(mlflow: Any, inputs: dict[str, Any], output: Any) -> str:
    with mlflow.start_span(name="answer_question") as span:
        span.set_inputs(inputs)
        span.set_outputs(output)
        return str(span.trace_id)


def log_labelled_traces(
    uri: str,
    experiment: str,
    samples: list[Any],
    *,
    name: str = "correctness",
    judge_only: int = 0,
    human_only: int = 0,
) -> Logged:
    """One trace per annotated sample of ``samples`` (:class:`SampleAnnotation`, binary) in
    ``experiment``: the root span's inputs ``{"question": user_input}``, its output the response
    (one value), the reference as an ``expected_response`` expectation; the judge's feedback
    ``name`` (LLM_JUDGE: the verdict, as a boolean, and reason of the sample's ``prompt_output``)
    and the human's (HUMAN, annotator ``reviewer-<i % 3>``): agreeing, a ``log_feedback``;
    correcting, an ``override_feedback`` of the judge's. Then ``judge_only`` traces with the
    judge's feedback alone and ``human_only`` with a human's alone."""
    import mlflow

    with using(uri):
        mlflow.set_experiment(experiment)
        ids = [
            _trace(mlflow, {"question": s.metric_input["user_input"]}, s.metric_input["response"])
            for s in samples
        ]
        alone = {
            side: [_trace(mlflow, {"question": f"unlabelled {side} {j}"}, "an answer") for j in range(n)]
            for side, n in (("judge", judge_only), ("human", human_only))
        }
        mlflow.flush_trace_async_logging()  # the traces are on the server before their feedback
        for i, (tid, sample) in enumerate(zip(ids, samples)):
            mlflow.log_expectation(
                trace_id=tid, name="expected_response", value=sample.metric_input["reference"]
            )
            prompt = next(iter(sample.prompts.values()))
            verdict = (prompt.prompt_output or {}).get("verdict", sample.metric_output)
            judged = mlflow.log_feedback(
                trace_id=tid,
                name=name,
                value=bool(verdict),
                rationale=(prompt.prompt_output or {}).get("reason"),
                source=_source("LLM_JUDGE", "openai:/gpt-4o-mini"),
            )
            label = sample.human_label(binary=True)
            edited = (prompt.edited_output or {}).get("reason")
            human = {
                "value": bool(label),
                "rationale": edited,
                "source": _source("HUMAN", f"reviewer-{i % 3}"),
            }
            if label == verdict:
                mlflow.log_feedback(trace_id=tid, name=name, **human)
            else:
                mlflow.override_feedback(trace_id=tid, assessment_id=judged.assessment_id, **human)
        for side, kind in (("judge", "LLM_JUDGE"), ("human", "HUMAN")):
            for tid in alone[side]:
                mlflow.log_feedback(trace_id=tid, name=name, value=True, source=_source(kind, "x"))
        return Logged(trace_ids=ids, judge_only=alone["judge"], human_only=alone["human"])


@contextlib.contextmanager
def using(uri: str) -> Iterator[None]:
    """MLflow's fluent API (``mlflow.start_span``, ``mlflow.genai.load_prompt``) pointed at ``uri``
    for the block, and back to what it was after (unset stays unset: restoring the resolved
    default by ``set_tracking_uri`` would pin it to a ./mlflow.db)."""
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    with _use_tracking_uri(uri):
        yield
