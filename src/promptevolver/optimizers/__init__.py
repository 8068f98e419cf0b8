"""Optimizers of judge instructions: the genetic search and its parts."""

from promptevolver.optimizers.base import Optimizer
from promptevolver.optimizers.genetic import GeneticOptimizer
from promptevolver.optimizers.result import OptimizationResult

__all__ = ["GeneticOptimizer", "OptimizationResult", "Optimizer"]
