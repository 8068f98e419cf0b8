"""LLM clients behind one async protocol (:class:`LLMClient`).

* :class:`OpenAIClient` — any OpenAI-compatible server (OpenAI, Azure OpenAI, vLLM, Ollama,
  llama.cpp, LiteLLM), on the official ``openai`` SDK.
* :class:`SimulatedJudgeLLM` — the deterministic default (``llm: {provider: fake}``).
* :class:`ScriptedLLM` — answers from a script or handler, for unit tests.
"""

from promptevolver.llm.base import (
    BaseLLMClient,
    ChatMessage,
    Completion,
    LLMClient,
    LLMRequest,
    Usage,
)
from promptevolver.llm.fake import ScriptedLLM
from promptevolver.llm.openai import OpenAIClient
from promptevolver.llm.simulated import SimulatedJudgeLLM

__all__ = [
    "BaseLLMClient",
    "ChatMessage",
    "Completion",
    "LLMClient",
    "LLMRequest",
    "OpenAIClient",
    "ScriptedLLM",
    "SimulatedJudgeLLM",
    "Usage",
]
