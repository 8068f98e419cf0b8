"""Scripted fake LLM for unit tests (like httpx's ``MockTransport`` or DSPy's ``DummyLM``).

:class:`ScriptedLLM` answers from a list (in order), or from a handler called with each request.
An item that is an exception instance is raised instead of answered, so tests can inject any
client error on cue. Every request is recorded in ``requests``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from promptevolver.llm._base import BaseLLMClient, Completion, LLMRequest
from promptevolver.llm._retry import DEFAULT_MAX_ATTEMPTS
from promptevolver.llm.pricing import Price

__all__ = ["ScriptedLLM", "count_tokens"]

Answer = str | Completion | BaseException


def count_tokens(text: str) -> int:
    """Approximate token count used by the fakes: whitespace-separated words."""
    return len(text.split())


class ScriptedLLM(BaseLLMClient):
    """Answers from a script or a handler; records every request.

    Args:
        responses: answers in order (a str, a :class:`Completion`, or an exception to raise).
        handler: alternatively, a function ``request -> answer``.
        retry_initial_s: backoff in seconds for the base's retries (0 by default: tests do not wait).
        max_attempts, max_concurrency, price: see :class:`~promptevolver.llm._base.BaseLLMClient`.

    Raises:
        ValueError: both or neither of ``responses`` and ``handler`` given.
        IndexError: at call time, when the script is exhausted.
    """

    provider = "scripted"

    def __init__(
        self,
        responses: Iterable[Answer] | None = None,
        *,
        handler: Callable[[LLMRequest], Answer] | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_initial_s: float = 0.0,
        max_concurrency: int = 64,
        price: Price | None = None,
    ) -> None:
        if (responses is None) == (handler is None):
            raise ValueError("give exactly one of responses or handler")
        super().__init__(
            max_attempts=max_attempts,
            retry_initial_s=retry_initial_s,
            retry_max_s=0.0,
            max_concurrency=max_concurrency,
            price=price,
        )
        self._script = list(responses) if responses is not None else None
        self._handler = handler
        self.requests: list[LLMRequest] = []

    async def _send(self, request: LLMRequest) -> Completion:
        self.requests.append(request)
        if self._script is not None:
            if not self._script:
                raise IndexError(f"ScriptedLLM script exhausted after {len(self.requests) - 1} answers")
            answer = self._script.pop(0)
        else:
            assert self._handler is not None
            answer = self._handler(request)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, Completion):
            return answer
        prompt_text = " ".join(m.content for m in request.messages)
        return Completion(
            text=answer, prompt_tokens=count_tokens(prompt_text), completion_tokens=count_tokens(answer)
        )
