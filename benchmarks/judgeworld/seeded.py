"""Run a Python script as ``__main__`` after seeding Python's and numpy's global generators.

    python seeded.py SEED SCRIPT [ARGS...]

Ragas' GeneticOptimizer samples with the global ``random`` module and judgeworld's Ragas harness
does not seed it; seeding here (rather than editing the harness) makes a Ragas run repeatable.
"""

from __future__ import annotations

import random
import runpy
import sys


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: seeded.py SEED SCRIPT [ARGS...]")
    seed, script = int(sys.argv[1]), sys.argv[2]
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    sys.argv = [script, *sys.argv[3:]]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
