"""The ``openai`` SDK's errors, translated into :mod:`promptevolver.errors` at the boundary.

=========================================================  =========================================
SDK error                                                  raised as
=========================================================  =========================================
``RateLimitError`` (429)                                   ``TransientLLMError(status=429,
                                                           retry_after=<Retry-After seconds>)``
``APIStatusError`` with status 408, 409 or ≥ 500           ``TransientLLMError(status=...)``
(:func:`promptevolver.llm.retry.transient_status`)
``APITimeoutError``, ``APIConnectionError``                ``TransientLLMError(status=None)``
any other ``APIStatusError`` (400, 401, 403, 404, 422...)  ``PermanentLLMError(status=...)``
a refused ``response_format`` with nothing left to try     ``PermanentLLMError(status=...)`` with a
                                                           hint naming the setting
=========================================================  =========================================

Messages are redacted by the caller's ``redact`` (the API key) and name the call by its
``where`` (whose ``base_url`` is redacted already).
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Callable, Mapping

import openai

from promptevolver.errors import ContextLengthExceededError, LLMError, PermanentLLMError, TransientLLMError
from promptevolver.llm.error_bodies import server_message
from promptevolver.llm.negotiation import Negotiation, rejects_response_format
from promptevolver.llm.preflight import cause_of_connection_error
from promptevolver.llm.retry import transient_status

__all__ = ["body_text", "error_text", "retry_after_s", "translate"]


def translate(
    exc: openai.OpenAIError,
    *,
    where: str,
    redact: Callable[[str], str],
    timeout_s: float,
    negotiation: Negotiation | None = None,
) -> LLMError:
    """Our error for the SDK error ``exc`` (see the table above).

    Args:
        where: the call's description, the start of the message (shown as is).
        redact: removes secrets from what the server or SDK said.
        timeout_s: the request timeout in seconds, named after a timeout.
        negotiation: when the request carried a ``response_format``, the client's negotiation,
            named in a hint if the server refused it.
    """
    text = f"{where}: " + redact(_detail(exc))
    if isinstance(exc, openai.APITimeoutError):
        return TransientLLMError(f"{text} (timeout after {timeout_s:g} s)")
    if isinstance(exc, openai.APIConnectionError):  # the OS's reason: "Connection error (connection refused)"
        return TransientLLMError(f"{text.rstrip('.')} ({redact(cause_of_connection_error(exc))})")
    if not isinstance(exc, openai.APIStatusError):
        return PermanentLLMError(text)
    status = exc.status_code
    if negotiation is not None and rejects_response_format(status, error_text(exc)):
        return PermanentLLMError(f"{text}; {_format_hint(negotiation)}", status=status)
    if status == 400 and exceeds_context(error_text(exc)):
        return ContextLengthExceededError(text, status=status)
    if transient_status(status):
        return TransientLLMError(text, status=status, retry_after=retry_after_s(exc.response.headers))
    return PermanentLLMError(text, status=status)


#: What servers say when a prompt is longer than the context window: OpenAI's error code, its
#: message ("This model's maximum context length is …"), vLLM's and llama.cpp's wording.
_CONTEXT_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "exceeds the available context",
)


def exceeds_context(text: str) -> bool:
    """Whether an HTTP 400 error text says the prompt does not fit the model's context window."""
    low = text.lower()
    return any(word in low for word in _CONTEXT_WORDS)


def _detail(exc: openai.OpenAIError) -> str:
    """``HTTP <status>: <the server's message>`` for an error answer, else the SDK's message."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {server_message(body_text(exc))}"
    return str(exc)


def _format_hint(negotiation: Negotiation) -> str:
    """What to do about a refused structured-output mode: the setting to change."""
    return (
        f"the server refuses structured output {negotiation.mode!r}"
        f" (llm.structured_output: {negotiation.requested}; 'auto' negotiates a mode it accepts)"
    )


def error_text(exc: openai.APIStatusError) -> str:
    """Everything an error answer says, for recognising refusals: the SDK's message and the raw
    body (which holds what a non-OpenAI error shape says, e.g. LM Studio's ``{"error": "..."}``)."""
    return f"{exc} {body_text(exc)}"


def body_text(exc: openai.APIStatusError) -> str:
    """The raw body of an error answer, or ``""`` when it cannot be read."""
    try:
        return exc.response.text
    except Exception:  # a streamed or closed response: nothing more to read
        return ""


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date), or None."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        seconds: float | None
        try:
            seconds = float(value) / divisor
        except ValueError:
            seconds = _http_date_delay(value) if divisor == 1.0 else None
        if seconds is not None and math.isfinite(seconds):
            return max(seconds, 0.0)
    return None


def _http_date_delay(value: str) -> float | None:
    """Seconds from now until the HTTP date ``value`` (negative when past), or None if unreadable."""
    try:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())
    except (TypeError, ValueError, OverflowError):
        return None
