"""Static demonstration sets evolve in the search: a mutation child's set gains (or swaps in) a
sample its parent still got wrong, or drops one when none is left; a crossover child's set is
drawn from its parents'; the result's store holds the chosen set. A parent without a static set
passes its policy on and no random number is drawn for it (runs without static sets draw as
before)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticConfig, GeneticOptimizer
from promptevolver.judge._examples import static_positions
from promptevolver.judge._prompts import rendered_examples, split_rendered
from promptevolver.llm import ScriptedLLM
from promptevolver.llm._base import LLMRequest
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.operators._demos import mixed, mutated

from ..helpers import PROMPT, make_dataset

DEFINITION = "Is the answer right?"
GROUP = 10  # samples i and j share a criterion when i // GROUP == j // GROUP


def _view(static=(), k=3):
    return SimpleNamespace(
        static_set=list(static), config=GeneticConfig.model_validate({"examples": {"k": k}})
    )


def _cand(examples: str, ident: int = 1) -> Candidate:
    return Candidate(ident, {PROMPT: "x"}, 1, "mutation", (), examples=examples)


def _untouched(draw) -> bool:
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    draw(rng)
    return rng.bit_generator.state == before


def test_mutation_adds_swaps_in_or_drops_as_the_failures_say():
    rng = np.random.default_rng(1)
    assert mutated(_cand("static:4,7"), [4, 30], _view(), rng) == "static:4,7,30"  # room: added
    swapped = static_positions(mutated(_cand("static:4,7,9"), [4, 30, 31], _view(), rng))
    assert swapped is not None and len(swapped) == 3 and len(set(swapped) - {4, 7, 9}) == 1
    assert set(swapped) - {4, 7, 9} <= {30, 31}  # only a sample it got wrong comes in
    dropped = static_positions(mutated(_cand("static"), [4], _view(static=[4, 7, 9]), rng))
    assert dropped is not None and len(dropped) == 2 and set(dropped) < {4, 7, 9}  # none left wrong
    assert mutated(_cand("static:4"), [], _view(), rng) == "static:4"  # one demo left: kept


def test_crossover_draws_from_the_union_of_the_parents_sets():
    rng = np.random.default_rng(2)
    child = static_positions(mixed(_cand("static:1,2,3"), _cand("static:3,4,5", 2), _view(), rng))
    assert child is not None and len(child) == 3 and set(child) <= {1, 2, 3, 4, 5}
    assert child == sorted(child, key=[1, 2, 3, 4, 5].index)  # A's first, the union's order kept
    assert mixed(_cand("static:1"), _cand("none", 2), _view(), rng) == "static:1"


def test_a_parent_without_a_static_set_passes_its_policy_on_drawing_nothing():
    for policy in ("none", "retrieval"):
        assert _untouched(lambda rng, p=policy: mutated(_cand(p), [1, 2], _view(), rng))
        assert _untouched(lambda rng, p=policy: mixed(_cand(p), _cand("none", 2), _view(), rng))
        assert mutated(_cand(policy), [1, 2], _view(), np.random.default_rng(0)) == policy


def _group_llm(ds) -> ScriptedLLM:
    """The recorded verdict, unless a shown example shares the judged sample's group: then the
    human's (an example teaches its criterion, as judgeworld's do). Meta calls change wording only."""
    index = {json.dumps(s.metric_input, sort_keys=True): i for i, s in enumerate(ds)}
    labels = [int(y) for y in ds.labels()]
    originals = [int(s.prompts[PROMPT].prompt_output["verdict"]) for s in ds]

    def handler(request: LLMRequest) -> str:
        rendered = split_rendered(request.messages)
        if rendered is None:
            if request.operation == "feedback":
                return json.dumps({"feedback": [{"lesson": "be careful", "explains": [1]}]})
            return json.dumps({"instruction": f"careful {request.sample_index}"})
        position = index[json.dumps(rendered[1], sort_keys=True)]
        shown = [index[json.dumps(i, sort_keys=True)] for i, _ in rendered_examples(request.messages)]
        taught = any(p // GROUP == position // GROUP for p in shown)
        return json.dumps({"reason": "r", "verdict": labels[position] if taught else originals[position]})

    return ScriptedLLM(handler=handler)


@pytest.fixture(scope="module")
def run():
    ds = make_dataset(80, 40)
    metric = AspectCritic(name=ds.name, definition=DEFINITION, prompt_name=PROMPT)
    config = {
        "random_seed": 3,
        "population_size": 6,
        "generations": 4,
        "examples": {"policy": "static", "k": 3},
        "refit_below": 0,  # the held-out regime, where the search evolves the static sets
    }
    result = GeneticOptimizer(metric=metric, llm=_group_llm(ds)).optimize(ds, BinaryMetricLoss(), config)
    return ds, result


def test_in_a_run_static_sets_evolve_toward_the_samples_still_judged_wrong(run):
    ds, result = run
    stage = result.stages["examples"]
    assert stage["policy"] == "static" and result.stages["search"]["ran"]
    initial = stage["static_set"]
    by_id = {c["id"]: c for c in result.lineage}

    def demos(row):
        return initial if row["examples"] == "static" else static_positions(row["examples"])

    children = [c for c in result.lineage if c["operator"] in ("mutation", "crossover")]
    with_sets = [c for c in children if demos(c) is not None]
    assert with_sets, "the static candidate had no offspring"
    grown = 0
    for child in with_sets:
        mine, parents = demos(child), [demos(by_id[p]) for p in child["parents"]]
        if child["operator"] == "crossover":
            assert set(mine) <= set().union(*(set(p or []) for p in parents))
            continue
        new = set(mine) - set(parents[0])
        taught = {p // GROUP for p in parents[0]}
        # a sample comes in only if the parent judged it wrong: a correction of an untaught group
        assert all(p < 40 and p // GROUP not in taught for p in new) and len(new) <= 1
        grown += bool(new)
    assert grown >= 1
    best = by_id[result.best_id]
    if demos(best) is not None:  # the result's store shows the chosen set
        assert result.examples["policy"] == "static"
        assert result.example_store().positions_for("static", {}) == demos(best)
    first = next(c for c in result.lineage if c["operator"] == "examples" and c["examples"] == "static")
    assert max(c["train"] or 0 for c in with_sets) > (first["train"] or 0)
