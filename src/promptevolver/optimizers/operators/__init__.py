"""Offspring operators: what a user extends to make new candidates, and the ones we ship.

Extension point — :class:`Operator` (a Protocol): ``name``, ``arity``, ``meta_calls(prompts)``,
``plan(view, rng, ...)`` → :class:`Plan` and ``async run(plan, ctx)`` → :class:`Child`; it sees a
:class:`BreedingView` (the population, train part, labels, evidence) and a :class:`MetaContext`
(the reflection client, metric and data), never the run. :class:`Weighted` is the base of ours (a
weight: the operator's odds of being drawn for an offspring). Pass yours as
``GeneticOptimizer(operators=[...])``; :func:`default_operators` gives a config's (mutation and
crossover, weighted). :mod:`promptevolver.testing.contracts` holds the contract suite.

Ours: :class:`Mutation` (feedback-guided rewrite), :class:`Crossover` (merge two complementary
parents), :class:`ReverseEngineering` (infer instructions from annotated examples); the
:class:`Breeder` plans and runs them. The meta prompts they send (:func:`feedback`,
:func:`rewrite`, :func:`crossover`, :func:`reverse_engineer`, :func:`lessons`) are here too: the
cost model of ``estimate`` counts their tokens.
"""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.optimizers.operators._base import BreedingView as BreedingView
    from promptevolver.optimizers.operators._base import Child as Child
    from promptevolver.optimizers.operators._base import MetaContext as MetaContext
    from promptevolver.optimizers.operators._base import Operator as Operator
    from promptevolver.optimizers.operators._base import Plan as Plan
    from promptevolver.optimizers.operators._base import Weighted as Weighted
    from promptevolver.optimizers.operators._breeder import Breeder as Breeder
    from promptevolver.optimizers.operators._breeder import default_operators as default_operators
    from promptevolver.optimizers.operators._crossover import Crossover as Crossover
    from promptevolver.optimizers.operators._meta_prompts import Example as Example
    from promptevolver.optimizers.operators._meta_prompts import crossover as crossover
    from promptevolver.optimizers.operators._meta_prompts import feedback as feedback
    from promptevolver.optimizers.operators._meta_prompts import lessons as lessons
    from promptevolver.optimizers.operators._meta_prompts import reverse_engineer as reverse_engineer
    from promptevolver.optimizers.operators._meta_prompts import rewrite as rewrite
    from promptevolver.optimizers.operators._mutation import Mutation as Mutation
    from promptevolver.optimizers.operators._reverse_engineer import ReverseEngineering as ReverseEngineering

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.optimizers.operators._base": "*",
        "promptevolver.optimizers.operators._breeder": "*",
        "promptevolver.optimizers.operators._crossover": "*",
        "promptevolver.optimizers.operators._meta_prompts": [
            "Example",
            "crossover",
            "feedback",
            "lessons",
            "reverse_engineer",
            "rewrite",
        ],
        "promptevolver.optimizers.operators._mutation": "*",
        "promptevolver.optimizers.operators._reverse_engineer": "*",
    },
)
