"""The chat-completions wire format of :class:`~promptevolver.llm.openai.OpenAIClient`, without the SDK.

* :func:`chat_params` — the JSON body of one request (model, messages, temperature, token cap,
  seed, ``response_format`` of the negotiated mode);
* :func:`parse_completion` — the answer and token counts in a response body (counted locally,
  ⌈characters / 4⌉, where the server reports none, zero or a negative or unreadable count), an
  answer beyond :data:`ANSWER_TOKEN_MULTIPLE` × the requested tokens refused as too long;
* :func:`body_limit` — how many bytes of a response body are read before the call fails as too
  long (the rest is never read);
* :func:`split_query` — ``base_url`` without its query string, and the query's parameters.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from promptevolver.errors import AnswerTooLongError, RefusalError, TransientLLMError
from promptevolver.llm._base import JUDGE_OPERATION, ChatMessage, Completion, LLMRequest
from promptevolver.llm._ratelimit import CHARS_PER_TOKEN
from promptevolver.llm.openai._negotiation import Mode, TokenParam, response_format

__all__ = [
    "ANSWER_TOKEN_MULTIPLE",
    "CHAT_PATH",
    "MAX_BODY_BYTES",
    "MODELS_PATH",
    "body_limit",
    "chat_params",
    "completion_cap",
    "parse_completion",
    "split_query",
]

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
    cap = completion_cap(request, judge_max_tokens=judge_max_tokens, meta_max_tokens=meta_max_tokens)
    if cap is not None:
        params[token_param] = cap
    if request.seed is not None:
        params["seed"] = request.seed
    if request.json_schema is not None:
        fmt = response_format(mode, request.json_schema)
        if fmt is not None:
            params["response_format"] = fmt
    return params


#: An answer longer than this many times the completion tokens requested is refused as too long
#: (a server ignoring the cap, or a hostile one); counted as ⌈characters / 4⌉.
ANSWER_TOKEN_MULTIPLE = 4
#: Bytes of a response body read at most when no token cap is requested (reasoning models).
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Bytes always allowed for the JSON around the answer (ids, usage, logprobs...).
_ENVELOPE_BYTES = 64 * 1024


def completion_cap(
    request: LLMRequest, *, judge_max_tokens: int | None, meta_max_tokens: int | None
) -> int | None:
    """The completion tokens requested: ``request.max_tokens``, else ``judge_max_tokens`` for a
    judge call and ``meta_max_tokens`` for any other (None: no cap)."""
    if request.max_tokens is not None:
        return request.max_tokens
    return judge_max_tokens if request.operation == JUDGE_OPERATION else meta_max_tokens


def body_limit(cap: int | None) -> int:
    """Bytes of a response body read before the call fails as too long, for a request of ``cap``
    completion tokens: the answer's bound (:data:`ANSWER_TOKEN_MULTIPLE` × ``cap`` tokens of 4
    characters, each up to 6 bytes escaped in JSON) plus 64 KiB; :data:`MAX_BODY_BYTES` without
    a cap."""
    if cap is None:
        return MAX_BODY_BYTES
    return min(MAX_BODY_BYTES, _ENVELOPE_BYTES + ANSWER_TOKEN_MULTIPLE * cap * CHARS_PER_TOKEN * 6)


def too_long(where: str, size: str, cap: int | None) -> AnswerTooLongError:
    """The error for an answer (or body) of ``size`` beyond the bound for ``cap`` tokens."""
    asked = f"{cap} completion tokens" if cap is not None else "no token cap"
    return AnswerTooLongError(f"{where}: answer too long ({size}; {asked} were requested)")


def parse_completion(
    body: bytes,
    *,
    where: str,
    messages: Sequence[ChatMessage] = (),
    cap: int | None = None,
) -> Completion:
    """The answer in a chat-completion response body.

    Token counts are the server's ``usage`` where it reports a positive whole number; where it
    reports none, zero, a negative, an unreadable or an impossible count (beyond what the prompt
    and the answer can hold: :data:`_PLAUSIBLE`; said once in a warning) they are counted
    locally: ⌈characters / 4⌉ of ``messages`` (the prompt) and of the answer.

    Args:
        where: the call's description, the start of an error message (no secret in it).
        messages: the request's messages (for a local prompt-token count).
        cap: the completion tokens requested (None: no cap).

    Raises:
        TransientLLMError: the body is not JSON or not a chat completion (e.g. a proxy's
            HTML error page with status 200, or a cut-off body).
        AnswerTooLongError: with ``cap``, an answer beyond :data:`ANSWER_TOKEN_MULTIPLE` × ``cap``
            tokens.
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
    text = str(message.get("content") or "")
    refusal = message.get("refusal")
    if not text.strip() and isinstance(refusal, str) and refusal.strip():
        said = refusal.strip()[:200]
        raise RefusalError(f"{where}: the model refused to answer ({said!r})", refusal=said)
    answer_tokens = _local_tokens(len(text))
    if cap is not None and answer_tokens > ANSWER_TOKEN_MULTIPLE * cap:
        raise too_long(where, f"about {answer_tokens} tokens", cap)
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    prompt = _reported(usage.get("prompt_tokens"))
    completion = _reported(usage.get("completion_tokens"))
    prompt_bytes = sum(len(m.content.encode("utf-8")) for m in messages)
    if prompt is not None and prompt > _PLAUSIBLE * prompt_bytes + _UNSEEN_TOKENS:
        prompt = _outlier(where, "prompt", prompt)
    if completion is not None and completion > _completion_bound(text, cap):
        completion = _outlier(where, "completion", completion)
    return Completion(
        text=text,
        prompt_tokens=prompt if prompt is not None else _local_tokens(sum(len(m.content) for m in messages)),
        completion_tokens=completion if completion is not None else answer_tokens,
    )


#: The kinds of impossible token counts already said in this process (``prompt``, ``completion``).
_SAID: set[str] = set()
#: A token covers at least one byte of text; a server's count up to this many tokens a byte (and
#: :data:`_UNSEEN_TOKENS` more: chat templates, a structured-output schema shown to the model) is
#: plausible. Counts beyond are impossible, not merely high.
_PLAUSIBLE = 4
_UNSEEN_TOKENS = 16_384
#: Completion tokens allowed without a cap (hidden reasoning included).
_UNCAPPED_COMPLETION_TOKENS = 1_000_000


def _completion_bound(text: str, cap: int | None) -> int:
    """The most completion tokens an answer ``text`` can have cost: see :data:`_PLAUSIBLE`, or
    what was asked (``cap``, twice over, for hidden reasoning), whichever is more."""
    allowed = 2 * cap if cap is not None else _UNCAPPED_COMPLETION_TOKENS
    return max(_PLAUSIBLE * len(text.encode("utf-8")) + _UNSEEN_TOKENS, allowed)


def _outlier(where: str, kind: str, value: int) -> int | None:
    """None (count locally), saying once per process and kind that a server reported an
    impossible token count (a 1e15-token usage made a $34 billion cost)."""
    if kind in _SAID:
        return None
    _SAID.add(kind)
    warnings.warn(
        f"the server reported {kind} token counts beyond what the request and its answer can hold "
        f"(e.g. {value:.3g} in {where.split(' (')[0]}); they are counted locally instead (characters / "
        f"{CHARS_PER_TOKEN}), so the usage, cost and budget stay true",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def _reported(value: Any) -> int | None:
    """A server's token count if it is a positive whole number, else None (count locally)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value) if value >= 1 and value == int(value) else None


def _local_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


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
