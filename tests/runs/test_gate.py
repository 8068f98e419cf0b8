"""The judge gate: `evaluate --fail-under` and `promptevolver.testing.assert_agreement`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promptevolver.cli import main
from promptevolver.errors import ConfigError
from promptevolver.evaluation._agreement import agreement, agreement_of
from promptevolver.judge._protocol import Judgement
from promptevolver.llm._fake import ScriptedLLM
from promptevolver.runs import _evaluate as evaluate
from promptevolver.runs._gate import check_gate, interval_of
from promptevolver.testing import assert_agreement

from ..rundirs import AC_CONFIG

RNG = np.random.default_rng(0)


def _binary(correct: int, wrong: int):
    return agreement([1.0] * (correct + wrong), [1.0] * correct + [0.0] * wrong, binary=True)


def _pairs(t, p):
    return list(zip(map(float, t), map(float, p)))


def test_the_gate_passes_at_the_threshold_and_fails_below_with_the_interval():
    a = _binary(17, 3)
    passed = check_gate(a, (), threshold=0.85, rng=RNG)
    assert passed.passed and passed.reason.startswith("judge gate passed: accuracy 0.850 >= 0.85 on 20")
    failed = check_gate(a, (), threshold=0.9, rng=RNG)
    assert not failed.passed
    assert (
        failed.reason == "judge gate failed: accuracy 0.850 < 0.9 on 20 samples (95% CI 0.640-0.948, Wilson)"
    )


def test_failures_fail_the_gate_unless_allowed():
    judged = {i: Judgement(1.0) for i in range(9)} | {9: Judgement(None, error="x", cause="parse")}
    a = agreement_of(judged, list(range(10)), [1.0] * 10, binary=True)
    strict = check_gate(a, (), threshold=0.5, rng=RNG)
    assert not strict.passed
    assert "1 of 10 evaluations failed (parse 1), more than the 0% allowed" in strict.reason
    assert check_gate(a, (), threshold=0.5, max_failure_rate=0.1, rng=RNG).passed


def test_nothing_measured_fails_with_n_a_and_the_causes():
    judged = {i: Judgement(None, error="x", cause="timeout") for i in range(3)}
    a = agreement_of(judged, [0, 1, 2], [1.0] * 3, binary=True)
    result = check_gate(a, (), threshold=0.5, max_failure_rate=0.9, rng=RNG)
    assert not result.passed and result.value is None and result.interval is None
    assert (
        result.reason == "judge gate failed: accuracy n/a: every one of the 3 evaluations failed (timeout 3)"
    )


def test_kappa_and_f1_get_a_bootstrap_interval_around_the_estimate():
    t, p = [1, 1, 1, 0, 0, 0, 1, 0, 1, 1] * 3, [1, 1, 0, 0, 0, 1, 1, 0, 1, 1] * 3
    a = agreement(t, p, binary=True)
    for figure in ("f1", "cohen_kappa"):
        interval = interval_of(a, figure, _pairs(t, p), rng=np.random.default_rng(0))
        assert interval is not None and interval.method == "bootstrap"
        assert interval.low < getattr(a, figure) < interval.high


def test_ordinal_scores_are_gated_on_within_one_with_its_wilson_interval():
    t, p = [1, 2, 3, 4, 5] * 4, [1, 3, 3, 2, 5] * 4
    a = agreement(t, p, binary=False)
    result = check_gate(a, _pairs(t, p), threshold=0.7, rng=RNG)
    assert result.figure == "within_one" and result.passed and result.interval is not None
    assert result.interval.method == "wilson"
    kappa = check_gate(a, _pairs(t, p), threshold=0.99, figure="weighted_kappa", rng=RNG)
    assert not kappa.passed and kappa.interval is not None and kappa.interval.method == "bootstrap"


def test_the_gate_refuses_continuous_scores_and_figures_that_do_not_apply():
    with pytest.raises(ConfigError, match="continuous scores have only errors"):
        check_gate(agreement([0.1, 0.5], [0.2, 0.5], binary=False), (), threshold=0.5, rng=RNG)
    with pytest.raises(ConfigError, match="'within_one' does not apply to a binary metric"):
        check_gate(_binary(1, 0), (), threshold=0.5, figure="within_one", rng=RNG)


# --- the command line -----------------------------------------------------------------------------


def test_evaluate_fail_under_exits_1_with_one_line_and_0_above(tmp_path, capsys):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"single_turn_aspect_critic_prompt": "Is the response correct?"}))
    argv = ["evaluate", str(AC_CONFIG), "-i", str(path)]
    assert main([*argv, "--fail-under", "0.99"]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("promptevolver: judge gate failed: accuracy ")
    assert "95% CI" in err[0] and "95% CI" in captured.out and "on all usable samples (18)" in captured.out
    assert main([*argv, "--fail-under", "0.5", "-q"]) == 0
    assert capsys.readouterr().err.startswith("promptevolver: judge gate passed: accuracy")


def test_evaluate_never_prints_a_score_for_failed_evaluations(monkeypatch, capsys, kept_seed):
    failing = ScriptedLLM(handler=lambda request: "not json at all")
    monkeypatch.setattr(evaluate, "build_llm", lambda *a, **k: failing)
    n = len(json.loads((kept_seed / "result.json").read_text())["split"]["validation_positions"])
    assert main(["evaluate", str(AC_CONFIG), "-i", str(kept_seed), "--fail-under", "0.5"]) == 1
    captured = capsys.readouterr()
    assert f"accuracy n/a | F1 n/a | Cohen's kappa n/a | n 0, {n} failed (parse {n})" in captured.out
    assert "0.000" not in captured.out and "CI" not in captured.out
    assert captured.err.strip().endswith(f"every one of the {n} evaluations failed (parse {n})")


def test_evaluate_defaults_to_a_runs_validation_samples_and_json_has_the_interval(kept_seed, capsys):
    assert main(["evaluate", str(AC_CONFIG), "-i", str(kept_seed), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    validation = json.loads((kept_seed / "result.json").read_text())["split"]["validation"]
    assert card["split"] == "validation" and card["n"] == validation
    assert card["interval"]["method"] == "wilson" and card["gate"] is None
    assert main(["evaluate", str(AC_CONFIG), "-i", str(kept_seed), "--split", "all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 18


def test_evaluate_warns_when_the_run_optimized_another_metric(kept_seed, tmp_path, capsys):
    other = tmp_path / "helpfulness.yaml"
    other.write_text(
        (AC_CONFIG.parent / "helpfulness.yaml").read_text().replace("../", f"{AC_CONFIG.parent}/../")
    )
    main(["evaluate", str(other), "-i", str(kept_seed / "best_instructions.json"), "--split", "all"])
    assert (
        "warning: the instructions were optimized for metric 'answer_correctness'" in capsys.readouterr().err
    )


# --- pytest helper --------------------------------------------------------------------------------


def test_assert_agreement_passes_returns_the_verdict_and_fails_with_the_reason(kept_seed):
    validation = json.loads((kept_seed / "result.json").read_text())["split"]["validation"]
    result = assert_agreement(AC_CONFIG, instructions=kept_seed, at_least=0.5)
    assert result.passed and result.n == validation and result.interval is not None  # as evaluate -i
    assert assert_agreement(AC_CONFIG, instructions=kept_seed, split="all", at_least=0.1).n == 18
    with pytest.raises(
        AssertionError, match=r"answer_correctness: judge gate failed: accuracy 0\.\d+ < 0\.99"
    ):
        assert_agreement(AC_CONFIG, at_least=0.99)
    on_run = assert_agreement(AC_CONFIG, instructions=kept_seed, run=kept_seed, at_least=0.1)
    assert on_run.n == validation


def test_assert_agreement_takes_overrides_like_set():
    with pytest.raises(ConfigError, match="optimizer.nope"):
        assert_agreement(AC_CONFIG, at_least=0.5, overrides=["optimizer.nope=1"])
