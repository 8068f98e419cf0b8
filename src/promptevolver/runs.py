"""Run directories: what an ``optimize`` run leaves behind.

Layout::

    DIR/config.yaml        the effective run config (paths absolute), written first
    DIR/checkpoint.json    search state after the last finished generation (see checkpoint.py)
    DIR/best_so_far.json   best train candidate at the last checkpoint
    DIR/result.json        the result contract of DESIGN.md (OptimizationResult.to_dict())
"""

from __future__ import annotations

from pathlib import Path

import yaml

from promptevolver.config import RunConfig
from promptevolver.optimizers.result import OptimizationResult

__all__ = ["CONFIG_FILE", "RESULT_FILE", "write_config", "write_result"]

RESULT_FILE = "result.json"
CONFIG_FILE = "config.yaml"


def write_config(directory: str | Path, config: RunConfig) -> Path:
    """Write ``config`` as DIR/config.yaml (directory created if needed); return its path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    with (out / CONFIG_FILE).open("w", encoding="utf-8") as fh:
        yaml.safe_dump(config.model_dump(mode="json"), fh, sort_keys=False)
    return out / CONFIG_FILE


def write_result(directory: str | Path, result: OptimizationResult) -> Path:
    """Write DIR/result.json; return its path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    result.to_json(out / RESULT_FILE)
    return out / RESULT_FILE
