"""Embeddings through an OpenAI-compatible ``POST /embeddings`` endpoint, cached:
:class:`OpenAIEmbeddings`, what retrieval of teaching examples compares when a run asks for
``optimizer.examples.similarity: embeddings`` (``docs/examples.md``).

* **Calls**: the official SDK's *blocking* client (retrieval is asked for examples from
  synchronous code too: :meth:`OptimizationResult.examples_for
  <promptevolver.optimizers._result.OptimizationResult.examples_for>`, Ragas'
  ``example_store.get_examples``); async code calls :meth:`OpenAIEmbeddings.embed` in a worker
  thread. Texts go ``batch_size`` to a request, in order; the SDK's own retries are off.
* **Bounds**: ``timeout_s`` is a deadline for each request's whole exchange, checked between
  the chunks of the body (a server sending one byte a second fails the request as a timeout
  within about two ``timeout_s``; one that sends nothing, at ``timeout_s``), and a body is read
  up to :func:`body_limit` bytes (a longer one is closed unread: an endless or 300 MB body never
  fills the memory). :meth:`OpenAIEmbeddings.cancel` (the run being interrupted) stops the
  requests in progress at the next chunk or backoff.
* **Vectors**: one per text, each finite, not zero, not huge (every component within
  ±:data:`MAX_COMPONENT`, the length at least :data:`MIN_NORM`), of one length; a body whose
  ``index`` fields disagree with its order, or leave a text out, is refused, never reassigned.
* **Retries**: the project's policy (:mod:`promptevolver.llm._retry`, :meth:`RetryPolicy.call
  <promptevolver.llm._retry.RetryPolicy.call>`): 429, 408, 409, 5xx, timeouts, dropped
  connections and a 200 body that is not a list of embeddings are retried with backoff, anything
  else fails at once; the error (our :class:`~promptevolver.errors.LLMError`, translated by
  :mod:`promptevolver.llm.openai._errors`) names the model, the redacted ``base_url`` and the cause.
* **Cache**: a :class:`~promptevolver.llm._cache.ResponseStore` SQLite file (the response cache's
  file format; the same file may hold both, their keys never meet): key = SHA-256 of
  ``{"kind": "embedding", "model", "dimensions", "text"}``, value = the vector as base64 of
  little-endian float32. A vector is float32 whether it came from the server or the cache, so a
  cached re-run retrieves exactly what the first run did. No key, URL or header is stored.
  The file is created by SQLite with the process's umask.
* **Secrets**: the API key is never in a message, ``repr``, the cache or :meth:`settings`;
  ``base_url`` is shown redacted (:mod:`promptevolver.llm._redaction`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import openai
from openai import OpenAI

from promptevolver.errors import AnswerTooLongError, ConfigError, LLMError, NotSentError, TransientLLMError
from promptevolver.llm._base import Completion
from promptevolver.llm._cache import ResponseStore
from promptevolver.llm._redaction import redact_text, redact_url
from promptevolver.llm._retry import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_RETRY_INITIAL_S,
    DEFAULT_RETRY_MAX_S,
    RetryPolicy,
)
from promptevolver.llm.openai._chat import STREAMED
from promptevolver.llm.openai._errors import translate
from promptevolver.llm.openai._wire import split_query

__all__ = ["EMBEDDINGS_PATH", "EmbeddingUsage", "OpenAIEmbeddings", "body_limit", "embedding_key"]

logger = logging.getLogger(__name__)

#: Path of the embeddings endpoint, relative to ``base_url``.
EMBEDDINGS_PATH = "/embeddings"
#: Version of the key recipe.
KEY_VERSION = 1
#: A component of an embedding beyond this (in absolute value) makes the vector unusable: cosine
#: similarities of such vectors overflow float32 (real models' components are below 10).
MAX_COMPONENT = 1e4
#: A vector shorter than this (Euclidean length) is taken for zero: its direction is noise.
MIN_NORM = 1e-6
#: Dimensions assumed for the body bound when neither the request nor an earlier answer says.
_ASSUMED_DIMENSIONS = 8192
#: Bytes of JSON per component at most (``-0.0123456789012345,`` and whitespace).
_BYTES_PER_COMPONENT = 32


def body_limit(texts: int, dimensions: int | None) -> int:
    """Bytes of an embeddings response body read at most for ``texts`` vectors of ``dimensions``
    (None: :data:`_ASSUMED_DIMENSIONS`), plus 64 KiB for the rest of the body."""
    return 64 * 1024 + texts * (dimensions or _ASSUMED_DIMENSIONS) * _BYTES_PER_COMPONENT


def embedding_key(model: str, dimensions: int | None, text: str) -> str:
    """The cache key of ``text`` embedded by ``model`` (at ``dimensions``): 64 hex digits."""
    payload = {"v": KEY_VERSION, "kind": "embedding", "model": model, "dimensions": dimensions, "text": text}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class EmbeddingUsage:
    """Counters of an embeddings client: ``calls`` (answered requests), ``texts`` embedded by
    them, ``prompt_tokens`` (the server's count), ``cache_hits`` (texts answered by the cache
    file: no call; a text asked again in one process is answered from memory, uncounted),
    ``retries`` (re-sends), ``failures`` (requests that gave up) by cause."""

    calls: int = 0
    texts: int = 0
    prompt_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    failures_by_cause: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every counter, in field order; ``failures_by_cause`` sorted by cause."""
        return {**asdict(self), "failures_by_cause": dict(sorted(self.failures_by_cause.items()))}


