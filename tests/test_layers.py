"""The package's layers: no module imports from a layer above its own (function-level imports
included). A judge that imports the run layer, or an LLM client that imports the optimizer,
fails here."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "promptevolver"

#: Lowest first; a module may import from its own layer and the ones before it.
LAYERS: list[list[str]] = [
    ["errors", "_lazy"],
    ["annotations", "config", "config._models", "config._overrides", "rundir", "llm"],
    ["judge"],
    ["evaluation", "simulation"],
    ["optimizers"],
    ["config._build"],
    ["report", "runs", "integrations"],
    ["cli", "__main__", "testing"],
]


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for level, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[1]):
                best = (level, len(prefix))
    return None if best is None else best[0]


def _module_of(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:`` (imports for type checkers only)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    return [n for n in ast.walk(tree) if id(n) not in skipped]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("promptevolver."):
            found.add(node.module.removeprefix("promptevolver."))
            if node.module in ("promptevolver.annotations", "promptevolver.optimizers", "promptevolver.llm"):
                found.update(f"{node.module.removeprefix('promptevolver.')}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("promptevolver.")
                for a in node.names
                if a.name.startswith("promptevolver.")
            )
    return found


def test_every_module_has_a_layer() -> None:
    modules = [_module_of(p) for p in SRC.rglob("*.py")]
    assert [m for m in modules if m and _layer(m) is None] == []


def test_no_import_points_from_a_lower_layer_up() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_of(path)
        if not module:
            continue  # the package's __init__: lazy exports of every layer
        own = _layer(module)
        assert own is not None
        for imported in _imports(path):
            level = _layer(imported)
            if level is not None and level > own:
                upward.append(f"{module} (layer {own}) imports {imported} (layer {level})")
    assert upward == []
