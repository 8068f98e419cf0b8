"""Judging candidates: the evaluator (one concurrency limit per run), losses, agreement figures, and
the recorded judge measured with no call (:func:`recorded_agreement`)."""

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
    from promptevolver.evaluation._losses import ClassificationLoss as ClassificationLoss
    from promptevolver.evaluation._losses import Loss as Loss
    from promptevolver.evaluation._losses import MSELoss as MSELoss
    from promptevolver.evaluation._recorded import RecordedAgreement as RecordedAgreement
    from promptevolver.evaluation._recorded import recorded_agreement as recorded_agreement
    from promptevolver.evaluation._recorded import recorded_verdict as recorded_verdict

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.evaluation._evaluator": ["Evaluator", "Score", "candidate_key", "score"],
        "promptevolver.evaluation._losses": ["BinaryMetricLoss", "ClassificationLoss", "Loss", "MSELoss"],
        "promptevolver.evaluation._agreement": ["Agreement", "agreement_of"],
        "promptevolver.evaluation._recorded": ["RecordedAgreement", "recorded_agreement", "recorded_verdict"],
    },
)
