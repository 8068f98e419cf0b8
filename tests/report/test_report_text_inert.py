"""Issue 31, item 9: text that is not ours (annotations, human reasons, the model's instructions
and reasons) is inert in every report. report.md is rendered by python-markdown, as a wiki
would, and report.html read as it is: no script, no event handler, no javascript: link, from
hostile text in every string field of the annotation file."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main

from ..conftest import AC_DEFINITION, AC_FILE

PAYLOADS = [
    "<script>alert('md')</script>",
    '<img src=x onerror="alert(1)">',
    "[click me](javascript:alert(2))",
    '![pixel](http://evil.example/track.png "t")',
    "```\n<script>alert('fence')</script>\n```",
    '<a href="javascript:alert(3)">link</a>',
    "<!-- hidden --><iframe src=//evil.example></iframe>",
    "&lt;script&gt;alert(4)&lt;/script&gt;",
]


class _Active(HTMLParser):
    """Active markup in a page: script, iframe, object and embed elements, images other than our
    plots, event-handler attributes, ``javascript:`` links and sources, comments."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("script", "iframe", "object", "embed"):
            self.found.append(tag)
        if tag == "img" and not (values.get("src") or "").startswith(("plots/", "data:image/png;base64,")):
            self.found.append("img")
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"{tag} {name}")

    def handle_comment(self, data: str) -> None:
        self.found.append("comment")


def _active(page: str) -> list[str]:
    parser = _Active()
    parser.feed(page)
    return parser.found


def _poison(value: Any, counter: list[int]) -> Any:
    """Every string leaf of ``value`` with a payload appended (keys and labels left alone)."""
    if isinstance(value, str):
        counter[0] += 1
        return f"{value} {PAYLOADS[counter[0] % len(PAYLOADS)]}"
    if isinstance(value, dict):
        return {k: _poison(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_poison(v, counter) for v in value]
    return value


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("inert")
    data = json.loads(AC_FILE.read_text())
    data = {name: _poison(samples, [0]) for name, samples in data.items()}
    (base / "hostile.json").write_text(json.dumps(data))
    config = {
        "dataset": str(base / "hostile.json"),
        "metric": {"name": "answer_correctness", "definition": AC_DEFINITION + " " + PAYLOADS[0]},
        "optimizer": {"population_size": 4, "generations": 1, "strategy": "genetic"},
        "random_seed": 0,
    }
    (base / "c.yaml").write_text(yaml.safe_dump(config))
    assert main(["optimize", str(base / "c.yaml"), "-o", str(base / "run"), "-q"]) == 0
    return base / "run"


def test_report_md_rendered_by_python_markdown_runs_nothing(hostile_run: Path) -> None:
    text = (hostile_run / rundir.REPORT_MD).read_text()
    assert "alert(" in text  # the payloads are there, shown as text
    page = markdown.markdown(text, extensions=["tables", "fenced_code"])
    found = _active(page)
    assert found == [], found[:5]


def test_report_md_rendered_without_extensions_runs_nothing(hostile_run: Path) -> None:
    page = markdown.markdown((hostile_run / rundir.REPORT_MD).read_text())
    assert _active(page) == []


def test_report_html_runs_nothing_of_the_samples(hostile_run: Path) -> None:
    page = (hostile_run / rundir.REPORT_HTML).read_text()
    assert "alert(" in page and _active(page) == []


def test_a_fence_in_the_text_cannot_close_the_code_block() -> None:
    from promptevolver.report._render import Pre, Section, to_markdown

    md = to_markdown("t", [Section("s", [Pre("before\n```\n<script>x</script>\n```\nafter", "caption")])])
    assert _active(markdown.markdown(md, extensions=["fenced_code"])) == []
