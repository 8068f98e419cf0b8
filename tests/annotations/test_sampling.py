"""Properties of the stratified sampling arithmetic, over random class-key lists."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver.annotations._sampling import (
    group_by_class,
    largest_remainder,
    make_rng,
    shuffled_batches,
    split_count,
    stratified_batches,
    stratified_sample,
    stratified_split,
)

SETTINGS = settings(max_examples=120, deadline=None)

class_key = st.one_of(st.integers(0, 4), st.sampled_from(["yes", "no"]), st.none())
keys_lists = st.lists(class_key, max_size=40)
nonempty_keys = st.lists(class_key, min_size=1, max_size=40)
seeds = st.integers(0, 2**32 - 1)
sizes_lists = st.lists(st.integers(0, 25), min_size=1, max_size=6)


def hamilton(sizes: list[int], total: int) -> list[int]:
    """Reference largest-remainder split in exact arithmetic; ties: larger class, then first."""
    n = sum(sizes)
    if n == 0 or total == 0:
        return [0] * len(sizes)
    quotas = [Fraction(total * s, n) for s in sizes]
    shares = [int(q) for q in quotas]
    order = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - shares[i]), -sizes[i], i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


def class_counts(keys: Sequence[Hashable], chosen: list[int]) -> Counter[Hashable]:
    return Counter(keys[i] for i in chosen)


# --- largest_remainder --------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(sizes=sizes_lists, data=st.data(), at_least_one=st.booleans())
def test_largest_remainder_sums_to_total_within_sizes(
    sizes: list[int], data: st.DataObject, at_least_one: bool
) -> None:
    total = data.draw(st.integers(0, sum(sizes)))
    shares = largest_remainder(sizes, total, at_least_one=at_least_one)
    assert len(shares) == len(sizes)
    assert sum(shares) == total
    assert all(0 <= share <= size for share, size in zip(shares, sizes))


@pytest.mark.slow
@SETTINGS
@given(sizes=sizes_lists, data=st.data())
def test_largest_remainder_is_hamilton(sizes: list[int], data: st.DataObject) -> None:
    total = data.draw(st.integers(0, sum(sizes)))
    shares = largest_remainder(sizes, total)
    assert shares == hamilton(sizes, total)
    n = sum(sizes)
    if n:
        assert all(abs(share - Fraction(total * size, n)) < 1 for share, size in zip(shares, sizes))


@pytest.mark.parametrize(
    ("sizes", "total", "want"),
    [
        # remainders 4/7 tie between the classes of size 22, 8 and 36: the largest class wins
        ([22, 8, 36, 4], 5, [2, 0, 3, 0]),
        ([1, 1], 1, [1, 0]),  # full tie: the first class
        ([1, 2, 1], 2, [1, 1, 0]),  # quotas 0.5, 1, 0.5: the half goes to the first small class
    ],
)
def test_largest_remainder_ties_are_exact(sizes: list[int], total: int, want: list[int]) -> None:
    assert largest_remainder(sizes, total) == want == hamilton(sizes, total)


@pytest.mark.slow
@SETTINGS
@given(sizes=sizes_lists, data=st.data())
def test_largest_remainder_at_least_one(sizes: list[int], data: st.DataObject) -> None:
    total = data.draw(st.integers(0, sum(sizes)))
    shares = largest_remainder(sizes, total, at_least_one=True)
    nonempty = [i for i, s in enumerate(sizes) if s > 0]
    if total >= len(nonempty):
        assert all(shares[i] >= 1 for i in nonempty)
    plain = largest_remainder(sizes, total)
    if all(plain[i] >= 1 for i in nonempty) or total < len(nonempty):
        assert shares == plain  # the guarantee costs nothing when it already holds
    assert all(share == 0 for share, size in zip(shares, sizes) if size == 0)


@pytest.mark.parametrize("total", [-1, 11])
def test_largest_remainder_rejects_impossible_totals(total: int) -> None:
    with pytest.raises(ValueError):
        largest_remainder([3, 7], total)


# --- stratified_sample --------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(keys=keys_lists, data=st.data(), seed=seeds)
def test_stratified_sample_properties(keys: list[Hashable], data: st.DataObject, seed: int) -> None:
    n = data.draw(st.integers(0, len(keys)))
    chosen = stratified_sample(keys, n, make_rng(seed))
    assert len(chosen) == n
    assert chosen == sorted(set(chosen))
    assert all(0 <= i < len(keys) for i in chosen)
    assert chosen == stratified_sample(keys, n, make_rng(seed))

    sizes = Counter(keys)
    counts = class_counts(keys, chosen)
    if n >= len(sizes):
        assert set(counts) == set(sizes)
    quotas = {c: Fraction(n * size, len(keys)) for c, size in sizes.items()} if keys else {}
    if n < len(sizes) or all(q >= 1 for q in quotas.values()):
        # The every-class guarantee is not binding: counts are the proportional shares ±1.
        assert all(abs(counts[c] - q) < 1 for c, q in quotas.items())


@pytest.mark.slow
@SETTINGS
@given(keys=keys_lists, extra=st.integers(1, 5), seed=seeds)
def test_stratified_sample_rejects_bad_sizes(keys: list[Hashable], extra: int, seed: int) -> None:
    with pytest.raises(ValueError):
        stratified_sample(keys, len(keys) + extra, make_rng(seed))
    with pytest.raises(ValueError):
        stratified_sample(keys, -extra, make_rng(seed))


def test_stratified_sample_follows_proportions_example() -> None:
    keys = ["a"] * 9 + ["b"] * 3 + ["c"] * 3
    counts = class_counts(keys, stratified_sample(keys, 7, make_rng(0)))
    assert counts == {"a": 4, "b": 2, "c": 1}  # quotas 4.2, 1.4, 1.4; tie → larger/first class


# --- stratified_batches -------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(keys=nonempty_keys, batch_size=st.integers(1, 12), seed=seeds)
def test_stratified_batches_cover_and_balance(keys: list[Hashable], batch_size: int, seed: int) -> None:
    batches = stratified_batches(keys, batch_size, make_rng(seed))
    n = len(keys)
    assert len(batches) == -(-n // batch_size)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(n))  # every position exactly once
    lengths = [len(b) for b in batches]
    assert max(lengths) <= batch_size
    assert max(lengths) - min(lengths) <= 1

    n_batches = len(batches)
    for cls, size in Counter(keys).items():
        per_batch = [sum(keys[i] == cls for i in batch) for batch in batches]
        assert all(abs(count - size / n_batches) < 1 for count in per_batch)
        if size >= n_batches:
            assert all(count >= 1 for count in per_batch)
    assert batches == stratified_batches(keys, batch_size, make_rng(seed))


@pytest.mark.slow
@SETTINGS
@given(keys=nonempty_keys, batch_size=st.integers(1, 12), seed=seeds)
def test_stratified_batches_drop_last(keys: list[Hashable], batch_size: int, seed: int) -> None:
    batches = stratified_batches(keys, batch_size, make_rng(seed), drop_last_batch=True)
    assert len(batches) == len(keys) // batch_size
    assert all(len(b) == batch_size for b in batches)
    flat = [i for batch in batches for i in batch]
    assert len(flat) == len(set(flat))
    assert all(0 <= i < len(keys) for i in flat)
    kept = Counter(keys[i] for i in flat)
    for cls, size in kept.items():
        for batch in batches:
            assert abs(sum(keys[i] == cls for i in batch) - size / len(batches)) < 1


@pytest.mark.slow
@SETTINGS
@given(keys=nonempty_keys, batch_size=st.integers(1, 12), drop_last=st.booleans(), seed=seeds)
def test_stratified_batches_replace_fills_batches(
    keys: list[Hashable], batch_size: int, drop_last: bool, seed: int
) -> None:
    n = len(keys)
    batches = stratified_batches(keys, batch_size, make_rng(seed), drop_last_batch=drop_last, replace=True)
    assert len(batches) == (n // batch_size if drop_last else -(-n // batch_size))
    for batch in batches:
        assert len(batch) == min(batch_size, n)
        assert len(set(batch)) == len(batch)
        assert all(0 <= i < n for i in batch)
    if not drop_last:
        assert {i for batch in batches for i in batch} == set(range(n))


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("replace", [False, True])
def test_stratified_batches_empty_input(drop_last: bool, replace: bool) -> None:
    assert stratified_batches([], 3, make_rng(0), drop_last_batch=drop_last, replace=replace) == []


@pytest.mark.parametrize("batch_size", [0, -1])
@pytest.mark.parametrize("keys", [[], [0, 1, 1]])
def test_stratified_batches_rejects_non_positive_batch_size(batch_size: int, keys: list[int]) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        stratified_batches(keys, batch_size, make_rng(0))


# --- stratified_split, group_by_class, make_rng -------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(keys=keys_lists, data=st.data(), seed=seeds)
def test_stratified_split_is_disjoint_and_covering(
    keys: list[Hashable], data: st.DataObject, seed: int
) -> None:
    n_test = data.draw(st.integers(0, len(keys)))
    train, test = stratified_split(keys, n_test, make_rng(seed))
    assert len(test) == n_test
    assert not set(train) & set(test)
    assert sorted(train + test) == list(range(len(keys)))
    assert (train, test) == stratified_split(keys, n_test, make_rng(seed))


@pytest.mark.slow
@SETTINGS
@given(keys=keys_lists)
def test_group_by_class_partitions_positions(keys: list[Hashable]) -> None:
    groups = group_by_class(keys)
    assert sorted(i for g in groups.values() for i in g) == list(range(len(keys)))
    for cls, members in groups.items():
        assert members == [i for i, k in enumerate(keys) if k == cls]
    assert list(groups) == list(group_by_class(list(reversed(keys))))  # order independent of input order


@pytest.mark.parametrize("bad", [1.5, True, False, "7", np.float64(2.0)])
def test_make_rng_rejects_non_int_seeds(bad: object) -> None:
    with pytest.raises(TypeError, match="random_seed"):
        make_rng(bad)  # type: ignore[arg-type]


def test_make_rng_seeds_and_generators() -> None:
    generator = np.random.default_rng(3)
    assert make_rng(generator) is generator
    assert make_rng(9).integers(1 << 30) == make_rng(9).integers(1 << 30)
    assert make_rng(np.int64(9)).integers(1 << 30) == make_rng(9).integers(1 << 30)
    assert isinstance(make_rng(None), np.random.Generator)


# --- shuffled_batches, split_count ---------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(n=st.integers(0, 40), batch_size=st.integers(1, 12), drop_last=st.booleans(), seed=seeds)
def test_shuffled_batches_partition(n: int, batch_size: int, drop_last: bool, seed: int) -> None:
    batches = shuffled_batches(n, batch_size, make_rng(seed), drop_last)
    flat = [i for batch in batches for i in batch]
    assert len(flat) == len(set(flat)) and all(0 <= i < n for i in flat)
    full, rest = divmod(n, batch_size)
    assert [len(b) for b in batches] == [batch_size] * full + ([rest] if rest and not drop_last else [])
    if not drop_last:
        assert sorted(flat) == list(range(n))
    assert batches == shuffled_batches(n, batch_size, make_rng(seed), drop_last)


def test_shuffled_batches_shuffle_and_reject_bad_sizes() -> None:
    assert len({tuple(shuffled_batches(10, 10, make_rng(seed))[0]) for seed in range(5)}) > 1
    for bad in (0, -2):
        with pytest.raises(ValueError, match="batch_size"):
            shuffled_batches(5, bad, make_rng(0))


@pytest.mark.slow
@SETTINGS
@given(n=st.integers(2, 500), data=st.data())
def test_split_count_ranges(n: int, data: st.DataObject) -> None:
    fraction = data.draw(st.floats(0.0, 1.0, exclude_min=True, exclude_max=True))
    count = split_count(fraction, n)
    assert 1 <= count <= n - 1
    assert count == min(max(round(fraction * n), 1), n - 1)
    k = data.draw(st.integers(1, n - 1))
    assert split_count(k, n) == k == split_count(np.int64(k), n)


@pytest.mark.parametrize(
    ("test_size", "n"),
    [
        (0.0, 10),
        (1.0, 10),
        (-0.1, 10),
        (0, 10),
        (10, 10),
        (-1, 10),
        (True, 10),
        ("0.2", 10),
        (0.5, 1),
        (1, 0),
    ],
)
def test_split_count_rejects(test_size: object, n: int) -> None:
    with pytest.raises(ValueError):
        split_count(test_size, n)  # type: ignore[arg-type]
