"""No import circles inside a package: no module imports (at run time, inside a function or for
type checkers only) a module that imports it back, directly or through others. A package's face
(``__init__``) counts as a module; ``from pkg import sub`` is an import of ``pkg.sub``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "promptevolver"
#: Packages whose modules must form no circle.
PACKAGES = ["annotations", "optimizers"]


def _module_of(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _graph() -> dict[str, set[str]]:
    """Every module of the package -> the modules of the package it imports (any import)."""
    modules = {_module_of(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                base = node.module.removeprefix("promptevolver").lstrip(".")
                if node.module.split(".")[0] != "promptevolver":
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}" if base else alias.name
                    targets.add(sub if sub in modules else base)
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("promptevolver.")]
                targets.update(name.removeprefix("promptevolver.") for name in names)
        graph[module] = {t for t in targets if t in modules and t != module}
    return graph


def _circle(graph: dict[str, set[str]], within: str) -> list[str] | None:
    """One circle among the modules under ``within`` (as a path a -> ... -> a), or None."""
    inside = {m for m in graph if m == within or m.startswith(within + ".")}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module] & inside):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(inside):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_the_scan_sees_a_circle_when_there_is_one() -> None:
    assert _circle({"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}}, "p") == ["p.a", "p.b", "p.c", "p.a"]
    assert _circle({"p.a": {"p.b"}, "p.b": set()}, "p") is None
    assert "annotations._single" in _graph()["annotations._multi"]  # imports are read


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle_inside(package: str) -> None:
    circle = _circle(_graph(), package)
    assert circle is None, " -> ".join(circle or [])
