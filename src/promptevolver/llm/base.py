"""The LLM client seam: one async method to implement, the base owns retries and usage.

Modelled on httpx's transport and DSPy's ``BaseLM``: a client subclasses :class:`BaseLLMClient`
and implements ``_send(request) -> Completion``; :meth:`BaseLLMClient.complete` adds bounded
retries with exponential backoff and jitter (tenacity) for :class:`TransientLLMError`, a
concurrency bound, and usage counting by operation. Anything that only needs to *call* an LLM
depends on the :class:`LLMClient` protocol.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
)

from promptevolver.errors import LLMError, TransientLLMError

__all__ = [
    "JUDGE_OPERATION",
    "META_OPERATIONS",
    "BaseLLMClient",
    "ChatMessage",
    "Completion",
    "LLMClient",
    "LLMRequest",
    "Usage",
]

Role = Literal["system", "user", "assistant"]

#: The operation name of a call that scores a sample.
JUDGE_OPERATION = "judge"
#: Operation names of calls that write or critique instructions ("meta calls").
META_OPERATIONS = ("reverse_engineer", "feedback", "rewrite", "crossover")


@dataclass(frozen=True)
class ChatMessage:
    """One chat message: ``role`` is ``system``, ``user`` or ``assistant``; ``content`` is text."""

    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class LLMRequest:
    """Everything that determines an LLM answer, plus the operation it is made for.

    Attributes:
        messages: the conversation, oldest first.
        temperature: sampling temperature (0.0 = greedy).
        max_tokens: upper bound on completion tokens, or None for the server default.
        seed: provider sampling seed, or None.
        json_schema: JSON schema the answer must follow, or None for free text.
        operation: ``judge`` or one of :data:`META_OPERATIONS`; used for usage accounting only,
            never sent to the provider.
        sample_index: distinguishes repeated samples at temperature > 0 (cache key part).
    """

    messages: tuple[ChatMessage, ...]
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    json_schema: dict[str, Any] | None = None
    operation: str = JUDGE_OPERATION
    sample_index: int = 0


@dataclass(frozen=True)
class Completion:
    """An LLM answer: its text and token usage (prompt and completion tokens)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Usage:
    """Counters of one client's activity. Calls count answered requests; retries count re-sends.

    ``calls_by_operation`` maps an operation name to its number of answered calls; ``failures``
    counts calls that gave up after their retries.
    """

    calls_by_operation: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0

    def record(self, operation: str, completion: Completion) -> None:
        """Count one answered call of ``operation`` and its tokens."""
        self.calls_by_operation[operation] = self.calls_by_operation.get(operation, 0) + 1
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens

    @property
    def judge_calls(self) -> int:
        return self.calls_by_operation.get(JUDGE_OPERATION, 0)

    @property
    def meta_calls(self) -> int:
        return sum(n for op, n in self.calls_by_operation.items() if op != JUDGE_OPERATION)

    @property
    def total_calls(self) -> int:
        return sum(self.calls_by_operation.values())

    def copy(self) -> Usage:
        return Usage(
            calls_by_operation=dict(self.calls_by_operation),
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cache_hits=self.cache_hits,
            retries=self.retries,
            failures=self.failures,
        )

    def __add__(self, other: Usage) -> Usage:
        ops = dict(self.calls_by_operation)
        for op, n in other.calls_by_operation.items():
            ops[op] = ops.get(op, 0) + n
        return Usage(
            calls_by_operation=ops,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cache_hits=self.cache_hits + other.cache_hits,
            retries=self.retries + other.retries,
            failures=self.failures + other.failures,
        )

    def __sub__(self, other: Usage) -> Usage:
        ops = {op: n - other.calls_by_operation.get(op, 0) for op, n in self.calls_by_operation.items()}
        return Usage(
            calls_by_operation={op: n for op, n in ops.items() if n},
            prompt_tokens=self.prompt_tokens - other.prompt_tokens,
            completion_tokens=self.completion_tokens - other.completion_tokens,
            cache_hits=self.cache_hits - other.cache_hits,
            retries=self.retries - other.retries,
            failures=self.failures - other.failures,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``usage`` block of result.json (see DESIGN.md)."""
        return {
            "llm_calls": {"judge": self.judge_calls, "meta": self.meta_calls},
            "calls_by_operation": dict(sorted(self.calls_by_operation.items())),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "failures": self.failures,
        }


@runtime_checkable
class LLMClient(Protocol):
    """What metrics and optimizers need from an LLM: an async ``complete`` and its ``usage``."""

    usage: Usage

    async def complete(self, request: LLMRequest) -> Completion:
        """Answer ``request``. Raises :class:`LLMError` when it cannot."""
        ...


class BaseLLMClient(ABC):
    """Shared behaviour of our clients: retries, a concurrency bound and usage counting.

    Args:
        max_attempts: attempts per call including the first (≥ 1); only
            :class:`TransientLLMError` is retried.
        retry_initial_s: first backoff in seconds; doubles each retry, plus up to 1× jitter.
        retry_max_s: cap on one backoff in seconds. A server's ``Retry-After`` is honoured
            when longer than the computed backoff (but never beyond ``retry_max_s``).
        max_concurrency: maximum requests in flight through this client (≥ 1).
    """

    def __init__(
        self,
        *,
        max_attempts: int = 4,
        retry_initial_s: float = 1.0,
        retry_max_s: float = 30.0,
        max_concurrency: int = 16,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if retry_initial_s < 0 or retry_max_s < 0:
            raise ValueError("retry_initial_s and retry_max_s must be >= 0")
        self.max_attempts = max_attempts
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self.max_concurrency = max_concurrency
        self.usage = Usage()
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._jitter = np.random.default_rng()

    @abstractmethod
    async def _send(self, request: LLMRequest) -> Completion:
        """Send one request, once. Raise :class:`TransientLLMError` for retryable failures."""

    async def complete(self, request: LLMRequest) -> Completion:
        """Answer ``request`` with retries; count the call, its tokens and its retries.

        Raises:
            LLMError: after ``max_attempts`` transient failures, or at once on a permanent one.
        """
        try:
            async for attempt in self._retrying():
                with attempt:
                    async with self._semaphore():
                        completion = await self._send(request)
        except LLMError:
            self.usage.failures += 1
            raise
        self.usage.record(request.operation, completion)
        return completion

    def _retrying(self) -> AsyncRetrying:
        def wait(state: RetryCallState) -> float:
            # Exponential backoff with "full jitter" on top (AWS architecture blog, 2015):
            # initial · 2^(n-1) + U(0, initial), capped at retry_max_s. Jitter only spreads
            # retries in time; it never affects a result, so it uses its own unseeded generator.
            base = self.retry_initial_s * 2 ** (state.attempt_number - 1)
            computed = min(self.retry_max_s, base + float(self._jitter.uniform(0, self.retry_initial_s)))
            exc = state.outcome.exception() if state.outcome else None
            asked = getattr(exc, "retry_after", None)
            if asked is not None:
                computed = max(computed, min(float(asked), self.retry_max_s))
            return computed

        def count_retry(_state: RetryCallState) -> None:
            self.usage.retries += 1

        return AsyncRetrying(
            retry=retry_if_exception_type(TransientLLMError),
            stop=stop_after_attempt(self.max_attempts),
            wait=wait,
            before_sleep=count_retry,
            reraise=True,
        )

    def _semaphore(self) -> asyncio.Semaphore:
        # One semaphore per running event loop: clients outlive `asyncio.run` calls.
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._semaphores:
            self._semaphores = {loop_id: asyncio.Semaphore(self.max_concurrency)}
        return self._semaphores[loop_id]
