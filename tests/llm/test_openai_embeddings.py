"""The embeddings client through real HTTP (local OpenAI-compatible server with faults): vectors
in order, batches, the cache file, retries of transient faults, a dead endpoint as one error,
and no secret in messages or the cache."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from promptevolver.errors import LLMError, PermanentLLMError, TransientLLMError
from promptevolver.llm.openai import OpenAIEmbeddings
from promptevolver.testing._openai_server import Fault, LocalOpenAIServer, hashed_words

KEY = "sk-embed-secret-0123456789"
TEXTS = ["the car is red", "a red car", "bananas are yellow", "the car is red"]


def _client(url: str, **kwargs) -> OpenAIEmbeddings:
    client = OpenAIEmbeddings(model="embed-small", base_url=url, api_key=KEY, retry_initial_s=0.0, **kwargs)
    client.sleep = lambda _s: None
    return client


@pytest.fixture
def server():
    with LocalOpenAIServer(lambda _body: "unused") as s:
        yield s


def test_vectors_come_back_in_input_order_in_batches(server):
    client = _client(server.base_url, batch_size=2)
    vectors = client.embed(TEXTS)
    expected = np.asarray([hashed_words(t) for t in TEXTS], dtype=np.float32)
    assert vectors.shape == (4, len(expected[0])) and vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, expected)
    # three distinct texts, two per request: two requests, each text sent once
    sent = [r["input"] for r in server.requests]
    assert sent == [TEXTS[:2], [TEXTS[2]]]
    assert all(r["model"] == "embed-small" and r["encoding_format"] == "float" for r in server.requests)
    assert client.usage.calls == 2 and client.usage.texts == 3
    assert client.usage.prompt_tokens == sum(len(t.split()) for t in TEXTS[:3])


def test_an_empty_text_is_a_zero_vector_without_a_call(server):
    client = _client(server.base_url)
    vectors = client.embed(["", "a red car"])
    assert not vectors[0].any() and vectors[1].any()
    assert [r["input"] for r in server.requests] == [["a red car"]]


def test_the_cache_file_answers_a_second_client_and_holds_no_secret(server, tmp_path):
    path = tmp_path / "cache.sqlite"
    first = _client(server.base_url + "?api-key=QUERYSECRET", cache=path)
    vectors = first.embed(TEXTS)
    first.close()
    calls = len(server.requests)
    again = _client(server.base_url + "?api-key=QUERYSECRET", cache=path)
    np.testing.assert_array_equal(again.embed(TEXTS), vectors)
    assert len(server.requests) == calls and again.usage.calls == 0 and again.usage.cache_hits == 3
    again.close()
    for file in tmp_path.iterdir():  # the database and its WAL files
        data = file.read_bytes()
        assert KEY.encode() not in data and b"QUERYSECRET" not in data and b"127.0.0.1" not in data
    # another model never reads these vectors
    other = OpenAIEmbeddings(model="embed-large", base_url=server.base_url, api_key=KEY, cache=path)
    other.embed(TEXTS[:1])
    assert other.usage.calls == 1 and other.usage.cache_hits == 0


def test_the_cache_file_honours_the_umask(server, tmp_path):
    old = os.umask(0o077)
    try:
        client = _client(server.base_url, cache=tmp_path / "private" / "cache.sqlite")
        client.embed(TEXTS[:1])
        client.close()
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "private" / "cache.sqlite").stat().st_mode)
    assert mode & 0o077 == 0


@pytest.mark.parametrize(
    "fault",
    [
        Fault.server_error(503),
        Fault.rate_limit(retry_after=0),
        Fault.malformed_body(),
        Fault.drop_connection(),
        Fault.truncated_body(),
    ],
    ids=["503", "429", "malformed", "dropped", "truncated"],
)
def test_transient_faults_are_retried(server, fault):
    client = _client(server.base_url, max_attempts=3)
    server.inject(fault, fault)
    vectors = client.embed(["a red car"])
    np.testing.assert_array_equal(vectors[0], np.asarray(hashed_words("a red car"), dtype=np.float32))
    assert client.usage.retries == 2 and client.usage.calls == 1 and client.usage.failures == 0


def test_retries_end_with_the_cause_and_a_permanent_error_is_not_retried(server):
    client = _client(server.base_url, max_attempts=2)
    server.inject(Fault.server_error(500), Fault.server_error(500))
    with pytest.raises(TransientLLMError, match="http 500|HTTP 500") as caught:
        client.embed(["x"])
    assert caught.value.cause == "http 500" and client.usage.failures_by_cause == {"http 500": 1}
    server.inject(Fault.echo_authorization(401))
    with pytest.raises(PermanentLLMError) as refused:
        client.embed(["y"])
    assert KEY not in str(refused.value) and "401" in str(refused.value)
    assert client.usage.retries == 1  # the 500s' one retry; the 401 none


def test_a_dead_endpoint_is_one_error_naming_model_url_and_cause(tmp_path):
    server = LocalOpenAIServer(lambda _body: "").start()
    url = server.base_url.replace("/v1", "/v1?key=URLSECRET")
    server.stop()
    client = _client(url, max_attempts=2)
    with pytest.raises(TransientLLMError) as caught:
        client.embed(["x"])
    message = str(caught.value)
    assert "embed-small" in message and "connection refused" in message.lower()
    assert "URLSECRET" not in message and KEY not in message and "\n" not in message
    assert client.usage.failures == 1 and client.usage.retries == 1


def test_secrets_never_reach_the_repr_or_the_recorded_settings(server):
    client = _client(server.base_url + "?api-key=QUERYSECRET")
    shown = repr(client) + str(client.settings)
    assert KEY not in shown and "QUERYSECRET" not in shown


def test_vectors_of_another_length_are_refused_not_mixed(tmp_path):
    with LocalOpenAIServer(lambda _body: "", embed=lambda text: [1.0] * (2 + len(text.split()))) as server:
        client = _client(server.base_url, cache=tmp_path / "c.sqlite")
        client.embed(["one two"])
        with pytest.raises(LLMError, match="4 and 5 dimensions"):
            client.embed(["one two three"])
