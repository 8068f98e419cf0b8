"""Config values from the command line: ``--set optimizer.generations=5``.

An override is ``KEY.PATH=VALUE``. The key path must name a key of the run config (see
:class:`~promptevolver.config._models.RunConfig`; below a mapping such as ``llm.prices`` any key goes);
the value is read as YAML, so ``5`` is an int, ``0.5`` a float, ``true`` a bool, ``null`` None,
``[0, 1]`` a list and ``{n_samples: 200}`` a mapping; anything else is a string. Overrides are
applied to the parsed YAML mapping before validation, in order, so the config's own checks apply
to the result. A relative ``dataset`` path given this way is relative to the working directory.
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from promptevolver.config._models import RUN_LEVEL_KEYS, RunConfig, close_key
from promptevolver.errors import ConfigError

__all__ = ["OverrideError", "apply_overrides", "parse_override"]


class OverrideError(ConfigError):
    """A malformed ``--set`` or one naming a key the config does not have (a usage error)."""


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=value"`` → (``["a", "b"]``, the value read as YAML).

    Raises:
        OverrideError: no ``=``, an empty key or key part, or a value that is not valid YAML.
    """
    key, sep, value = text.partition("=")
    parts = key.strip().split(".")
    if not sep or not all(parts):
        raise OverrideError(f"--set {text!r}: expected KEY.PATH=VALUE, e.g. optimizer.generations=5")
    try:
        return parts, yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError as exc:
        raise OverrideError(f"--set {text!r}: the value is not valid YAML ({exc})") from exc


def _models(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The config models an annotation admits, and whether it admits a free-form mapping."""
    args = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
    mapping = any(typing.get_origin(a) is dict or a is dict for a in args)
    return models, mapping


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def check_key(parts: Sequence[str], text: str) -> None:
    """Raise :class:`OverrideError` unless ``parts`` is a key path of :class:`RunConfig`."""
    models: list[type[BaseModel]] = [RunConfig]
    for depth, part in enumerate(parts):
        fields = {name: f for m in models for name, f in m.model_fields.items()}
        if depth == 1 and parts[0] == "optimizer":  # set at run level, refused under optimizer
            if part in RUN_LEVEL_KEYS:
                raise OverrideError(
                    f"--set {text!r}: {part}: set it {RUN_LEVEL_KEYS[part]}, not under optimizer "
                    "(one place per setting)"
                )
            fields = {name: f for name, f in fields.items() if name not in RUN_LEVEL_KEYS}
        if part not in fields:
            where = ".".join(parts[:depth]) or "the config"
            close = close_key(part, fields)
            hint = f"did you mean {close!r}? " if close else ""
            raise OverrideError(
                f"--set {text!r}: unknown key {part!r} in {where}; {hint}keys: {sorted(fields)}"
            )
        models, mapping = _models(fields[part].annotation)
        if mapping and depth + 1 < len(parts):
            return
        if not models and depth + 1 < len(parts):
            raise OverrideError(f"--set {text!r}: {'.'.join(parts[: depth + 1])} has no sub-keys")


def apply_overrides(raw: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """A copy of the YAML mapping ``raw`` with ``overrides`` (``KEY.PATH=VALUE``) applied in order.

    Raises:
        OverrideError: a malformed override or an unknown key (the message names it).
    """
    out = copy.deepcopy(raw)
    for text in overrides:
        parts, value = parse_override(text)
        check_key(parts, text)
        if parts == ["dataset"] and isinstance(value, str):
            value = str(Path(value).resolve())
        node = out
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
    return out
