"""What an operator is: it plans an offspring from the parents it is given, then makes it with
meta calls.

An :class:`Operator` has a ``name``, a ``weight`` (relative odds of being drawn for an offspring;
0 switches it off), an ``arity`` (how many parents it takes: the breeder's
:class:`~promptevolver.optimizers.strategies._selection.ParentSelector` chooses them; an optional
``eligible(candidate, view)`` says which candidates it can improve), :meth:`~Operator.meta_calls`
(the most meta calls one offspring costs, read by the cost model), :meth:`~Operator.plan` (pure:
reads a :class:`BreedingView` and its parents, draws from the Generator it is given, makes no
call) and :meth:`~Operator.run` (the meta calls, through a :class:`MetaContext`). Plans are drawn
in a fixed order before any call is made and run concurrently; children come back in plan order,
so a run never depends on which call finishes first. To add an operator, write one class with
these members and pass it to ``GeneticOptimizer(operators=[...])``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.config import GeneticConfig
from promptevolver.evaluation import Loss
from promptevolver.judge import Metric, label_entry
from promptevolver.llm import LLMClient
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._evidence import Evidence
from promptevolver.optimizers._state import PlanKey
from promptevolver.optimizers.operators._meta_prompts import Example

__all__ = ["BreedingView", "Child", "MetaContext", "Operator", "Plan", "Weighted"]


@dataclass(frozen=True)
class Plan:
    """One planned offspring.

    Attributes:
        operator: the operator's name.
        parents: the parent candidates (none for reverse engineering).
        slot: run-unique plan number, set by the breeder; it keeps the plan's meta calls distinct
            (the requests' ``sample_index``, hence cache keys).
        positions: train sample positions the meta calls show (examples or failures).
        contrast: train positions shown as passing samples, for contrast (mutation only).
        fold: out-of-bag runs: the fold the offspring keeps unseen (None: no fold).
        prompt: the one prompt a mutation rewrites (None: every prompt).
        examples: the offspring's example policy (its parent's, a static set changed by
            :mod:`._demos`; ``none`` by default).
    """

    operator: str
    parents: tuple[Candidate, ...]
    slot: int = 0
    positions: tuple[int, ...] = ()
    contrast: tuple[int, ...] = ()
    fold: int | None = None
    prompt: str | None = None
    examples: str = "none"

    @property
    def key(self) -> PlanKey:
        """The plan's identity in the tabu list: operator, parent ids, sorted shown positions."""
        return (self.operator, tuple(p.id for p in self.parents), tuple(sorted(self.positions)))


@dataclass
class Child:
    """An operator's product before it becomes a candidate: instructions, or a rejection reason
    (and, when a meta call failed, the LLM error's own text in ``error``)."""

    plan: Plan
    instructions: dict[str, str] | None
    feedback: list[str] = field(default_factory=list)
    rejected: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class BreedingView:
    """What planning reads (never writes).

    Attributes:
        population: the current population.
        train: the train positions candidates are judged on; ``train_correct()`` is aligned with it.
        labels: human label per sample position.
        loss: the loss (its direction ranks candidates).
        config: the optimizer config.
        evidence: what the annotations say at each usable position (:mod:`..evidence`).
        evidence_pool: train positions with a verdict or reason correction, judged or not.
        folds: out-of-bag runs (small data): position → fold; empty otherwise.
        prompt_corrections: prompt name → train positions where the human edited that prompt's
            output (which prompt the failures come from); empty for a single-prompt metric.
        static_set: dataset positions of the example store's static set (what a candidate of
            policy ``static`` is shown; :mod:`._demos`).
    """

    population: Sequence[Candidate]
    train: Sequence[int]
    labels: Sequence[float | None]
    loss: Loss
    config: GeneticConfig
    evidence: Mapping[int, Evidence] = field(default_factory=dict)
    evidence_pool: Sequence[int] = ()
    folds: Mapping[int, int] = field(default_factory=dict)
    prompt_corrections: Mapping[str, frozenset[int]] = field(default_factory=dict)
    static_set: Sequence[int] = ()

    @property
    def n_folds(self) -> int:
        return max(self.folds.values(), default=-1) + 1

    def allowed(self, fold: int | None) -> Callable[[int], bool]:
        """Whether a sample may be shown to an offspring keeping ``fold`` unseen."""
        if fold is None or not self.folds:
            return lambda p: True
        return lambda p: self.folds.get(p) != fold


