"""A misspelt key in a config file gets the same "did you mean" as ``--set``: for every key of
every config model, at every depth (a run, a job of several metrics, a metric's mapping of
rubrics and prices included), its typo is named with the key meant, in the one error line."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from promptevolver.config._models import RUN_LEVEL_KEYS, ManyConfig, RunConfig, load_config
from promptevolver.errors import ConfigError

from ..conftest import AC_DEFINITION, AC_FILE


def _models(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The models a field holds, and whether a list index or a mapping key comes before them."""
    origin = typing.get_origin(annotation)
    if origin in (list, dict, tuple):
        inner = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        return inner, True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation], False
    found: list[type[BaseModel]] = []
    keyed = False
    for arg in typing.get_args(annotation):
        more, k = _models(arg)
        found += more
        keyed = keyed or (k and bool(more))
    return found, keyed


def _paths(model: type[BaseModel], prefix: tuple[str, ...] = (), depth: int = 0) -> list[tuple[str, ...]]:
    """Every key path of ``model`` (a mapping's key written as ``name``)."""
    out = []
    for key, field in model.model_fields.items():
        path = (*prefix, key)
        out.append(path)
        models, keyed = _models(field.annotation)
        for inner in models if depth < 4 else ():
            out += _paths(inner, (*path, "name") if keyed else path, depth + 1)
    return out


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node: Any = value
    for part in reversed(path):
        node = {part: node}
    return node


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        both = isinstance(out.get(key), dict) and isinstance(value, dict)
        out[key] = _merge(out[key], value) if both else value
    return out


BASES: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    "run": (RunConfig, {"dataset": str(AC_FILE), "metric": {"name": "a", "definition": AC_DEFINITION}}),
    "job": (ManyConfig, {"dataset": str(AC_FILE), "metrics": {"a": {"definition": AC_DEFINITION}}}),
}
CASES = [
    (kind, path)
    for kind, (model, _) in BASES.items()
    for path in _paths(model)
    if path[-1] != "name" or len(path) == 1 or path[-2] not in ("metrics", "prices", "rubrics")
    if not (path[0] == "optimizer" and len(path) > 1 and path[1] in RUN_LEVEL_KEYS)  # refused there
]


@pytest.mark.parametrize(("kind", "path"), CASES, ids=[f"{k}:{'.'.join(p)}" for k, p in CASES])
def test_a_misspelt_key_is_named_with_the_key_meant(tmp_path: Path, kind: str, path: tuple[str, ...]):
    model, base = BASES[kind]
    typo = path[-1] + "x"
    raw = _merge(base, _nested((*path[:-1], typo), 1))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    message = str(exc.value)
    where = ".".join((*path[:-1], typo))
    assert f"{where}: unknown key; did you mean {path[-1]!r}?" in message, message
    assert "\n" not in message.strip() or all(line.startswith(str(config)) for line in message.splitlines())


@pytest.mark.parametrize(
    ("path", "meant"),
    [
        (("metric", "type"), "aspect_critic"),
        (("optimizer", "strategy"), "distill"),
        (("optimizer", "examples", "policy"), "retrieval"),
        (("llm", "provider"), "openai"),
    ],
)
def test_a_misspelt_choice_is_named_with_the_choice_meant(tmp_path: Path, path: tuple[str, ...], meant: str):
    """A value of a closed list of choices, misspelt (a letter dropped), is named with the one meant."""
    typo = meant[:-2] + meant[-1]
    raw = _merge(BASES["run"][1], _nested(path, typo))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    assert f"{'.'.join(path)}: " in str(exc.value) and f"did you mean {meant!r}?" in str(exc.value), exc.value
