"""Judging candidates: the evaluator (one concurrency limit per run), losses, agreement figures."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.evaluation._agreement import Agreement as Agreement
    from promptevolver.evaluation._agreement import agreement_of as agreement_of
    from promptevolver.evaluation._evaluator import Evaluator as Evaluator
    from promptevolver.evaluation._evaluator import Score as Score
    from promptevolver.evaluation._evaluator import candidate_key as candidate_key
    from promptevolver.evaluation._evaluator import score as score
    from promptevolver.evaluation._losses import BinaryMetricLoss as BinaryMetricLoss
    from promptevolver.evaluation._losses import Loss as Loss
    from promptevolver.evaluation._losses import MSELoss as MSELoss

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.evaluation._evaluator": ["Evaluator", "Score", "candidate_key", "score"],
        "promptevolver.evaluation._losses": ["BinaryMetricLoss", "Loss", "MSELoss"],
        "promptevolver.evaluation._agreement": ["Agreement", "agreement_of"],
    },
)
