"""The gate says what it measured: a threshold that is not a share is refused before anything is
judged (every entry point: --fail-under, --max-failed, assert_agreement, check_gate), and every
verdict says when the simulated LLM judged (text, --json, assert_agreement); a real model's
gate (a local OpenAI-compatible server) says nothing of the kind, and the judge it chose records
the model."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import yaml

from promptevolver.cli import main
from promptevolver.config._build import load_dataset
from promptevolver.config._models import load_run_config
from promptevolver.errors import ConfigError
from promptevolver.evaluation._agreement import agreement
from promptevolver.rundir import read_chosen_judge
from promptevolver.runs._gate import SIMULATED_EVALUATE, SIMULATED_GATE, check_gate
from promptevolver.simulation import SimulatedJudgeLLM
from promptevolver.testing import LocalOpenAIServer, assert_agreement, simulated_handler

from ..rundirs import AC_CONFIG

NOT_SHARES = ["85", "1.01", "-0.1", "nan", "inf", "-inf", "100"]


@pytest.mark.parametrize("value", [*NOT_SHARES, "x"])
@pytest.mark.parametrize("option", ["--fail-under", "--max-failed"])
def test_a_threshold_that_is_not_a_share_is_a_usage_error(kept_seed, capsys, option, value):
    argv = ["evaluate", str(AC_CONFIG), "-i", str(kept_seed), f"{option}={value}"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"argument {option}: " in err
    if value in ("85", "100"):
        assert f"{float(value) / 100:g} for {value} %" in err


def test_the_max_failed_share_excludes_one(kept_seed):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(AC_CONFIG), "-i", str(kept_seed), "--max-failed", "1"])
    assert exc.value.code == 2


@pytest.mark.parametrize("value", [float(v) for v in NOT_SHARES])
def test_assert_agreement_and_check_gate_refuse_it_before_anything_is_read(tmp_path, value):
    missing = tmp_path / "no_such_config.yaml"  # checked first: the error is the threshold's
    with pytest.raises(ConfigError, match="at_least must be a number in"):
        assert_agreement(missing, at_least=value)
    with pytest.raises(ConfigError, match="max_failure_rate must be a number in"):
        assert_agreement(missing, at_least=0.5, max_failure_rate=value)
    a = agreement([1.0, 0.0], [1.0, 0.0], binary=True)
    with pytest.raises(ConfigError, match="threshold must be a number in"):
        check_gate(a, (), threshold=value, rng=np.random.default_rng(0))


@pytest.mark.parametrize("value", [0.0, 0.85, 1.0])
def test_shares_pass(value):
    a = agreement([1.0, 0.0], [1.0, 0.0], binary=True)
    assert check_gate(a, (), threshold=value, rng=np.random.default_rng(0)).passed


def test_the_simulated_gate_says_so_everywhere(kept_seed, capsys):
    assert main(["evaluate", str(AC_CONFIG), "-i", str(kept_seed), "--fail-under", "0.1"]) == 0
    out, err = capsys.readouterr()
    assert SIMULATED_GATE in err and "simulated LLM: no model judged" in out
    assert main(["evaluate", str(AC_CONFIG), "-i", str(kept_seed), "--fail-under", "0.1", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["simulated_llm"] is True and card["gate"]["simulated_llm"] is True
    assert SIMULATED_GATE in card["gate"]["reason"]
    assert main(["evaluate", str(AC_CONFIG), "-i", str(kept_seed)]) == 0
    assert SIMULATED_EVALUATE in capsys.readouterr().err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gate = assert_agreement(AC_CONFIG, instructions=kept_seed, at_least=0.1)
    assert gate.simulated_llm and SIMULATED_GATE in gate.reason
    assert any(SIMULATED_GATE in str(w.message) for w in caught)
    with pytest.raises(AssertionError, match="simulated LLM judged"):
        assert_agreement(AC_CONFIG, at_least=0.99)  # the seed's instruction: below it


def test_a_models_gate_and_chosen_judge_say_the_model(tmp_path, capsys, monkeypatch):
    """Through real HTTP: a local OpenAI-compatible server answering as the simulator would. The
    client is a model's (provider openai): no simulated mark, and the record names the model."""
    monkeypatch.setenv("LOCAL_KEY", "k")
    config = yaml.safe_load(AC_CONFIG.read_text())
    config["dataset"] = str((AC_CONFIG.parent / config["dataset"]).resolve())
    config["optimizer"] = {"strategy": "examples"}
    dataset = load_dataset(load_run_config(AC_CONFIG))
    sim = SimulatedJudgeLLM(dataset=dataset, random_seed=42)
    with LocalOpenAIServer(simulated_handler(sim)) as server:
        config["llm"] = {
            "provider": "openai",
            "model": "local-judge",
            "base_url": server.base_url,
            "api_key_env": "LOCAL_KEY",
        }
        path = tmp_path / "real.yaml"
        path.write_text(yaml.safe_dump(config))
        run = tmp_path / "run"
        assert main(["optimize", str(path), "-o", str(run), "-q"]) == 0
        capsys.readouterr()
        chosen = read_chosen_judge(run / "best_instructions.json")
        assert chosen.model == {"provider": "openai", "model": "local-judge"}
        exported = json.loads((run / "best_instructions.json").read_text())
        assert not chosen.dry_run and "dry_run" not in exported
        assert main(["evaluate", str(path), "-i", str(run), "--fail-under", "0.1", "--json"]) == 0
        card = json.loads(capsys.readouterr().out)
        assert card["simulated_llm"] is False and "simulated" not in card["gate"]["reason"]
        assert not math.isnan(card["accuracy"])
