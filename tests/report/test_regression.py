"""Reports of numeric metrics: regression-style figures (MAE, exact, within one, weighted kappa on an
ordinal scale), judge-vs-human plot and level tables; failed evaluations are not points."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from promptevolver import Judgement
from promptevolver.report._data import load_run
from promptevolver.report._regression import points, regression_png, regression_section
from promptevolver.report._render import Image, Table
from promptevolver.report._write import build_report

from ..conftest import ROOT
from ..rundirs import optimize_into

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def rubric_run(tmp_path_factory) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optimize_into(  # the seed judged on every sample: its level table is drawn too
            tmp_path_factory.mktemp("runs") / "rubric",
            ROOT / "configs" / "helpfulness_rubric.yaml",
            "--set",
            "optimizer.seed_judged_share=1",
        )


@pytest.fixture(scope="module")
def statements_run(tmp_path_factory) -> Path:
    config = ROOT / "configs" / "faithfulness_statements.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optimize_into(tmp_path_factory.mktemp("runs") / "statements", config)


def _load(run: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(run)


def test_an_ordinal_run_reports_exact_within_one_and_weighted_kappa(rubric_run):
    facts = _load(rubric_run)
    report = build_report(facts)
    assert "| exact | within one | weighted kappa |" in report.markdown
    best = facts.agreements[("best", "validation")]
    assert best.ordinal and best.mse is not None
    assert (
        f"| {best.mse:.4f} | {best.mae:.4f} | {best.exact:.3f} | {best.within_one:.3f} |" in report.markdown
    )
    assert report.images["regression.png"].startswith(PNG)


def test_the_level_tables_count_every_judged_validation_sample_once(rubric_run):
    facts = _load(rubric_run)
    section = regression_section(facts)
    tables = [b for b in section.blocks if isinstance(b, Table)]
    assert len(tables) == 2
    for who, table in zip(("seed", "best"), tables):
        a = facts.agreements[(who, "validation")]
        assert a.levels is not None and len(table.rows) == len(a.levels)
        assert sum(int(cell) for row in table.rows for cell in row[1:]) == a.n
        diagonal = sum(int(row[1 + i]) for i, row in enumerate(table.rows))
        exact = sum(label == score for label, score in points(facts, who))  # counts, unweighted
        assert diagonal == exact


def test_a_continuous_score_gets_the_plot_but_no_level_table(statements_run):
    facts = _load(statements_run)
    section = regression_section(facts)
    assert [type(b) for b in section.blocks] == [Image]
    report = build_report(facts)
    assert "within one" not in report.markdown and "| MSE | MAE | failed |" in report.markdown


def test_failed_evaluations_are_not_points(rubric_run):
    facts = _load(rubric_run)
    judged = dict(facts.judgements[("best", "validation")])
    first = sorted(judged)[0]
    facts.judgements[("best", "validation")] = {
        **judged,
        first: Judgement(score=None, error="down", cause="transport"),
    }
    assert len(points(facts, "best")) == len(judged) - 1


def test_the_plot_is_drawn_for_one_series_or_none():
    assert regression_png({"best": [(1.0, 1.0), (1.0, 1.0), (2.0, 3.0)]}, metric="m").startswith(PNG)
    assert regression_png({}, metric="m").startswith(PNG)
