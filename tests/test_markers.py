"""Every property-based test carries the ``slow`` marker (registered in pyproject), so
``pytest -m 'not slow'`` gives a quick loop; the default run still runs them all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _name(node: ast.expr) -> str:
    return ast.unparse(node.func if isinstance(node, ast.Call) else node)


def _property_tests() -> list[tuple[str, bool]]:
    """(file::test, marked slow) for every test decorated with Hypothesis' ``given``."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [_name(d) for d in node.decorator_list]
                if any(n in ("given", "hypothesis.given") for n in names):
                    found.append((f"{path.relative_to(TESTS)}::{node.name}", "pytest.mark.slow" in names))
    return found


def test_every_property_based_test_is_marked_slow():
    found = _property_tests()
    assert len(found) >= 30  # the scan sees the suite's property tests
    assert [name for name, slow in found if not slow] == []


def test_the_slow_marker_is_registered_and_not_deselected_by_default(pytestconfig: pytest.Config):
    assert any(str(m).startswith("slow:") for m in pytestconfig.getini("markers"))
    assert "not slow" not in " ".join(pytestconfig.getini("addopts"))
