"""Run reports (``report.md``, ``report.html``, plots): facts from the run directory, plots, rendering."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.report._data import RunFacts as RunFacts
    from promptevolver.report._data import load_run as load_run
    from promptevolver.report._render import Para as Para
    from promptevolver.report._render import Section as Section
    from promptevolver.report._render import Table as Table
    from promptevolver.report._render import to_html as to_html
    from promptevolver.report._write import build_report as build_report
    from promptevolver.report._write import write_report as write_report

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.report._write": ["build_report", "write_report"],
        "promptevolver.report._data": ["RunFacts", "load_run"],
        "promptevolver.report._render": ["Para", "Section", "Table", "to_html"],
    },
)
