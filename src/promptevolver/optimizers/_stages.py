"""The pipeline's stages as objects of one role, and each strategy as the list of them.

A :class:`Stage` has one method, ``run``: it works on a :class:`~._views.StageView` (the run's
fixed context and its state, with the run's judging, steps and checkpoint) and returns the
typed, frozen record of what it did (:mod:`._records`), or None when it had nothing to do (a
resume past it). Each stage checks for itself whether its record is there already, so a resumed
run starts at the first stage not done. The work of each stage is in :mod:`._phases` (the
distillation's ladders in :mod:`._distill`, small data in :mod:`._refit`); the generation loop
the search runs is the optimizer's (``view.evolve``: :meth:`GeneticOptimizer._evolve
<._genetic.GeneticOptimizer._evolve>`).

A strategy is the list (:data:`STRATEGIES`)::

    auto      Seed  Distill  Verify  Examples  Search(otherwise=CrossFit)  FinalChoice
    distill   Seed  Distill  Verify  Examples  Search(otherwise=CrossFit)  FinalChoice
    examples  Seed  Distill(skip)  Verify  Examples  Search(otherwise=CrossFit)  FinalChoice
    genetic   InitialPopulation  Generations  FinalChoice

``auto`` and ``distill`` differ in the search's warrant alone (:func:`._phases.search_warranted`:
under ``distill`` it is never warranted, and the record says so); where the search does not run,
the cross-fit stage runs in its place. A user composes their own list of these or of their own
:class:`Stage` objects and hands it to ``GeneticOptimizer(stages=...)``; the last stage returns
the :class:`FinalChoiceRecord` the result is built from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from promptevolver.optimizers import _phases as phases
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._records import SearchRecord, StageRecord
from promptevolver.optimizers._views import StageView

__all__ = [
    "CrossFit",
    "Distill",
    "Examples",
    "FinalChoice",
    "FinalChoiceRecord",
    "Generations",
    "InitialPopulation",
    "Search",
    "STRATEGIES",
    "Seed",
    "Stage",
    "Verify",
    "strategy",
]


@runtime_checkable
class Stage(Protocol):
    """A stage of a run: one step of a strategy, over the run's context and state.

    ``run`` returns the stage's typed, frozen record (:mod:`._records`), or None when it had
    nothing to do (its record was there already: a resumed run). It may raise what the run's
    steps raise (:class:`~promptevolver.errors.LLMUnusableError` when too many calls failed).
    """

    async def run(self, view: StageView) -> StageRecord | None: ...


@dataclass(frozen=True)
class FinalChoiceRecord(StageRecord):
    """What the final choice returns: the chosen candidate (``produced``) and why the run
    stopped (``stop_reason``). The choice's report is the state's ``final_choice``."""

    name: ClassVar[str] = "final_choice"

    stop_reason: str = ""


class Seed:
    """The seed (the metric's instructions) as candidate 0, not judged yet: the pipeline judges
    it where it needs to."""

    async def run(self, view: StageView) -> StageRecord | None:
        if not view.state.candidates:
            phases.register_seed(view, view.context.metric.get_instructions())
        return None


class Distill:
    """Stage 1: the distillation's ladders (meta calls only). ``skip``: none (``strategy:
    examples``: the instruction is kept as it is)."""

    def __init__(self, *, skip: bool = False) -> None:
        self.skip = skip

    async def run(self, view: StageView) -> StageRecord | None:
        if view.state.stages.distill is not None:
            return None
        if self.skip:
            phases.skip_distill(view)
        else:
            await phases.distill(view)
        view.checkpoint()
        return view.state.stages.distill


class Verify:
    """Stage 2: the seed and the ladders judged on held-out samples, the paired choice."""

    async def run(self, view: StageView) -> StageRecord | None:
        if view.state.stages.verify is not None:
            return None
        await phases.verify(view, [c for c in view.state.candidates if c.operator == "distill"])
        view.checkpoint()
        return view.state.stages.verify


class Examples:
    """Stage 2b: the verified candidate with teaching examples, when warranted."""

    async def run(self, view: StageView) -> StageRecord | None:
        stages = view.state.stages
        if stages.examples is not None:
            return None
        assert stages.verify is not None, "the examples stage follows the verification"
        await phases.choose_examples(view, view.state.candidates[stages.verify.choice])
        view.checkpoint()
        return stages.examples


class CrossFit:
    """Stage 2c: learn from the held-out corrections too (when the search does not run)."""

    async def run(self, view: StageView) -> StageRecord | None:
        stages = view.state.stages
        if stages.cross_fit is not None:
            return None
        await phases.cross_fit(view, _handed_on(view))
        view.checkpoint()
        return stages.cross_fit


class Search:
    """Stage 3: the genetic search, when warranted (:func:`._phases.search_warranted`, decided
    once, after the examples stage); otherwise the ``otherwise`` stages run (the cross-fit), and
    the search's record says why it did not. A resumed search goes on from its last generation."""

    def __init__(self, *, otherwise: Sequence[Stage] = ()) -> None:
        self.otherwise = list(otherwise)

    async def run(self, view: StageView) -> StageRecord | None:
        state, stages = view.state, view.state.stages
        if stages.search is not None and not stages.search.ran:
            return None
        if stages.search is None:
            assert stages.verify is not None, "the search follows the verification"
            verified = state.candidates[stages.verify.choice]
            decision = phases.search_warranted(view, verified)
            if not decision.ran:
                for stage in self.otherwise:
                    await stage.run(view)
                stages.add(decision)
                return decision
            chosen = _handed_on(view)
            await phases.start_search(view, verified, str(decision.why), chosen)
            if not chosen.is_seed:  # the examples stage's choice, when it beat the verified rung
                state.chosen = chosen.id
            view.checkpoint()
        state.stop_reason = await view.evolve()
        phases.end_search(view)
        return stages.search


