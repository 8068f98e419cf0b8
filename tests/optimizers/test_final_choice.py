"""The final choice: an extension keeps its earlier choice, and a kept seed is explained rightly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.evaluation._evaluator import Score
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.strategies._final_choice import PairedChoice, held_out
from promptevolver.simulation.synthetic import SyntheticSpec, generate

from ..helpers import make_dataset, rule_llm


def _candidate(cid: int, correct: list[int]) -> Candidate:
    y = np.ones(len(correct))
    pred = np.array(correct, dtype=float)
    score = Score(float(np.mean(correct)), pred.copy(), 0, y, pred)
    return Candidate(
        cid,
        {"p": f"instruction {cid}"},
        0 if cid == 0 else 1,
        "seed" if cid == 0 else "mutation",
        train=score,
        validation=score,
    )


N = 40
SEED = _candidate(0, [1] * 20 + [0] * 20)  # 0.50
INCUMBENT = _candidate(1, [1] * 32 + [0] * 8)  # 0.80, clearly above the seed
WORSE = _candidate(2, [1] * 28 + [0] * 12)  # 0.70, above the seed, below it
BETTER = _candidate(3, [1] * 40)  # 1.00, clearly above both
NOISY = _candidate(4, [1] * 20 + [0] * 19 + [1])  # one sample above the seed


def _choose(finalists, incumbent=None):
    choice = PairedChoice(finalists=3, confidence=0.7)
    compare = held_out(SEED, np.ones(N))
    return choice.choose([SEED, *finalists], compare, np.random.default_rng(0), incumbent=incumbent), choice


@pytest.mark.parametrize("rivals", [[WORSE], [NOISY], [WORSE, NOISY], []])
def test_an_extension_never_returns_a_candidate_worse_on_validation_than_its_earlier_choice(rivals):
    chosen, choice = _choose([*rivals, INCUMBENT], incumbent=INCUMBENT)
    assert chosen is INCUMBENT
    assert "earlier choice" in choice.report["why"] or choice.report["chosen"] == INCUMBENT.id


def test_a_finalist_that_beats_the_earlier_choice_replaces_it():
    chosen, choice = _choose([WORSE, BETTER, INCUMBENT], incumbent=INCUMBENT)
    assert chosen is BETTER
    assert "earlier choice, candidate 1" in choice.report["why"]


def test_without_an_earlier_choice_the_best_finalist_is_chosen_against_the_seed():
    chosen, _ = _choose([WORSE, INCUMBENT])
    assert chosen is INCUMBENT
    alone, choice = _choose([])
    assert alone is SEED and choice.report["why"].startswith("only the seed reached the final choice")


def test_the_incumbent_is_a_finalist_even_when_it_left_the_population():
    choice = PairedChoice(finalists=1)
    picked = choice.candidates(SEED, [WORSE], BinaryMetricLoss(), INCUMBENT)
    assert [c.id for c in picked] == [0, 2, 1]


def _optimizer(dataset):
    metric = AspectCritic(name="answer_correctness", definition="Is the response correct?")
    return GeneticOptimizer(metric=metric, llm=SimulatedJudgeLLM(dataset=dataset, random_seed=3))


# (samples, seed): (200, 0) and (200, 3) fell on validation before the earlier choice stayed a
# finalist (0.833 -> 0.800, 0.917 -> 0.900), and so did (120, 4) (0.889 -> 0.861), whose extension
# since the initial mutations' batches are disjoint stops at once, every correction shown
# ("exhausted"): (120, 6) extends instead (3 -> 6 generations, 0.889 -> 0.917); (120, 0) rises.
@pytest.mark.parametrize(("n_samples", "data_seed"), [(120, 6), (200, 0), (200, 3), (120, 0)])
def test_extending_a_finished_run_keeps_its_validation_score_or_betters_it(tmp_path, n_samples, data_seed):
    """optimize, then resume with more generations: the result is never worse on validation
    (configs/synthetic_200.yaml went 0.833 -> 0.800)."""
    dataset = generate(SyntheticSpec(n_samples=n_samples, random_seed=data_seed))
    config = {
        "random_seed": data_seed,
        "strategy": "genetic",
        "population_size": 4,
        "generations": 2,
        "patience": 2,
    }
    first = _optimizer(dataset).optimize(dataset, BinaryMetricLoss(), config, run_dir=tmp_path)
    more = {**config, "generations": 6, "patience": 6}
    extended = _optimizer(dataset).optimize(dataset, BinaryMetricLoss(), more, run_dir=tmp_path, resume=True)
    assert len(extended.history) > len(first.history)
    assert extended.scores["best"]["validation"] >= first.scores["best"]["validation"]
    assert first.best_id in [f["id"] for f in extended.final_choice["finalists"]] or first.best_id == 0


def test_a_seed_kept_because_every_offspring_was_screened_out_says_so():
    """All offspring screened out (the scenario of test_search_control's screening test): the
    reason names screening, not 'enough measured samples'."""
    ds = make_dataset(40, wrong=12)
    labels = [int(y) for y in ds.labels()]
    originals = [int(s.prompts["single_turn_aspect_critic_prompt"].prompt_output["verdict"]) for s in ds]

    def judge(instruction: str, i: int) -> int:
        return 1 - labels[i] if "BAD" in instruction else originals[i]

    def writer(request: LLMRequest) -> str:
        if request.operation == "feedback":
            return json.dumps({"feedback": ["x"]})
        return json.dumps({"instruction": f"BAD {request.operation} {request.sample_index}"})

    metric = AspectCritic(name="answer_correctness", definition="Is the response correct?")
    result = GeneticOptimizer(metric=metric, llm=rule_llm(ds, judge, writer)).optimize(
        dataset=ds,
        loss=BinaryMetricLoss(),
        config={"random_seed": 1, "population_size": 4, "generations": 2, "strategy": "genetic"},
    )
    why = result.final_choice["why"]
    made = len(result.lineage) - 1
    assert result.best_id == 0 and made > 0
    assert why == (
        f"only the seed reached the final choice: each of the {made} offspring was screened out on its "
        "minibatch (none did better than its parent there)"
    )
    assert "enough measured samples" not in why


@pytest.mark.parametrize(
    ("stage_ops", "offspring", "says", "never"),
    [
        (["examples"], [], ["teaching examples", "the search made no offspring"], ["failed evaluations"]),
        (
            ["distill", "cross_fit"],
            [1.0],
            ["distilled rungs", "cross-fit rung", "1 did not survive"],
            ["failed"],
        ),
        ([], [1.0, float("nan")], ["1 had too few measured samples", "1 did not survive"], ["pipeline"]),
    ],
)
def test_why_only_the_seed_is_left_names_what_became_of_each_candidate(stage_ops, offspring, says, never):
    """The pipeline's candidates (rungs, examples, the cross-fit rung) are told apart from the
    search's offspring, and an offspring judged on every sample is never blamed on failures."""
    from promptevolver.optimizers._candidates import Candidate
    from promptevolver.optimizers._phases import _why_alone
    from promptevolver.optimizers._state import SearchState

    from ..helpers import score_of

    state = SearchState(rng=np.random.default_rng(0), best_so_far=0.0)
    state.add(Candidate(0, {"p": "seed"}, 0, "seed"))
    for op in stage_ops:
        state.add(Candidate(len(state.candidates), {"p": f"{op} {len(state.candidates)}"}, 0, op))
    for last in offspring:
        c = Candidate(len(state.candidates), {"p": f"m {len(state.candidates)}"}, 1, "mutation")
        c.train = score_of([1.0, 0.0, last])
        state.add(c)
    why = _why_alone(state)
    assert all(s in why for s in says), why
    assert not any(s in why for s in never), why


# --- the one decision rule ------------------------------------------------------------------------


def _paired(delta, p, coverage=1.0):
    from promptevolver.optimizers.strategies._final_choice import Paired

    return Paired(delta, p, coverage)


def test_the_rule_answers_each_question_from_delta_p_and_coverage():
    from promptevolver.optimizers.strategies._final_choice import PairedRule

    rule = PairedRule(confidence=0.7, min_coverage=0.9)
    assert rule.beats(_paired(0.1, 0.7)) and not rule.beats(_paired(0.1, 0.69))
    assert not rule.beats(_paired(0.0, 0.9)) and not rule.beats(_paired(None, 0.9))
    assert rule.likely_better(_paired(0.0, 0.7)) and not rule.likely_better(_paired(None, 0.9))
    # the reference better with probability 0.7 (p 0.3): shown worse; p 0.31: not shown worse
    assert not rule.not_shown_worse(_paired(-0.1, 0.3)) and rule.not_shown_worse(_paired(-0.1, 0.31))
    # a stricter bar (small data's refit): the reference better with probability 0.85 is not
    # shown worse at 0.9, is at 0.7; a bar below the rule's own leaves it
    strict = rule.at_confidence(0.9)
    assert strict.confidence == 0.9 and strict.min_coverage == 0.9
    assert strict.not_shown_worse(_paired(-0.1, 0.15)) and not rule.not_shown_worse(_paired(-0.1, 0.15))
    assert not strict.not_shown_worse(_paired(-0.1, 0.1))
    assert rule.at_confidence(0.6) == rule
    assert rule.eligible(_paired(0.0, 0.5, 0.9)) and not rule.eligible(_paired(None, 0.0))
    with pytest.raises(ValueError, match="confidence"):
        PairedRule(confidence=1.0)


def test_the_final_choice_applies_the_rule_and_keeps_each_comparison():
    choice = PairedChoice(finalists=2, confidence=0.7)
    weights = np.ones(N)
    best = choice.choose([SEED, NOISY, BETTER], held_out(SEED, weights), np.random.default_rng(0))
    assert best is BETTER and choice.rule.beats(choice.compared[BETTER.id])
    assert choice.compared[BETTER.id].delta > choice.compared[NOISY.id].delta  # the largest Δ wins
    assert [r["delta"] for r in choice.report["finalists"]] == [choice.compared[c].delta for c in (4, 3)]


def test_the_regime_is_one_type_compared_nowhere_as_a_string():
    """The held-out / out-of-bag / cross-validated switch is :class:`Regime`: no module compares
    its values as strings."""
    import re

    from ..conftest import ROOT

    value = r"""["'](held-out|out-of-bag|cross-validated)["']"""
    compared = re.compile(rf"""(==|!=|\bin)\s*\(?[^#]*{value}|{value}\s*(==|!=|\bin\b)""")
    found = []
    for path in sorted((ROOT / "src" / "promptevolver").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if compared.search(line):
                found.append(f"{path.name}:{n}: {line.strip()}")
    assert [f for f in found if not f.startswith("_split.py")] == []
