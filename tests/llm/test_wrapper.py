"""The client decorators a run stacks share one base, ``ClientWrapper``: it forwards ``usage``
and ``complete`` to ``inner``; a decorator only acts around the call."""

from __future__ import annotations

import asyncio
import inspect

from promptevolver.llm._attempts import _Watched
from promptevolver.llm._base import ChatMessage, LLMClient, LLMRequest
from promptevolver.llm._concurrency import _Limited
from promptevolver.llm._fake import ScriptedLLM
from promptevolver.llm._journal import _Journaled
from promptevolver.llm._wrapper import ClientWrapper
from promptevolver.optimizers._run import _Announced
from promptevolver.optimizers.strategies._budget import _Metered, price_of

DECORATORS = [_Watched, _Limited, _Journaled, _Metered, _Announced]


def test_every_client_decorator_is_a_client_wrapper_and_none_restates_usage():
    for cls in DECORATORS:
        assert issubclass(cls, ClientWrapper), cls
        assert "usage" not in vars(cls), f"{cls.__name__} restates usage"


def test_a_wrapper_forwards_complete_and_usage_and_can_be_walked():
    inner = ScriptedLLM(["one", "two"])
    outer = ClientWrapper(ClientWrapper(inner))
    assert isinstance(outer, LLMClient)
    request = LLMRequest((ChatMessage("user", "hi"),))
    answers = [asyncio.run(outer.complete(request)).text for _ in range(2)]
    assert answers == ["one", "two"]
    assert outer.usage is inner.usage and inner.usage.total_calls == 2
    assert price_of(outer) is None  # walked down through ``inner`` to a client without a price
    assert inspect.iscoroutinefunction(ClientWrapper.complete)


def test_the_stack_is_walked_outermost_first_and_a_cycle_ends_the_walk() -> None:
    from promptevolver.llm._wrapper import MAX_LAYERS, ClientWrapper, found_in_stack, stack_of
    from promptevolver.llm.pricing import Price

    inner = ScriptedLLM(["x"], price=Price(prompt=1.0, completion=2.0))
    outer = ClientWrapper(ClientWrapper(inner))
    assert list(stack_of(outer)) == [outer, outer.inner, inner]
    assert found_in_stack(outer, "price", Price) is inner.price
    assert found_in_stack(outer, "negotiation", Price) is None and list(stack_of(None)) == []

    class Loop:
        inner: object = None

    loop = Loop()
    loop.inner = loop
    assert len(list(stack_of(loop))) == MAX_LAYERS  # a cycle does not hang the caller
