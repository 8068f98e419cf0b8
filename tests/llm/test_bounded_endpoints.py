"""Issue 31, items 6 and 8: every endpoint the client reads is bounded in time and size, and what
it answers is checked before it is used. Chat completions, embeddings and the model list, each
against a body sent one byte a second and a body that never ends, through real HTTP; embedding
vectors that are zero, huge, tiny or misnumbered are refused, never compared; a cache row of the
wrong type is asked again, never replayed; an interrupted run stops its embedding requests."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from promptevolver.errors import AnswerTooLongError, LLMError, NotSentError, TransientLLMError
from promptevolver.llm._base import ChatMessage, Completion, LLMRequest
from promptevolver.llm._cache import ResponseStore
from promptevolver.llm.openai import OpenAIClient, OpenAIEmbeddings
from promptevolver.llm.openai._embeddings import body_limit
from promptevolver.testing import Fault, LocalOpenAIServer

KEY = "sk-bounded-0123456789"
TIMEOUT_S = 1.5


@pytest.fixture
def server() -> Iterator[LocalOpenAIServer]:
    with LocalOpenAIServer(lambda body: '{"reason": "fine", "verdict": 1}', models=["m", "e"]) as srv:
        yield srv


def _chat(server: LocalOpenAIServer) -> None:
    client = OpenAIClient(
        model="m",
        base_url=server.base_url,
        api_key=KEY,
        timeout_s=TIMEOUT_S,
        max_attempts=1,
        judge_max_tokens=64,
    )

    async def main() -> Completion:
        async with client:
            return await client.complete(LLMRequest(messages=(ChatMessage("user", "Right?"),)))

    asyncio.run(main())


def _embeddings(server: LocalOpenAIServer) -> None:
    client = OpenAIEmbeddings(
        model="e", base_url=server.base_url, api_key=KEY, timeout_s=TIMEOUT_S, max_attempts=1, dimensions=16
    )
    client.embed(["a red car", "bananas"])


ENDPOINTS: dict[str, Callable[[LocalOpenAIServer], None]] = {"chat": _chat, "embeddings": _embeddings}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_body_sent_one_byte_a_second_fails_within_the_deadline(
    server: LocalOpenAIServer, endpoint: str
) -> None:
    server.inject(Fault.slow_body(1.0))
    started = time.monotonic()
    with pytest.raises(TransientLLMError, match=rf"no complete answer within timeout_s={TIMEOUT_S:g} s"):
        ENDPOINTS[endpoint](server)
    assert time.monotonic() - started < 3 * TIMEOUT_S


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_body_that_never_ends_is_cut_off_as_too_long(server: LocalOpenAIServer, endpoint: str) -> None:
    server.inject(Fault.endless_body())
    started = time.monotonic()
    with pytest.raises(AnswerTooLongError, match="answer too long"):
        ENDPOINTS[endpoint](server)
    assert time.monotonic() - started < 3 * TIMEOUT_S


def test_the_embeddings_body_bound_follows_the_vectors_asked() -> None:
    assert body_limit(2, 16) < 100_000 < body_limit(64, 3072) < 10_000_000
    assert body_limit(1, None) == body_limit(1, 8192)


class _EndlessModels(LocalOpenAIServer):
    """``GET /models`` answers a list that never ends."""

    def __init__(self) -> None:
        super().__init__(lambda body: '{"reason": "fine", "verdict": 1}')
        self.models_endpoint = True

    def start(self) -> Any:
        started = super().start()
        assert self._httpd is not None
        handler = self._httpd.RequestHandlerClass
        original = handler.do_GET

        def do_get(this: Any) -> None:
            if this.path.split("?", 1)[0].rstrip("/").endswith("/models"):
                this._send_endless()
                return
            original(this)

        handler.do_GET = do_get
        return started


def test_a_model_list_that_never_ends_is_no_list_and_the_chat_call_decides() -> None:
    with _EndlessModels() as srv:
        client = OpenAIClient(model="m", base_url=srv.base_url, api_key=KEY, timeout_s=30.0, max_attempts=1)

        async def main() -> None:
            async with client:
                await client.preflight()

        started = time.monotonic()
        asyncio.run(main())  # the 1-token chat call answered: the server is usable
        assert time.monotonic() - started < 30.0 and srv.requests


# -- embedding vectors ---------------------------------------------------------------------------------


class _Vectors(LocalOpenAIServer):
    """``POST /embeddings`` answers what ``make(n)`` returns for a batch of ``n`` texts."""

    def __init__(self, make: Callable[[int], list[dict[str, Any]]]) -> None:
        super().__init__(lambda body: "unused")
        self.make = make

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        n = len(body["input"])
        return {"object": "list", "data": self.make(n), "usage": {"prompt_tokens": n, "total_tokens": n}}


def _items(vectors: list[list[float]], indices: list[int] | None = None) -> list[dict[str, Any]]:
    indices = list(range(len(vectors))) if indices is None else indices
    return [{"object": "embedding", "index": i, "embedding": v} for i, v in zip(indices, vectors)]


GOOD = [0.1, 0.2, 0.3]
BAD_VECTORS = {
    "zero": ([GOOD, [0.0, 0.0, 0.0]], "zero"),
    "huge (3e38)": ([GOOD, [3e38, 0.0, 0.0]], "huge"),
    "tiny (1e-45)": ([GOOD, [1e-45, 1e-45, 0.0]], "zero"),
    "infinite": ([GOOD, [float("inf"), 0.0, 0.0]], "not finite"),
    "empty": ([GOOD, []], "not a list of numbers"),
    "nested": ([GOOD, [[0.1], [0.2]]], "not a list of numbers"),
}


@pytest.mark.parametrize("case", BAD_VECTORS)
def test_an_unusable_vector_is_refused_naming_the_text(case: str) -> None:
    vectors, said = BAD_VECTORS[case]
    with _Vectors(lambda n: _items(vectors)) as srv:
        client = OpenAIEmbeddings(model="e", base_url=srv.base_url, api_key=KEY, max_attempts=1)
        with pytest.raises(TransientLLMError, match=rf"the vector of text 1 is {said}"):
            client.embed(["first", "second"])


@pytest.mark.parametrize(
    "indices", [[1, 0], [0, 0], [0, 2], [5, 6]], ids=["reversed", "repeated", "a gap", "shifted"]
)
def test_index_fields_that_disagree_with_the_order_are_refused_never_reassigned(indices: list[int]) -> None:
    with _Vectors(lambda n: _items([GOOD, [0.3, 0.2, 0.1]], indices)) as srv:
        client = OpenAIEmbeddings(model="e", base_url=srv.base_url, api_key=KEY, max_attempts=1)
        with pytest.raises(TransientLLMError, match="index fields .* are not 0..1 in order"):
            client.embed(["first", "second"])


def test_a_cancelled_embedding_request_stops_at_once_in_its_thread(server: LocalOpenAIServer) -> None:
    """The run interrupted while its examples are embedded in a worker thread: the thread's
    request stops at its next chunk (it used to hang past 600 s through two Ctrl-C)."""
    server.inject(Fault.slow_body(0.2))
    client = OpenAIEmbeddings(model="e", base_url=server.base_url, api_key=KEY, timeout_s=60.0, dimensions=16)
    raised: list[BaseException] = []

    def work() -> None:
        try:
            client.embed(["a red car"])
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            raised.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    time.sleep(1.0)
    started = time.monotonic()
    client.cancel()
    thread.join(timeout=10)
    assert not thread.is_alive() and time.monotonic() - started < 3.0
    assert len(raised) == 1 and isinstance(raised[0], NotSentError)
    assert client.embed(["bananas"]).shape[0] == 1 and client.usage.calls == 1  # later calls are made


# -- cache rows of the wrong type ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row",
    [(b"\x00blob", 1, 2), ("text", "1", 2), ("text", 1, -5), ("text", 1.5, 2), (None, 1, 2)],
    ids=["blob for text", "text for tokens", "negative tokens", "float tokens", "null text"],
)
def test_a_cache_row_of_the_wrong_type_is_a_miss_not_a_crash(tmp_path: Any, row: tuple[Any, ...]) -> None:
    path = tmp_path / "cache.sqlite"
    store = ResponseStore(path=path)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE responses")  # SQLite keeps any value in any column of a plain table
        columns = "key TEXT PRIMARY KEY, text, prompt_tokens, completion_tokens, created_at"
        conn.execute(f"CREATE TABLE responses ({columns})")
        conn.execute("INSERT INTO responses VALUES ('k', ?, ?, ?, 0)", row)
    assert ResponseStore(path=path).get("k") is None


def test_a_damaged_embedding_row_is_asked_again(server: LocalOpenAIServer, tmp_path: Any) -> None:
    path = tmp_path / "cache.sqlite"
    first = OpenAIEmbeddings(model="e", base_url=server.base_url, api_key=KEY, cache=path, dimensions=8)
    good = first.embed(["a red car"])
    first.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE responses SET text = 'not base64 !!'")
    asked = len(server.requests)
    again = OpenAIEmbeddings(model="e", base_url=server.base_url, api_key=KEY, cache=path, dimensions=8)
    np.testing.assert_array_equal(again.embed(["a red car"]), good)
    assert len(server.requests) == asked + 1 and again.usage.cache_hits == 0


def test_an_error_of_the_embedding_client_is_ours(server: LocalOpenAIServer) -> None:
    server.inject(Fault.server_error(503))
    client = OpenAIEmbeddings(model="e", base_url=server.base_url, api_key=KEY, max_attempts=1)
    with pytest.raises(LLMError):
        client.embed(["x"])
