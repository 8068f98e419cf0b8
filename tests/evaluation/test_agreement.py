"""Agreement figures: binary and regression-style (MAE, within one, weighted kappa), failures left out."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver.evaluation._agreement import (
    PROPORTIONS,
    RESAMPLED,
    Agreement,
    agreement,
    agreement_of,
    is_ordinal,
)
from promptevolver.judge._protocol import Judgement


def kappa_by_hand(t: list[int], p: list[int], levels: list[int]) -> float:
    """Quadratic-weighted kappa from its definition (Cohen 1968): 1 - sum(w·O) / sum(w·E)."""
    k = len(levels)
    index = {v: i for i, v in enumerate(levels)}
    observed = np.zeros((k, k))
    for a, b in zip(t, p):
        observed[index[a], index[b]] += 1
    expected = np.outer(observed.sum(1), observed.sum(0)) / len(t)
    weights = np.array([[(i - j) ** 2 for j in range(k)] for i in range(k)], dtype=float)
    return 1.0 - float((weights * observed).sum() / (weights * expected).sum())


def test_ordinal_figures_match_their_definitions():
    t = [1, 2, 3, 4, 5, 5, 3, 2]
    p = [1, 3, 3, 2, 5, 4, 3, 1]
    a = agreement(t, p, binary=False)
    assert a.ordinal and a.levels == [1.0, 2.0, 3.0, 4.0, 5.0]
    errors = np.abs(np.array(t) - np.array(p))
    assert a.mae == pytest.approx(errors.mean()) and a.mse == pytest.approx((errors**2).mean())
    assert a.exact == pytest.approx(4 / 8) and a.within_one == pytest.approx(7 / 8)
    assert a.weighted_kappa == pytest.approx(kappa_by_hand(t, p, [1, 2, 3, 4, 5]))


def test_a_level_nobody_used_does_not_change_the_weighted_kappa():
    t, p = [1, 1, 5, 5, 3], [1, 3, 5, 3, 3]  # levels 2 and 4 unused
    assert agreement(t, p, binary=False).weighted_kappa == pytest.approx(kappa_by_hand(t, p, [1, 3, 5]))


def test_weighted_kappa_punishes_far_misses_more_than_near_ones():
    t = [1, 2, 3, 4, 5] * 4
    near = [min(5, v + 1) for v in t]
    far = [6 - v for v in t]
    k_near = agreement(t, near, binary=False).weighted_kappa
    k_far = agreement(t, far, binary=False).weighted_kappa
    assert k_near is not None and k_far is not None and k_near > 0.5 > 0 > k_far


def test_a_continuous_score_gets_errors_only():
    a = agreement([0.5, 1.0, 0.25], [0.5, 0.75, 0.0], binary=False)
    assert not a.ordinal and a.within_one is None and a.weighted_kappa is None
    assert a.mae == pytest.approx(1 / 6)
    assert "within one" not in a.summary() and "MAE 0.1667" in a.summary()


def test_ordinal_can_be_forced_either_way():
    assert not agreement([1, 2], [1, 3], binary=False, ordinal=False).ordinal
    assert is_ordinal(np.array([1.0, 2.0]), np.array([3.0])) and not is_ordinal(np.array([0.5]))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=1, max_size=30))
def test_ordinal_shares_are_ordered_and_bounded(pairs):
    t, p = zip(*pairs)
    a = agreement(list(t), list(p), binary=False)
    assert a.exact is not None and a.within_one is not None
    assert 0.0 <= a.exact <= a.within_one <= 1.0
    assert a.weighted_kappa is None or -1.0 - 1e-9 <= a.weighted_kappa <= 1.0 + 1e-9


def test_failed_evaluations_are_left_out_and_counted_never_scored():
    failed = Judgement(score=None, error="down", cause="transport")
    judged = {0: Judgement(score=5.0), 1: failed, 2: Judgement(3.0)}
    labels = [5.0, 1.0, 3.0]
    a = agreement_of(judged, [0, 1, 2], labels, binary=False)
    assert (a.n, a.failures, a.mae, a.exact) == (2, 1, 0.0, 1.0)
    binary = agreement_of({0: Judgement(1.0), 1: Judgement(None)}, [0, 1], [1.0, 0.0], binary=True)
    assert (binary.n, binary.failures, binary.accuracy) == (1, 1, 1.0)


def test_nothing_measured_gives_no_figures():
    a = agreement_of({0: Judgement(None)}, [0], [3.0], binary=False)
    assert a == Agreement(binary=False, n=0, failures=1, failure_causes={"error": 1})
    assert a.summary() == "MSE n/a | MAE n/a | n 0, 1 failed (error 1)"
    with pytest.raises(ValueError, match="no human label"):
        agreement_of({0: Judgement(1.0)}, [0], [None], binary=False)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=1, max_size=40),
)
def test_the_resampled_forms_equal_the_reported_figures(
    verdicts: list[tuple[int, int]], scores: list[tuple[int, int]]
) -> None:
    """One home for the agreement statistics: the gate's bootstrap draws the same figures as
    :func:`agreement` reports, row by row (undefined is NaN there, None here)."""
    t, p = (np.array(side, dtype=float) for side in zip(*verdicts))
    a = agreement(t, p, binary=True)
    assert RESAMPLED["f1"](t[None], p[None])[0] == pytest.approx(a.f1)
    kappa = RESAMPLED["cohen_kappa"](t[None], p[None])[0]
    assert (np.isnan(kappa) and a.cohen_kappa is None) or kappa == pytest.approx(a.cohen_kappa)
    st_, sp = (np.array(side, dtype=float) for side in zip(*scores))
    numeric = agreement(st_, sp, binary=False, ordinal=True)
    weighted = RESAMPLED["weighted_kappa"](st_[None], sp[None])[0]
    assert (np.isnan(weighted) and numeric.weighted_kappa is None) or weighted == pytest.approx(
        numeric.weighted_kappa, abs=1e-9
    )
    for figure in PROPORTIONS:
        value = getattr(a if figure == "accuracy" else numeric, figure)
        assert value is not None and 0.0 <= value <= 1.0


def test_the_resampled_forms_work_row_by_row():
    t = np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    p = np.array([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    assert RESAMPLED["f1"](t, p) == pytest.approx([2 / 3, 1.0])
    kappa = RESAMPLED["cohen_kappa"](t, p)
    assert kappa[0] == pytest.approx(0.5) and np.isnan(kappa[1])
