"""Lazy attribute exports for package ``__init__`` modules (PEP 562).

A package lists, once, each module and the names it gives (:func:`lazy_package`), and gets a
``__getattr__`` that imports the module on first use and its ``__all__``, so
``import promptevolver`` stays cheap (scikit-learn, matplotlib and the openai SDK load only when
something that needs them is used). A module whose every name the package gives is listed as
``"*"``: its names are its own ``__all__``, read from its source without importing it, so they
are written once. Type checkers see the real imports under ``TYPE_CHECKING`` in each package
(``import X as X``: an explicit re-export).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from importlib.abc import InspectLoader
from typing import Any, Literal

__all__ = ["lazy_package"]


def lazy_package(
    package: str, exports: Mapping[str, Sequence[str] | Literal["*"]], *, also: Sequence[str] = ()
) -> tuple[Callable[[str], Any], list[str]]:
    """A package's ``__getattr__`` and ``__all__`` from ``exports`` (module path → the names it
    gives, imported on first use; ``"*"``: every name of the module's own ``__all__``) and
    ``also`` (names the package defines itself).

    ``__all__`` is every name, sorted. The ``__getattr__`` raises AttributeError for a name not
    in ``exports``.

    Raises:
        ValueError: a name given by two modules; a module given as ``"*"`` whose source has no
            literal ``__all__``.
    """
    where: dict[str, str] = {}
    for module, names in exports.items():
        for name in _module_all(module) if names == "*" else names:
            if name in where:
                raise ValueError(f"{package}: {name!r} is exported by {where[name]} and {module}")
            where[name] = module

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__, sorted([*where, *also])


def _module_all(module: str) -> list[str]:
    """The names of ``module``'s top-level ``__all__ = [...]``, read from its source (the module
    is not imported: the face stays lazy)."""
    spec = importlib.util.find_spec(module)
    loader = spec.loader if spec is not None else None
    source = loader.get_source(module) if isinstance(loader, InspectLoader) else None
    for node in ast.parse(source or "").body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [str(name) for name in ast.literal_eval(node.value)]
    raise ValueError(f"{module} has no literal __all__ to export with '*'")
