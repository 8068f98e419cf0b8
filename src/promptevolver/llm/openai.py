"""An :class:`~promptevolver.llm.base.BaseLLMClient` on the official ``openai`` SDK.

:class:`OpenAIClient` talks to any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
Ollama, LM Studio, llama.cpp, LiteLLM, ...) through ``openai.AsyncOpenAI``. Per client, once and
remembered, it negotiates the structured-output mode and the token-cap field the server accepts
(:mod:`promptevolver.llm.negotiation`); :meth:`OpenAIClient.preflight` checks server, key and model
with one cheap call (:mod:`promptevolver.llm.preflight`). It is the only module that imports the
SDK, and SDK errors are translated into :mod:`promptevolver.errors` here:

=========================================================  =========================================
SDK error                                                  raised as
=========================================================  =========================================
``RateLimitError`` (429)                                   ``TransientLLMError(status=429,
                                                           retry_after=<Retry-After seconds>)``
``APIStatusError`` with status 408, 409 or ≥ 500           ``TransientLLMError(status=...)``
``APITimeoutError``, ``APIConnectionError``                ``TransientLLMError(status=None)``
a 200 answer whose body is not a chat completion           ``TransientLLMError(status=None)``
any other ``APIStatusError`` (400, 401, 403, 404, 422...)  ``PermanentLLMError(status=...)``
400/422/500 refusing ``response_format`` or the token      re-sent at once in the next mode or with
field (see :mod:`~promptevolver.llm.negotiation`)           the other field (no retry spent); a
                                                           refusal with nothing left to try is a
                                                           ``PermanentLLMError(status=...)``
=========================================================  =========================================

The SDK's own retries are disabled (``max_retries=0``): the base class retries transient errors
with tenacity. Error messages and ``repr`` never contain the API key, and show ``base_url`` with
its userinfo and query values redacted (:mod:`promptevolver.llm.redaction`).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import time
import warnings
import weakref
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import openai
from openai import AsyncOpenAI

from promptevolver.errors import ConfigError, LLMError, PermanentLLMError, TransientLLMError
from promptevolver.llm import preflight as checks
from promptevolver.llm.base import JUDGE_OPERATION, BaseLLMClient, Completion, LLMRequest
from promptevolver.llm.error_bodies import names_missing_model, server_message
from promptevolver.llm.negotiation import (
    Mode,
    Negotiation,
    StructuredOutput,
    TokenParam,
    rejects_response_format,
    rejects_token_param,
    response_format,
)
from promptevolver.llm.pricing import Price
from promptevolver.llm.redaction import redact_text, redact_url

__all__ = ["OpenAIClient"]

#: Statuses below 500 that are worth retrying: request timeout and conflict (lock contention).
RETRYABLE_4XX = frozenset({408, 409})
#: Path of the chat-completions endpoint, relative to ``base_url``.
CHAT_PATH = "/chat/completions"
#: Path of the model list, relative to ``base_url``.
MODELS_PATH = "/models"
#: The SDK's API root when no ``base_url`` is given (nor ``OPENAI_BASE_URL``).
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Upper bound in seconds on each preflight request (the client's ``timeout_s`` if shorter).
PREFLIGHT_TIMEOUT_S = 15.0


class OpenAIClient(BaseLLMClient):
    """An LLM client for OpenAI-compatible chat-completions servers.

    Args:
        model: model name sent with every request.
        base_url: API root such as ``http://localhost:8000/v1``; None for the SDK default
            (``OPENAI_BASE_URL`` or api.openai.com). A query string (``?api-key=...``, as some
            proxies want) is sent with every request and never shown (see ``display_url``).
        api_key: the API key; None falls back to the ``OPENAI_API_KEY`` environment variable.
        api_key_source: where the key came from, named in error messages (e.g. the environment
            variable ``MY_KEY``); default ``OPENAI_API_KEY``, or ``api_key`` when one is passed.
        timeout_s: per-request timeout in seconds (> 0); a timeout is a transient failure.
        structured_output: ``auto`` (default) negotiates ``json_schema`` → ``json_object`` with
            the schema → ``prompt`` (the prompt alone asks for JSON) with the server, once per
            client; a fixed mode is used as is, and a server refusing it fails the call
            (PermanentLLMError). ``True``/``False`` are the former switch: ``auto``/``prompt``.
        judge_max_tokens: completion-token cap of judge calls that set none (> 0, or None for the
            server's default). A judge answers a short JSON object; the cap stops a small local
            model that rambles. Use None for reasoning models, whose cap includes reasoning tokens.
        meta_max_tokens: the same for meta calls (instructions, feedback), default 1024.
        max_attempts, retry_initial_s, retry_max_s, max_concurrency, requests_per_minute,
            tokens_per_minute, price: see :class:`~promptevolver.llm.base.BaseLLMClient`
            (seconds for the ``_s`` ones, USD per 1M tokens for the price).

    Attributes:
        negotiation: what was learnt about the server (:class:`~promptevolver.llm.negotiation.
            Negotiation`); ``negotiation.to_dict()`` is a run's ``usage.structured_output``.
        display_url: ``base_url`` as it may be shown: userinfo and query values redacted.

    Raises:
        ConfigError: no API key is given and ``OPENAI_API_KEY`` is unset or empty.
        ValueError: ``timeout_s`` ≤ 0, a token cap ≤ 0, an unknown ``structured_output``, or an
            invalid base-class argument.

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
        api_key_source: str | None = None,
        timeout_s: float = 60.0,
        structured_output: StructuredOutput | bool = "auto",
        judge_max_tokens: int | None = 256,
        meta_max_tokens: int | None = 1024,
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
        for name, cap in (("judge_max_tokens", judge_max_tokens), ("meta_max_tokens", meta_max_tokens)):
            if cap is not None and cap < 1:
                raise ValueError(f"{name} must be >= 1 token or None, got {cap}")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError(
                f"no API key for model {model!r}: pass api_key or set the OPENAI_API_KEY environment "
                "variable (any non-empty value works for local servers that ignore keys)"
            )
        self.model = model
        self.base_url = base_url
        self.display_url = redact_url(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        self.timeout_s = timeout_s
        self.judge_max_tokens = judge_max_tokens
        self.meta_max_tokens = meta_max_tokens
        self.api_key_source = api_key_source or ("api_key" if api_key else "OPENAI_API_KEY")
        self.negotiation = Negotiation.start(_setting(structured_output))
        self._preflight_done = False
        self._api_key = key
        self._sdk: AsyncOpenAI | None = None
        self._sdk_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._probe_locks: dict[int, asyncio.Lock] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.display_url!r})"

    @property
    def structured_output_mode(self) -> Mode:
        """The structured-output mode requests are sent in now (after negotiation: the one it
        ended in): ``json_schema``, ``json_object`` or ``prompt``."""
        return self.negotiation.mode

    def cache_identity(self) -> dict[str, Any]:
        """Provider kind, model and the judge and meta token caps (a cap can cut an answer short,
        so answers under different caps must not share cache entries)."""
        return {
            **super().cache_identity(),
            "judge_max_tokens": self.judge_max_tokens,
            "meta_max_tokens": self.meta_max_tokens,
        }

    async def aclose(self) -> None:
        """Close the SDK client (and its connections) of the running event loop, if any."""
        sdk, self._sdk, self._sdk_loop = self._sdk, None, None
        if sdk is not None:
            await sdk.close()

    # -- preflight -------------------------------------------------------------------------------

    async def preflight(self) -> None:
        """Check once, with one cheap call and no retries, that the server is reachable, accepts
        the key and serves ``model``: ``GET /models``; when that endpoint is absent or does not
        list the model, a 1-token chat call decides.

        Raises:
            PermanentLLMError: one line naming the cause (see :mod:`promptevolver.llm.preflight`):
                unreachable server or timeout, key refused (401/403), model not found, or any
                other refusal of the chat call.
        """
        if self._preflight_done:
            return
        offered = await self._listed_models()
        if offered is None or self.model not in offered:
            await self._ping_chat(offered)
            if offered:
                warnings.warn(
                    checks.unlisted_model_message(self.model, self.display_url, offered), stacklevel=2
                )
        self._preflight_done = True

    async def _listed_models(self) -> list[str] | None:
        """The server's model ids, or None when it has no usable model list."""
        try:
            body = await self._client().get(MODELS_PATH, cast_to=bytes, options=self._preflight_options())
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise self._preflight_error(exc) from None
            return None  # no /models here (404, 405, ...) or a broken one: the chat call decides
        except openai.OpenAIError as exc:
            raise self._preflight_error(exc) from None
        return checks.model_ids(body)

    async def _ping_chat(self, offered: list[str] | None) -> None:
        params = {
            "model": self.model,
            "messages": [{"role": "user", "content": "Say OK."}],
            self.negotiation.token_param: 1,
        }
        for _ in range(2):  # a second time only with the other token field
            sent: TokenParam = self.negotiation.token_param
            try:
                await self._client().post(
                    CHAT_PATH, cast_to=bytes, body=params, options=self._preflight_options()
                )
                return
            except openai.APIStatusError as exc:
                text = _error_text(exc)
                if rejects_token_param(exc.status_code, text, sent) and self.negotiation.switch_token_param(
                    sent, exc.status_code
                ):
                    params[self.negotiation.token_param] = params.pop(sent)
                    continue
                raise self._preflight_error(exc, offered=offered) from None
            except openai.OpenAIError as exc:
                raise self._preflight_error(exc) from None

    def _preflight_options(self) -> Any:
        return {"timeout": min(self.timeout_s, PREFLIGHT_TIMEOUT_S), "max_retries": 0}

    def _preflight_error(self, exc: openai.OpenAIError, *, offered: list[str] | None = None) -> LLMError:
        url = self.display_url
        if isinstance(exc, openai.APITimeoutError):
            timeout = min(self.timeout_s, PREFLIGHT_TIMEOUT_S)
            return PermanentLLMError(checks.unreachable_message(url, f"no answer within {timeout:g} s"))
        if isinstance(exc, openai.APIConnectionError):
            return PermanentLLMError(checks.unreachable_message(url, checks.cause_of_connection_error(exc)))
        if not isinstance(exc, openai.APIStatusError):
            return PermanentLLMError(f"{self._where()}: {self._redact(str(exc))}")
        status, text = exc.status_code, self._redact(server_message(_body_text(exc)))
        if status in (401, 403):
            return PermanentLLMError(
                checks.auth_message(url, self.api_key_source, status, text), status=status
            )
        if status in (400, 404) and names_missing_model(text, self.model):
            return PermanentLLMError(checks.model_not_found_message(self.model, url, offered), status=status)
        if status == 404:
            return PermanentLLMError(
                f"no chat-completions endpoint at {url}{CHAT_PATH} (404): check base_url "
                "(it usually ends in /v1)",
                status=status,
            )
        return PermanentLLMError(
            f"the server at {url} refused a 1-token test call ({status}): {text}", status=status
        )

    # -- the seam --------------------------------------------------------------------------------

    async def _send(self, request: LLMRequest) -> Completion:
        """Send ``request`` once, in the negotiated mode, stepping down on a refusal.

        While the structured-output mode is unconfirmed, requests with a schema go one at a time
        (a probe lock), so that the server is asked about each mode once, not by every request
        in flight.

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
            params = self._params(request, mode, token_param)
            try:
                completion = await self._create(params)
            except openai.APIStatusError as exc:
                if self._adapts_to(exc, "response_format" in params, mode, token_param):
                    continue
                raise self._translate(exc, refused="response_format" in params) from None
            except openai.OpenAIError as exc:
                raise self._translate(exc) from None
            if request.json_schema is not None:
                self.negotiation.confirm(mode)
            return completion

    def _adapts_to(self, exc: openai.APIStatusError, with_format: bool, mode: Mode, sent: TokenParam) -> bool:
        """Whether the refusal ``exc`` changed (or had changed) what to send: then re-send."""
        status, text = exc.status_code, _error_text(exc)
        if with_format and rejects_response_format(status, text):
            return self.negotiation.step_down(mode, status)
        if rejects_token_param(status, text, sent):
            return self.negotiation.switch_token_param(sent, status)
        return False

    async def _create(self, params: dict[str, Any]) -> Completion:
        # ``post`` with ``cast_to=bytes`` is the SDK's documented way to make a raw request: it
        # keeps the SDK's auth, timeouts and error types but skips its per-call params transform
        # and response model, which cost ~1 ms of CPU per call and halved throughput at
        # max_concurrency 32 (benchmarks/bench_llm_throughput.py).
        body = await self._client().post(CHAT_PATH, cast_to=bytes, body=params)
        return self._completion(body)

    def _params(self, request: LLMRequest, mode: Mode, token_param: TokenParam) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in request.messages],
            "temperature": request.temperature,
        }
        cap = request.max_tokens
        if cap is None:
            cap = self.judge_max_tokens if request.operation == JUDGE_OPERATION else self.meta_max_tokens
        if cap is not None:
            params[token_param] = cap
        if request.seed is not None:
            params["seed"] = request.seed
        if request.json_schema is not None:
            fmt = response_format(mode, request.json_schema)
            if fmt is not None:
                params["response_format"] = fmt
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
            root, query = _split_query(self.base_url)
            self._sdk = AsyncOpenAI(
                api_key=self._api_key,
                base_url=root,
                timeout=self.timeout_s,
                max_retries=0,
                default_query=query or None,
            )
            self._sdk_loop = weakref.ref(loop)
        return self._sdk

    def _probe_lock(self) -> asyncio.Lock:
        # One lock per running event loop, like the base class's semaphores.
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._probe_locks:
            self._probe_locks = {loop_id: asyncio.Lock()}
        return self._probe_locks[loop_id]

    # -- error translation -----------------------------------------------------------------------

    def _translate(self, exc: openai.OpenAIError, *, refused: bool = False) -> LLMError:
        detail = server_message(_body_text(exc)) if isinstance(exc, openai.APIStatusError) else str(exc)
        text = f"{self._where()}: " + self._redact(
            f"HTTP {exc.status_code}: {detail}" if isinstance(exc, openai.APIStatusError) else detail
        )
        if isinstance(exc, openai.APITimeoutError):
            return TransientLLMError(f"{text} (timeout after {self.timeout_s:g} s)")
        if isinstance(
            exc, openai.APIConnectionError
        ):  # the OS's reason: "Connection error (connection refused)"
            return TransientLLMError(
                f"{text.rstrip('.')} ({self._redact(checks.cause_of_connection_error(exc))})"
            )
        if not isinstance(exc, openai.APIStatusError):
            return PermanentLLMError(text)
        status = exc.status_code
        if refused and rejects_response_format(status, _error_text(exc)):
            hint = (
                f"the server refuses structured output {self.negotiation.mode!r}"
                f" (llm.structured_output: {self.negotiation.requested}; 'auto' negotiates a mode it accepts)"
            )
            return PermanentLLMError(f"{text}; {hint}", status=status)
        if status == 429 or status >= 500 or status in RETRYABLE_4XX:
            return TransientLLMError(text, status=status, retry_after=retry_after_s(exc.response.headers))
        return PermanentLLMError(text, status=status)

    def _where(self) -> str:
        return f"OpenAI-compatible call (model {self.model!r}, base_url {self.display_url!r})"

    def _redact(self, text: str) -> str:
        return redact_text(text, [self._api_key])


def _setting(structured_output: StructuredOutput | bool) -> StructuredOutput:
    if structured_output is True:
        return "auto"
    if structured_output is False:
        return "prompt"
    return structured_output


def _split_query(base_url: str | None) -> tuple[str | None, dict[str, str]]:
    """``base_url`` without its query string, and the query's parameters (sent with every request:
    the SDK would otherwise glue request paths after the query)."""
    if base_url is None:
        return None, {}
    parts = urlsplit(base_url)
    if not parts.query:
        return base_url, {}
    root = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return root, dict(parse_qsl(parts.query, keep_blank_values=True))


def _error_text(exc: openai.APIStatusError) -> str:
    """Everything an error answer says, for recognising refusals: the SDK's message and the raw
    body (which holds what a non-OpenAI error shape says, e.g. LM Studio's ``{"error": "..."}``)."""
    return f"{exc} {_body_text(exc)}"


def _body_text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text
    except Exception:  # a streamed or closed response: nothing more to read
        return ""


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
