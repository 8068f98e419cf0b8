"""The public surface: every exported name exists, is documented, and stays exported."""

from __future__ import annotations

import importlib

import pytest

import promptevolver

MODULES = ["promptevolver", "promptevolver.llm", "promptevolver.optimizers", "promptevolver.annotations"]


@pytest.mark.parametrize("module_name", MODULES)
def test_every_exported_name_exists_and_is_documented(module_name):
    module = importlib.import_module(module_name)
    assert module.__doc__, f"{module_name} has no module docstring"
    for name in module.__all__:
        obj = getattr(module, name)
        if callable(obj) and not name.startswith("__"):
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
