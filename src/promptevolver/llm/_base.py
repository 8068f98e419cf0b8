"""The LLM client seam: one async method to implement, the base owns retries and usage.

Modelled on httpx's transport and DSPy's ``BaseLM``: a client subclasses :class:`BaseLLMClient`
and implements ``_send(request) -> Completion``; :meth:`BaseLLMClient.complete` adds bounded
retries with exponential backoff and jitter (tenacity) for :class:`TransientLLMError`, a
concurrency bound, optional rate limits (:mod:`promptevolver.llm._ratelimit`), and usage counting
by operation, with cost from an optional :class:`~promptevolver.llm.pricing.Price`. Anything
that only needs to *call* an LLM depends on the :class:`LLMClient` protocol.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypedDict, TypeVar, runtime_checkable

import numpy as np
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
)

from promptevolver.errors import LLMError, TransientLLMError
from promptevolver.llm._attempts import AttemptWatch, current_watch
from promptevolver.llm._ratelimit import Throttle, estimate_tokens
from promptevolver.llm._retry import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_RETRY_INITIAL_S,
    DEFAULT_RETRY_MAX_S,
    RetryPolicy,
)
from promptevolver.llm._wrapper import stack_of
from promptevolver.llm.pricing import Price

__all__ = [
    "JUDGE_OPERATION",
    "META_OPERATIONS",
    "BaseLLMClient",
    "ChatMessage",
    "ClientOptions",
    "Completion",
    "LLMClient",
    "LLMRequest",
    "Usage",
    "is_simulated",
]

#: A chat message's role (OpenAI's chat roles).
Role = Literal["system", "user", "assistant"]

#: The operation name of a call that scores a sample.
JUDGE_OPERATION = "judge"
#: Operation names of calls that write or critique instructions ("meta calls").
META_OPERATIONS = ("reverse_engineer", "feedback", "rewrite", "crossover")


def is_simulated(client: Any) -> bool:
    """Whether ``client`` (through any wrappers with ``inner``: cache, journal, limits) is the
    simulated LLM (``provider == "simulated"``, :mod:`promptevolver.simulation`), not a model."""
    return any(getattr(layer, "provider", None) == "simulated" for layer in stack_of(client))


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
    """An LLM answer: its text and token usage (prompt and completion tokens).

    ``cost_usd``, ``retries`` and ``cached`` say what the answer cost as the client counted it
    (USD; re-sends after transient failures; answered from a response cache), so that a run
    journal can replay an answer's whole usage on resume.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    cached: bool = False


_TOTALS = ("prompt_tokens", "completion_tokens", "cache_hits", "retries", "failures", "cost_usd")
_BY_OPERATION = (
    "calls_by_operation",
    "retries_by_operation",
    "failures_by_operation",
    "failures_by_cause",
    "cache_hits_by_operation",
    "prompt_tokens_by_operation",
    "completion_tokens_by_operation",
    "cost_usd_by_operation",
)


def _merged(a: dict[str, Any], b: dict[str, Any], sign: int = 1) -> dict[str, Any]:
    out = dict(a)
    for op, n in b.items():
        out[op] = out.get(op, 0) + sign * n
    return {op: n for op, n in out.items() if n}


def _bump(counts: dict[str, int], operation: str) -> None:
    counts[operation] = counts.get(operation, 0) + 1


def _add(totals: dict[str, Any], operation: str, amount: float) -> None:
    if amount:
        totals[operation] = totals.get(operation, 0) + amount


