"""Shared fixtures: the bundled annotation files and a fresh simulated judge."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptevolver import AspectCritic, SingleMetricAnnotation

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
AC_FILE = DATA / "edited_chain_runs.json"
HELP_FILE = DATA / "annotated_data.json"
AC_DEFINITION = (
    "Given the user_input, reference and response. Is the response correct compared with the reference"
)


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
