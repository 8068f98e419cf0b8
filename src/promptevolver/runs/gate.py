"""The judge gate: does a judge agree with the humans well enough to pass a build?

``promptevolver evaluate CONFIG --instructions FILE --fail-under 0.85`` and
:func:`promptevolver.testing.assert_agreement` measure a judge's agreement with the config's
annotations (:mod:`promptevolver.runs.evaluate`) and apply :func:`check_gate`:

* the gate fails when the figure (``accuracy``, ``f1`` or ``cohen_kappa``) is below the threshold;
* it fails when more than ``max_failure_rate`` of the evaluations failed (default 0: a judge
  that cannot answer is not measured, and failures are never scored as verdicts), or when the
  figure could not be measured at all (``n/a``, with the causes);
* every verdict carries the figure's confidence interval (:func:`interval_of`), because a
  score on a few dozen annotations is noisy: on 20 samples an accuracy of 0.85 has a 95%
  interval of about 0.64–0.95.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score, f1_score

from promptevolver.errors import ConfigError
from promptevolver.evaluation.agreement import Agreement
from promptevolver.evaluation.intervals import bootstrap_interval, wilson_interval

__all__ = ["FIGURES", "GateResult", "Interval", "check_gate", "interval_of"]

#: The agreement figures a gate can apply to (all in [0, 1] or [-1, 1], higher is better).
FIGURES = ("accuracy", "f1", "cohen_kappa")


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval of ``figure``: [low, high] at ``confidence``, by ``method``
    (``wilson`` or ``bootstrap``, see :mod:`promptevolver.evaluation.intervals`)."""

    figure: str
    low: float
    high: float
    confidence: float
    method: str

    def text(self) -> str:
        """``95% CI 0.584-0.919, Wilson``."""
        method = "Wilson" if self.method == "wilson" else "bootstrap"
        return f"{self.confidence:.0%} CI {self.low:.3f}-{self.high:.3f}, {method}"


def interval_of(
    agreement: Agreement, figure: str, *, rng: np.random.Generator, confidence: float = 0.95
) -> Interval | None:
    """The confidence interval of ``figure`` of a binary ``agreement``; None when nothing was
    measured or the figure is undefined on most resamples.

    Accuracy gets the Wilson interval; F1 and Cohen's kappa a percentile bootstrap over the
    (human, judge) pairs of the confusion matrix, drawn from ``rng``.

    Raises:
        ValueError: an unknown ``figure`` or a numeric (non-binary) agreement.
    """
    _check_figure(figure)
    if not agreement.binary or agreement.confusion is None:
        raise ValueError("confidence intervals are for binary agreement figures")
    if agreement.n == 0:
        return None
    (tn, fp), (fn, tp) = agreement.confusion
    if figure == "accuracy":
        low, high = wilson_interval(tn + tp, agreement.n, confidence=confidence)
        return Interval(figure, low, high, confidence, "wilson")
    human = [0.0] * (tn + fp) + [1.0] * (fn + tp)
    judge = [0.0] * tn + [1.0] * fp + [0.0] * fn + [1.0] * tp
    found = bootstrap_interval(_STATISTICS[figure], human, judge, rng=rng, confidence=confidence)
    return None if found is None else Interval(figure, found[0], found[1], confidence, "bootstrap")


def _check_figure(figure: str) -> None:
    if figure not in FIGURES:
        raise ValueError(f"unknown agreement figure {figure!r}; known: {', '.join(FIGURES)}")


def _f1(t: np.ndarray, p: np.ndarray) -> float:
    return float(f1_score(t, p, zero_division=1.0))


def _kappa(t: np.ndarray, p: np.ndarray) -> float | None:
    if len(set(t.tolist()) | set(p.tolist())) < 2:
        return None  # every label and verdict in one class: kappa is undefined
    return float(cohen_kappa_score(t, p))


_STATISTICS = {"f1": _f1, "cohen_kappa": _kappa}


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict.

    Attributes:
        passed: the figure was measured, is at least ``threshold``, and failures are within
            ``max_failure_rate``.
        figure, threshold: what was required; value: the measured figure (None: ``n/a``).
        interval: its confidence interval (None when not measured).
        n: samples measured; failures: evaluations that failed (left out of ``value``).
        reason: one line saying why it passed or failed, with the interval.
    """

    passed: bool
    figure: str
    threshold: float
    value: float | None
    interval: Interval | None
    n: int
    failures: int
    max_failure_rate: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_gate(
    agreement: Agreement,
    *,
    threshold: float,
    figure: str = "accuracy",
    max_failure_rate: float = 0.0,
    rng: np.random.Generator,
) -> GateResult:
    """Apply the gate (see the module docstring) to a measured ``agreement``.

    Args:
        threshold: the least acceptable ``figure``.
        max_failure_rate: share of evaluations that may fail, in [0, 1).
        rng: draws of the bootstrap interval (F1, kappa).

    Raises:
        ConfigError: a numeric (non-binary) agreement, an unknown ``figure``, or
            ``max_failure_rate`` outside [0, 1).
    """
    if not agreement.binary:
        raise ConfigError("the judge gate needs a binary metric (loss.type: binary): it checks agreement")
    if figure not in FIGURES:
        raise ConfigError(f"unknown agreement figure {figure!r}; known: {', '.join(FIGURES)}")
    if not 0.0 <= max_failure_rate < 1.0:
        raise ConfigError(f"max_failure_rate must be in [0, 1), got {max_failure_rate}")
    value: float | None = getattr(agreement, figure)
    interval = interval_of(agreement, figure, rng=rng) if agreement.n else None
    total = agreement.n + agreement.failures
    passed, why = _verdict(agreement, figure, value, threshold, max_failure_rate)
    ci = f" ({interval.text()})" if interval is not None else ""
    head = "judge gate passed" if passed else "judge gate failed"
    return GateResult(
        passed=passed,
        figure=figure,
        threshold=threshold,
        value=value,
        interval=interval,
        n=agreement.n,
        failures=agreement.failures,
        max_failure_rate=max_failure_rate,
        reason=f"{head}: {why.format(ci=ci, total=total)}",
    )


def _verdict(
    a: Agreement, figure: str, value: float | None, threshold: float, max_failure_rate: float
) -> tuple[bool, str]:
    causes = a.causes_text()
    if a.n == 0:
        return False, f"{figure} n/a: every one of the {{total}} evaluations failed{causes}"
    measured = "n/a" if value is None else f"{value:.3f}"
    if a.failures > max_failure_rate * (a.n + a.failures):
        return False, (
            f"{a.failures} of {{total}} evaluations failed{causes}, more than the {max_failure_rate:.0%} "
            f"allowed; {figure} on the {a.n} measured samples is {measured}{{ci}}"
        )
    if value is None:
        return False, f"{figure} n/a on {a.n} samples (undefined: every label and verdict in one class)"
    sign = ">=" if value >= threshold else "<"
    return value >= threshold, f"{figure} {measured} {sign} {threshold:g} on {a.n} samples{{ci}}"
