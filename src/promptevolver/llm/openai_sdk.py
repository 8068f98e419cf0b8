"""The SDK client (``openai.AsyncOpenAI``) of the running event loop, for the OpenAI client.

An SDK client keeps connections bound to the event loop it was first used in, and our clients
outlive one ``asyncio.run``: :class:`LoopSDK` builds one per running loop. The SDK's own retries
are off (``max_retries=0``: the base class retries with tenacity), and a query string in
``base_url`` is sent as parameters of every request
(:func:`~promptevolver.llm.openai_wire.split_query`).
"""

from __future__ import annotations

import asyncio
import weakref

from openai import AsyncOpenAI

from promptevolver.llm.openai_wire import split_query

__all__ = ["LoopSDK"]


class LoopSDK:
    """The SDK client of the running event loop, built on first use in each loop.

    Args:
        base_url: API root (None: the SDK's default); api_key: the key (never shown in ``repr``);
        timeout_s: per-request timeout in seconds.
    """

    def __init__(self, *, base_url: str | None, api_key: str, timeout_s: float) -> None:
        self._base_url = base_url
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._sdk: AsyncOpenAI | None = None
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(timeout_s={self._timeout_s:g})"

    def current(self) -> AsyncOpenAI:
        """The SDK client of the running event loop (made now if it has none).

        Raises:
            RuntimeError: no event loop is running.
        """
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._loop is None or self._loop() is not loop:
            root, query = split_query(self._base_url)
            self._sdk = AsyncOpenAI(
                api_key=self._api_key,
                base_url=root,
                timeout=self._timeout_s,
                max_retries=0,
                default_query=query or None,
            )
            self._loop = weakref.ref(loop)
        return self._sdk

    async def aclose(self) -> None:
        """Close the SDK client last made (and its connections), if any."""
        sdk, self._sdk, self._loop = self._sdk, None, None
        if sdk is not None:
            await sdk.close()
