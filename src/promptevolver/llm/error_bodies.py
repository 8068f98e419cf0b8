"""Reading the error answers of OpenAI-compatible servers, whose shapes differ.

=====================  ==================================================================
server                 error body
=====================  ==================================================================
OpenAI, vLLM, Ollama   ``{"error": {"message": "...", "type": ..., "param": ..., "code": ...}}``
LM Studio (some)       ``{"error": "..."}``
llama-cpp-python 401   ``{"detail": "Invalid API key"}`` (FastAPI)
vLLM 401               ``{"error": "Unauthorized"}``
proxies                anything, HTML included
=====================  ==================================================================
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MESSAGE_CHARS", "names_missing_model", "server_message"]

#: Longest server message quoted in an error, in characters.
MESSAGE_CHARS = 300
#: Words of "unknown model" errors: OpenAI and vLLM "does not exist", Ollama and LM Studio "not
#: found", LM Studio "Invalid model identifier".
_MODEL_MISSING_WORDS = ("not found", "does not exist", "invalid model", "unknown model")


def server_message(body: str) -> str:
    """The server's own message in an error ``body``, for people: ``error.message``, a string
    ``error``, ``detail`` or ``message``; else the body itself. Whitespace collapsed, at most
    :data:`MESSAGE_CHARS` characters. Not redacted: pass it through
    :func:`~promptevolver.llm.redaction.redact_text` before showing it."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    message: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        message = message or data.get("detail") or data.get("message")
    text = " ".join(str(message if message else body).split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def names_missing_model(text: str, model: str) -> bool:
    """Whether an error ``text`` says that ``model`` is unknown (OpenAI's ``model_not_found``
    code, or the model's name with a "not found"-like phrase)."""
    lower = text.lower()
    if "model_not_found" in lower:
        return True
    return model.lower() in lower and any(word in lower for word in _MODEL_MISSING_WORDS)
