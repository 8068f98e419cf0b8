"""Judging candidates: the evaluator (one concurrency limit per run), losses, agreement figures, and
the recorded judge measured with no call (:func:`recorded_agreement`).

Extension point — :class:`Loss` (an ABC): ``__call__(y_true, y_pred) -> float`` on the samples
measured (arrays of equal length), ``higher_is_better`` (its direction) and ``best_possible``;
``describe()`` names it in result.json. Ours: :class:`BinaryMetricLoss` (accuracy or F1),
:class:`MSELoss`, :class:`ClassificationLoss`. A Ragas-style subclass (``__call__(predicted,
actual)``) is accepted as written. :mod:`promptevolver.testing.contracts` holds the contract suite.

A figure from a few fresh judgements and the verdicts the file records (prediction-powered
inference): :func:`prediction_powered`, :class:`PredictionPoweredScore`."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.evaluation._agreement import PROPORTIONS as PROPORTIONS
    from promptevolver.evaluation._agreement import RESAMPLED as RESAMPLED
    from promptevolver.evaluation._agreement import Agreement as Agreement
    from promptevolver.evaluation._agreement import agreement as agreement
    from promptevolver.evaluation._agreement import agreement_of as agreement_of
    from promptevolver.evaluation._agreement import order_swap_bias as order_swap_bias
    from promptevolver.evaluation._evaluator import CandidateKey as CandidateKey
    from promptevolver.evaluation._evaluator import Evaluator as Evaluator
    from promptevolver.evaluation._evaluator import Score as Score
    from promptevolver.evaluation._evaluator import candidate_key as candidate_key
    from promptevolver.evaluation._evaluator import score as score
    from promptevolver.evaluation._intervals import bootstrap_interval as bootstrap_interval
    from promptevolver.evaluation._intervals import wilson_interval as wilson_interval
    from promptevolver.evaluation._losses import BinaryMetricLoss as BinaryMetricLoss
    from promptevolver.evaluation._losses import ClassificationLoss as ClassificationLoss
    from promptevolver.evaluation._losses import Loss as Loss
    from promptevolver.evaluation._losses import MSELoss as MSELoss
    from promptevolver.evaluation._losses import check_loss_fits as check_loss_fits
    from promptevolver.evaluation._losses import loss_label as loss_label
    from promptevolver.evaluation._prediction_powered import PredictionPoweredScore as PredictionPoweredScore
    from promptevolver.evaluation._prediction_powered import prediction_powered as prediction_powered
    from promptevolver.evaluation._recorded import RecordedAgreement as RecordedAgreement
    from promptevolver.evaluation._recorded import recorded_agreement as recorded_agreement
    from promptevolver.evaluation._recorded import recorded_verdict as recorded_verdict

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.evaluation._evaluator": [
            "CandidateKey",
            "Evaluator",
            "Score",
            "candidate_key",
            "score",
        ],
        "promptevolver.evaluation._losses": "*",
        "promptevolver.evaluation._agreement": [
            "Agreement",
            "PROPORTIONS",
            "RESAMPLED",
            "agreement",
            "agreement_of",
            "order_swap_bias",
        ],
        "promptevolver.evaluation._recorded": ["RecordedAgreement", "recorded_agreement", "recorded_verdict"],
        "promptevolver.evaluation._intervals": "*",
        "promptevolver.evaluation._prediction_powered": "*",
    },
)
