"""Judging candidates: the evaluator (one concurrency limit per run), losses, agreement figures."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.evaluation.agreement import Agreement, agreement_of
    from promptevolver.evaluation.evaluator import Evaluator, Score, candidate_key, score
    from promptevolver.evaluation.losses import BinaryMetricLoss, Loss, MSELoss

_EXPORTS = {
    "Evaluator": "promptevolver.evaluation.evaluator",
    "Score": "promptevolver.evaluation.evaluator",
    "candidate_key": "promptevolver.evaluation.evaluator",
    "score": "promptevolver.evaluation.evaluator",
    "BinaryMetricLoss": "promptevolver.evaluation.losses",
    "Loss": "promptevolver.evaluation.losses",
    "MSELoss": "promptevolver.evaluation.losses",
    "Agreement": "promptevolver.evaluation.agreement",
    "agreement_of": "promptevolver.evaluation.agreement",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "Agreement",
    "BinaryMetricLoss",
    "Evaluator",
    "Loss",
    "MSELoss",
    "Score",
    "agreement_of",
    "candidate_key",
    "score",
]
