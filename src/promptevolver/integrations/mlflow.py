"""MLflow, through its own client: human labels in, the chosen judge out, a run tracked as it goes.

The one module of promptevolver that imports ``mlflow`` (``pip install "promptevolver[mlflow]"``);
it is imported only when used. Everything here talks to a tracking server through
``mlflow.MlflowClient`` (no hand-written REST):

* :func:`read_feedback` — every trace of an experiment that carries feedback of one name, with
  the root span's inputs and outputs, its expectations, and the feedback split by source: the
  LLM judge's (``AssessmentSourceType.LLM_JUDGE``) and the humans' (``HUMAN``). Names are
  matched as MLflow's judge alignment (MemAlign, SIMBA) matches them: case and surrounding spaces
  ignored. A judge feedback that a human overrode (``mlflow.override_feedback``: the original is
  kept, marked invalid) is still the judge's verdict, so it is read; an overridden human feedback
  is not (a newer one replaced it). ``promptevolver import mlflow`` (:mod:`promptevolver.runs`)
  turns them into annotations.
* :class:`MlflowTracker` — a run's callback (:mod:`promptevolver.optimizers.events`) that logs
  params, stage figures and cost to an MLflow run while the optimizer runs, on a thread of its
  own: a slow or dead server never blocks or breaks the run (one warning, the run goes on).
* :func:`log_judge` — registers the chosen instruction as a new version of a prompt in MLflow's
  prompt registry and logs an MLflow run with its figures and files (``promptevolver export RUN
  --to mlflow``).

Errors: a server that cannot be reached, refuses a request or lacks the experiment raises
:class:`~promptevolver.errors.TrackingError`, whose message masks credentials in the URI.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from promptevolver.errors import TrackingError
from promptevolver.llm._redaction import redact_url

if TYPE_CHECKING:
    pass

__all__ = ["MlflowFeedback", "TraceFeedback", "read_feedback", "shown_uri"]

_INSTALL = 'pip install "promptevolver[mlflow]"'
_log = logging.getLogger("promptevolver")


#: MLflow client settings this integration gives a default (the environment's own value wins):
#: MLflow's client retries a request 7 times with backoff (minutes against a dead server) and waits
#: 120 s for an answer; an import or export should fail in seconds with one line, and telemetry
#: stays off as for Ragas.
CLIENT_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_DISABLE_TELEMETRY": "true",
}


def _mlflow() -> Any:
    """The ``mlflow`` package (with :data:`CLIENT_DEFAULTS` set where the environment sets none),
    or an ImportError naming the extra to install."""
    for key, value in CLIENT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    try:
        import mlflow
    except ImportError as exc:
        raise ImportError(f"the MLflow integration needs MLflow: {_INSTALL}") from exc
    return mlflow


def _client(tracking_uri: str | None) -> Any:
    """An ``MlflowClient`` of ``tracking_uri`` (its tracking server and prompt registry); None:
    MLflow's own default (``MLFLOW_TRACKING_URI``)."""
    return _mlflow().MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)


def shown_uri(tracking_uri: str | None) -> str:
    """``tracking_uri`` as messages show it: credentials masked; MLflow's default when None."""
    return redact_url(tracking_uri) if tracking_uri else "MLflow's default (MLFLOW_TRACKING_URI)"


@contextmanager
def _server(tracking_uri: str | None, doing: str) -> Iterator[None]:
    """Translate what the client raises while ``doing`` into one TrackingError line."""
    try:
        yield
    except TrackingError:
        raise
    except Exception as exc:  # MlflowException, requests' errors: the client's boundary
        text = " ".join(str(exc).split())
        if "Max retries exceeded" in text or "Connection refused" in text:
            text = "cannot connect (is the server running? is the URI right?)"
        raise TrackingError(
            f"MLflow tracking server {shown_uri(tracking_uri)}: {doing}: {text[:300]}"
        ) from exc


# --- reading human feedback ------------------------------------------------------------------------


@dataclass(frozen=True)
class MlflowFeedback:
    """One ``Feedback`` assessment as read: ``value`` (None when the judge's call failed, then
    ``error`` says why), ``rationale``, the source's id (``source_id``: the annotator, or the
    judge's model), its ``assessment_id``, whether it is ``valid`` (not overridden) and when it
    was created (``created_ms``, milliseconds since the epoch)."""

    value: Any
    rationale: str | None
    source_id: str | None
    assessment_id: str
    valid: bool
    created_ms: int
    error: str | None = None


