"""Embeddings through an OpenAI-compatible ``POST /embeddings`` endpoint, cached:
:class:`OpenAIEmbeddings`, what retrieval of teaching examples compares when a run asks for
``optimizer.examples.similarity: embeddings`` (``docs/examples.md``).

* **Calls**: the official SDK's *blocking* client (retrieval is asked for examples from
  synchronous code too: :meth:`OptimizationResult.examples_for
  <promptevolver.optimizers._result.OptimizationResult.examples_for>`, Ragas'
  ``example_store.get_examples``); async code calls :meth:`OpenAIEmbeddings.embed` in a worker
  thread. Texts go ``batch_size`` to a request, in order; the SDK's own retries are off.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import openai
from openai import OpenAI

from promptevolver.errors import ConfigError, LLMError, TransientLLMError
from promptevolver.llm._base import Completion
from promptevolver.llm._cache import ResponseStore
from promptevolver.llm._redaction import redact_text, redact_url
from promptevolver.llm._retry import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_RETRY_INITIAL_S,
    DEFAULT_RETRY_MAX_S,
    RetryPolicy,
)
from promptevolver.llm.openai._errors import translate
from promptevolver.llm.openai._wire import split_query

__all__ = ["EMBEDDINGS_PATH", "EmbeddingUsage", "OpenAIEmbeddings", "embedding_key"]

logger = logging.getLogger(__name__)

#: Path of the embeddings endpoint, relative to ``base_url``.
EMBEDDINGS_PATH = "/embeddings"
#: Version of the key recipe.
KEY_VERSION = 1


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
        return {
            "calls": self.calls,
            "texts": self.texts,
            "prompt_tokens": self.prompt_tokens,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "failures": self.failures,
            "failures_by_cause": dict(sorted(self.failures_by_cause.items())),
        }


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
        with self._lock:  # one text is asked once, also with several threads asking
            missing = [t for t in dict.fromkeys(texts) if t.strip() and t not in self._memory]
            missing = [t for t in missing if not self._from_cache(t)]
            for start in range(0, len(missing), self.batch_size):
                batch = missing[start : start + self.batch_size]
                for text, vector in zip(batch, self._request(batch)):
                    self._remember(text, vector)
                    self._to_cache(text, vector)
            return self._stack(texts)

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

    def _request(self, batch: list[str]) -> list[np.ndarray]:
        try:
            return self.policy.call(
                lambda: self._send(batch),
                transient=lambda exc: isinstance(exc, TransientLLMError),
                retry_after=lambda exc: getattr(exc, "retry_after", None),
                jitter=self._jitter,
                sleep=self.sleep,
                on_retry=lambda _exc: self._count_retry(),
            )
        except LLMError as exc:
            self.usage.failures += 1
            self.usage.failures_by_cause[exc.cause] = self.usage.failures_by_cause.get(exc.cause, 0) + 1
            raise

    def _count_retry(self) -> None:
        self.usage.retries += 1

    def _send(self, batch: list[str]) -> list[np.ndarray]:
        """One request for ``batch``. Raises TransientLLMError / PermanentLLMError (translated)."""
        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        try:
            raw = self._sdk.post(EMBEDDINGS_PATH, cast_to=bytes, body=body)
        except openai.OpenAIError as exc:
            raise translate(exc, where=self.where, redact=self._redact, timeout_s=self.timeout_s) from None
        vectors, tokens = self._parse(raw, batch)
        self.usage.calls += 1
        self.usage.texts += len(batch)
        self.usage.prompt_tokens += tokens
        return vectors

    def _parse(self, raw: bytes, batch: Sequence[str]) -> tuple[list[np.ndarray], int]:
        """The vectors of ``batch`` (in input order, by ``index``) and the prompt tokens of a
        response body (the server's count, else ⌈characters / 4⌉). Raises TransientLLMError for
        a body that is not one finite numeric vector per text."""
        n = len(batch)
        try:
            data = json.loads(raw)
            items = sorted(data["data"], key=lambda item: int(item.get("index", 0)))
            vectors = [np.asarray(item["embedding"], dtype=np.float32) for item in items]
        except (ValueError, TypeError, KeyError, AttributeError):
            raise TransientLLMError(f"{self.where}: the response is not a list of embeddings") from None
        if len(vectors) != n or any(v.ndim != 1 or not v.size or not np.isfinite(v).all() for v in vectors):
            raise TransientLLMError(
                f"{self.where}: the response holds {len(vectors)} usable vectors for {n} texts"
            )
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
        self._remember(text, np.frombuffer(base64.b64decode(hit.text), dtype="<f4").astype(np.float32))
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
