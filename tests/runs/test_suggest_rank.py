"""The ranking behind ``suggest``: signals, the diverse pick and the words of ``why``."""

from __future__ import annotations

import numpy as np
import pytest

from promptevolver.optimizers.strategies._selection import front_rows
from promptevolver.runs._suggest_rank import (
    Signals,
    TraceVotes,
    informativeness,
    pick,
    signals_of,
    similarities,
    why,
)

LABELS = ["the chosen (candidate 7)", "candidate 4 (finalist)", "the seed"]


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ((1.0, 1.0, 1.0), 0.0),
        ((1.0, 0.0, 0.0), 0.5 * 0.918296 + 0.5),
        ((0.0, 0.0, 1.0), 0.5 * 0.918296 + 0.25),
    ],
)
def test_disagreement_is_vote_entropy_and_share_against_the_chosen(verdicts, expected):
    assert signals_of(TraceVotes(verdicts), 0.0, binary=True).disagreement == pytest.approx(
        expected, abs=1e-6
    )


def test_unmeasured_signals_are_none_never_zero():
    s = signals_of(TraceVotes((None, 1.0, 0.0)), 0.4, binary=True)
    assert s.disagreement is None and s.instability is None and s.novelty == 0.4
    assert signals_of(TraceVotes((1.0, None)), 0.0, binary=True).disagreement is None


def test_instability_is_the_share_of_other_answers_that_differ():
    s = signals_of(TraceVotes((1.0, 1.0), others=(0.0, 1.0, 0.0, 0.0)), 0.0, binary=True)
    assert s.instability == pytest.approx(0.75)


def test_numeric_scores_disagree_by_distance_over_the_scale():
    s = signals_of(TraceVotes((5.0, 1.0), others=(4.0,)), 0.0, binary=False, scale=4.0)
    assert s.instability == pytest.approx(0.25)
    assert s.disagreement is not None and 0.5 < s.disagreement <= 1.0


def test_informativeness_weighs_the_signals_and_stays_in_unit_range():
    assert informativeness(Signals(None, None, 0.0)) == 0.0
    assert informativeness(Signals(1.0, 1.0, 1.0)) == pytest.approx(1.0)
    assert informativeness(Signals(0.0, 1.0, 0.0)) > informativeness(Signals(1.0, 0.0, 0.0)) > 0


