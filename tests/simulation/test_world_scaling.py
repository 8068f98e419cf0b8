"""The world builder's indexes give what the scans they replace gave (a scan per key over every
response was quadratic: 833 long samples took 381 s; benchmarks/perf/simulated_world measures it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptevolver.simulation import _phrases as ph
from promptevolver.simulation._criteria import _holds_any, _maximal, _occurrences, _runs

words = st.sampled_from(["a", "b", "c", "d"])
texts = st.dictionaries(
    st.text("xyz", min_size=1, max_size=3), st.lists(words, max_size=30).map(tuple), max_size=8
)
keys = st.lists(st.lists(words, min_size=1, max_size=4).map(tuple), max_size=10, unique=True)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(texts=texts, keys=keys)
def test_occurrences_are_the_scan_of_every_text(texts, keys):
    found = _occurrences(keys, texts)
    assert found == {k: [name for name, seq in texts.items() if ph.contains(seq, k)] for k in keys}


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(key=st.lists(words, min_size=1, max_size=6).map(tuple), runs=keys)
def test_holds_any_is_the_scan_of_every_run(key, runs):
    lengths = sorted({len(r) for r in runs})
    assert _holds_any(key, set(runs), lengths) == any(ph.contains(key, r) for r in runs)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from("pqrstu"), min_size=1, max_size=4, unique=True).map(tuple),
        max_size=12,
        unique=True,
    )
)
def test_maximal_groups_are_those_no_other_contains(groups):
    sets = {g: frozenset(g) for g in groups}
    expected = [g for g in groups if not any(sets[g] < other for other in sets.values())]
    assert _maximal(groups) == expected


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    sequence=st.lists(words, max_size=30).map(tuple), key=st.lists(words, min_size=1, max_size=4).map(tuple)
)
def test_runs_hold_a_key_exactly_when_the_scan_finds_it(sequence, key):
    assert (key in _runs(sequence, 4)) == ph.contains(sequence, key)
