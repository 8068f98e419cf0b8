"""Confidence intervals: Wilson for accuracy, percentile bootstrap for F1 and kappa."""

from __future__ import annotations

import numpy as np
import pytest

from promptevolver.evaluation._intervals import bootstrap_interval, wilson_interval

Z95 = 1.959963984540054


def test_wilson_at_zero_successes_has_the_closed_form_upper_bound():
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(Z95**2 / (10 + Z95**2))


def test_wilson_is_symmetric_in_successes_and_failures():
    low, high = wilson_interval(3, 17)
    mirror_low, mirror_high = wilson_interval(14, 17)
    assert (low, high) == pytest.approx((1 - mirror_high, 1 - mirror_low))


def test_wilson_narrows_with_more_samples_and_widens_with_confidence():
    small, large = wilson_interval(17, 20), wilson_interval(1700, 2000)
    assert small[1] - small[0] > 5 * (large[1] - large[0])
    assert wilson_interval(17, 20, confidence=0.99)[0] < small[0]


def test_wilson_covers_the_true_proportion_about_as_often_as_it_claims():
    rng = np.random.default_rng(7)
    n, p = 20, 0.85
    hits = [lo <= p <= hi for lo, hi in (wilson_interval(int(k), n) for k in rng.binomial(n, p, 4000))]
    assert 0.92 <= np.mean(hits) <= 0.99


@pytest.mark.parametrize(("successes", "n", "confidence"), [(3, 2, 0.95), (1, 0, 0.95), (1, 2, 1.0)])
def test_wilson_refuses_impossible_arguments(successes, n, confidence):
    with pytest.raises(ValueError):
        wilson_interval(successes, n, confidence=confidence)


def _accuracy(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.mean(t == p, axis=-1)


def test_bootstrap_brackets_the_estimate_and_repeats_with_the_seed():
    t = [1.0] * 15 + [0.0] * 5
    p = [1.0] * 13 + [0.0] * 2 + [0.0] * 4 + [1.0]
    first = bootstrap_interval(_accuracy, t, p, rng=np.random.default_rng(0))
    again = bootstrap_interval(_accuracy, t, p, rng=np.random.default_rng(0))
    assert first is not None and first == again
    assert first[0] < _accuracy(np.array(t), np.array(p)) < first[1]


def test_bootstrap_agrees_with_wilson_on_a_proportion_and_works_in_blocks():
    t = [1.0] * 200
    p = [1.0] * 170 + [0.0] * 30
    boot = bootstrap_interval(_accuracy, t, p, rng=np.random.default_rng(0), resamples=4000)
    wilson = wilson_interval(170, 200)
    assert boot is not None and boot == pytest.approx(wilson, abs=0.015)
    big_t, big_p = t * 100, p * 100  # 20,000 pairs: resampled in blocks, not one 2000 x 20000 array
    big = bootstrap_interval(_accuracy, big_t, big_p, rng=np.random.default_rng(0), resamples=200)
    assert big is not None and big[0] < 0.85 < big[1] and big[1] - big[0] < 0.02


def test_bootstrap_is_none_when_the_statistic_is_mostly_undefined():
    undefined = bootstrap_interval(
        lambda t, p: np.full(len(t), np.nan), [1.0, 0.0], [1.0, 0.0], rng=np.random.default_rng(0)
    )
    assert undefined is None


def test_bootstrap_refuses_unequal_inputs():
    with pytest.raises(ValueError, match="equal"):
        bootstrap_interval(_accuracy, [1.0], [1.0, 0.0], rng=np.random.default_rng(0))


def _whole(statistic, t, p, rng, resamples):
    """The interval of every resample drawn at once, as one (resamples, n) block."""
    draws = rng.integers(0, len(t), size=(resamples, len(t)))
    found = np.asarray(statistic(np.asarray(t)[draws], np.asarray(p)[draws]), dtype=np.float64)
    defined = found[~np.isnan(found)]
    tail = (1.0 - 0.95) / 2 * 100  # as the bootstrap computes it (2.5 plus a rounding residue)
    low, high = np.percentile(defined, [tail, 100 - tail])
    return float(low), float(high)


@pytest.mark.parametrize("figure", ["f1", "cohen_kappa", "weighted_kappa"])
@pytest.mark.parametrize("seen", [1, 7, 250, 10_000, 250_000])
def test_the_statistic_sees_bounded_blocks_and_every_figure_stays_bitwise_the_same(figure, seen, monkeypatch):
    """Memory on large sets (issue 31: 20,000 annotations peaked at 433 MiB in the recorded judge's
    kappa interval): the resamples are drawn and scored ``_SEEN`` cells at a time, and the
    interval of every figure is exactly that of every resample drawn at once (the Generator's
    draws do not depend on the blocks; a rare class absent from most blocks included)."""
    from promptevolver.evaluation import _intervals
    from promptevolver.evaluation._agreement import RESAMPLED

    rng = np.random.default_rng(3)
    n = 40
    labels = [0.0, 1.0, 2.0] if figure == "weighted_kappa" else [0.0, 1.0, 2.0, 3.0]
    t = rng.choice(labels, size=n, p=[0.45, 0.45, 0.1] if len(labels) == 3 else [0.45, 0.4, 0.1, 0.05])
    p = np.where(rng.random(n) < 0.8, t, rng.choice(labels, size=n))
    shapes: list[tuple[int, int]] = []

    def watched(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        shapes.append(a.shape)
        return RESAMPLED[figure](a, b)

    monkeypatch.setattr(_intervals, "_SEEN", seen)
    got = bootstrap_interval(watched, t.tolist(), p.tolist(), rng=np.random.default_rng(11), resamples=300)
    assert got == _whole(RESAMPLED[figure], t, p, np.random.default_rng(11), 300)
    assert sum(rows for rows, _ in shapes) == 300
    assert all(rows * cols <= max(seen, n) for rows, cols in shapes)  # one resample at least
