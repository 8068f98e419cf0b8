"""Screening rules: focused minibatches and strict acceptance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver import BinaryMetricLoss, MSELoss
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.strategies._screening import focused_minibatch, passes

from ..helpers import score_of


def _parent(cid: int, correct: list[int]) -> Candidate:
    c = Candidate(cid, {"p": f"i{cid}"}, 0, "mutation")
    vec = np.asarray(correct, dtype=np.float64)
    c.train = score_of(vec)
    return c


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 1), min_size=4, max_size=40),
    st.integers(1, 12),
    st.integers(0, 2**31),
)
def test_focused_minibatch_is_half_failures_then_the_rest(correct, size, seed):
    train = list(range(100, 100 + len(correct)))
    labels = {p: float(i % 2) for i, p in enumerate(train)}
    label_list = [labels.get(i) for i in range(100 + len(correct))]
    batch = focused_minibatch([_parent(1, correct)], train, label_list, size, np.random.default_rng(seed))
    failing = {p for p, ok in zip(train, correct) if not ok}
    expected_size = min(size, len(train))
    assert len(batch) == len(set(batch)) == expected_size and set(batch) <= set(train)
    n_others = len(train) - len(failing)
    expected_others = min(n_others, expected_size - min(len(failing), expected_size // 2))
    assert len(failing & set(batch)) == expected_size - expected_others
    again = focused_minibatch([_parent(1, correct)], train, label_list, size, np.random.default_rng(seed))
    assert batch == again


def test_crossover_focus_covers_either_parents_failures():
    train = list(range(10))
    labels = [0.0, 1.0] * 5
    a = _parent(1, [0, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    b = _parent(2, [1, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    batch = focused_minibatch([a, b], train, labels, 4, np.random.default_rng(0))
    assert {0, 1} <= set(batch) and len(batch) == 4


def test_acceptance_is_strict_and_directional():
    assert passes(0.8, [0.6, 0.7], BinaryMetricLoss())
    assert not passes(0.7, [0.6, 0.7], BinaryMetricLoss())  # a tie brings nothing measurable
    assert passes(0.1, [0.2], MSELoss()) and not passes(0.2, [0.2], MSELoss())
