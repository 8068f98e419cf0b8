"""``promptevolver suggest``: the committee, the call bound, the output and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.config._build import load_dataset
from promptevolver.errors import AnnotationError
from promptevolver.runs.suggest import Suggestions, committee_of, suggest

from ..conftest import ROOT
from ..rundirs import result_of

AC_FILE = ROOT / "benchmarks" / "data" / "edited_chain_runs.json"


@pytest.fixture(scope="module")
def pool(improved: Path, tmp_path_factory) -> Path:
    """The first 24 of the improved run's 40 annotations as a pool of metric inputs (JSONL,
    labels dropped); the other 16 are left to calibrate on."""
    data = load_dataset(rundir.read_config(improved))
    path = tmp_path_factory.mktemp("pool") / "pool.jsonl"
    path.write_text("".join(json.dumps(s.metric_input) + "\n" for s in data.samples[:24]))
    return path


@pytest.fixture(scope="module")
def found(improved: Path, pool: Path) -> Suggestions:
    return suggest(improved, pool, n=8)


def test_suggestions_come_best_first_from_the_pool_with_their_evidence(found, pool):
    traces = [json.loads(line) for line in pool.read_text().splitlines()]
    assert len(found.suggestions) == 8
    scores = [s.score for s in found.suggestions]
    assert scores == sorted(scores, reverse=True)
    assert len({s.index for s in found.suggestions}) == 8
    for rank, s in enumerate(found.suggestions, 1):
        assert s.rank == rank and s.metric_input == traces[s.index]
        assert list(s.verdicts) == [m.label for m in found.committee]
        assert s.why
        line = json.loads(json.dumps(s.to_dict()))
        assert {"metric_input", "score", "why", "verdicts"} <= line.keys()


def test_the_committee_is_the_chosen_then_finalists_seed_and_pareto_front_each_once(improved, found):
    result = result_of(improved)
    members = found.committee
    assert members[0].role == "chosen" and members[0].candidate == result["best_id"]
    assert {m.role for m in members} <= {"chosen", "finalist", "seed", "Pareto front"}
    texts = [json.dumps(m.instructions, sort_keys=True) for m in members]
    assert len(set(texts)) == len(texts)
    assert 2 <= len(members) <= 6


def test_a_disagreement_of_the_two_best_is_said_in_words(found):
    labels = [m.label for m in found.committee]
    for s in found.suggestions:
        first, second = (s.verdicts[label] for label in labels[:2])
        said = f"the two best instructions disagree: {labels[0]} says"
        assert (said in s.why) == (first is not None and second is not None and first != second)


@pytest.mark.parametrize("max_calls", [0, 7, 40])
def test_judge_calls_stay_within_max_calls(improved, pool, max_calls):
    found = suggest(improved, pool, n=5, max_calls=max_calls)
    assert found.judge_calls <= max_calls
    if max_calls == 0:
        assert found.judged == 0
        assert all("not judged" in s.why for s in found.suggestions)


def test_without_a_bound_every_trace_is_judged_by_every_member(found):
    assert found.judged == found.pool_size
    assert all(v is not None for s in found.suggestions for v in s.verdicts.values())
    per_trace = len(found.committee) + 2  # members and two re-asks of the chosen
    calibration = found.calibration["samples"] * (2 + 2)  # chosen, runner-up, two re-asks
    assert found.judge_calls == found.pool_size * per_trace + calibration


def test_the_error_model_is_fitted_on_annotated_samples_and_ranks_by_the_chosen_judges_errors(improved, pool):
    found = suggest(improved, pool, n=24, calibration=10)
    assert found.calibration["samples"] == 10
    errors = [s.signals["error"] for s in found.suggestions]
    assert all(e is not None and 0.0 < e < 1.0 for e in errors)
    assert all(s.why.startswith("the chosen judge is wrong here with probability") for s in found.suggestions)
    assert "error model fitted on 10 annotated samples" in found.summary()
    values = [s.informativeness for s in found.suggestions]
    assert values[0] == max(values)  # the first pick is the most informative (MMR starts there)


def test_without_calibration_the_votes_alone_decide(improved, pool):
    found = suggest(improved, pool, n=5, calibration=0)
    assert found.calibration["samples"] == 0 and 0 < found.calibration["prior"] <= 0.5
    assert all(s.signals["error"] is not None for s in found.suggestions)
    assert "error model from the votes alone" in found.summary()
    with pytest.raises(ValueError, match="calibration must be >= 0"):
        suggest(improved, pool, n=5, calibration=-1)


def test_a_pool_trace_is_never_its_own_calibration_sample(improved, pool, found):
    assert found.already_annotated == found.pool_size == 24  # the pool is annotated samples
    assert found.calibration["samples"] == 40 - 24  # the others calibrate


def test_calibration_takes_at_most_a_quarter_of_the_bound(improved, pool):
    found = suggest(improved, pool, n=5, max_calls=200)
    assert found.judge_calls <= 200
    assert found.calibration["samples"] * 4 <= 200 // 4


def test_the_same_run_and_pool_give_the_same_suggestions(improved, pool, found):
    again = suggest(improved, pool, n=8)
    assert [s.to_dict() for s in again.suggestions] == [s.to_dict() for s in found.suggestions]


def test_an_annotated_trace_is_counted_and_named(improved, found):
    assert found.already_annotated == found.pool_size  # the pool is the run's own annotations
    assert all("already annotated" in s.why for s in found.suggestions)


def test_a_trace_missing_a_field_the_judge_needs_names_file_index_and_field(improved, pool, tmp_path):
    lines = pool.read_text().splitlines()
    broken = json.loads(lines[3])
    del broken["response"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], json.dumps(broken), *lines[4:]]) + "\n")
    with pytest.raises(AnnotationError) as err:
        suggest(improved, bad, n=2)
    assert err.value.sample_index == 3 and err.value.field == "response" and str(bad) in str(err.value)


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"n": 2, "max_calls": -1}, {"n": 2, "diversity": 1.5}])
def test_arguments_out_of_range_are_refused(improved, pool, kwargs):
    with pytest.raises(ValueError):
        suggest(improved, pool, **kwargs)


def test_a_ragas_annotation_file_is_a_pool_and_its_labels_are_ignored(kept_seed, tmp_path):
    found = suggest(kept_seed, AC_FILE, n=3)
    data = json.loads(AC_FILE.read_text())
    flipped = tmp_path / "flipped.json"
    for sample in data["answer_correctness"]:
        sample["metric_output"] = 1 - sample["metric_output"]
        sample["is_accepted"] = not sample["is_accepted"]
    flipped.write_text(json.dumps(data))
    assert [s.to_dict() for s in suggest(kept_seed, flipped, n=3).suggestions] == [
        s.to_dict() for s in found.suggestions
    ]
    assert "simulated LLM" in found.llm


def test_committee_of_a_result_without_lineage_or_checkpoint_is_chosen_and_seed(tmp_path):
    result = {
        "best_id": 3,
        "seed_instructions": {"p": "seed"},
        "best_instructions": {"p": "best"},
        "final_choice": {"finalists": [{"id": 3, "delta": 0.1}]},
    }
    members = committee_of(tmp_path, result, [], size=6)
    assert [(m.candidate, m.role) for m in members] == [(3, "chosen"), (0, "seed")]


def test_cli_writes_json_lines_and_a_summary(improved, pool, tmp_path, capsys):
    out = tmp_path / "next.jsonl"
    assert (
        main(
            ["suggest", str(improved), "--pool", str(pool), "-n", "3", "--max-calls", "30", "--out", str(out)]
        )
        == 0
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 3 and all("why" in line for line in lines)
    assert all(line["simulated"] is True for line in lines)  # the run's LLM: provider fake
    err = capsys.readouterr().err
    assert "suggested 3 of" in err and "of at most 30" in err
    assert main(["suggest", str(improved), "--pool", str(pool), "-n", "2", "--calibration", "0"]) == 0
    assert "error model from the votes alone" in capsys.readouterr().err


def test_cli_refuses_n_zero_as_a_usage_error(improved, pool, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["suggest", str(improved), "--pool", str(pool), "-n", "0"])
    assert exit_.value.code == 2


def test_cli_bad_pool_is_one_line_and_exit_1(improved, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"user_input": "q", "response": "a", "reference": "r"}\n[1, 2]\n')
    assert main(["suggest", str(improved), "--pool", str(bad), "-n", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sample 1" in err[0] and str(bad) in err[0]


def _judge_over_http(body: dict) -> str:
    """A judge behind a real OpenAI-compatible server: verdict 1 when the trace's response says
    "good", 0 otherwise (temperature above 0 flips "maybe" traces); malformed for "BROKEN"."""
    text = " ".join(str(m["content"]) for m in body["messages"])
    if "BROKEN" in text:
        return "this is not JSON"
    verdict = int("good" in text)
    if "maybe" in text and float(body.get("temperature") or 0.0) > 0.0:
        verdict = 1 - verdict
    return json.dumps({"reason": "because", "verdict": verdict})


def test_over_http_failed_evaluations_are_counted_never_verdicts(improved, tmp_path, monkeypatch):
    from promptevolver.testing import LocalOpenAIServer

    responses = ["good answer", "bad answer", "BROKEN answer", "good but maybe", "bad", "good too"]
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"user_input": "q", "response": r}) + "\n" for r in responses))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with LocalOpenAIServer(_judge_over_http, models=["m"]) as server:
        overrides = {"provider": "openai", "model": "m", "base_url": server.base_url, "cache": None}

        def edit(raw: dict) -> dict:
            return {**raw, "llm": {**raw["llm"], **overrides}, "reflection_llm": None}

        found = suggest(improved, pool, n=6, edit=edit, max_calls=60)
    assert found.judge_calls <= 60
    by_index = {s.index: s for s in found.suggestions}
    broken = by_index[2]
    assert all(v is None for v in broken.verdicts.values()) and broken.reasks == []
    assert "not judged" in broken.why
    # the two best members failed on it; no further call is spent on a trace the chosen cannot judge
    assert found.failed == 2 and found.judged == len(responses) - 1
    assert by_index[3].signals["instability"] == 1.0  # "maybe" flips at temperature 1.0
    assert "the chosen judge is unstable: it says 1, asked again 0, 0" in by_index[3].why
    assert all((s.signals["error"] is None) == (s.index == 2) for s in found.suggestions)
    assert {v for s in found.suggestions for v in s.verdicts.values()} <= {0.0, 1.0, None}
    assert "openai model m" in found.llm


def test_a_classification_runs_judge_answers_class_names_on_the_simulated_llm(tmp_path):
    """``suggest`` and ``judge_chosen`` (the review page's chosen judge) build the run's simulated
    LLM with its judge's label scale, as ``optimize`` does: a classification judge's answers are
    class names it recognises (before, every evaluation failed with 'does not recognise this
    prompt', and a pool could not be ranked)."""
    from promptevolver.runs.suggest import judge_chosen

    from ..rundirs import optimize_into

    names = ["refund", "question", "complaint"]
    samples = [
        {
            "metric_input": {"user_input": f"ticket {i}: " + ["my money back", "how do I", "awful"][i % 3]},
            "metric_output": i % 3,
            "is_accepted": True,
            "prompts": {
                "single_turn_classification_prompt": {
                    "prompt_input": {},
                    "prompt_output": {"reason": "it reads so", "label": names[i % 3]},
                }
            },
        }
        for i in range(30)
    ]
    data = tmp_path / "tickets.json"
    data.write_text(json.dumps({"tickets": samples}))
    metric = {"type": "classification", "name": "tickets", "definition": "What the ticket is"}
    metric["labels"] = names
    run = optimize_into(
        tmp_path / "run",
        {"dataset": str(data), "metric": metric, "loss": {"type": "classification"}, "random_seed": 0},
    )
    traces = [s["metric_input"] for s in samples[:6]]
    chosen = judge_chosen(run, traces)
    assert [j.error for j in chosen.judgements] == [None] * 6
    assert {j.score for j in chosen.judgements} <= {0.0, 1.0, 2.0}
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"user_input": "ticket 99: my money back"}) + "\n")
    found = suggest(run, pool, n=1)
    assert found.failed == 0 and found.suggestions[0].verdicts
