"""Internals are private (Optuna, httpx style): every module of promptevolver is named ``_name.py``
and reached through its package's face (``__init__``), unless it is listed below as public by path,
with the reason users or tools name it. A new module is private unless it is added here on purpose;
what each face exports is pinned by ``tests/public_api.json`` (``tests/test_public_api.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "promptevolver"

#: Modules users import by path or that a tool names: module -> why it is public.
PUBLIC_BY_PATH = {
    "promptevolver.__main__": "`python -m promptevolver`",
    "promptevolver.cli": "the console script's target (pyproject.toml [project.scripts])",
    "promptevolver.errors": "the exception tree users catch; documented as a module",
    "promptevolver.rundir": "the run directory's files, documented by path (docs/results.md)",
    "promptevolver.integrations.ragas": "docs/ragas.md: `from promptevolver.integrations.ragas import ...`",
    "promptevolver.integrations.mlflow": "docs/tracking-mlflow.md imports MlflowTracker by this path",
    "promptevolver.testing.contracts": "docs/contracts.md: imported by path, and register_assert_rewrite",
    "promptevolver.runs.progress": "README: `from promptevolver.runs.progress import CallProgress`",
    "promptevolver.runs.memory": "docs/examples.md: `from promptevolver.runs.memory import update_examples`",
    "promptevolver.runs.many": "docs/many-metrics.md documents optimize_many by this path",
    "promptevolver.runs.suggest": "docs/suggest.md documents suggest by this path",
    "promptevolver.simulation.simulated_metrics": "docs/many-metrics.md imports SimulatedMetricsLLM by path",
    "promptevolver.simulation.synthetic": "configs/synthetic_*.yaml name it as their generator",
    "promptevolver.optimizers.events": "docs/contracts.md: callbacks get its Event",
    "promptevolver.llm.pricing": "docs/commands.md names promptevolver.llm.pricing.PRICE_TABLE",
    "promptevolver.llm.context": "docs/pipeline.md names promptevolver.llm.context.CONTEXT_WINDOWS",
}


def _module_of(path: Path) -> str:
    return ".".join(("promptevolver", *path.relative_to(SRC).with_suffix("").parts))


def public_by_accident(modules: list[str], allowed: dict[str, str]) -> list[str]:
    """The modules (not package faces) whose own name has no leading underscore and that are not
    in ``allowed``."""
    return sorted(
        m
        for m in modules
        if not m.endswith(".__init__") and not m.rsplit(".", 1)[-1].startswith("_") and m not in allowed
    )


def _modules() -> list[str]:
    return [_module_of(p) for p in SRC.rglob("*.py")]


def test_the_check_sees_a_public_internal():
    found = public_by_accident(["p.__init__", "p._base", "p.base", "p.cli", "p.__main__"], {"p.cli": "why"})
    assert found == ["p.base"]


def test_every_module_is_private_unless_listed_as_public_by_path():
    assert public_by_accident(_modules(), PUBLIC_BY_PATH) == [], (
        "make it _name.py, or list it with its reason"
    )


def test_each_listed_public_module_exists_and_has_a_reason():
    assert set(PUBLIC_BY_PATH) <= set(_modules()), set(PUBLIC_BY_PATH) - set(_modules())
    assert all(reason.strip() for reason in PUBLIC_BY_PATH.values())


def test_the_docs_never_tell_users_to_import_a_private_module():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    dotted = re.compile(r"\bpromptevolver(?:\.\w+)+")
    private = sorted(
        f"{page.name}: {hit}"
        for page in pages
        for hit in dotted.findall(page.read_text(encoding="utf-8"))
        if any(part.startswith("_") and not part.startswith("__") for part in hit.split("."))
    )
    assert private == []
