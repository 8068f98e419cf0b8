"""Test and benchmark helpers: a local OpenAI-compatible server with fault injection."""

from promptevolver.testing.openai_server import Fault, Handler, LocalOpenAIServer

__all__ = ["Fault", "Handler", "LocalOpenAIServer"]
