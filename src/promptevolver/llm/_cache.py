"""Persistent response cache: :class:`CachedLLM` answers repeated requests from a SQLite file.

Wrap any client — ``CachedLLM(inner=OpenAIClient(...), path="cache.sqlite")`` — and a re-run of
the same config makes no new LLM calls. The wrapper is itself an
:class:`~promptevolver.llm._base.LLMClient`; a hit is counted in ``usage.cache_hits`` (by
operation) and is not an LLM call: no tokens, no cost, no retries.

**Key** (:func:`cache_key`): the SHA-256 of canonical JSON (sorted keys, no whitespace) of the
inner client's :meth:`~promptevolver.llm._base.BaseLLMClient.cache_identity` (provider kind and
model), the messages, ``temperature``, ``max_tokens``, ``seed``, ``json_schema`` and
``sample_index`` — everything that changes an answer, so two samples drawn at temperature > 0
with different ``sample_index`` are distinct entries. Nothing else is in it: not the
``operation`` (an accounting label), not the API key or ``base_url`` (the same model behind
OpenAI, Azure or a proxy shares entries; use another file for a deployment whose answers differ),
and not the order of dict keys.

**Storage**: stdlib ``sqlite3``, one file, WAL journal mode (readers never block the writer), one
row per key, written with ``INSERT OR IGNORE`` in autocommit mode, so several processes and
threads may share a file; a writer waits up to ``timeout_s`` for another's lock. The file holds
only keys (hashes) and answers (text and token counts), never a request's secrets. Reads and
writes run on the calling thread; each is a sub-millisecond local transaction.

**Failures**: a file that cannot be opened (not a database, unreadable, locked for longer than
``timeout_s``, written by a newer schema) raises :class:`CacheError` when the wrapper is built,
before any call is spent. Any SQLite error after that is logged once as a warning and switches
the cache off for this wrapper: calls go straight to the inner client, the run goes on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from promptevolver.errors import CacheError
from promptevolver.llm._base import Completion, LLMClient, LLMRequest, Usage

__all__ = ["SCHEMA_VERSION", "CacheError", "CachedLLM", "ResponseStore", "cache_key", "usable_answer"]

logger = logging.getLogger(__name__)

#: Version of the file layout; a file of another version is refused at open.
SCHEMA_VERSION = "1"
#: Version of the key recipe; changing what goes into a key changes this.
KEY_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
"""


def usable_answer(text: str, schema: Mapping[str, Any] | None) -> bool:
    """Whether ``text`` is worth storing: any text for a request without a schema; with one, a
    JSON object (possibly amid other text) that has every required field of the schema."""
    if schema is None:
        return True
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return False
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return False
    required = schema.get("required", [])
    return isinstance(data, dict) and all(name in data for name in required)


def cache_key(identity: Mapping[str, Any], request: LLMRequest) -> str:
    """The cache key of ``request`` to a client of ``identity``: 64 hex digits (SHA-256)."""
    payload = {
        "v": KEY_VERSION,
        "client": dict(identity),
        "messages": [[m.role, m.content] for m in request.messages],
        "temperature": float(request.temperature),
        "max_tokens": request.max_tokens,
        "seed": request.seed,
        "json_schema": request.json_schema,
        "sample_index": request.sample_index,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseStore:
    """A SQLite file of answers by key (see the module docstring for the layout).

    Args:
        path: the file; created with its parent directories if missing. A relative path is
            relative to the current working directory.
        timeout_s: seconds to wait for another connection's lock before failing (> 0).

    Raises:
        CacheError: the file cannot be opened or initialised.
        ValueError: ``timeout_s`` ≤ 0.
    """

    def __init__(self, *, path: str | Path, timeout_s: float = 5.0) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s}")
        self.path = Path(path)
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._warned = False
        self._conn = _open(self.path, timeout_s)

    def get(self, key: str) -> Completion | None:
        """The stored answer for ``key``, or None (also for a damaged row: text that is not text,
        token counts that are not whole numbers >= 0; SQLite keeps any value in any column, and
        such a row is asked again, never replayed). Raises ``sqlite3.Error`` on a failing file."""
        with self._lock:
            row = self._conn.execute(
                "SELECT text, prompt_tokens, completion_tokens FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        text, prompt, completion = row
        if not isinstance(text, str) or not all(_count(n) for n in (prompt, completion)):
            self._damaged(key)
            return None
        return Completion(text=text, prompt_tokens=prompt, completion_tokens=completion)

    def _damaged(self, key: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "response cache %s holds a damaged row (key %s...): it is asked again, not replayed",
                self.path,
                key[:12],
            )

    def put(self, key: str, completion: Completion) -> None:
        """Store ``completion`` under ``key`` (the first answer stored for a key wins)."""
        row = (key, completion.text, completion.prompt_tokens, completion.completion_tokens, time.time())
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?)", row)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _open(path: Path, timeout_s: float) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise CacheError(f"cannot open: {exc}", path=path) from None
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            _initialise(conn, path)
            return conn
        except sqlite3.OperationalError as exc:
            # switching a new file to WAL takes its lock without SQLite's busy handler: connections
            # opening it at once get "database is locked" at once, not after the timeout. The
            # statements are idempotent: try again until the timeout is spent.
            if "locked" in str(exc) and time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            conn.close()
            raise CacheError(f"cannot use the file: {exc}{_hint(exc, timeout_s)}", path=path) from None
        except sqlite3.Error as exc:
            conn.close()
            raise CacheError(f"cannot use the file: {exc}{_hint(exc, timeout_s)}", path=path) from None
        except CacheError:
            conn.close()
            raise


