"""Run reports (report.md, self-contained report.html, plots), checked on real runs of the
simulated judge, on degraded run directories (unmeasured scores, failed evaluations, old and
future formats), and the HTML rendered by a real headless browser (Debian's chromium)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from promptevolver import AspectCritic, Judgement
from promptevolver.cli import main
from promptevolver.errors import RunDirError
from promptevolver.report import _data as data
from promptevolver.report._data import load_judgements, load_run
from promptevolver.report._render import _md_text
from promptevolver.report._write import build_report, write_report

from ..rundirs import ac_run, copy_run, leftovers, result_of, rewrite_result

PROMPT = AspectCritic.PROMPT_NAME
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


# --- what a run writes ---------------------------------------------------------------------------


def test_every_run_writes_report_plots_and_exports(improved):
    names = {p.name for p in improved.iterdir()} | {p.name for p in (improved / "plots").iterdir()}
    expected = {
        "report.md",
        "report.html",
        "fitness.png",
        "calls.png",
        "best_instructions.json",
        "apply_best.py",
    }
    assert expected <= names
    assert (improved / "plots" / "fitness.png").read_bytes().startswith(PNG_MAGIC)
    assert leftovers(improved) == []


def test_markdown_shows_outcome_scores_and_every_section(improved):
    result, md = result_of(improved), (improved / "report.md").read_text()
    assert result["best_id"] != 0
    assert f"candidate #{result['best_id']}" in md
    for title in (
        "## Outcome",
        "## Seed vs best",
        "## Search progress",
        "## Confusion matrices (validation)",
        "## What changed in the instruction",
        "## Where the best prompt still disagrees with the humans",
        "## Lineage of the chosen candidate",
        "## Usage and cost by operation",
        "## Run details",
    ):
        assert title in md
    for who in ("seed", "best"):
        for split in ("train", "validation"):
            assert f"{result['scores'][who][split]:.3f}" in md
    assert "![Fitness per generation: accuracy on the " in md and "](plots/fitness.png)" in md
    seed_words = set(result["seed_instructions"][PROMPT].split())
    best_words = set(result["best_instructions"][PROMPT].split())
    assert "{+" in md  # the word diff marks added words, and removed ones when there are any
    assert ("[-" in md) == bool(seed_words - best_words)


def test_kept_seed_says_so_and_shows_the_instruction_unchanged(kept_seed):
    result, md = result_of(kept_seed), (kept_seed / "report.md").read_text()
    if result["best_id"] == 0:
        assert "No candidate beat the original instruction" in md
        assert f"{PROMPT}: unchanged" in md
    else:  # the pinned run may change with the optimizer; the report must still say who won
        assert f"candidate #{result['best_id']}" in md


def test_the_small_data_caveat_sits_in_the_outcome_box(tmp_path):
    small = ac_run(tmp_path)
    note = result_of(small)["split"]["note"]
    assert note.startswith("small data")  # 18 usable annotations: chosen out-of-bag
    md, page = (small / "report.md").read_text(), (small / "report.html").read_text()
    outcome = _section(md, "Outcome")
    assert f"> **Caveat:** {note}." in outcome
    assert outcome.index("Caveat") < outcome.index("Stopped after")  # right under the verdict
    assert note not in _section(md, "Run details") and md.count(note) == 1
    html_outcome = page.split("<h2>Outcome</h2>", 1)[1].split("</section>", 1)[0]
    assert '<p class="caveat"><strong>Caveat:</strong> small data' in html_outcome


def test_a_run_of_the_simulated_llm_says_so_in_the_outcome_box(improved, tmp_path):
    assert result_of(improved)["simulated_llm"] is True
    outcome = _section((improved / "report.md").read_text(), "Outcome")
    assert "> **Caveat:** Simulated LLM: no language model was called." in outcome
    real = copy_run(improved, tmp_path)
    rewrite_result(real, simulated_llm=False)
    write_report(real)
    assert "Simulated LLM" not in _section((real / "report.md").read_text(), "Outcome")


def test_small_data_parts_are_named_for_what_they_are_to_the_best_candidate(tmp_path):
    """Out of bag there is no validation part of its own: the report names the samples the best
    candidate learned from and the ones it never saw, and says why the lineage shows no
    validation, instead of "train: 6 samples" beside a split of 18 train."""
    small = ac_run(tmp_path)
    result, md = result_of(small), (small / "report.md").read_text()
    assert result["split"]["regime"] == "out-of-bag"
    scores = _section(md, "Seed vs best")
    assert "| train (every usable sample) |" in scores
    assert "| validation (out of bag: never learned from) |" in scores
    assert "| train |" not in scores and "| validation |" not in scores
    disagreements = _section(md, "Where the best prompt still disagrees with the humans")
    assert "Train (every usable sample): " in disagreements
    assert "Validation is measured only for the finalists" not in md
    finalists = _section(md, "Finalists")
    why = result["final_choice"]["why"]
    assert f"Chosen: #{result['final_choice']['chosen']}, {why}." in finalists
    assert f"). {why}" not in finalists  # no sentence fragment


def test_markdown_has_no_html_leftovers(kept_seed, improved):
    for run in (kept_seed, improved):
        md = (run / "report.md").read_text()
        assert "(show)" not in md and "<details" not in md and "<summary" not in md
    page = (kept_seed / "report.html").read_text()
    assert re.search(r"<details><summary>Train: \d+ of \d+ samples disagree\. \(show\)</summary>", page)


def test_finalists_show_the_candidate_that_lost(kept_seed):
    result = result_of(kept_seed)
    finalists = result["final_choice"]["finalists"]
    assert result["best_id"] == 0 and finalists  # the seed kept over measured finalists
    section = _section((kept_seed / "report.md").read_text(), "Finalists")
    assert "#0 (seed) (chosen)" in section and _md_text(result["final_choice"]["why"]) in section
    for f in finalists:
        assert (
            f"#{f['id']}" in section and f"{f['delta']:+.3f}" in section and f"{f['p_better']:.2f}" in section
        )


def test_finalists_show_what_they_add_from_the_start_of_a_line(kept_seed):
    """Instructions were cut from the left ('…e response'): each finalist now shows the lines it
    adds to the seed's instruction, whole, beginning at a line's start."""
    result = result_of(kept_seed)
    rows = [
        r
        for r in _section((kept_seed / "report.md").read_text(), "Finalists").splitlines()
        if r.startswith("| #")
    ]
    seed = {" ".join(line.split()) for t in result["seed_instructions"].values() for line in t.splitlines()}
    by_id = {c["id"]: c for c in result["lineage"]}
    for row in rows[1:]:
        shown = row.rstrip(" |").rsplit(" | ", 1)[1]
        cid = int(row.split("#", 1)[1].split()[0])
        lines = [" ".join(x.split()) for t in by_id[cid]["instructions"].values() for x in t.splitlines()]
        added = [x for x in lines if x and x not in seed]
        assert not shown.startswith("…") and shown == " / ".join(added)[: len(shown)]
        assert shown.split(" / ")[0] == added[0]


def test_disagreements_show_the_reference_the_judge_saw(improved):
    md = (improved / "report.md").read_text()
    section = _section(md, "Where the best prompt still disagrees with the humans")
    header = next(line for line in section.splitlines() if line.startswith("| sample |"))
    assert header.startswith("| sample | question | reference | response | human | judge |")


# --- scores that were not measured ------------------------------------------------------------------


def _unmeasured(run: Path) -> dict:
    """What the optimizer writes when the validation evaluations failed: None, never a number."""
    result = result_of(run)
    scores = {who: {"train": result["scores"][who]["train"], "validation": None} for who in ("seed", "best")}
    history = [
        {**h, "best_train": None, "mean_train": None} if h["generation"] == 0 else h
        for h in result["history"]
    ]
    lineage = [{**c, "validation": None} for c in result["lineage"]]
    usage = {**result["usage"], "failures": 12}
    choice = {
        **result["final_choice"],
        "finalists": [
            {**f, "delta": None, "p_better": 0.0, "eligible": False}
            for f in result["final_choice"]["finalists"]
        ],
    }
    return rewrite_result(
        run, scores=scores, history=history, lineage=lineage, usage=usage, final_choice=choice
    )


def test_a_score_that_was_not_measured_is_na_with_the_reason(improved, tmp_path):
    run = copy_run(improved, tmp_path)
    result = _unmeasured(run)
    paths = write_report(run)
    md = (run / "report.md").read_text()
    outcome = _section(md, "Outcome")
    assert "n/a" in outcome and "12 failed LLM calls" in outcome and "makes no claim" in outcome
    rows = [line for line in _section(md, "Seed vs best").splitlines() if "| validation |" in line]
    assert len(rows) == 2 and all(row.split(" | ")[3] == "n/a" for row in rows)
    assert "Accuracy n/a: not measured, evaluations failed: 12 failed LLM calls" in md
    assert "Finalists" not in md  # no candidate has a measured validation score
    assert f"{result['scores']['best']['train']:.3f}" in md  # what was measured is still shown
    assert all(p.is_file() for p in paths) and (run / "plots" / "fitness.png").read_bytes().startswith(
        PNG_MAGIC
    )


def test_missing_scores_are_na_too(improved, tmp_path):
    run = copy_run(improved, tmp_path)
    result = result_of(run)
    rewrite_result(run, scores={"seed": {}, "best": {"train": result["scores"]["best"]["train"]}})
    md = build_report(load_run(run)).markdown
    assert "result.json records no score there" in md
    rows = [
        line for line in _section(md, "Seed vs best").splitlines() if line.startswith("| original (seed)")
    ]
    assert all(row.split(" | ")[3] == "n/a" for row in rows)


def test_a_run_whose_validation_evaluations_all_failed_shows_no_score(improved, tmp_path, monkeypatch):
    """A release-0.1 result scored failed evaluations as wrong verdicts (0.000); the recorded
    judgements show they failed, so the report says n/a instead of that number."""
    run = copy_run(improved, tmp_path)
    validation = set(result_of(run)["split"]["validation_positions"])
    for who in ("seed", "best"):
        result = result_of(run)
        result["scores"][who]["validation"] = 0.0
        (run / "result.json").write_text(json.dumps(result))
    recorded = load_judgements(run)
    monkeypatch.setattr(
        data,
        "load_judgements",
        lambda _: {
            (k, p): Judgement(score=None, error="HTTP 500") if p in validation else j
            for (k, p), j in recorded.items()
        },
    )
    md = build_report(load_run(run)).markdown
    verdict = _section(md, "Outcome").strip().split("\n\n")[0]
    assert "0.000" not in verdict and "validation accuracy n/a" in verdict and "makes no claim" in verdict
    assert f"failed verdicts on {len(validation)} samples" in md
    rows = [line for line in _section(md, "Seed vs best").splitlines() if "| validation |" in line]
    assert all(
        row.split(" | ")[2:5] == [f"0 of {len(validation)}", "n/a", "n/a"]
        and row.endswith(f"| {len(validation)} |")
        for row in rows
    )
    assert "No validation verdict was measured: every evaluation failed." in md
    assert f"Validation: 0 of 0 samples disagree; {len(validation)} could not be judged" in md


# --- the run directory's formats ---------------------------------------------------------------------


def test_a_release_0_1_run_without_a_format_version_is_reported(improved, tmp_path):
    run = copy_run(improved, tmp_path)
    assert result_of(run)["format_version"] == 2
    rewrite_result(run, format_version=None)
    assert "format_version" not in result_of(run)
    (run / "report.md").unlink()
    assert main(["report", str(run), "-q"]) == 0
    assert f"candidate #{result_of(run)['best_id']}" in (run / "report.md").read_text()


def test_a_result_of_a_newer_format_is_refused_naming_the_file(improved, tmp_path, capsys):
    run = copy_run(improved, tmp_path)
    rewrite_result(run, format_version=3)
    with pytest.raises(RunDirError, match="format version 3 was written by a newer promptevolver"):
        write_report(run)
    assert main(["report", str(run)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"promptevolver: error: {run / 'result.json'}: format version 3 was written by a newer "
        "promptevolver; this one reads versions up to 2 (upgrade promptevolver to read it)"
    )


def test_reporting_on_a_directory_without_a_result_fails_clearly(tmp_path):
    with pytest.raises(RunDirError, match=r"not a run directory \(no result.json in it\)"):
        write_report(tmp_path)


def test_report_files_are_written_atomically(improved, tmp_path, monkeypatch):
    run = copy_run(improved, tmp_path)
    before = {name: (run / name).read_bytes() for name in ("report.md", "report.html", "plots/fitness.png")}

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_report(run)
    assert {name: (run / name).read_bytes() for name in before} == before
    assert leftovers(run) == []


# --- the HTML page ---------------------------------------------------------------------------------


def test_html_is_self_contained(improved):
    page = (improved / "report.html").read_text()
    assert "<script" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(list((improved / "plots").iterdir())) >= 5  # fitness, calls and the three
    assert all(base64.b64decode(data).startswith(PNG_MAGIC) for data in images)


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


_PROBE = """<script>
window.addEventListener("load", () => {
  for (const img of document.images) {
    img.setAttribute("data-natural", img.naturalWidth + "x" + img.naturalHeight);
  }
  document.body.setAttribute("data-loaded", "yes");
});
</script>"""


def _chromium(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)


@pytest.mark.skipif(_browser() is None, reason="no chromium binary (apt-get install chromium; .ci/run does)")
def test_a_real_browser_renders_the_report_with_its_images_decoded(improved, tmp_path):
    browser = _browser()
    assert browser is not None
    # A copy with a probe script that records each image's decoded size; the report has no script.
    probed = tmp_path / "probed.html"
    probed.write_text((improved / "report.html").read_text().replace("</body>", _PROBE + "</body>"))
    dom = _chromium(
        browser, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()
    ).stdout
    assert 'data-loaded="yes"' in dom
    assert "Seed vs best" in dom and "Confusion matrices (validation)" in dom
    assert f"candidate #{result_of(improved)['best_id']}" in dom
    sizes = re.findall(r'data-natural="(\d+)x(\d+)"', dom)
    plots = len(list((improved / "plots").iterdir()))
    assert len(sizes) == plots and all(int(w) > 300 and int(h) > 200 for w, h in sizes)
    shot = tmp_path / "report.png"
    _chromium(
        browser,
        tmp_path / "profile",
        "--hide-scrollbars",
        "--window-size=1200,1600",
        f"--screenshot={shot}",
        (improved / "report.html").as_uri(),
    )
    assert shot.read_bytes().startswith(PNG_MAGIC) and shot.stat().st_size > 50_000
