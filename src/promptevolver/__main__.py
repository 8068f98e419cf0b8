"""``python -m promptevolver``: the command line, as the ``promptevolver`` script."""

from promptevolver.cli import main

raise SystemExit(main())
