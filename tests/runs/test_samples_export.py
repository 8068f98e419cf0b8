"""samples.jsonl in every run directory and evaluate --samples-out: one line per usable
annotation with its input, the human's label and reason, the verdicts and reasons, failures."""

from __future__ import annotations

import json

import pytest
import yaml

from promptevolver import Judgement, SingleMetricAnnotation
from promptevolver.cli import main
from promptevolver.rundir import SAMPLES_FILE
from promptevolver.runs._export import scorecard_rows

from ..conftest import ROOT
from ..rundirs import AC_CONFIG, result_of

KEYS = [
    "position",
    "split",
    "metric_input",
    "human",
    "human_reason",
    "seed_verdict",
    "seed_reason",
    "best_verdict",
    "best_reason",
    "simulated_llm",
    "judged",
    "failures",
]


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("run", ["kept_seed", "improved"])
def test_every_run_writes_one_line_per_usable_annotation(run, request):
    directory = request.getfixturevalue(run)
    result = result_of(directory)
    rows = _rows(directory / SAMPLES_FILE)
    assert all(list(r) == KEYS for r in rows)
    split = result["split"]
    assert len(rows) == split["train"] + split["validation"] if split["regime"] == "held-out" else True
    assert [r["position"] for r in rows] == sorted(r["position"] for r in rows)
    validation = [r for r in rows if r["split"] == "validation"]
    assert sorted(r["position"] for r in validation) == sorted(split["validation_positions"])
    judged = [r for r in validation if r["judged"]["best"]]
    assert judged and all(r["best_verdict"] in (0.0, 1.0) and r["best_reason"] for r in judged)
    assert all(r["failures"] == {} for r in rows)  # the simulated judge never fails
    assert all(r["simulated_llm"] is True for r in rows) and result["simulated_llm"] is True


def test_the_export_agrees_with_the_result_of_a_small_run(tmp_path):
    """The bundled 18 annotations (out of bag, every sample judged): the validation rows' best
    verdicts give the result's validation accuracy; the seed's and best's reasons are both kept."""
    from ..rundirs import ac_run

    run = ac_run(tmp_path)
    result, rows = result_of(run), _rows(run / SAMPLES_FILE)
    assert len(rows) == 18 and all(r["judged"] == {"seed": True, "best": True} for r in rows)
    validation = [r for r in rows if r["split"] == "validation"]
    agree = sum(r["best_verdict"] == r["human"] for r in validation) / len(validation)
    assert agree == pytest.approx(result["scores"]["best"]["validation"])
    assert any(r["seed_verdict"] != r["best_verdict"] and r["seed_reason"] != r["best_reason"] for r in rows)


def test_evaluate_writes_the_samples_it_scored(kept_seed, tmp_path, capsys):
    out = tmp_path / "scored.jsonl"
    argv = [
        "evaluate",
        str(AC_CONFIG),
        "-i",
        str(kept_seed),
        "--split",
        "all",
        "--json",
        "--samples-out",
        str(out),
    ]
    assert main(argv) == 0
    card = json.loads(capsys.readouterr().out)
    rows = _rows(out)
    assert len(rows) == card["n"] + card["failures"] == 18
    assert all(r["split"] == "all" and r["judged"] == {"judge": True} for r in rows)
    assert sum(r["verdict"] == r["human"] for r in rows) / len(rows) == pytest.approx(card["accuracy"])


def test_a_failed_evaluation_is_a_cause_never_a_verdict():
    dataset = SingleMetricAnnotation.from_json(
        AC_CONFIG.parent.parent / "benchmarks/data/edited_chain_runs.json"
    )
    judged = {
        0: Judgement(score=None, error="answer was not JSON", cause="parse"),
        1: Judgement(score=1.0, reason="fine"),
    }
    rows = list(
        scorecard_rows(
            dataset, judged, [0, 1, 2], split="all", prompt_name="single_turn_aspect_critic_prompt"
        )
    )
    assert rows[0]["verdict"] is None and rows[0]["reason"] is None
    assert rows[0]["failures"] == {"judge": "parse: answer was not JSON"}
    assert rows[1]["verdict"] == 1.0 and rows[1]["failures"] == {}
    assert rows[2]["verdict"] is None and rows[2]["judged"] == {"judge": False}


def test_a_refit_s_rows_are_its_cross_validated_picture_naming_who_judged_each(tmp_path):
    """Small data, the refit chosen: every row is of the cross-validated picture (never
    "validation": nothing was held out, and the refit learned from every sample), and its best
    verdict is the fold candidate's that never learned from it, named in ``best_judged_by``; those
    verdicts give the result's cross-validated figure."""
    from ..rundirs import pipeline_run

    run = pipeline_run(tmp_path)
    result, rows = result_of(run), _rows(run / SAMPLES_FILE)
    if result["best_id"] == 0:
        pytest.fail(f"the run was to choose the refit: {result['final_choice']['why']}")
    judged_by = {int(p): c for p, c in result["final_choice"]["judged_by"].items()}
    assert [list(r) for r in rows] == [[*KEYS[:-3], "best_judged_by", *KEYS[-3:]]] * len(rows)
    assert {r["split"] for r in rows} == {"cross_validated"} and len(rows) == len(judged_by)
    assert {r["position"]: r["best_judged_by"] for r in rows} == judged_by
    agree = sum(r["best_verdict"] == r["human"] for r in rows) / len(rows)
    assert agree == pytest.approx(result["scores"]["best"]["cross_validated"])


def test_every_file_of_verdicts_or_an_instruction_says_when_the_simulated_llm_answered(tmp_path, capsys):
    """A newcomer found samples.jsonl, evaluate --samples-out, estimate --json and best_so_far.json
    silent on it (result.json, the report and the summary said so)."""
    from ..rundirs import ac_run

    run = ac_run(tmp_path)
    out = tmp_path / "scored.jsonl"
    assert main(["evaluate", str(AC_CONFIG), "-i", str(run), "--samples-out", str(out), "-q"]) == 0
    assert all(r["simulated_llm"] is True for r in _rows(out))
    assert json.loads((run / "best_so_far.json").read_text())["simulated_llm"] is True
    capsys.readouterr()
    assert main(["estimate", str(AC_CONFIG), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["simulated_llm"] is True
    model = {"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "PE_TEST_NO_SUCH_KEY"}
    config = tmp_path / "real.yaml"
    data = str(ROOT / "benchmarks" / "data" / "edited_chain_runs.json")
    config.write_text(
        yaml.safe_dump({**yaml.safe_load(AC_CONFIG.read_text()), "dataset": data, "llm": model})
    )
    assert main(["estimate", str(config), "--json"]) == 0  # no call: a model would answer
    assert json.loads(capsys.readouterr().out)["simulated_llm"] is False
