"""``promptevolver import csv|jsonl``: the usual columns round-trip into a Ragas annotation file that
optimize reads; every bad input is one line naming the file, the row (line) and the column."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from promptevolver import SingleMetricAnnotation
from promptevolver.cli import main

from ..conftest import AC_FILE

PROMPT = "single_turn_aspect_critic_prompt"


def _rows(dataset: SingleMetricAnnotation) -> list[dict[str, object]]:
    """The bundled answer_correctness annotations as a team's spreadsheet would hold them."""
    rows = []
    for i, sample in enumerate(dataset.samples):
        prompt = sample.prompts[PROMPT]
        judge = int(sample.metric_output)
        rows.append(
            {
                **sample.metric_input,
                "judge_verdict": ["no", "yes"][judge],
                "judge_reason": prompt.prompt_output["reason"],
                "human_verdict": int(sample.human_label(binary=True)),
                "human_reason": (prompt.edited_output or {}).get("reason", ""),
                "annotator": f"ann{i % 2}",
            }
        )
    return rows


def _write_csv(path: Path, rows: list[dict[str, object]], fields: list[str] | None = None) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields or list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def rows(ac_dataset) -> list[dict[str, object]]:
    return _rows(ac_dataset)


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_the_usual_columns_round_trip_into_a_file_optimize_runs_on(kind, rows, ac_dataset, tmp_path, capsys):
    source = (_write_csv if kind == "csv" else _write_jsonl)(tmp_path / f"labels.{kind}", rows)
    out = tmp_path / "ac.json"
    assert main(["import", kind, str(source), "-o", str(out), "--metric", "answer_correctness"]) == 0
    assert "imported 18 samples of 'answer_correctness' (binary" in capsys.readouterr().out
    imported = SingleMetricAnnotation.from_json(out)
    assert imported.labels() == ac_dataset.labels()
    assert [s.metric_input for s in imported.samples] == [s.metric_input for s in ac_dataset.samples]
    for mine, row in zip(imported.samples, rows):
        assert mine.prompts[PROMPT].prompt_output["reason"] == row["judge_reason"]
        edited = mine.prompts[PROMPT].edited_output
        assert (edited or {}).get("reason", "") == row["human_reason"]
        assert mine["annotator"] == row["annotator"]
    config = tmp_path / "ac.yaml"
    config.write_text(
        "dataset: ac.json\nmetric: {type: aspect_critic, name: answer_correctness, definition: 'Correct?'}\n"
    )
    assert main(["optimize", str(config), "-o", str(tmp_path / "run"), "-q"]) == 0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["metric"] == "answer_correctness"


def test_a_rejected_verdict_is_flipped_and_the_humans_reason_is_the_correction(rows, tmp_path):
    rows[0] = {**rows[0], "judge_verdict": "PASS", "human_verdict": "fail", "human_reason": "wrong city"}
    out = tmp_path / "ac.json"
    assert main(["import", "csv", str(_write_csv(tmp_path / "l.csv", rows)), "-o", str(out), "-q"]) == 0
    first = json.loads(out.read_text())["l"][0]
    assert (first["metric_output"], first["is_accepted"]) == (1, False)
    assert "target" not in first  # a binary verdict's label is the flipped one, as in Ragas exports
    assert first["prompts"][PROMPT]["edited_output"] == {"reason": "wrong city", "verdict": 0}
    assert first["source"] == {"file": "l.csv", "row": 2}


def test_scores_keep_the_humans_score_as_target(tmp_path):
    rows = [
        {"user_input": f"q{i}", "response": f"a{i}", "judge_score": j, "human_score": h}
        for i, (j, h) in enumerate([(4, 4), (2, 5), (3, "3.5"), (1, 1)])
    ]
    out = tmp_path / "s.json"
    assert main(["import", "csv", str(_write_csv(tmp_path / "s.csv", rows)), "-o", str(out), "-q"]) == 0
    data = SingleMetricAnnotation.from_json(out)
    assert data.kind == "numeric"
    assert data.labels() == [4, 5, 3.5, 1]
    sample = json.loads(out.read_text())["s"][1]
    assert "single_turn_simple_criteria_prompt" in sample["prompts"]  # the rubric judge's prompt
    assert sample["prompts"]["single_turn_simple_criteria_prompt"]["prompt_output"] == {"score": 2}


def test_other_column_names_are_read_with_column(rows, tmp_path):
    renamed = [
        {
            ("question" if k == "user_input" else "label" if k == "human_verdict" else k): v
            for k, v in r.items()
        }
        for r in rows
    ]
    source = _write_csv(tmp_path / "l.csv", renamed)
    out = tmp_path / "ac.json"
    code = main(
        ["import", "csv", str(source), "-o", str(out), "-q", "--column", "human_verdict=label",
         "--column", "user_input=question"]
    )  # fmt: skip
    assert code == 0
    first = SingleMetricAnnotation.from_json(out).samples[0]
    assert set(first.metric_input) == {"user_input", "response", "reference"}


