"""Run directories: what an ``optimize`` run leaves behind.

Layout::

    DIR/result.json     the result contract of DESIGN.md (OptimizationResult.to_dict())
    DIR/config.yaml     the effective config of the run (paths absolute)
"""

from __future__ import annotations

from pathlib import Path

import yaml

from promptevolver.config import RunConfig
from promptevolver.optimizers.result import OptimizationResult

__all__ = ["RESULT_FILE", "write_run"]

RESULT_FILE = "result.json"
CONFIG_FILE = "config.yaml"


def write_run(directory: str | Path, result: OptimizationResult, config: RunConfig) -> Path:
    """Write result.json and config.yaml into ``directory`` (created if needed); return the
    path of result.json."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    result.to_json(out / RESULT_FILE)
    with (out / CONFIG_FILE).open("w", encoding="utf-8") as fh:
        yaml.safe_dump(config.model_dump(mode="json"), fh, sort_keys=False)
    return out / RESULT_FILE
