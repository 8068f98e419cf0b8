"""Taking a run's best instructions elsewhere: JSON, a Python snippet, and loading them back.

Every ``optimize`` run writes into its directory::

    DIR/best_instructions.json   prompt name → best instruction (a plain JSON object)
    DIR/apply_best.py            a runnable snippet that builds the judge with them applied

:func:`load_instructions` reads instructions from any of: a run directory, its ``result.json``
(``best_instructions``), or a plain JSON object prompt name → instruction (such as
``best_instructions.json``). :meth:`promptevolver.AspectCritic.from_result` uses it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from promptevolver.config.models import MetricConfig, format_validation_error
from promptevolver.errors import ConfigError

__all__ = [
    "APPLY_SNIPPET_FILE",
    "BEST_INSTRUCTIONS_FILE",
    "apply_snippet",
    "load_instructions",
    "metric_config_near",
    "write_exports",
]

BEST_INSTRUCTIONS_FILE = "best_instructions.json"
APPLY_SNIPPET_FILE = "apply_best.py"
_RESULT_FILE = "result.json"
_CONFIG_FILE = "config.yaml"


def _instructions_file(path: Path) -> Path:
    """The file to read for ``path``: itself, or a run directory's result.json."""
    if path.is_dir():
        for name in (_RESULT_FILE, BEST_INSTRUCTIONS_FILE):
            if (path / name).is_file():
                return path / name
        raise ConfigError(f"{path}: no {_RESULT_FILE} or {BEST_INSTRUCTIONS_FILE} in this directory")
    if not path.is_file():
        raise ConfigError(f"{path}: instructions file not found")
    return path


def load_instructions(path: str | Path) -> dict[str, str]:
    """Prompt name → instruction from a run directory, a result.json or a plain JSON mapping.

    Args:
        path: a run directory (its result.json), a ``result.json`` (its ``best_instructions``), or
            a JSON object whose values are all strings (prompt name → instruction).

    Raises:
        ConfigError: missing or unreadable file, not JSON, or not a mapping of strings; the message
            names the file.
    """
    file = _instructions_file(Path(path))
    try:
        data: Any = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot be read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    if isinstance(data, dict) and isinstance(data.get("best_instructions"), dict):
        data = data["best_instructions"]
    if not isinstance(data, dict) or not data or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(
            f"{file}: expected a result.json or a JSON object of prompt name → instruction (strings)"
        )
    return {str(k): v for k, v in data.items()}


def metric_config_near(path: str | Path) -> MetricConfig | None:
    """The ``metric`` block of the run's config.yaml next to ``path`` (a run directory or a file
    in one); None when there is no config.yaml.

    Raises:
        ConfigError: the config.yaml exists but its metric block is missing or invalid.
    """
    p = Path(path)
    config = (p if p.is_dir() else p.parent) / _CONFIG_FILE
    if not config.is_file():
        return None
    try:
        raw = yaml.safe_load(config.read_text(encoding="utf-8"))
        return MetricConfig.model_validate((raw or {}).get("metric"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{config}: not valid YAML: {exc}") from exc
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, f"{config}: metric").replace("\n", "; ")) from exc


def apply_snippet(instructions: Mapping[str, str], metric: MetricConfig) -> str:
    """Python source that builds ``metric`` (an AspectCritic, or a JudgeEnsemble of one) and
    applies ``instructions``; running it prints the applied instructions."""
    items = "".join(f"    {name!r}: {text!r},\n" for name, text in instructions.items())
    ensemble = metric.is_ensemble
    lines = [
        f'"""Apply the optimized instructions to the {metric.name} judge (written by promptevolver).',
        "",
        "Run it to print them, or copy it into your code; `metric` is ready to use.",
        '"""',
        "",
        "from promptevolver import AspectCritic" + (", JudgeEnsemble" if ensemble else ""),
        "",
        f"BEST_INSTRUCTIONS = {{\n{items}}}",
        "",
        f"critic = AspectCritic(name={metric.name!r}, definition={metric.definition!r})",
        "critic.set_instructions(BEST_INSTRUCTIONS)",
    ]
    lines.append(f"metric = JudgeEnsemble({_ensemble_args(metric)})" if ensemble else "metric = critic")
    lines += [
        "",
        'if __name__ == "__main__":',
        "    for name, prompt in metric.get_prompts().items():",
        '        print(f"{name}:\\n{prompt.instruction}\\n")',
        "",
    ]
    return "\n".join(lines)


def _ensemble_args(metric: MetricConfig) -> str:
    args = {
        "num_judges": metric.num_judges,
        "aggregation_method": metric.aggregation_method or "majority",
        "max_concurrent_judges": metric.max_concurrent_judges,
        "timeout_s": metric.timeout_s,
        "temperature": metric.temperature,
    }
    return ", ".join(["metric=critic", *(f"{k}={v!r}" for k, v in args.items() if v is not None)])


def write_exports(directory: str | Path, instructions: Mapping[str, str], metric: MetricConfig) -> list[Path]:
    """Write DIR/best_instructions.json and DIR/apply_best.py; return their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    as_json = out / BEST_INSTRUCTIONS_FILE
    as_json.write_text(json.dumps(dict(instructions), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    snippet = out / APPLY_SNIPPET_FILE
    snippet.write_text(apply_snippet(instructions, metric), encoding="utf-8")
    return [as_json, snippet]
