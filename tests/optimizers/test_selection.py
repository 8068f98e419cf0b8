"""Selection rules: ranking ties, Pareto front, tournaments, complementary parents, survivors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver import BinaryMetricLoss, MSELoss
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.strategies import _selection as selection

from ..helpers import score_of


def _cand(cid: int, correct: list[int], *, text: str | None = None, value: float | None = None) -> Candidate:
    vec = np.asarray(correct, dtype=np.float64)
    c = Candidate(cid, {"p": text or f"instruction {cid:03d}"}, 0, "seed" if cid == 0 else "mutation")
    c.train = score_of(vec, value)
    return c


def test_rank_ties_prefer_seed_then_shorter_then_older():
    loss = BinaryMetricLoss()
    seed = _cand(0, [1, 0], text="a much longer seed instruction")
    short = _cand(2, [0, 1], text="short")
    same_len = _cand(1, [1, 0], text="short")
    assert [c.id for c in selection.rank([short, same_len, seed], loss)] == [0, 1, 2]


def test_rank_honours_direction():
    worse, better = _cand(1, [0], value=0.5), _cand(2, [1], value=0.1)
    assert selection.rank([worse, better], MSELoss())[0].id == 2
    assert selection.rank([worse, better], BinaryMetricLoss())[0].id == 1


def test_pareto_front_keeps_specialists_and_drops_dominated():
    a = _cand(1, [1, 1, 1, 0])  # best mean
    b = _cand(2, [0, 0, 0, 1])  # lower mean, but the only one right on sample 3
    c = _cand(3, [1, 1, 0, 0])  # dominated by a
    front = selection.pareto_front([a, b, c])
    assert {x.id for x in front} == {1, 2}


def test_pareto_front_is_everyone_when_nothing_discriminates():
    cs = [_cand(i, [1, 0, 1]) for i in range(3)]
    assert selection.pareto_front(cs) == cs


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.integers(0, 1), min_size=5, max_size=5), min_size=2, max_size=8))
def test_pareto_front_members_are_best_somewhere_and_undominated(rows):
    cs = [_cand(i, r) for i, r in enumerate(rows)]
    front = selection.pareto_front(cs)
    matrix = np.array(rows)
    assert front
    for c in front:
        others = np.delete(matrix, c.id, axis=0)
        own = matrix[c.id]
        assert not ((others >= own).all(axis=1) & (others > own).any(axis=1)).any() or len(front) == len(cs)


def test_survivors_keep_a_specialist_over_a_better_mean_generalist():
    loss = BinaryMetricLoss()
    cs = [
        _cand(0, [1, 1, 1, 0, 0]),
        _cand(1, [1, 1, 1, 1, 0]),
        _cand(2, [1, 1, 1, 1, 0], text="x" * 40),
        _cand(3, [0, 0, 0, 0, 1]),
    ]
    kept = selection.survivors(cs, loss, size=2, elite_count=1)
    assert [c.id for c in kept] == [1, 3]


def test_tournament_is_seeded_and_needs_a_pool():
    loss = BinaryMetricLoss()
    cs = [_cand(i, [i % 2, 1]) for i in range(6)]
    first = [selection.tournament(cs, loss, np.random.default_rng(4), 2).id for _ in range(1)]
    again = [selection.tournament(cs, loss, np.random.default_rng(4), 2).id for _ in range(1)]
    assert first == again
    with pytest.raises(ValueError):
        selection.tournament([], loss, np.random.default_rng(0), 2)


def test_complementary_parents_differ_most_and_never_self():
    loss = BinaryMetricLoss()
    a = _cand(1, [1, 1, 1, 1, 0, 0])
    twin = _cand(2, [1, 1, 1, 1, 0, 0])
    complement = _cand(3, [1, 1, 1, 0, 1, 1])
    weak = _cand(4, [0, 0, 0, 0, 1, 1])  # differs most from a, but not in the fitter half
    firsts = set()
    for seed in range(20):
        pair = selection.complementary_parents(
            [a, twin, complement, weak], loss, np.random.default_rng(seed), 1
        )
        assert pair is not None
        first, second = pair
        firsts.add(first.id)
        assert first.id != second.id and 4 not in (first.id, second.id)
        assert {first.id, second.id} == {1, 3}  # the twin adds nothing to a
    assert firsts == {1, 3}


def test_no_crossover_between_identical_behaviour_or_alone():
    loss = BinaryMetricLoss()
    twins = [_cand(1, [1, 0, 1]), _cand(2, [1, 0, 1])]
    assert selection.complementary_parents(twins, loss, np.random.default_rng(0), 2) is None
    assert selection.complementary_parents(twins[:1], loss, np.random.default_rng(0), 2) is None
