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

import contextlib
import logging
import os
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from promptevolver.errors import TrackingError
from promptevolver.llm import redact_url

if TYPE_CHECKING:
    from promptevolver.optimizers.events import Event

__all__ = [
    "LoggedJudge",
    "MlflowFeedback",
    "MlflowTracker",
    "TraceFeedback",
    "log_judge",
    "read_feedback",
    "run_figures",
    "shown_uri",
]

_INSTALL = 'pip install "promptevolver[mlflow]"'
_log = logging.getLogger("promptevolver")


#: MLflow client settings this integration gives a default (the environment's own value wins):
#: MLflow's client retries a request 7 times with backoff (minutes against a dead server) and waits
#: 120 s for an answer; an import or export should fail in seconds with one line; telemetry
#: stays off as for Ragas; a run's end prints no link on our stdout.
CLIENT_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",  # stdout is the command's (its own lines, exports)
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


@contextlib.contextmanager
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


# --- figures ---------------------------------------------------------------------------------------


def run_figures(result: Mapping[str, Any]) -> dict[str, float]:
    """A run's figures as MLflow metrics, read from its ``result.json`` (the one record of them):
    the seed's and the chosen candidate's train and validation agreement under the loss's name
    (``seed_validation_accuracy``, ``chosen_train_f1``, ``chosen_validation_mse``, ...), the LLM
    calls and tokens, the cost in USD when the run had prices, and its seconds. A figure the run
    did not measure (``n/a``: e.g. a cross-fitted choice's validation) is left out, never 0."""
    from promptevolver.evaluation import loss_label

    name = loss_label(result.get("loss") or {}).lower().replace(" ", "_")  # accuracy, f1, mse...
    figures: dict[str, float] = {}
    for who, as_ in (("seed", "seed"), ("best", "chosen")):
        for split, value in (result.get("scores", {}).get(who) or {}).items():
            if isinstance(value, int | float) and value == value:
                figures[f"{as_}_{split}_{name}"] = float(value)
    usage = result.get("usage") or {}
    calls = usage.get("llm_calls") or {}
    for key in ("judge", "meta"):
        if isinstance(calls.get(key), int):
            figures[f"{key}_calls"] = float(calls[key])
    for key in ("prompt_tokens", "completion_tokens", "retries", "failures"):
        if isinstance(usage.get(key), int):
            figures[key] = float(usage[key])
    if usage.get("cost_usd"):
        figures["cost_usd"] = float(usage["cost_usd"])
    if isinstance(result.get("duration_s"), int | float):
        figures["duration_s"] = float(result["duration_s"])
    return figures


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested settings as MLflow params: dotted keys, values as text (JSON for lists), cut at
    MLflow's 6000 characters with a note saying so."""
    import json

    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flat(value, name + "."))
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out[name] = text if len(text) <= 6000 else text[:5950] + " ... (cut: see the run's config.yaml)"
    return out


# --- tracking a run as it goes ---------------------------------------------------------------------

_FINISH = object()


