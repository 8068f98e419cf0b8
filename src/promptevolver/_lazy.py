"""Lazy attribute exports for package ``__init__`` modules (PEP 562).

A package lists ``name → module`` and gets a ``__getattr__`` that imports the module on first
use, so ``import promptevolver`` stays cheap (scikit-learn, matplotlib and the openai SDK load
only when something that needs them is used). Type checkers see the real imports under
``TYPE_CHECKING`` in each package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``exports`` (attribute name → module path) on demand.

    Raises:
        AttributeError: from the returned function, for a name not in ``exports``.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
