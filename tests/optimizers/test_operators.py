"""Unit tests of the mutation and crossover operators: what a plan picks (from a seeded
Generator, reading a BreedingView) and what running it asks the reflection LLM and returns."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import numpy as np
import pytest

from promptevolver import AspectCritic, BinaryMetricLoss
from promptevolver.config._models import GeneticConfig
from promptevolver.errors import PermanentLLMError
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.operators._base import BreedingView, Child, MetaContext, Operator, Plan
from promptevolver.optimizers.operators._breeder import Breeder
from promptevolver.optimizers.operators._crossover import Crossover
from promptevolver.optimizers.operators._mutation import Mutation
from promptevolver.optimizers.operators._reverse_engineer import ReverseEngineering
from promptevolver.optimizers.strategies._selection import Pool

from ..helpers import PROMPT, make_dataset, score_of

DATASET = make_dataset(20, wrong=6)
LABELS = DATASET.labels()
TRAIN = list(range(20))
CONFIG = GeneticConfig(sample_size=4, tournament_size=2)


def candidate(cid: int, correct: list[float] | None, instructions: dict[str, str] | None = None) -> Candidate:
    return Candidate(
        id=cid,
        instructions=instructions or {PROMPT: f"Judge the answer (candidate {cid})."},
        generation=0,
        operator="seed" if cid == 0 else "mutation",
        train=None if correct is None else score_of(correct),
    )


def planned(operator: Operator, breeding: BreedingView, rng: np.random.Generator) -> Plan | None:
    """One plan the way a run makes it: the breeder's selector picks the parents, the operator plans."""
    return Breeder([operator], ReverseEngineering()).plan_one(operator, breeding, rng)


def view(population: list[Candidate], train: list[int] = TRAIN, **kwargs: object) -> BreedingView:
    return BreedingView(
        population=population, train=train, labels=LABELS, loss=BinaryMetricLoss(), config=CONFIG, **kwargs
    )


def context(llm: ScriptedLLM) -> MetaContext:
    metric = AspectCritic(name="toy", definition="Is the response correct?")
    return MetaContext(llm=llm, metric=metric, dataset=DATASET, labels=LABELS, config=CONFIG)


def writer(request: LLMRequest) -> str:
    if request.operation == "feedback":
        return json.dumps({"feedback": ["State the criterion for a partly correct answer."]})
    return json.dumps({"instruction": f"{request.operation} child {request.sample_index}"})


def run(operator: Mutation | Crossover, plan: Plan, llm: ScriptedLLM) -> Child:
    return asyncio.run(operator.run(plan, context(llm)))


FAILS_FIRST_FIVE = [0.0] * 5 + [1.0] * 15
PERFECT = [1.0] * 20


# --- mutation ----------------------------------------------------------------------------------
def test_a_mutation_shows_its_parents_failures_and_a_few_passing_samples_for_contrast():
    plan = planned(Mutation(), view([candidate(0, FAILS_FIRST_FIVE)]), np.random.default_rng(0))
    assert plan is not None and plan.operator == "mutation" and [p.id for p in plan.parents] == [0]
    assert len(plan.positions) == CONFIG.sample_size and set(plan.positions) <= set(range(5))
    assert plan.contrast and set(plan.contrast) <= set(range(5, 20))
    assert plan.prompt is None  # a metric of one prompt: that prompt


def test_a_mutation_plan_is_the_generators_not_the_clocks():
    population = [candidate(0, FAILS_FIRST_FIVE), candidate(1, [1.0] * 10 + [0.0] * 10)]
    draws = [planned(Mutation(), view(population), np.random.default_rng(seed)) for seed in (3, 3, 4, 5, 6)]
    assert draws[0] == draws[1]
    assert len({(p.parents[0].id, p.positions) for p in draws if p is not None}) > 1


def test_a_population_with_nothing_left_to_learn_gets_no_mutation():
    assert planned(Mutation(), view([candidate(0, PERFECT)]), np.random.default_rng(0)) is None
    unjudged = candidate(1, None)  # nothing judged and no unseen correction: nothing to show
    assert planned(Mutation(), view([unjudged]), np.random.default_rng(0)) is None


def test_a_perfect_parent_still_learns_from_corrections_its_lineage_has_not_seen():
    pool = (16, 18)  # corrections outside the judged train part, never shown to its lineage
    perfect = candidate(0, [1.0] * 15)
    plan = planned(
        Mutation(), view([perfect], train=list(range(15)), evidence_pool=pool), np.random.default_rng(0)
    )
    assert plan is not None and set(plan.positions) == set(pool)
    seen = dataclasses.replace(perfect, seen=frozenset(pool))
    assert (
        planned(Mutation(), view([seen], train=list(range(15)), evidence_pool=pool), np.random.default_rng(0))
        is None
    )


