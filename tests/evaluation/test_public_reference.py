"""The recorded judges of two public, human-labelled pairwise sets, measured with no LLM call,
reproduce the reference figures (issue 34; computed with scikit-learn and statsmodels on the
repositories' own files) to 4 decimals. The bundled files are made by
``python -m benchmarks.public.convert`` from PandaLM (Apache-2.0) and LLMBar (MIT)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.public.convert import binary_of
from promptevolver.cli import main
from promptevolver.evaluation import recorded_agreement
from promptevolver.runs._agreement import load_recorded

from ..conftest import ROOT

DATA = ROOT / "benchmarks" / "data"


def _measured(path: Path, **kwargs):
    dataset, scale = load_recorded(path, **kwargs)
    return recorded_agreement(dataset, scale)


def test_pandalm_three_way_figures_and_the_annotator_ceiling():
    found = _measured(DATA / "pandalm_pairwise.json")
    a = found.figures
    assert a.nominal and a.classes == ["a", "b", "tie"]
    assert (a.n, len(found.without_verdict)) == (974, 25)
    assert round(a.accuracy, 4) == 0.7156
    assert round(a.cohen_kappa, 3) == 0.493
    tie = next(c for c in a.per_class if c.name == "tie")
    assert round(tie.f1, 3) == 0.077
    h = found.annotators
    assert h is not None and h.items == 999
    assert [round(k, 3) for k in h.pairwise_kappa.values()] == [0.852, 0.879, 0.862]
    assert round(h.fleiss_kappa, 3) == 0.864


def test_pandalm_without_ties_is_the_binary_is_a_better_figure(tmp_path):
    three = json.loads((DATA / "pandalm_pairwise.json").read_text())["pandalm"]
    path = tmp_path / "pandalm_binary.json"
    path.write_text(json.dumps({"pandalm": binary_of(three)}))
    a = _measured(path).figures
    assert a.binary and a.n == 882
    assert round(a.accuracy, 4) == 0.8073
    assert round(a.cohen_kappa, 3) == 0.613


def test_llmbar_accuracy_kappa_and_position_consistency():
    found = _measured(DATA / "llmbar_pairwise.json")
    a = found.figures
    assert a.binary and a.n == 418
    assert round(a.accuracy, 4) == 0.4019
    assert round(a.cohen_kappa, 2) == -0.19
    assert found.position is not None
    assert found.position.pairs == 414
    assert round(found.position.consistency, 3) == 0.589


def test_the_command_prints_them_with_no_llm_client_built(monkeypatch, capsys):
    from promptevolver.llm import _base

    def refuse(*args, **kwargs):
        raise AssertionError("agreement built an LLM client")

    monkeypatch.setattr(_base.BaseLLMClient, "__init__", refuse)
    assert main(["agreement", str(DATA / "pandalm_pairwise.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["llm_calls"] == 0 and out["n"] == 974 and round(out["accuracy"], 4) == 0.7156
    assert len(out["disagreements"]) == 277 == out["n"] - round(out["accuracy"] * out["n"])
    first = out["disagreements"][0]
    assert first["id"].startswith("pandalm-") and first["human"] in ("a", "b", "tie") and first["reason"]
    assert main(["agreement", str(DATA / "llmbar_pairwise.json")]) == 0
    text = capsys.readouterr().out
    assert "accuracy 0.4019" in text and "beside a base rate of" in text
    assert "the same verdict on 0.589 of 414 pairs" in text


@pytest.mark.parametrize("policy", ["drop", "weight"])
def test_split_items_are_dropped_or_down_weighted(policy):
    dataset, scale = load_recorded(DATA / "pandalm_pairwise.json")
    kept = recorded_agreement(dataset, scale)
    other = recorded_agreement(dataset, scale, split_items=policy)
    if policy == "drop":
        assert other.dropped == 999 - 879 and other.figures.n < kept.figures.n  # 879 unanimous items
    else:
        assert other.figures.n == kept.figures.n and other.figures.accuracy != kept.figures.accuracy
    assert other.figures.accuracy > kept.figures.accuracy  # the judge does better where humans agree
