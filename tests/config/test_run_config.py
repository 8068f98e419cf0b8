"""Run configs: one place per setting, and a written config that says each setting once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from promptevolver.config._models import RUN_LEVEL_KEYS, ManyConfig, load_run_config
from promptevolver.errors import ConfigError

from ..conftest import AC_DEFINITION, AC_FILE


def _write(tmp_path: Path, **extra: object) -> Path:
    config = {
        "dataset": str(AC_FILE),
        "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
        **extra,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.mark.parametrize("key", sorted(RUN_LEVEL_KEYS))
def test_a_run_level_setting_under_optimizer_is_an_error_naming_its_place(tmp_path: Path, key: str) -> None:
    value = {"max_calls": 10} if key == "budget" else 3
    path = _write(tmp_path, optimizer={key: value})
    with pytest.raises(ConfigError) as err:
        load_run_config(path)
    message = str(err.value)
    assert message.startswith(f"{path}: optimizer: {key}: set it ") and RUN_LEVEL_KEYS[key] in message
    assert "Value error" not in message


@pytest.mark.parametrize("key", sorted(RUN_LEVEL_KEYS))
def test_a_job_of_several_metrics_refuses_a_run_level_setting_under_optimizer_too(key: str) -> None:
    value = {"max_calls": 10} if key == "budget" else 3
    metrics = {"answer_correctness": {"definition": AC_DEFINITION}}
    with pytest.raises(ValueError, match=f"{key}: set it .*not under optimizer"):
        ManyConfig.model_validate({"dataset": str(AC_FILE), "metrics": metrics, "optimizer": {key: value}})


def test_run_level_settings_reach_the_optimizer(tmp_path: Path) -> None:
    config = load_run_config(
        _write(tmp_path, random_seed=9, budget={"max_calls": 500}, llm={"max_concurrency": 3})
    )
    effective = config.effective_optimizer()
    assert (effective.random_seed, effective.budget.max_calls, effective.max_concurrency) == (9, 500, 3)


def test_the_dumped_config_says_each_setting_once_and_loads_back(tmp_path: Path) -> None:
    shutil.copy(AC_FILE, tmp_path / "data.json")
    config = load_run_config(
        _write(tmp_path, dataset=str(tmp_path / "data.json"), random_seed=9, budget={"max_calls": 500})
    )
    run_dir = tmp_path / "runs" / "one"
    run_dir.mkdir(parents=True)
    dumped = config.dump(relative_to=run_dir)
    assert not set(RUN_LEVEL_KEYS) & set(dumped["optimizer"])
    assert dumped["random_seed"] == 9 and dumped["budget"]["max_calls"] == 500
    assert not Path(dumped["dataset"]).is_absolute()
    (run_dir / "config.yaml").write_text(yaml.safe_dump(dumped), encoding="utf-8")
    again = load_run_config(run_dir / "config.yaml")
    assert again.dataset == config.dataset and again.effective_optimizer() == config.effective_optimizer()


def test_the_dataset_is_stored_relative_in_one_tree_and_absolute_across_trees(tmp_path: Path) -> None:
    data = tmp_path / "project" / "data.json"
    data.parent.mkdir()
    shutil.copy(AC_FILE, data)
    config = load_run_config(_write(tmp_path, dataset=str(data)))
    assert config.dump(relative_to=tmp_path / "project" / "runs" / "a")["dataset"] == "../../data.json"
    elsewhere = Path(Path(tmp_path.anchor) / "elsewhere-than-tmp")  # shares only the root with tmp_path
    assert config.dump(relative_to=elsewhere)["dataset"] == str(data.resolve())
