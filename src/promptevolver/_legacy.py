"""Old import paths of release 0.1, kept working for one release.

Release 0.2 moved the flat modules into packages (docs/layout.md). ``import
promptevolver.metrics`` and the like still work: a meta-path finder answers the old name with
the new module (the same object) and emits a :class:`DeprecationWarning` naming the new path.
:data:`MOVED` is the one table of old → new paths (docs/layout.md lists it too).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "install"]

#: Old module path (release 0.1) → new module path.
MOVED: dict[str, str] = {
    "promptevolver.agreement": "promptevolver.evaluation.agreement",
    "promptevolver.bench": "promptevolver.runs.bench",
    "promptevolver.build": "promptevolver.config.build",
    "promptevolver.ensemble": "promptevolver.judge.ensemble",
    "promptevolver.estimate": "promptevolver.runs.estimate",
    "promptevolver.export": "promptevolver.runs.export",
    "promptevolver.llm.simulated": "promptevolver.simulation.simulated_llm",
    "promptevolver.losses": "promptevolver.evaluation.losses",
    "promptevolver.metrics": "promptevolver.judge.aspect_critic",
    "promptevolver.optimizers.budget": "promptevolver.optimizers.strategies.budget",
    "promptevolver.optimizers.offspring": "promptevolver.optimizers.operators.breeder",
    "promptevolver.optimizers.operators": "promptevolver.optimizers.operators.meta_prompts",
    "promptevolver.optimizers.screening": "promptevolver.optimizers.strategies.screening",
    "promptevolver.optimizers.selection": "promptevolver.optimizers.strategies.selection",
    "promptevolver.overrides": "promptevolver.config.overrides",
    "promptevolver.prompts": "promptevolver.judge.prompts",
    "promptevolver.report_data": "promptevolver.report.data",
    "promptevolver.report_plots": "promptevolver.report.plots",
    "promptevolver.report_render": "promptevolver.report.render",
    "promptevolver.sampling": "promptevolver.annotations.sampling",
    "promptevolver.scoring": "promptevolver.runs.evaluate",
    "promptevolver.synthetic": "promptevolver.simulation.synthetic",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and loads it as its new module."""

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; the old path will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the new module is imported); undo the import system's ``__spec__``
        assignment so the module keeps its own name and loader."""
        for old, new in MOVED.items():
            if module.__name__ == new and old in self._specs:
                module.__spec__ = self._specs.pop(old)


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (idempotent)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
