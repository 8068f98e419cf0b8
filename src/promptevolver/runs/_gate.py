"""The judge gate: does a judge agree with the humans well enough to pass a build?

``promptevolver evaluate CONFIG --instructions FILE --fail-under 0.85`` and
:func:`promptevolver.testing.assert_agreement` measure a judge's agreement with the config's
annotations (:mod:`promptevolver.runs._evaluate`) and apply :func:`check_gate`:

* the gate fails when the figure is below the threshold. Figures (higher is better): for a
  binary metric ``accuracy`` (the default), ``f1``, ``cohen_kappa``; for named classes (a
  pairwise a / b / tie, a classification) ``accuracy`` (the default), ``cohen_kappa``; for
  scores on an ordinal scale (a 1-5 rubric) ``within_one`` (the default), ``exact``,
  ``weighted_kappa``. Continuous scores have only errors (MSE, MAE, lower is better): no gate;
* it fails when more than ``max_failure_rate`` of the evaluations failed (default 0: a judge
  that cannot answer is not measured, and failures are never scored as verdicts), or when the
  figure could not be measured at all (``n/a``, with the causes);
* every verdict carries the figure's confidence interval (:func:`interval_of`), because a
  score on a few dozen annotations is noisy: on 20 samples an accuracy of 0.85 has a 95%
  interval of about 0.64-0.95;
* a threshold is a figure in [0, 1] (:func:`check_threshold`): ``85`` (a percentage) or ``nan``
  is refused before any call;
* when the simulated LLM judged (``provider: fake``), the verdict says so
  (:data:`SIMULATED_GATE`): it measured the simulator, not a model, so it cannot catch a
  regression of a real judge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from promptevolver.errors import ConfigError
from promptevolver.evaluation import PROPORTIONS, RESAMPLED, Agreement, bootstrap_interval, wilson_interval

__all__ = [
    "BINARY_FIGURES",
    "FIGURES",
    "NOMINAL_FIGURES",
    "ORDINAL_FIGURES",
    "GateResult",
    "Interval",
    "SIMULATED_EVALUATE",
    "SIMULATED_GATE",
    "check_gate",
    "check_threshold",
    "interval_of",
]

#: Gate figures of a binary metric (all higher-is-better; the first is the default).
BINARY_FIGURES = ("accuracy", "f1", "cohen_kappa")
#: Gate figures of scores on an ordinal scale (higher-is-better; the first is the default).
ORDINAL_FIGURES = ("within_one", "exact", "weighted_kappa")
#: Gate figures of named classes (higher-is-better; the first is the default).
NOMINAL_FIGURES = ("accuracy", "cohen_kappa")
FIGURES = BINARY_FIGURES + ORDINAL_FIGURES
#: What a gate's verdict adds when the simulated LLM judged.
SIMULATED_GATE = (
    "the simulated LLM judged (llm.provider fake): this gate measures the simulator, not a model, "
    "and cannot catch a regression of a real judge"
)

#: What ``evaluate`` says without a gate when the simulated LLM judged.
SIMULATED_EVALUATE = (
    "the simulated LLM judged (llm.provider fake): these figures show the simulator on your "
    "annotations, not a model's agreement"
)


def check_threshold(value: float, *, name: str = "threshold", below_one: bool = False) -> float:
    """``value`` when it is a figure in [0, 1] (``[0, 1)`` when ``below_one``); the gate's
    figures and shares all are.

    Raises:
        ConfigError: nan, infinite or outside the range (``85`` is a percentage: the message
            says to write ``0.85``).
    """
    high_ok = value < 1.0 if below_one else value <= 1.0
    if math.isfinite(value) and value >= 0.0 and high_ok:
        return value
    span = "[0, 1)" if below_one else "[0, 1]"
    hint = f" (a share, not a percentage: {value / 100:g} for {value:g} %)" if 1.0 < value <= 100.0 else ""
    raise ConfigError(f"{name} must be a number in {span}{hint}, got {value:g}".strip())


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval of ``figure``: [low, high] at ``confidence``, by ``method``
    (``wilson`` or ``bootstrap``, see :mod:`promptevolver.evaluation._intervals`)."""

    figure: str
    low: float
    high: float
    confidence: float
    method: str

    def text(self) -> str:
        """``95% CI 0.584-0.919, Wilson``."""
        method = "Wilson" if self.method == "wilson" else "bootstrap"
        return f"{self.confidence:.0%} CI {self.low:.3f}-{self.high:.3f}, {method}"


def default_figure(agreement: Agreement) -> str | None:
    """``accuracy`` for a binary metric, ``within_one`` for ordinal scores, None for continuous ones."""
    if agreement.binary or agreement.nominal:
        return BINARY_FIGURES[0]
    return ORDINAL_FIGURES[0] if agreement.ordinal else None


