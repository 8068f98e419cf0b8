"""LLM clients behind one async protocol (:class:`LLMClient`).

* :class:`OpenAIClient` — any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama,
  llama.cpp, LiteLLM), on the official ``openai`` SDK.
* :class:`SimulatedJudgeLLM` — the deterministic default (``llm: {provider: fake}``); it lives
  in :mod:`promptevolver.simulation` and is re-exported here.
* :class:`ScriptedLLM` — answers from a script or handler, for unit tests.
* :class:`CachedLLM` — wraps any client with a persistent SQLite response cache.

Every :class:`BaseLLMClient` takes optional rate limits (``requests_per_minute``,
``tokens_per_minute``) and a :class:`Price` (USD per 1M tokens) for ``usage.cost_usd``.
Names are imported on first use (the openai SDK and scikit-learn are not loaded before).
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.llm.base import BaseLLMClient, ChatMessage, Completion, LLMClient, LLMRequest, Usage
    from promptevolver.llm.cache import CachedLLM, CacheError
    from promptevolver.llm.fake import ScriptedLLM
    from promptevolver.llm.openai import OpenAIClient
    from promptevolver.llm.pricing import Price
    from promptevolver.simulation.simulated_llm import SimulatedJudgeLLM

_EXPORTS = {
    "BaseLLMClient": "promptevolver.llm.base",
    "ChatMessage": "promptevolver.llm.base",
    "Completion": "promptevolver.llm.base",
    "LLMClient": "promptevolver.llm.base",
    "LLMRequest": "promptevolver.llm.base",
    "Usage": "promptevolver.llm.base",
    "CachedLLM": "promptevolver.llm.cache",
    "CacheError": "promptevolver.llm.cache",
    "ScriptedLLM": "promptevolver.llm.fake",
    "OpenAIClient": "promptevolver.llm.openai",
    "Price": "promptevolver.llm.pricing",
    "SimulatedJudgeLLM": "promptevolver.simulation.simulated_llm",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
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