class MlflowTracker:
    """A run's callback (:mod:`promptevolver.optimizers.events`) that logs it to an MLflow run as it
    goes, without ever blocking or breaking it.

    Logged: ``params`` (the run's config, flattened: ``optimizer.generations``, ``llm.model``,
    ...) when it starts; the LLM calls, tokens and cost so far after answers (``llm_calls``,
    ``prompt_tokens``, ``completion_tokens``, ``cost_usd``; step = calls); each pipeline stage's
    figures when it ends (``<stage>/judge_calls``, ``/meta_calls``, ``/prompt_tokens``,
    ``/completion_tokens``, ``/seconds``, ``/chosen_validation`` the agreement of the candidate it
    chose on the samples it was verified on); each generation's ``search/best_train`` and
    ``search/mean_train`` (step = generation); and at :meth:`finish` the run's final figures
    (:func:`run_figures`), tags and files.

    Every call to the server happens on a thread of the tracker's own; a callback only puts the
    event's figures on a queue (microseconds). A server that cannot be reached or fails a request
    gives one warning and the tracker stops logging; one still busy when the run ends gets
    ``timeout_s`` seconds to catch up, then one warning naming what was not logged. The run's own
    files hold every figure either way. ``run_id`` is the MLflow run's id once it exists.

    Raises:
        ImportError: MLflow is not installed (at construction, before the run starts).
    """

    def __init__(
        self,
        *,
        tracking_uri: str | None = None,
        experiment: str = "promptevolver",
        run_name: str | None = None,
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        _mlflow()
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_name = run_name
        self.tags = dict(tags or {})
        self.timeout_s = timeout_s
        self.run_id: str | None = None
        self._warn = warn or (lambda message: warnings.warn(message, stacklevel=3))
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._problem: str | None = None
        self._warned = False
        self._finished = False
        self._validation: dict[int, float] = {}
        self._queue.put(("params", _flat(params or {})))
        self._thread = threading.Thread(target=self._work, name="promptevolver-mlflow", daemon=True)
        self._thread.start()

    # --- the run's side (its event loop's thread): never waits on the server -----------------------
    def __call__(self, event: Event) -> None:
        self._say_problem()
        if self._problem is not None:
            return
        data, now = event.data, int(time.time() * 1000)
        figures: dict[str, Any]
        if event.kind == "llm_call":
            figures = {k: data[k] for k in ("prompt_tokens", "completion_tokens") if k in data}
            if data.get("cost_usd"):  # a run without prices costs n/a, never 0.0
                figures["cost_usd"] = data["cost_usd"]
            self._queue.put(("calls", {"llm_calls": data["calls"], **figures}, data["calls"], now))
        elif event.kind == "candidate_evaluated" and data.get("split") == "validation":
            if data.get("score") is not None:
                self._validation[data["candidate"]] = data["score"]
        elif event.kind == "stage_end":
            stage, record = data["stage"], data.get("figures") or {}
            keys = ("judge_calls", "meta_calls", "prompt_tokens", "completion_tokens", "seconds")
            figures = {f"{stage}/{k}": record[k] for k in keys if isinstance(record.get(k), int | float)}
            if data.get("chosen") in self._validation:
                figures[f"{stage}/chosen_validation"] = self._validation[data["chosen"]]
            self._queue.put(("metrics", figures, 0, now))
        elif event.kind == "generation_end":
            figures = {
                f"search/{k}": data[k] for k in ("best_train", "mean_train") if data.get(k) is not None
            }
            self._queue.put(("metrics", figures, event.generation, now))
        elif event.kind == "stop":
            self._queue.put(("tags", {"promptevolver.stop_reason": str(data.get("reason"))}))

    def finish(
        self,
        *,
        figures: Mapping[str, float] | None = None,
        tags: Mapping[str, str] | None = None,
        artifacts: list[Path] | None = None,
        status: str = "FINISHED",
        timeout_s: float | None = None,
    ) -> None:
        """Log the final ``figures``, ``tags`` and ``artifacts`` (files), end the MLflow run with
        ``status`` (``FINISHED``, ``FAILED``, ``KILLED``), and wait at most ``timeout_s`` seconds
        (default: the tracker's) for the server to take it all (then one warning). Called once,
        at the end of the run."""
        if self._finished:
            return
        self._finished = True
        if self._problem is None:
            now = int(time.time() * 1000)
            self._queue.put(
                ("finish", dict(figures or {}), dict(tags or {}), list(artifacts or []), status, now)
            )
            self._queue.put(_FINISH)
            wait = self.timeout_s if timeout_s is None else timeout_s
            self._thread.join(wait)
            if self._thread.is_alive() and self._problem is None:
                self._problem = (
                    f"did not take the run's figures within {wait:g} s "
                    f"(tracking.mlflow.timeout_s); about {self._queue.qsize() + 1} updates, the final "
                    "figures among them, were not logged"
                )
        self._say_problem()

    def _say_problem(self) -> None:
        """The one warning, given on the run's thread (never on the tracker's)."""
        if self._problem is not None and not self._warned:
            self._warned = True
            self._warn(
                f"MLflow tracking at {shown_uri(self.tracking_uri)}: {self._problem}; the run goes on "
                "without it (its run directory holds every figure)"
            )

    # --- the tracker's thread: every call to the server ----------------------------------------------
    def _work(self) -> None:
        try:
            client = _client(self.tracking_uri)
            found = client.get_experiment_by_name(self.experiment)
            experiment_id = found.experiment_id if found else client.create_experiment(self.experiment)
            run = client.create_run(experiment_id, run_name=self.run_name, tags=self.tags)
            self.run_id = run.info.run_id
            while True:
                items = [self._queue.get()]
                while True:
                    try:
                        items.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                if self._log(client, items):
                    return
        except Exception as exc:  # the client's boundary: a dead or failing server is a warning
            if self._problem is None and not self._warned:
                text = " ".join(str(exc).split())
                if "Max retries exceeded" in text or "Connection refused" in text:
                    text = "cannot connect (is the server running? is the URI right?)"
                self._problem = text[:300]

    def _log(self, client: Any, items: list[Any]) -> bool:
        """Log one drain of the queue in as few requests as it takes; True at the end of the run."""
        from mlflow.entities import Metric, Param, RunTag

        run_id = self.run_id
        metrics: list[Any] = []
        last_calls = None
        ending = False
        for item in items:
            if item is _FINISH:
                ending = True
                continue
            kind = item[0]
            if kind == "params":
                params = [Param(k, v) for k, v in item[1].items()]
                for start in range(0, len(params), 100):
                    client.log_batch(run_id, params=params[start : start + 100])
            elif kind == "calls":
                last_calls = item  # cumulative counters: the latest point says it all
            elif kind == "metrics":
                metrics += [Metric(k, float(v), item[3], item[2]) for k, v in item[1].items()]
            elif kind == "tags":
                client.log_batch(run_id, tags=[RunTag(k, v) for k, v in item[1].items()])
            elif kind == "finish":
                _, figures, tags, artifacts, status, now = item
                metrics += [Metric(k, float(v), now, 0) for k, v in figures.items()]
                if tags:
                    client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        if last_calls is not None:
            metrics += [Metric(k, float(v), last_calls[3], last_calls[2]) for k, v in last_calls[1].items()]
        for start in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=metrics[start : start + 1000])
        for item in items:
            if item is not _FINISH and item[0] == "finish":
                for path in item[3]:
                    client.log_artifact(run_id, str(path))
                client.set_terminated(run_id, status=item[4])
        return ending


