"""The whole loop against a real MLflow server: traces with a judge's and a human's feedback ->
``import mlflow`` -> ``optimize`` -> ``export --to mlflow``; the prompt version loads back with
``mlflow.genai.load_prompt`` and is the chosen instruction, the run holds the figures. A CSV with the
usual columns round-trips the same way."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from promptevolver import SingleMetricAnnotation
from promptevolver.cli import main

from ..conftest import AC_FILE, ROOT
from .conftest import EXPERIMENT, FEEDBACK
from .mlflow_server import NOT_INSTALLED, free_port, using

mlflow = pytest.importorskip("mlflow", reason=NOT_INSTALLED)


def _optimize(tmp_path: Path, dataset: Path, metric: str, *extra: str) -> Path:
    config = tmp_path / f"{metric}.yaml"
    config.write_text(
        f"dataset: {dataset}\nmetric: {{type: aspect_critic, name: {metric}, definition: 'Is it correct?'}}\n"
    )
    run = tmp_path / f"run-{metric}"
    assert main(["optimize", str(config), "-o", str(run), "-q", *extra]) == 0
    return run


def _load_prompt(uri: str, name: str, version: int):
    with using(uri):
        return mlflow.genai.load_prompt(f"prompts:/{name}/{version}")


def _check_export(server, run: Path, prompt: str, capsys) -> None:
    """``export RUN --to mlflow`` registered the chosen instruction and logged a run of its figures."""
    capsys.readouterr()
    code = main(["export", str(run), "--to", "mlflow", "--tracking-uri", server.uri, "--prompt-name", prompt])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"registered prompts:/{prompt}/")
    version = int(out.split(f"prompts:/{prompt}/", 1)[1].split()[0])
    result = json.loads((run / "result.json").read_text())
    (instruction,) = result["best_instructions"].values()
    loaded = _load_prompt(server.uri, prompt, version)
    assert loaded.template == instruction  # the chosen instruction as is
    assert f"promptevolver run {run.name}" in loaded.commit_message
    best = result["scores"]["best"]
    if best["validation"] is not None:
        assert f"validation {best['validation']:.3f}" in loaded.commit_message
    else:  # small data: the figure it was chosen on is the cross-validated one
        assert f"cross-validated {best['cross_validated']:.3f} over 2 folds" in loaded.commit_message
    assert "DRY RUN on the simulated LLM" in loaded.commit_message
    client = mlflow.MlflowClient(server.uri)
    logged = client.get_run(loaded.tags["promptevolver.mlflow_run"])
    assert logged.info.status == "FINISHED"
    metrics = logged.data.metrics
    for split in ("train", "validation", "cross_validated"):  # as measured; n/a ones not logged
        assert metrics.get(f"chosen_{split}_accuracy") == result["scores"]["best"].get(split)
    assert metrics["seed_train_accuracy"] == result["scores"]["seed"]["train"]
    assert metrics["judge_calls"] == result["usage"]["llm_calls"]["judge"]
    assert logged.data.params["metric.name"] == result["metric"]
    assert logged.data.tags["promptevolver.cost"].startswith("none: the simulated LLM answered")
    files = {f.path for f in client.list_artifacts(logged.info.run_id)}
    assert {"result.json", "report.md", "report.html", "samples.jsonl", "chosen_judge.json"} <= files
    downloaded = Path(client.download_artifacts(logged.info.run_id, "chosen_judge.json", str(run.parent)))
    chosen = json.loads(downloaded.read_text())
    assert chosen["instructions"] == result["best_instructions"]
    assert len(chosen["shown_examples"]) == int(loaded.tags["promptevolver.examples"])
    assert loaded.tags["promptevolver.chosen_judge"] == f"runs:/{logged.info.run_id}/chosen_judge.json"


def test_traces_to_a_registered_prompt_version_and_back(mlflow_server, labelled, tmp_path, capsys):
    annotations = tmp_path / "labels.json"
    code = main(
        [
            "import", "mlflow", "--tracking-uri", mlflow_server.uri, "--experiment", EXPERIMENT,
            "--assessment", FEEDBACK, "-o", str(annotations), "--field", "user_input=question", "-q",
        ]
    )  # fmt: skip
    assert code == 0
    assert len(SingleMetricAnnotation.from_json(annotations)) == 24
    run = _optimize(tmp_path, annotations, FEEDBACK)
    _check_export(mlflow_server, run, "correctness-judge", capsys)


def test_a_csv_with_the_usual_columns_round_trips_the_same_way(mlflow_server, tmp_path, capsys):
    rows = []
    for sample in SingleMetricAnnotation.from_json(AC_FILE).samples:
        prompt = next(iter(sample.prompts.values()))
        rows.append(
            {
                **sample.metric_input,
                "judge_verdict": int(sample.metric_output),
                "judge_reason": prompt.prompt_output["reason"],
                "human_verdict": int(sample.human_label(binary=True)),
                "human_reason": (prompt.edited_output or {}).get("reason", ""),
            }
        )
    source = tmp_path / "labels.csv"
    with source.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    annotations = tmp_path / "ac.json"
    assert (
        main(["import", "csv", str(source), "-o", str(annotations), "--metric", "answer_correctness", "-q"])
        == 0
    )
    run = _optimize(tmp_path, annotations, "answer_correctness")
    _check_export(mlflow_server, run, "ac-judge", capsys)


def test_each_export_is_a_new_version_of_the_prompt(mlflow_server, tmp_path, capsys):
    annotations = tmp_path / "ac.json"
    annotations.write_bytes(AC_FILE.read_bytes())
    run = _optimize(tmp_path, annotations, "answer_correctness")
    versions = []
    for _ in range(2):
        assert (
            main(
                [
                    "export",
                    str(run),
                    "--to",
                    "mlflow",
                    "--tracking-uri",
                    mlflow_server.uri,
                    "--prompt-name",
                    "twice",
                ]
            )
            == 0
        )
        versions.append(int(capsys.readouterr().out.split("prompts:/twice/", 1)[1].split()[0]))
    assert versions[1] == versions[0] + 1
    assert not (Path.cwd() / "mlflow.db").exists()  # MLflow's registry linked the run through our server


def test_a_judge_of_two_prompts_registers_one_version_of_each(mlflow_server, tmp_path, capsys):
    run = tmp_path / "faith"
    assert (
        main(["optimize", str(ROOT / "configs" / "faithfulness_statements.yaml"), "-o", str(run), "-q"]) == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "export",
                str(run),
                "--to",
                "mlflow",
                "--tracking-uri",
                mlflow_server.uri,
                "--prompt-name",
                "faith",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    instructions = json.loads((run / "result.json").read_text())["best_instructions"]
    assert len(instructions) == 2
    for prompt, text in instructions.items():
        assert f"prompts:/faith.{prompt}/1" in out
        assert _load_prompt(mlflow_server.uri, f"faith.{prompt}", 1).template == text
    logged = out.split("logged run ")[1].split()[0]
    metrics = mlflow.MlflowClient(mlflow_server.uri).get_run(logged).data.metrics
    best = json.loads((run / "result.json").read_text())["scores"]["best"]
    honest = "validation" if best.get("validation") is not None else "cross_validated"
    assert metrics[f"chosen_{honest}_mse"] == best[honest]  # the figure it was chosen on


def test_a_dead_server_is_one_line_and_nothing_is_half_registered(tmp_path, capsys):
    annotations = tmp_path / "ac.json"
    annotations.write_bytes(AC_FILE.read_bytes())
    run = _optimize(tmp_path, annotations, "answer_correctness")
    uri = f"http://127.0.0.1:{free_port()}"
    assert main(["export", str(run), "--to", "mlflow", "--tracking-uri", uri]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"promptevolver: error: MLflow tracking server {uri}: logging the chosen judge")
    assert "cannot connect" in line