def interval_of(
    agreement: Agreement,
    figure: str,
    pairs: Sequence[tuple[float, float]],
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> Interval | None:
    """The confidence interval of ``figure``; None when nothing was measured or the figure is
    undefined on most resamples.

    Shares of samples (accuracy, exact, within one) get the Wilson interval; F1 and the kappas a
    percentile bootstrap over the measured ``pairs`` (human label, judge score), drawn from ``rng``,
    of the figure's resampled form (:data:`promptevolver.evaluation._agreement.RESAMPLED`).

    Raises:
        ConfigError: ``figure`` does not apply to this agreement (see :data:`FIGURES`).
    """
    _check_figure(agreement, figure)
    value = getattr(agreement, figure)
    if agreement.n == 0 or value is None:
        return None
    if figure in PROPORTIONS:
        low, high = wilson_interval(round(value * agreement.n), agreement.n, confidence=confidence)
        return Interval(figure, low, high, confidence, "wilson")
    human, judge = zip(*pairs)
    found = bootstrap_interval(RESAMPLED[figure], human, judge, rng=rng, confidence=confidence)
    return None if found is None else Interval(figure, found[0], found[1], confidence, "bootstrap")


def _check_figure(agreement: Agreement, figure: str) -> None:
    allowed = (
        BINARY_FIGURES
        if agreement.binary
        else NOMINAL_FIGURES
        if agreement.nominal
        else ORDINAL_FIGURES
        if agreement.ordinal
        else ()
    )
    if figure not in allowed:
        kind = (
            "a binary metric"
            if agreement.binary
            else "named classes"
            if agreement.nominal
            else "ordinal scores"
            if agreement.ordinal
            else None
        )
        if kind is None:
            raise ConfigError(
                "the judge gate needs a figure where higher is better: continuous scores have only "
                "errors (MSE, MAE); gate a binary metric or scores on an ordinal scale"
            )
        raise ConfigError(f"figure {figure!r} does not apply to {kind}; use one of {', '.join(allowed)}")


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict.

    Attributes:
        passed: the figure was measured, is at least ``threshold``, and failures are within
            ``max_failure_rate``.
        figure, threshold: what was required; value: the measured figure (None: ``n/a``).
        interval: its confidence interval (None when not measured).
        n: samples measured; failures: evaluations that failed (left out of ``value``).
        reason: one line saying why it passed or failed, with the interval, and
            :data:`SIMULATED_GATE` when the simulated LLM judged.
        simulated_llm: True when the simulated LLM judged (the gate measured the simulator).
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
    simulated_llm: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_gate(
    agreement: Agreement,
    pairs: Sequence[tuple[float, float]],
    *,
    threshold: float,
    figure: str | None = None,
    max_failure_rate: float = 0.0,
    rng: np.random.Generator,
    simulated_llm: bool = False,
) -> GateResult:
    """Apply the gate (see the module docstring) to a measured ``agreement``.

    Args:
        pairs: the measured (human label, judge score) pairs behind ``agreement`` (for the
            bootstrap interval of F1 and the kappas).
        threshold: the least acceptable ``figure``.
        figure: see :data:`FIGURES`; None: ``accuracy`` (binary) or ``within_one`` (ordinal).
        max_failure_rate: share of evaluations that may fail, in [0, 1).
        rng: draws of the bootstrap interval.
        simulated_llm: the simulated LLM judged: the reason says so (:data:`SIMULATED_GATE`).

    Raises:
        ConfigError: continuous scores (no higher-is-better figure), a figure that does not apply,
            a ``threshold`` outside [0, 1] or nan, or ``max_failure_rate`` outside [0, 1).
    """
    check_threshold(threshold, name="the gate's threshold")
    check_threshold(max_failure_rate, name="max_failure_rate", below_one=True)
    chosen = figure or default_figure(agreement) or "accuracy"
    _check_figure(agreement, chosen)
    value: float | None = getattr(agreement, chosen)
    interval = interval_of(agreement, chosen, pairs, rng=rng)
    passed, why = _verdict(agreement, chosen, value, threshold, max_failure_rate)
    ci = f" ({interval.text()})" if interval is not None else ""
    head = "judge gate passed" if passed else "judge gate failed"
    simulated = f"; {SIMULATED_GATE}" if simulated_llm else ""
    return GateResult(
        passed=passed,
        figure=chosen,
        threshold=threshold,
        value=value,
        interval=interval,
        n=agreement.n,
        failures=agreement.failures,
        max_failure_rate=max_failure_rate,
        reason=f"{head}: {why.format(ci=ci, total=agreement.n + agreement.failures)}{simulated}",
        simulated_llm=simulated_llm,
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
