"""Shared fixtures: the bundled annotation files and a fresh simulated judge."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import hypothesis  # noqa: F401  (see below)
import pytest

from promptevolver import AspectCritic, SingleMetricAnnotation

# hypothesis is imported here, at collection, on purpose: when no collected test imports it, its
# pytest plugin imports it lazily in the terminal summary, ~200 frames deep, where CPython 3.11.7's
# ast.parse (pytest's assertion rewriting) can fail with "SystemError: AST constructor recursion
# depth mismatch" and turn a passing run into exit 1 (seen running tests/runs/test_many.py alone).

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
AC_FILE = DATA / "edited_chain_runs.json"
HELP_FILE = DATA / "annotated_data.json"
AC_DEFINITION = (
    "Given the user_input, reference and response. Is the response correct compared with the reference"
)


@pytest.fixture(autouse=True, scope="session")
def user_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's cache folder (``$XDG_CACHE_HOME``: the default response cache) in a temporary
    folder for the whole session, for this process and the commands it starts: the suite never
    writes into the home of whoever runs it."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


@pytest.fixture(autouse=True)
def ctrl_c() -> Iterator[None]:
    """Ctrl-C as a terminal delivers it, whatever started the suite.

    Tests that press Ctrl-C send this process SIGINT and expect ``KeyboardInterrupt``. A
    background job of a non-interactive shell (``pytest &`` in a script) and ``nohup`` start
    Python with SIGINT ignored, so the signal would be dropped and the run would finish; this
    installs Python's default handler (:func:`signal.default_int_handler`) for each test and
    restores what was there after it. (``asyncio.run`` then installs its own, as for a user.)
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def ac_dataset() -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(AC_FILE)


@pytest.fixture
def help_dataset() -> SingleMetricAnnotation:
    return SingleMetricAnnotation.from_json(HELP_FILE)


@pytest.fixture
def ac_metric() -> AspectCritic:
    return AspectCritic(name="answer_correctness", definition=AC_DEFINITION)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-pins",
        action="store_true",
        help="rewrite tests/regression/pins.json from the current runs instead of checking them",
    )
