"""The config reference (docs/config.md) is a valid config: every key it shows exists, under the section
it shows it in, with a value the models accept (the docs cannot drift from the models)."""

from __future__ import annotations

from promptevolver.config._models import GeneticConfig, load_run_config

from ..conftest import ROOT


def _readme_config() -> str:
    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    section = text[text.index("# Config format") :]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_readme_config_block_loads_with_the_defaults_it_states(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    data = tmp_path / "benchmarks" / "data"
    data.mkdir(parents=True)
    (data / "edited_chain_runs.json").write_bytes(
        (ROOT / "benchmarks/data/edited_chain_runs.json").read_bytes()
    )
    path = configs / "readme.yaml"
    path.write_text(_readme_config(), encoding="utf-8")
    config = load_run_config(path)
    shown = config.effective_optimizer()
    defaults = GeneticConfig()
    for key in (
        "small_data",
        "max_train_samples",
        "max_validation_samples",
        "finalists",
        "confidence",
        "max_failure_rate",
        "minibatch_size",
        "validation_fraction",
        "patience",
    ):
        assert getattr(shown, key) == getattr(defaults, key), key  # the block shows the defaults


# --- the reference names everything there is (issue 30: it promised every key and lacked eight) ---


def _keys(model, depth: int = 0):
    import typing

    from pydantic import BaseModel

    for key, field in model.model_fields.items():
        yield key
        found = [field.annotation]
        for arg in list(found):
            found += list(typing.get_args(arg))
        for arg in list(found):
            found += list(typing.get_args(arg))
        for arg in found:
            if isinstance(arg, type) and issubclass(arg, BaseModel) and depth < 4:
                yield from _keys(arg, depth + 1)


def test_the_config_reference_names_every_key_of_every_config_model():
    import re

    from promptevolver.config._models import ManyConfig, RunConfig

    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    keys = {k for m in (RunConfig, ManyConfig) for k in _keys(m)}
    assert sorted(k for k in keys if not re.search(rf"\b{k}\b", text)) == []


def test_the_commands_synopsis_names_every_command():
    from promptevolver.cli import _COMMANDS

    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    synopsis = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert sorted(c for c in _COMMANDS if f"promptevolver {c} " not in synopsis) == []


def test_the_run_directory_reference_names_every_file_and_stop_reason():
    from promptevolver.optimizers.strategies import STOP_REASONS
    from promptevolver.rundir import RUN_FILES

    text = (ROOT / "docs" / "run-directory.md").read_text(encoding="utf-8")
    assert sorted(n for n in RUN_FILES if f"`{n}" not in text) == []
    assert sorted(r for r in STOP_REASONS if f"`{r}`" not in text) == []


def test_a_cost_budget_takes_the_price_tables_price_as_the_docs_say(tmp_path, monkeypatch):
    """docs/config.md and docs/real-llms.md: a cost budget needs a price, from llm.prices or the
    built-in table; a model priced by neither is refused before any call."""
    import yaml

    from promptevolver.cli import main
    from promptevolver.llm.pricing import PRICE_TABLE

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    priced = next(iter(PRICE_TABLE))
    for model, code in ((priced, 0), ("no-such-model", 1)):
        config = {
            "dataset": str(ROOT / "benchmarks" / "data" / "edited_chain_runs.json"),
            "metric": {"name": "answer_correctness", "definition": "Is it correct?"},
            "llm": {"provider": "openai", "model": model, "base_url": "http://127.0.0.1:9/v1"},
            "budget": {"max_cost_usd": 1.0},
        }
        path = tmp_path / f"{code}.yaml"
        path.write_text(yaml.safe_dump(config))
        assert main(["estimate", str(path), "-q"]) == code, model
