"""The deterministic simulated LLM (the default, no key, no network) and synthetic annotation sets:
binary verdicts, rubric scores, and statements with their verdicts (a two-prompt metric)."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.simulation._simulated_llm import SimulatedJudgeLLM as SimulatedJudgeLLM
    from promptevolver.simulation._synthetic_rubric import RubricSpec as RubricSpec
    from promptevolver.simulation._synthetic_rubric import generate_rubric as generate_rubric
    from promptevolver.simulation._synthetic_statements import StatementsSpec as StatementsSpec
    from promptevolver.simulation._synthetic_statements import generate_statements as generate_statements
    from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM as SimulatedMetricsLLM
    from promptevolver.simulation.synthetic import SyntheticSpec as SyntheticSpec
    from promptevolver.simulation.synthetic import generate as generate

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.simulation._simulated_llm": ["SimulatedJudgeLLM"],
        "promptevolver.simulation.simulated_metrics": ["SimulatedMetricsLLM"],
        "promptevolver.simulation.synthetic": ["SyntheticSpec", "generate"],
        "promptevolver.simulation._synthetic_rubric": ["RubricSpec", "generate_rubric"],
        "promptevolver.simulation._synthetic_statements": ["StatementsSpec", "generate_statements"],
    },
)
