"""What the command line runs: ``optimize``, ``evaluate``, ``estimate``, ``bench`` and the exports.

The run directory these write (file names, atomic writes, readers) is :mod:`promptevolver.rundir`'s.
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.rundir import CONFIG_FILE as CONFIG_FILE
    from promptevolver.rundir import RESULT_FILE as RESULT_FILE
    from promptevolver.runs._optimize import execute as execute
    from promptevolver.runs._optimize import write_config as write_config
    from promptevolver.runs._optimize import write_result as write_result

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.runs._optimize": ["execute", "write_config", "write_result"],
        "promptevolver.rundir": ["RESULT_FILE", "CONFIG_FILE"],
    },
)
