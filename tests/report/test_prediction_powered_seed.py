"""A small-data run whose seed figure is prediction-powered (judged afresh on a random share of the
samples, the file's recorded verdicts standing in for the others: ``optimizers/_refit.py``) says
so wherever the figure is shown, draws no per-sample picture of the seed that would give another
figure, and never re-judges the seed to fill one in (the simulated LLM would, for free)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptevolver.cli import main
from promptevolver.rundir import read_result

from ..helpers import PROMPT
from ..rundirs import AC_CONFIG, optimize_into


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return optimize_into(tmp_path_factory.mktemp("runs") / "ppi", AC_CONFIG)


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _seed_judged(run: Path) -> list[int]:
    rows = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    return [r["position"] for r in rows if r["judged"]["seed"]]


def test_every_place_the_seed_figure_is_shown_says_it_is_prediction_powered(run: Path) -> None:
    result = read_result(run)
    figure = result["final_choice"]["seed_figure"]
    assert figure["method"] == "prediction_powered" and 10 <= figure["fresh"] < figure["of"]
    assert "the seed's figure is prediction-powered" in result["final_choice"]["why"]
    md = (run / "report.md").read_text()
    seed = f"{result['scores']['seed']['cross_validated']:.3f}"
    outcome = _section(md, "Outcome")
    assert f"{seed} for the original (seed) instruction (prediction-powered: judged afresh on" in outcome
    row = next(x for x in _section(md, "Seed vs best").splitlines() if x.startswith("| original"))
    assert f"{figure['fresh']} afresh + recorded verdicts, of {figure['of']} (prediction-powered)" in row
    assert f"| {seed} |" in row  # the figure of result.json, not one of a partial picture
    assert "The seed's figure is prediction-powered" in md  # the notes say how it was made
    assert "Original (seed):" not in _section(md, "Confusion matrices (cross-validated)")


def test_the_seed_s_verdicts_are_the_fresh_ones_only_and_never_re_judged(run: Path, capsys) -> None:
    figure = read_result(run)["final_choice"]["seed_figure"]
    # the draw, and the samples of a fold whose ladder learned nothing (the recipe is the seed there)
    judged = figure["fresh"] + figure["also_judged"]
    assert len(_seed_judged(run)) == judged < figure["of"]
    assert main(["report", str(run)]) == 0  # regenerated: the simulated LLM could judge the rest
    capsys.readouterr()
    assert len(_seed_judged(run)) == judged


def test_a_fold_that_learned_nothing_is_said_and_its_verdicts_named_the_seed_s(run: Path) -> None:
    """The README's run: fold 1's ladder learned nothing, so on its samples the recipe is the seed
    and the best's cross-validated verdicts there are the seed's. The report says so, and every
    disagreement names the candidate whose verdict it is (a newcomer read the seed's verdicts as the
    optimized prompt's, which `evaluate` then scored right on every sample)."""
    result = read_result(run)
    ladders = result["stages"]["distill"]["ladders"]
    idle = [name for name, ids in ladders.items() if name != "all" and not ids]
    judged_by = {int(p): c for p, c in result["final_choice"]["judged_by"].items()}
    md = (run / "report.md").read_text()
    seeds = sum(c == 0 for c in judged_by.values())
    stop = result["stages"]["distill"]["stop"][idle[0]]
    said = f"learned nothing general (it stopped: {stop}), so on its {seeds}"
    assert idle and said in md
    # and the final choice's why, which the summary prints (it said "each sample judged by a
    # fold's candidate that never learned from it" and no more: a newcomer's finding)
    n = len(judged_by)
    assert f"but fold {idle[0]}'s {seeds}, " in result["final_choice"]["why"]
    assert f"the recipe was measured on the other {n - seeds} samples only" in result["final_choice"]["why"]
    table = _section(md, "Where the best prompt still disagrees with the humans")
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| #")]
    assert rows and "| judged by |" in table
    for row in rows:
        position = int(row[0].strip("| #"))
        who = "the seed (its fold learned nothing)" if judged_by[position] == 0 else f"#{judged_by[position]}"
        assert who in row


def test_captions_and_counts_say_what_is_drawn(run: Path) -> None:
    """The seed's matrix is not drawn here: the image's caption names only the chosen judge's (it
    said "(seed, chosen)"), and a count of one is singular ("1 lessons were not applied")."""
    md = (run / "report.md").read_text()
    assert "![Confusion matrix, cross-validated (chosen)](plots/confusion.png)" in md
    lessons = read_result(run)["lessons"]
    applied = {x["text"] for x in lessons if x["applied_round"] is not None}
    left = {x["text"] for x in lessons if x["text"] not in applied}  # one per wording
    if len(left) == 1:
        assert "1 lesson was not applied by any ladder" in md
    else:
        assert f"{len(left)} lessons were not applied by any ladder" in md
    given = {x["text"] for x in lessons if x["text"] in left and x["offered"] and not x["sample_fact"]}
    assert (f"{len(given)} were given to rewrites that did not write them" in md) == bool(given)
    (said,) = [line for line in md.splitlines() if "not applied by any ladder" in line]
    assert ": 0 " not in said and ", 0 " not in said  # a part with nothing in it is not named


def test_a_small_data_report_speaks_of_its_one_picture_never_of_parts_it_has_no(run: Path) -> None:
    """Nothing is held out: the report never says "Train: per-sample verdicts are not available"
    nor that its figures are "for the whole part (train or validation)" (a newcomer's finding)."""
    md = (run / "report.md").read_text()
    assert "Train: per-sample verdicts are not available" not in md
    assert "(train or validation)" not in _section(md, "Seed vs best")
    assert "Small data: every usable annotation is in this one picture" in md


CAPITALS = [
    ("France", "Paris", "Lyon"),
    ("Italy", "Rome", "Milan"),
    ("Brazil", "Brasilia", "Rio de Janeiro"),
    ("Canada", "Ottawa", "Toronto"),
    ("Australia", "Canberra", "Sydney"),
    ("Turkey", "Ankara", "Istanbul"),
    ("Nigeria", "Abuja", "Lagos"),
    ("Morocco", "Rabat", "Casablanca"),
    ("Vietnam", "Hanoi", "Ho Chi Minh City"),
    ("Pakistan", "Islamabad", "Karachi"),
    ("Switzerland", "Bern", "Zurich"),
    ("India", "New Delhi", "Mumbai"),
    ("China", "Beijing", "Shanghai"),
    ("Germany", "Berlin", "Hamburg"),
    ("Spain", "Madrid", "Barcelona"),
    ("Japan", "Tokyo", "Yokohama"),
    ("Egypt", "Cairo", "Alexandria"),
    ("Kenya", "Nairobi", "Mombasa"),
    ("Peru", "Lima", "Arequipa"),
    ("Chile", "Santiago", "Valparaiso"),
    ("Norway", "Oslo", "Bergen"),
    ("Poland", "Warsaw", "Krakow"),
    ("Greece", "Athens", "Thessaloniki"),
    ("Ireland", "Dublin", "Cork"),
]


def test_a_seed_kept_with_no_other_candidate_is_not_said_to_have_beaten_one(tmp_path: Path) -> None:
    """A newcomer's 24 capitals, each correction's reason quoting its own response (the simulated
    engineer writes no rule from a quote): no rung is made. The report said 'No candidate beat the
    original instruction', 'the result comes from the seed (nothing beat it)', that every sample
    'already taught a ladder', and drew an empty '(validation)' section."""
    samples = []
    for i, (country, capital, largest) in enumerate(CAPITALS):
        wrong = i % 4 == 1
        response = f"It is {largest}, the largest city of {country}." if wrong else f"It is {capital}."
        inputs = {
            "user_input": f"What is the capital of {country}?",
            "response": response,
            "reference": capital,
        }
        prompt = {
            "prompt_input": inputs,
            "prompt_output": {"reason": f"The response names a city in {country}.", "verdict": 1},
        }
        if wrong:
            prompt["edited_output"] = {
                "reason": f"The response names {largest}, not {capital}.",
                "verdict": 0,
            }
        samples.append(
            {
                "metric_input": inputs,
                "metric_output": 1,
                "is_accepted": not wrong,
                "prompts": {PROMPT: prompt},
            }
        )
    data = tmp_path / "capitals.json"
    data.write_text(json.dumps({"answer_correctness": samples}))
    config = {
        "dataset": str(data),
        "metric": {
            "type": "aspect_critic",
            "name": "answer_correctness",
            "definition": "Is the response correct?",
        },
    }
    run = optimize_into(tmp_path / "run", config)
    result = read_result(run)
    assert result["best_id"] == 0 and len(result["lineage"]) == 1  # the premise: nothing was made
    md = (run / "report.md").read_text()
    assert "No candidate was made" in md and "beat" not in _section(md, "Outcome").split("\n\n")[1]
    assert "The result comes from the seed (no other candidate was made)" in md
    assert "taught a ladder" not in md
    assert "## Confusion matrices\n" in md and "validation verdicts are not available" not in md
