"""Run configs are read strictly: a YAML key given twice is an error naming its key path and lines,
and every unclear value gets one line naming its key (seeds, an empty definition, the synthetic
dataset, a directory where a file is meant, nesting too deep)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver.config._models import GeneticConfig, load_run_config
from promptevolver.config._yaml_file import read_yaml_mapping
from promptevolver.errors import ConfigError
from promptevolver.simulation.synthetic import SyntheticSpec

from ..conftest import AC_DEFINITION, AC_FILE

SETTINGS = settings(max_examples=60, deadline=None)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def config_text(**extra: Any) -> str:
    config = {"dataset": str(AC_FILE), "metric": {"name": "answer_correctness", "definition": AC_DEFINITION}}
    return yaml.safe_dump({**config, **extra}, sort_keys=False)


def config_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    message = str(info.value)
    assert all(line.startswith(f"{path}: ") for line in message.splitlines()), message  # a line a problem
    for internals in ("lax-or-strict", "function-after", "json-or-python", "Value error", "pydantic"):
        assert internals not in message, message
    return message


# --- Keys given twice -------------------------------------------------------------------------------


def test_a_key_given_twice_names_its_path_and_lines(tmp_path: Path) -> None:
    """Before: ``generations: 4`` then ``generations: 0`` gave 0 without a word."""
    text = config_text(optimizer={"generations": 4, "population_size": 3})
    text += "optimizer:\n  generations: 0\n"  # the whole mapping twice: a top-level key
    lines = text.splitlines()
    message = config_error(write(tmp_path, text))
    first = next(i for i, line in enumerate(lines, 1) if line.startswith("optimizer:"))
    assert f"optimizer: key given twice (lines {first} and {len(lines) - 1})" in message

    nested = config_text() + "optimizer:\n  generations: 4\n  patience: 2\n  generations: 0\n"
    n = len(nested.splitlines())
    message = config_error(write(tmp_path, nested))
    assert f"optimizer.generations: key given twice (lines {n - 2} and {n})" in message


def test_keys_in_lists_and_flow_mappings(tmp_path: Path) -> None:
    text = config_text() + "llm: {provider: fake, noise: 0.1, noise: 0.2}\n"
    assert "llm.noise: key given twice" in config_error(write(tmp_path, text))
    path = write(tmp_path, "items:\n  - {a: 1}\n  - {b: 1, b: 2}\n")
    with pytest.raises(ConfigError, match=r"items\.1\.b: key given twice \(lines 3 and 3\)"):
        read_yaml_mapping(path)


def test_merge_keys_may_be_overridden(tmp_path: Path) -> None:
    """``<<: *base`` then a key of base is YAML's override, not a key given twice."""
    path = write(tmp_path, "base: &b {x: 1, y: 2}\nthis:\n  <<: *b\n  y: 3\n")
    assert read_yaml_mapping(path)["this"] == {"x": 1, "y": 3}
    aliases = write(tmp_path, "a: &a {k: 1}\nb: *a\nc: [*a, *a]\n")
    assert read_yaml_mapping(aliases)["c"] == [{"k": 1}, {"k": 1}]


keys = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=6)
leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(st.characters(codec="ascii", categories=["L"]), max_size=8)
)
documents = st.recursive(leaves, lambda c: st.dictionaries(keys, c, min_size=1, max_size=4), max_leaves=12)


def mappings(value: Any, trail: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], list[str]]]:
    if not isinstance(value, dict):
        return []
    found = [(trail, list(value))]
    for key, child in value.items():
        found += mappings(child, (*trail, key))
    return found


