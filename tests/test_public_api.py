"""The public surface: every exported name exists, is documented, and stays exported."""

from __future__ import annotations

import importlib
import json
import pkgutil
import typing
from pathlib import Path

import pytest

import promptevolver

MODULES = ["promptevolver", "promptevolver.llm", "promptevolver.optimizers", "promptevolver.annotations"]


@pytest.mark.parametrize("module_name", MODULES)
def test_every_exported_name_exists_and_is_documented(module_name):
    module = importlib.import_module(module_name)
    assert module.__doc__, f"{module_name} has no module docstring"
    for name in module.__all__:
        obj = getattr(module, name)
        if callable(obj) and not name.startswith("__") and typing.get_origin(obj) is None:  # not an alias
            assert obj.__doc__, f"{module_name}.{name} has no docstring"


def test_the_names_users_import_stay_exported():
    required = {
        "GeneticOptimizer",
        "AspectCritic",
        "JudgeEnsemble",
        "BinaryMetricLoss",
        "MSELoss",
        "MetricAnnotation",
        "SingleMetricAnnotation",
        "SampleAnnotation",
        "PromptAnnotation",
        "GeneticConfig",
        "OptimizationResult",
        "PromptEvolverError",
        "AnnotationError",
        "ConfigError",
        "LLMError",
    }
    assert required <= set(promptevolver.__all__)
    llm = importlib.import_module("promptevolver.llm")
    assert {"OpenAIClient", "ScriptedLLM", "SimulatedJudgeLLM", "CachedLLM", "LLMClient"} <= set(llm.__all__)


def test_a_lazy_package_lists_each_name_once_and_resolves_it_on_first_use():
    from promptevolver._lazy import lazy_package

    getattr_, names = lazy_package("pkg", {"json": ["dumps", "loads"], "math": ["pi"]}, also=["__version__"])
    assert names == ["__version__", "dumps", "loads", "pi"]
    assert getattr_("pi") == pytest.approx(3.14159, abs=1e-5)
    with pytest.raises(AttributeError, match="'pkg' has no attribute 'nope'"):
        getattr_("nope")
    with pytest.raises(ValueError, match="'dumps' is exported by json and pickle"):
        lazy_package("pkg", {"json": ["dumps"], "pickle": ["dumps"]})


def test_a_lazy_package_takes_a_whole_modules_all_from_its_source_without_importing_it(tmp_path, monkeypatch):
    import sys

    from promptevolver._lazy import lazy_package

    (tmp_path / "probe_whole.py").write_text(
        'raise RuntimeError("imported")\n__all__ = ["b", "a"]\n', encoding="utf-8"
    )
    (tmp_path / "probe_no_all.py").write_text("a = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    _, names = lazy_package("pkg", {"probe_whole": "*", "math": ["pi"]})
    assert names == ["a", "b", "pi"]
    assert "probe_whole" not in sys.modules
    with pytest.raises(ValueError, match="probe_no_all has no literal __all__"):
        lazy_package("pkg", {"probe_no_all": "*"})
    with pytest.raises(ValueError, match="'a' is exported by probe_whole and math"):
        lazy_package("pkg", {"probe_whole": "*", "math": ["a"]})


# --- every package face's exports, exactly ------------------------------------------------------

API_FILE = Path(__file__).with_name("public_api.json")


def _faces() -> dict[str, list[str]]:
    """Every package of promptevolver and its ``__all__`` (sorted)."""
    names = ["promptevolver"] + sorted(
        m.name for m in pkgutil.walk_packages(promptevolver.__path__, "promptevolver.") if m.ispkg
    )
    return {name: sorted(getattr(importlib.import_module(name), "__all__", [])) for name in names}


def test_each_package_face_exports_exactly_the_recorded_names():
    """A name added to or dropped from a package face is a change of the public API: it must be
    recorded in tests/public_api.json on purpose (``python -m tests.test_public_api`` rewrites it).
    Each recorded name resolves, and no package lists a name twice."""
    recorded = json.loads(API_FILE.read_text(encoding="utf-8"))
    faces = _faces()
    assert faces == recorded, "public API changed: run `python -m tests.test_public_api` if on purpose"
    for name, exported in faces.items():
        module = importlib.import_module(name)
        assert len(set(module.__all__ if hasattr(module, "__all__") else [])) == len(exported)
        for attr in exported:
            assert getattr(module, attr) is not None or attr.startswith("__"), f"{name}.{attr}"


if __name__ == "__main__":
    API_FILE.write_text(json.dumps(_faces(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {API_FILE}")