@dataclass
class Usage:
    """Counters of one client's activity.

    Attributes:
        calls_by_operation: operation name → answered calls (cache hits are not calls).
        prompt_tokens, completion_tokens: tokens of answered calls, as the provider counted them.
        cache_hits: requests answered from a response cache (no LLM call, no tokens, no cost).
        retries: re-sends after a transient failure (each one an extra request to the provider).
        failures: calls that gave up (after their retries, or at once on a permanent error) and,
            in a run's usage, judge evaluations that failed although every call was answered (an
            answer still malformed after the re-ask: ``parse``); each failure counted once.
        cost_usd: cost of answered calls in US dollars, from the client's
            :class:`~promptevolver.llm.pricing.Price` (0.0 when it has none).
        retries_by_operation, failures_by_operation, cache_hits_by_operation: the three
            counters above split by operation (operation name → count).
        failures_by_cause: ``failures`` split by cause (:attr:`LLMError.cause
            <promptevolver.errors.LLMError.cause>`: ``http 503``, ``transport``, ``parse``... → count).
        prompt_tokens_by_operation, completion_tokens_by_operation, cost_usd_by_operation:
            tokens and cost (USD) split by operation.

    Count through the ``record*`` methods so that totals and per-operation maps agree.
    ``+``, ``-`` and :meth:`copy` combine usages (e.g. a run's usage is ``after - before``).
    """

    calls_by_operation: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    cost_usd: float = 0.0
    retries_by_operation: dict[str, int] = field(default_factory=dict)
    failures_by_operation: dict[str, int] = field(default_factory=dict)
    failures_by_cause: dict[str, int] = field(default_factory=dict)
    cache_hits_by_operation: dict[str, int] = field(default_factory=dict)
    prompt_tokens_by_operation: dict[str, int] = field(default_factory=dict)
    completion_tokens_by_operation: dict[str, int] = field(default_factory=dict)
    cost_usd_by_operation: dict[str, float] = field(default_factory=dict)

    def record(self, operation: str, completion: Completion, *, cost_usd: float = 0.0) -> None:
        """Count one answered call of ``operation``, its tokens and its cost in USD."""
        _bump(self.calls_by_operation, operation)
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.cost_usd += cost_usd
        _add(self.prompt_tokens_by_operation, operation, completion.prompt_tokens)
        _add(self.completion_tokens_by_operation, operation, completion.completion_tokens)
        _add(self.cost_usd_by_operation, operation, cost_usd)

    def record_retry(self, operation: str) -> None:
        """Count one re-send of a call of ``operation``."""
        self.retries += 1
        _bump(self.retries_by_operation, operation)

    def record_failure(self, operation: str, cause: str) -> None:
        """Count one call of ``operation`` that gave up, or one failed evaluation, by ``cause``."""
        self.failures += 1
        _bump(self.failures_by_operation, operation)
        _bump(self.failures_by_cause, cause)

    def record_cache_hit(self, operation: str) -> None:
        """Count one request of ``operation`` answered from a cache."""
        self.cache_hits += 1
        _bump(self.cache_hits_by_operation, operation)

    @property
    def judge_calls(self) -> int:
        return self.calls_by_operation.get(JUDGE_OPERATION, 0)

    @property
    def meta_calls(self) -> int:
        return sum(n for op, n in self.calls_by_operation.items() if op != JUDGE_OPERATION)

    @property
    def total_calls(self) -> int:
        return sum(self.calls_by_operation.values())

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def copy(self) -> Usage:
        return self + Usage()

    def __add__(self, other: Usage) -> Usage:
        return self._combine(other, 1)

    def __sub__(self, other: Usage) -> Usage:
        return self._combine(other, -1)

    def _combine(self, other: Usage, sign: int) -> Usage:
        fields: dict[str, Any] = {n: getattr(self, n) + sign * getattr(other, n) for n in _TOTALS}
        for name in _BY_OPERATION:
            fields[name] = _merged(getattr(self, name), getattr(other, name), sign)
        return Usage(**fields)

    def prompt_tokens_per_call(self) -> dict[str, float]:
        """Operation → mean prompt tokens per answered call (e.g. ``judge``: what one judge call
        sends, teaching examples included), rounded to 0.1; operations without a call left out."""
        return {
            op: round(self.prompt_tokens_by_operation.get(op, 0) / n, 1)
            for op, n in sorted(self.calls_by_operation.items())
            if n
        }

    def to_dict(self) -> dict[str, Any]:
        """The ``usage`` block of result.json (README "Where results go"); ``cost_usd`` in US dollars."""
        return {
            "llm_calls": {"judge": self.judge_calls, "meta": self.meta_calls},
            "calls_by_operation": dict(sorted(self.calls_by_operation.items())),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "failures": self.failures,
            "cost_usd": round(self.cost_usd, 9),
            "retries_by_operation": dict(sorted(self.retries_by_operation.items())),
            "failures_by_operation": dict(sorted(self.failures_by_operation.items())),
            "failures_by_cause": dict(sorted(self.failures_by_cause.items())),
            "cache_hits_by_operation": dict(sorted(self.cache_hits_by_operation.items())),
            "prompt_tokens_by_operation": dict(sorted(self.prompt_tokens_by_operation.items())),
            "prompt_tokens_per_call": self.prompt_tokens_per_call(),
            "completion_tokens_by_operation": dict(sorted(self.completion_tokens_by_operation.items())),
            "cost_usd_by_operation": {
                op: round(v, 9) for op, v in sorted(self.cost_usd_by_operation.items())
            },
        }