@dataclass(frozen=True)
class MetaContext:
    """What running an operator needs: the reflection LLM, the judge's shape and the examples.

    Attributes:
        llm: client for meta calls.
        metric: the judge (its name, prompts and input fields are shown to meta calls).
        dataset: the annotated samples; positions index ``dataset.samples``.
        labels: human label per position.
        config: the optimizer config (``meta_temperature``, ``max_feedbacks``).
        judged: parent id → its judge outputs by position (shown to feedback calls).
        facts: what a feedback item must not quote (names, numbers, phrases only one sample
            holds, :class:`~..distill.SampleFacts`); None: no such filter (``strategy: genetic``).
    """

    llm: LLMClient
    metric: Metric
    dataset: SingleMetricAnnotation
    labels: Sequence[float | None]
    config: GeneticConfig
    judged: Mapping[int, Mapping[int, dict[str, Any]]] = field(default_factory=dict)
    facts: Any = None

    def example(self, position: int, prompt_name: str, judged: dict[str, Any] | None = None) -> Example:
        """The annotated sample at ``position`` as a meta-call example: the judge's inputs, the
        human's verdict (and reason, when the human wrote or accepted one), and optionally the
        current judge's output."""
        sample = self.dataset.samples[position]
        approved = sample.expected_output(prompt_name)
        if len(self.metric.get_prompts()) > 1:  # one prompt of several: its own input and output
            annotation = sample.prompts.get(prompt_name)
            inputs = dict(annotation.prompt_input) if annotation and annotation.prompt_input else None
            inputs = inputs or self.metric.prompt_inputs(sample.metric_input)
            own = dict(approved or {})
            said = sample.label_reason  # a label given to the whole sample: the human's reason for it
            if said and own.get("reason") != said:
                own["human_reason"] = said
            return Example(inputs=inputs, expected=own, judged=judged)
        expected: dict[str, Any] = {}
        if approved and approved.get("reason"):
            expected["reason"] = approved["reason"]
        label = self.labels[position]
        if label is not None:  # as the judge answers it: 1, 4, "tie", "refund"
            key, shown = label_entry(self.metric, label, binary=self.dataset.is_binary)
            expected[key] = shown
        else:
            expected["verdict" if self.dataset.is_binary else "score"] = None
        return Example(
            inputs=self.metric.prompt_inputs(sample.metric_input), expected=expected, judged=judged
        )


class Weighted:
    """The ``weight`` of a bundled operator: its relative odds of being drawn for an offspring
    (0 switches it off), checked when the operator is made.

    Raises:
        ValueError: ``weight`` < 0.
    """

    def __init__(self, *, weight: float = 1.0) -> None:
        if weight < 0:
            raise ValueError(f"weight must be >= 0, got {weight}")
        self.weight = weight


class Operator(Protocol):
    """A genetic operator (see the module docstring)."""

    name: str
    weight: float
    #: How many parents one offspring takes (0: none, e.g. reverse engineering).
    arity: int

    def meta_calls(self, prompts: int) -> int:
        """The most meta calls one offspring makes, for a candidate of ``prompts`` prompts."""
        ...

    def plan(
        self, view: BreedingView, parents: tuple[Candidate, ...], rng: np.random.Generator
    ) -> Plan | None:
        """One plan for ``parents`` (``arity`` of them, chosen by the breeder's selector) drawn
        from ``rng`` (slot 0: the breeder numbers it), or None when they offer nothing to learn."""
        ...

    async def run(self, plan: Plan, ctx: MetaContext) -> Child:
        """Make the offspring; a failed or unusable meta answer is a rejected :class:`Child`."""
        ...
