"""Static demonstration sets in the search: what a child of mutation or crossover is shown.

A candidate with a static set (policy ``static``, the store's most-corrected set, or
``static:12,40,7``, its own; :mod:`promptevolver.judge._examples`) passes it on, changed:

* **mutation** (:func:`mutated`), guided by the corrections the parent still gets wrong (the
  shown train samples it judges unlike the human): while some are not in its set, one of them is
  added (the set holds fewer than ``k``) or swapped in for a demo; when none is left, a demo is
  dropped (fewer tokens per judge call for what the set already teaches);
* **crossover** (:func:`mixed`): the union of the parents' sets (A's first), ``k`` of them drawn
  when it holds more, kept in that order.

A parent without a static set passes its policy on unchanged, and no random number is drawn for
it (runs without static sets draw exactly as before). The draws are made when the offspring is
planned, from the generator the breeder passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from promptevolver.judge import static_policy, static_positions
from promptevolver.optimizers._candidates import Candidate

__all__ = ["demo_set", "mixed", "mutated"]


def demo_set(candidate: Candidate, view: Any) -> list[int] | None:
    """The dataset positions of ``candidate``'s static set (the store's for plain ``static``:
    ``view.static_set``), None when it carries none."""
    if candidate.examples == "static":
        return list(view.static_set)
    return static_positions(candidate.examples)


def mutated(candidate: Candidate, wrong: Sequence[int], view: Any, rng: np.random.Generator) -> str:
    """The example policy of a mutation child of ``candidate``; ``wrong``: train positions it
    judges unlike the human (module docstring)."""
    current = demo_set(candidate, view)
    if current is None:
        return candidate.examples
    fresh = [p for p in wrong if p not in current]
    if fresh:
        new = fresh[int(rng.integers(len(fresh)))]
        if len(current) < view.config.examples.k:
            current.append(new)
        else:
            current[int(rng.integers(len(current)))] = new
    elif len(current) > 1:
        del current[int(rng.integers(len(current)))]
    return static_policy(current)


def mixed(a: Candidate, b: Candidate, view: Any, rng: np.random.Generator) -> str:
    """The example policy of a crossover child of ``a`` and ``b`` (module docstring)."""
    sets = [demo_set(a, view), demo_set(b, view)]
    if sets[0] is None and sets[1] is None:
        return a.examples
    union = list(dict.fromkeys([*(sets[0] or []), *(sets[1] or [])]))
    k = view.config.examples.k
    if len(union) > k:
        keep = sorted(int(i) for i in rng.choice(len(union), size=k, replace=False))
        union = [union[i] for i in keep]
    return static_policy(union)
