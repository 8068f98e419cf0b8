"""What the command line runs: ``optimize``, ``evaluate``, ``estimate``, ``bench`` and the exports.

The run directory these write (file names, atomic writes, readers) is :mod:`promptevolver.rundir`'s.
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.rundir import CONFIG_FILE as CONFIG_FILE
    from promptevolver.rundir import RESULT_FILE as RESULT_FILE
    from promptevolver.runs._agreement import load_recorded as load_recorded
    from promptevolver.runs._bench import run_benchmarks as run_benchmarks
    from promptevolver.runs._bench import to_markdown as to_markdown
    from promptevolver.runs._estimate import estimate as estimate
    from promptevolver.runs._estimate_output import estimate_lines as estimate_lines
    from promptevolver.runs._evaluate import chosen_positions as chosen_positions
    from promptevolver.runs._evaluate import run_of as run_of
    from promptevolver.runs._evaluate import score_instructions as score_instructions
    from promptevolver.runs._evaluate_output import scorecard_json as scorecard_json
    from promptevolver.runs._evaluate_output import scorecard_lines as scorecard_lines
    from promptevolver.runs._export import scorecard_rows as scorecard_rows
    from promptevolver.runs._export import write_samples as write_samples
    from promptevolver.runs._export_to import run_export as run_export
    from promptevolver.runs._gate import SIMULATED_EVALUATE as SIMULATED_EVALUATE
    from promptevolver.runs._gate import SIMULATED_GATE as SIMULATED_GATE
    from promptevolver.runs._gate import GateResult as GateResult
    from promptevolver.runs._gate import check_gate as check_gate
    from promptevolver.runs._gate import check_threshold as check_threshold
    from promptevolver.runs._gate import default_figure as default_figure
    from promptevolver.runs._gate import interval_of as interval_of
    from promptevolver.runs._import import run_import as run_import
    from promptevolver.runs._optimize import execute as execute
    from promptevolver.runs._optimize import write_config as write_config
    from promptevolver.runs._optimize import write_result as write_result
    from promptevolver.runs._outcome import outcome_lines as outcome_lines
    from promptevolver.runs._outcome import stop_line as stop_line
    from promptevolver.runs._review import review as review

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.runs._optimize": ["execute", "write_config", "write_result"],
        "promptevolver.rundir": ["CONFIG_FILE", "RESULT_FILE"],
        "promptevolver.runs._outcome": ["outcome_lines", "stop_line"],
        "promptevolver.runs._evaluate": ["chosen_positions", "run_of", "score_instructions"],
        "promptevolver.runs._evaluate_output": "*",
        "promptevolver.runs._export": ["scorecard_rows", "write_samples"],
        "promptevolver.runs._gate": [
            "GateResult",
            "SIMULATED_EVALUATE",
            "SIMULATED_GATE",
            "check_gate",
            "check_threshold",
            "default_figure",
            "interval_of",
        ],
        "promptevolver.runs._estimate": ["estimate"],
        "promptevolver.runs._estimate_output": ["estimate_lines"],
        "promptevolver.runs._agreement": "*",
        "promptevolver.runs._bench": ["run_benchmarks", "to_markdown"],
        "promptevolver.runs._review": ["review"],
        "promptevolver.runs._import": ["run_import"],
        "promptevolver.runs._export_to": ["run_export"],
    },
)