def test_the_pick_skips_a_near_duplicate_of_a_trace_already_picked():
    values = [0.9, 0.89, 0.7]
    within = np.array([[1.0, 0.99, 0.0], [0.99, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert [i for i, _ in pick(values, within, 2, diversity=0.3)] == [0, 2]
    assert [i for i, _ in pick(values, within, 2, diversity=0.0)] == [0, 1]


def test_pick_scores_do_not_increase_and_n_caps_the_list():
    rng = np.random.default_rng(0)
    values = rng.random(30)
    raw = rng.random((30, 30))
    within = (raw + raw.T) / 2
    np.fill_diagonal(within, 1.0)
    picked = pick(values, within, 10, diversity=0.4)
    scores = [s for _, s in picked]
    assert len(picked) == 10 and scores == sorted(scores, reverse=True)
    assert len(pick(values[:3], within[:3, :3], 10, diversity=0.4)) == 3


def test_similarities_find_the_duplicate_and_survive_empty_text():
    within, against = similarities(["the cat sat on the mat", "stock prices fell"], ["a cat sat on a mat"])
    assert within.shape == (2, 2) and against.shape == (2, 1)
    assert against[0, 0] > 0.5 > against[1, 0]
    within, against = similarities(["", "the"], [])
    assert within.shape == (2, 2) and against.shape == (2, 0)


def test_why_names_the_two_best_when_they_disagree():
    votes = TraceVotes((0.0, 1.0, 1.0))
    text = why(votes, signals_of(votes, 0.8, binary=True), LABELS, nearest=(3, 0.2))
    assert text.startswith(
        "the two best instructions disagree: the chosen (candidate 7) says 0, candidate 4 (finalist) says 1"
    )
    assert "the committee splits 2-1" in text and "closest annotated sample: 3 (TF-IDF cosine 0.20)" in text


def test_why_says_unstable_agreement_and_unjudged():
    votes = TraceVotes((1.0, 1.0, 1.0), others=(0.0, 1.0))
    assert "the chosen judge is unstable: it says 1, asked again 0, 1" in why(
        votes, signals_of(votes, 0.0, binary=True), LABELS, nearest=None
    )
    calm = TraceVotes((1.0, 1.0, 1.0))
    assert why(calm, signals_of(calm, 0.0, binary=True), LABELS, nearest=None, duplicate=5) == (
        "every instruction asked agrees (1); already annotated (sample 5)"
    )
    unjudged = TraceVotes((None, None, None))
    assert why(unjudged, signals_of(unjudged, 0.9, binary=True), LABELS, nearest=None).startswith(
        "not judged"
    )


def test_front_rows_keeps_specialists_and_drops_dominated_and_twins():
    nan = np.nan
    matrix = np.array(
        [
            [1.0, 1.0, 0.0, nan],  # 0: best on samples 0, 1
            [0.0, 0.0, 1.0, 1.0],  # 1: the specialist of samples 2, 3
            [1.0, 0.0, 0.0, 0.0],  # 2: dominated by 0
            [1.0, 1.0, 0.0, nan],  # 3: twin of 0
        ]
    )
    assert front_rows(matrix) == [0, 1]
    assert front_rows(np.ones((3, 2))) == [0, 1, 2]


def test_the_error_model_learns_which_votes_go_with_mistakes():
    from promptevolver.runs._suggest_rank import ErrorModel, differs, features_of

    outvoted = features_of(TraceVotes((1.0, 0.0), others=(0.0, 0.0)), binary=True)
    split = features_of(TraceVotes((1.0, 1.0), others=(0.0, 1.0)), binary=True)
    runner = features_of(TraceVotes((1.0, 0.0), others=(1.0, 1.0)), binary=True)
    steady = features_of(TraceVotes((1.0, 1.0), others=(1.0, 1.0)), binary=True)
    assert [f["votes"] for f in (outvoted, split, runner, steady)] == [
        "outvoted",
        "re-asks split",
        "runner-up only",
        "agreed",
    ]
    assert features_of(TraceVotes((0.0,)), binary=True) == {"verdict": "0", "votes": None}
    rows = [(runner, True)] * 6 + [(runner, False)] * 2 + [(steady, False)] * 40 + [(steady, True)] * 2
    model = ErrorModel.fit(rows)
    assert (model.wrong, model.right) == (8, 42)
    p_runner, p_steady = model.probability(runner), model.probability(steady)
    assert p_runner is not None and p_steady is not None and 0 < p_steady < 0.2 < 0.5 < p_runner < 1
    assert (
        model.evidence(runner)
        == "only the runner-up disagreed (annotated samples like it: wrong 6 times in 8)"
    )
    assert model.evidence(steady) is None
    assert model.probability(features_of(TraceVotes((None, 1.0)), binary=True)) is None
    alone = ErrorModel.fit([], prior=0.1)
    assert alone.probability(steady) == pytest.approx(0.1)
    assert alone.probability(outvoted) == pytest.approx(0.9) and alone.evidence(outvoted) == (
        "its re-asks and the runner-up outvoted it (no annotated sample like it)"
    )
    with pytest.raises(ValueError, match="prior must be in"):
        ErrorModel.fit([], prior=0.0)
    assert differs(3.0, 4.0, binary=False, scale=4.0) and not differs(0.50, 0.52, binary=False, scale=1.0)


def test_informativeness_with_an_estimated_error_is_mostly_that_error():
    assert informativeness(Signals(1.0, 1.0, 0.0, error=0.1)) == pytest.approx(0.085)
    assert informativeness(Signals(0.0, 0.0, 0.0, error=0.9)) > informativeness(
        Signals(1.0, 1.0, 1.0, error=0.1)
    )


def test_doubtful_votes_start_from_a_coin_flip_or_worse_until_the_calibration_says_more():
    from promptevolver.runs._suggest_rank import ErrorModel, features_of

    steady = features_of(TraceVotes((1.0, 1.0), others=(1.0, 1.0)), binary=True)
    split = features_of(TraceVotes((1.0, 1.0), others=(0.0, 1.0)), binary=True)
    outvoted = features_of(TraceVotes((1.0, 0.0), others=(0.0, 1.0)), binary=True)
    model = ErrorModel.fit([(steady, False)] * 45 + [(steady, True)] * 5)  # never doubtful there
    p = [model.probability(f) for f in (steady, split, outvoted)]
    assert p[0] is not None and p[0] < 0.15 < p[1] < p[2]  # type: ignore[operator]
    never = features_of(TraceVotes((1.0, 0.0), others=(1.0, 1.0)), binary=True)  # the runner-up alone
    assert model.probability(never) == pytest.approx(p[0], abs=0.02)
    seen = ErrorModel.fit([(steady, False)] * 45 + [(outvoted, False)] * 40)  # outvoted, and right
    assert seen.probability(outvoted) < 0.1  # type: ignore[operator]
