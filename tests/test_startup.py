"""Startup stays cheap: ``import promptevolver`` and ``promptevolver --help`` load no heavy library.

Timings live in benchmarks/results/startup.md (measured, never asserted here); these tests pin
the cause of a slow start instead: which modules a fresh interpreter has loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("sklearn", "scipy", "matplotlib", "openai", "numpy", "pydantic", "yaml", "tenacity", "asyncio")


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return {name.split(".")[0] for name in json.loads(out.strip().splitlines()[-1])}


def test_import_promptevolver_loads_no_heavy_library():
    assert _loaded_after("import promptevolver").isdisjoint(HEAVY)


@pytest.mark.parametrize("argv", [["--help"], ["optimize", "--help"], ["evaluate", "--help"]])
def test_help_loads_no_heavy_library(argv):
    code = (
        "import contextlib, io\nfrom promptevolver.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({argv!r})"
    )
    assert _loaded_after(code).isdisjoint(HEAVY)


def test_the_heavy_libraries_load_once_a_command_needs_them():
    """The probe can fail: a command that builds a run does load them."""
    loaded = _loaded_after("from promptevolver.config._build import build_llm")
    assert {"pydantic", "numpy", "sklearn"} <= loaded
