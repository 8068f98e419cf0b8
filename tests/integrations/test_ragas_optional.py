"""The Ragas integration is optional: importing it never imports Ragas, and using it without Ragas
fails with the install command (both hold whether Ragas is installed or not)."""

from __future__ import annotations

import subprocess
import sys


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_importing_the_integration_does_not_import_ragas():
    out = _python("import sys, promptevolver.integrations.ragas as r; print('ragas' in sys.modules)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_using_it_without_ragas_names_the_extra_to_install():
    blocked = (
        "import sys; sys.modules['ragas'] = None; sys.modules['ragas.metrics'] = None\n"
        "from promptevolver.integrations.ragas import RagasMetric\n"
        "RagasMetric(object())"
    )
    out = _python(blocked)
    assert out.returncode == 1
    assert 'ImportError: the Ragas integration needs Ragas: pip install "promptevolver[ragas]"' in out.stderr
