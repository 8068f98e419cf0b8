"""The Optimizer contract suite (promptevolver.testing.contracts) on GeneticOptimizer and on an
optimizer written as against Ragas' base (only a synchronous ``optimize``); and the suite failing
an optimizer that changes the metric, as Ragas' GeneticOptimizer did."""

from __future__ import annotations

from typing import Any

import pytest

from promptevolver import GeneticOptimizer
from promptevolver.optimizers import Optimizer
from promptevolver.testing.contracts import OptimizerContract


class TestGeneticOptimizer(OptimizerContract):
    optimizer_class = GeneticOptimizer


class Suffixing(Optimizer):
    """Ragas' shape: checks its parts as Ragas' GeneticOptimizer does, then appends a sentence."""

    def optimize(self, dataset: Any, loss: Any, config: Any, **kwargs: Any) -> dict[str, str]:  # type: ignore[override]
        if self.metric is None:
            raise ValueError("No metric provided for optimization.")
        if self.llm is None:
            raise ValueError("No llm provided for optimization.")
        own = self.metric.get_instructions()
        return {name: f"{text} Judge {len(dataset)} samples." for name, text in own.items()}


class TestRagasShapedOptimizer(OptimizerContract):
    optimizer_class = Suffixing


class _LeavesItsCandidate(Suffixing):
    """Leaves the metric holding its result, as Ragas 0.4.3's GeneticOptimizer did."""

    def optimize(self, dataset: Any, loss: Any, config: Any, **kwargs: Any) -> dict[str, str]:  # type: ignore[override]
        result = super().optimize(dataset, loss, config)
        assert self.metric is not None
        self.metric.set_instructions(result)
        return result


class _LeavesItsCandidateContract(OptimizerContract):
    optimizer_class = _LeavesItsCandidate


def test_the_suite_fails_an_optimizer_that_changes_the_metric() -> None:
    with pytest.raises(AssertionError, match="optimize\\(\\) changed the metric"):
        _LeavesItsCandidateContract().test_the_metric_keeps_its_own_instructions()