def _hint(exc: sqlite3.Error, timeout_s: float) -> str:
    if "locked" in str(exc):
        return f" (another process held a lock for more than {timeout_s:g} s)"
    if not isinstance(exc, sqlite3.OperationalError):
        return " (not a SQLite database, or damaged: delete it or choose another cache path)"
    return ""


def _initialise(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; a crash loses at most recent entries
    conn.executescript(_SCHEMA)
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    found = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()[0]
    if found != SCHEMA_VERSION:
        raise CacheError(
            f"schema version {found} is not {SCHEMA_VERSION} (written by another promptevolver version)",
            path=path,
        )


class CachedLLM:
    """An :class:`~promptevolver.llm._base.LLMClient` that answers repeats from a SQLite file.

    Args:
        inner: the client that answers misses. Give it to this wrapper only: the wrapper's
            ``usage`` includes every call of ``inner``.
        path: the cache file (see :class:`ResponseStore`); relative to the working directory.
        identity: provider kind and model for the keys; default ``inner.cache_identity()``.
        timeout_s: seconds to wait for another process's lock on the file (> 0).

    Attributes:
        usage: ``inner.usage`` plus this wrapper's cache hits (a new object on each read).
        enabled: False once a mid-run SQLite error switched the cache off.

    Raises:
        CacheError: the file cannot be opened (see the module docstring).
        TypeError: no ``identity`` and ``inner`` has no ``cache_identity()``.
    """

    def __init__(
        self,
        *,
        inner: LLMClient,
        path: str | Path,
        identity: Mapping[str, Any] | None = None,
        timeout_s: float = 5.0,
    ) -> None:
        if identity is None:
            identify = getattr(inner, "cache_identity", None)
            if identify is None:
                raise TypeError(f"{type(inner).__name__} has no cache_identity(); pass identity=")
            identity = identify()
        self.inner = inner
        self.identity = dict(identity)
        self.store = ResponseStore(path=path, timeout_s=timeout_s)
        self.enabled = True
        self._hits = Usage()

    def __repr__(self) -> str:
        return f"CachedLLM(inner={self.inner!r}, path={str(self.store.path)!r})"

    @property
    def usage(self) -> Usage:
        return self.inner.usage + self._hits

    async def complete(self, request: LLMRequest) -> Completion:
        """A stored answer, else ``inner``'s (then stored, unless it is unusable).

        An answer to a request with a ``json_schema`` is stored only if it holds a JSON object with
        the schema's required fields: a malformed answer becomes a failed evaluation, and a
        re-run must ask again rather than replay it.

        Raises:
            LLMError: whatever ``inner`` raises on a miss (failures are never stored).
        """
        key = cache_key(self.identity, request)
        hit = self._get(key)
        if hit is not None:
            self._hits.record_cache_hit(request.operation)
            return replace(hit, cached=True)
        completion = await self.inner.complete(request)
        if usable_answer(completion.text, request.json_schema):
            self._put(key, completion)
        return completion

    def _get(self, key: str) -> Completion | None:
        if not self.enabled:
            return None
        try:
            return self.store.get(key)
        except sqlite3.Error as exc:
            self._switch_off(exc)
            return None

    def _put(self, key: str, completion: Completion) -> None:
        if not self.enabled:
            return
        try:
            self.store.put(key, completion)
        except sqlite3.Error as exc:
            self._switch_off(exc)

    def _switch_off(self, exc: sqlite3.Error) -> None:
        self.enabled = False
        logger.warning(
            "response cache %s failed (%s: %s); continuing without the cache",
            self.store.path,
            type(exc).__name__,
            exc,
        )

    async def preflight(self) -> None:
        """The inner client's preflight check, if it has one (see
        :mod:`promptevolver.llm._preflight`); a cache cannot stand in for an unreachable server."""
        check = getattr(self.inner, "preflight", None)
        if check is not None:
            await check()

    async def __aenter__(self) -> CachedLLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the inner client's connections, if it has ``aclose``; the file stays open."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    def close(self) -> None:
        """Close the cache file; later calls go to the inner client uncached."""
        self.enabled = False
        self.store.close()
