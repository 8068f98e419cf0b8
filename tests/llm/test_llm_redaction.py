"""Secrets never leave through URLs: redaction helpers, and the client's messages and reprs."""

from __future__ import annotations

import asyncio

import pytest

from promptevolver.errors import LLMError
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.llm._redaction import redact_text, redact_url
from promptevolver.llm.openai import OpenAIClient
from promptevolver.testing import Fault, LocalOpenAIServer

SECRET = "Zq9-very-secret-value"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        (f"https://bob:{SECRET}@proxy.example/v1", "https://***@proxy.example/v1"),
        (
            f"https://proxy.example/openai?api-key={SECRET}&api-version=2024",
            "https://proxy.example/openai?api-key=***&api-version=***",
        ),
        (f"https://proxy.example/v1?{SECRET}", "https://proxy.example/v1?***"),
        (f"http://[::1]:8080/v1#{SECRET}", "http://[::1]:8080/v1#***"),
        ("not a url", "not a url"),
        ("http://host:99999999/v1", "***"),  # unparseable port: nothing shown rather than risk it
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_finds_urls_keys_and_given_secrets() -> None:
    text = (
        f"POST https://proxy/v1?api-key={SECRET}. failed, key sk-proj-abcdEFGH1234 and "
        f"sk-te****cdef, token {SECRET[:8]}; see (https://u:{SECRET}@h/x)"
    )
    out = redact_text(text, [SECRET[:8], ""])
    assert SECRET not in out and SECRET[:8] not in out and "sk-" not in out
    assert "https://proxy/v1?api-key=***." in out and "(https://***@h/x)" in out


def test_the_client_never_shows_a_key_in_its_base_url() -> None:
    with LocalOpenAIServer(lambda body: "OK") as srv:
        srv.inject(Fault.error(400, f"bad request to {srv.base_url}?api-key={SECRET}"))
        client = OpenAIClient(
            model="m",
            base_url=f"http://127.0.0.1:{srv.port}/v1?api-key={SECRET}",  # userinfo is refused
            api_key="sk-local-0000000000",
            max_attempts=1,
        )
        request = LLMRequest((ChatMessage("user", "hi"),))

        async def main() -> str:
            async with client:
                try:
                    await client.complete(request)
                except LLMError as exc:
                    return str(exc)
            return ""

        message = asyncio.run(main())
    assert "bad request" in message
    assert SECRET not in message + repr(client) + client.display_url + str(client.cache_identity())
    assert client.display_url == f"http://127.0.0.1:{srv.port}/v1?api-key=***"


@pytest.mark.parametrize("key", ["x", "any", "none", "dummy", "local1"])
def test_a_local_server_s_placeholder_key_never_mangles_the_words_around_it(key: str) -> None:
    """A local server checks no key, so people set OPENAI_API_KEY=x or =any: every error the client
    showed had each 'x' / 'any' in its words replaced ("e***ceeded", "m*** requests"). A short key
    is masked where it stands alone, never inside a word; an issued key, wherever it appears."""
    words = "the context was exceeded (max_tokens 512): too many requests, nonetheless dummyish local10"
    assert redact_text(words, [key]) == words
    assert redact_text(f"invalid key {key}; Authorization: {key}, key={key}.", [key]) == (
        "invalid key ***; Authorization: ***, key=***."
    )
    issued = "sk9Xq2" + "Lm4Tz8Wv1Rp"  # no 'sk-' prefix: masked as given, even inside a word
    assert redact_text(f"token{issued}tail and {issued}", [issued]) == "token***tail and ***"
