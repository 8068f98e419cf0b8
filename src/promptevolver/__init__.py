"""promptevolver: genetic prompt optimization for LLM-as-judge metrics.

Rewrites a judge's instructions until it agrees with human annotations (Ragas' annotation
format) on samples it has not seen, with few LLM calls, reproducibly.
"""

from promptevolver.annotations import (
    EvaluationDataset,
    MetricAnnotation,
    PromptAnnotation,
    SampleAnnotation,
    SingleMetricAnnotation,
    SingleTurnSample,
    UnusableSamplesWarning,
)
from promptevolver.config import GeneticConfig
from promptevolver.ensemble import EvaluationItem, JudgeEnsemble
from promptevolver.errors import (
    AnnotationError,
    AnnotationKeyError,
    BudgetExceededError,
    CacheError,
    CheckpointError,
    ConfigError,
    InsufficientDataError,
    LLMError,
    PromptEvolverError,
)
from promptevolver.losses import BinaryMetricLoss, Loss, MSELoss
from promptevolver.metrics import AspectCritic, Judgement
from promptevolver.optimizers import GeneticOptimizer, OptimizationResult

__version__ = "0.1.0"

__all__ = [
    "AnnotationError",
    "AnnotationKeyError",
    "BudgetExceededError",
    "CacheError",
    "CheckpointError",
    "EvaluationDataset",
    "SingleTurnSample",
    "UnusableSamplesWarning",
    "AspectCritic",
    "BinaryMetricLoss",
    "ConfigError",
    "EvaluationItem",
    "GeneticConfig",
    "GeneticOptimizer",
    "InsufficientDataError",
    "JudgeEnsemble",
    "Judgement",
    "LLMError",
    "Loss",
    "MSELoss",
    "MetricAnnotation",
    "OptimizationResult",
    "PromptAnnotation",
    "PromptEvolverError",
    "SampleAnnotation",
    "SingleMetricAnnotation",
    "__version__",
]
