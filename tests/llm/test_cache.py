"""The persistent response cache: keys, hits and usage, sharing a file, failing files."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from promptevolver import BinaryMetricLoss, GeneticOptimizer
from promptevolver.config._build import build_llm
from promptevolver.config._models import LLMConfig
from promptevolver.errors import PermanentLLMError
from promptevolver.llm import CachedLLM, CacheError, ScriptedLLM, SimulatedJudgeLLM
from promptevolver.llm._base import ChatMessage, Completion, LLMRequest
from promptevolver.llm._cache import ResponseStore, cache_key
from promptevolver.runs._outcome import outcome_lines

IDENTITY = {"provider": "scripted", "model": "m"}
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}


def request(text: str = "hello", **kwargs: object) -> LLMRequest:
    return LLMRequest(messages=(ChatMessage("system", "sys"), ChatMessage("user", text)), **kwargs)  # type: ignore[arg-type]


def echo() -> ScriptedLLM:
    return ScriptedLLM(handler=lambda r: f"echo {r.messages[-1].content} #{r.sample_index}")


def complete(client: CachedLLM, *requests: LLMRequest) -> list[str]:
    async def main() -> list[str]:
        return [(await client.complete(r)).text for r in requests]

    return asyncio.run(main())


# --- keys ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changed",
    [
        request("hello!"),
        request(temperature=0.7),
        request(max_tokens=10),
        request(seed=1),
        request(json_schema=SCHEMA),
        request(sample_index=1),
        LLMRequest(messages=(ChatMessage("user", "sys"), ChatMessage("user", "hello"))),
    ],
)
def test_anything_that_changes_the_answer_changes_the_key(changed: LLMRequest) -> None:
    assert cache_key(IDENTITY, changed) != cache_key(IDENTITY, request())


def test_model_and_provider_change_the_key() -> None:
    base = cache_key(IDENTITY, request())
    assert cache_key({**IDENTITY, "model": "other"}, request()) != base
    assert cache_key({**IDENTITY, "provider": "openai"}, request()) != base


def test_operation_and_dict_order_do_not_change_the_key() -> None:
    reordered = dict(reversed(list(SCHEMA.items())))
    assert cache_key(IDENTITY, request(json_schema=SCHEMA)) == cache_key(
        IDENTITY, request(json_schema=reordered, operation="rewrite")
    )
    swapped = dict(reversed(IDENTITY.items()))
    assert cache_key(IDENTITY, request(temperature=0)) == cache_key(swapped, request())
    assert len(cache_key(IDENTITY, request())) == 64


def test_key_recipe_is_pinned() -> None:
    # Golden value: a changed recipe invalidates every user's cache. Change it only on purpose,
    # together with KEY_VERSION.
    golden = "5f75546006c437e38d657d5c4d9a69617874d2d9be814ce956c2accca6dbe8f1"
    assert cache_key(IDENTITY, request()) == golden


# --- hits, misses, usage ------------------------------------------------------------------------


def test_hits_are_counted_and_are_not_calls(tmp_path: Path) -> None:
    inner = echo()
    client = CachedLLM(inner=inner, path=tmp_path / "c.sqlite")
    assert complete(client, request("a"), request("a", operation="rewrite"), request("b")) == [
        "echo a #0",
        "echo a #0",
        "echo b #0",
    ]
    assert len(inner.requests) == 2
    usage = client.usage
    assert usage.total_calls == 2 and usage.cache_hits == 1
    assert usage.cache_hits_by_operation == {"rewrite": 1}
    assert usage.prompt_tokens == inner.usage.prompt_tokens  # hits add no tokens


def test_temperature_samples_with_different_indexes_are_distinct(tmp_path: Path) -> None:
    inner = echo()
    client = CachedLLM(inner=inner, path=tmp_path / "c.sqlite")
    texts = complete(client, *(request(temperature=0.9, sample_index=i) for i in (0, 1, 0, 1)))
    assert texts == ["echo hello #0", "echo hello #1", "echo hello #0", "echo hello #1"]
    assert len(inner.requests) == 2 and client.usage.cache_hits == 2


def test_answers_survive_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "c.sqlite"
    first = CachedLLM(inner=echo(), path=path)
    complete(first, request("a"))
    first.close()
    again_inner = echo()
    again = CachedLLM(inner=again_inner, path=path)
    assert complete(again, request("a")) == ["echo a #0"]
    assert again_inner.requests == [] and again.usage.cache_hits == 1
    assert len(again.store) == 1


def test_tokens_are_kept_with_the_answer(tmp_path: Path) -> None:
    inner = ScriptedLLM([Completion("x", prompt_tokens=11, completion_tokens=7)])
    client = CachedLLM(inner=inner, path=tmp_path / "c.sqlite")
    complete(client, request())
    hit = asyncio.run(client.complete(request()))
    assert (hit.text, hit.prompt_tokens, hit.completion_tokens) == ("x", 11, 7)


def test_failures_are_not_stored(tmp_path: Path) -> None:
    inner = ScriptedLLM([PermanentLLMError("no"), "ok"])
    client = CachedLLM(inner=inner, path=tmp_path / "c.sqlite")
    with pytest.raises(PermanentLLMError):
        complete(client, request())
    assert complete(client, request()) == ["ok"]
    assert client.usage.failures == 1 and client.usage.total_calls == 1


def test_an_identity_is_required(tmp_path: Path) -> None:
    class Bare:
        usage = echo().usage

        async def complete(self, request: LLMRequest) -> Completion:
            return Completion("x")

    with pytest.raises(TypeError, match="identity"):
        CachedLLM(inner=Bare(), path=tmp_path / "c.sqlite")
    assert CachedLLM(inner=Bare(), path=tmp_path / "c.sqlite", identity=IDENTITY).identity == IDENTITY


def test_simulated_identity_depends_on_its_settings(ac_dataset) -> None:
    a = SimulatedJudgeLLM(dataset=ac_dataset, random_seed=1).cache_identity()
    assert a == SimulatedJudgeLLM(dataset=ac_dataset, random_seed=1).cache_identity()
    assert a != SimulatedJudgeLLM(dataset=ac_dataset, random_seed=2).cache_identity()
    assert a != SimulatedJudgeLLM(dataset=ac_dataset, random_seed=1, noise=0.1).cache_identity()


# --- sharing a file -----------------------------------------------------------------------------


def _write_entries(path: str, worker: int, count: int) -> None:
    store = ResponseStore(path=path, timeout_s=30.0)
    for i in range(count):
        store.put(f"w{worker}-{i}", Completion(f"answer {worker} {i}", 1, 1))
        store.put("shared", Completion(f"shared by {worker}", 1, 1))
    store.close()


def test_concurrent_writer_threads(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    threads = [threading.Thread(target=_write_entries, args=(path, w, 50)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store = ResponseStore(path=path)
    assert len(store) == 4 * 50 + 1
    assert store.get("w3-49") == Completion("answer 3 49", 1, 1)


def test_concurrent_writer_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    ResponseStore(path=path).close()  # create the file first, as a run would
    # spawn, not fork: forking a process that has threads (pytest plugins, earlier tests' servers)
    # can deadlock the child; spawn is slower but always safe.
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_write_entries, args=(path, w, 40)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    store = ResponseStore(path=path)
    assert len(store) == 3 * 40 + 1
    assert store.get("shared") is not None
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_one_wrapper_shared_by_threads(tmp_path: Path) -> None:
    client = CachedLLM(inner=echo(), path=tmp_path / "c.sqlite")
    results: list[list[str]] = []

    def work(worker: int) -> None:
        results.append(complete(client, *(request(f"{worker}-{i}") for i in range(20))))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(len(r) for r in results) == [20] * 4 and len(client.store) == 80


# --- failing files ------------------------------------------------------------------------------


def test_a_corrupt_file_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database, just some text that fills a page" * 100)
    with pytest.raises(CacheError, match="not a SQLite database") as info:
        CachedLLM(inner=echo(), path=path)
    assert info.value.path == str(path) and str(path) in str(info.value)


def test_a_file_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    ResponseStore(path=path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE name = 'schema_version'")
    with pytest.raises(CacheError, match="schema version 99"):
        ResponseStore(path=path)


def test_a_file_locked_at_open_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # a fresh rollback-journal file: nobody else may even read
    try:
        with pytest.raises(CacheError, match="lock"):
            ResponseStore(path=path, timeout_s=0.05)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="cannot"):
        ResponseStore(path=tmp_path)


def test_a_lock_mid_run_switches_the_cache_off_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite"
    inner = echo()
    client = CachedLLM(inner=inner, path=path, timeout_s=0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process is writing, for longer than our timeout
    try:
        with caplog.at_level(logging.WARNING, logger="promptevolver.llm._cache"):
            assert complete(client, request("a"), request("a"), request("b")) == [
                "echo a #0",
                "echo a #0",
                "echo b #0",
            ]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not client.enabled
    assert len(inner.requests) == 3  # uncached from the failed write on, but every call answered
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "continuing without the cache" in caplog.records[0].getMessage()


# --- config wiring ------------------------------------------------------------------------------


def test_config_cache_key_wraps_the_client_and_a_rerun_makes_no_calls(
    tmp_path: Path, ac_dataset, ac_metric
) -> None:
    config = LLMConfig(provider="fake", cache=tmp_path / "runs.sqlite")
    options = {"population_size": 3, "generations": 1, "random_seed": 7}

    summaries = []

    def optimize() -> tuple[dict, dict]:
        llm = build_llm(config, dataset=ac_dataset, random_seed=7)
        assert isinstance(llm, CachedLLM) and isinstance(llm.inner, SimulatedJudgeLLM)
        result = GeneticOptimizer(metric=ac_metric, llm=llm).optimize(
            dataset=ac_dataset, loss=BinaryMetricLoss(), config=options
        )
        summaries.append(outcome_lines(result, tmp_path, quiet=True)[0])
        return dict(result), result.usage

    first, first_usage = optimize()
    second, second_usage = optimize()
    assert first == second
    calls = first_usage["llm_calls"]["judge"] + first_usage["llm_calls"]["meta"]
    assert calls > 0 and first_usage["cache_hits"] == 0
    assert second_usage["llm_calls"] == {"judge": 0, "meta": 0}
    assert second_usage["cache_hits"] == calls
    # the summary line says where the answers came from: a rerun is not a run that did nothing
    assert "response cache" not in summaries[0]
    assert f"= 0 (and {calls} answered from the response cache)" in summaries[1]


def test_no_cache_key_means_no_wrapper(ac_dataset) -> None:
    assert isinstance(build_llm(LLMConfig(), dataset=ac_dataset, random_seed=1), SimulatedJudgeLLM)


@pytest.mark.parametrize(
    "text, stored",
    [
        ('{"reason": "r", "verdict": 1}', True),
        ('Sure! {"reason": "r", "verdict": 0} Hope this helps.', True),
        ('{"reason": "r"}', False),  # a required field missing
        ("The answer is yes.", False),
        ('{"reason": "r", "verdict": 1', False),  # cut off
    ],
)
def test_an_unusable_answer_is_never_stored(tmp_path, text, stored):
    """A malformed judge answer is a failed evaluation, never a cached answer to replay."""
    schema = {
        "type": "object",
        "properties": {"reason": {}, "verdict": {}},
        "required": ["reason", "verdict"],
    }
    inner = ScriptedLLM(handler=lambda request: text)
    cached = CachedLLM(inner=inner, path=tmp_path / "c.sqlite")
    request = LLMRequest((ChatMessage("user", "judge this"),), json_schema=schema)
    asyncio.run(cached.complete(request))
    asyncio.run(cached.complete(request))
    assert inner.usage.total_calls == (1 if stored else 2)


def test_connections_opening_a_new_file_at_once_all_get_it(tmp_path: Path) -> None:
    """Switching a new file to WAL takes its lock without SQLite's busy handler: connections that
    open it at the same moment got "database is locked" at once (the suite's writer-threads test
    lost a thread's 50 entries that way under load), whatever their timeout. They now wait for it.
    (12 threads on each of 40 new files: before, 0-4 of the 480 opens failed per run.)"""
    failures: list[str] = []
    for attempt in range(40):
        path = tmp_path / f"c{attempt}.sqlite"
        start = threading.Barrier(12)

        def open_and_write(worker: int, path: Path = path, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                store = ResponseStore(path=path, timeout_s=5.0)
                for i in range(5):
                    store.put(f"{worker}-{i}", Completion("answer", 1, 1))
                store.close()
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                failures.append(str(exc))

        threads = [threading.Thread(target=open_and_write, args=(w,)) for w in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
