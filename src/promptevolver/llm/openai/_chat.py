"""One chat-completions call in the structured-output mode and token-cap field negotiated with the
server: :class:`NegotiatedChat`, the sending half of :class:`~promptevolver.llm.openai.OpenAIClient`.

A 400/422/500 refusing ``response_format`` or the token field is re-sent at once in the next mode
or with the other field (no retry spent; :mod:`promptevolver.llm.openai._negotiation` holds the rules and
the state). While the mode is unconfirmed, requests with a schema go one at a time (a probe lock
per running event loop), so the server is asked about each mode once, not by every request in
flight. Every other SDK error is translated (:mod:`promptevolver.llm.openai._errors`).

``timeout_s`` is a deadline for the whole exchange (sending, waiting, reading the whole body), not
for each read: a server that sends one byte a second, or a body that never ends, fails the call as
a timeout (transient, retried). The body is read in chunks up to
:func:`~promptevolver.llm.openai._wire.body_limit` bytes; a longer one is closed unread and the call
fails as too long (:class:`~promptevolver.errors.AnswerTooLongError`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

import openai
from openai import AsyncOpenAI

from promptevolver.errors import LLMError, TransientLLMError
from promptevolver.llm._base import Completion, LLMRequest
from promptevolver.llm.openai._errors import error_text, translate
from promptevolver.llm.openai._negotiation import (
    Mode,
    Negotiation,
    TokenParam,
    rejects_response_format,
    rejects_token_param,
)
from promptevolver.llm.openai._wire import (
    CHAT_PATH,
    body_limit,
    chat_params,
    completion_cap,
    parse_completion,
    split_query,
    too_long,
)

__all__ = ["STREAMED", "LoopSDK", "NegotiatedChat", "read_bounded"]

#: The SDK's switch for an unread (streamed) raw response, as its ``with_streaming_response`` sets
#: it: the body is then read here, chunk by chunk, up to a bound.
STREAMED = {"X-Stainless-Raw-Response": "stream"}


class LoopSDK:
    """The SDK client of the running event loop, built on first use in each loop.

    Args:
        base_url: API root (None: the SDK's default); api_key: the key (never shown in ``repr``);
        timeout_s: per-request timeout in seconds.
    """

    def __init__(self, *, base_url: str | None, api_key: str, timeout_s: float) -> None:
        self._base_url = base_url
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._sdk: AsyncOpenAI | None = None
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(timeout_s={self._timeout_s:g})"

    def current(self) -> AsyncOpenAI:
        """The SDK client of the running event loop (made now if it has none).

        Raises:
            RuntimeError: no event loop is running.
        """
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._loop is None or self._loop() is not loop:
            root, query = split_query(self._base_url)
            self._sdk = AsyncOpenAI(
                api_key=self._api_key,
                base_url=root,
                timeout=self._timeout_s,
                max_retries=0,
                default_query=query or None,
            )
            self._loop = weakref.ref(loop)
        return self._sdk

    async def aclose(self) -> None:
        """Close the SDK client last made (and its connections), if any."""
        sdk, self._sdk, self._loop = self._sdk, None, None
        if sdk is not None:
            await sdk.close()


class NegotiatedChat:
    """Sends chat requests once each, in the negotiated mode, stepping down on a refusal.

    Args:
        sdk: the SDK client of the running event loop.
        negotiation: what is known of the server; shared with the client and updated here.
        model: model name sent with every request.
        judge_max_tokens, meta_max_tokens: completion-token caps of judge and meta calls that set
            none (None: the server's default).
        timeout_s: the per-request timeout in seconds, named in timeout errors.
        where: names the call in error messages (e.g. model and redacted ``base_url``).
        redact: removes secrets from a text before it reaches an error message.
    """

    def __init__(
        self,
        *,
        sdk: LoopSDK,
        negotiation: Negotiation,
        model: str,
        judge_max_tokens: int | None,
        meta_max_tokens: int | None,
        timeout_s: float,
        where: str,
        redact: Callable[[str], str],
    ) -> None:
        self.sdk = sdk
        self.negotiation = negotiation
        self.model = model
        self.judge_max_tokens = judge_max_tokens
        self.meta_max_tokens = meta_max_tokens
        self.timeout_s = timeout_s
        self.where = where
        self.redact = redact
        self._probe_locks: dict[int, asyncio.Lock] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, mode={self.negotiation.mode!r})"

    async def send(self, request: LLMRequest) -> Completion:
        """Send ``request`` once (re-sent at once after a refusal that changed the negotiation).

        Raises:
            TransientLLMError: 429, 408, 409, 5xx, timeout, connection failure, malformed body.
            PermanentLLMError: any other error status; a refused structured-output mode or token
                field with nothing left to try.
        """
        if request.json_schema is None or self.negotiation.confirmed:
            return await self._negotiated(request)
        async with self._probe_lock():
            return await self._negotiated(request)

    async def _negotiated(self, request: LLMRequest) -> Completion:
        # Each re-send follows a state change (mode down the ladder, token field switched once),
        # so this loop runs at most len(LADDER) + 1 times.
        while True:
            mode, token_param = self.negotiation.mode, self.negotiation.token_param
            params = chat_params(
                request,
                model=self.model,
                mode=mode,
                token_param=token_param,
                judge_max_tokens=self.judge_max_tokens,
                meta_max_tokens=self.meta_max_tokens,
            )
            try:
                completion = await self._create(params, request)
            except openai.APIStatusError as exc:
                if self._adapts_to(exc, "response_format" in params, mode, token_param):
                    continue
                raise self.translate(exc, refused="response_format" in params) from None
            except openai.OpenAIError as exc:
                raise self.translate(exc) from None
            if request.json_schema is not None:
                self.negotiation.confirm(mode)
            return completion

    def _adapts_to(self, exc: openai.APIStatusError, with_format: bool, mode: Mode, sent: TokenParam) -> bool:
        """Whether the refusal ``exc`` changed (or had changed) what to send: then re-send."""
        status, text = exc.status_code, error_text(exc)
        if with_format and rejects_response_format(status, text):
            return self.negotiation.step_down(mode, status)
        if rejects_token_param(status, text, sent):
            return self.negotiation.switch_token_param(sent, status)
        return False

    async def _create(self, params: dict[str, Any], request: LLMRequest) -> Completion:
        # ``post`` with ``cast_to=bytes`` is the SDK's documented way to make a raw request: it
        # keeps the SDK's auth, timeouts and error types but skips its per-call params transform
        # and response model, which cost ~1 ms of CPU per call and halved throughput at
        # max_concurrency 32 (benchmarks/perf/llm_throughput.py). Streamed, so that the body is
        # read here, bounded.
        cap = completion_cap(
            request, judge_max_tokens=self.judge_max_tokens, meta_max_tokens=self.meta_max_tokens
        )
        limit = body_limit(cap)
        sdk = self.sdk.current()  # built outside the deadline: making one takes a while

        async def exchange() -> bytes:
            response = await sdk.post(CHAT_PATH, cast_to=bytes, body=params, options={"headers": STREAMED})
            try:
                body = await read_bounded(response, limit)
            except Exception as exc:  # the HTTP library's error for a body cut off or dropped
                raise TransientLLMError(
                    f"{self.where}: the response body was cut off ({self.redact(str(exc))})"
                ) from None
            if body is None:
                raise too_long(self.where, f"a body over {limit} bytes", cap)
            return body

        try:
            body = await asyncio.wait_for(exchange(), self.timeout_s)
        except TimeoutError:
            raise TransientLLMError(
                f"{self.where}: no complete answer within timeout_s={self.timeout_s:g} s (timeout)"
            ) from None
        return parse_completion(body, where=self.where, messages=request.messages, cap=cap)

    def _probe_lock(self) -> asyncio.Lock:
        # One lock per running event loop, like the base class's semaphores.
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._probe_locks:
            self._probe_locks = {loop_id: asyncio.Lock()}
        return self._probe_locks[loop_id]

    def translate(self, exc: openai.OpenAIError, *, refused: bool = False) -> LLMError:
        """``exc`` as our error (:func:`~promptevolver.llm.openai._errors.translate`); ``refused``:
        the request carried a ``response_format`` (the error then says what was negotiated)."""
        return translate(
            exc,
            where=self.where,
            redact=self.redact,
            timeout_s=self.timeout_s,
            negotiation=self.negotiation if refused else None,
        )


async def read_bounded(response: Any, limit: int) -> bytes | None:
    """The body of a streamed SDK response (``openai.AsyncAPIResponse``), or None (and the
    response closed unread) once it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
    finally:
        await response.close()
    return b"".join(chunks)