def test_a_mutation_is_feedback_then_a_rewrite_of_the_shown_samples():
    plan = Plan("mutation", (candidate(0, FAILS_FIRST_FIVE),), slot=7, positions=(1, 3), contrast=(9,))
    llm = ScriptedLLM(handler=writer)
    child = run(Mutation(), plan, llm)
    assert child.instructions == {PROMPT: "rewrite child 7"} and child.rejected is None
    assert child.feedback == ["State the criterion for a partly correct answer."]
    assert [(r.operation, r.sample_index) for r in llm.requests] == [("feedback", 7), ("rewrite", 7)]
    shown = llm.requests[0].messages[-1].content
    assert "question 1" in shown and "question 3" in shown and "question 9" in shown
    assert "question 5" not in shown  # only the plan's samples


def test_a_mutation_of_a_metric_of_several_prompts_rewrites_the_planned_prompt_only():
    two = {"extract": "Extract the claims.", "verify": "Verify each claim."}
    plan = Plan("mutation", (candidate(0, FAILS_FIRST_FIVE, two),), slot=2, positions=(0,), prompt="verify")
    llm = ScriptedLLM(handler=writer)
    child = run(Mutation(), plan, llm)
    assert child.instructions == {"extract": "Extract the claims.", "verify": "rewrite child 2"}
    assert len(llm.requests) == Mutation().meta_calls(prompts=2) == 2


@pytest.mark.parametrize(
    ("answer", "rejected"),
    [
        ("not JSON at all", "unparseable answer"),
        (json.dumps({"feedback": []}), "empty feedback"),
        (PermanentLLMError("denied", status=400), "llm error: http 400"),
    ],
)
def test_an_unusable_feedback_answer_is_a_rejected_child_and_no_rewrite_is_asked(answer, rejected):
    plan = Plan("mutation", (candidate(0, FAILS_FIRST_FIVE),), slot=1, positions=(1,))
    llm = ScriptedLLM([answer], max_attempts=1)
    child = run(Mutation(), plan, llm)
    assert child.instructions is None and child.rejected is not None and child.rejected.startswith(rejected)
    assert [r.operation for r in llm.requests] == ["feedback"]


def test_a_rewrite_that_returns_the_parent_is_rejected_with_the_feedback_kept():
    parent = candidate(0, FAILS_FIRST_FIVE)
    same = json.dumps({"instruction": parent.instructions[PROMPT]})
    llm = ScriptedLLM([json.dumps({"feedback": ["Be stricter."]}), same])
    child = run(Mutation(), Plan("mutation", (parent,), positions=(1,)), llm)
    assert child.instructions is None and child.rejected == "unchanged instruction"
    assert child.feedback == ["Be stricter."]


def _initial_batches() -> list[Plan]:
    seed = candidate(0, None)
    pool = tuple(range(12))
    return Mutation().plan_from_evidence(seed, view([seed], evidence_pool=pool), 3, np.random.default_rng(0))


def test_the_initial_mutations_each_show_a_full_batch_of_the_corrections():
    plans = _initial_batches()
    assert len(plans) == 3 and all(p.parents[0].id == 0 for p in plans)
    for p in plans:
        assert len(set(p.positions)) == CONFIG.sample_size and set(p.positions) <= set(range(12))
    small = Mutation().plan_from_evidence(
        candidate(0, None), view([candidate(0, None)], evidence_pool=(2, 5, 8)), 2, np.random.default_rng(0)
    )
    assert [len(p.positions) for p in small] == [2, 2]  # two thirds of a pool no larger than a batch


@pytest.mark.parametrize("out_of_bag", [False, True])
def test_the_initial_mutations_batches_are_disjoint_while_the_pool_allows(out_of_bag):
    """Each child of the seed is shown its own slice of one shuffle of its pool (out of bag: of
    the corrections outside the fold it keeps unseen), so no correction is shown twice while the
    pool holds enough: 3 children of a batch of 4 from 12 corrections see all 12; out of bag, 2
    children per fold from the other fold's 8 corrections see all 8."""
    seed = candidate(0, None)
    if out_of_bag:
        folds = {p: p % 2 for p in range(16)}
        v = view([seed], evidence_pool=tuple(range(16)), folds=folds)
        plans = Mutation().plan_from_evidence(seed, v, 4, np.random.default_rng(0))
        for fold in (0, 1):
            shown = [pos for p in plans if p.fold == fold for pos in p.positions]
            assert len(shown) == len(set(shown)) == 8 and all(folds[pos] != fold for pos in shown)
    else:
        plans = _initial_batches()
        assert len({pos for p in plans for pos in p.positions}) == 12


def test_operator_weights_must_not_be_negative():
    for make in (Mutation, Crossover):
        with pytest.raises(ValueError, match="weight must be >= 0, got -1"):
            make(weight=-1)


# --- crossover ---------------------------------------------------------------------------------
def test_crossover_pairs_two_different_parents_that_get_different_samples_right():
    a, b, c = (
        candidate(0, FAILS_FIRST_FIVE),
        candidate(1, [1.0] * 5 + [0.0] * 5 + [1.0] * 10),
        candidate(2, FAILS_FIRST_FIVE),
    )
    for seed in range(10):
        plan = planned(Crossover(), view([a, b, c]), np.random.default_rng(seed))
        assert plan is not None and plan.operator == "crossover"
        first, second = plan.parents
        assert first.id != second.id and 1 in (first.id, second.id)  # the two that disagree


