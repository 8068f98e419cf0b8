"""Preflight over real HTTP: a broken server, key or model stops a run at once with one line.

Closed port, a server refusing the key, an unknown model, no /models endpoint, a wrong path, a
server that never answers; then the CLI's ``optimize`` and ``evaluate`` against them (exit 1, one
line on stderr, nothing written, the key nowhere).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptevolver.cli import main
from promptevolver.errors import PermanentLLMError
from promptevolver.llm import CachedLLM
from promptevolver.llm._preflight import preflight
from promptevolver.llm.openai import OpenAIClient
from promptevolver.llm.openai._errors import cause_of_connection_error
from promptevolver.llm.openai._preflight import model_ids
from promptevolver.testing import DIALECTS, Fault, LocalOpenAIServer

from ..conftest import AC_DEFINITION, AC_FILE

KEY = "sk-preflight-SECRET-0123456789abcdef"
MODEL = "judge-model"


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (kernel backlog) but never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


def make_client(base_url: str, **kwargs: Any) -> OpenAIClient:
    options: dict[str, Any] = {"model": MODEL, "base_url": base_url, "api_key": KEY, "timeout_s": 5.0}
    client = OpenAIClient(**{**options, **kwargs})
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    client.sleep = record
    client.waits = waits  # type: ignore[attr-defined]
    return client


def check(client: Any) -> None:
    async def main() -> None:
        try:
            await preflight(client)
        finally:
            await client.aclose()

    asyncio.run(main())


def failure(client: Any) -> PermanentLLMError:
    with pytest.raises(PermanentLLMError) as info:
        check(client)
    return info.value


def test_closed_port_fails_at_once_with_the_cause() -> None:
    port = closed_port()
    client = make_client(f"http://127.0.0.1:{port}/v1")
    error = failure(client)
    assert str(error) == f"cannot connect to http://127.0.0.1:{port}/v1 (connection refused)"
    assert client.waits == [] and client.usage.retries == 0  # type: ignore[attr-defined]


def test_unknown_host_names_the_resolver_error() -> None:
    error = failure(make_client("http://no-such-host.invalid/v1"))
    assert str(error).startswith("cannot connect to http://no-such-host.invalid/v1 (")
    assert "connection error" not in str(error).lower()


def test_a_server_that_never_answers_times_out_after_the_policys_attempts(silent_port: int) -> None:
    client = make_client(
        f"http://127.0.0.1:{silent_port}/v1", timeout_s=0.3, max_attempts=2, retry_initial_s=0.01
    )
    error = failure(client)
    assert str(error) == (
        f"cannot connect to http://127.0.0.1:{silent_port}/v1 (no complete answer within 0.3 s, 2 attempts)"
    )


def test_a_refused_key_names_where_the_key_came_from() -> None:
    with LocalOpenAIServer(
        lambda body: "OK", dialect=DIALECTS["openai"], models=[MODEL], api_key="sk-right"
    ) as srv:
        error = failure(make_client(srv.base_url, api_key_source="PE_KEY"))
        assert str(error) == f"the server at {srv.base_url} rejected the API key from PE_KEY (401)"
        assert len(srv.get_requests) == 1 and srv.requests == []
    assert error.status == 401 and KEY not in str(error)


def test_a_forbidden_key_quotes_the_server() -> None:
    with LocalOpenAIServer(lambda body: "OK", models_endpoint=False) as srv:
        srv.inject(Fault.error(403, f"Project has no access to model {MODEL} with key {KEY}"))
        error = failure(make_client(srv.base_url))
    assert str(error).startswith(
        f"the server at {srv.base_url} refused access with the API key from api_key (403)"
    )
    assert "no access to model" in str(error) and KEY not in str(error)


def test_an_unknown_model_lists_the_served_ones() -> None:
    models = [f"model-{i:02d}" for i in range(12)]
    with LocalOpenAIServer(lambda body: "OK", dialect=DIALECTS["vllm"], models=models) as srv:
        error = failure(make_client(srv.base_url, model="gpt-x"))
    shown = ", ".join(models[:10])
    assert str(error) == f"model 'gpt-x' not found at {srv.base_url}; the server offers: {shown} and 2 more"
    assert error.status == 404


def test_without_a_models_endpoint_one_token_chat_call_decides() -> None:
    with LocalOpenAIServer(lambda body: "OK", models_endpoint=False, models=[MODEL]) as srv:
        check(make_client(srv.base_url))
        assert [b["max_tokens"] for b in srv.requests] == [1]
        error = failure(make_client(srv.base_url, model="other"))
    assert str(error) == f"model 'other' not found at {srv.base_url} (the server lists no models)"


def test_the_one_token_call_switches_the_token_field_for_o_series() -> None:
    with LocalOpenAIServer(
        lambda body: "OK", dialect=DIALECTS["openai-o-series"], models_endpoint=False
    ) as srv:
        client = make_client(srv.base_url)
        check(client)
    assert [sorted(k for k in b if k.startswith("max_")) for b in srv.requests] == [
        ["max_tokens"],
        ["max_completion_tokens"],
    ]
    assert client.negotiation.token_param == "max_completion_tokens"


def test_a_wrong_path_says_to_check_base_url() -> None:
    with LocalOpenAIServer(lambda body: "OK") as srv:
        root = srv.base_url.removesuffix("/v1")
        error = failure(make_client(root))
    hint = "check base_url (it usually ends in /v1)"
    assert str(error) == f"no chat-completions endpoint at {root}/chat/completions (404): {hint}"


def test_a_broken_models_endpoint_is_not_fatal() -> None:
    with LocalOpenAIServer(lambda body: "OK", dialect=DIALECTS["llama-cpp-python"]) as srv:
        srv_models = srv.base_url  # /models answers; the chat call settles an unlisted model
        with pytest.warns(UserWarning, match="may be serving another model"):
            check(make_client(srv_models, model="anything"))


def test_preflight_runs_once_per_client_and_through_a_cache(tmp_path: Path) -> None:
    with LocalOpenAIServer(lambda body: "OK", models=[MODEL]) as srv:
        inner = make_client(srv.base_url)
        cached = CachedLLM(inner=inner, path=tmp_path / "cache.sqlite")
        check(cached)
        asyncio.run(preflight(cached, inner, None))
        assert srv.get_requests == ["/v1/models"]


def test_a_key_in_the_base_url_query_is_sent_but_never_shown() -> None:
    with LocalOpenAIServer(
        lambda body: "OK", dialect=DIALECTS["openai"], models=[MODEL], api_key="sk-right"
    ) as srv:
        url = f"{srv.base_url}?api-key={KEY}"
        client = make_client(url, api_key="sk-other-0000000000")
        error = failure(client)
        assert srv.get_requests == [f"/v1/models?api-key={KEY}"]  # the proxy gets its key
    shown = str(error) + repr(client) + client.display_url
    assert KEY not in shown and "api-key=***" in shown


def test_cause_of_connection_error_reads_errno_and_strerror() -> None:
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    wrapper = RuntimeError("All connection attempts failed")
    wrapper.__cause__ = refused
    assert cause_of_connection_error(wrapper) == "connection refused"
    assert (
        cause_of_connection_error(socket.gaierror(-2, "Name or service not known"))
        == "name or service not known"
    )
    assert cause_of_connection_error(RuntimeError("Boom")) == "boom"


def test_model_ids_reads_the_list_shapes() -> None:
    assert model_ids(b'{"object": "list", "data": [{"id": "a"}, {"id": "b", "owned_by": "me"}]}') == [
        "a",
        "b",
    ]
    assert model_ids(b'{"data": [{"id": "a"}], "object": "list"}') == ["a"]
    assert model_ids(b'{"models": []}') is None
    assert model_ids(b"<html>") is None


# --- the command line ----------------------------------------------------------------------------


def write_config(tmp_path: Path, base_url: str, model: str = MODEL) -> Path:
    config = tmp_path / "run.yaml"
    config.write_text(
        f"dataset: {AC_FILE}\n"
        f"metric: {{name: answer_correctness, definition: {json.dumps(AC_DEFINITION)}}}\n"
        f"llm: {{provider: openai, model: {model}, base_url: '{base_url}', api_key_env: PE_TEST_KEY,"
        " cache: null}\n"
        "optimizer: {population_size: 2, generations: 1}\n"
    )
    return config


def cli_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert KEY not in captured.err + captured.out
    return lines[0]


@pytest.fixture
def instructions(tmp_path: Path) -> Path:
    path = tmp_path / "best.json"
    path.write_text(json.dumps({"single_turn_aspect_critic_prompt": "Is the response correct?"}))
    return path


def test_cli_optimize_and_evaluate_against_a_closed_port(
    tmp_path: Path, instructions: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PE_TEST_KEY", KEY)
    port = closed_port()
    config = write_config(tmp_path, f"http://127.0.0.1:{port}/v1")
    expected = f"promptevolver: error: cannot connect to http://127.0.0.1:{port}/v1 (connection refused)"
    assert cli_error(["optimize", str(config), "-o", str(tmp_path / "run")], capsys) == expected
    assert not (tmp_path / "run" / "result.json").exists()
    assert cli_error(["evaluate", str(config), "-i", str(instructions)], capsys) == expected


def test_cli_against_a_server_refusing_the_key(
    tmp_path: Path, instructions: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PE_TEST_KEY", KEY)
    with LocalOpenAIServer(
        lambda body: "OK", dialect=DIALECTS["openai"], models=[MODEL], api_key="sk-right"
    ) as srv:
        config = write_config(tmp_path, srv.base_url)
        line = cli_error(["optimize", str(config), "-o", str(tmp_path / "run"), "-v"], capsys)
        refused = f"the server at {srv.base_url} rejected the API key from PE_TEST_KEY (401)"
        assert line == f"promptevolver: error: {refused}"
        assert cli_error(["evaluate", str(config), "-i", str(instructions)], capsys) == line
        assert srv.requests == []


def test_cli_against_an_unknown_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PE_TEST_KEY", KEY)
    with LocalOpenAIServer(lambda body: "OK", dialect=DIALECTS["ollama"], models=["llama3.2:latest"]) as srv:
        config = write_config(tmp_path, srv.base_url, model="llama3")
        line = cli_error(["optimize", str(config), "-o", str(tmp_path / "run")], capsys)
    missing = f"model 'llama3' not found at {srv.base_url}; the server offers: llama3.2:latest"
    assert line == f"promptevolver: error: {missing}"


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[str]:
    """A plain web server (Python's own), serving files and no POST: what a base_url pointing at a
    static site or a dashboard answers (501 with an HTML page)."""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_web_server_that_is_no_llm_server_fails_at_once_with_its_page_s_words(web_server: str) -> None:
    client = make_client(web_server)
    error = failure(client)
    text = str(error)
    assert text.startswith(f"no chat-completions endpoint at {web_server}/chat/completions (501: ")
    assert "Unsupported method ('POST')" in text and "check base_url" in text
    assert "<" not in text and "Error response Error response" not in text  # the page's words, once
    assert client.waits == []  # 501 is an answer, not an outage: never waited for nor retried
