"""When to stop: a list of :class:`StopCondition` objects, checked in order before each generation.

The first condition that holds ends the search and gives ``stop_reason``. The defaults
(:data:`DEFAULT_STOP_CONDITIONS`), in order:

* ``population_size_1`` — a population of one has no offspring to make: the seed is evaluated only;
* ``generations`` — ``config.generations`` generations are done;
* ``perfect_train`` — nothing left to learn: the best train score cannot be improved (e.g.
  accuracy 1.0) and no candidate's lineage has a correction of the annotations left unseen (a
  human's edited reason is evidence even where the verdict was right);
* ``exhausted`` — the last planning round found no operator plan it had not tried before (before
  ``patience``: when both hold, more patience would not help);
* ``patience`` — ``config.patience`` generations in a row without a better best train score;
* ``budget`` — a request was refused by the budget, or the next generation, with the final
  choice reserved, would not fit in it.

A condition of your own is any object with a ``reason`` string and a ``should_stop(search)``
method; pass the list as ``GeneticOptimizer(stop_conditions=[...])``. ``search`` is a
:class:`SearchView` (built by :func:`promptevolver.optimizers._views.search_view` before each
check), never the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from promptevolver.config import GeneticConfig
from promptevolver.evaluation import Loss
from promptevolver.optimizers._state import SearchState

__all__ = [
    "DEFAULT_STOP_CONDITIONS",
    "BudgetSpent",
    "Exhausted",
    "MaxGenerations",
    "Patience",
    "PerfectTrain",
    "PopulationOfOne",
    "SearchView",
    "StopCondition",
]


@dataclass(frozen=True)
class SearchView:
    """What stop conditions read of a running search.

    Attributes:
        config: the optimizer config; loss: the loss candidates are ranked by.
        state: the search's state (to read, never to change).
        fits, unseen: what :meth:`next_generation_fits` and :meth:`has_unseen_evidence` ask
            (asked only when a condition calls them).
    """

    config: GeneticConfig
    loss: Loss
    state: SearchState
    fits: Callable[[], bool]
    unseen: Callable[[], bool]

    def next_generation_fits(self) -> bool:
        """Whether one more generation fits in the budget (with the final choice reserved)."""
        return self.fits()

    def has_unseen_evidence(self) -> bool:
        """Whether a population member's lineage has not yet been shown some correction."""
        return self.unseen()


class StopCondition(Protocol):
    """Ends the search with ``reason`` when :meth:`should_stop` holds."""

    reason: str

    def should_stop(self, search: SearchView) -> bool: ...


class PopulationOfOne:
    reason = "population_size_1"

    def should_stop(self, search: SearchView) -> bool:
        return search.config.population_size == 1


class MaxGenerations:
    reason = "generations"

    def should_stop(self, search: SearchView) -> bool:
        return search.state.generation >= search.config.generations


class PerfectTrain:
    reason = "perfect_train"

    def should_stop(self, search: SearchView) -> bool:
        best = search.loss.best_possible
        return best is not None and search.state.best_so_far == best and not search.has_unseen_evidence()


class Patience:
    reason = "patience"

    def should_stop(self, search: SearchView) -> bool:
        return search.state.since_improvement >= search.config.patience


class Exhausted:
    reason = "exhausted"

    def should_stop(self, search: SearchView) -> bool:
        return search.state.exhausted


class BudgetSpent:
    reason = "budget"

    def should_stop(self, search: SearchView) -> bool:
        return not search.next_generation_fits()


DEFAULT_STOP_CONDITIONS: tuple[StopCondition, ...] = (
    PopulationOfOne(),
    MaxGenerations(),
    PerfectTrain(),
    Exhausted(),
    Patience(),
    BudgetSpent(),
)


def first_reason(
    conditions: tuple[StopCondition, ...] | list[StopCondition], search: SearchView
) -> str | None:
    """The ``reason`` of the first condition that holds, or None to go on."""
    return next((c.reason for c in conditions if c.should_stop(search)), None)
