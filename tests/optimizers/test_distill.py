"""The distill-first pipeline: lessons ranked by evidence, context-window packing, the ladder,
verification with racing, and when the search runs (optimizers/_distill.py, _phases.py,
strategies/_racing.py)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.errors import ContextLengthExceededError
from promptevolver.judge import FEEDBACK_TO_APPLY
from promptevolver.llm._base import LLMRequest
from promptevolver.llm.context import DEFAULT_CONTEXT_TOKENS, context_tokens_for, context_window
from promptevolver.optimizers._distill import (
    BARREN_ROUNDS,
    Ladder,
    LessonPool,
    SampleFacts,
    applied_lessons,
    sample_facts,
)
from promptevolver.optimizers.operators._base import Child
from promptevolver.optimizers.strategies._racing import Race
from promptevolver.simulation import SimulatedJudgeLLM, SyntheticSpec, generate

from ..helpers import PROMPT, make_dataset, rule_llm, score_of

DEFINITION = "Is the response correct compared with the reference?"


@pytest.fixture(scope="module")
def dataset():
    return generate(SyntheticSpec(n_samples=160, random_seed=4))


def _optimize(dataset, llm, **config):
    metric = AspectCritic(name=dataset.name, definition=DEFINITION)
    opt = GeneticOptimizer(metric=metric, llm=llm)
    return opt.optimize(dataset, BinaryMetricLoss(), {"random_seed": 7, **config})


# --- lessons: merging, evidence, sample facts -----------------------------------------------------


def test_lessons_worded_alike_merge_and_add_their_evidence():
    pool = LessonPool(SampleFacts(frozenset()))
    a = pool.add("Check every number against the reference.", [3, 4], 1, None)
    b = pool.add("check every number against the reference", [4, 9], 1, None)
    c = pool.add("Informal wording is acceptable.", [1], 1, None)
    assert a is b and a is not c
    assert a.explains == {3, 4, 9} and a.calls == 2 and a.evidence == 3
    assert [x.text for x in pool.ranked([c, a])][0] == a.text  # best evidenced first


def test_lessons_sharing_a_template_but_not_a_criterion_stay_apart():
    pool = LessonPool(SampleFacts(frozenset()))
    template = "Tell the judge explicitly to check for {}; the expected verdicts hinge on it."
    first = pool.add(template.format("wrong dates"), [], 1, None)
    second = pool.add(template.format("casual wording"), [], 1, None)
    assert first is not second and len(pool.lessons) == 2


def test_a_lesson_only_one_correction_carries_goes_last():
    pool = LessonPool(SampleFacts(frozenset()))
    single = pool.add("A", [1], 1, None)
    double = pool.add("Bee rule here", [2, 3], 2, None)
    assert pool.ranked([single, double]) == [double, single]


def test_sample_facts_are_names_and_numbers_only_one_sample_holds():
    texts = [
        ["The orchid Vinwynnim was described in 1667.", "the answer is informal"],
        ["The crater Zorqualum is informal about its 12 facts."],
        ["Another crater, 12 of them: the answer is informal too."],
    ]
    facts = sample_facts(texts)
    assert {"vinwynnim", "1667", "zorqualum"} <= facts.words
    assert not {"informal", "crater", "12"} & facts.words
    pool = LessonPool(facts)
    assert pool.add("Special case of Vinwynnim.", [], 1, None).sample_fact
    one, two = '"is informal about its"', '"the answer is informal"'
    assert pool.add(f"Give verdict 0 when the response says {one}.", [], 1, None).sample_fact
    assert not pool.add(f"Give verdict 1 when the response says {two}.", [], 1, None).sample_fact
    assert not pool.add("An informal answer is acceptable.", [], 1, None).sample_fact


# --- context windows ----------------------------------------------------------------------------


def test_context_window_comes_from_the_config_the_table_or_the_default():
    assert context_tokens_for("gpt-4o-mini") == 128_000
    assert context_tokens_for("gpt-4o-mini", 9_000) == 9_000
    assert context_tokens_for("some-local-model") == DEFAULT_CONTEXT_TOKENS

    class Inner:
        context_tokens = 4096

    class Wrapper:
        inner = Inner()

    assert context_window(Wrapper()) == 4096
    assert context_window(object()) == DEFAULT_CONTEXT_TOKENS


def test_corrections_are_packed_to_fit_the_window_and_split_when_refused(dataset):
    """A window too small for every correction at once: the lessons prompts are packed to fit,
    any the model still refuses is split and asked again, and no refusal counts as a failure."""
    llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2, context_tokens=2_500)
    sent: list[int] = []
    refused: list[int] = []
    inner_send = llm._send

    async def recording(request: LLMRequest):
        tokens = sum(len(m.content) for m in request.messages) // 4
        try:
            out = await inner_send(request)
        except ContextLengthExceededError:
            refused.append(tokens)
            raise
        if request.operation == "feedback":
            sent.append(tokens)
        return out

    llm._send = recording  # type: ignore[method-assign]
    result = _optimize(dataset, llm, strategy="distill", distill_max_calls=8)
    distill = result.stages["distill"]
    assert len(sent) > distill["meta_calls"] // 4  # several lessons calls a round
    assert max(sent) <= 2_500
    assert result.usage["failures"] == 0
    assert distill["context_splits"] + result.stages["cross_fit"].get("context_splits", 0) == len(refused)
    assert result.produced_by in ("distill", "cross_fit")


def test_a_refused_prompt_is_split_through_real_http(dataset):
    """judgeworld-like: an OpenAI-compatible server answering 400 context_length_exceeded."""
    from promptevolver.llm.openai import OpenAIClient
    from promptevolver.testing._openai_server import LocalOpenAIServer
    from promptevolver.testing._simulated_server import simulated_handler

    sim = SimulatedJudgeLLM(dataset=dataset, random_seed=2, noise=0.0)
    with LocalOpenAIServer(simulated_handler(sim), max_context_tokens=3_000) as server:
        client = OpenAIClient(model="local", base_url=server.base_url, api_key="k", max_attempts=2)
        client.context_tokens = 60_000  # the client believes in a larger window than the server has
        result = _optimize(dataset, client, strategy="distill", distill_rounds=2)
    assert result.stages["distill"]["context_splits"] > 0
    assert result.usage["failures"] == 0
    assert result.stages["distill"]["meta_calls"] > 0


# --- the pipeline ----------------------------------------------------------------------------------


def test_distillation_makes_no_judge_call_and_the_ladder_is_nested(dataset):
    llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2)
    result = _optimize(dataset, llm, strategy="distill", distill_lessons=2)  # rounds of 2: a ladder
    distill = result.stages["distill"]
    assert distill["judge_calls"] == 0 and distill["meta_calls"] > 0
    rungs = [c for c in result.lineage if c["operator"] == "distill"]
    assert len(rungs) >= 2
    assert rungs[0]["parents"] == [0]
    for lower, higher in zip(rungs, rungs[1:]):
        assert higher["parents"] == [lower["id"]]
        (low,), (high,) = lower["instructions"].values(), higher["instructions"].values()
        assert all(line in high for line in low.splitlines() if line.startswith("- "))
    assert result.stages["verify"]["judge_calls"] > 0
    assert result.stages["search"]["ran"] is False
    assert result.history == []
    verified = result.stages["verify"]["produced"][0]
    validation = next(c for c in result.lineage if c["id"] == verified)["validation"]
    assert validation > result.scores["seed"]["validation"]
    applied = [x for x in result.lessons if x["applied_round"] is not None]
    assert applied and not any(x["sample_fact"] for x in applied)


def test_twin_runs_are_identical_and_another_seed_differs(dataset):
    def run(seed):
        llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2)
        return _optimize(dataset, llm, random_seed=seed).to_dict()

    a, b, c = run(1), run(1), run(2)
    for r in (a, b, c):
        r.pop("duration_s")
        r.pop("stage_seconds")
    assert a == b
    assert a["lineage"] != c["lineage"] or a["racing"] != c["racing"]


def test_the_search_runs_when_no_rung_beats_the_seed():
    """Distilled rewrites that change nothing (the stage's own slots, below 1,000,000): no rung
    beats the seed, so the search runs, and its rewrites (which fix the judge) win."""
    ds = make_dataset(60, 20)
    labels = [int(y) for y in ds.labels()]
    originals = [int(s.prompts[PROMPT].prompt_output["verdict"]) for s in ds]
    distilled = {"calls": 0}

    def judge(instruction: str, i: int) -> int:
        return labels[i] if "mutated" in instruction else originals[i]

    def writer(request: LLMRequest) -> str:
        distilling = request.sample_index < 1_000_000
        distilled["calls"] += distilling
        if request.operation == "feedback":
            item = {"lesson": "be careful", "explains": [1]} if distilling else "be stricter"
            return json.dumps({"feedback": [item]})
        word = "careful" if distilling else "mutated"
        return json.dumps({"instruction": f"{word} {request.sample_index}"})

    result = _optimize(ds, rule_llm(ds, judge, writer), population_size=3, generations=2, refit_below=0)
    assert distilled["calls"] > 0
    assert result.stages["search"]["ran"] is True
    assert "no rung" in result.stages["search"]["why"]
    assert result.produced_by == "search"
    assert result.stages["search"]["judge_calls"] > 0


def test_strategy_genetic_runs_no_stage():
    ds = make_dataset(60, 20)
    labels = [int(y) for y in ds.labels()]
    llm = rule_llm(ds, lambda instruction, i: labels[i])
    result = _optimize(ds, llm, strategy="genetic", generations=1)
    assert result.stages == {} and result.lessons == []
    assert result.strategy == "genetic"


def test_resume_after_the_pipeline_repeats_no_call(dataset, tmp_path):
    llm = SimulatedJudgeLLM(dataset=dataset, random_seed=2)
    first = _optimize_dir(dataset, llm, tmp_path, resume=False)
    calls = llm.usage.total_calls
    again = _optimize_dir(dataset, llm, tmp_path, resume=True)
    assert llm.usage.total_calls == calls
    assert again.best_instructions == first.best_instructions


def _optimize_dir(dataset, llm, run_dir, *, resume):
    metric = AspectCritic(name=dataset.name, definition=DEFINITION)
    opt = GeneticOptimizer(metric=metric, llm=llm)
    return opt.optimize(dataset, BinaryMetricLoss(), {"random_seed": 7}, run_dir=run_dir, resume=resume)


# --- racing ----------------------------------------------------------------------------------------


class _Cand:
    def __init__(self, id_, seed=False):
        self.id, self.is_seed, self.length = id_, seed, 10


def test_racing_drops_a_clearly_worse_candidate_and_never_the_seed():
    n = 64
    rng = np.random.default_rng(0)
    truth = {0: rng.random(n) < 0.5, 1: np.ones(n, bool), 2: np.zeros(n, bool), 3: rng.random(n) < 0.95}
    cands = [_Cand(0, seed=True), _Cand(1), _Cand(2), _Cand(3)]
    judged: dict[int, set[int]] = {c.id: set() for c in cands}

    async def judge(cs, positions):
        out = []
        for c in cs:
            judged[c.id].update(positions)
            out.append(score_of([float(truth[c.id][p]) for p in positions]))
        return out

    race = Race(looks=4, alpha=0.1)
    alive = asyncio.run(race.run(cands, list(range(n)), np.ones(n), judge, np.random.default_rng(1)))
    ids = [c.id for c in alive]
    assert 0 in ids and 1 in ids and 2 not in ids
    assert len(judged[2]) < n
    unjudged = sum(n - len(judged[c]) for c in (2, 3) if c not in ids)
    assert race.report["saved_judge_calls"] == unjudged


def test_one_look_is_no_racing():
    n = 20
    cands = [_Cand(0, seed=True), _Cand(1)]

    async def judge(cs, positions):
        return [score_of([0.0] * len(positions)) for _ in cs]

    race = Race(looks=1)
    alive = asyncio.run(race.run(cands, list(range(n)), np.ones(n), judge, np.random.default_rng(1)))
    assert len(alive) == 2 and race.report["saved_judge_calls"] == 0


@pytest.mark.parametrize("kwargs", [{"looks": 0}, {"alpha": 0.5}, {"alpha": -0.1}])
def test_race_refuses_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        Race(**kwargs)


def test_the_search_never_applies_a_sample_fact():
    """Under the pipeline a mutation's feedback item quoting a name only one sample holds is
    dropped before the rewrite (genetic keeps its old behaviour)."""
    ds = make_dataset(60, 20)
    labels = [int(y) for y in ds.labels()]
    originals = [int(s.prompts[PROMPT].prompt_output["verdict"]) for s in ds]
    rewrites: list[str] = []

    def judge(instruction: str, i: int) -> int:
        return labels[i] if "mutated" in instruction else originals[i]

    def writer(request: LLMRequest) -> str:
        distilling = request.sample_index < 1_000_000
        if request.operation == "feedback":
            items = ["Check the Zyxwvut fact", "be stricter"] if not distilling else ["careful"]
            return json.dumps({"feedback": items})
        if not distilling:
            rewrites.append(request.messages[-1].content)
        word = "careful" if distilling else "mutated"
        return json.dumps({"instruction": f"{word} {request.sample_index}"})

    samples = [s.model_dump() for s in ds]
    samples[3]["metric_input"]["response"] = "answer 3 about Zyxwvut"
    ds = type(ds).model_validate({"name": ds.name, "samples": samples})
    _optimize(ds, rule_llm(ds, judge, writer), population_size=3, generations=1, refit_below=0)
    assert rewrites and not any("Zyxwvut" in text for text in rewrites)
    assert all("be stricter" in text for text in rewrites)


def test_racing_stops_a_candidate_with_no_gain_over_its_reference():
    """futility: a candidate that must beat a reference (the examples stage's verified rung) and
    shows no gain on the first look stops; one ahead of it goes on."""
    n = 40
    base = np.array([1.0] * 20 + [0.0] * 20)
    truth = {0: base, 1: base.copy(), 2: np.ones(n)}
    cands = [_Cand(0, seed=True), _Cand(1), _Cand(2)]

    async def judge(cs, positions):
        return [score_of([truth[c.id][p] for p in positions]) for c in cs]

    race = Race(looks=4, futility=0)
    alive = asyncio.run(race.run(cands, list(range(n)), np.ones(n), judge, np.random.default_rng(3)))
    assert [c.id for c in alive] == [0, 2]
    assert race.report["dropped"][0]["id"] == 1 and race.report["dropped"][0]["look"] == 1


@pytest.mark.parametrize("refusals", [1, 2])
def test_one_rejected_rewrite_is_a_barren_round_and_two_in_a_row_stop_the_ladder(refusals):
    """A prompt engineer that returns the instruction unchanged (lessons it could not phrase)
    makes that round barren; the next round offers other lessons. Two rejections in a row stop
    the ladder (``rejected``)."""
    ds = make_dataset(60, 20)
    labels = [int(y) for y in ds.labels()]
    metric = AspectCritic(name=ds.name, definition=DEFINITION)
    (seed,) = metric.get_instructions().values()
    rewrites = []

    def writer(request: LLMRequest) -> str:
        if request.operation == "feedback":
            item = {"lesson": f"lesson {request.sample_index}", "explains": [1]}
            return json.dumps({"feedback": [item]})
        rewrites.append(request.sample_index)
        unchanged = len(rewrites) <= refusals
        return json.dumps({"instruction": seed if unchanged else f"careful {request.sample_index}"})

    def judge(instruction: str, i: int) -> int:
        return labels[i] if "careful" in instruction else 1 - labels[i]

    llm = rule_llm(ds, judge, writer)
    result = GeneticOptimizer(metric=metric, llm=llm).optimize(
        ds,
        BinaryMetricLoss(),
        {"random_seed": 7, "strategy": "distill", "cross_fit": False, "refit_below": 0},
    )
    rungs = [c for c in result.lineage if c["operator"] == "distill"]
    stop = result.stages["distill"]["stop"]["all"]
    assert result.operator_stats["rejected"].get("distill: unchanged instruction") == refusals
    if refusals == 1:
        assert rungs and stop != "rejected" and len(rewrites) >= 2
        assert result.best_id == rungs[-1]["id"] or result.best_id in {c["id"] for c in rungs}
    else:
        assert not rungs and stop == "rejected" and len(rewrites) == 2


@pytest.mark.parametrize("refusals", [1, BARREN_ROUNDS])
def test_a_ladder_without_a_rung_gives_a_rejected_lesson_its_second_try(refusals):
    """A ladder allowed one rejection (a fold's on small data) ends at its first once it has a
    rung; before its first rung a rejection is a barren round and the lessons get a second try
    (a fold that learns nothing leaves the recipe unmeasured)."""
    ladder = Ladder(0, refusals=refusals)
    ladder.rungs.append(Child(None, None, ["a lesson"], rejected="unchanged instruction"))  # type: ignore[arg-type]
    ladder.refused = 1
    assert ladder.refusals_left() == BARREN_ROUNDS - 1
    ladder.rungs.insert(0, Child(None, {PROMPT: "rung 1"}, ["a lesson"]))  # type: ignore[arg-type]
    assert ladder.refusals_left() == refusals - 1


def _careful_writer(request: LLMRequest) -> str:
    if request.operation == "feedback":
        return json.dumps({"feedback": [{"lesson": "check every claim with care", "explains": [1, 2]}]})
    return json.dumps({"instruction": f"careful {request.sample_index}"})


@pytest.mark.parametrize("rung_errs_on", [(), (0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45)])
def test_when_the_seed_makes_no_held_out_error_a_rung_is_kept_unless_it_hurts(rung_errs_on):
    """The seed is right on every held-out sample, so no candidate can beat it there: a distilled
    rung that does no worse is kept (its lessons come from the corrections); one the held-out
    samples say is worse is not."""
    ds = make_dataset(60, 20)
    labels = [int(y) for y in ds.labels()]

    def judge(instruction: str, i: int) -> int:
        wrong = "careful" in instruction and i in rung_errs_on
        return 1 - labels[i] if wrong else labels[i]

    result = _optimize(
        ds, rule_llm(ds, judge, _careful_writer), population_size=3, generations=1, refit_below=0
    )
    why = result.final_choice["why"]
    if rung_errs_on:
        assert result.best_instructions == result.seed_instructions
        assert "makes no error" not in why
    else:
        assert "careful" in result.best_instructions[PROMPT]
        assert result.final_choice["stage"] == "verify"
        assert "makes no error" in why and "no candidate can be shown better" in why
        assert "nothing to beat" in result.final_choice["rule"]


def test_a_seed_with_a_held_out_error_keeps_the_paired_rule():
    """One sample both the seed and the rung get wrong: the seed is not perfect, a tie keeps it."""
    ds = make_dataset(60, 20)
    labels = [int(y) for y in ds.labels()]
    result = _optimize(
        ds,
        rule_llm(ds, lambda instruction, i: 1 - labels[i] if i % 5 == 0 else labels[i], _careful_writer),
        population_size=3,
        generations=1,
        refit_below=0,
    )
    assert result.best_instructions == result.seed_instructions
    assert "makes no error" not in result.final_choice["why"]


@pytest.mark.parametrize(
    "text",
    [
        "Cautious wording is fine here.",  # the text's first word
        "The answer is right. Cautious wording is fine.",  # after a full stop
        "Right!\nCautious wording is fine.",  # after a line break
        'He said: "Cautious wording is fine."',  # after a colon and a quote
    ],
)
def test_a_sentence_s_first_word_is_no_name_so_a_lesson_with_it_is_no_sample_fact(text):
    """A word one sample holds is a fact of that sample only when it is a name or a number: a
    capital at a sentence's start says nothing (a held-back judgeworld world lost its hedging
    criterion: 'cautious wording is fine' was dropped as a sample fact, 'Cautious' opening one
    sample's reason)."""
    facts = sample_facts([[text], ["another sample, about the river Ethurkel, 1520 km long"], ["a third"]])
    assert not facts.quoted_in("Accept cautious wording when the facts are right.")
    assert facts.quoted_in("Check what the response says about Ethurkel.")  # a name inside a sentence
    assert facts.quoted_in("Check the 1520 figure.")  # a number


def test_a_lesson_whose_rewrite_came_back_unchanged_is_offered_once_more():
    """The prompt engineer returns the instruction unchanged the first time it is given a lesson
    (it could phrase it the next time): the next round offers it again and it is applied."""
    ds = make_dataset(20, 6)
    labels = [int(y) for y in ds.labels()]
    metric = AspectCritic(name=ds.name, definition=DEFINITION)
    (seed,) = metric.get_instructions().values()
    rewrites: list[int] = []

    def writer(request: LLMRequest) -> str:
        if request.operation == "feedback":
            return json.dumps({"feedback": [{"lesson": "check every claim with care", "explains": [1]}]})
        rewrites.append(request.sample_index)
        first = len(rewrites) == 1
        return json.dumps({"instruction": seed if first else f"{seed}\\n- check every claim with care"})

    llm = rule_llm(ds, lambda instruction, i: labels[i] if "care" in instruction else 1 - labels[i], writer)
    result = GeneticOptimizer(metric=metric, llm=llm).optimize(
        ds, BinaryMetricLoss(), {"random_seed": 7, "strategy": "distill", "refit_below": 0, "small_data": 0}
    )
    (lesson,) = [x for x in result.lessons if x["text"] == "check every claim with care"]
    assert lesson["applied_round"] is not None and len(rewrites) == 2
    assert "care" in result.best_instructions[PROMPT]


def test_a_rejected_lesson_is_offered_again_beside_the_next_round_s_new_one():
    """Round 1's rewrite of lesson A comes back unchanged; round 2 teaches lesson B, which the
    engineer cannot apply alone: A is offered again beside B, and applied (a real file's ladder
    stopped 'rejected' here, having offered B alone, and lost A's criterion)."""
    ds = make_dataset(20, 6)
    labels = [int(y) for y in ds.labels()]
    metric = AspectCritic(name=ds.name, definition=DEFINITION)
    (seed,) = metric.get_instructions().values()
    asked: list[list[str]] = []

    def writer(request: LLMRequest) -> str:
        text = request.messages[-1].content
        if request.operation == "feedback":
            lesson = "check every claim with care" if not asked else "state the verdict clearly"
            return json.dumps({"feedback": [{"lesson": lesson, "explains": [1]}]})
        given = [x for x in ("check every claim with care", "state the verdict clearly") if f"- {x}" in text]
        asked.append(given)
        apply = "check every claim with care" in given and len(asked) > 1
        return json.dumps({"instruction": f"{seed}\\n- check every claim with care" if apply else seed})

    llm = rule_llm(ds, lambda instruction, i: labels[i] if "care" in instruction else 1 - labels[i], writer)
    result = GeneticOptimizer(metric=metric, llm=llm).optimize(
        ds, BinaryMetricLoss(), {"random_seed": 7, "strategy": "distill", "refit_below": 0, "small_data": 0}
    )
    assert asked[0] == ["check every claim with care"]
    assert set(asked[1]) == {"check every claim with care", "state the verdict clearly"}
    assert "care" in result.best_instructions[PROMPT]


def test_a_ladder_does_not_converge_while_a_rejected_lesson_waits_for_its_second_try():
    """Round 1 applies A, round 2 teaches nothing new, round 3 teaches B whose rewrite comes back
    unchanged: two barren rounds, but B has had one try only, so round 4 offers it again (the
    ladder used to stop 'converged' there: a held-back world lost its wrong-place criterion)."""
    ds = make_dataset(20, 6)
    labels = [int(y) for y in ds.labels()]
    metric = AspectCritic(name=ds.name, definition=DEFINITION)
    (seed,) = metric.get_instructions().values()
    lessons_calls: list[int] = []
    rewrites: list[str] = []

    def writer(request: LLMRequest) -> str:
        text = request.messages[-1].content
        if request.operation == "feedback":
            lessons_calls.append(request.sample_index)
            lesson = "check every claim with care" if len(lessons_calls) < 3 else "weigh every number"
            return json.dumps({"feedback": [{"lesson": lesson, "explains": [1]}]})
        rewrites.append(text)
        current = text.split("## ")[1].split("\n", 1)[1].strip() if "## " in text else seed
        if "weigh every number" in text and sum("weigh every number" in r for r in rewrites) == 1:
            return json.dumps({"instruction": current})  # B's first rewrite: unchanged
        added = [x for x in ("check every claim with care", "weigh every number") if f"- {x}" in text]
        return json.dumps({"instruction": current + "".join(f"\\n- {x}" for x in added)})

    judge = rule_llm(
        ds, lambda instruction, i: labels[i] if "number" in instruction else 1 - labels[i], writer
    )
    result = GeneticOptimizer(metric=metric, llm=judge).optimize(
        ds, BinaryMetricLoss(), {"random_seed": 7, "strategy": "distill", "refit_below": 0, "small_data": 0}
    )
    applied = {x["text"]: x["applied_round"] for x in result.lessons}
    assert applied["check every claim with care"] == 1
    assert applied["weigh every number"] is not None and applied["weigh every number"] >= 4
    assert "weigh every number" in result.best_instructions[PROMPT]


def test_a_lesson_is_applied_only_when_a_new_sentence_of_the_rewrite_carries_its_words():
    before = "Is the response correct compared with the reference?"
    unit = "The instruction never mentions unit conversion; make it an explicit criterion for the verdict."
    number = "Add a rule about check every number: the verdicts disagreed where this mattered."
    careful = "Ask the model to compare the response more carefully before giving the verdict."
    # the rewrite wrote one of two lessons: the other's only shared word ('criterion') comes from
    # a sentence that carries more of the first's
    assert applied_lessons(before, f"{before}\nKey criterion: check every number.", [unit, number]) == [
        False,
        True,
    ]
    assert applied_lessons(
        before, f"{before}\nKey criterion: check every number.\nUnit conversion.", [unit, number]
    ) == [
        True,
        True,
    ]
    # a word k lessons hold weighs 1/k: 'reworded answer' goes to its lesson alone, not to the one
    # that shares 'answer' and 'criterion' with the sentence too (a tie, counting words: a
    # judgeworld run recorded that one as applied)
    clearly = "State clearly that the verdict must be 1 when the criterion is met."
    simplified = (
        "The instruction never mentions simplified answer is acceptable; make it an explicit criterion."
    )
    reworded = "Add a rule about reworded answer: the verdicts disagreed where this mattered."
    written = f"{before}\nKey criterion: reworded answer."
    assert applied_lessons(before, written, [clearly, simplified, reworded]) == [False, False, True]
    # a one-word criterion is enough when no other lesson shares it
    assert applied_lessons(
        before, f"{before} Important: oversimplification.", ["Flag oversimplification.", careful]
    ) == [
        True,
        False,
    ]
    # a sentence made of the old instruction's words credits no lesson; none credited: nothing to
    # tell them apart by, each taken as applied
    reworded = "Compared with the reference, is the response correct?"
    assert applied_lessons(before, reworded, [careful, number]) == [True, True]
    assert applied_lessons(before, f"{reworded} Compare it carefully.", [careful, number]) == [True, False]


def test_a_lesson_the_rewrite_left_out_is_recorded_as_not_applied():
    """Given two lessons, the prompt engineer writes only one (judgeworld's adopts a named
    criterion 9 times in 10): the other is recorded as not applied, in the lessons and in the
    rung's feedback (both said applied before), and is not offered again."""
    ds = make_dataset(20, 6)
    labels = [int(y) for y in ds.labels()]
    metric = AspectCritic(name=ds.name, definition=DEFINITION)
    lessons = ["check every claim with care", "weigh every number"]
    given: list[list[str]] = []

    def writer(request: LLMRequest) -> str:
        text = request.messages[-1].content
        if request.operation == "feedback":
            return json.dumps({"feedback": [{"lesson": x, "explains": [1]} for x in lessons]})
        current = text.split("## ")[1].split("\n", 1)[1].split("\n\n")[0].strip()
        feedback = text.split(FEEDBACK_TO_APPLY)[1].split("\n\n")[0]
        given.append([x for x in lessons if f"- {x}" in feedback])
        return json.dumps({"instruction": f"{current}\n- {given[-1][0]}"})  # the first lesson only

    judge = rule_llm(ds, lambda instruction, i: labels[i] if "care" in instruction else 1 - labels[i], writer)
    result = GeneticOptimizer(metric=metric, llm=judge).optimize(
        ds, BinaryMetricLoss(), {"random_seed": 7, "strategy": "distill", "refit_below": 0, "small_data": 0}
    )
    ladder = {x["text"]: (x["applied_round"], x["offered"]) for x in result.lessons}
    assert given == [lessons]
    assert ladder == {"check every claim with care": (1, 1), "weigh every number": (None, 1)}
    assert "weigh" not in result.best_instructions[PROMPT]
    (rung,) = [c for c in result.lineage if c["operator"] == "distill"]
    assert rung["feedback"] == ["check every claim with care"]
