"""Reading a YAML config file strictly: a key given twice in one mapping is an error.

PyYAML's ``safe_load`` keeps the last of two equal keys without a word (``generations: 4`` then
``generations: 0`` gives 0). :class:`UniqueKeyLoader` is a ``SafeLoader`` that checks every
mapping's keys before building the document and names the key path and both lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from promptevolver.errors import ConfigError
from promptevolver.rundir import not_a_file

__all__ = ["DuplicateKeyError", "UniqueKeyLoader", "read_yaml_mapping"]

_MERGE_TAG = "tag:yaml.org,2002:merge"  # ``<<: *anchor`` merges; its keys may be overridden


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping key given twice. Attributes: ``key_path`` (dotted, list items by index),
    ``lines`` (1-based line of each occurrence)."""

    def __init__(self, key_path: str, lines: tuple[int, int]) -> None:
        super().__init__(None, None, f"{key_path}: key given twice (lines {lines[0]} and {lines[1]})")
        self.key_path, self.lines = key_path, lines


class UniqueKeyLoader(yaml.SafeLoader):
    """A ``SafeLoader`` that raises :class:`DuplicateKeyError` for a key given twice in a mapping
    (keys brought in by a ``<<`` merge may still be overridden, as YAML means them to be)."""

    def construct_document(self, node: yaml.Node) -> Any:
        _check_unique_keys(node)
        return super().construct_document(node)


def _check_unique_keys(root: yaml.Node) -> None:
    """Walk the node graph (iteratively; aliases visited once) and raise at the first repeated key."""
    stack: list[tuple[tuple[str, ...], yaml.Node]] = [((), root)]
    seen_nodes: set[int] = set()
    while stack:
        trail, node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            lines: dict[tuple[str, Any], int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                scalar = isinstance(key_node, yaml.ScalarNode)
                key = (key_node.tag, key_node.value if scalar else id(key_node))
                line = key_node.start_mark.line + 1
                if key in lines:
                    raise DuplicateKeyError(".".join((*trail, str(key_node.value))), (lines[key], line))
                lines[key] = line
                stack.append(((*trail, str(key_node.value)), value_node))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(((*trail, str(i)), item) for i, item in enumerate(node.value))


def read_yaml_mapping(path: Path, *, what: str = "config file") -> dict[str, Any]:
    """The top-level mapping of a YAML file, read with :class:`UniqueKeyLoader`.

    Raises:
        ConfigError: one line starting with the file: not found, a directory, not UTF-8, not
            valid YAML, a key given twice (key path and lines), nesting too deep to read, or a
            top level that is not a mapping.
    """
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a {what}")
    if not path.is_file():  # a fifo or a device (/dev/zero) is refused before it is opened
        raise ConfigError(f"{path}: {not_a_file(path) if path.exists() else what + ' not found'}")
    try:
        with path.open(encoding="utf-8") as fh:
            raw = yaml.load(fh, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKeyError as exc:
        raise ConfigError(f"{path}: {exc.problem}; YAML would keep only the last, remove one") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    return raw
