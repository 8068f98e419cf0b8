"""Preflight: one cheap call before a run, so a broken LLM setup fails in seconds with one line.

:func:`preflight` asks each client to check its server (``await client.preflight()``; a client
without that method, such as the simulated judge, needs no check). The OpenAI client's check is
``GET /models`` (or, where a server has no such endpoint, a 1-token chat call) and raises a
:class:`~promptevolver.errors.PermanentLLMError` whose message is one line
(:mod:`promptevolver.llm.openai._preflight` makes them):

* ``cannot connect to http://127.0.0.1:9/v1 (connection refused)``
* ``the server at http://... rejected the API key from OPENAI_API_KEY (401)``
* ``model 'x' not found at http://...; the server offers: a, b``

Messages carry redacted URLs only (:func:`~promptevolver.llm._redaction.redact_url`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["preflight"]


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
