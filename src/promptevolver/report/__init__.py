"""Run reports (``report.md``, ``report.html``, plots): facts from the run directory, plots, rendering."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.report._write import build_report as build_report
    from promptevolver.report._write import write_report as write_report

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.report._write": ["write_report", "build_report"],
    },
)
