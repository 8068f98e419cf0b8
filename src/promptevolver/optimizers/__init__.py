"""Optimizers of judge instructions: the genetic search and its parts."""

from promptevolver.optimizers._base import Optimizer
from promptevolver.optimizers._genetic import GeneticOptimizer
from promptevolver.optimizers._records import (
    BudgetStop,
    CrossFitRecord,
    DistillRecord,
    ExamplesRecord,
    SearchRecord,
    StageCost,
    StageRecord,
    Stages,
    VerifyRecord,
)
from promptevolver.optimizers._result import OptimizationResult
from promptevolver.optimizers._split import Regime

__all__ = [
    "BudgetStop",
    "CrossFitRecord",
    "DistillRecord",
    "ExamplesRecord",
    "GeneticOptimizer",
    "OptimizationResult",
    "Optimizer",
    "Regime",
    "SearchRecord",
    "StageCost",
    "StageRecord",
    "Stages",
    "VerifyRecord",
]
