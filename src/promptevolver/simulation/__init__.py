"""The deterministic simulated LLM (the default, no key, no network) and synthetic annotation sets."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.simulation.simulated_llm import SimulatedJudgeLLM
    from promptevolver.simulation.synthetic import SyntheticSpec, generate

_EXPORTS = {
    "SimulatedJudgeLLM": "promptevolver.simulation.simulated_llm",
    "SyntheticSpec": "promptevolver.simulation.synthetic",
    "generate": "promptevolver.simulation.synthetic",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "SimulatedJudgeLLM",
    "SyntheticSpec",
    "generate",
]
