"""The simulated engineer writes what a careful person would, on any annotations: the instruction's
base text (the seed's "Criteria Definition" line) stays as written where it was written, even when
it names mined phrases; every rule it adds is general (never a quote of one response, never a bare
vague or topic word such as "just", "saying", "a number"); a rule stays under the verdict it was
written under. Checked on the worlds of the bundled files and of synthetic sets of every kind,
and on every candidate of real runs (search operators included)."""

from __future__ import annotations

import json
import re

import pytest

from promptevolver import MetricAnnotation, SingleMetricAnnotation
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.simulation import _writer as writer
from promptevolver.simulation._writer import VAGUE, general
from promptevolver.simulation.synthetic import SyntheticSpec, generate

from ..conftest import AC_DEFINITION, AC_FILE, DATA
from ..rundirs import optimize_into

HEADER = re.compile(r"^(Give verdict [01] \((yes|no)\) when:|Score (lower|higher) when:)$")


def _datasets() -> dict[str, SingleMetricAnnotation]:
    out = {
        "edited_chain_runs": SingleMetricAnnotation.from_json(AC_FILE),
        "annotated_data": next(iter(MetricAnnotation.from_json(DATA / "annotated_data.json").values())),
    }
    for seed in range(4):
        out[f"synthetic-{seed}"] = generate(SyntheticSpec(n_samples=60, random_seed=seed))
    return out


DATASETS = _datasets()


@pytest.fixture(scope="module", params=list(DATASETS))
def world(request):
    return SimulatedJudgeLLM(dataset=DATASETS[request.param], random_seed=0).world


def _seed_naming_everything(world) -> str:
    """A seed whose definition line names every mined phrase (the worst case for a writer that
    files any line naming a phrase as a rule)."""
    phrases = "; ".join(c.phrase for c in world.criteria.values())
    return (
        "Evaluate the Input based on the criteria defined. Use only 'Yes' (1) and 'No' (0) as verdict.\n"
        f"Criteria Definition: Is the response concise and correct? Consider {phrases}."
    )


def test_the_definition_stays_as_written_and_every_added_rule_is_general(world):
    seed = _seed_naming_everything(world)
    parsed = writer.parse(seed, writer.Coverage(world))
    assert "\n".join(parsed.base) == seed and parsed.lines == ()  # no rule in it: base text
    text = writer.compose(parsed.base, parsed.lines, world.criteria.values(), world, max_criteria=10_000)
    assert text.startswith(seed)
    added = text[len(seed) :].strip().splitlines()
    rules = [line[2:] for line in added if line.startswith("- ")]
    assert all(line.startswith("- ") or HEADER.match(line) for line in added), added
    coverage = writer.Coverage(world)
    for rule in rules:
        named = [world.criteria[c] for c in coverage.named(rule)]
        assert named and any(general(c, world) for c in named), rule
        if rule.startswith('the response says "'):  # a quote: a wording several responses share
            assert all(c.kind == "generic" for c in named), rule
        template = {"the", "response", "shows", "a", "an", "says", "anything", "is", "something"}
        words = [w for w in re.findall(r"[a-z]+", rule.lower()) if w not in template]
        assert words and not set(words) <= VAGUE, rule


def test_a_rule_stays_under_the_verdict_it_was_written_under(world):
    crit = sorted(world.criteria.values(), key=lambda c: (not general(c, world), c.id))[0]
    clause = writer.clause(crit, has_reference=world.has_reference)
    flipped = 1 - crit.verdict  # a human wrote it under the other verdict: it stays there
    text = f"Judge it.\n{writer.header(flipped, scored=world.scored)}\n- {clause}"
    parsed = writer.parse(text, writer.Coverage(world))
    assert [v for _, _, v in parsed.lines] == [flipped]
    again = writer.compose(parsed.base, parsed.lines, [], world, max_criteria=10)
    assert again == text


@pytest.mark.parametrize("source", ["bundled", "synthetic"])
def test_every_candidate_of_a_run_keeps_the_definition_and_writes_general_rules(tmp_path, source):
    synthetic = {"synthetic": {"n_samples": 60, "random_seed": 3}}
    config = {
        "dataset": str(AC_FILE) if source == "bundled" else synthetic,
        "metric": {"name": "answer_correctness", "definition": AC_DEFINITION},
        "optimizer": {"strategy": "genetic", "population_size": 6, "generations": 3},
        "random_seed": 3,
    }
    run = optimize_into(tmp_path / "run", config)
    result = json.loads((run / "result.json").read_text())
    seed = next(iter(result["seed_instructions"].values()))
    definition = next(line for line in seed.splitlines() if line.startswith("Criteria Definition:"))
    dataset = DATASETS["edited_chain_runs" if source == "bundled" else "synthetic-3"]
    world = SimulatedJudgeLLM(dataset=dataset, random_seed=0).world
    coverage = writer.Coverage(world)
    for candidate in result["lineage"]:
        text = next(iter(candidate["instructions"].values()))
        lines = text.splitlines()
        edited = candidate["operator"] in ("seed", "distill") or definition in lines
        if candidate["operator"] != "reverse_engineer" and edited:  # the seed's base, as written
            assert lines[: len(seed.splitlines())] == seed.splitlines(), (candidate["id"], text)
        parsed = writer.parse(text, coverage)
        for rule, ids, _ in parsed.lines:
            assert any(general(world.criteria[c], world) for c in ids), (candidate["id"], rule)
        for line in lines:
            if definition.split(":")[0] in line:
                assert line == definition, (candidate["id"], line)  # never moved under a verdict