def test_crossover_needs_two_candidates_that_disagree_somewhere():
    rng = np.random.default_rng(0)
    assert planned(Crossover(), view([candidate(0, FAILS_FIRST_FIVE)]), rng) is None
    assert (
        planned(Crossover(), view([candidate(0, FAILS_FIRST_FIVE), candidate(1, FAILS_FIRST_FIVE)]), rng)
        is None
    )


def test_crossover_merges_prompt_by_prompt_with_one_call_each():
    a = candidate(0, FAILS_FIRST_FIVE, {"extract": "Extract A.", "verify": "Verify A."})
    b = candidate(1, PERFECT, {"extract": "Extract B.", "verify": "Verify B."})
    llm = ScriptedLLM(handler=writer)
    child = run(Crossover(), Plan("crossover", (a, b), slot=4), llm)
    assert child.instructions == {"extract": "crossover child 4", "verify": "crossover child 4"}
    assert [r.operation for r in llm.requests] == ["crossover"] * Crossover().meta_calls(prompts=2)
    first = llm.requests[0].messages[-1].content
    assert "Extract A." in first and "Extract B." in first


def test_a_rejected_merge_keeps_parent_as_instruction_and_a_childlike_a_parent_is_no_change():
    a = candidate(0, FAILS_FIRST_FIVE, {"extract": "Extract A.", "verify": "Verify A."})
    b = candidate(1, PERFECT, {"extract": "Extract B.", "verify": "Verify B."})
    merged = json.dumps({"instruction": "Extract both."})
    child = run(Crossover(), Plan("crossover", (a, b)), ScriptedLLM([merged, "garbled"]))
    assert child.instructions == {"extract": "Extract both.", "verify": "Verify A."}
    unchanged = run(Crossover(), Plan("crossover", (a, b)), ScriptedLLM(["garbled", "garbled"]))
    assert unchanged.instructions is None and unchanged.rejected == "no change"


class _FirstCandidates:
    """A parent selector that always takes the first ``arity`` candidates, recording each call."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def select(self, pool: Pool, arity: int, rng: np.random.Generator) -> tuple[Candidate, ...] | None:
        self.calls.append(arity)
        eligible = [c for c in pool.population if pool.eligible is None or pool.eligible(c)]
        return tuple(eligible[:arity]) if len(eligible) >= arity else None


def test_operators_plan_from_the_parents_the_breeder_selects() -> None:
    a, b, c = candidate(0, FAILS_FIRST_FIVE), candidate(1, PERFECT), candidate(2, FAILS_FIRST_FIVE)
    selector = _FirstCandidates()
    breeder = Breeder([Mutation(), Crossover()], ReverseEngineering(), selector=selector)
    mutation = breeder.plan_one(Mutation(), view([b, c, a]), np.random.default_rng(0))
    assert mutation is not None and mutation.parents == (c,)  # b has nothing to learn: not eligible
    crossover = breeder.plan_one(Crossover(), view([b, c, a]), np.random.default_rng(0))
    assert crossover is not None and crossover.parents == (b, c)
    assert selector.calls == [1, 2]
    # the operators take the parents they are given, whoever chose them
    assert Mutation().plan(view([a, c]), (a,), np.random.default_rng(1)).parents == (a,)  # type: ignore[union-attr]
    assert Crossover().plan(view([a, c]), (c, a), np.random.default_rng(1)).parents == (c, a)  # type: ignore[union-attr]


def test_a_label_given_to_a_whole_sample_of_several_prompts_shows_its_reason_to_each():
    """A metric of several prompts labelled on the review page keeps the human's reason on the
    sample (``human_reason``): no prompt's output holds it. Meta calls showed each prompt's own
    output only, so the reason never reached the optimizer; it is now shown beside it."""
    from promptevolver import SingleMetricAnnotation
    from promptevolver.annotations import HUMAN_REASON
    from promptevolver.judge import StatementSupport
    from promptevolver.simulation import StatementsSpec, generate_statements

    data = generate_statements(StatementsSpec(n_samples=6, random_seed=1))
    samples = [s.model_dump(mode="json") for s in data.samples]
    samples[2][HUMAN_REASON] = "The second claim is not in the context."
    dataset = SingleMetricAnnotation.model_validate({"name": data.name, "samples": samples})
    metric = StatementSupport(name=data.name)
    llm = ScriptedLLM(handler=writer)
    ctx = MetaContext(llm=llm, metric=metric, dataset=dataset, labels=dataset.labels(), config=CONFIG)
    for name in metric.get_instructions():
        shown = ctx.example(2, name)
        assert shown.expected["human_reason"] == "The second claim is not in the context."
        assert "human_reason" not in ctx.example(3, name).expected
