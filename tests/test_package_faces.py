"""Faces that are doors: a module uses another package only through that package's face (its
``__init__``), never its ``_private`` modules; and what users extend is importable from a face.

Counted: each import statement in ``src/promptevolver`` of a module path holding a ``_private``
part owned by another top-level package (``optimizers.strategies`` is part of ``optimizers``),
TYPE_CHECKING imports included. The faces' own import of ``promptevolver._lazy`` (the root
package's helper that makes a face lazy) counts too. Before issue 32: about 290."""

from __future__ import annotations

import ast

from .conftest import ROOT

SRC = ROOT / "src" / "promptevolver"
BOUND = 20


def _private_imports() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        package = path.relative_to(SRC).parts[:-1][:1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules: list[list[str]] = []
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("promptevolver"):
                parts = (node.module or "").split(".")[1:]
                modules.append(parts)
                modules += [
                    [*parts, a.name] for a in node.names if (SRC.joinpath(*parts, f"{a.name}.py")).exists()
                ]
            elif isinstance(node, ast.Import):
                modules += [a.name.split(".")[1:] for a in node.names if a.name.startswith("promptevolver.")]
            for parts in modules:
                private = [i for i, x in enumerate(parts) if x.startswith("_") and not x.startswith("__")]
                if private and tuple(parts[: private[0]])[:1] != package:
                    found.append(f"{path.relative_to(SRC)}: {'.'.join(parts)}")
                    break
    return found


def test_modules_use_other_packages_through_their_faces():
    found = _private_imports()
    assert len(found) <= BOUND, "\n".join(found)
    outside_the_lazy_helper = [f for f in found if not f.endswith(": _lazy")]
    assert outside_the_lazy_helper == []


def test_the_counter_sees_a_private_import():
    path = SRC / "runs" / "_probe_for_test.py"
    path.write_text("from promptevolver.optimizers._phases import verify\n", encoding="utf-8")
    try:
        assert "runs/_probe_for_test.py: optimizers._phases" in _private_imports()
    finally:
        path.unlink()


def test_what_users_extend_is_importable_from_a_face():
    from promptevolver.evaluation import Loss
    from promptevolver.llm import BaseLLMClient, LLMClient
    from promptevolver.optimizers import Stage, StageView
    from promptevolver.optimizers.operators import Operator
    from promptevolver.optimizers.strategies import ParentSelector, StopCondition

    for role in (Operator, StopCondition, ParentSelector, Stage, Loss, LLMClient, BaseLLMClient, StageView):
        assert not role.__module__.endswith("__init__")
        assert role.__doc__, role.__name__
