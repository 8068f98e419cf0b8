"""The MLflow integration is optional: importing it never imports MLflow, and using it without MLflow
fails with the install command (both hold whether MLflow is installed or not)."""

from __future__ import annotations

import subprocess
import sys


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_importing_the_integration_and_the_commands_does_not_import_mlflow():
    code = (
        "import sys, promptevolver.integrations.mlflow, promptevolver.runs._import, "
        "promptevolver.runs._export_to, promptevolver.runs._optimize; print('mlflow' in sys.modules)"
    )
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_using_it_without_mlflow_names_the_extra_to_install():
    blocked = (
        "import sys; sys.modules['mlflow'] = None\n"
        "from promptevolver.integrations.mlflow import MlflowTracker\n"
        "MlflowTracker(experiment='x')"
    )
    out = _python(blocked)
    assert out.returncode == 1
    assert (
        'ImportError: the MLflow integration needs MLflow: pip install "promptevolver[mlflow]"' in out.stderr
    )


def test_import_mlflow_without_mlflow_is_one_line(tmp_path):
    blocked = (
        "import sys; sys.modules['mlflow'] = None\n"
        "from promptevolver.cli import main\n"
        "sys.exit(main(['import', 'mlflow', '--experiment', 'e', '--assessment', 'a',"
        f" '-o', r'{tmp_path / 'x.json'}']))"
    )
    out = _python(blocked)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip() == (
        'promptevolver: error: the MLflow integration needs MLflow: pip install "promptevolver[mlflow]"'
    )


def test_a_job_of_several_metrics_says_where_tracking_is_and_its_metric_folders_export(tmp_path, capsys):
    from promptevolver.cli import main

    from ..conftest import DATA

    config = tmp_path / "job.yaml"
    config.write_text(
        f"dataset: {DATA / 'two_metrics.json'}\n"
        "metrics: {answer_correctness: {definition: 'Correct?'}, helpfulness: {definition: 'Helpful?'}}\n"
    )
    with_tracking = tmp_path / "tracked.yaml"
    with_tracking.write_text(config.read_text() + "tracking: {mlflow: {experiment: x}}\n")
    assert main(["optimize", str(with_tracking), "-o", str(tmp_path / "no"), "-q"]) == 1
    assert "export DIR/<metric> --to mlflow" in capsys.readouterr().err
    assert main(["optimize", str(config), "-o", str(tmp_path / "job"), "-q"]) == 0
    capsys.readouterr()
    assert main(["export", str(tmp_path / "job" / "helpfulness"), "--to", "json", "-q"]) == 0
    assert '"metric": "helpfulness"' in capsys.readouterr().out


def test_export_to_mlflow_without_mlflow_is_one_line(tmp_path):
    from ..conftest import ROOT

    run, config = tmp_path / "run", ROOT / "configs" / "answer_correctness.yaml"
    blocked = (
        "import sys; sys.modules['mlflow'] = None\n"
        "from promptevolver.cli import main\n"
        f"assert main(['optimize', r'{config}', '-o', r'{run}', '-q']) == 0\n"
        f"sys.exit(main(['export', r'{run}', '--to', 'mlflow', '--tracking-uri', 'http://127.0.0.1:9',"
        " '--prompt-name', 'p']))"
    )
    out = _python(blocked)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        'promptevolver: error: the MLflow integration needs MLflow: pip install "promptevolver[mlflow]"'
    )
