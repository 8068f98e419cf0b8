"""The chat-completions wire format of :class:`~promptevolver.llm.openai.OpenAIClient`, without the SDK.

* :func:`chat_params` — the JSON body of one request (model, messages, temperature, token cap,
  seed, ``response_format`` of the negotiated mode);
* :func:`parse_completion` — the answer and token counts in a response body;
* :func:`split_query` — ``base_url`` without its query string, and the query's parameters.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from promptevolver.errors import TransientLLMError
from promptevolver.llm.base import JUDGE_OPERATION, Completion, LLMRequest
from promptevolver.llm.negotiation import Mode, TokenParam, response_format

__all__ = ["CHAT_PATH", "MODELS_PATH", "chat_params", "parse_completion", "split_query"]

#: Path of the chat-completions endpoint, relative to ``base_url``.
CHAT_PATH = "/chat/completions"
#: Path of the model list, relative to ``base_url``.
MODELS_PATH = "/models"


def chat_params(
    request: LLMRequest,
    *,
    model: str,
    mode: Mode,
    token_param: TokenParam,
    judge_max_tokens: int | None,
    meta_max_tokens: int | None,
) -> dict[str, Any]:
    """The body of a chat-completions request for ``request``.

    The token cap is ``request.max_tokens``, else ``judge_max_tokens`` for a judge call and
    ``meta_max_tokens`` for any other (tokens; None sends no cap), under the field name
    ``token_param``; ``response_format`` is set only for a request with a schema, in ``mode``.
    """
    params: dict[str, Any] = {
        "model": model,
        "messages": [m.to_dict() for m in request.messages],
        "temperature": request.temperature,
    }
    cap = request.max_tokens
    if cap is None:
        cap = judge_max_tokens if request.operation == JUDGE_OPERATION else meta_max_tokens
    if cap is not None:
        params[token_param] = cap
    if request.seed is not None:
        params["seed"] = request.seed
    if request.json_schema is not None:
        fmt = response_format(mode, request.json_schema)
        if fmt is not None:
            params["response_format"] = fmt
    return params


def parse_completion(body: bytes, *, where: str) -> Completion:
    """The answer in a chat-completion response body (token counts 0 when it reports none).

    Args:
        where: the call's description, the start of an error message (no secret in it).

    Raises:
        TransientLLMError: the body is not JSON or not a chat completion (e.g. a proxy's
            HTML error page with status 200, or a cut-off body).
    """
    try:
        data = json.loads(body)
    except ValueError:
        raise TransientLLMError(f"{where}: the response body is not JSON") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise TransientLLMError(f"{where}: the response is not a chat completion")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return Completion(
        text=str(message.get("content") or ""),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def split_query(base_url: str | None) -> tuple[str | None, dict[str, str]]:
    """``base_url`` without its query string, and the query's parameters (sent with every request:
    the SDK would otherwise glue request paths after the query)."""
    if base_url is None:
        return None, {}
    parts = urlsplit(base_url)
    if not parts.query:
        return base_url, {}
    root = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return root, dict(parse_qsl(parts.query, keep_blank_values=True))
