"""Runs shared by the tests of runs/ (made once per session; tests that change one copy it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..rundirs import ac_run, improved_run


@pytest.fixture(scope="session")
def improved(tmp_path_factory) -> Path:
    return improved_run(tmp_path_factory.mktemp("runs-runs"))


@pytest.fixture(scope="session")
def kept_seed(tmp_path_factory) -> Path:
    """The bundled answer_correctness run (the runs tests evaluate it on its own annotations)."""
    return ac_run(tmp_path_factory.mktemp("runs-runs"))
