"""The ``openai`` SDK's errors, translated into :mod:`promptevolver.errors` at the boundary.

=========================================================  =========================================
SDK error                                                  raised as
=========================================================  =========================================
``RateLimitError`` (429)                                   ``TransientLLMError(status=429,
                                                           retry_after=<Retry-After seconds>)``
``APIStatusError`` with status 408, 409 or ≥ 500           ``TransientLLMError(status=...)``
(:func:`promptevolver.llm._retry.transient_status`)
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
import html.parser
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import openai

from promptevolver.errors import ContextLengthExceededError, LLMError, PermanentLLMError, TransientLLMError
from promptevolver.llm._retry import transient_status
from promptevolver.llm.openai._negotiation import Negotiation, rejects_response_format

__all__ = [
    "MESSAGE_CHARS",
    "body_text",
    "cause_of_connection_error",
    "error_text",
    "names_missing_model",
    "retry_after_s",
    "server_message",
    "translate",
]

#: Longest server message quoted in an error, in characters.
MESSAGE_CHARS = 300
#: Words of "unknown model" errors: OpenAI and vLLM "does not exist", Ollama and LM Studio "not
#: found", LM Studio "Invalid model identifier".
_MODEL_MISSING_WORDS = ("not found", "does not exist", "invalid model", "unknown model")


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


# -- what the server says: error bodies of every shape ----------------------------------------


def server_message(body: str) -> str:
    """The server's own message in an error ``body``, for people: ``error.message``, a string
    ``error``, ``detail`` or ``message``; else the body itself. Whitespace collapsed, at most
    :data:`MESSAGE_CHARS` characters. Not redacted: pass it through
    :func:`~promptevolver.llm._redaction.redact_text` before showing it."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    message: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        message = message or data.get("detail") or data.get("message")
    text = " ".join(str(message if message else _html_text(body)).split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


class _Text(html.parser.HTMLParser):
    """The text of an HTML page, its head (title, scripts, styles) left out."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._skip += tag in ("head", "script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("head", "script", "style") and self._skip > 0

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def _html_text(body: str) -> str:
    """``body`` itself, or its text when it is an HTML page (what a web server that is not an
    LLM server answers: "Error response Error code: 501 Message: Unsupported method ('POST')")."""
    if not body.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        return body
    parser = _Text()
    parser.feed(body)
    parser.close()
    return " ".join(parser.parts)


def names_missing_model(text: str, model: str) -> bool:
    """Whether an error ``text`` says that ``model`` is unknown (OpenAI's ``model_not_found``
    code, or the model's name with a "not found"-like phrase)."""
    lower = text.lower()
    if "model_not_found" in lower:
        return True
    return model.lower() in lower and any(word in lower for word in _MODEL_MISSING_WORDS)


# -- why a connection failed -----------------------------------------------------------------


def cause_of_connection_error(exc: BaseException) -> str:
    """A short reason for a failed connection, e.g. ``connection refused`` or ``name or service not
    known``, from the first ``OSError`` with an errno chained under the SDK's and httpx's
    exceptions; else the innermost message."""
    reason = ""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and (current.strerror or current.errno):
            return _lower_first(_os_reason(current))
        text = str(current).strip()
        reason = text or reason
        current = current.__cause__ or current.__context__
    return _lower_first(reason) if reason else "no answer"


def _os_reason(exc: OSError) -> str:
    # asyncio's ConnectionRefusedError has strerror "Connect call failed (...)": the errno says more.
    if isinstance(exc.errno, int) and exc.errno > 0:
        return os.strerror(exc.errno)
    return str(exc.strerror)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]
