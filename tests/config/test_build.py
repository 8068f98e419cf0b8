"""The llm config keys of the client layer: cache, rate limits, prices — validated and wired."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from promptevolver.config._build import build_llm
from promptevolver.config._models import LLMConfig, default_cache, load_run_config
from promptevolver.errors import ConfigError
from promptevolver.llm import CachedLLM, CacheError, OpenAIClient, Price, SimulatedJudgeLLM
from promptevolver.llm.pricing import PRICE_TABLE, PRICE_TABLE_DATE, PRICE_TABLE_SOURCES, table_price

PRICES = {"gpt-4o-mini": {"prompt": 0.15, "completion": 0.6}}


def openai_config(**kwargs: object) -> LLMConfig:
    return LLMConfig.model_validate({"provider": "openai", "model": "gpt-4o-mini", "cache": None, **kwargs})


def test_openai_configs_cache_by_default_in_the_users_cache_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ac_dataset
) -> None:
    """Issue 31, item 12: never in the folder the command runs from (a checkout got a
    .promptevolver/ folder), but in $XDG_CACHE_HOME (else ~/.cache)."""
    monkeypatch.chdir(tmp_path / "..")
    here = sorted(p.name for p in Path.cwd().iterdir())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-config")
    config = LLMConfig.model_validate({"provider": "openai", "model": "gpt-4o-mini"})
    assert config.cache == default_cache() == tmp_path / "xdg" / "promptevolver" / "cache.sqlite"
    client = build_llm(config, dataset=ac_dataset, random_seed=1)
    assert isinstance(client, CachedLLM) and isinstance(client.inner, OpenAIClient)
    assert config.cache.is_file() and sorted(p.name for p in Path.cwd().iterdir()) == here
    assert LLMConfig().cache is None  # the simulated judge is free: no cache unless asked


@pytest.mark.parametrize("value", [None, "", "relative/cache"])
def test_without_an_absolute_xdg_cache_home_the_cache_is_in_the_home_cache_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", value)  # the spec: a relative path is ignored
    assert default_cache() == tmp_path / ".cache" / "promptevolver" / "cache.sqlite"


def test_openai_client_gets_rate_limits_and_its_price(monkeypatch: pytest.MonkeyPatch, ac_dataset) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-config")
    config = openai_config(requests_per_minute=500, tokens_per_minute=200_000, prices=PRICES)
    client = build_llm(config, dataset=ac_dataset, random_seed=1)
    assert isinstance(client, OpenAIClient)
    assert client.price == Price(prompt=0.15, completion=0.6)
    assert client.throttle.requests is not None and client.throttle.requests.per_minute == 500
    assert client.throttle.tokens is not None and client.throttle.tokens.per_minute == 200_000


def test_fake_provider_is_priced_under_its_name(ac_dataset) -> None:
    config = LLMConfig.model_validate({"prices": {"fake": {"prompt": 1, "completion": 2}}})
    client = build_llm(config, dataset=ac_dataset, random_seed=1)
    assert isinstance(client, SimulatedJudgeLLM) and client.price == Price(prompt=1.0, completion=2.0)


def test_no_prices_means_no_cost_and_no_limits(monkeypatch: pytest.MonkeyPatch, ac_dataset) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-config")
    client = build_llm(openai_config(model="my-local-model"), dataset=ac_dataset, random_seed=1)
    assert isinstance(client, OpenAIClient) and client.price is None and not client.throttle.active


def test_a_listed_model_is_priced_from_the_table_and_llm_prices_overrides_it(
    monkeypatch: pytest.MonkeyPatch, ac_dataset
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-config")
    listed = build_llm(openai_config(), dataset=ac_dataset, random_seed=1)
    assert isinstance(listed, OpenAIClient) and listed.price == PRICE_TABLE["gpt-4o-mini"]
    assert openai_config().price() == (PRICE_TABLE["gpt-4o-mini"], f"price table of {PRICE_TABLE_DATE}")
    mine = {"gpt-4o-mini": {"prompt": 9, "completion": 9}}
    overridden = build_llm(openai_config(prices=mine), dataset=ac_dataset, random_seed=1)
    assert isinstance(overridden, OpenAIClient) and overridden.price == Price(prompt=9, completion=9)
    assert LLMConfig().price() is None  # the simulated judge: free unless priced in llm.prices


def test_the_price_table_is_dated_sourced_and_exact_by_name() -> None:
    assert len(PRICE_TABLE_DATE) == 7 and PRICE_TABLE_SOURCES
    assert all(p.completion >= p.prompt > 0 for p in PRICE_TABLE.values())
    assert table_price("gpt-4o-mini") == PRICE_TABLE["gpt-4o-mini"]
    assert table_price("gpt-4o-2024-05-13") is None and table_price(None) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"prices": {"gpt-4o": {"prompt": 1, "completion": 1}}}, "no entry for 'gpt-4o-mini'"),
        ({"prices": {"gpt-4o-mini": {"prompt": -1, "completion": 1}}}, "greater than or equal to 0"),
        ({"prices": {"gpt-4o-mini": {"prompt": 1}}}, "completion"),
        ({"requests_per_minute": 0}, "greater than 0"),
        ({"tokens_per_minute": -5}, "greater than 0"),
    ],
)
def test_invalid_keys_are_refused(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        openai_config(**raw)


def test_rate_limits_are_for_openai_only() -> None:
    with pytest.raises(ValidationError, match="provider 'openai' only"):
        LLMConfig.model_validate({"provider": "fake", "requests_per_minute": 60})


def test_cache_key_in_a_run_file(tmp_path: Path, ac_dataset) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "dataset: data.json\n"
        "metric: {name: answer_correctness, definition: d}\n"
        "llm: {provider: fake, cache: cache/responses.sqlite}\n"
        f"reflection_llm: {{provider: fake, cache: {tmp_path / 'r.sqlite'}, noise: 0.0}}\n"
    )
    config = load_run_config(path)
    assert config.llm.cache == Path("cache/responses.sqlite")  # kept relative: to the working directory
    assert config.reflection_llm is not None
    shared = {"cache": tmp_path / "r.sqlite"}
    judge = build_llm(config.llm.model_copy(update=shared), dataset=ac_dataset, random_seed=1)
    meta = build_llm(config.reflection_llm, dataset=ac_dataset, random_seed=1)
    assert isinstance(judge, CachedLLM) and isinstance(meta, CachedLLM)  # two clients share one file
    assert judge.identity != meta.identity  # ... but not answers: their noise differs


def test_misspelt_cache_key_names_the_key_path(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("dataset: d.json\nmetric: {name: m, definition: d}\nllm: {provider: fake, cahce: x}\n")
    with pytest.raises(ConfigError, match="llm.cahce: unknown key"):
        load_run_config(path)


def test_unusable_cache_file_fails_at_build_time(tmp_path: Path, ac_dataset) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 1000)
    with pytest.raises(CacheError, match="bad.sqlite"):
        build_llm(LLMConfig(cache=bad), dataset=ac_dataset, random_seed=1)
