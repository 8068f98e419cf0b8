"""``promptevolver import mlflow`` against a real MLflow server (tests/integrations/conftest.py):
the traces that carry a judge's and a human's feedback become annotations, the others are counted."""

from __future__ import annotations

import json
import math

import pytest

from promptevolver import SingleMetricAnnotation
from promptevolver.cli import main

from .conftest import EXPERIMENT, FEEDBACK
from .mlflow_server import NOT_INSTALLED, free_port

mlflow = pytest.importorskip("mlflow", reason=NOT_INSTALLED)


def _import(server, out, *extra: str) -> int:
    return main(
        [
            "import", "mlflow",
            "--tracking-uri", server.uri,
            "--experiment", EXPERIMENT,
            "--assessment", FEEDBACK,
            "--output", str(out),
            "--field", "user_input=question",
            *extra,
        ]
    )  # fmt: skip


def test_every_trace_with_both_feedbacks_is_a_sample_with_the_humans_label(
    mlflow_server, labelled, labelled_set, tmp_path, capsys
):
    out = tmp_path / "labels.json"
    assert _import(mlflow_server, out) == 0
    printed = capsys.readouterr()
    imported = SingleMetricAnnotation.from_json(out)
    assert imported.name == FEEDBACK and imported.kind == "binary"
    assert len(imported) == 24
    rows = json.loads(out.read_text())[FEEDBACK]
    assert sorted(row["source"]["trace_id"] for row in rows) == sorted(labelled.trace_ids)
    logged = dict(zip(labelled.trace_ids, labelled_set.samples))
    for row, label, sample in zip(rows, imported.labels(), imported.samples):
        theirs = logged[row["source"]["trace_id"]]
        assert label == theirs.human_label(binary=True)  # the human's label of the trace
        assert sample.metric_input == theirs.metric_input  # question -> user_input; output, expectation
    assert {s["annotator"] for s in json.loads(out.read_text())[FEEDBACK]} == {
        "reviewer-0",
        "reviewer-1",
        "reviewer-2",
    }
    assert "imported 24 samples of 'correctness'" in printed.out
    assert "2 traces with only the judge's label" in printed.err
    assert "1 trace with only a human's label" in printed.err
    assert "searched 27 traces; 27 carry feedback of that name" in printed.err


def test_a_human_override_keeps_the_judges_verdict_and_gives_the_humans_reason(
    mlflow_server, labelled, labelled_set, tmp_path
):
    out = tmp_path / "labels.json"
    assert _import(mlflow_server, out, "--quiet") == 0
    logged = dict(zip(labelled.trace_ids, labelled_set.samples))
    rows = json.loads(out.read_text())[FEEDBACK]
    corrected = [
        (row, logged[row["source"]["trace_id"]])
        for row in rows
        if row["metric_output"] != logged[row["source"]["trace_id"]].human_label(binary=True)
    ]
    assert len(corrected) == 10  # each an override_feedback of the judge's
    for row, sample in corrected:
        prompt = next(iter(sample.prompts.values()))
        assert row["is_accepted"] is False
        assert row["metric_output"] == prompt.prompt_output["verdict"]  # the overridden judge feedback
        edited = row["prompts"]["single_turn_aspect_critic_prompt"].get("edited_output")
        if prompt.edited_output:
            assert edited["reason"] == prompt.edited_output["reason"]


def test_optimize_runs_on_the_imported_file(mlflow_server, labelled, tmp_path, capsys):
    out = tmp_path / "labels.json"
    assert _import(mlflow_server, out, "--quiet") == 0
    config = tmp_path / "judge.yaml"
    config.write_text(
        f"dataset: {out.name}\n"
        f"metric: {{type: aspect_critic, name: {FEEDBACK}, definition: 'Is it correct?'}}\n"
    )
    assert main(["optimize", str(config), "-o", str(tmp_path / "run"), "-q"]) == 0
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["metric"] == FEEDBACK
    best = result["scores"]["best"]
    honest = best["validation"] if best["validation"] is not None else best["cross_validated"]
    assert isinstance(honest, float) and not math.isnan(honest)  # the figure it was chosen on


