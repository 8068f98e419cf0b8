"""Run reports (``report.md``, ``report.html``, plots): facts from the run directory, plots, rendering."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.report.write import build_report, write_report

_EXPORTS = {
    "write_report": "promptevolver.report.write",
    "build_report": "promptevolver.report.write",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "build_report",
    "write_report",
]
