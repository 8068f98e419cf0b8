"""Rendering a report's blocks as Markdown and as one self-contained HTML page.

A report is a list of :class:`Section` s made of a few block kinds (paragraph, table, image,
word diff, preformatted text, bullet list). :func:`to_markdown` links images as files next to the
report; :func:`to_html` embeds them as base64 PNG data and inlines its CSS, so the page needs no
network and no other file.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "Block",
    "Bullets",
    "Diff",
    "Fold",
    "Image",
    "Para",
    "Pre",
    "Section",
    "Table",
    "to_html",
    "to_markdown",
]


@dataclass(frozen=True)
class Para:
    """A paragraph of plain text; ``lead`` renders it larger (the report's verdict), ``caveat``
    marks it as a warning on the figures (a quote in Markdown, a framed paragraph in HTML)."""

    text: str
    lead: bool = False
    caveat: bool = False


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells. ``heat``: colour numeric cells by their share of the table's
    total (confusion matrices); ``caption`` is shown above it; ``links``: per row, the relative
    address its first cell links to (None: no link)."""

    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    caption: str = ""
    heat: bool = False
    links: Sequence[str | None] = ()


@dataclass(frozen=True)
class Image:
    """A PNG image: ``name`` is its file name under ``plots/`` in the Markdown report."""

    name: str
    png: bytes
    alt: str


@dataclass(frozen=True)
class Diff:
    """A word diff: (``equal`` | ``delete`` | ``insert``, text) runs, with a caption."""

    runs: Sequence[tuple[str, str]]
    caption: str = ""


@dataclass(frozen=True)
class Pre:
    """Preformatted text (an instruction), with a caption."""

    text: str
    caption: str = ""


@dataclass(frozen=True)
class Bullets:
    items: Sequence[str]


@dataclass(frozen=True)
class Fold:
    """Blocks shown folded in HTML (``<details>``, opened by a click on ``summary``, which gets a
    "(show)" hint there only); in Markdown, the summary in bold and the blocks as usual."""

    summary: str
    blocks: Sequence[Para | Table]


Block = Para | Table | Image | Diff | Pre | Bullets | Fold


@dataclass(frozen=True)
class Section:
    """A titled part of the report; ``row`` lays its tables and images side by side in HTML."""

    title: str
    blocks: Sequence[Block] = field(default_factory=list)
    row: bool = False


# --- Markdown ----------------------------------------------------------------------------------


def _md_text(text: str) -> str:
    """``text`` (a sample's, a model's, a file's: anyone's) inert in Markdown: HTML is escaped
    (``<script>``, ``<img onerror>`` run where a renderer passes HTML through: python-markdown,
    many wikis) and the brackets of links and images (``[x](javascript:...)``, a tracking
    ``![](...)``) are backslash-escaped. Emphasis and code spans are left alone: they only style."""
    text = text.replace("&", "&amp;").replace("<", "&lt;")  # no tag, comment or autolink can open
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


#: Markdown's characters that make links and images, and the escape itself (escaped in text).
_MD_SPECIAL = re.compile(r"[\\\[\]]")


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|").replace("\n", "<br>")


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (it cannot close the block early)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _md_code(caption: str, text: str) -> str:
    fence = _fence(text)
    return f"{_md_text(caption)}\n\n{fence}text\n{text}\n{fence}"


def _md_block(block: Block) -> str:
    if isinstance(block, Para):
        return f"> **Caveat:** {_md_text(block.text)}" if block.caveat else _md_text(block.text)
    if isinstance(block, Table):
        head = f"**{_md_text(block.caption)}**\n\n" if block.caption else ""
        lines = ["| " + " | ".join(map(_md_cell, block.headers)) + " |", "|" + "---|" * len(block.headers)]
        for n, row in enumerate(block.rows):
            href = block.links[n] if n < len(block.links) else None
            cells = [_md_cell(c) for c in row]
            if href and cells:
                cells[0] = f"[{cells[0]}]({href})"
            lines.append("| " + " | ".join(cells) + " |")
        return head + "\n".join(lines)
    if isinstance(block, Image):
        return f"![{_md_text(block.alt)}](plots/{block.name})"
    if isinstance(block, Diff):
        marked = "".join(_md_run(op, text) for op, text in block.runs)
        return _md_code(block.caption, marked.strip())
    if isinstance(block, Pre):
        return _md_code(block.caption, block.text)
    if isinstance(block, Fold):
        return "\n\n".join([f"**{_md_text(block.summary)}**", *(_md_block(b) for b in block.blocks)])
    return "\n".join(f"- {_md_text(item)}" for item in block.items)


def _md_run(op: str, text: str) -> str:
    if op == "delete":
        return f"[-{text}-] "
    if op == "insert":
        return f"{{+{text}+}} "
    return f"{text} "


def to_markdown(title: str, sections: Sequence[Section]) -> str:
    """The report as GitHub-flavoured Markdown (images as ``plots/NAME`` links)."""
    parts = [f"# {_md_text(title)}"]
    for s in sections:
        parts.append(f"## {_md_text(s.title)}")
        parts.extend(_md_block(b) for b in s.blocks)
    return "\n\n".join(parts) + "\n"


# --- HTML --------------------------------------------------------------------------------------

_CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; --accent: #0969da;
        --del: #ffebe9; --del-ink: #82071e; --ins: #dafbe1; --ins-ink: #116329; }
* { box-sizing: border-box; }
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink);
       margin: 0 auto; max-width: 1100px; padding: 24px 32px 64px; }
