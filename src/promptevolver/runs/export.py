"""Taking a run's best instructions elsewhere: JSON and a Python snippet.

Every ``optimize`` run writes into its directory (names from :mod:`promptevolver.rundir`)::

    DIR/best_instructions.json   prompt name → best instruction (a plain JSON object)
    DIR/apply_best.py            a runnable snippet that builds the judge with them applied

Loading them back is the run directory's job: :func:`promptevolver.rundir.load_instructions`
(re-exported here for the import path of release 0.1), which
:meth:`promptevolver.AspectCritic.from_result` uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from promptevolver.config.models import MetricConfig
from promptevolver.judge.aspect_critic import AspectCritic
from promptevolver.rundir import (
    APPLY_SNIPPET_FILE,
    BEST_INSTRUCTIONS_FILE,
    load_instructions,
    metric_config_near,
    write_atomic,
    write_json,
)

__all__ = [
    "APPLY_SNIPPET_FILE",
    "BEST_INSTRUCTIONS_FILE",
    "apply_snippet",
    "load_instructions",
    "metric_config_near",
    "write_exports",
]


def apply_snippet(instructions: Mapping[str, str], metric: MetricConfig) -> str:
    """Python source that builds ``metric`` (its judge — an AspectCritic, RubricJudge or
    StatementSupport — or a JudgeEnsemble of one) and applies ``instructions``; running it prints
    the applied instructions."""
    items = "".join(f"    {name!r}: {text!r},\n" for name, text in instructions.items())
    ensemble = metric.is_ensemble
    judge, kwargs = metric.judge_source()
    named = [n for n in instructions if n != AspectCritic.PROMPT_NAME]  # a file's own prompt name
    if judge == "AspectCritic" and len(instructions) == 1 and named:
        kwargs["prompt_name"] = named[0]
    arguments = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    lines = [
        f'"""Apply the optimized instructions to the {metric.name} judge (written by promptevolver).',
        "",
        "Run it to print them, or copy it into your code; `metric` is ready to use.",
        '"""',
        "",
        f"from promptevolver import {judge}" + (", JudgeEnsemble" if ensemble else ""),
        "",
        f"BEST_INSTRUCTIONS = {{\n{items}}}",
        "",
        f"critic = {judge}({arguments})",
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
        "aggregation_method": metric.aggregation,
        "max_concurrent_judges": metric.max_concurrent_judges,
        "timeout_s": metric.timeout_s,
        "temperature": metric.temperature,
    }
    return ", ".join(["metric=critic", *(f"{k}={v!r}" for k, v in args.items() if v is not None)])


def write_exports(directory: str | Path, instructions: Mapping[str, str], metric: MetricConfig) -> list[Path]:
    """Write DIR/best_instructions.json and DIR/apply_best.py, each atomically; return their paths.

    Raises:
        OSError: a file cannot be written (an existing one is left intact).
    """
    out = Path(directory)
    as_json = write_json(out / BEST_INSTRUCTIONS_FILE, dict(instructions), indent=2)
    snippet = write_atomic(out / APPLY_SNIPPET_FILE, apply_snippet(instructions, metric))
    return [as_json, snippet]
