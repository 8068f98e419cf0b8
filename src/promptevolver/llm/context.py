"""The model's context window: how many tokens one prompt (and its answer) may take.

``llm.context_tokens`` in a run config sets it; otherwise a known model's window comes from
:data:`CONTEXT_WINDOWS` (the providers' published figures, matched on the model name's longest
known prefix), and any other model gets :data:`DEFAULT_CONTEXT_TOKENS`. The distillation stage
packs the corrections it shows into prompts that fit (:mod:`promptevolver.optimizers._distill`); a
server that still answers ``context_length_exceeded`` (HTTP 400) raises
:class:`~promptevolver.errors.ContextLengthExceededError`, and the batch is split and sent again.

Tokens are estimated as ⌈characters / 4⌉ (:data:`~promptevolver.llm._ratelimit.CHARS_PER_TOKEN`),
OpenAI's rule of thumb for English text.
"""

from __future__ import annotations

from typing import Any

from promptevolver.llm._wrapper import stack_of

__all__ = ["CONTEXT_WINDOWS", "DEFAULT_CONTEXT_TOKENS", "context_tokens_for", "context_window"]

#: The window of a model we know nothing about: common for local models served today (8k–32k).
DEFAULT_CONTEXT_TOKENS = 32_000

#: Published context windows in tokens, by model-name prefix (OpenAI's model pages, Anthropic's,
#: Meta's, Mistral's and Qwen's model cards, as of 2026-11).
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-3": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "llama3.1": 131_072,
    "llama-3.1": 131_072,
    "meta-llama/llama-3.1": 131_072,
    "qwen2.5": 32_768,
    "qwen/qwen2.5": 32_768,
    "mistral": 32_768,
    "smollm2": 8_192,
}


def context_tokens_for(model: str | None, override: int | None = None) -> int:
    """The context window of ``model`` in tokens: ``override`` when given, else the table's entry
    for the longest matching prefix of the lower-cased name, else :data:`DEFAULT_CONTEXT_TOKENS`."""
    if override is not None:
        return override
    name = (model or "").lower()
    matches = [prefix for prefix in CONTEXT_WINDOWS if name.startswith(prefix)]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else DEFAULT_CONTEXT_TOKENS


def context_window(client: Any) -> int:
    """The context window (tokens) of ``client``: its ``context_tokens`` attribute, looked up
    through the wrappers around it (``inner``), else :data:`DEFAULT_CONTEXT_TOKENS`."""
    for layer in stack_of(client):
        tokens = getattr(layer, "context_tokens", None)
        if isinstance(tokens, int) and tokens > 0:
            return tokens
    return DEFAULT_CONTEXT_TOKENS
