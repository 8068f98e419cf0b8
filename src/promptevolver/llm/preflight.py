"""Preflight: one cheap call before a run, so a broken LLM setup fails in seconds with one line.

:func:`preflight` asks each client to check its server (``await client.preflight()``; a client
without that method, such as the simulated judge, needs no check). The OpenAI client's check is
``GET /models`` (or, where a server has no such endpoint, a 1-token chat call) and raises a
:class:`~promptevolver.errors.PermanentLLMError` whose message is one of the lines made here:

* ``cannot connect to http://127.0.0.1:9/v1 (connection refused)``
* ``the server at http://... rejected the API key from OPENAI_API_KEY (401)``
* ``model 'x' not found at http://...; the server offers: a, b``

Messages carry redacted URLs only (:func:`~promptevolver.llm.redaction.redact_url`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

__all__ = [
    "auth_message",
    "cause_of_connection_error",
    "model_ids",
    "model_not_found_message",
    "preflight",
    "unlisted_model_message",
    "unreachable_message",
]

#: How many model names a "not found" message lists before "and N more".
SHOWN_MODELS = 10


async def preflight(*clients: Any) -> None:
    """Check each distinct client (None and repeated ones skipped) with its ``preflight()``.

    Raises:
        PermanentLLMError: a server is unreachable, refuses the key or lacks the model (the
            message is one line naming the cause).
    """
    seen: list[Any] = []
    for client in clients:
        if client is None or any(client is other for other in seen):
            continue
        seen.append(client)
        check = getattr(client, "preflight", None)
        if check is not None:
            await check()


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


def unreachable_message(url: str, reason: str) -> str:
    """``cannot connect to URL (reason)``; ``url`` must be redacted already."""
    return f"cannot connect to {url} ({reason})"


def auth_message(url: str, key_source: str, status: int, server_text: str) -> str:
    """The line for a 401/403 answer; ``server_text`` (redacted) is quoted after a 403 only, where
    it tells permission and quota problems apart."""
    if status == 401:
        return f"the server at {url} rejected the API key from {key_source} (401)"
    return f"the server at {url} refused access with the API key from {key_source} (403): {server_text}"


def model_not_found_message(model: str, url: str, offered: Iterable[str] | None) -> str:
    """``model 'x' not found at URL; the server offers: a, b`` (at most :data:`SHOWN_MODELS`)."""
    names = sorted(set(offered or ()))
    if not names:
        return f"model {model!r} not found at {url} (the server lists no models)"
    shown = ", ".join(names[:SHOWN_MODELS])
    more = f" and {len(names) - SHOWN_MODELS} more" if len(names) > SHOWN_MODELS else ""
    return f"model {model!r} not found at {url}; the server offers: {shown}{more}"


def unlisted_model_message(model: str, url: str, offered: Iterable[str]) -> str:
    """The warning for a model the server does not list but answered for anyway (llama.cpp and
    LM Studio with one model loaded serve any name with the model they have)."""
    names = sorted(set(offered))
    shown = ", ".join(names[:SHOWN_MODELS]) + (" ..." if len(names) > SHOWN_MODELS else "")
    return (
        f"model {model!r} is not among the models {url} lists ({shown}), but the server answered a "
        "test call for it: it may be serving another model under that name"
    )


def model_ids(body: bytes) -> list[str] | None:
    """Model ids of a ``GET /models`` answer (``{"data": [{"id": ...}, ...]}``, as OpenAI, vLLM,
    Ollama, LM Studio and llama.cpp answer), or None when ``body`` is not such a list."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    return [str(e["id"]) for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
