"""The deterministic simulated LLM (the default, no key, no network) and synthetic annotation sets:
binary verdicts, rubric scores, and statements with their verdicts (a two-prompt metric)."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.simulation.simulated_llm import SimulatedJudgeLLM
    from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM
    from promptevolver.simulation.synthetic import SyntheticSpec, generate
    from promptevolver.simulation.synthetic_rubric import RubricSpec, generate_rubric
    from promptevolver.simulation.synthetic_statements import StatementsSpec, generate_statements

_EXPORTS = {
    "SimulatedJudgeLLM": "promptevolver.simulation.simulated_llm",
    "SimulatedMetricsLLM": "promptevolver.simulation.simulated_metrics",
    "SyntheticSpec": "promptevolver.simulation.synthetic",
    "generate": "promptevolver.simulation.synthetic",
    "RubricSpec": "promptevolver.simulation.synthetic_rubric",
    "generate_rubric": "promptevolver.simulation.synthetic_rubric",
    "StatementsSpec": "promptevolver.simulation.synthetic_statements",
    "generate_statements": "promptevolver.simulation.synthetic_statements",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "RubricSpec",
    "SimulatedJudgeLLM",
    "SimulatedMetricsLLM",
    "StatementsSpec",
    "SyntheticSpec",
    "generate",
    "generate_rubric",
    "generate_statements",
]
