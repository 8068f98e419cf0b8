"""An :class:`~promptevolver.llm.base.BaseLLMClient` on the official ``openai`` SDK.

:class:`OpenAIClient` talks to any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
Ollama, LiteLLM, ...) through ``openai.AsyncOpenAI``. It is the only module that imports the SDK,
and SDK errors are translated into :mod:`promptevolver.errors` here:

=========================================================  =========================================
SDK error                                                  raised as
=========================================================  =========================================
``RateLimitError`` (429)                                   ``TransientLLMError(status=429,
                                                           retry_after=<Retry-After seconds>)``
``APIStatusError`` with status 408, 409 or ≥ 500           ``TransientLLMError(status=...)``
``APITimeoutError``, ``APIConnectionError``                ``TransientLLMError(status=None)``
a 200 answer whose body is not a chat completion           ``TransientLLMError(status=None)``
any other ``APIStatusError`` (400, 401, 403, 404, 422...)  ``PermanentLLMError(status=...)``
=========================================================  =========================================

The SDK's own retries are disabled (``max_retries=0``): the base class retries transient errors
with tenacity. Error messages and ``repr`` never contain the API key.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import re
import time
import weakref
from typing import Any

import openai
from openai import AsyncOpenAI

from promptevolver.errors import ConfigError, LLMError, PermanentLLMError, TransientLLMError
from promptevolver.llm.base import BaseLLMClient, Completion, LLMRequest
from promptevolver.llm.pricing import Price

__all__ = ["OpenAIClient"]

#: Statuses below 500 that are worth retrying: request timeout and conflict (lock contention).
RETRYABLE_4XX = frozenset({408, 409})
#: Path of the chat-completions endpoint, relative to ``base_url``.
CHAT_PATH = "/chat/completions"
#: Name of the schema sent in ``response_format``.
SCHEMA_NAME = "output"
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}")
_REDACTED = "[redacted]"


class OpenAIClient(BaseLLMClient):
    """An LLM client for OpenAI-compatible chat-completions servers.

    Args:
        model: model name sent with every request.
        base_url: API root such as ``http://localhost:8000/v1``; None for the SDK default
            (``OPENAI_BASE_URL`` or api.openai.com).
        api_key: the API key; None falls back to the ``OPENAI_API_KEY`` environment variable.
        timeout_s: per-request timeout in seconds (> 0); a timeout is a transient failure.
        structured_output: send ``response_format`` with a JSON schema when a request has one.
            A server that answers 400 about ``response_format``/``json_schema`` is remembered as
            not supporting it, and the request is re-sent without it (the prompt carries the
            schema).
        max_attempts, retry_initial_s, retry_max_s, max_concurrency, requests_per_minute,
            tokens_per_minute, price: see :class:`~promptevolver.llm.base.BaseLLMClient`
            (seconds for the ``_s`` ones, USD per 1M tokens for the price).

    Raises:
        ConfigError: no API key is given and ``OPENAI_API_KEY`` is unset or empty.
        ValueError: ``timeout_s`` ≤ 0, or an invalid base-class argument.

    The SDK client is built lazily, one per running event loop; call :meth:`aclose` (or use
    ``async with``) before the loop ends to close its connections promptly.
    """

    provider = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        structured_output: bool = True,
        max_attempts: int = 4,
        retry_initial_s: float = 1.0,
        retry_max_s: float = 30.0,
        max_concurrency: int = 16,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        price: Price | None = None,
    ) -> None:
        super().__init__(
            max_attempts=max_attempts,
            retry_initial_s=retry_initial_s,
            retry_max_s=retry_max_s,
            max_concurrency=max_concurrency,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            price=price,
        )
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s}")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError(
                f"no API key for model {model!r}: pass api_key or set the OPENAI_API_KEY environment "
                "variable (any non-empty value works for local servers that ignore keys)"
            )
        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.structured_output = structured_output
        #: False once the server rejected ``response_format``; then the prompt alone carries it.
        self.response_format_supported = True
        self._api_key = key
        self._sdk: AsyncOpenAI | None = None
        self._sdk_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the SDK client (and its connections) of the running event loop, if any."""
        sdk, self._sdk, self._sdk_loop = self._sdk, None, None
        if sdk is not None:
            await sdk.close()

    # -- the seam --------------------------------------------------------------------------------

    async def _send(self, request: LLMRequest) -> Completion:
        """Send ``request`` once; fall back to no ``response_format`` if the server rejects it.

        Raises:
            TransientLLMError: 429, 408, 409, 5xx, timeout, connection failure, malformed body.
            PermanentLLMError: any other error status.
        """
        with_format = self._wants_response_format(request)
        try:
            return await self._create(request, with_format=with_format)
        except openai.OpenAIError as exc:
            if with_format and _rejects_response_format(exc):
                self.response_format_supported = False
                return await self._send(request)
            raise self._translate(exc) from None

    def _wants_response_format(self, request: LLMRequest) -> bool:
        return request.json_schema is not None and self.structured_output and self.response_format_supported

    async def _create(self, request: LLMRequest, *, with_format: bool) -> Completion:
        # ``post`` with ``cast_to=bytes`` is the SDK's documented way to make a raw request: it
        # keeps the SDK's auth, timeouts and error types but skips its per-call params transform
        # and response model, which cost ~1 ms of CPU per call and halved throughput at
        # max_concurrency 32 (benchmarks/bench_llm_throughput.py).
        body = await self._client().post(CHAT_PATH, cast_to=bytes, body=self._params(request, with_format))
        return self._completion(body)

    def _params(self, request: LLMRequest, with_format: bool) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in request.messages],
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        if request.seed is not None:
            params["seed"] = request.seed
        if with_format:
            schema = {"name": SCHEMA_NAME, "schema": request.json_schema}
            params["response_format"] = {"type": "json_schema", "json_schema": schema}
        return params

    def _completion(self, body: bytes) -> Completion:
        """The answer in a chat-completion response body.

        Raises:
            TransientLLMError: the body is not JSON or not a chat completion (e.g. a proxy's
                HTML error page with status 200, or a cut-off body).
        """
        try:
            data = json.loads(body)
        except ValueError:
            raise TransientLLMError(f"{self._where()}: the response body is not JSON") from None
        choices = data.get("choices") if isinstance(data, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise TransientLLMError(f"{self._where()}: the response is not a chat completion")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Completion(
            text=str(message.get("content") or ""),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    def _client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is None or self._sdk_loop() is not loop:
            self._sdk = AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
            )
            self._sdk_loop = weakref.ref(loop)
        return self._sdk

    # -- error translation -----------------------------------------------------------------------

    def _translate(self, exc: openai.OpenAIError) -> LLMError:
        text = f"{self._where()}: {self._redact(str(exc))}"
        if isinstance(exc, openai.APITimeoutError):
            return TransientLLMError(f"{text} (timeout after {self.timeout_s:g} s)")
        if isinstance(exc, openai.APIConnectionError):
            return TransientLLMError(text)
        if not isinstance(exc, openai.APIStatusError):
            return PermanentLLMError(text)
        status = exc.status_code
        if status == 429 or status >= 500 or status in RETRYABLE_4XX:
            return TransientLLMError(text, status=status, retry_after=retry_after_s(exc.response.headers))
        return PermanentLLMError(text, status=status)

    def _where(self) -> str:
        return f"OpenAI-compatible call (model {self.model!r}, base_url {self.base_url!r})"

    def _redact(self, text: str) -> str:
        return _KEY_LIKE.sub(_REDACTED, text.replace(self._api_key, _REDACTED))


def _rejects_response_format(exc: openai.OpenAIError) -> bool:
    if not isinstance(exc, openai.APIStatusError) or exc.status_code != 400:
        return False
    text = str(exc).lower()
    return "response_format" in text or "json_schema" in text


def retry_after_s(headers: Any) -> float | None:
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
    try:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())
    except (TypeError, ValueError, OverflowError):
        return None
