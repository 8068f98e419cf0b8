"""Watching every attempt of a run's LLM calls, retries included, and cutting backoff short.

A call of :class:`~promptevolver.llm._base.BaseLLMClient` makes up to ``max_attempts`` attempts
with seconds of backoff between them; whoever calls only sees the call's end. A run that must
notice a dead server quickly, and stop retrying once it has decided to stop, needs each attempt.
:func:`watched` wraps a client so that, during each of its calls, the client's attempts are told
to an :class:`AttemptWatch`: the base client calls :meth:`AttemptWatch.attempted` after every
attempt and sleeps its backoff through :meth:`AttemptWatch.pause`, which may end the call instead
of retrying (the call then fails with its last attempt's error, counted and journaled as usual).

The watch travels in a :class:`contextvars.ContextVar`, set for the duration of one wrapped call
(so it reaches the client through any wrapper: cache, journal, budget meter, concurrency limit)
and reset after it: calls made outside the wrapper are never watched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

from promptevolver.errors import LLMError
from promptevolver.llm._wrapper import ClientWrapper

if TYPE_CHECKING:
    from promptevolver.llm._base import Completion, LLMClient, LLMRequest

__all__ = ["AttemptWatch", "current_watch", "watched"]


class AttemptWatch(Protocol):
    """What a watched client reports to, and asks before retrying."""

    def attempted(self, error: LLMError | None) -> None:
        """One attempt ended: ``error`` None when it was answered, else why it failed."""
        ...

    async def pause(self, seconds: float, sleep: Callable[[float], Awaitable[None]]) -> bool:
        """Sleep a backoff of ``seconds`` with ``sleep``; False: give the call up, do not retry
        (the watch decided to stop, before or during the pause)."""
        ...


_CURRENT: ContextVar[AttemptWatch | None] = ContextVar("promptevolver_attempt_watch", default=None)


def current_watch() -> AttemptWatch | None:
    """The watch of the call being made, or None outside a :func:`watched` call."""
    return _CURRENT.get()


def watched(client: LLMClient, watch: AttemptWatch) -> LLMClient:
    """``client`` with the attempts of each of its calls told to ``watch`` (its usage is the
    client's). Clients that are not :class:`~promptevolver.llm._base.BaseLLMClient` make no
    attempts of their own to report, and are not affected."""
    return _Watched(client, watch)


class _Watched(ClientWrapper):
    def __init__(self, inner: LLMClient, watch: AttemptWatch) -> None:
        super().__init__(inner)
        self.watch = watch

    async def complete(self, request: LLMRequest) -> Completion:
        token = _CURRENT.set(self.watch)
        try:
            return await self.inner.complete(request)
        finally:
            _CURRENT.reset(token)
