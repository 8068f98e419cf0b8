"""Rendering report blocks (report/_render.py): a caveat is a quote in Markdown and a framed
paragraph in HTML; a fold's "(show)" hint belongs to HTML only."""

from __future__ import annotations

from promptevolver.report._render import Fold, Para, Section, to_html, to_markdown

SECTIONS = [
    Section(
        "Outcome",
        [
            Para("The verdict.", lead=True),
            Para("small data: 5 validation samples.", caveat=True),
            Fold("Train: 1 of 13 samples disagree.", [Para("details <b>")]),
        ],
    )
]


def test_markdown_caveat_and_fold():
    md = to_markdown("T", SECTIONS)
    assert "The verdict.\n\n> **Caveat:** small data: 5 validation samples.\n\n**Train: 1 of 13" in md
    assert "(show)" not in md and "details &lt;b>" in md  # the text's HTML inert (issue 31)


def test_html_caveat_and_fold():
    page = to_html("T", SECTIONS)
    assert '<p class="caveat"><strong>Caveat:</strong> small data: 5 validation samples.</p>' in page
    assert "<details><summary>Train: 1 of 13 samples disagree. (show)</summary>" in page
    assert "details &lt;b&gt;" in page and "p.caveat {" in page