class InitialPopulation:
    """``strategy: genetic``'s start: the seed and reverse-engineered candidates, judged on train."""

    async def run(self, view: StageView) -> StageRecord | None:
        if view.state.candidates:
            return None
        await phases.initial_population(view, view.context.metric.get_instructions())
        view.checkpoint()
        return None


class Generations:
    """``strategy: genetic``'s search: generations until a stop condition holds."""

    async def run(self, view: StageView) -> StageRecord | None:
        view.state.stop_reason = await view.evolve()
        return None


class FinalChoice:
    """The result: after a search, the paired choice on held-out samples among the seed and the
    finalists (:func:`._phases.finish`); after the verification (no search), the verified
    candidate, or the cross-fit's (:func:`._phases.finish_verified`)."""

    async def run(self, view: StageView) -> FinalChoiceRecord:
        state, search = view.state, view.state.stages.search
        if search is None and state.stages.verify is not None:  # a user's stages without a search
            search = SearchRecord.not_run("the run's stages hold no search")
        if search is None or search.ran:
            best = await phases.finish(view, str(state.stop_reason))
        else:
            best = phases.finish_verified(view, _handed_on(view, cross_fit=True), "distilled", search)
        return FinalChoiceRecord(produced=(best.id,), stop_reason=str(state.stop_reason))


def _handed_on(view: StageView, *, cross_fit: bool = False) -> Candidate:
    """The candidate the stages so far hand on: the examples stage's choice, else the verified
    one (``cross_fit``: the cross-fit's first, when it ran)."""
    stages = view.state.stages
    record = (stages.cross_fit if cross_fit else None) or stages.examples or stages.verify
    assert record is not None, "this stage follows the verification"
    return view.state.candidates[record.choice]


_PIPELINE: tuple[Stage, ...] = (Verify(), Examples(), Search(otherwise=[CrossFit()]), FinalChoice())

#: Each ``optimizer.strategy``'s stages, in order (see the module docstring). Stages keep no
#: state of their own: a run's is in its view.
STRATEGIES: dict[str, tuple[Stage, ...]] = {
    "auto": (Seed(), Distill(), *_PIPELINE),
    "distill": (Seed(), Distill(), *_PIPELINE),
    "examples": (Seed(), Distill(skip=True), *_PIPELINE),
    "genetic": (InitialPopulation(), Generations(), FinalChoice()),
}


def strategy(name: str) -> tuple[Stage, ...]:
    """The stages of strategy ``name`` (:data:`STRATEGIES`).

    Raises:
        ValueError: an unknown strategy (naming the known ones).
    """
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    return STRATEGIES[name]
