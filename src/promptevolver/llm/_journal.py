"""The run journal: every answered LLM call of a run, appended as it arrives, replayed on resume.

A checkpoint is written after each finished step of a search; an interruption (Ctrl-C, a kill,
a server that stops answering) loses the calls made since. The journal keeps them: each answer
is appended to ``DIR/journal.jsonl`` the moment it arrives (one JSON line: request key,
operation, text, token counts), and each call that gave up is recorded with its cause. On
``--resume`` the search repeats the interrupted step from the checkpoint, deterministically,
and :class:`Journal` answers every request it has an answer for without a call: nothing
answered is sent twice, with or without the response cache. Calls that failed are sent again,
and so are requests whose answer lacked the requested JSON (the evaluation they failed is retried,
as the response cache never stores such an answer either).

Keys are :func:`~promptevolver.llm._cache.cache_key` of the client's identity and the request. A
line cut off by a kill or a full disk (also in the middle of a UTF-8 character) is skipped on
load, and only that line: the lines after it are read, and a complete line appended to a torn one
is recovered. Lines are flushed as written (the operating system keeps them if the process dies)
and synced to disk with each checkpoint (:meth:`Journal.sync`). The file is never written through
a symbolic link: a resume rewrites it atomically with the lines it read (a link at its name is
refused), then appends with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from promptevolver import rundir
from promptevolver.errors import LLMError, NotSentError
from promptevolver.llm._base import Completion, LLMClient, LLMRequest, Usage
from promptevolver.llm._cache import cache_key, usable_answer
from promptevolver.llm._wrapper import ClientWrapper

__all__ = ["Journal", "read_lines"]


class Journal:
    """An append-only record of a run's LLM calls (see the module docstring).

    Args:
        path: the journal file; created if missing.
        fresh: start empty (a new run) instead of loading what the file holds (a resume).

    Attributes:
        entries: lines written so far (answers and failures), this session and before.
        replayed: requests answered from the journal in this session (not LLM calls).
    """

    def __init__(self, path: str | Path, *, fresh: bool) -> None:
        self.path = Path(path)
        rundir.refuse_link(self.path)  # before reading: a link may point at anything
        self._answers: dict[str, Completion] = {}
        self._lines: list[dict[str, Any]] = [] if fresh else read_lines(self.path)
        for line in self._lines:
            if "text" in line and not line.get("unusable"):  # an unusable answer is asked again
                self._answers[line["key"]] = Completion(line["text"], line["pt"], line["ct"])
        # rewritten whole, atomically: a line torn by a kill is dropped, not appended to
        rundir.write_atomic(
            self.path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self._lines)
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        self._file: IO[str] = os.fdopen(fd, "w", encoding="utf-8")
        self._failed = False  # a write failed (a full disk): nothing more is written
        self.replayed = 0

    @property
    def entries(self) -> int:
        return len(self._lines)

    def wrap(self, client: LLMClient) -> LLMClient:
        """``client`` with its answers journaled and replayed (its usage is the client's)."""
        identify = getattr(client, "cache_identity", None)
        identity = identify() if identify is not None else {"provider": type(client).__name__}
        return _Journaled(client, self, identity)

    def answer(self, key: str) -> Completion | None:
        """The answer to request ``key`` journaled by an earlier session of this run, if any
        (answers of this session are never replayed: a fresh run makes every call)."""
        return self._answers.get(key)

    def record(self, key: str, operation: str, completion: Completion, *, usable: bool = True) -> None:
        """Append an answered call with what it cost: tokens, USD, retries, or a cache hit.
        ``usable`` False (an answer without the requested JSON): counted, never replayed, so the
        evaluation it failed is asked again on resume, as the cache does."""
        line: dict[str, Any] = {
            "key": key,
            "op": operation,
            "text": completion.text,
            "pt": completion.prompt_tokens,
            "ct": completion.completion_tokens,
        }
        if completion.cost_usd:
            line["usd"] = completion.cost_usd
        if completion.retries:
            line["retries"] = completion.retries
        if completion.cached:
            line["cached"] = True
        if not usable:
            line["unusable"] = True
        self._write(line)

    def record_failure(self, key: str, operation: str, cause: str, retries: int = 0) -> None:
        """Append a call that gave up after ``retries`` re-sends (it will be sent again on resume)."""
        line: dict[str, Any] = {"key": key, "op": operation, "failed": cause}
        if retries:
            line["retries"] = retries
        self._write(line)

    def usage_since(self, entry: int) -> Usage:
        """Usage of the journal lines from number ``entry`` on: the calls of an interrupted step,
        as the client counted them (answered calls with their tokens and cost, cache hits, failed
        calls, and the retries of both)."""
        usage = Usage()
        for line in self._lines[entry:]:
            op = line["op"]
            for _ in range(int(line.get("retries", 0))):
                usage.record_retry(op)
            if "failed" in line:
                usage.record_failure(op, line["failed"])
            elif line.get("cached"):
                usage.record_cache_hit(op)
            else:
                completion = Completion(line["text"], line["pt"], line["ct"])
                usage.record(op, completion, cost_usd=float(line.get("usd", 0.0)))
        return usage

    def sync(self) -> None:
        """Force written lines to disk (fsync)."""
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file. A write it fails to flush (a full disk) is not raised again: the error
        that stopped the run was; those calls are asked again on resume."""
        if not self._file.closed:
            with contextlib.suppress(OSError):
                self._file.close()

    def _write(self, line: dict[str, Any]) -> None:
        if self._failed or self._file.closed:
            return  # the run stops on the first error, raised once; calls still in flight are asked again
        try:
            self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._file.flush()
        except OSError as exc:  # a full disk: the message names the file (a torn line is skipped on load)
            self._failed = True
            if exc.filename is None:
                exc.filename = str(self.path)
            raise
        self._lines.append(line)


class _Journaled(ClientWrapper):
    def __init__(self, inner: LLMClient, journal: Journal, identity: Mapping[str, Any]) -> None:
        super().__init__(inner)
        self.journal = journal
        self.identity = dict(identity)

    async def complete(self, request: LLMRequest) -> Completion:
        key = cache_key(self.identity, request)
        known = self.journal.answer(key)
        if known is not None:
            self.journal.replayed += 1
            return known
        try:
            completion = await self.inner.complete(request)
        except NotSentError:
            raise  # no call was made: nothing to count on resume
        except LLMError as exc:
            if not exc.counts_as_failure:
                raise  # a prompt the context window refused: the caller sends smaller ones

            self.journal.record_failure(key, request.operation, exc.cause, exc.retries)
            raise
        self.journal.record(
            key, request.operation, completion, usable=usable_answer(completion.text, request.json_schema)
        )
        return completion


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The journal's lines at ``path`` (none when there is no file), each a dict with ``key`` and
    ``op`` and either ``text`` (an answer) or ``failed`` (a call that gave up). A torn, garbled or
    undecodable line (a kill or a full disk mid-write) is skipped and the read goes on; a
    complete line written after a torn one, on the same line, is recovered.

    Raises:
        RunDirError: the journal is not a regular file, or cannot be read.
    """
    if not path.exists() and not path.is_symlink():
        return []
    return [line for line in map(_parse_line, rundir.read_regular(path).split(b"\n")) if line is not None]


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    """A journal line's record, else None; from a torn line, the complete record at its end."""
    for start in _record_starts(raw):
        try:
            line = json.loads(raw[start:].decode("utf-8"))
        except ValueError:  # torn JSON, or UTF-8 cut in a character (UnicodeDecodeError)
            continue
        if _valid(line):
            return line
    return None


def _record_starts(raw: bytes) -> Iterator[int]:
    """Where a record may start in ``raw``: its start, then each later ``{"key": `` from the last."""
    yield 0
    found = [i for i in range(1, len(raw)) if raw.startswith(_RECORD_START, i)]
    yield from reversed(found)


_RECORD_START = b'{"key": '


def _valid(line: Any) -> bool:
    """A record of :meth:`Journal.record` or :meth:`Journal.record_failure`, its fields typed."""
    if (
        not isinstance(line, dict)
        or not isinstance(line.get("key"), str)
        or not isinstance(line.get("op"), str)
    ):
        return False
    if "failed" in line:
        return isinstance(line["failed"], str) and _count(line.get("retries", 0))
    return (
        isinstance(line.get("text"), str)
        and _count(line.get("pt"))
        and _count(line.get("ct"))
        and _count(line.get("retries", 0))
        and isinstance(line.get("usd", 0.0), int | float)
        and not isinstance(line.get("usd", 0.0), bool)
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
