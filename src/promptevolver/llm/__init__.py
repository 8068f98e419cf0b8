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

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.llm._base import BaseLLMClient as BaseLLMClient
    from promptevolver.llm._base import ChatMessage as ChatMessage
    from promptevolver.llm._base import Completion as Completion
    from promptevolver.llm._base import LLMClient as LLMClient
    from promptevolver.llm._base import LLMRequest as LLMRequest
    from promptevolver.llm._base import Usage as Usage
    from promptevolver.llm._cache import CachedLLM as CachedLLM
    from promptevolver.llm._cache import CacheError as CacheError
    from promptevolver.llm._fake import ScriptedLLM as ScriptedLLM
    from promptevolver.llm.openai import OpenAIClient as OpenAIClient
    from promptevolver.llm.pricing import Price as Price
    from promptevolver.simulation._simulated_llm import SimulatedJudgeLLM as SimulatedJudgeLLM

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.llm._base": [
            "BaseLLMClient",
            "ChatMessage",
            "Completion",
            "LLMClient",
            "LLMRequest",
            "Usage",
        ],
        "promptevolver.llm._cache": ["CachedLLM", "CacheError"],
        "promptevolver.llm._fake": ["ScriptedLLM"],
        "promptevolver.llm.openai": ["OpenAIClient"],
        "promptevolver.llm.pricing": ["Price"],
        "promptevolver.simulation._simulated_llm": ["SimulatedJudgeLLM"],
    },
)
