"""The OpenAI-compatible provider: :class:`OpenAIClient` and what it learns about its server.

:class:`OpenAIClient` talks to any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
Ollama, LM Studio, llama.cpp, LiteLLM, ...) through the official ``openai`` SDK. This package is
the only place that imports the SDK. Who owns what inside it:

==========================  ====================================================================
module                      owns
==========================  ====================================================================
``_client``                 :class:`OpenAIClient`: settings, key and URL checks, the seam
``_chat``                   one call sent in the negotiated mode, re-sent on a refusal; the SDK
                            client of the running event loop (:class:`~._chat.LoopSDK`)
``_wire``                   request bodies and response parsing, without the SDK
``_negotiation``            which structured-output mode and token-cap field the server takes
``_errors``                 SDK errors translated into :mod:`promptevolver.errors`; reading error
                            bodies of every shape; why a connection failed
``_preflight``              server, key and model checked with one cheap call, and its messages
``_embeddings``             :class:`OpenAIEmbeddings`: ``/embeddings`` calls (blocking), retried and
                            cached, for retrieval of teaching examples
==========================  ====================================================================

Only the names below are public; the modules are internals (``_client`` etc.).
"""

from promptevolver.llm.openai._client import OpenAIClient
from promptevolver.llm.openai._embeddings import EmbeddingUsage, OpenAIEmbeddings
from promptevolver.llm.openai._errors import retry_after_s
from promptevolver.llm.openai._negotiation import (
    Mode,
    Negotiation,
    StructuredOutput,
    TokenParam,
    negotiation_of,
    structured_output_mode,
)

__all__ = [
    "EmbeddingUsage",
    "Mode",
    "Negotiation",
    "OpenAIClient",
    "OpenAIEmbeddings",
    "StructuredOutput",
    "TokenParam",
    "negotiation_of",
    "retry_after_s",
    "structured_output_mode",
]
