"""A local OpenAI-compatible chat-completions server for tests and benchmarks (stdlib only).

:class:`LocalOpenAIServer` serves ``POST /v1/chat/completions``, ``POST /v1/embeddings`` (a
deterministic hashed bag of words by default, :func:`hashed_words`) and ``GET /v1/models`` on
``127.0.0.1`` at an ephemeral port from a daemon thread. It can speak the dialect of a real server
product (:mod:`promptevolver.testing._dialects`: OpenAI, vLLM, Ollama, LM Studio, llama.cpp), check
an API key and know a list of models. The assistant text comes from a plain ``handler(request_json) -> str``
callable, so any fake model can back it. It records every request body and ``Authorization``
header, and can inject faults (rate limits, server errors, delays, malformed or truncated bodies,
cut-off assistant text, dropped connections, ``response_format`` rejection) and hostile answers
(a body sent one byte at a time, a body that never ends, a chosen ``usage`` block, an error that
echoes the ``Authorization`` header), one queued :class:`Fault` per request::

    with LocalOpenAIServer(lambda body: "yes") as server:
        server.inject(Fault.rate_limit(retry_after=0.01))
        client = OpenAIClient(model="m", base_url=server.base_url, api_key="k")

Token usage is counted as whitespace-separated words: ``prompt_tokens`` over the text content of
all request messages, ``completion_tokens`` over the answer.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from promptevolver.testing._dialects import Dialect, Reply

__all__ = ["EmbedText", "Fault", "FaultKind", "Handler", "LocalOpenAIServer", "hashed_words"]

#: Produces the assistant's text from the decoded request body.
Handler = Callable[[dict[str, Any]], str]
#: The vector of one text for ``POST /v1/embeddings``.
EmbedText = Callable[[str], list[float]]

FaultKind = Literal[
    "error",
    "delay",
    "malformed_body",
    "truncated_body",
    "drop_connection",
    "answer",
    "slow_body",
    "endless_body",
    "usage",
    "echo_authorization",
]

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
#: Length of :func:`hashed_words` vectors.
EMBEDDING_DIMS = 256
MODELS_PATH = "/v1/models"
RESPONSE_FORMAT_ERROR = "Invalid parameter: 'response_format' of type 'json_schema' is not supported."


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour, consumed by the next request. Build with the classmethods.

    Attributes:
        kind: what to do instead of (or before) answering normally.
        status: HTTP status of an ``error`` fault.
        message: error message of an ``error`` fault (sent in an OpenAI-style error body).
        retry_after: value of the ``Retry-After`` header in seconds, or None for no header.
        seconds: how long a ``delay`` fault waits before answering normally.
        content_type: ``Content-Type`` of a ``malformed_body`` answer.
        text: the assistant text of an ``answer`` fault (sent instead of the handler's).
        usage: the ``usage`` block of a ``usage`` fault's answer (None: no ``usage`` at all).
    """

    kind: FaultKind
    status: int = 200
    message: str = ""
    retry_after: float | None = None
    seconds: float = 0.0
    content_type: str = "application/json"
    text: str = ""
    usage: dict[str, Any] | None = None

    @classmethod
    def error(cls, status: int, message: str, *, retry_after: float | None = None) -> Fault:
        """Answer ``status`` with an OpenAI-style error body carrying ``message``."""
        return cls("error", status=status, message=message, retry_after=retry_after)

    @classmethod
    def rate_limit(cls, retry_after: float | None = None) -> Fault:
        """Answer 429; ``retry_after`` seconds go in the ``Retry-After`` header when given."""
        return cls.error(429, "Rate limit reached. Please try again later.", retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        """Answer a server error (5xx by default 500)."""
        return cls.error(status, "The server had an error while processing your request.")

    @classmethod
    def reject_response_format(cls) -> Fault:
        """Answer 400 with a message saying ``response_format`` is not supported."""
        return cls.error(400, RESPONSE_FORMAT_ERROR)

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Wait ``seconds`` before answering normally (to trigger client timeouts)."""
        return cls("delay", seconds=seconds)

    @classmethod
    def malformed_body(cls, content_type: str = "application/json") -> Fault:
        """Answer 200 with a body that is not JSON, labelled ``content_type``."""
        return cls("malformed_body", content_type=content_type)

    @classmethod
    def truncated_body(cls) -> Fault:
        """Answer 200 announcing a full chat completion's length, send half of it, then close."""
        return cls("truncated_body")

    @classmethod
    def answer(cls, text: str) -> Fault:
        """Answer a well-formed 200 chat completion whose assistant text is ``text`` (e.g. cut-off
        JSON), instead of the handler's."""
        return cls("answer", text=text)

    @classmethod
    def drop_connection(cls) -> Fault:
        """Close the connection without sending any response."""
        return cls("drop_connection")

    @classmethod
    def slow_body(cls, seconds_per_byte: float) -> Fault:
        """Answer normally (a chat completion, or the embeddings of ``POST /embeddings``), sending
        the body one byte every ``seconds_per_byte`` seconds (each read is quick; the whole takes
        minutes)."""
        return cls("slow_body", seconds=seconds_per_byte)

    @classmethod
    def endless_body(cls) -> Fault:
        """Answer 200 with a JSON body that never ends (an answer text growing, or for
        ``POST /embeddings`` a vector, until the client hangs up or the server stops)."""
        return cls("endless_body")

    @classmethod
    def with_usage(cls, usage: dict[str, Any] | None) -> Fault:
        """Answer normally but with ``usage`` as the ``usage`` block (None: leave it out), e.g.
        negative or zero token counts."""
        return cls("usage", usage=usage)

    @classmethod
    def echo_authorization(cls, status: int = 500) -> Fault:
        """Answer ``status`` with an error message quoting the request's ``Authorization`` header
        (as some proxies do)."""
        return cls("echo_authorization", status=status)


def count_words(text: str) -> int:
    """The token count this server reports: whitespace-separated words."""
    return len(text.split())


def _message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _prompt_tokens(body: dict[str, Any]) -> int:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(count_words(_message_text(m)) for m in messages)


def _max_tokens(body: dict[str, Any]) -> int:
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    return value if isinstance(value, int) else 0


def hashed_words(text: str, dims: int = EMBEDDING_DIMS) -> list[float]:
    """A deterministic stand-in for an embedding model: each lower-case word of ``text`` adds 1
    to coordinate ``sha256(word) mod dims``; the vector is L2-normalised (all zeros for no word),
    so the cosine of two texts grows with the words they share."""
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big") % dims] += 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


def context_error_body(limit: int, asked: int) -> dict[str, Any]:
    """OpenAI's answer to a prompt longer than the context window (HTTP 400)."""
    message = (
        f"This model's maximum context length is {limit} tokens. However, you requested {asked} tokens. "
        "Please reduce the length of the messages or completion."
    )
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error body."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class LocalOpenAIServer:
    """OpenAI-compatible chat-completions server on ``127.0.0.1`` for tests and benchmarks.

    Args:
        handler: ``handler(request_json) -> str`` gives the assistant text; an exception from it
            becomes a 500 answer.
        latency_s: fixed delay in seconds before every answer (0 for none).
        supports_response_format: when False, every request carrying ``response_format`` is
            answered 400 like a server without structured outputs.
        dialect: a server product's behaviour (refusals, error shapes, model list); None: a plain
            OpenAI-like server that accepts every request field.
        models: the model names served; a request for another model gets the dialect's "unknown
            model" answer. None: any model name is served (and ``/v1/models`` lists ``local``).
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get the dialect's
            "wrong key" answer (if the dialect checks keys).
        models_endpoint: False to answer ``GET /v1/models`` with 404, like servers without it.
        max_context_tokens: when set, a request whose prompt tokens (words, see the module
            docstring) plus its ``max_tokens`` exceed it is answered 400 ``context_length_exceeded``
            in OpenAI's error shape, as a real model's context window would.
        embed: the vector of one text for ``POST /v1/embeddings`` (default :func:`hashed_words`);
            a request's ``input`` (a string or a list of strings) gets one vector per text, and
            ``usage.prompt_tokens`` counts its words. Faults apply to it as to chat requests.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1``, available once started.
        requests: copies of the decoded request bodies received, oldest first.
        authorization_headers: the ``Authorization`` header of each request (None when absent).
    """

    def __init__(
        self,
        handler: Handler,
        *,
        latency_s: float = 0.0,
        supports_response_format: bool = True,
        dialect: Dialect | None = None,
        models: list[str] | None = None,
        api_key: str | None = None,
        models_endpoint: bool = True,
        max_context_tokens: int | None = None,
        embed: EmbedText = hashed_words,
    ) -> None:
        self.handler = handler
        self.embed = embed
        self.max_context_tokens = max_context_tokens
        self.latency_s = latency_s
        self.supports_response_format = supports_response_format
        self.dialect = dialect
        self.models = models
        self.api_key = api_key
        self.models_endpoint = models_endpoint
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._auth: list[str | None] = []
        self._gets: list[str] = []
        self._faults: deque[Fault] = deque()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> LocalOpenAIServer:
        """Bind an ephemeral port and serve from a daemon thread. Returns self."""
        if self._httpd is not None:
            raise RuntimeError("LocalOpenAIServer is already started")
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", 0), _make_request_handler(self))
        self._port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed answers and close the socket. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5.0)
        self._httpd = self._thread = None

    def __enter__(self) -> LocalOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- public state ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port bound at start; still readable after :meth:`stop` (for assertions)."""
        if self._port is None:
            raise RuntimeError("LocalOpenAIServer is not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def authorization_headers(self) -> list[str | None]:
        with self._lock:
            return list(self._auth)

    def inject(self, *faults: Fault) -> None:
        """Queue faults; each following request consumes one, in order."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    # -- request handling (called from server threads) -------------------------------------------

    def _record(self, body: dict[str, Any], authorization: str | None) -> Fault | None:
        with self._lock:
            self._requests.append(body)
            self._auth.append(authorization)
            return self._faults.popleft() if self._faults else None

    def _record_get(self, path: str) -> None:
        with self._lock:
            self._gets.append(path)

    @property
    def get_requests(self) -> list[str]:
        """Paths (with query string) of the GET requests received, e.g. ``/v1/models``, oldest first."""
        with self._lock:
            return list(self._gets)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _completion(self, body: dict[str, Any], text: str | None = None) -> dict[str, Any]:
        text = self.handler(body) if text is None else text
        prompt, answer = _prompt_tokens(body), count_words(text)
        return {
            "id": f"chatcmpl-local-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "local")),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer},
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        given = body.get("input")
        texts = [given] if isinstance(given, str) else list(given or [])
        return {
            "object": "list",
            "model": str(body.get("model", "local")),
            "data": [
                {"object": "embedding", "index": i, "embedding": self.embed(str(text))}
                for i, text in enumerate(texts)
            ],
            "usage": {"prompt_tokens": sum(count_words(str(t)) for t in texts), "total_tokens": 0},
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Listen backlog: socketserver's default of 5 makes the kernel refuse or reset connections
    # when a client opens dozens at once (as a client with max_concurrency 32 does).
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or disconnect are expected here; stay quiet.
        pass


def _make_request_handler(server: LocalOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class _RequestHandler(_ChatHandler):
        owner = server

    return _RequestHandler


class _ChatHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30.0  # seconds an idle keep-alive connection is kept open
    # Headers and body go out in two writes; with Nagle's algorithm on, the second waits for the
    # client's delayed ACK (~40 ms on Linux) and every answer would take that long.
    disable_nagle_algorithm = True
    owner: LocalOpenAIServer
    _embedding = False  # the request being answered is POST /embeddings

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        self.owner._record_get(self.path)
        refusal = self._auth_refusal()
        if refusal is None and path == MODELS_PATH and self.owner.models_endpoint:
            dialect = self.owner.dialect or Dialect()
            refusal = dialect.models(self.owner.models or ["local"])
        if refusal is None:
            refusal = Reply(404, error_body(404, f"Unknown path {self.path}"))
        self._send_json(refusal.status, refusal.body)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in (CHAT_PATH, EMBEDDINGS_PATH):
            self._send_json(404, error_body(404, f"Unknown path {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, error_body(400, "Request body is not valid JSON."))
            return
        fault = self.owner._record(body, self.headers.get("Authorization"))
        self.owner._sleep(self.owner.latency_s)
        self._embedding = path == EMBEDDINGS_PATH  # a fault's body is the endpoint's own
        if fault is not None and self._apply(fault, body):
            return
        refusal = self._auth_refusal() or self._dialect_refusal(body)
        if refusal is not None:
            self._send_json(refusal.status, refusal.body)
            return
        if path == EMBEDDINGS_PATH:
            self._send_json(200, self.owner._embeddings(body))
            return
        if "response_format" in body and not self.owner.supports_response_format:
            self._send_json(400, error_body(400, RESPONSE_FORMAT_ERROR))
            return
        limit, asked = self.owner.max_context_tokens, _prompt_tokens(body) + _max_tokens(body)
        if limit is not None and asked > limit:
            self._send_json(400, context_error_body(limit, asked))
            return
        self._answer(body)

    def _auth_refusal(self) -> Reply | None:
        expected, dialect = self.owner.api_key, self.owner.dialect or Dialect()
        if expected is None or not dialect.checks_key:
            return None
        given = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        return None if given == expected else dialect.wrong_key(given)

    def _dialect_refusal(self, body: dict[str, Any]) -> Reply | None:
        dialect, models = self.owner.dialect or Dialect(), self.owner.models
        model = str(body.get("model", ""))
        if models is not None and model not in models:
            refusal = dialect.unknown_model(model, models)
            if refusal is not None:
                return refusal
        return dialect.refuse(body) if self.owner.dialect is not None else None

    def _apply(self, fault: Fault, body: dict[str, Any]) -> bool:
        """Act out ``fault``; True when the request has been dealt with."""
        if fault.kind == "delay":
            self.owner._sleep(fault.seconds)
            return False
        if fault.kind == "answer":
            self._send_json(200, self.owner._completion(body, fault.text))
        elif fault.kind == "usage":
            completion = self.owner._completion(body)
            completion.pop("usage")
            if fault.usage is not None:
                completion["usage"] = fault.usage
            self._send_json(200, completion)
        elif fault.kind == "slow_body":
            answer = self.owner._embeddings(body) if self._embedding else self.owner._completion(body)
            self._send_slowly(json.dumps(answer).encode(), fault.seconds)
        elif fault.kind == "endless_body":
            self._send_endless(embedding=self._embedding)
        elif fault.kind == "echo_authorization":
            said = f"Unauthorized request with header Authorization: {self.headers.get('Authorization')}"
            self._send_json(fault.status, error_body(fault.status, said))
        elif fault.kind == "truncated_body":
            self._send_truncated(json.dumps(self.owner._completion(body)).encode())
        elif fault.kind == "drop_connection":
            self.close_connection = True
        elif fault.kind == "malformed_body":
            self._send_bytes(200, b"<html>upstream hiccup{", fault.content_type)
        else:
            headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            self._send_json(fault.status, error_body(fault.status, fault.message), headers)
        return True

    def _answer(self, body: dict[str, Any]) -> None:
        try:
            completion = self.owner._completion(body)
        except Exception as exc:  # the handler is user code: report, don't crash the server
            self._send_json(500, error_body(500, f"handler failed: {type(exc).__name__}: {exc}"))
            return
        self._send_json(200, completion)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_truncated(self, data: bytes) -> None:
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_slowly(self, data: bytes, seconds_per_byte: float) -> None:
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(data)):
                if self.owner._stopping.is_set():
                    return
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                self.owner._sleep(seconds_per_byte)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_endless(self, *, embedding: bool = False) -> None:
        self.close_connection = True
        head = b'{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", '
        head += b'"content": "'
        chunk = b"x" * 65536
        if embedding:  # a vector that never ends
            head, chunk = b'{"object": "list", "data": [{"index": 0, "embedding": [', b"0.125, " * 9362
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in itertools.chain([head], itertools.repeat(chunk)):
                if self.owner._stopping.is_set():
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. timed out) first
