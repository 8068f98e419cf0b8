"""What a report knows about a run (report/_data.py): per-sample verdicts from the recorded
judgements (failed evaluations counted apart, never as verdicts), re-judging with the free
simulated judge only, lineage and word diffs."""

from __future__ import annotations

import json

import pytest
import yaml

from promptevolver import Judgement
from promptevolver.errors import RunDirError
from promptevolver.report import _data as data
from promptevolver.report._data import ReportError, lineage, load_judgements, load_run, word_diff
from promptevolver.report._write import build_report

from ..rundirs import copy_run, result_of


def test_per_sample_figures_reproduce_the_runs_scores(improved):
    facts, result = load_run(improved), result_of(improved)
    for who in ("seed", "best"):
        for split in ("train", "validation"):
            a = facts.agreements[(who, split)]
            assert a.n == result["split"][split]
            assert a.accuracy == pytest.approx(result["scores"][who][split])
            assert sum(map(sum, a.confusion)) == a.n
            assert a.f1 is not None and -1 <= (a.cohen_kappa or 0) <= 1
            assert facts.failed[(who, split)] == []
    assert not facts.notes


def test_disagreements_are_the_off_diagonal_samples_with_the_humans_reasons(improved):
    facts = load_run(improved)
    (_, fp), (fn, _) = facts.agreements[("best", "validation")].confusion
    found = facts.disagreements("validation")
    assert len(found) == fp + fn > 0
    assert all(d.verdict != d.label for d in found)
    edited = [d for d in found if d.human_action == "edited"]
    assert edited and all(d.human_reason for d in edited)
    md = (improved / "report.md").read_text()
    assert f"Validation: {len(found)} of {facts.agreements[('best', 'validation')].n} samples disagree." in md
    assert edited[0].human_reason in md


def test_lineage_starts_at_the_best_and_reaches_its_ancestors():
    result = {
        "best_id": 4,
        "lineage": [
            {"id": i, "generation": g, "operator": op, "parents": ps, "train": 0.5, "validation": None}
            for i, g, op, ps in [
                (0, 0, "seed", []),
                (1, 0, "reverse_engineer", []),
                (2, 1, "mutation", [0]),
                (3, 1, "mutation", [1]),
                (4, 2, "crossover", [2, 3]),
            ]
        ],
    }
    steps = lineage(result)
    assert [s.id for s in steps] == [4, 2, 3, 0, 1]
    assert [s.depth for s in steps] == [0, 1, 1, 2, 2]


def test_lineage_takes_unmeasured_scores_as_none():
    result = {"best_id": 0, "lineage": [{"id": 0, "generation": 0, "operator": "seed", "parents": []}]}
    (step,) = lineage(result)
    assert (step.train, step.validation, step.feedback) == (None, None, [])


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("Judge the answer.", "Judge the answer strictly."),
        ("a b c\nd e", "a x c\nd e f"),
        ("", "new text"),
        ("same", "same"),
    ],
)
def test_word_diff_rebuilds_both_texts(before, after):
    runs = word_diff(before, after)

    def words(ops: set[str]) -> list[str]:
        return " ".join(t for op, t in runs if op in ops).split()

    assert words({"equal", "delete"}) == before.split()
    assert words({"equal", "insert"}) == after.split()


# --- recorded judgements and failures ----------------------------------------------------------------


def _failing(positions: set[int], monkeypatch) -> None:
    """Make the recorded judgements at ``positions`` failures (score None, with their cause)."""
    recorded = load_judgements

    def with_failures(run_dir):
        return {
            (key, p): Judgement(score=None, reason="", error="HTTP 500 after 8 attempts")
            if p in positions
            else j
            for (key, p), j in recorded(run_dir).items()
        }

    monkeypatch.setattr(data, "load_judgements", with_failures)


def test_failed_evaluations_are_counted_apart_not_as_wrong_verdicts(improved, monkeypatch):
    validation = result_of(improved)["split"]["validation_positions"]
    before = load_run(improved)
    failed = set(validation[:3])
    _failing(failed, monkeypatch)
    facts = load_run(improved)
    for who in ("seed", "best"):
        a = facts.agreements[(who, "validation")]
        assert facts.failed[(who, "validation")] == sorted(failed)
        assert a.n == len(validation) - 3 and a.failures == 0
        kept = [p for p in validation if p not in failed]
        judged = before.judgements[(who, "validation")]
        right = sum(judged[p].score == facts.labels[p] for p in kept)
        assert a.accuracy == pytest.approx(right / len(kept))
    assert all(d.position not in failed for d in facts.disagreements("validation"))


def test_every_validation_evaluation_failed_gives_no_figure(improved, monkeypatch):
    validation = set(result_of(improved)["split"]["validation_positions"])
    _failing(validation, monkeypatch)
    facts = load_run(improved)
    assert ("best", "validation") not in facts.agreements and ("seed", "validation") not in facts.agreements
    assert facts.failed[("best", "validation")] == sorted(validation)
    assert facts.disagreements("validation") == []
    assert ("best", "train") in facts.agreements


def test_load_judgements_reads_every_recorded_verdict(improved):
    recorded = load_judgements(improved)
    result = result_of(improved)
    positions = {p for (_, p) in recorded}
    assert set(result["split"]["validation_positions"]) <= positions
    assert all(isinstance(j, Judgement) for j in recorded.values())


def test_an_unreadable_checkpoint_is_a_note_not_a_crash(improved, tmp_path):
    run = copy_run(improved, tmp_path)
    state = json.loads((run / "checkpoint.json").read_text())
    (run / "checkpoint.json").write_text(json.dumps({**state, "version": 99}))
    with pytest.raises(RunDirError, match="checkpoint.json: checkpoint format version 99"):
        load_judgements(run)
    facts = load_run(run)  # the simulated run is re-judged instead
    assert any("checkpoint format version 99" in note for note in facts.notes)
    assert facts.agreements[("best", "validation")].accuracy == pytest.approx(
        result_of(run)["scores"]["best"]["validation"]
    )


# --- degraded inputs --------------------------------------------------------------------------------


def test_without_a_checkpoint_the_simulated_run_is_rejudged(improved, tmp_path):
    run = copy_run(improved, tmp_path)
    (run / "checkpoint.json").unlink()
    facts = load_run(run)
    assert facts.agreements[("best", "validation")].accuracy == pytest.approx(
        result_of(run)["scores"]["best"]["validation"]
    )


def test_a_paid_llm_is_never_called_to_fill_missing_verdicts(improved, tmp_path, monkeypatch):
    run = copy_run(improved, tmp_path)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["llm"] = {"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "PE_TEST_NO_SUCH_KEY"}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    recorded = load_run(run)  # the final checkpoint holds the validation verdicts: no call needed
    assert ("best", "validation") in recorded.agreements and ("best", "train") in recorded.agreements
    validation = set(result_of(run)["split"]["validation_positions"])
    everything = load_judgements(run)
    monkeypatch.setattr(
        data, "load_judgements", lambda _: {k: j for k, j in everything.items() if k[1] not in validation}
    )
    facts = load_run(run)
    assert ("best", "validation") not in facts.agreements  # not recorded, not re-judged
    assert ("best", "train") in facts.agreements  # from the checkpoint
    assert any("provider openai" in note for note in facts.notes)
    md = build_report(facts).markdown
    assert "Per-sample validation verdicts are not available." in md


def test_a_directory_without_a_result_is_a_run_dir_error(tmp_path):
    with pytest.raises(ReportError, match=r"not a run directory \(no result.json in it\)"):
        load_run(tmp_path)
    assert ReportError is RunDirError  # release 0.1's name for it
