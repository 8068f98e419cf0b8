"""promptevolver: genetic prompt optimization for LLM-as-judge metrics.

Rewrites a judge's instructions until it agrees with human annotations (Ragas' annotation
format) on samples it has not seen, with few LLM calls, reproducibly.

The names below are imported on first use, so ``import promptevolver`` loads no heavy library.
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.annotations import (
        EvaluationDataset,
        MetricAnnotation,
        PromptAnnotation,
        SampleAnnotation,
        SingleMetricAnnotation,
        SingleTurnSample,
        UnusableSamplesWarning,
    )
    from promptevolver.config.models import GeneticConfig
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
    from promptevolver.evaluation.losses import BinaryMetricLoss, Loss, MSELoss
    from promptevolver.judge.aspect_critic import AspectCritic
    from promptevolver.judge.ensemble import EvaluationItem, JudgeEnsemble
    from promptevolver.judge.protocol import Judgement
    from promptevolver.judge.rubric import RubricJudge
    from promptevolver.judge.statements import StatementSupport
    from promptevolver.optimizers.genetic import GeneticOptimizer
    from promptevolver.optimizers.result import OptimizationResult
    from promptevolver.runs.many import ManyResult, optimize_many
    from promptevolver.runs.suggest import Suggestion, Suggestions, suggest

__version__ = "0.2.0"

_EXPORTS = {
    "EvaluationDataset": "promptevolver.annotations",
    "MetricAnnotation": "promptevolver.annotations",
    "PromptAnnotation": "promptevolver.annotations",
    "SampleAnnotation": "promptevolver.annotations",
    "SingleMetricAnnotation": "promptevolver.annotations",
    "SingleTurnSample": "promptevolver.annotations",
    "UnusableSamplesWarning": "promptevolver.annotations",
    "GeneticConfig": "promptevolver.config.models",
    "AnnotationError": "promptevolver.errors",
    "AnnotationKeyError": "promptevolver.errors",
    "BudgetExceededError": "promptevolver.errors",
    "CacheError": "promptevolver.errors",
    "CheckpointError": "promptevolver.errors",
    "ConfigError": "promptevolver.errors",
    "InsufficientDataError": "promptevolver.errors",
    "LLMError": "promptevolver.errors",
    "PromptEvolverError": "promptevolver.errors",
    "BinaryMetricLoss": "promptevolver.evaluation.losses",
    "Loss": "promptevolver.evaluation.losses",
    "MSELoss": "promptevolver.evaluation.losses",
    "AspectCritic": "promptevolver.judge.aspect_critic",
    "Judgement": "promptevolver.judge.protocol",
    "RubricJudge": "promptevolver.judge.rubric",
    "StatementSupport": "promptevolver.judge.statements",
    "EvaluationItem": "promptevolver.judge.ensemble",
    "JudgeEnsemble": "promptevolver.judge.ensemble",
    "GeneticOptimizer": "promptevolver.optimizers.genetic",
    "OptimizationResult": "promptevolver.optimizers.result",
    "ManyResult": "promptevolver.runs.many",
    "optimize_many": "promptevolver.runs.many",
    "Suggestion": "promptevolver.runs.suggest",
    "Suggestions": "promptevolver.runs.suggest",
    "suggest": "promptevolver.runs.suggest",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "AnnotationError",
    "AnnotationKeyError",
    "AspectCritic",
    "BinaryMetricLoss",
    "BudgetExceededError",
    "CacheError",
    "CheckpointError",
    "ConfigError",
    "EvaluationDataset",
    "EvaluationItem",
    "GeneticConfig",
    "GeneticOptimizer",
    "InsufficientDataError",
    "JudgeEnsemble",
    "Judgement",
    "LLMError",
    "Loss",
    "MSELoss",
    "ManyResult",
    "MetricAnnotation",
    "OptimizationResult",
    "PromptAnnotation",
    "PromptEvolverError",
    "RubricJudge",
    "SampleAnnotation",
    "SingleMetricAnnotation",
    "SingleTurnSample",
    "StatementSupport",
    "Suggestion",
    "Suggestions",
    "UnusableSamplesWarning",
    "__version__",
    "optimize_many",
    "suggest",
]
