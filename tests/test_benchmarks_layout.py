"""benchmarks/ is code too: scripts live in folders (no file-name prefixes), run from the
repository root as modules (imports of ``benchmarks.…`` that resolve, no ``sys.path`` edits), and
the README indexes every one. judgeworld/ keeps its own layout (run by path; its README)."""

from __future__ import annotations

import ast

from .conftest import ROOT

BENCH = ROOT / "benchmarks"
SCRIPTS = sorted(
    p
    for p in BENCH.rglob("*.py")
    if p.name != "__init__.py" and "judgeworld" not in p.relative_to(BENCH).parts
)


def test_there_are_scripts_and_none_sits_at_the_top() -> None:
    assert len(SCRIPTS) > 10
    assert [p.name for p in SCRIPTS if p.parent == BENCH] == []
    assert all((p.parent / "__init__.py").is_file() for p in SCRIPTS)


def test_scripts_import_each_other_as_modules_of_the_benchmarks_package() -> None:
    broken = []
    for path in SCRIPTS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks"):
                base = ROOT.joinpath(*node.module.split("."))  # type: ignore[union-attr]
                names = [base.with_suffix(".py"), base / "__init__.py"]
                names += [base / f"{a.name}.py" for a in node.names]
                if not any(n.is_file() for n in names):
                    broken.append(f"{path.relative_to(ROOT)}: {node.module}")
            sys_path = isinstance(node, ast.Attribute) and node.attr == "path"
            if sys_path and getattr(node.value, "id", "") == "sys":  # type: ignore[attr-defined]
                broken.append(f"{path.relative_to(ROOT)}: edits sys.path")
    assert broken == []


def test_the_readme_indexes_every_script() -> None:
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    missing = [str(p.relative_to(BENCH)) for p in SCRIPTS if f"`{p.stem}`" not in readme]
    assert missing == []
    assert all(f"`{p.parent.name}/`" in readme for p in SCRIPTS)
