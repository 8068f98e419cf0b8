"""An :class:`~promptevolver.llm._base.BaseLLMClient` on the official ``openai`` SDK.

:class:`OpenAIClient` talks to any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
Ollama, LM Studio, llama.cpp, LiteLLM, ...) through ``openai.AsyncOpenAI``. Per client, once and
remembered, it negotiates the structured-output mode and the token-cap field the server accepts
(:mod:`~promptevolver.llm.openai._negotiation`): a 400/422/500 refusing ``response_format`` or
the token field is re-sent at once in the next mode or with the other field (no retry spent). Its
parts are the other modules of this package (the table is in its docstring).

The SDK's own retries are disabled (``max_retries=0``): the base class retries transient errors
with tenacity. Error messages and ``repr`` never contain the API key, and show ``base_url`` with
its userinfo and query values redacted (:mod:`promptevolver.llm._redaction`).
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from promptevolver.errors import ConfigError
from promptevolver.llm._base import BaseLLMClient, ClientOptions, Completion, LLMRequest
from promptevolver.llm._redaction import redact_text, redact_url
from promptevolver.llm.openai._chat import LoopSDK, NegotiatedChat
from promptevolver.llm.openai._errors import retry_after_s
from promptevolver.llm.openai._negotiation import Mode, Negotiation, StructuredOutput
from promptevolver.llm.openai._preflight import Server, check_server

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11 on

__all__ = ["OpenAIClient", "retry_after_s"]

#: The SDK's API root when no ``base_url`` is given (nor ``OPENAI_BASE_URL``).
DEFAULT_BASE_URL = "https://api.openai.com/v1"


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
        options: ``max_attempts``, ``retry_initial_s``, ``retry_max_s``, ``max_concurrency``,
            ``requests_per_minute``, ``tokens_per_minute``, ``price``
            (:class:`~promptevolver.llm._base.ClientOptions`): as :class:`~promptevolver.llm._base.
            BaseLLMClient` takes them, with its defaults (seconds for the ``_s`` ones, USD per 1M
            tokens for the price).

    Attributes:
        negotiation: what was learnt about the server (:class:`~promptevolver.llm.openai._negotiation.
            Negotiation`); ``negotiation.to_dict()`` is a run's ``usage.structured_output``.
        display_url: ``base_url`` as it may be shown: userinfo and query values redacted.

    Raises:
        ConfigError: no API key is given and ``OPENAI_API_KEY`` is unset or empty; ``base_url``
            (or ``OPENAI_BASE_URL``) carries credentials (``https://user:password@host/v1``): the
            HTTP client would send them as ``Authorization: Basic ...`` instead of the key.
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
        **options: Unpack[ClientOptions],
    ) -> None:
        super().__init__(**options)
        _check_limits(timeout_s, judge_max_tokens=judge_max_tokens, meta_max_tokens=meta_max_tokens)
        key = _api_key(model, api_key)
        _no_userinfo(base_url or os.environ.get("OPENAI_BASE_URL"))
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
        self._sdk = LoopSDK(base_url=base_url, api_key=key, timeout_s=timeout_s)
        self._chat = NegotiatedChat(
            sdk=self._sdk,
            negotiation=self.negotiation,
            model=model,
            judge_max_tokens=judge_max_tokens,
            meta_max_tokens=meta_max_tokens,
            timeout_s=timeout_s,
            where=self._where(),
            redact=functools.partial(redact_text, secrets=[key]),
        )

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
        await self._sdk.aclose()

    # -- preflight -------------------------------------------------------------------------------

    async def preflight(self) -> None:
        """Check once, with one cheap call, that the server is reachable, accepts the key and
        serves ``model``: ``GET /models``; when that endpoint is absent or does not list the
        model, a 1-token chat call decides. Timeouts, 429 and 5xx are retried as the client's
        calls are (:mod:`promptevolver.llm._retry`).

        Raises:
            PermanentLLMError: one line naming the cause (see :mod:`promptevolver.llm._preflight`):
                unreachable server or timeout, key refused (401/403), model not found, or any
                other refusal of the chat call.
        """
        if self._preflight_done:
            return
        warning = await check_server(self._server())
        if warning is not None:
            warnings.warn(warning, stacklevel=2)
        self._preflight_done = True

    def _server(self) -> Server:
        return Server(
            sdk=self._sdk.current(),
            model=self.model,
            url=self.display_url,
            key_source=self.api_key_source,
            timeout_s=self.timeout_s,
            where=self._where(),
            redact=self._redact,
            negotiation=self.negotiation,
            policy=self.retry_policy,
            sleep=self.sleep,
        )

    # -- the seam --------------------------------------------------------------------------------

    async def _send(self, request: LLMRequest) -> Completion:
        """Send ``request`` once, in the negotiated mode, stepping down on a refusal
        (:meth:`NegotiatedChat.send <promptevolver.llm.openai._chat.NegotiatedChat.send>`).

        While the structured-output mode is unconfirmed, requests with a schema go one at a time
        (a probe lock), so that the server is asked about each mode once, not by every request
        in flight.

        Raises:
            TransientLLMError: 429, 408, 409, 5xx, timeout, connection failure, malformed body.
            PermanentLLMError: any other error status; a refused structured-output mode or token
                field with nothing left to try.
        """
        return await self._chat.send(request)

    # -- how calls are named in errors, without secrets ------------------------------------------

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


def _check_limits(timeout_s: float, *, judge_max_tokens: int | None, meta_max_tokens: int | None) -> None:
    """Raises ValueError: ``timeout_s`` ≤ 0 seconds, or a token cap < 1."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s}")
    for name, cap in (("judge_max_tokens", judge_max_tokens), ("meta_max_tokens", meta_max_tokens)):
        if cap is not None and cap < 1:
            raise ValueError(f"{name} must be >= 1 token or None, got {cap}")


def _no_userinfo(url: str | None) -> None:
    """Refuse a URL with userinfo (``user:password@``); the message shows it redacted.

    Raises:
        ConfigError: ``url`` carries userinfo.
    """
    if url is None:
        return
    try:
        has_userinfo = urlsplit(url).username is not None
    except ValueError:
        return  # not a URL the HTTP client will accept either; it says so at the first call
    if has_userinfo:
        raise ConfigError(
            f"base_url {redact_url(url)} carries credentials (user:password@): the HTTP client would "
            "send them as Basic auth instead of the API key. Remove them from the URL and put the "
            "key in the environment variable named by llm.api_key_env (default OPENAI_API_KEY)"
        )


def _api_key(model: str, api_key: str | None) -> str:
    """``api_key``, else ``OPENAI_API_KEY``; raises ConfigError when both are unset or empty."""
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise ConfigError(
            f"no API key for model {model!r}: pass api_key or set the OPENAI_API_KEY environment "
            "variable (any non-empty value works for local servers that ignore keys)"
        )
    return key