def test_a_contexts_cell_holding_a_json_list_is_that_list(tmp_path):
    rows = [
        {"user_input": "q", "response": "a", "retrieved_contexts": '["one", "two"]', "judge_verdict": 1,
         "human_verdict": 1},
        {"user_input": "q2", "response": "a", "retrieved_contexts": "just one", "judge_verdict": 0,
         "human_verdict": 1},
    ]  # fmt: skip
    out = tmp_path / "c.json"
    assert main(["import", "csv", str(_write_csv(tmp_path / "c.csv", rows)), "-o", str(out), "-q"]) == 0
    samples = SingleMetricAnnotation.from_json(out).samples
    assert samples[0].metric_input["retrieved_contexts"] == ["one", "two"]
    assert samples[1].metric_input["retrieved_contexts"] == ["just one"]


def test_rows_with_only_one_of_the_two_labels_are_counted_not_dropped_silently(rows, tmp_path, capsys):
    rows[2] = {**rows[2], "human_verdict": ""}
    rows[4] = {**rows[4], "judge_verdict": ""}
    rows[5] = {**rows[5], "judge_verdict": ""}
    out = tmp_path / "ac.json"
    assert main(["import", "csv", str(_write_csv(tmp_path / "l.csv", rows)), "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert "imported 15 samples" in printed.out
    assert "not imported: 1 row with only the judge's label (row 4)" in printed.err
    assert "not imported: 2 rows with only a human's label (row 6, row 7)" in printed.err
    assert len(SingleMetricAnnotation.from_json(out)) == 15


# --- bad input: one line naming the file, the row and the column --------------------------------------


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("human_verdict", "maybe", "'maybe' is neither a verdict"),
        ("judge_verdict", "2x", "'2x' is neither a verdict"),
        ("judge_verdict", [1], "[1] is neither a verdict"),
    ],
)
def test_a_bad_label_names_the_row_and_column(kind, column, value, said, rows, tmp_path, capsys):
    if kind == "csv" and not isinstance(value, str):
        value = json.dumps(value)
        said = said.replace("[1]", "'[1]'")
    rows[6] = {**rows[6], column: value}
    source = (_write_csv if kind == "csv" else _write_jsonl)(tmp_path / f"l.{kind}", rows)
    assert main(["import", kind, str(source), "-o", str(tmp_path / "o.json")]) == 1
    where = "row 8" if kind == "csv" else "line 7"
    assert f"file {source}: {where}, column '{column}': {said}" in _error(capsys)
    assert not (tmp_path / "o.json").exists()


def test_verdict_words_beside_scores_ask_for_the_kind(rows, tmp_path, capsys):
    rows[3] = {**rows[3], "human_verdict": 4}
    assert (
        main(["import", "csv", str(_write_csv(tmp_path / "l.csv", rows)), "-o", str(tmp_path / "o.json")])
        == 1
    )
    line = _error(capsys)
    assert (
        "row 2, column 'judge_verdict': 'yes' is a verdict, but row 5, column 'human_verdict' holds the"
        in line
    )
    assert "the score '4': say which with --kind binary or --kind numeric" in line


def test_a_score_under_kind_binary_names_the_row_and_column(rows, tmp_path, capsys):
    rows[3] = {**rows[3], "human_verdict": "0.5"}
    source = _write_csv(tmp_path / "l.csv", rows)
    assert main(["import", "csv", str(source), "-o", str(tmp_path / "o.json"), "--kind", "binary"]) == 1
    assert "row 5, column 'human_verdict': '0.5' is not a verdict" in _error(capsys)


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
@pytest.mark.parametrize("missing", ["judge_verdict", "human_verdict"])
def test_a_missing_label_column_is_named_with_the_columns_present(kind, missing, rows, tmp_path, capsys):
    rows = [{k: v for k, v in r.items() if k != missing} for r in rows]
    source = (_write_csv if kind == "csv" else _write_jsonl)(tmp_path / f"l.{kind}", rows)
    assert main(["import", kind, str(source), "-o", str(tmp_path / "o.json")]) == 1
    line = _error(capsys)
    assert f"'{missing}' missing" in line and "user_input" in line and f"--column {missing}=" in line


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_both_missing_label_columns_are_named_in_one_error(kind, rows, tmp_path, capsys):
    """A file with neither label column is told so once, both named, not one a run."""
    rows = [{k: v for k, v in r.items() if k not in ("judge_verdict", "human_verdict")} for r in rows]
    source = (_write_csv if kind == "csv" else _write_jsonl)(tmp_path / f"l.{kind}", rows)
    assert main(["import", kind, str(source), "-o", str(tmp_path / "o.json")]) == 1
    line = _error(capsys)
    assert "'judge_verdict' and 'human_verdict' missing" in line
    assert "--column judge_verdict=" in line and "--column human_verdict=" in line