@dataclass(frozen=True)
class TraceFeedback:
    """A trace that carries feedback of the name asked for: its id, when it started
    (``request_ms``, milliseconds since the epoch), the root span's ``inputs``
    and ``outputs`` (as MLflow parsed them: a mapping, or one value), its expectations (name →
    value) and the feedback of that name by source, each list oldest first."""

    trace_id: str
    request_ms: int
    inputs: Any
    outputs: Any
    expectations: dict[str, Any]
    judge: list[MlflowFeedback] = field(default_factory=list)
    human: list[MlflowFeedback] = field(default_factory=list)


def _same_name(a: str, b: str) -> bool:
    """MLflow's judge alignment matches assessment names with case and outer spaces ignored."""
    return a.lower().strip() == b.lower().strip()


def _feedback(assessment: Any) -> MlflowFeedback:
    error = getattr(assessment, "error", None)
    message = None
    if error is not None:
        message = getattr(error, "error_message", None) or getattr(error, "error_code", None) or str(error)
    return MlflowFeedback(
        value=assessment.value,
        rationale=assessment.rationale or None,
        source_id=assessment.source.source_id or None,
        assessment_id=assessment.assessment_id,
        valid=assessment.valid is not False,
        created_ms=int(assessment.create_time_ms or 0),
        error=message,
    )


def _trace_feedback(trace: Any, name: str) -> TraceFeedback | None:
    """The trace's feedback of ``name`` by source; None when it carries none."""
    from mlflow.entities import AssessmentSourceType, Expectation, Feedback

    judge: list[MlflowFeedback] = []
    human: list[MlflowFeedback] = []
    expectations: dict[str, Any] = {}
    for a in sorted(trace.info.assessments or [], key=lambda a: a.create_time_ms or 0):
        if isinstance(a, Expectation) and a.valid is not False:
            expectations[a.name] = a.value
        if not isinstance(a, Feedback) or not _same_name(a.name, name):
            continue
        kind = a.source.source_type
        if kind == AssessmentSourceType.LLM_JUDGE:
            judge.append(_feedback(a))
        elif kind == AssessmentSourceType.HUMAN and a.valid is not False:
            human.append(_feedback(a))
    if not judge and not human:
        return None
    root = next((s for s in trace.data.spans if s.parent_id is None), None)
    return TraceFeedback(
        trace_id=trace.info.trace_id,
        request_ms=int(trace.info.request_time or 0),
        inputs=None if root is None else root.inputs,
        outputs=None if root is None else root.outputs,
        expectations=expectations,
        judge=judge,
        human=human,
    )


def read_feedback(
    tracking_uri: str | None, experiment: str, name: str, *, max_traces: int | None = None
) -> tuple[list[TraceFeedback], int]:
    """The traces of ``experiment`` (its name) that carry feedback named ``name``, oldest first,
    and how many traces were searched (at most ``max_traces``, all when None).

    Raises:
        TrackingError: the server cannot be reached or refuses, or has no such experiment
            (the message lists the experiments it has).
        ImportError: MLflow is not installed (names the extra).
    """
    client = _client(tracking_uri)
    with _server(tracking_uri, f"reading experiment {experiment!r}"):
        found = client.get_experiment_by_name(experiment)
        if found is None:
            names = sorted(e.name for e in client.search_experiments(max_results=50))
            raise TrackingError(
                f"MLflow tracking server {shown_uri(tracking_uri)}: no experiment named {experiment!r}"
                f" (experiments: {names})"
            )
        traces: list[TraceFeedback] = []
        searched, token = 0, None
        while max_traces is None or searched < max_traces:
            page_size = 100 if max_traces is None else min(100, max_traces - searched)
            page = client.search_traces(
                locations=[found.experiment_id],
                max_results=page_size,
                order_by=["timestamp_ms ASC"],
                page_token=token,
            )
            searched += len(page)
            traces.extend(t for t in (_trace_feedback(trace, name) for trace in page) if t is not None)
            token = page.token
            if not token or not page:
                break
    # Traces logged in one millisecond tie on the server's order: the id settles it, every time.
    return sorted(traces, key=lambda t: (t.request_ms, t.trace_id)), searched
