"""Back a :class:`~promptevolver.testing.LocalOpenAIServer` with the simulated judge.

:func:`simulated_handler` turns a chat-completions request body back into an
:class:`~promptevolver.llm._base.LLMRequest` and answers it with
:meth:`SimulatedJudgeLLM.answer <promptevolver.simulation._simulated_llm.SimulatedJudgeLLM.answer>`, a pure
function, so a whole optimization can run through :class:`~promptevolver.llm.OpenAIClient` over
real HTTP and get the same answers as with the simulated client itself::

    with LocalOpenAIServer(simulated_handler(SimulatedJudgeLLM(dataset=ds, random_seed=42))) as srv:
        llm = OpenAIClient(model="sim", base_url=srv.base_url, api_key="sk-test")

What does not cross the wire is lost: ``operation`` and ``sample_index`` (so the simulated
noise is drawn as for ``sample_index`` 0).
"""

from __future__ import annotations

from typing import Any, cast

from promptevolver.llm import ChatMessage, LLMRequest, Role
from promptevolver.simulation import SimulatedJudgeLLM
from promptevolver.testing._openai_server import Handler

__all__ = ["request_from_body", "simulated_handler"]


def request_from_body(body: dict[str, Any]) -> LLMRequest:
    """The :class:`LLMRequest` a chat-completions request body carries.

    Raises:
        KeyError, TypeError: a body without a list of ``{"role", "content"}`` messages (the
            server answers 500).
    """
    messages = tuple(ChatMessage(cast(Role, m["role"]), str(m["content"])) for m in body["messages"])
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get("schema")
    return LLMRequest(
        messages=messages,
        temperature=float(body.get("temperature", 0.0)),
        max_tokens=body.get("max_tokens"),
        seed=body.get("seed"),
        json_schema=schema,
    )


def simulated_handler(llm: SimulatedJudgeLLM) -> Handler:
    """A server handler answering every request body as ``llm`` would."""

    def handler(body: dict[str, Any]) -> str:
        return llm.answer(request_from_body(body))

    return handler