def test_a_column_named_by_column_that_is_not_there(rows, tmp_path, capsys):
    source = _write_csv(tmp_path / "l.csv", rows)
    assert (
        main(["import", "csv", str(source), "-o", str(tmp_path / "o.json"), "--column", "user_input=q"]) == 1
    )
    assert "--column user_input=q: no column 'q' in the file" in _error(capsys)


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_duplicate_row_names_both_rows_and_the_columns(kind, rows, tmp_path, capsys):
    rows.append(dict(rows[2]))
    source = (_write_csv if kind == "csv" else _write_jsonl)(tmp_path / f"l.{kind}", rows)
    assert main(["import", kind, str(source), "-o", str(tmp_path / "o.json")]) == 1
    line = _error(capsys)
    first, again = ("row 4", "row 20") if kind == "csv" else ("line 3", "line 19")
    assert f"{again} repeats {first}: the same inputs (columns user_input, response, reference)" in line


def test_the_same_inputs_from_two_annotators_are_two_samples(rows, tmp_path, capsys):
    rows.append({**rows[2], "annotator": "someone else"})
    out = tmp_path / "o.json"
    assert main(["import", "csv", str(_write_csv(tmp_path / "l.csv", rows)), "-o", str(out)]) == 0
    assert "1 input is labelled by several humans: one sample each" in capsys.readouterr().err
    assert len(SingleMetricAnnotation.from_json(out)) == 19


def test_a_row_of_more_cells_than_columns(rows, tmp_path, capsys):
    source = _write_csv(tmp_path / "l.csv", rows)
    lines = source.read_text().splitlines(keepends=True)
    lines[3] = lines[3].rstrip("\r\n") + ",extra\r\n"
    source.write_text("".join(lines))
    assert main(["import", "csv", str(source), "-o", str(tmp_path / "o.json")]) == 1
    assert "row 4: 9 cells, the header names 8 columns" in _error(capsys)


def test_a_header_naming_a_column_twice(tmp_path, capsys):
    source = tmp_path / "l.csv"
    source.write_text("user_input,judge_verdict,human_verdict,user_input\nq,1,1,q\n")
    assert main(["import", "csv", str(source), "-o", str(tmp_path / "o.json")]) == 1
    assert "row 1, column 'user_input': the header names it twice" in _error(capsys)


def test_a_jsonl_line_that_is_not_json(rows, tmp_path, capsys):
    source = _write_jsonl(tmp_path / "l.jsonl", rows)
    source.write_text(source.read_text() + "{not json\n")
    assert main(["import", "jsonl", str(source), "-o", str(tmp_path / "o.json")]) == 1
    assert "line 19: not valid JSON" in _error(capsys)


def test_an_existing_output_is_never_replaced_without_force(rows, tmp_path, capsys):
    source = _write_csv(tmp_path / "l.csv", rows)
    out = tmp_path / "o.json"
    out.write_text("mine")
    assert main(["import", "csv", str(source), "-o", str(out)]) == 1
    assert "exists; pass --force" in _error(capsys)
    assert out.read_text() == "mine"
    assert main(["import", "csv", str(source), "-o", str(out), "--force", "-q"]) == 0
    assert len(SingleMetricAnnotation.from_json(out)) == 18


def test_mlflow_options_on_a_file_are_a_usage_error(rows, tmp_path, capsys):
    source = _write_csv(tmp_path / "l.csv", rows)
    assert main(["import", "csv", str(source), "-o", str(tmp_path / "o.json"), "--experiment", "x"]) == 2
    assert "--experiment: for mlflow only" in _error(capsys)
    assert main(["import", "csv", "-o", str(tmp_path / "o.json")]) == 2
    assert main(["import", "mlflow", "-o", str(tmp_path / "o.json"), "--experiment", "x"]) == 2
    assert main(["import", "csv", str(source), "-o", str(tmp_path / "o.json"), "--column", "nope"]) == 2
    capsys.readouterr()


def test_the_written_file_is_what_every_reader_reads(rows, tmp_path):
    out = tmp_path / "ac.json"
    assert main(["import", "csv", str(_write_csv(tmp_path / "l.csv", rows)), "-o", str(out), "-q"]) == 0
    assert list(json.loads(out.read_text())) == ["l"]  # Ragas' shape: metric name -> samples
    assert AC_FILE.exists()


@pytest.mark.parametrize(("ours", "theirs"), [("user_input", "input"), ("response", "actual_output")])
def test_two_columns_of_one_judge_field_are_one_line_at_the_header(ours, theirs, tmp_path, capsys):
    source = tmp_path / "l.csv"
    source.write_text(f"{theirs},{ours},judge_verdict,human_verdict\nq,q2,1,1\n")
    assert main(["import", "csv", str(source), "-o", str(tmp_path / "o.json")]) == 1
    line = _error(capsys)
    assert f"row 1, columns '{theirs}' and '{ours}' are both the judge's '{ours}'" in line
