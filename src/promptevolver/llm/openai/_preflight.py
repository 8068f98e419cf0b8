"""The preflight of an OpenAI-compatible server: is it reachable, does it take the key, serve the model?

:func:`check_server` makes one cheap call: ``GET /models``; when that endpoint is absent or does
not list the model, a 1-token chat call decides (sent again once with the other token-cap field if
the server refuses the first). Each follows the retry policy (:mod:`promptevolver.llm._retry`): a
timeout (each request has a deadline of :data:`PREFLIGHT_TIMEOUT_S` at most, the whole exchange),
and on the chat call a 429, 408, 409 or 5xx, is retried with backoff up to ``max_attempts``
times; a refused connection, 401, 403, 404 and a 400 left after negotiation are permanent at once.
Failures become one-line
:class:`~promptevolver.errors.PermanentLLMError` messages made by :mod:`promptevolver.llm._preflight`,
with the URL and the server's words redacted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import openai
from openai import AsyncOpenAI

from promptevolver.errors import LLMError, PermanentLLMError
from promptevolver.llm._retry import NOT_SERVED, RetryPolicy, transient_status
from promptevolver.llm.openai._chat import STREAMED, read_bounded
from promptevolver.llm.openai._errors import (
    body_text,
    cause_of_connection_error,
    error_text,
    names_missing_model,
    retry_after_s,
    server_message,
)
from promptevolver.llm.openai._negotiation import Negotiation, TokenParam, rejects_token_param
from promptevolver.llm.openai._wire import CHAT_PATH, MAX_BODY_BYTES, MODELS_PATH

__all__ = [
    "PREFLIGHT_TIMEOUT_S",
    "PreflightTimeout",
    "Server",
    "auth_message",
    "check_server",
    "model_ids",
    "model_not_found_message",
    "unlisted_model_message",
    "unreachable_message",
]

#: How many model names a "not found" message lists before "and N more".
SHOWN_MODELS = 10
#: Upper bound in seconds on each preflight request (the client's ``timeout_s`` if shorter).
PREFLIGHT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Server:
    """What a preflight needs of a client.

    Attributes:
        sdk: the SDK client to call (not shown in ``repr``).
        model: the model name to look for.
        url: ``base_url`` as it may be shown (redacted).
        key_source: where the API key came from, named when the key is refused.
        timeout_s: the client's request timeout in seconds (capped at :data:`PREFLIGHT_TIMEOUT_S`).
        where: the client's description, the start of an unexpected error's message.
        redact: removes secrets from what the server or SDK said (not shown in ``repr``).
        negotiation: the client's negotiation; a refused token field is switched in it.
        policy: the client's retry policy, followed by each preflight request.
        sleep: async sleep (seconds) for the backoff between attempts.
    """

    sdk: AsyncOpenAI = field(repr=False)
    model: str
    url: str
    key_source: str
    timeout_s: float
    where: str
    redact: Callable[[str], str] = field(repr=False)
    negotiation: Negotiation
    policy: RetryPolicy = RetryPolicy()
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)

    @property
    def preflight_timeout_s(self) -> float:
        """Seconds each preflight request may take."""
        return min(self.timeout_s, PREFLIGHT_TIMEOUT_S)


async def check_server(server: Server) -> str | None:
    """Check that ``server`` is reachable, accepts the key and serves the model.

    Returns:
        A warning to give when the server does not list the model but answered a chat call for
        it (it may serve another model under that name); else None.

    Raises:
        PermanentLLMError: one line naming the cause: unreachable server or timeout, key refused
            (401/403), model not found, or any other refusal of the chat call.
    """
    offered = await listed_models(server)
    if offered is not None and server.model in offered:
        return None
    await ping_chat(server, offered)
    return unlisted_model_message(server.model, server.url, offered) if offered else None


async def listed_models(server: Server) -> list[str] | None:
    """The server's model ids, or None when it has no usable model list.

    Raises:
        PermanentLLMError: the server is unreachable, or refuses the key (401/403).
    """

    async def fetch() -> bytes:  # streamed and read bounded: a huge or endless list is no list
        options: Any = {**_options(server), "headers": STREAMED}
        response = await server.sdk.get(MODELS_PATH, cast_to=bytes, options=options)
        body = await read_bounded(response, MAX_BODY_BYTES)
        return b"" if body is None else body

    try:
        body = await _retried(server, fetch, chat=False)
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            raise preflight_error(server, exc) from None
        return None  # no /models here (404, 405, ...) or a broken one: the chat call decides
    except (openai.OpenAIError, PreflightTimeout) as exc:
        raise preflight_error(server, exc) from None
    return model_ids(body)


async def ping_chat(server: Server, offered: list[str] | None) -> None:
    """Send a 1-token chat call; on a refused token field, once more with the other field.

    Args:
        offered: the models the server lists (None: no list), named when the model is not found.

    Raises:
        PermanentLLMError: any failure of the call (see :func:`preflight_error`).
    """
    negotiation = server.negotiation
    params = {
        "model": server.model,
        "messages": [{"role": "user", "content": "Say OK."}],
        negotiation.token_param: 1,
    }
    for _ in range(2):  # a second time only with the other token field
        sent: TokenParam = negotiation.token_param
        try:
            await _retried(
                server,
                lambda: server.sdk.post(CHAT_PATH, cast_to=bytes, body=params, options=_options(server)),
                chat=True,
            )
            return
        except openai.APIStatusError as exc:
            if rejects_token_param(exc.status_code, error_text(exc), sent) and negotiation.switch_token_param(
                sent, exc.status_code
            ):
                params[negotiation.token_param] = params.pop(sent)
                continue
            raise preflight_error(server, exc, offered=offered) from None
        except (openai.OpenAIError, PreflightTimeout) as exc:
            raise preflight_error(server, exc) from None


class PreflightTimeout(Exception):
    """A preflight request got no complete answer within its deadline."""


async def _retried(server: Server, send: Callable[[], Awaitable[bytes]], *, chat: bool) -> bytes:
    """``await send()`` under the deadline, retried as the policy says: timeouts always, and for
    the chat call the transient statuses (for ``GET /models`` any status decides at once)."""

    async def once() -> bytes:
        try:
            return await asyncio.wait_for(send(), server.preflight_timeout_s)
        except TimeoutError:
            raise PreflightTimeout from None

    def transient(exc: BaseException) -> bool:
        if isinstance(exc, PreflightTimeout | openai.APITimeoutError):
            return True
        return chat and isinstance(exc, openai.APIStatusError) and transient_status(exc.status_code)

    def retry_after(exc: BaseException) -> float | None:
        return retry_after_s(exc.response.headers) if isinstance(exc, openai.APIStatusError) else None

    return await server.policy.run(
        once, transient=transient, retry_after=retry_after, sleep=server.sleep, jitter=np.random.default_rng()
    )


def _options(server: Server) -> Any:
    """The SDK request options of a preflight call: a short timeout and no retries."""
    return {"timeout": server.preflight_timeout_s, "max_retries": 0}


def preflight_error(
    server: Server, exc: openai.OpenAIError | PreflightTimeout, *, offered: list[str] | None = None
) -> LLMError:
    """The one-line error for a failed preflight call (messages of :mod:`promptevolver.llm._preflight`)."""
    url = server.url
    attempts = server.policy.max_attempts
    tries = f", {attempts} attempts" if attempts > 1 else ""
    if isinstance(exc, openai.APITimeoutError | PreflightTimeout):
        reason = f"no complete answer within {server.preflight_timeout_s:g} s{tries}"
        return PermanentLLMError(unreachable_message(url, reason))
    if isinstance(exc, openai.APIConnectionError):
        return PermanentLLMError(unreachable_message(url, cause_of_connection_error(exc)))
    if not isinstance(exc, openai.APIStatusError):
        return PermanentLLMError(f"{server.where}: {server.redact(str(exc))}")
    return _refusal(server, exc.status_code, server.redact(server_message(body_text(exc))), offered)


def _refusal(server: Server, status: int, text: str, offered: list[str] | None) -> LLMError:
    """The error for an error answer with ``status`` saying ``text`` (redacted)."""
    url = server.url
    if status in (401, 403):
        return PermanentLLMError(auth_message(url, server.key_source, status, text), status=status)
    if status in (400, 404) and names_missing_model(text, server.model):
        return PermanentLLMError(model_not_found_message(server.model, url, offered), status=status)
    if status == 404 or status in NOT_SERVED:
        said = "404" if status == 404 else f"{status}: {text}"  # a 501 page says what is not served
        return PermanentLLMError(
            f"no chat-completions endpoint at {url}{CHAT_PATH} ({said}): check base_url "
            "(it usually ends in /v1)",
            status=status,
        )
    tries = (
        f" {server.policy.max_attempts} times"
        if transient_status(status) and server.policy.max_attempts > 1
        else ""
    )
    return PermanentLLMError(
        f"the server at {url} refused a 1-token test call{tries} ({status}): {text}", status=status
    )


# -- the one-line messages -------------------------------------------------------------------


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