h1 { font-size: 26px; margin: 0 0 8px; }
h2 { font-size: 19px; margin: 36px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
p { margin: 8px 0; }
p.lead { font-size: 17px; background: var(--bg); border-left: 4px solid var(--accent); padding: 12px 16px; }
p.caveat { background: #fff8c5; border-left: 4px solid #bf8700; padding: 8px 16px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
th, td { border: 1px solid var(--line); padding: 5px 10px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.heat td.num { min-width: 64px; text-align: center; font-size: 16px; }
.caption { font-weight: 600; margin: 8px 0 4px; }
.row { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.row > figure { margin: 0; flex: 1 1 440px; max-width: 520px; }
.row > div { margin: 0; }
img { width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; }
figure { margin: 8px 0; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 12px;
      white-space: pre-wrap; word-wrap: break-word; font-size: 13px; }
.diff { background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 12px;
        white-space: pre-wrap; font-size: 14px; line-height: 1.7; }
del { background: var(--del); color: var(--del-ink); text-decoration: line-through; padding: 1px 2px; }
ins { background: var(--ins); color: var(--ins-ink); text-decoration: none; padding: 1px 2px; }
ul { margin: 8px 0; padding-left: 22px; }
td.long { max-width: 360px; }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--accent); font-weight: 600; }
"""


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _is_number(cell: str) -> bool:
    try:
        float(cell.replace(",", "").rstrip("%"))
    except ValueError:
        return False
    return True


def _html_table(block: Table) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in block.headers)
    numbers = [float(c) for row in block.rows for c in row if block.heat and _is_number(c)]
    total = sum(numbers) or 1.0
    rows = []
    for n, row in enumerate(block.rows):
        cells = []
        href = block.links[n] if n < len(block.links) else None
        for i, c in enumerate(row):
            cls = "num" if _is_number(c) else ("long" if len(c) > 80 else "")
            style = ""
            if block.heat and i > 0 and _is_number(c):
                style = f' style="background: rgba(9,105,218,{0.08 + 0.6 * float(c) / total:.2f})"'
            text = f'<a href="{_esc(href)}">{_esc(c)}</a>' if i == 0 and href else _esc(c)
            cells.append(f'<td class="{cls}"{style}>{text}</td>' if cls else f"<td{style}>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cls = ' class="heat"' if block.heat else ""
    caption = f'<div class="caption">{_esc(block.caption)}</div>' if block.caption else ""
    table = f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return f"<div>{caption}{table}</div>"


def _html_block(block: Block) -> str:
    if isinstance(block, Para):
        if block.caveat:
            return f'<p class="caveat"><strong>Caveat:</strong> {_esc(block.text)}</p>'
        return f'<p class="lead">{_esc(block.text)}</p>' if block.lead else f"<p>{_esc(block.text)}</p>"
    if isinstance(block, Table):
        return _html_table(block)
    if isinstance(block, Image):
        data = base64.b64encode(block.png).decode("ascii")
        return f'<figure><img src="data:image/png;base64,{data}" alt="{_esc(block.alt)}"></figure>'
    if isinstance(block, Diff):
        tags = {"delete": "del", "insert": "ins"}
        runs = " ".join(
            f"<{tags[op]}>{_esc(t)}</{tags[op]}>" if op in tags else _esc(t) for op, t in block.runs
        )
        return f'<div class="caption">{_esc(block.caption)}</div><div class="diff">{runs}</div>'
    if isinstance(block, Pre):
        return f'<div class="caption">{_esc(block.caption)}</div><pre>{_esc(block.text)}</pre>'
    if isinstance(block, Fold):
        inner = "\n".join(_html_block(b) for b in block.blocks)
        return f"<details><summary>{_esc(block.summary)} (show)</summary>\n{inner}\n</details>"
    return "<ul>" + "".join(f"<li>{_esc(item)}</li>" for item in block.items) + "</ul>"


def _html_section(section: Section) -> str:
    body = "\n".join(_html_block(b) for b in section.blocks)
    if section.row:
        body = f'<div class="row">{body}</div>'
    return f"<section>\n<h2>{_esc(section.title)}</h2>\n{body}\n</section>"


def to_html(title: str, sections: Sequence[Section]) -> str:
    """The report as one HTML page: inline CSS, images as base64 data, no script, no network."""
    body = "\n".join(_html_section(s) for s in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{_esc(title)}</h1>\n{body}\n</body>\n</html>\n"
    )
