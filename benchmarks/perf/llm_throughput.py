"""Throughput and per-call overhead of the LLM client layer (a measurement, not a test).

Runs a :class:`~promptevolver.testing.LocalOpenAIServer` in a child process (so that its work
does not share the client's interpreter lock) answering a fixed judge verdict after a fixed
latency, and measures:

1. **throughput**: ``--calls`` judge calls through :class:`OpenAIClient` with
   ``max_concurrency`` in flight against a ``--latency-ms`` server; the ideal is
   ``max_concurrency / latency`` calls per second (640/s for 32 and 50 ms);
   the same server driven by as many threads of bare ``http.client`` gives its own ceiling;
2. **overhead per call at zero latency**, sequentially: ``OpenAIClient.complete`` against a bare
   keep-alive ``http.client`` round trip to the same server (the difference is the client's own
   cost: SDK, httpx, retries, usage), plus the base class alone (:class:`ScriptedLLM`, no HTTP)
   and a :class:`CachedLLM` hit.

Usage::

    python -m benchmarks.perf.llm_throughput [--calls 3200] [--latency-ms 50] [--concurrency 32]
                                              [--repeat 3] [--overhead-calls 500]

The figures depend on the machine and its load: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import multiprocessing
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from promptevolver.llm import CachedLLM, OpenAIClient, ScriptedLLM
from promptevolver.llm._base import ChatMessage, LLMRequest
from promptevolver.testing import LocalOpenAIServer

VERDICT = json.dumps({"reason": "The response matches the reference.", "verdict": 1})
SYSTEM = "Evaluate the Input based on the criteria defined. " * 12
USER = '## Input\n{"user_input": "What is the capital of France?", "response": "Paris."}'


def serve(latency_s: float, pipe: Connection) -> None:
    """Child process: serve until the parent closes the pipe."""
    with LocalOpenAIServer(lambda body: VERDICT, latency_s=latency_s) as server:
        pipe.send(server.port)
        with contextlib.suppress(EOFError):
            pipe.recv()


class ServerProcess:
    """A LocalOpenAIServer in a child process, as a context manager yielding its port."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    def __enter__(self) -> int:
        self.parent, child = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=serve, args=(self.latency_s, child), daemon=True)
        self.process.start()
        return int(self.parent.recv())

    def __exit__(self, *exc_info: object) -> None:
        self.parent.close()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.terminate()


def request(i: int) -> LLMRequest:
    messages = (ChatMessage("system", SYSTEM), ChatMessage("user", f"{USER} #{i}"))
    return LLMRequest(messages=messages)


def client(port: int, concurrency: int) -> OpenAIClient:
    return OpenAIClient(
        model="bench", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-bench", max_concurrency=concurrency
    )


async def throughput(port: int, calls: int, concurrency: int) -> tuple[float, int]:
    """(calls per second, retries) for ``calls`` concurrent calls after a warm-up."""
    async with client(port, concurrency) as llm:
        await asyncio.gather(*(llm.complete(request(-i)) for i in range(1, 2 * concurrency + 1)))
        start = time.perf_counter()
        await asyncio.gather(*(llm.complete(request(i)) for i in range(calls)))
        elapsed = time.perf_counter() - start
        return calls / elapsed, llm.usage.retries


async def per_call_ms(call: Callable[[int], Awaitable[Any]], n: int) -> tuple[float, float]:
    """(median wall ms, mean CPU ms) of ``n`` sequential calls after 20 warm-up calls."""
    for i in range(20):
        await call(-i - 1)
    walls = []
    cpu = time.process_time()
    for i in range(n):
        t = time.perf_counter()
        await call(i)
        walls.append(time.perf_counter() - t)
    return statistics.median(walls) * 1e3, (time.process_time() - cpu) / n * 1e3


def server_ceiling(port: int, calls: int, concurrency: int) -> float:
    """Calls per second of ``concurrency`` threads doing bare keep-alive POSTs: what the server
    itself can serve, to tell a slow client from a slow server."""
    body = json.dumps({"model": "bench", "messages": [m.to_dict() for m in request(0).messages]})
    per_thread = calls // concurrency

    def work() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        for _ in range(per_thread):
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
        conn.close()

    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return per_thread * concurrency / (time.perf_counter() - start)


def raw_http_ms(port: int, n: int) -> float:
    """Median ms of a bare keep-alive POST round trip with the same body size."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    body = json.dumps({"model": "bench", "messages": [m.to_dict() for m in request(0).messages]})
    walls = []
    for i in range(n + 20):
        t = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        conn.getresponse().read()
        if i >= 20:
            walls.append(time.perf_counter() - t)
    conn.close()
    return statistics.median(walls) * 1e3


async def overheads(port: int, n: int) -> dict[str, tuple[float, float]]:
    results = {}
    async with client(port, 1) as llm:
        results["OpenAIClient over HTTP"] = await per_call_ms(lambda i: llm.complete(request(i)), n)
    scripted = ScriptedLLM(handler=lambda r: VERDICT)
    results["BaseLLMClient alone (ScriptedLLM)"] = await per_call_ms(
        lambda i: scripted.complete(request(i)), n
    )
    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedLLM(inner=ScriptedLLM(handler=lambda r: VERDICT), path=Path(tmp) / "bench.sqlite")
        await cached.complete(request(0))
        results["CachedLLM hit"] = await per_call_ms(lambda i: cached.complete(request(0)), n)
        cached.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--overhead-calls", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3, help="throughput runs (median and best shown)")
    args = parser.parse_args()

    ideal = args.concurrency / (args.latency_ms / 1e3)
    print(
        f"throughput [{args.calls} calls, {args.latency_ms:g} ms latency, "
        f"max_concurrency {args.concurrency}; ideal {ideal:.0f} calls/s]:"
    )
    with ServerProcess(args.latency_ms / 1e3) as port:
        runs = [asyncio.run(throughput(port, args.calls, args.concurrency)) for _ in range(args.repeat)]
        ceiling = server_ceiling(port, args.calls, args.concurrency)
    rates = sorted(rate for rate, _ in runs)
    print(
        f"  OpenAIClient: median {statistics.median(rates):.0f} calls/s "
        f"({statistics.median(rates) / ideal:.0%}), best {rates[-1]:.0f} ({rates[-1] / ideal:.0%}) "
        f"over {args.repeat} runs; {sum(r for _, r in runs)} retries"
    )
    print(f"  server ceiling ({args.concurrency} threads of bare http.client): {ceiling:.0f} calls/s")
    with ServerProcess(0.0) as port:
        raw = raw_http_ms(port, args.overhead_calls)
        rows = asyncio.run(overheads(port, args.overhead_calls))
    print(f"zero latency, sequential ({args.overhead_calls} calls; median wall, mean client CPU):")
    print(f"  bare http.client round trip            {raw:7.3f} ms")
    for name, (wall, cpu) in rows.items():
        print(f"  {name:38s} {wall:7.3f} ms   CPU {cpu:7.3f} ms")
    http_wall = rows["OpenAIClient over HTTP"][0]
    print(f"  client overhead per call (OpenAIClient - bare round trip): {http_wall - raw:.3f} ms")


if __name__ == "__main__":
    main()
