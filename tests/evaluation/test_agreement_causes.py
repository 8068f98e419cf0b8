"""Failed evaluations are named by cause, and with none measured no figure is given (n/a)."""

from __future__ import annotations

import pytest

from promptevolver.evaluation._agreement import agreement_of
from promptevolver.judge._protocol import Judgement

LABELS = [1.0, 0.0, 1.0, 1.0]


def test_failed_evaluations_are_left_out_and_counted_by_cause():
    judged = {
        0: Judgement(1.0),
        1: Judgement(0.0),
        2: Judgement(None, error="bad json", cause="parse"),
        3: Judgement(None, error="503", cause="http 503"),
    }
    a = agreement_of(judged, [0, 1, 2, 3], LABELS, binary=True)
    assert (a.n, a.failures, a.accuracy) == (2, 2, 1.0)  # not 0.5: the failures are no verdicts
    assert a.failure_causes == {"parse": 1, "http 503": 1}
    assert a.summary().endswith("| n 2, 2 failed (http 503 1, parse 1)")


def test_when_every_evaluation_failed_no_figure_is_given():
    judged = {p: Judgement(None, error="timed out", cause="timeout") for p in range(4)}
    a = agreement_of(judged, [0, 1, 2, 3], LABELS, binary=True)
    assert (a.n, a.failures, a.accuracy, a.f1, a.cohen_kappa, a.confusion) == (0, 4, None, None, None, None)
    assert a.summary() == "accuracy n/a | F1 n/a | Cohen's kappa n/a | n 0, 4 failed (timeout 4)"
    numeric = agreement_of(judged, [0, 1], LABELS, binary=False)
    assert numeric.summary() == "MSE n/a | MAE n/a | n 0, 2 failed (timeout 2)"


def test_a_failure_without_a_cause_is_counted_as_an_error():
    a = agreement_of({0: Judgement(1.0), 1: Judgement(None)}, [0, 1], LABELS, binary=True)
    assert a.failure_causes == {"error": 1}


def test_no_positions_is_an_error():
    with pytest.raises(ValueError, match="no positions"):
        agreement_of({}, [], LABELS, binary=True)