# --- the chosen judge out --------------------------------------------------------------------------


@dataclass(frozen=True)
class LoggedJudge:
    """What :func:`log_judge` made: the MLflow run's id, its experiment's id, and each prompt's
    name → the version registered."""

    run_id: str
    experiment_id: str
    versions: dict[str, int]


def log_judge(
    *,
    tracking_uri: str | None,
    experiment: str,
    run_name: str,
    prompts: Mapping[str, str],
    commit_message: str,
    prompt_tags: Mapping[str, str],
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    run_tags: Mapping[str, str],
    files: list[Path],
    texts: Mapping[str, str],
) -> LoggedJudge:
    """Log an MLflow run of ``experiment`` (created when absent) holding ``params`` (flattened),
    ``metrics``, ``run_tags``, ``files`` and ``texts`` (artifact name → text), then register each
    of ``prompts`` (prompt name → template) as a new version in the prompt registry with
    ``commit_message`` and ``prompt_tags`` (plus ``promptevolver.mlflow_run``: the run's id and
    ``promptevolver.chosen_judge``: ``runs:/<run id>/<the first text's name>``), each linked to the
    run. The run ends ``FINISHED``, or ``FAILED`` when a step fails.

    Raises:
        TrackingError: the server cannot be reached or refuses a request (credentials masked).
        ImportError: MLflow is not installed.
    """
    _mlflow()  # MLflow missing: the one line naming the extra, before any other import of it
    from mlflow.entities import Metric, Param, RunTag

    client = _client(tracking_uri)
    with _server(tracking_uri, f"logging the chosen judge to experiment {experiment!r}"):
        found = client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else client.create_experiment(experiment)
        run = client.create_run(experiment_id, run_name=run_name, tags=dict(run_tags))
        run_id = run.info.run_id
        try:
            flat = [Param(k, v) for k, v in _flat(params).items()]
            for start in range(0, len(flat), 100):
                client.log_batch(run_id, params=flat[start : start + 100])
            now = int(time.time() * 1000)
            client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()])
            for path in files:
                client.log_artifact(run_id, str(path))
            for name, text in texts.items():
                client.log_text(run_id, text, name)
            tags = {**prompt_tags, "promptevolver.mlflow_run": run_id}
            if texts:
                tags["promptevolver.chosen_judge"] = f"runs:/{run_id}/{next(iter(texts))}"
            versions: dict[str, int] = {}
            for name, template in prompts.items():
                version = client.register_prompt(
                    name=name, template=template, commit_message=commit_message, tags=tags
                )
                with _linking(tracking_uri):
                    client.link_prompt_version_to_run(run_id, version)
                versions[name] = int(version.version)
            client.log_batch(run_id, tags=[RunTag("promptevolver.prompts", json_text(versions))])
        except BaseException:
            with contextlib.suppress(Exception):
                client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id)
    return LoggedJudge(run_id=run_id, experiment_id=experiment_id, versions=versions)


@contextlib.contextmanager
def _linking(tracking_uri: str | None) -> Iterator[None]:
    """MLflow's registry links a prompt version to a run through the *global* tracking store
    (``AbstractStore.link_prompt_version_to_run`` calls ``mlflow.tracking._get_store()``), not the
    client's: with another default it looks the run up elsewhere (and may create ``mlflow.db``
    in the working directory). MLflow's own context manager points the default at ``tracking_uri``
    for the call and restores it after."""
    if tracking_uri is None:
        yield
        return
    try:
        from mlflow.tracking._tracking_service.utils import _use_tracking_uri
    except ImportError:  # pragma: no cover - a later MLflow: its client may link by itself
        yield
        return
    with _use_tracking_uri(tracking_uri):
        yield


def json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)