def repeat_key(value: Any, trail: tuple[str, ...], key: str, indent: int = 0) -> str:
    """Block YAML of ``value`` with ``key`` written a second time in the mapping at ``trail``."""
    pad = "  " * indent
    lines: list[str] = []
    items = list(value.items()) + ([(key, value[key])] if trail == () else [])
    for k, v in items:
        if isinstance(v, dict):
            inner = trail[1:] if trail and trail[0] == k else ("\0",)  # "\0": no repeat below
            lines.append(f"{pad}{yaml.safe_dump(k).splitlines()[0]}:")
            lines.append(repeat_key(v, inner, key, indent + 1))
        else:
            lines.append(f"{pad}{yaml.safe_dump({k: v}, default_flow_style=True).strip()[1:-1]}")
    return "\n".join(lines)


@pytest.mark.slow
@SETTINGS
@given(document=documents.filter(lambda d: isinstance(d, dict)), data=st.data())
def test_any_key_given_twice_is_named_with_its_path(document: dict[str, Any], data: st.DataObject) -> None:
    trail, names = data.draw(st.sampled_from(mappings(document)))
    key = data.draw(st.sampled_from(names))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "d.yaml"
        path.write_text(repeat_key(document, trail, key) + "\n", encoding="utf-8")
        with pytest.raises(ConfigError) as info:
            read_yaml_mapping(path)
    expected = ".".join((*trail, key))
    assert str(info.value).startswith(f"{path}: {expected}: key given twice (lines ")


# --- One line naming the key ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"random_seed": -1}, "random_seed: must be a whole number >= 0"),
        ({"random_seed": True}, "random_seed: must be a whole number >= 0"),
        ({"seeds": [0, -3]}, "seeds.1: must be a whole number >= 0"),
        ({"dataset": {"synthetic": {"n_samples": 50, "random_seed": -2}}}, "dataset.synthetic.random_seed"),
        (
            {"dataset": {"synthetic": {"n_samples": 5}}},
            "dataset.synthetic.n_samples: Input should be greater",
        ),
        ({"dataset": {"synthetic": {"n_samples": 20, "typo": 1}}}, "dataset.synthetic.typo: unknown key"),
        ({"dataset": {"synthetic": {}}}, "dataset.synthetic.n_samples: Field required"),
        ({"dataset": {"synthtic": {"n_samples": 20}}}, "dataset.synthtic: unknown key"),
        ({"dataset": 5}, "dataset: expected a file path or {synthetic: {n_samples: ...}}, got 5"),
        ({"dataset": None}, "dataset: expected a file path"),
        ({"metric": {"name": "m", "definition": ""}}, "metric.definition: must not be empty"),
        ({"metric": {"name": "m", "definition": "  \n "}}, "metric.definition: must not be empty"),
        ({"metric": {"name": "", "definition": "d"}}, "metric.name: must not be empty"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_unclear_values_are_one_line_naming_the_key(tmp_path: Path, extra: dict[str, Any], key: str) -> None:
    message = config_error(write(tmp_path, config_text(**extra)))
    assert message.count(": ") >= 2 and key in message, message


def test_a_directory_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory, not a config file"):
        load_run_config(tmp_path)
    with pytest.raises(ConfigError, match="config file not found"):
        load_run_config(tmp_path / "absent.yaml")


def test_nesting_too_deep_and_bad_bytes_are_one_line(tmp_path: Path) -> None:
    deep = write(tmp_path, "a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert "nested too deeply" in config_error(deep)
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes(b"metric: {name: caf\xe9}\n")
    assert "not UTF-8" in config_error(latin)


def test_valid_seeds_load_and_reach_the_optimizer(tmp_path: Path) -> None:
    config = load_run_config(write(tmp_path, config_text(random_seed=0, seeds=[0, 2**40])))
    assert config.effective_optimizer().random_seed == 0 and config.seeds == [0, 2**40]
    with pytest.raises(ValueError, match="random_seed"):
        GeneticConfig(random_seed=-1)


@pytest.mark.parametrize(
    ("field", "value"),
    [("random_seed", -1), ("random_seed", True), ("n_samples", 0)],  # text_words: unused
)
def test_synthetic_spec_refuses_what_numpy_would(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        SyntheticSpec(**{"n_samples": 10, field: value})
