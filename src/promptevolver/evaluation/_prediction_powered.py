"""A figure from a few fresh judgements and the verdicts a file records: prediction-powered inference.

An annotation file holds what its judge answered on every sample beside what the humans said.
When the instructions being measured are the ones that answered (the seed instruction of a run),
the recorded verdicts predict fresh ones, and judging every sample afresh only to learn the seed's
figure spends calls on what the file already says. Judge a simple random share ``π`` of the
samples afresh instead; the estimate

    θ = mean over every sample of q(recorded) + mean over the fresh ones of (q(fresh) − q(recorded))

(``q``: the loss's per-sample quality, 1 where the verdict equals the human label for accuracy)
is **unbiased whatever the recorded verdicts are**: the second term, measured on a random sample,
corrects the first for every way the recorded verdicts differ from fresh ones — another model
wrote them, the judge is noisy, the file was edited. Its variance grows with how often they differ:
the correction's on ``π·n`` samples is what a full judging would not pay. This is
*prediction-powered inference* (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-
powered inference", *Science* 382, 2023), with the recorded judge as the predictor.

Per sample it is the Horvitz–Thompson pseudo-outcome ``z = q(r) + 1[fresh]·(q(s) − q(r)) / π``,
whose expectation over the draw is ``q(s)``, the fresh quality: the mean of ``z`` is θ, and a paired
bootstrap of another candidate's quality minus ``z`` over the samples measures the difference with
the correction's variance included (the draw as independent inclusions of probability ``π``). A
:class:`PredictionPoweredScore` holds ``z`` as its ``correct`` and computes every figure from it,
through :meth:`Loss.from_mean_quality <promptevolver.evaluation.Loss.from_mean_quality>`: only a
loss that is a mean of per-sample quality (accuracy, mean squared error) has such an estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from promptevolver.evaluation._evaluator import Score
from promptevolver.evaluation._losses import Loss

__all__ = ["PredictionPoweredScore", "prediction_powered"]


@dataclass(frozen=True)
class PredictionPoweredScore(Score):
    """A :class:`~promptevolver.evaluation.Score` whose figures are prediction-powered estimates
    (see the module docstring).

    Attributes (arrays of shape ``(n,)``, aligned with the positions scored):
        correct: the pseudo-outcome ``z`` of each sample (may leave [0, 1] where a fresh verdict
            differs from the recorded one: ``1 ± 1/π``); NaN where a fresh evaluation failed.
        y_pred: the fresh verdict where judged afresh, else the recorded one (NaN: failed).
        fresh: boolean mask: the samples judged afresh.
        share: ``π``, the share of the samples drawn to be judged afresh, in (0, 1].
        recorded: ``q(r)``, the recorded verdict's quality at every sample.
    """

    fresh: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    share: float = 1.0
    recorded: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def value_on(self, loss: Loss, mask: np.ndarray, weights: np.ndarray | None = None) -> float | None:
        """The estimate of the loss over the measured samples within boolean ``mask`` (shape
        ``(n,)``): the mean pseudo-outcome, weighted by ``weights`` (shape ``(n,)``; None: equal),
        through :meth:`Loss.from_mean_quality`; None when none is measured."""
        keep = mask & self.measured
        if not keep.any():
            return None
        w = np.ones(int(keep.sum())) if weights is None else weights[keep]
        return loss.from_mean_quality(float(np.dot(w, self.correct[keep]) / w.sum()))

    @property
    def agreement(self) -> float | None:
        """The share of the measured fresh verdicts whose quality equals the recorded verdict's
        (for accuracy: the verdicts agree); None when none was measured."""
        at = self.fresh & self.measured
        if not at.any():
            return None
        fresh_quality = self.recorded[at] + (self.correct[at] - self.recorded[at]) * self.share
        return float(np.mean(np.isclose(fresh_quality, self.recorded[at])))


def prediction_powered(
    loss: Loss,
    fresh: Mapping[int, float | None],
    recorded: Mapping[int, float],
    positions: Sequence[int],
    labels: Sequence[float | None],
) -> PredictionPoweredScore:
    """The prediction-powered score at ``positions`` (its arrays of shape ``(len(positions),)``,
    aligned with them): ``recorded`` holds the recorded verdict of every position, ``fresh`` the
    fresh verdict (None: the evaluation failed) of each position of a simple random sample of
    ``positions`` drawn by the caller (the inclusion probability ``π`` is their share), ``labels``
    the human labels (indexed by position). Angelopoulos et al., "Prediction-powered inference",
    *Science* 382 (2023), with the Horvitz–Thompson pseudo-outcome of the module docstring. A
    failed fresh evaluation is left out, as :func:`~promptevolver.evaluation.score` leaves it out.

    Raises:
        ValueError: the loss is not a mean of per-sample quality, a position has no recorded
            verdict, no position was judged afresh, or a fresh one is not among ``positions``.
    """
    if loss.from_mean_quality(0.5) is None:
        name = type(loss).__name__
        raise ValueError(f"{name} is not a mean of per-sample quality: no prediction-powered estimate")
    index = {p: i for i, p in enumerate(positions)}
    if not fresh or not fresh.keys() <= index.keys():
        raise ValueError("the fresh positions must be some of the positions")
    missing = [p for p in positions if p not in recorded or recorded[p] != recorded[p]]
    if missing:
        raise ValueError(f"no recorded verdict at position {missing[0]}")
    y_true = np.array([labels[p] for p in positions], dtype=np.float64)
    r = np.array([recorded[p] for p in positions], dtype=np.float64)
    q_r = loss.per_sample_correct(y_true=y_true, y_pred=r)
    y_pred, z = r.copy(), q_r.copy()
    mask = np.zeros(len(positions), dtype=bool)
    share = len(fresh) / len(positions)
    for p, verdict in fresh.items():
        i = index[p]
        mask[i] = True
        if verdict is None or verdict != verdict:  # a failed evaluation: not measured, never scored
            y_pred[i] = z[i] = np.nan
            continue
        y_pred[i] = verdict
        q_s = float(loss.per_sample_correct(y_true=y_true[i : i + 1], y_pred=np.array([verdict]))[0])
        z[i] = q_r[i] + (q_s - q_r[i]) / share
    measured = ~np.isnan(y_pred)
    value = loss.from_mean_quality(float(z[measured].mean())) if measured.any() else None
    failures = int((~measured).sum())
    return PredictionPoweredScore(value, z, failures, y_true, y_pred, fresh=mask, share=share, recorded=q_r)
