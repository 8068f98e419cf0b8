"""A real-LLM server that dies mid-test is one clear error and the real_llm tests after it skip
(tests/llm/conftest.py), as when a llama.cpp built for another CPU dies with SIGILL at its first
completion. The dying server here answers ``GET /models`` and kills itself (SIGKILL) on the first
chat completion; the real_llm tests run against it in a child pytest."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from ..conftest import ROOT

DYING_SERVER = """
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "smollm2", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        print("first completion: dying", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # as SIGILL kills a server built for another CPU

    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


REAL_LLM_TESTS = "tests/llm/test_real_llm.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_up(url: str, server: subprocess.Popen[str]) -> None:
    for _ in range(600):
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            assert server.poll() is None, "the dying server did not start"
            time.sleep(0.1)
    raise AssertionError(f"the dying server did not answer at {url}")


def test_a_server_dying_at_its_first_completion_is_one_clear_error(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-c", DYING_SERVER, str(port)], stdout=out, text=True)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        _wait_until_up(base_url + "/models", server)
        env = {**os.environ, "PROMPTEVOLVER_REAL_LLM_BASE_URL": base_url}
        env["PROMPTEVOLVER_REAL_LLM_LOG"] = str(log)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", REAL_LLM_TESTS]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGKILL)
        server.wait()
    out = done.stdout
    assert server.returncode == -signal.SIGKILL  # it died at the first completion, as designed
    assert done.returncode == 1 and "1 failed, 3 skipped" in out, out[-4000:]
    # once in the failure's report; the short summary repeats the line only where pytest does not
    # truncate it (CI=true), so it is not counted
    report = out.split("short test summary info")[0]
    assert report.count(f"the real LLM server at {base_url} stopped answering during this test") == 1
    assert "first completion: dying" in out  # the tail of the server's log
    assert "SKIPPED" in out and "the real LLM server died during" in out  # -ra shows the reason