class OpenAIEmbeddings:
    """Text embeddings from an OpenAI-compatible ``/embeddings`` endpoint (see the module docstring).

    Args:
        model: the embedding model's name (e.g. ``text-embedding-3-small``, ``nomic-embed-text``).
        base_url: API root such as ``http://localhost:11434/v1``; None for the SDK default
            (``OPENAI_BASE_URL`` or api.openai.com).
        api_key: the API key (for local servers that ignore keys any non-empty text works).
        api_key_source: where the key came from, named in messages (e.g. ``OPENAI_API_KEY``).
        timeout_s: per-request timeout in seconds (> 0); a timeout is transient (retried).
        max_attempts, retry_initial_s, retry_max_s: the retry policy (:class:`RetryPolicy`).
        batch_size: texts per request (≥ 1).
        dimensions: asked of the server (``text-embedding-3-*`` can shorten vectors); None: the
            model's own.
        cache: the SQLite cache file, or None for memory only (a relative path is relative to
            the working directory).
        settings: what a result records to rebuild this client (no secret in it); default:
            model, redacted ``base_url``, ``api_key_env`` and the numbers above.

    Attributes:
        usage: :class:`EmbeddingUsage` of this client.
        display_url: ``base_url`` redacted, as messages show it.
        sleep: the blocking sleep between attempts (seconds); replaceable in tests.

    Raises:
        ConfigError: no key, or a ``base_url`` with ``user:password@``.
        ValueError: a number out of range. CacheError: the cache file cannot be opened.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str,
        api_key_source: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_initial_s: float = DEFAULT_RETRY_INITIAL_S,
        retry_max_s: float = DEFAULT_RETRY_MAX_S,
        batch_size: int = 64,
        dimensions: int | None = None,
        cache: str | Path | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        if not api_key:
            raise ConfigError(f"no API key for embedding model {model!r}: set {api_key_source}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be >= 1 or None, got {dimensions}")
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        _no_userinfo(url)
        self.model, self.base_url, self.timeout_s = model, base_url, timeout_s
        self.batch_size, self.dimensions = batch_size, dimensions
        self.policy = RetryPolicy(max_attempts, retry_initial_s, retry_max_s)
        self.display_url = redact_url(url or "https://api.openai.com/v1")
        self.api_key_source = api_key_source
        self.settings = dict(settings) if settings is not None else self._default_settings()
        self.usage = EmbeddingUsage()
        self.sleep: Callable[[float], None] = time.sleep
        self.where = f"embeddings call (model {model!r}, base_url {self.display_url!r})"
        self._redact = functools.partial(redact_text, secrets=[api_key])
        root, query = split_query(base_url)
        self._sdk = OpenAI(
            api_key=api_key, base_url=root, timeout=timeout_s, max_retries=0, default_query=query or None
        )
        self._store = None if cache is None else ResponseStore(path=cache)
        self._memory: dict[str, np.ndarray] = {}
        self._dim: int | None = None
        self._lock = threading.Lock()
        self._cancels = 0  # bumped by cancel(): requests begun before it stop
        self._jitter = np.random.default_rng()  # spreads retries in time only, never a result

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.display_url!r})"

    def _default_settings(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "base_url": None if self.base_url is None else redact_url(self.base_url),
            "api_key_env": self.api_key_source,
            "timeout_s": self.timeout_s,
            "max_attempts": self.policy.max_attempts,
            "batch_size": self.batch_size,
            "dimensions": self.dimensions,
        }

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, shape ``(len(texts), dim)``, float32, as the server gave them
        (not normalised); an empty text is a zero vector (no call). Repeats are answered from
        memory or the cache file; the rest go ``batch_size`` per request.

        Raises:
            LLMError: a request failed after its retries (the message names model, redacted
                URL and cause), or the server answered vectors of differing lengths (also
                against the cache file's: a model changed behind its name).
        """
        epoch = self._cancels
        with self._lock:  # one text is asked once, also with several threads asking
            missing = [t for t in dict.fromkeys(texts) if t.strip() and t not in self._memory]
            missing = [t for t in missing if not self._from_cache(t)]
            for start in range(0, len(missing), self.batch_size):
                batch = missing[start : start + self.batch_size]
                for text, vector in zip(batch, self._request(batch, epoch)):
                    self._remember(text, vector)
                    self._to_cache(text, vector)
            return self._stack(texts)

    def cancel(self) -> None:
        """Stop the requests in progress (in any thread) at their next body chunk or backoff:
        each raises :class:`~promptevolver.errors.NotSentError`. Later calls of :meth:`embed`
        are made as usual. Called when the run waiting for them is interrupted."""
        self._cancels += 1

    def _stack(self, texts: Sequence[str]) -> np.ndarray:
        dim = self._dim or 1
        if not texts:
            return np.zeros((0, dim), np.float32)
        return np.stack([self._memory.get(t, np.zeros(dim, np.float32)) for t in texts])

    def _remember(self, text: str, vector: np.ndarray) -> None:
        """Keep ``vector`` for ``text``; raises LLMError when its length differs from the others'."""
        if self._dim is not None and len(vector) != self._dim:
            raise LLMError(
                f"{self.where}: the server answered vectors of {self._dim} and {len(vector)} dimensions"
            )
        self._dim = len(vector)
        self._memory[text] = vector

    # -- the wire --------------------------------------------------------------------------------

    def _request(self, batch: list[str], epoch: int) -> list[np.ndarray]:
        def backoff(seconds: float) -> None:
            self._check_cancelled(epoch)
            self.sleep(seconds)
            self._check_cancelled(epoch)

        try:
            return self.policy.call(
                lambda: self._send(batch, epoch),
                transient=lambda exc: isinstance(exc, TransientLLMError),
                retry_after=lambda exc: getattr(exc, "retry_after", None),
                jitter=self._jitter,
                sleep=backoff,
                on_retry=lambda _exc: self._count_retry(),
            )
        except NotSentError:
            raise
        except LLMError as exc:
            self.usage.failures += 1
            self.usage.failures_by_cause[exc.cause] = self.usage.failures_by_cause.get(exc.cause, 0) + 1
            raise

    def _count_retry(self) -> None:
        self.usage.retries += 1

    def _check_cancelled(self, epoch: int) -> None:
        if self._cancels != epoch:
            raise NotSentError(f"{self.where}: stopped (the run was interrupted)")

    def _send(self, batch: list[str], epoch: int) -> list[np.ndarray]:
        """One request for ``batch``, its body read within the deadline and the bound. Raises
        TransientLLMError / PermanentLLMError (translated), AnswerTooLongError, NotSentError."""
        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        deadline = time.monotonic() + self.timeout_s
        limit = body_limit(len(batch), self.dimensions or self._dim)
        try:
            response = self._sdk.post(
                EMBEDDINGS_PATH, cast_to=bytes, body=body, options={"headers": STREAMED}
            )
            raw = self._read(response, limit=limit, deadline=deadline, epoch=epoch)
        except openai.OpenAIError as exc:
            raise translate(exc, where=self.where, redact=self._redact, timeout_s=self.timeout_s) from None
        vectors, tokens = self._parse(raw, batch)
        self.usage.calls += 1
        self.usage.texts += len(batch)
        self.usage.prompt_tokens += tokens
        return vectors

    def _read(self, response: Any, *, limit: int, deadline: float, epoch: int) -> bytes:
        """The body of a streamed SDK response, chunk by chunk, within ``deadline`` (monotonic
        seconds) and ``limit`` bytes; the response is closed whatever happens."""
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                self._check_cancelled(epoch)
                size += len(chunk)
                if size > limit:
                    raise AnswerTooLongError(f"{self.where}: answer too long (a body over {limit} bytes)")
                if time.monotonic() > deadline:
                    raise TransientLLMError(
                        f"{self.where}: no complete answer within timeout_s={self.timeout_s:g} s (timeout)"
                    )
                chunks.append(chunk)
        except (LLMError, openai.OpenAIError):
            raise
        except Exception as exc:  # the HTTP library's error for a body cut off, dropped or stalled
            said = self._redact(str(exc) or type(exc).__name__)
            raise TransientLLMError(f"{self.where}: the response body was cut off ({said})") from None
        finally:
            response.close()
        return b"".join(chunks)

    def _parse(self, raw: bytes, batch: Sequence[str]) -> tuple[list[np.ndarray], int]:
        """The vectors of ``batch`` (in input order) and the prompt tokens of a response body
        (the server's count, else ⌈characters / 4⌉). Raises TransientLLMError for a body that is
        not one usable vector per text (see the module docstring), or whose ``index`` fields are
        not 0, 1, 2... in its order (a vector is never given to another text)."""
        n = len(batch)
        try:
            data = json.loads(raw)
            items = data["data"]
            indices = [item.get("index", i) for i, item in enumerate(items)]
            vectors = [np.asarray(item["embedding"], dtype=np.float64) for item in items]
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
            raise TransientLLMError(f"{self.where}: the response is not a list of embeddings") from None
        if len(vectors) != n:
            raise TransientLLMError(f"{self.where}: the response holds {len(vectors)} vectors for {n} texts")
        if indices != list(range(n)):
            raise TransientLLMError(
                f"{self.where}: the response's index fields {_shown(indices)} are not 0..{n - 1} in order; "
                "its vectors cannot be matched to the texts"
            )
        for i, vector in enumerate(vectors):
            problem = _unusable(vector)
            if problem is not None:
                raise TransientLLMError(f"{self.where}: the vector of text {i} is {problem}")
        vectors = [v.astype(np.float32) for v in vectors]
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        tokens = usage.get("prompt_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
            return vectors, tokens
        return vectors, math.ceil(sum(len(t) for t in batch) / 4)

    # -- the cache -------------------------------------------------------------------------------

    def _from_cache(self, text: str) -> bool:
        if self._store is None:
            return False
        try:
            hit = self._store.get(embedding_key(self.model, self.dimensions, text))
        except sqlite3.Error as exc:
            self._switch_off(exc)
            return False
        if hit is None:
            return False
        try:
            vector = np.frombuffer(base64.b64decode(hit.text, validate=True), dtype="<f4").astype(np.float64)
        except (ValueError, TypeError):  # not base64 of float32s: a damaged row, asked again
            return False
        if _unusable(vector) is not None or (self._dim is not None and len(vector) != self._dim):
            return False  # a damaged row (or another model's length): asked again, never compared
        self._remember(text, vector.astype(np.float32))
        self.usage.cache_hits += 1  # a text answered by the file: no call
        return True

    def _to_cache(self, text: str, vector: np.ndarray) -> None:
        if self._store is None:
            return
        value = base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
        try:
            self._store.put(embedding_key(self.model, self.dimensions, text), Completion(text=value))
        except sqlite3.Error as exc:
            self._switch_off(exc)

    def _switch_off(self, exc: sqlite3.Error) -> None:
        assert self._store is not None
        logger.warning(
            "embeddings cache %s failed (%s: %s); continuing without the cache",
            self._store.path,
            type(exc).__name__,
            exc,
        )
        self._store = None

    def close(self) -> None:
        """Close the HTTP client and the cache file."""
        self._sdk.close()
        if self._store is not None:
            self._store.close()
            self._store = None


def _unusable(vector: np.ndarray) -> str | None:
    """Why ``vector`` (float64) cannot be compared with others, or None."""
    if vector.ndim != 1 or not vector.size:
        return "not a list of numbers"
    if not np.isfinite(vector).all():
        return "not finite (NaN or infinity)"
    if np.abs(vector).max() > MAX_COMPONENT:
        return f"huge (a component beyond ±{MAX_COMPONENT:g})"
    if float(np.linalg.norm(vector)) < MIN_NORM:
        return "zero (or too short to have a direction)"
    return None


def _shown(values: Sequence[Any]) -> str:
    return str(list(values[:6]))[:-1] + (", ...]" if len(values) > 6 else "]")


def _no_userinfo(url: str | None) -> None:
    """Raises ConfigError for a URL with ``user:password@`` (shown redacted)."""
    if url is None:
        return
    try:
        has_userinfo = urlsplit(url).username is not None
    except ValueError:
        return
    if has_userinfo:
        raise ConfigError(
            f"embeddings base_url {redact_url(url)} carries credentials (user:password@): put the key "
            "in the environment variable named by optimizer.examples.embeddings.api_key_env"
        )
