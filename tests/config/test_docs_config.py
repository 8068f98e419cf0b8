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
