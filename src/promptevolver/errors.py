"""The exception tree of promptevolver.

::

    PromptEvolverError                 root: catch this to catch everything of ours
    ├── AnnotationError                malformed annotation file or sample (file, sample, field)
    │   ├── AnnotationKeyError         unknown metric, field or stratify key (also a KeyError)
    │   ├── AnnotationFileNotFoundError  no such annotation file (also a FileNotFoundError)
    │   └── InsufficientDataError      too few usable annotations to optimize
    ├── ConfigError                    invalid config (file, key path)
    │   └── OverrideError              a bad ``--set`` override (config/_overrides.py)
    ├── CacheError                     the response cache file cannot be used (path)
    ├── RunDirError                    a run directory's file is missing, unreadable or of another format
    │   └── CheckpointError            a checkpoint is missing, unreadable or of another run
    ├── LLMError                       an LLM call could not be completed
    │   ├── NotSentError               not sent by the run's decision: never a failed call (usage.failures)
    │   │   ├── BudgetSpentError       the budget is spent (optimizers/strategies/_budget.py)
    │   │   └── StoppedError           the run is stopping (optimizers/_run.py)
    │   ├── TransientLLMError          retryable: 429, 5xx, timeout, connection (status, retry_after)
    │   ├── PermanentLLMError          not retryable: 4xx other than 429, auth
    │   │   ├── ContextLengthExceededError  the prompt does not fit the model's context window
    │   │   ├── AnswerTooLongError     an answer far beyond the requested tokens (cause ``too long``)
    │   │   └── RefusalError           the model refused to answer (its ``refusal``; cause ``refused``)
    │   └── OutputParseError           the model's text is not the requested JSON (raw text kept)
    ├── LLMUnusableError               too many evaluations failed: the run stops (cause, server message)
    ├── TrackingError                  an MLflow tracking server cannot be reached or refused a request
    ├── ReviewError                    a label the review queue refuses (runs/_review_queue.py)
    └── BudgetExceededError            a call would exceed the configured budget

The subclasses named with a module are defined beside what raises them; every other class is
here. Provider errors (the ``openai`` SDK's) are translated into these in ``llm/openai/_errors.py``, at
the boundary of the OpenAI client (``llm/openai/``, the only package that imports the SDK).
Messages never contain API keys.
"""

from __future__ import annotations

import errno
from pathlib import Path

__all__ = [
    "AnnotationError",
    "AnswerTooLongError",
    "AnnotationFileNotFoundError",
    "AnnotationKeyError",
    "BudgetExceededError",
    "CacheError",
    "CheckpointError",
    "ConfigError",
    "ContextLengthExceededError",
    "InsufficientDataError",
    "LLMUnusableError",
    "LLMError",
    "NotSentError",
    "OutputParseError",
    "PermanentLLMError",
    "PromptEvolverError",
    "RefusalError",
    "RunDirError",
    "TrackingError",
    "TransientLLMError",
]


class PromptEvolverError(Exception):
    """Root of every error raised by promptevolver."""


class AnnotationError(PromptEvolverError, ValueError):
    """A malformed annotation file or sample.

    Attributes:
        path: the file, when the data came from one.
        sample_index: 0-based index of the offending sample, when one is at fault.
        metric: the metric name the sample belongs to, when known.
        field: dotted field path inside the sample, e.g. ``prompts.x.prompt_output``.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        sample_index: int | None = None,
        metric: str | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.sample_index = sample_index
        self.metric = metric
        self.field = field
        where = []
        if self.path is not None:
            where.append(f"file {self.path}")
        if metric is not None:
            where.append(f"metric {metric!r}")
        if sample_index is not None:
            where.append(f"sample {sample_index}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class AnnotationKeyError(AnnotationError, KeyError):
    """An unknown metric name, sample field or stratify key; the message names it and what exists.

    Also a ``KeyError``, so ``except KeyError`` written against Ragas keeps working.
    """

    def __str__(self) -> str:  # KeyError's own __str__ would quote the message
        return str(self.args[0]) if self.args else ""


class AnnotationFileNotFoundError(AnnotationError, FileNotFoundError):
    """An annotation file that does not exist (names the path).

    Also a ``FileNotFoundError`` (``errno`` ENOENT, ``filename`` the path), so ``except
    FileNotFoundError`` written against Ragas keeps working, and ``except AnnotationError``
    (a ``ValueError``) catches it with every other bad-input error of ours.
    """

    def __init__(self, message: str, *, path: str | Path) -> None:
        super().__init__(message, path=path)
        self.errno, self.filename = errno.ENOENT, str(path)

    def __str__(self) -> str:  # OSError's own __str__ would print "[Errno 2] None: ..."
        return str(self.args[0]) if self.args else ""


class InsufficientDataError(AnnotationError):
    """Fewer usable annotations than the optimizer needs."""


class ConfigError(PromptEvolverError, ValueError):
    """An invalid configuration; the message names the file and the key path."""


class CacheError(PromptEvolverError):
    """The response cache file cannot be used (raised at open, never mid-run).

    Attributes:
        path: the cache file.
    """

    def __init__(self, message: str, *, path: str | Path):
        self.path = str(path)
        super().__init__(f"response cache {self.path}: {message}")


class RunDirError(PromptEvolverError):
    """A file of a run directory is missing, unreadable, or of another format version (names the file)."""


class CheckpointError(RunDirError):
    """A checkpoint is missing, unreadable or belongs to another run."""


class TrackingError(PromptEvolverError):
    """An MLflow tracking server (``import mlflow``, ``export --to mlflow``) could not be reached,
    refused a request, or does not hold what was asked for (an experiment, a prompt). The
    message names the server's URI with any credentials masked."""


