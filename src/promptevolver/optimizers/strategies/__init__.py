"""The search's strategies, each one decision: what a user extends, and the ones we ship.

Extension points — small Protocols, each handed a view, never the run:

* :class:`StopCondition` (``reason``; ``should_stop(search)`` on a :class:`SearchView`): pass yours
  as ``GeneticOptimizer(stop_conditions=[...])``; :data:`DEFAULT_STOP_CONDITIONS` are ours
  (:class:`MaxGenerations`, :class:`PerfectTrain`, :class:`Patience`, :class:`Exhausted`,
  :class:`BudgetSpent`, :class:`PopulationOfOne`); how each stop reason reads (the summary line,
  the report, a resume's note): :data:`STOP_REASONS` (:class:`StopWords`), the one home;
* :class:`ParentSelector` (``select(pool, arity, rng)`` on a :class:`Pool`): an offspring's parents;
  ours is :class:`ParetoTournament`.

Ours besides: the budget (:class:`BudgetMeter`, :func:`check_upfront`), screening on minibatches,
racing (:class:`Race`), survivors (:func:`front_rows`), and the one decision rule of every choice
(:class:`PairedRule` on a :class:`Paired` comparison; :class:`PairedChoice`, the final choice).
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.optimizers.strategies._budget import BudgetMeter as BudgetMeter
    from promptevolver.optimizers.strategies._budget import check_upfront as check_upfront
    from promptevolver.optimizers.strategies._final_choice import Paired as Paired
    from promptevolver.optimizers.strategies._final_choice import PairedChoice as PairedChoice
    from promptevolver.optimizers.strategies._final_choice import PairedRule as PairedRule
    from promptevolver.optimizers.strategies._racing import Race as Race
    from promptevolver.optimizers.strategies._selection import ParentSelector as ParentSelector
    from promptevolver.optimizers.strategies._selection import ParetoTournament as ParetoTournament
    from promptevolver.optimizers.strategies._selection import Pool as Pool
    from promptevolver.optimizers.strategies._selection import front_rows as front_rows
    from promptevolver.optimizers.strategies._stopping import (
        DEFAULT_STOP_CONDITIONS as DEFAULT_STOP_CONDITIONS,
    )
    from promptevolver.optimizers.strategies._stopping import BudgetSpent as BudgetSpent
    from promptevolver.optimizers.strategies._stopping import Exhausted as Exhausted
    from promptevolver.optimizers.strategies._stopping import MaxGenerations as MaxGenerations
    from promptevolver.optimizers.strategies._stopping import Patience as Patience
    from promptevolver.optimizers.strategies._stopping import PerfectTrain as PerfectTrain
    from promptevolver.optimizers.strategies._stopping import PopulationOfOne as PopulationOfOne
    from promptevolver.optimizers.strategies._stopping import SearchView as SearchView
    from promptevolver.optimizers.strategies._stopping import StopCondition as StopCondition

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.optimizers.strategies._budget": ["BudgetMeter", "check_upfront"],
        "promptevolver.optimizers.strategies._final_choice": ["Paired", "PairedChoice", "PairedRule"],
        "promptevolver.optimizers.strategies._racing": "*",
        "promptevolver.optimizers.strategies._selection": [
            "ParentSelector",
            "ParetoTournament",
            "Pool",
            "front_rows",
        ],
        "promptevolver.optimizers.strategies._stopping": "*",
    },
)
