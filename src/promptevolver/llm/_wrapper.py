"""The one base of the client decorators (``ClientWrapper``).

It imports nothing of the package at run time, so every module that decorates a client
(:mod:`._attempts`, :mod:`._concurrency`, :mod:`._journal`, the budget meter, the run's progress
announcer) can subclass it without an import circle through :mod:`._base`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from promptevolver.llm._base import Completion, LLMClient, LLMRequest, Usage

__all__ = ["ClientWrapper", "found_in_stack", "stack_of"]

T = TypeVar("T")
#: Layers :func:`stack_of` walks at most (a longer chain, or a cycle, ends the walk there).
MAX_LAYERS = 16


class ClientWrapper:
    """The one base of the client decorators a run stacks around its clients (the attempt watch,
    the in-flight limit, the journal, the budget meter, the progress announcer): it holds the
    wrapped client as ``inner``, reports its ``usage`` and forwards ``complete``; a decorator
    overrides ``complete`` to act around the call. ``inner`` also lets a caller walk the stack
    (:func:`stack_of`, :func:`found_in_stack`: the one walk).

    Args:
        inner: the client wrapped (an :class:`LLMClient`, maybe another wrapper).
    """

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    async def complete(self, request: LLMRequest) -> Completion:
        return await self.inner.complete(request)


def stack_of(client: object) -> Iterator[object]:
    """``client``, then each client it wraps (its ``inner``, that one's ``inner``...), outermost
    first: a decorator stack, a ``CachedLLM`` and its client; at most :data:`MAX_LAYERS`."""
    for _ in range(MAX_LAYERS):
        if client is None:
            return
        yield client
        client = getattr(client, "inner", None)


def found_in_stack(client: object, attribute: str, kind: type[T]) -> T | None:
    """The outermost ``attribute`` of type ``kind`` in ``client``'s stack (:func:`stack_of`), e.g.
    the price or the negotiation of the client a run's decorators wrap; None when no layer has one."""
    for layer in stack_of(client):
        value = getattr(layer, attribute, None)
        if isinstance(value, kind):
            return value
    return None
