"""The phases of a search around its generations: the initial population, the repair after a
resume, and the final choice. The generation loop itself is :mod:`.genetic`.

Each phase is one failure-policy step (:meth:`SearchRun.begin_step` … :meth:`SearchRun.end_step`):
too many failed evaluations in it stop the run with :class:`~promptevolver.errors.LLMUnusableError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from promptevolver.judge.batch import gather_or_cancel
from promptevolver.optimizers import adoption, history, views
from promptevolver.optimizers.candidates import Candidate
from promptevolver.optimizers.operators.base import Child
from promptevolver.optimizers.result import OptimizationResult
from promptevolver.optimizers.run import SearchRun
from promptevolver.optimizers.state import SearchState
from promptevolver.optimizers.strategies import budget
from promptevolver.optimizers.strategies.final_choice import (
    PairedChoice,
    final_choice_rng,
    held_out,
    out_of_bag,
)

__all__ = ["finish", "initial_population", "repair"]


async def initial_population(run: SearchRun, seed_instructions: Mapping[str, str]) -> None:
    """The seed (``seed_instructions``: prompt name → instruction), judged on train while its
    first offspring are made from the annotations' corrections (the two are independent); the
    offspring screened against it, then judged; recorded as generation 0.

    Raises:
        LLMUnusableError: the seed's evaluation or the initial population failed too often.
    """
    seed = adoption.new_candidate(run, dict(seed_instructions), "seed")
    assert seed is not None
    extra = run.config.population_size - 1 if run.config.reverse_engineer else 0
    plans = run.breeder.plan_initial(views.breeding_view(run), seed, extra, run.state.rng, run.state.slots)
    run.state.slots += len(plans)
    run.begin_step("the seed's train evaluation", count_parse=True)
    breeding = run.breeder.run(plans, views.meta_context(run, [seed]))
    made = (await gather_or_cancel([breeding, _judged(run, seed)]))[0]
    run.end_step()
    budget.after_seed(run, seed)
    run.begin_step("the initial population")
    children = adoption.adopt(run, made)
    passed = await run.screen(children, {c.id: [seed] for c in children})
    await run.judge_train(passed)
    run.end_step()
    run.state.population = [seed, *passed]
    history.record_generation(run, offspring=len(children))


async def repair(run: SearchRun) -> None:
    """After a resume: judge again the population's train evaluations that had failed (the
    checkpoint keeps no failed answer), so their scores cover what the LLM can answer now."""
    damaged = [c for c in run.state.population if c.train is not None and c.train.failures]
    if damaged:
        run.begin_step("re-judging failed evaluations after the resume")
        await run.judge_train(damaged)
        run.end_step()


async def finish(run: SearchRun, stop_reason: str) -> OptimizationResult:
    """Judge the seed and the finalists on validation (held out; out of bag: compare them on
    the samples each never learned from); the paired choice there is the result
    (:class:`~.strategies.final_choice.PairedChoice`). An extended run's earlier choice stays a
    finalist and is replaced only by a finalist that beats it."""
    state = run.state
    state.stop_reason = stop_reason
    choice = PairedChoice(
        finalists=run.config.finalists, confidence=run.config.confidence, min_coverage=run.min_coverage
    )
    incumbent = None if state.chosen is None else state.candidates[state.chosen]
    finalists = choice.candidates(state.seed, state.population, run.loss, incumbent)
    run.meter.release_reserve()
    if run.split.regime == "out-of-bag":
        compare = out_of_bag(run.state.seed, run.train)
    else:
        run.begin_step("the final choice on validation")
        await run.judge_validation(finalists)
        run.end_step()
        focus = run.validation_focus
        compare = held_out(run.state.seed, focus.weight_array(focus.positions))
    rng = final_choice_rng(run.config.random_seed)
    best = choice.choose(finalists, compare, rng, incumbent=incumbent, alone=_why_alone(state))
    state.chosen = best.id
    run.final_choice = {"regime": run.split.regime, **choice.report}
    run.events.emit("stop", run.state.generation, reason=stop_reason, best=best.id)
    return OptimizationResult.from_run(run, best)


def _why_alone(state: SearchState) -> str:
    """Why no candidate besides the seed is left to choose from, from what became of the offspring."""
    made = state.candidates[1:]
    screened = sum(c.screened_out for c in made)
    if not made:
        rejected = sum(state.rejections.values())
        if not rejected and not state.duplicates:
            return "no offspring was made"
        return (
            f"no offspring was made ({rejected} operator answers rejected, {state.duplicates} duplicates "
            "of existing candidates)"
        )
    if screened == len(made):
        return (
            f"each of the {len(made)} offspring was screened out on its minibatch (none did better than "
            "its parent there)"
        )
    return (
        f"of the {len(made)} offspring, {screened} were screened out on their minibatch and the others "
        "had too few measured samples (failed evaluations)"
    )


async def _judged(run: SearchRun, seed: Candidate) -> list[Child]:
    """The seed's evaluations, typed to run beside the breeder (it makes no child): on train, and
    on validation too (the seed is always a finalist), so the final choice waits for fewer calls."""
    if run.split.regime == "held-out":
        await asyncio.gather(run.judge_train([seed]), run.judge_validation([seed]))
    else:
        await run.judge_train([seed])
    return []
