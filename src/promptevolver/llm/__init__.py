"""LLM clients behind one async protocol (:class:`LLMClient`).

* :class:`OpenAIClient` — any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama,
  llama.cpp, LiteLLM), on the official ``openai`` SDK.
* :class:`SimulatedJudgeLLM` — the deterministic default (``llm: {provider: fake}``).
* :class:`ScriptedLLM` — answers from a script or handler, for unit tests.
* :class:`CachedLLM` — wraps any client with a persistent SQLite response cache.

Every :class:`BaseLLMClient` takes optional rate limits (``requests_per_minute``,
``tokens_per_minute``) and a :class:`Price` (USD per 1M tokens) for ``usage.cost_usd``.
"""

from promptevolver.llm.base import (
    BaseLLMClient,
    ChatMessage,
    Completion,
    LLMClient,
    LLMRequest,
    Usage,
)
from promptevolver.llm.cache import CachedLLM, CacheError
from promptevolver.llm.fake import ScriptedLLM
from promptevolver.llm.openai import OpenAIClient
from promptevolver.llm.pricing import Price
from promptevolver.llm.simulated import SimulatedJudgeLLM

__all__ = [
    "BaseLLMClient",
    "CacheError",
    "CachedLLM",
    "ChatMessage",
    "Completion",
    "LLMClient",
    "LLMRequest",
    "OpenAIClient",
    "Price",
    "ScriptedLLM",
    "SimulatedJudgeLLM",
    "Usage",
]
