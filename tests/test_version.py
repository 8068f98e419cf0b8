"""One version: the installed distribution's metadata, ``promptevolver.__version__`` and
``promptevolver --version`` agree (pyproject reads it from the package)."""

from __future__ import annotations

from importlib.metadata import version

import pytest

import promptevolver
from promptevolver.cli import main


def test_the_installed_version_is_the_packages_and_the_clis(capsys):
    assert version("promptevolver") == promptevolver.__version__
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"promptevolver {promptevolver.__version__}"
