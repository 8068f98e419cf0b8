"""A secret in ``llm.base_url`` never reaches the run directory: literal keys are masked in
``config.yaml``, ``${NAME}`` placeholders are kept and expanded from the environment when the
client is built, and a masked URL cannot silently be used."""

from __future__ import annotations

import pytest
import yaml

from promptevolver.config._build import build_llm
from promptevolver.config._models import LLMConfig, RunConfig, stored_base_url
from promptevolver.errors import ConfigError
from promptevolver.runs._optimize import write_config

from ..helpers import make_dataset

SECRET = "s3cr3t-proxy-key"


def _config(base_url: str) -> RunConfig:
    return RunConfig.model_validate(
        {
            "dataset": {"synthetic": {"n_samples": 60}},
            "metric": {"name": "m", "definition": "Is it right?"},
            "llm": {"provider": "openai", "model": "m", "base_url": base_url, "cache": None},
        }
    )


@pytest.mark.parametrize(
    "url",
    [
        f"https://proxy.example/v1?api-key={SECRET}",
        f"https://user:{SECRET}@proxy.example/v1",
        f"https://proxy.example/v1?v=2&token={SECRET}",
    ],
)
def test_a_literal_secret_in_base_url_is_masked_in_config_yaml(tmp_path, url):
    path = write_config(tmp_path, _config(url))
    text = path.read_text()
    assert SECRET not in text
    stored = yaml.safe_load(text)["llm"]["base_url"]
    assert stored.startswith("https://") and "proxy.example" in stored and "***" in stored


def test_an_environment_placeholder_is_stored_as_written_and_expanded_for_the_client(tmp_path, monkeypatch):
    url = "https://proxy.example/v1?api-key=${PE_PROXY_KEY}"
    assert stored_base_url(url) == url
    assert yaml.safe_load(write_config(tmp_path, _config(url)).read_text())["llm"]["base_url"] == url
    monkeypatch.setenv("PE_PROXY_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    client = build_llm(_config(url).llm, dataset=make_dataset(6), random_seed=0)
    assert client.base_url == f"https://proxy.example/v1?api-key={SECRET}"  # type: ignore[attr-defined]
    assert SECRET not in repr(client)


def test_an_unset_placeholder_or_a_masked_url_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("PE_UNSET_KEY", raising=False)
    unset = LLMConfig(provider="openai", model="m", base_url="https://p/v1?k=${PE_UNSET_KEY}", cache=None)
    with pytest.raises(ConfigError, match="PE_UNSET_KEY, which is not set"):
        build_llm(unset, dataset=make_dataset(6), random_seed=0)
    masked = LLMConfig(provider="openai", model="m", base_url=stored_base_url(f"https://p/v1?k={SECRET}"))
    with pytest.raises(ConfigError, match="had its secret removed.*--resume DIR"):
        build_llm(masked.model_copy(update={"cache": None}), dataset=make_dataset(6), random_seed=0)