@runtime_checkable
class LLMClient(Protocol):
    """What metrics and optimizers need from an LLM: an async ``complete`` and its ``usage``.

    ``usage`` may be a plain attribute or a property (wrappers such as
    :class:`~promptevolver.llm._cache.CachedLLM` compute theirs).
    """

    @property
    def usage(self) -> Usage: ...

    async def complete(self, request: LLMRequest) -> Completion:
        """Answer ``request``. Raises :class:`LLMError` when it cannot."""
        ...


_ClientT = TypeVar("_ClientT", bound="BaseLLMClient")


class ClientOptions(TypedDict, total=False):
    """:class:`BaseLLMClient`'s keyword arguments (retries, requests in flight, rate limits,
    price), for a provider's constructor to take as ``**options: Unpack[ClientOptions]`` and pass
    on: one list, one set of defaults (the base's)."""

    max_attempts: int
    retry_initial_s: float
    retry_max_s: float
    max_concurrency: int
    requests_per_minute: float | None
    tokens_per_minute: float | None
    price: Price | None


class BaseLLMClient(ABC):
    """Shared behaviour of our clients: retries, concurrency and rate limits, usage counting.

    One call of :meth:`complete` is: up to ``max_attempts`` attempts; each attempt takes a
    concurrency slot, waits for the rate limits (:class:`~promptevolver.llm._ratelimit.Throttle`),
    then calls ``_send`` once; between attempts it sleeps the backoff outside the slot. Inside a
    :func:`~promptevolver.llm._attempts.watched` call, each attempt is told to the watch, which
    may end the call during a backoff (it then fails with its last attempt's error).

    The retry policy (what is transient, the backoff, the defaults) is
    :mod:`promptevolver.llm._retry`'s; the three arguments below are a :class:`RetryPolicy`.

    Args:
        max_attempts: attempts per call including the first (≥ 1); only
            :class:`TransientLLMError` is retried.
        retry_initial_s: first backoff in seconds; doubles each retry, plus up to 1× jitter.
        retry_max_s: cap on one backoff in seconds. A server's ``Retry-After`` is honoured
            when longer than the computed backoff (but never beyond ``retry_max_s``).
        max_concurrency: maximum requests in flight through this client (≥ 1).
        requests_per_minute: optional limit on requests sent (retries included), > 0.
        tokens_per_minute: optional limit on prompt + completion tokens, > 0 (booked on an
            estimate before sending, corrected by the provider's count).
        price: optional price of the model; each answered call adds its cost to
            ``usage.cost_usd`` (USD).

    Raises:
        ValueError: an argument out of range (the message names it).
    """

    #: Provider kind, part of a response-cache key (see :meth:`cache_identity`).
    provider: str = "custom"
    #: The model's context window in tokens (None: unknown; see :mod:`promptevolver.llm.context`).
    context_tokens: int | None = None

    def __init__(
        self,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_initial_s: float = DEFAULT_RETRY_INITIAL_S,
        retry_max_s: float = DEFAULT_RETRY_MAX_S,
        max_concurrency: int = 16,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        price: Price | None = None,
    ) -> None:
        RetryPolicy(max_attempts, retry_initial_s, retry_max_s)  # checks the ranges
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.max_attempts = max_attempts
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self.max_concurrency = max_concurrency
        self.price = price
        self.usage = Usage()
        #: The rate limits; replaceable (e.g. by one on a fake clock in tests).
        self.throttle = Throttle(requests_per_minute=requests_per_minute, tokens_per_minute=tokens_per_minute)
        #: Async sleep (seconds) used for retry backoff; replaceable to observe waits in tests.
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        self._jitter = np.random.default_rng()

    async def __aenter__(self: _ClientT) -> _ClientT:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Release connections held for the running event loop (nothing to release here)."""

    async def preflight(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Check, with at most one cheap call, that this client can work before a run spends any
        (nothing to check here). Raises :class:`~promptevolver.errors.PermanentLLMError` with a
        one-line cause when it cannot; see :func:`promptevolver.llm._preflight.preflight`."""

    @abstractmethod
    async def _send(self, request: LLMRequest) -> Completion:
        """Send one request, once. Raise :class:`TransientLLMError` for retryable failures."""

    def cache_identity(self) -> dict[str, Any]:
        """What, besides the request, determines this client's answers: provider kind and model.

        A response cache puts it in its keys. Never include secrets (API keys) here.
        """
        return {"provider": self.provider, "model": getattr(self, "model", None)}

    async def complete(self, request: LLMRequest) -> Completion:
        """Answer ``request`` with retries; count the call, its tokens, cost and retries.

        Raises:
            LLMError: after ``max_attempts`` transient failures, or at once on a permanent one.
        """
        call = _Call(self, request, current_watch())
        try:
            completion = await self._attempts(call)
        except LLMError as exc:
            if exc.counts_as_failure:
                self.usage.record_failure(request.operation, exc.cause)
            exc.retries = call.retries
            raise
        cost = self._cost_usd(completion)
        self.usage.record(request.operation, completion, cost_usd=cost)
        return replace(completion, cost_usd=cost, retries=call.retries)

    async def _attempts(self, call: _Call) -> Completion:
        # The first attempt runs bare; only after a transient failure do the others run under
        # tenacity. Its per-call objects form reference cycles, and with many calls in flight
        # they outlive the young generations: building them for every call made full garbage
        # collections frequent enough to cost ~15% of throughput (benchmarks/perf/llm_throughput.py).
        try:
            return await call.attempt()
        except TransientLLMError as exc:
            if self.max_attempts == 1:
                raise
            first_wait = self._backoff_s(1, exc)
        await call.pause(first_wait)
        async for attempt in self._retrying(call):
            with attempt:
                return await call.attempt()
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def _attempt(self, request: LLMRequest) -> Completion:
        async with self._semaphore():
            if not self.throttle.active:
                return await self._send(request)
            booked = estimate_tokens((m.content for m in request.messages), request.max_tokens)
            await self.throttle.wait(booked)
            completion = await self._send(request)
            self.throttle.settle(booked=booked, used=completion.prompt_tokens + completion.completion_tokens)
            return completion

    def _cost_usd(self, completion: Completion) -> float:
        if self.price is None:
            return 0.0
        return self.price.cost_usd(
            prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens
        )

    @property
    def retry_policy(self) -> RetryPolicy:
        """The client's :class:`~promptevolver.llm._retry.RetryPolicy` (from its three settings)."""
        return RetryPolicy(self.max_attempts, self.retry_initial_s, self.retry_max_s)

    def _backoff_s(self, retry: int, exc: BaseException | None) -> float:
        """Seconds to wait before retry number ``retry`` (1 = the first) after ``exc``
        (:meth:`RetryPolicy.backoff_s <promptevolver.llm._retry.RetryPolicy.backoff_s>`)."""
        return self.retry_policy.backoff_s(retry, getattr(exc, "retry_after", None), self._jitter)

    def _retrying(self, call: _Call) -> AsyncRetrying:
        """Tenacity's loop for the attempts after the first (attempt_number 1 = the second); a
        retry is counted as it is sent, after its backoff."""

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            return self._backoff_s(state.attempt_number + 1, exc)

        def count_retry(_state: RetryCallState) -> None:
            self.usage.record_retry(call.request.operation)
            call.retries += 1

        return AsyncRetrying(
            retry=retry_if_exception_type(TransientLLMError),
            stop=stop_after_attempt(self.max_attempts - 1),
            wait=wait,
            before=count_retry,
            sleep=call.pause,
            reraise=True,
        )

    def _semaphore(self) -> asyncio.Semaphore:
        # One semaphore per running event loop: clients outlive `asyncio.run` calls.
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._semaphores:
            self._semaphores = {loop_id: asyncio.Semaphore(self.max_concurrency)}
        return self._semaphores[loop_id]


class _Call:
    """One call's attempts: each one told to the run's :class:`~promptevolver.llm._attempts.AttemptWatch`
    (if the call is watched), and the backoff between them cut short when the watch gives up."""

    __slots__ = ("client", "last", "request", "retries", "watch")

    def __init__(self, client: BaseLLMClient, request: LLMRequest, watch: AttemptWatch | None) -> None:
        self.client, self.request, self.watch = client, request, watch
        self.last: LLMError | None = None
        self.retries = 0  # re-sends made so far

    async def attempt(self) -> Completion:
        try:
            completion = await self.client._attempt(self.request)
        except LLMError as exc:
            self.last = exc
            if self.watch is not None:
                self.watch.attempted(exc)
            raise
        if self.watch is not None:
            self.watch.attempted(None)
        return completion

    async def pause(self, seconds: float) -> None:
        """Sleep the backoff; raise the last attempt's error when the watch gives the call up."""
        if self.watch is None:
            await self.client.sleep(seconds)
        elif not await self.watch.pause(seconds, self.client.sleep) and self.last is not None:
            raise self.last
