"""LLM clients behind one async protocol (:class:`LLMClient`).

* :class:`OpenAIClient` — any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama,
  llama.cpp, LiteLLM), on the official ``openai`` SDK.
* :class:`SimulatedJudgeLLM` — the deterministic default (``llm: {provider: fake}``); it lives
  in :mod:`promptevolver.simulation` and is re-exported here.
* :class:`ScriptedLLM` — answers from a script or handler, for unit tests.
* :class:`CachedLLM` — wraps any client with a persistent SQLite response cache.

Extension point — :class:`LLMClient` (a Protocol): ``async complete(request: LLMRequest) ->
Completion`` and a ``usage`` (:class:`Usage`) it counts; a failed call raises
:class:`~promptevolver.errors.LLMError` (transient or permanent, its cause named). Subclass
:class:`BaseLLMClient` and implement its one ``_send`` to get retries, the in-flight limit, rate
limits and usage counting; :class:`ClientWrapper` is the base of decorators (a cache, a meter).
:mod:`promptevolver.testing.contracts` holds the contract suite.

Every :class:`BaseLLMClient` takes optional rate limits (``requests_per_minute``,
``tokens_per_minute``) and a :class:`Price` (USD per 1M tokens) for ``usage.cost_usd``.
Names are imported on first use (the openai SDK and scikit-learn are not loaded before).
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.llm._attempts import watched as watched
    from promptevolver.llm._base import JUDGE_OPERATION as JUDGE_OPERATION
    from promptevolver.llm._base import BaseLLMClient as BaseLLMClient
    from promptevolver.llm._base import ChatMessage as ChatMessage
    from promptevolver.llm._base import Completion as Completion
    from promptevolver.llm._base import LLMClient as LLMClient
    from promptevolver.llm._base import LLMRequest as LLMRequest
    from promptevolver.llm._base import Role as Role
    from promptevolver.llm._base import Usage as Usage
    from promptevolver.llm._base import is_simulated as is_simulated
    from promptevolver.llm._cache import CachedLLM as CachedLLM
    from promptevolver.llm._cache import CacheError as CacheError
    from promptevolver.llm._concurrency import InFlightLimit as InFlightLimit
    from promptevolver.llm._concurrency import waves as waves
    from promptevolver.llm._fake import ScriptedLLM as ScriptedLLM
    from promptevolver.llm._fake import count_tokens as count_tokens
    from promptevolver.llm._journal import Journal as Journal
    from promptevolver.llm._journal import read_lines as read_lines
    from promptevolver.llm._preflight import preflight as preflight
    from promptevolver.llm._ratelimit import CHARS_PER_TOKEN as CHARS_PER_TOKEN
    from promptevolver.llm._ratelimit import estimate_tokens as estimate_tokens
    from promptevolver.llm._redaction import MASK as MASK
    from promptevolver.llm._redaction import redact_text as redact_text
    from promptevolver.llm._redaction import redact_url as redact_url
    from promptevolver.llm._retry import DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS
    from promptevolver.llm._retry import LONG_WAIT_S as LONG_WAIT_S
    from promptevolver.llm._retry import RUN_OF_FAILURES as RUN_OF_FAILURES
    from promptevolver.llm._retry import server_side as server_side
    from promptevolver.llm._wrapper import ClientWrapper as ClientWrapper
    from promptevolver.llm._wrapper import found_in_stack as found_in_stack
    from promptevolver.llm.openai import OpenAIClient as OpenAIClient
    from promptevolver.llm.pricing import Price as Price
    from promptevolver.simulation import SimulatedJudgeLLM as SimulatedJudgeLLM

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.llm._base": [
            "BaseLLMClient",
            "ChatMessage",
            "Completion",
            "JUDGE_OPERATION",
            "LLMClient",
            "LLMRequest",
            "Role",
            "Usage",
            "is_simulated",
        ],
        "promptevolver.llm._cache": ["CacheError", "CachedLLM"],
        "promptevolver.llm._fake": "*",
        "promptevolver.llm.openai": ["OpenAIClient"],
        "promptevolver.llm.pricing": ["Price"],
        "promptevolver.simulation": ["SimulatedJudgeLLM"],
        "promptevolver.llm._redaction": "*",
        "promptevolver.llm._retry": ["DEFAULT_MAX_ATTEMPTS", "LONG_WAIT_S", "RUN_OF_FAILURES", "server_side"],
        "promptevolver.llm._concurrency": ["InFlightLimit", "waves"],
        "promptevolver.llm._ratelimit": ["CHARS_PER_TOKEN", "estimate_tokens"],
        "promptevolver.llm._journal": "*",
        "promptevolver.llm._preflight": "*",
        "promptevolver.llm._wrapper": ["ClientWrapper", "found_in_stack"],
        "promptevolver.llm._attempts": ["watched"],
    },
)
