"""promptevolver: genetic prompt optimization for LLM-as-judge metrics.

Rewrites a judge's instructions until it agrees with human annotations (Ragas' annotation
format) on samples it has not seen, with few LLM calls, reproducibly.

The names below are imported on first use, so ``import promptevolver`` loads no heavy library.
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.annotations import EvaluationDataset as EvaluationDataset
    from promptevolver.annotations import MetricAnnotation as MetricAnnotation
    from promptevolver.annotations import PromptAnnotation as PromptAnnotation
    from promptevolver.annotations import SampleAnnotation as SampleAnnotation
    from promptevolver.annotations import SingleMetricAnnotation as SingleMetricAnnotation
    from promptevolver.annotations import SingleTurnSample as SingleTurnSample
    from promptevolver.annotations import UnusableSamplesWarning as UnusableSamplesWarning
    from promptevolver.config import GeneticConfig as GeneticConfig
    from promptevolver.errors import AnnotationError as AnnotationError
    from promptevolver.errors import AnnotationKeyError as AnnotationKeyError
    from promptevolver.errors import BudgetExceededError as BudgetExceededError
    from promptevolver.errors import CacheError as CacheError
    from promptevolver.errors import CheckpointError as CheckpointError
    from promptevolver.errors import ConfigError as ConfigError
    from promptevolver.errors import InsufficientDataError as InsufficientDataError
    from promptevolver.errors import LLMError as LLMError
    from promptevolver.errors import PromptEvolverError as PromptEvolverError
    from promptevolver.evaluation import BinaryMetricLoss as BinaryMetricLoss
    from promptevolver.evaluation import ClassificationLoss as ClassificationLoss
    from promptevolver.evaluation import Loss as Loss
    from promptevolver.evaluation import MSELoss as MSELoss
    from promptevolver.judge import AspectCritic as AspectCritic
    from promptevolver.judge import ClassificationJudge as ClassificationJudge
    from promptevolver.judge import EvaluationItem as EvaluationItem
    from promptevolver.judge import JudgeEnsemble as JudgeEnsemble
    from promptevolver.judge import Judgement as Judgement
    from promptevolver.judge import PairwiseJudge as PairwiseJudge
    from promptevolver.judge import RubricJudge as RubricJudge
    from promptevolver.judge import StatementSupport as StatementSupport
    from promptevolver.optimizers import GeneticOptimizer as GeneticOptimizer
    from promptevolver.optimizers import OptimizationResult as OptimizationResult
    from promptevolver.runs.many import ManyResult as ManyResult
    from promptevolver.runs.many import optimize_many as optimize_many
    from promptevolver.runs.suggest import Suggestion as Suggestion
    from promptevolver.runs.suggest import Suggestions as Suggestions
    from promptevolver.runs.suggest import suggest as suggest

__version__ = "0.2.0"

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.annotations": [
            "EvaluationDataset",
            "MetricAnnotation",
            "PromptAnnotation",
            "SampleAnnotation",
            "SingleMetricAnnotation",
            "SingleTurnSample",
            "UnusableSamplesWarning",
        ],
        "promptevolver.config._models": ["GeneticConfig"],
        "promptevolver.errors": [
            "AnnotationError",
            "AnnotationKeyError",
            "BudgetExceededError",
            "CacheError",
            "CheckpointError",
            "ConfigError",
            "InsufficientDataError",
            "LLMError",
            "PromptEvolverError",
        ],
        "promptevolver.evaluation._losses": ["BinaryMetricLoss", "ClassificationLoss", "Loss", "MSELoss"],
        "promptevolver.judge._aspect_critic": ["AspectCritic"],
        "promptevolver.judge._classification": ["ClassificationJudge"],
        "promptevolver.judge._pairwise": ["PairwiseJudge"],
        "promptevolver.judge._protocol": ["Judgement"],
        "promptevolver.judge._rubric": ["RubricJudge"],
        "promptevolver.judge._statements": ["StatementSupport"],
        "promptevolver.judge._ensemble": ["EvaluationItem", "JudgeEnsemble"],
        "promptevolver.optimizers._genetic": ["GeneticOptimizer"],
        "promptevolver.optimizers._result": ["OptimizationResult"],
        "promptevolver.runs.many": ["ManyResult", "optimize_many"],
        "promptevolver.runs.suggest": ["Suggestion", "Suggestions", "suggest"],
    },
    also=["__version__"],
)
