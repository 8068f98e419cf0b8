"""A run whose judge fails on some samples says so in its report, whatever the regime: the seed kept
on small data (nothing held out, the seed judged on every usable annotation) shows how many samples
were judged and how many failed — never "? of N", never 0 failed — and its outcome names what it
was measured on, not "held-out validation samples" it does not have. And a model nothing prices
costs an unknown amount, never $0.0000.

Real parts: the OpenAI client over HTTP against the local server answering with the simulated judge,
which answers unparseable text for two samples' judge calls every time (retried, then recorded as
failures with their cause).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from promptevolver import SingleMetricAnnotation
from promptevolver.cli import main
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.rundir import read_result
from promptevolver.testing import LocalOpenAIServer, simulated_handler

from ..conftest import HELP_FILE as DATA

KEY = "sk-test-failed-evals-0123456789abcdef"


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _run_judge_failing_on(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: Path,
    metric: dict,
    broken: list[str],
    optimizer: dict,
    *,
    random_seed: int,
) -> Path:
    """``optimize`` of ``data`` over HTTP against the simulated judge, which answers unparseable
    text to every judge call whose prompt holds one of ``broken``; the run directory."""
    answer = simulated_handler(
        SimulatedJudgeLLM(dataset=SingleMetricAnnotation.from_json(data), random_seed=random_seed)
    )

    def handler(body):
        text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        if "Output format" in text and any(b in text for b in broken):  # a judge call
            return "this is not a verdict"
        return answer(body)

    monkeypatch.setenv("FAILED_EVALS_KEY", KEY)
    with LocalOpenAIServer(handler, models=["sim"]) as server:
        config = {
            "dataset": str(data),
            "metric": metric,
            "llm": {
                "provider": "openai",
                "model": "sim",
                "base_url": server.base_url,
                "api_key_env": "FAILED_EVALS_KEY",
                "max_attempts": 2,
                "cache": None,  # the suite's shared response cache may hold other runs' "sim" answers
            },
            "optimizer": optimizer,
            "random_seed": random_seed,
        }
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(config))
        run = tmp_path / "run"
        assert main(["optimize", str(path), "--output", str(run), "-q"]) == 0
    return run


def test_a_kept_seed_s_failed_evaluations_are_counted_in_the_report(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    dataset = SingleMetricAnnotation.from_json(DATA)
    # a line of each of two responses no other sample holds (plain ASCII: the prompt shows it as is)
    broken = ["Norway might be the better choice if you", "Everyone agrees that Sweden is better."]
    assert [sum(b in s.metric_input["response"] for s in dataset) for b in broken] == [1, 1]
    metric = {"name": "helpfulness", "definition": "Is the response helpful to the user?"}
    # the seed judged on every sample (not on a draw with the recorded verdicts standing in for the
    # others): its picture is whole, and both broken samples are judged
    optimizer = {"population_size": 4, "generations": 0, "seed_judged_share": 1.0}
    run = _run_judge_failing_on(tmp_path, monkeypatch, DATA, metric, broken, optimizer, random_seed=1)
    summary = capsys.readouterr().out.splitlines()[0]
    result = read_result(run)
    if result["best_id"] != 0 or result["split"]["regime"] != "out-of-bag":
        pytest.fail(f"the run was to keep the seed on small data: best {result['best_id']}")
    seed = next(c for c in result["lineage"] if c["id"] == 0)
    assert seed["failures"] == 2 and result["usage"]["failures_by_cause"].get("parse") == 2
    assert "(2 failed after retries: parse 2)" in summary  # the summary line says so, with the cause
    md = (run / "report.md").read_text()
    rows = [
        line.split(" | ")
        for line in _section(md, "Seed vs best").splitlines()
        if line.startswith(("| original", "| optimized"))
    ]
    n = result["split"]["train"]
    assert rows and all(r[2] == f"{n - 2} of {n}" and r[-1].strip(" |") == "2" for r in rows), rows
    outcome = _section(md, "Outcome")
    assert "held-out validation samples" not in outcome
    assert f"on all {n} usable annotations" in outcome
    assert f"of {n - 2} judged samples (2 failed evaluations left out)." in outcome  # counted once
    unknown = "an unknown amount (no price for 'sim': set llm.prices"
    assert unknown in outcome and f"- cost: {unknown}" in md and "$0.0000" not in md


def test_a_cross_validated_run_s_failed_evaluations_are_counted_not_hidden(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """Small data, the refit chosen: the seed was judged once on every sample and each fold's
    candidate once on its fold's, so a sample without a recorded verdict is a failed evaluation of
    whoever judged it there. The report counted neither picture ("? of 18", n/a) and samples.jsonl
    said no sample was judged, whatever the failures' number (a newcomer's real small model)."""
    from ..conftest import AC_DEFINITION, AC_FILE

    dataset = SingleMetricAnnotation.from_json(AC_FILE)
    responses = [s.metric_input["response"] for s in dataset]
    broken = [r[:40] for r in responses if sum(r[:40] in x for x in responses) == 1][:2]
    assert len(broken) == 2
    metric = {"name": "answer_correctness", "definition": AC_DEFINITION}
    optimizer = {"generations": 0, "seed_judged_share": 1.0}  # the seed's whole picture: every sample
    run = _run_judge_failing_on(tmp_path, monkeypatch, AC_FILE, metric, broken, optimizer, random_seed=42)
    result = read_result(run)
    if result["best_id"] == 0 or result["final_choice"].get("regime") != "cross-validated":
        pytest.fail(f"the run was to choose the refit on small data: {result['final_choice'].get('why')}")
    failures = {c["id"]: c.get("failures") or 0 for c in result["lineage"]}
    judged_by = {int(p): c for p, c in result["final_choice"]["judged_by"].items()}
    n = len(judged_by)
    md = (run / "report.md").read_text()
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")
        for line in _section(md, "Seed vs best").splitlines()
        if line.startswith(("| original", "| optimized"))
    }
    assert rows["original (seed)"][2] == f"{n - failures[0]} of {n}" and failures[0] == 2
    assert rows["original (seed)"][-1].strip(" |") == "2"
    best_failed = 2  # the broken samples fail for whichever candidate judged them there
    assert rows["optimized (best)"][2] == f"{n - best_failed} of {n}"
    assert rows["optimized (best)"][-1].strip(" |") == str(best_failed)
    samples = [__import__("json").loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
    assert sum(s["judged"]["seed"] for s in samples) == n
    assert sorted(s["position"] for s in samples if "seed" in s["failures"]) == sorted(
        i for i, r in enumerate(responses) if any(b in r for b in broken)
    )
