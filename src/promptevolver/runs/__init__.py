"""What the command line runs: ``optimize``, ``evaluate``, ``estimate``, ``bench`` and the exports."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.runs.optimize import CONFIG_FILE, RESULT_FILE, execute, write_config, write_result

_EXPORTS = {
    "execute": "promptevolver.runs.optimize",
    "write_config": "promptevolver.runs.optimize",
    "write_result": "promptevolver.runs.optimize",
    "RESULT_FILE": "promptevolver.runs.optimize",
    "CONFIG_FILE": "promptevolver.runs.optimize",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "CONFIG_FILE",
    "RESULT_FILE",
    "execute",
    "write_config",
    "write_result",
]