class LLMError(PromptEvolverError):
    """An LLM call could not be completed.

    :attr:`cause` names the kind of failure for counting (``usage.failures_by_cause``):
    ``http <status>``, ``transport`` (timeout, refused or dropped connection), ``parse`` (an
    answer that is not the requested JSON) or ``llm`` (anything else). :attr:`retries`: the
    re-sends made before the call gave up (set by the client; 0 otherwise).
    """

    retries: int = 0
    #: Whether the call counts as a failed call (``usage.failures``); False for a prompt the
    #: model's context window refused, which the caller splits and sends again.
    counts_as_failure: bool = True

    @property
    def cause(self) -> str:
        status = getattr(self, "status", None)
        return f"http {status}" if status is not None else "llm"


class NotSentError(LLMError):
    """A request the run decided not to send (its budget is spent, or the run is stopping): no
    call was made, so it is never counted as a failed call (``usage.failures``), in the session
    or after a resume."""


class TransientLLMError(LLMError):
    """A retryable failure: rate limit (429), server error (5xx), timeout or lost connection.

    Attributes:
        status: HTTP status code, or None for timeouts and connection errors.
        retry_after: seconds the server asked us to wait (``Retry-After``), or None.
    """

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def cause(self) -> str:
        return f"http {self.status}" if self.status is not None else "transport"


class PermanentLLMError(LLMError):
    """A failure that retrying will not fix (bad request, authentication, unknown model)."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class ContextLengthExceededError(PermanentLLMError):
    """The prompt is longer than the model's context window (OpenAI's HTTP 400
    ``context_length_exceeded``). Not a failed call: a caller that can make its prompt smaller
    (the distillation stage splits its batch of corrections) sends again; retrying as is would fail
    the same way. Cause ``context_length``."""

    counts_as_failure = False

    @property
    def cause(self) -> str:
        return "context_length"


class AnswerTooLongError(PermanentLLMError):
    """An answer (or its response body) far beyond the completion tokens requested: it is cut off
    unread and the call fails, cause ``too long``, rather than kept whole in memory, checkpoints
    and journals (see :mod:`promptevolver.llm.openai._wire` for the bounds)."""

    @property
    def cause(self) -> str:
        return "too long"


class RefusalError(PermanentLLMError):
    """The model declined to answer: its message holds a ``refusal`` (OpenAI's structured
    outputs) instead of content. A failed call with its words, cause ``refused``; not retried
    (the same request is refused again) and never read as an unparseable answer.

    Attributes:
        refusal: what the model said (cut to 200 characters).
    """

    def __init__(self, message: str, *, refusal: str):
        super().__init__(message)
        self.refusal = refusal

    @property
    def cause(self) -> str:
        return "refused"


class OutputParseError(LLMError):
    """The model's answer is not valid JSON for the requested schema, even after repair.

    Attributes:
        raw: the model's raw text.
    """

    def __init__(self, message: str, *, raw: str):
        super().__init__(message)
        self.raw = raw

    @property
    def cause(self) -> str:
        return "parse"


class LLMUnusableError(PromptEvolverError):
    """The LLM failed on too many evaluations for the run to go on (``max_failure_rate``).

    Attributes:
        cause: the dominant failure cause (``http 500``, ``transport``, ``parse``...).
        failures: evaluations that failed; attempted: evaluations attempted in that step.
    """

    def __init__(self, message: str, *, cause: str, failures: int, attempted: int):
        super().__init__(message)
        self.cause = cause
        self.failures = failures
        self.attempted = attempted


class BudgetExceededError(PromptEvolverError):
    """The next LLM call would exceed the run's budget (calls or tokens)."""
