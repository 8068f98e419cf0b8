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

Besides these, the pipeline's ``distilled`` (it ended after the verification, no search). How
each reason reads — on the summary's stop line, in the report, in a resume's note — is here
too, in :data:`STOP_REASONS`: the one home of that wording.

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
    "STOP_REASONS",
    "StopWords",
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


@dataclass(frozen=True)
class StopWords:
    """How one stop reason reads.

    Attributes:
        line: on the summary's stop line (``{patience}`` filled in).
        report: in the report's stop sentence (``{generations}``, ``{patience}``); None: the
            report says ``stop reason: <reason>``.
        final: why more generations would not lift it, for a resume's note (None: they may).
    """

    line: str
    report: str | None = None
    final: str | None = None


#: Each stop reason's wording (:class:`StopWords`), read by the summary line, the report and a
#: resume's note; a reason not here (a user's stop condition) reads as its name.
STOP_REASONS: dict[str, StopWords] = {
    "generations": StopWords(
        "every generation the config asks for ran", report="all {generations} generations ran"
    ),
    "perfect_train": StopWords(
        "a candidate reached the best possible train score, so train has nothing left to teach",
        report="a candidate got every train sample right",
        final="nothing is left to learn on train",
    ),
    "patience": StopWords(
        "the best train score did not improve for {patience} generation(s) in a row",
        report="the best train score did not improve for {patience} generations (patience)",
    ),
    "exhausted": StopWords(
        "every operator plan the population allows had been tried",
        report="every possible offspring had been tried",
        final="every operator plan the population allows had been tried",
    ),
    "budget": StopWords(
        "the budget could not pay for another generation and the final choice",
        report="the budget could not pay for another generation",
    ),
    "population_size_1": StopWords(
        "population_size is 1: the seed is evaluated, nothing else",
        report="the population size is 1, so only the seed was evaluated",
        final="a population of one makes no offspring",
    ),
    "distilled": StopWords(
        "the pipeline ended after verifying the distilled ladder",
        final=(
            "the pipeline ended after verification and its search was not warranted (result.json "
            "stages.search.why); generations apply to a search, e.g. --set optimizer.strategy=genetic in a "
            "new run"
        ),
    ),
}


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
