"""What the command line runs: ``optimize``, ``evaluate``, ``estimate``, ``bench`` and the exports.

The run directory these write (file names, atomic writes, readers) is :mod:`promptevolver.rundir`'s.
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.rundir import CONFIG_FILE, RESULT_FILE
    from promptevolver.runs.optimize import execute, write_config, write_result

_EXPORTS = {
    "execute": "promptevolver.runs.optimize",
    "write_config": "promptevolver.runs.optimize",
    "write_result": "promptevolver.runs.optimize",
    "RESULT_FILE": "promptevolver.rundir",
    "CONFIG_FILE": "promptevolver.rundir",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "CONFIG_FILE",
    "RESULT_FILE",
    "execute",
    "write_config",
    "write_result",
]