def test_a_field_the_traces_lack_is_one_line_naming_the_trace_and_the_field(
    mlflow_server, labelled, tmp_path, capsys
):
    out = tmp_path / "labels.json"
    code = main(
        [
            "import", "mlflow", "--tracking-uri", mlflow_server.uri, "--experiment", EXPERIMENT,
            "--assessment", FEEDBACK, "-o", str(out), "--field", "user_input=query",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    trace = err[0].split("trace ", 1)[1].split(",", 1)[0]  # the first in import order
    assert trace in labelled.trace_ids
    assert f"trace {trace}, --field user_input=query: 'query' is not in it" in err[0]
    assert "'question'" in err[0]  # what the trace has
    assert not out.exists()


def test_an_unknown_experiment_lists_the_servers_experiments(mlflow_server, labelled, tmp_path, capsys):
    code = main(
        [
            "import", "mlflow", "--tracking-uri", mlflow_server.uri, "--experiment", "nope",
            "--assessment", FEEDBACK, "-o", str(tmp_path / "x.json"),
        ]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert "no experiment named 'nope'" in err and EXPERIMENT in err


def test_a_feedback_name_no_trace_carries_writes_nothing(mlflow_server, labelled, tmp_path, capsys):
    code = main(
        [
            "import", "mlflow", "--tracking-uri", mlflow_server.uri, "--experiment", EXPERIMENT,
            "--assessment", "politeness", "-o", str(tmp_path / "x.json"),
        ]
    )  # fmt: skip
    assert code == 1
    assert "nothing to import" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_names_match_as_mlflows_judge_alignment_matches_them(mlflow_server, labelled, tmp_path):
    out = tmp_path / "labels.json"
    code = main(
        [
            "import", "mlflow", "--tracking-uri", mlflow_server.uri, "--experiment", EXPERIMENT,
            "--assessment", " Correctness ", "-o", str(out), "--field", "user_input=question", "-q",
        ]
    )  # fmt: skip
    assert code == 0
    assert len(SingleMetricAnnotation.from_json(out)) == 24


@pytest.mark.parametrize("uri", ["http://127.0.0.1:{port}", "http://user:s3cret@127.0.0.1:{port}"])
def test_a_dead_server_is_one_line_without_credentials(tmp_path, capsys, uri):
    shown = uri.format(port=free_port())
    code = main(
        [
            "import", "mlflow", "--tracking-uri", shown, "--experiment", EXPERIMENT,
            "--assessment", FEEDBACK, "-o", str(tmp_path / "x.json"),
        ]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert "cannot connect" in err[0]
    assert "s3cret" not in err[0]


def test_scores_and_a_failed_judge_call_come_in_as_mlflow_holds_them(mlflow_server, tmp_path):
    """A 1-5 judge: the human's score is the label (target when they differ); a judge feedback
    that failed (an error, no value) is a failed judge call, never a score."""
    from .mlflow_server import _source, _trace, using

    judged = [(4, 4, "fine"), (2, 5, "far better than 2"), (None, 3, "judge timed out"), (5, 1, None)]
    with using(mlflow_server.uri):
        mlflow.set_experiment("scores")
        ids = [_trace(mlflow, {"user_input": f"q{i}"}, {"response": f"a{i}"}) for i in range(len(judged))]
        mlflow.flush_trace_async_logging()
        for tid, (judge, human, why) in zip(ids, judged):
            error = TimeoutError("the judge's call timed out") if judge is None else None
            source = _source("LLM_JUDGE", "gpt")
            mlflow.log_feedback(trace_id=tid, name="quality", value=judge, error=error, source=source)
            mlflow.log_feedback(
                trace_id=tid, name="quality", value=human, rationale=why, source=_source("HUMAN", "h")
            )
    out = tmp_path / "scores.json"
    code = main(
        [
            "import", "mlflow", "--tracking-uri", mlflow_server.uri, "--experiment", "scores",
            "--assessment", "quality", "-o", str(out), "-q",
        ]
    )  # fmt: skip
    assert code == 0
    data = SingleMetricAnnotation.from_json(out)
    assert data.kind == "numeric"
    raw = json.loads(out.read_text())["quality"]
    order = [ids.index(r["source"]["trace_id"]) for r in raw]  # traces of one millisecond: by id
    rows = [raw[order.index(i)] for i in range(len(judged))]
    labels = [data.labels()[order.index(i)] for i in range(len(judged))]
    assert labels == [4, 5, 3, 1]
    assert [r.get("target") for r in rows] == [None, 5, 3, 1]
    assert math.isnan(rows[2]["metric_output"]) and "timed out" in rows[2]["judge_error"]
    prompt = rows[1]["prompts"]["single_turn_simple_criteria_prompt"]
    assert prompt["prompt_output"] == {"score": 2}
    assert prompt["edited_output"] == {"reason": "far better than 2", "score": 5}
    assert rows[0]["metric_input"] == {"user_input": "q0", "response": "a0"}  # outputs by name
