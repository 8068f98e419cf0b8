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
from promptevolver.optimizers._stages import (
    STRATEGIES,
    CrossFit,
    Distill,
    Examples,
    FinalChoice,
    FinalChoiceRecord,
    Generations,
    InitialPopulation,
    Search,
    Seed,
    Stage,
    Verify,
)
from promptevolver.optimizers._views import StageView

__all__ = [
    "STRATEGIES",
    "BudgetStop",
    "CrossFit",
    "CrossFitRecord",
    "Distill",
    "DistillRecord",
    "Examples",
    "ExamplesRecord",
    "FinalChoice",
    "FinalChoiceRecord",
    "Generations",
    "GeneticOptimizer",
    "InitialPopulation",
    "OptimizationResult",
    "Optimizer",
    "Regime",
    "Search",
    "SearchRecord",
    "Seed",
    "Stage",
    "StageCost",
    "StageRecord",
    "StageView",
    "Stages",
    "Verify",
    "VerifyRecord",
]
