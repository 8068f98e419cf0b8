"""The OpenAI provider is one package: the only home of the ``openai`` SDK, with an exact public face."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import promptevolver.llm.openai as provider

SRC = Path(__file__).resolve().parents[2] / "src" / "promptevolver"


def _imports_sdk(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "openai" for a in node.names):
            return True
        module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
        if isinstance(node, ast.ImportFrom) and node.level == 0 and module.split(".")[0] == "openai":
            return True
    return False


def test_only_the_provider_package_imports_the_sdk() -> None:
    importers = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if _imports_sdk(p)}
    assert importers, "no module imports the SDK: the scan is broken"
    assert {p for p in importers if not p.startswith("llm/openai/")} == set()


def test_the_package_face_exports_exactly_its_public_names() -> None:
    recorded = json.loads((Path(__file__).parents[1] / "public_api.json").read_text(encoding="utf-8"))
    assert sorted(provider.__all__) == recorded["promptevolver.llm.openai"]  # the one record of the API
    assert all(hasattr(provider, name) for name in provider.__all__)
    modules = {p.stem for p in (SRC / "llm" / "openai").glob("*.py")} - {"__init__"}
    assert modules == {"_chat", "_client", "_embeddings", "_errors", "_negotiation", "_preflight", "_wire"}
