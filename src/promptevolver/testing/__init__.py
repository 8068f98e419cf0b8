"""Test and benchmark helpers: a local OpenAI-compatible server with fault injection and the
dialects of real server products, a handler that backs it with the simulated judge, and
:func:`assert_agreement`, the judge gate for users' test suites (README "Pin your judge in CI"), and
(imported as :mod:`promptevolver.testing.contracts`) the contract suites for a user's own LLM
client, metric or loss."""

from promptevolver.testing._dialects import DIALECTS, Dialect, Reply
from promptevolver.testing._gate import assert_agreement
from promptevolver.testing._openai_server import Fault, Handler, LocalOpenAIServer
from promptevolver.testing._simulated_server import request_from_body, simulated_handler

__all__ = [
    "DIALECTS",
    "Dialect",
    "Fault",
    "Handler",
    "LocalOpenAIServer",
    "Reply",
    "assert_agreement",
    "request_from_body",
    "simulated_handler",
]
