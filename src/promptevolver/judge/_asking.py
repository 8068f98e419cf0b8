"""Asking one prompt: send its rendered messages, parse the answer, re-ask a malformed one.

:func:`ask` is the one request loop every judge of ours uses
(:class:`~promptevolver.judge._aspect_critic.AspectCritic`,
:class:`~promptevolver.judge._rubric.RubricJudge`, both prompts of
:class:`~promptevolver.judge._statements.StatementSupport`). An answer that does not parse, or that
``check`` rejects (a score out of range, a verdict list of the wrong length), is re-asked up to
``max_reasks`` times with the problem shown; an LLM failure (after the client's retries) is not
re-asked. Either way the outcome is an :class:`Answer`: the parsed output, or a failure with its
cause — never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic

from promptevolver.errors import LLMError, OutputParseError
from promptevolver.judge._prompts import OutputT, Prompt
from promptevolver.judge._protocol import Judgement
from promptevolver.llm import ChatMessage, LLMClient, LLMRequest

__all__ = ["Answer", "UnusableAnswer", "ask", "output_dict"]

_REASK = "Answer with the JSON object only."


class UnusableAnswer(ValueError):
    """Raised by an :func:`ask` ``check``: the answer parsed but cannot be used (the message says why)."""


@dataclass(frozen=True)
class Answer(Generic[OutputT]):
    """The outcome of asking one prompt.

    Attributes:
        output: the parsed (and checked) answer; None when the ask failed.
        raw: the model's last text, if any.
        error: why the ask failed (None on success); cause: the kind of failure (``parse`` or an
            :attr:`LLMError.cause <promptevolver.errors.LLMError.cause>`).
    """

    output: OutputT | None
    raw: str | None
    error: str | None = None
    cause: str | None = None

    def failure(self, prefix: str = "") -> Judgement:
        """This failed ask as a failed :class:`Judgement` (``prefix`` names the prompt, if wanted)."""
        return Judgement(score=None, raw=self.raw, error=f"{prefix}{self.error}", cause=self.cause)


async def ask(
    llm: LLMClient,
    prompt: Prompt[OutputT],
    messages: tuple[ChatMessage, ...],
    *,
    sample_index: int,
    temperature: float,
    max_reasks: int,
    check: Callable[[OutputT], None] | None = None,
) -> Answer[OutputT]:
    """Send ``messages`` (rendered by ``prompt``) and parse the answer as ``prompt.output_model``.

    Attempt ``k`` (0-based) sends ``sample_index + k``; a re-ask appends the malformed answer and a
    user message naming the problem. ``check`` may raise :class:`OutputParseError` for a parsed
    answer that is unusable; it is re-asked like a malformed one.

    Never raises for LLM trouble: it becomes a failed :class:`Answer`.
    """
    raw: str | None = None
    error = "no attempt made"
    for attempt in range(max_reasks + 1):
        request = LLMRequest(
            messages,
            temperature=temperature,
            json_schema=prompt.json_schema(),
            sample_index=sample_index + attempt,
        )
        try:
            raw = (await llm.complete(request)).text
            parsed = prompt.parse(raw)
            if check is not None:
                check(parsed)
        except (OutputParseError, UnusableAnswer) as exc:
            messages = messages[:2] + (
                ChatMessage("assistant", raw or ""),
                ChatMessage("user", f"Your answer could not be used ({exc}). {_REASK}"),
            )
            error = f"unparseable output: {exc}"
            continue
        except LLMError as exc:
            return Answer(None, raw, f"{type(exc).__name__}: {exc}", exc.cause)
        return Answer(parsed, raw)
    return Answer(None, raw, error, "parse")


def output_dict(output: Any) -> dict[str, Any]:
    """A parsed output as a JSON-ready dict (for ``Judgement.details``)."""
    return dict(output.model_dump(mode="json"))
