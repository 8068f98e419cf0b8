"""Real-LLM tests (``-m real_llm``): a server that dies mid-test is one clear error, not a cascade.

When a ``real_llm`` test fails and the server at ``PROMPTEVOLVER_REAL_LLM_BASE_URL`` no longer
answers ``GET /models``, the failure is reported as that, in one paragraph (with the tail of the
server's log when ``PROMPTEVOLVER_REAL_LLM_LOG`` names it), and the real_llm tests after it skip,
pointing to it. A llama.cpp built for another CPU (``-march=native``; AMX a VM guest cannot use)
dies that way, with SIGILL, on its first completion.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

#: The first real_llm test during which the server died, and how it was seen.
_DEAD: dict[str, str] = {}


def server_problem(base_url: str) -> str | None:
    """Why the server at ``base_url`` does not answer ``GET /models`` (None when it does)."""
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=5):
            return None
    except urllib.error.HTTPError:
        return None  # it answers, if only with an error: alive
    except (OSError, ValueError) as exc:
        return str(getattr(exc, "reason", exc))


def _log_tail(lines: int = 15) -> str:
    log = os.environ.get("PROMPTEVOLVER_REAL_LLM_LOG")
    if not log or not Path(log).is_file():
        return "(no server log: set PROMPTEVOLVER_REAL_LLM_LOG to see it here)"
    tail = Path(log).read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    return f"the end of its log {log}:\n" + "\n".join(tail)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    base_url = os.environ.get("PROMPTEVOLVER_REAL_LLM_BASE_URL")
    if not (base_url and report.failed and report.when == "call" and item.get_closest_marker("real_llm")):
        return
    problem = server_problem(base_url)
    if problem is None:
        return  # the server is up: the failure is the test's own
    _DEAD.update(test=item.nodeid, problem=problem)
    report.longrepr = (
        f"the real LLM server at {base_url} stopped answering during this test ({problem}): it died "
        "or was stopped, so this is not a judgement of the code under test. A llama.cpp built for "
        "another CPU dies with SIGILL ('Illegal instruction') at its first completion: build it "
        "portably (.ci/llama_server.sh, docs/local-models.md).\n" + _log_tail()
    )


@pytest.fixture(autouse=True)
def _skip_after_a_dead_server(request: pytest.FixtureRequest) -> None:
    if _DEAD and request.node.get_closest_marker("real_llm"):
        pytest.skip(f"the real LLM server died during {_DEAD['test']} ({_DEAD['problem']})")
