"""Lazy attribute exports for package ``__init__`` modules (PEP 562).

A package lists, once, each module and the names it gives (:func:`lazy_package`), and gets a
``__getattr__`` that imports the module on first use and its ``__all__`` (so the names are not
written twice), so ``import promptevolver`` stays cheap (scikit-learn, matplotlib and the openai
SDK load only when something that needs them is used). Type checkers see the real imports under
``TYPE_CHECKING`` in each package (``import X as X``: an explicit re-export).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_package"]


def lazy_package(
    package: str, exports: Mapping[str, Sequence[str]], *, also: Sequence[str] = ()
) -> tuple[Callable[[str], Any], list[str]]:
    """A package's ``__getattr__`` and ``__all__`` from ``exports`` (module path → the names it
    gives, imported on first use) and ``also`` (names the package defines itself).

    ``__all__`` is every name, sorted. The ``__getattr__`` raises AttributeError for a name not
    in ``exports``.

    Raises:
        ValueError: a name given by two modules.
    """
    where: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name in where:
                raise ValueError(f"{package}: {name!r} is exported by {where[name]} and {module}")
            where[name] = module

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__, sorted([*where, *also])
