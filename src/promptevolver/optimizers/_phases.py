"""The phases of a run around its generations: the distillation and verification stages, the
initial population, the repair after a resume, and the final choice. The generation loop itself
is :mod:`._genetic`, which composes them by ``strategy``.

Each phase is one failure-policy step (:meth:`SearchRun.begin_step
<._run.SearchRun.begin_step>` … ``end_step``, through the stage's :class:`~._views.StageView`):
too many failed evaluations in it stop the run with :class:`~promptevolver.errors.LLMUnusableError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from promptevolver.evaluation import Score
from promptevolver.judge import gather_or_cancel
from promptevolver.llm import RUN_OF_FAILURES, Usage, waves
from promptevolver.optimizers import _adoption as adoption
from promptevolver.optimizers import _refit as refit
from promptevolver.optimizers import _reporting as reporting
from promptevolver.optimizers import _views as views
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._distill import (
    BARREN_ROUNDS,
    CONTRAST,
    SMALL_BARREN_ROUNDS,
    SMALL_CONTRAST,
    Distiller,
    DistillView,
)
from promptevolver.optimizers._records import (
    BudgetStop,
    CrossFitRecord,
    DistillRecord,
    ExamplesRecord,
    SearchRecord,
    StageCost,
    VerifyRecord,
)
from promptevolver.optimizers._run import RunContext
from promptevolver.optimizers._state import SearchState
from promptevolver.optimizers._views import StageView
from promptevolver.optimizers.operators._base import Child
from promptevolver.optimizers.strategies import _budget as budget
from promptevolver.optimizers.strategies import _screening as screening
from promptevolver.optimizers.strategies._final_choice import (
    Comparison,
    Paired,
    PairedChoice,
    PairedRule,
    final_choice_rng,
    held_out,
    out_of_bag,
)
from promptevolver.optimizers.strategies._racing import Race

__all__ = [
    "RACE_STREAM",
    "choose_examples",
    "cross_fit",
    "distill",
    "finish",
    "finish_verified",
    "initial_population",
    "register_seed",
    "repair",
    "search_warranted",
    "start_search",
    "verify",
]

#: Stream of the verification race's shuffles, apart from the search's generator (a resume
#: repeats the same race, like the final choice's bootstrap).
RACE_STREAM = 0x4ACE

#: Most rounds of the cross-fit ladder (its corrections are few: one round shows them all; the
#: next ones find what the first missed, as the distillation's rounds do).
CROSS_FIT_ROUNDS = 3

#: Most learning samples the cross-fit check judges the two candidates on (a seeded subsample of
#: the train focus set): enough to see lessons that hurt (a loss of 2 in 32 samples is seen
#: with probability about 0.8), at a third less than the whole focus set of 48.
CROSS_FIT_CHECK = 32


async def initial_population(run: StageView, seed_instructions: Mapping[str, str]) -> None:
    """The seed (``seed_instructions``: prompt name → instruction), judged on train while its
    first offspring are made from the annotations' corrections (the two are independent); the
    offspring screened against it, then judged; recorded as generation 0.

    Raises:
        LLMUnusableError: the seed's evaluation or the initial population failed too often.
    """
    seed = adoption.new_candidate(run.state, dict(seed_instructions), "seed")
    assert seed is not None
    extra = run.context.config.population_size - 1 if run.context.config.reverse_engineer else 0
    plans = run.context.breeder.plan_initial(
        views.breeding_view(run.context, run.state.population), seed, extra, run.state.rng, run.state.slots
    )
    run.state.slots += len(plans)
    run.begin_step("the seed's train evaluation", count_parse=True)
    breeding = run.context.breeder.run(plans, views.meta_context(run.context, [seed]))
    made = (await gather_or_cancel([breeding, _judged(run, seed)]))[0]
    run.end_step()
    budget.after_seed(run.budget(), seed)
    run.begin_step("the initial population")
    children = run.adopt(made)
    passed = await screening.screen(run.screening(), children, {c.id: [seed] for c in children})
    await run.judge_train(passed)
    run.end_step()
    run.state.population = [seed, *passed]
    run.record_generation(len(children))


async def repair(run: StageView) -> None:
    """After a resume: judge again the population's train evaluations that had failed (the
    checkpoint keeps no failed answer), so their scores cover what the LLM can answer now."""
    damaged = [c for c in run.state.population if c.train is not None and c.train.failures]
    if damaged:
        run.begin_step("re-judging failed evaluations after the resume")
        await run.judge_train(damaged)
        run.end_step()


async def finish(run: StageView, stop_reason: str) -> Candidate:
    """Judge the seed and the finalists on validation (held out; out of bag: compare them on
    the samples each never learned from); the paired choice there is the result
    (:class:`~.strategies.final_choice.PairedChoice`). An extended run's earlier choice stays a
    finalist and is replaced only by a finalist that beats it; so does the pipeline's verified rung
    when a search followed the verification (:func:`start_search` makes it the incumbent)."""
    state = run.state
    _refuse_a_dead_end(run)
    state.stop_reason = stop_reason
    choice = PairedChoice(
        finalists=run.context.config.finalists,
        confidence=run.context.config.confidence,
        min_coverage=run.context.min_coverage,
    )
    incumbent = None if state.chosen is None else state.candidates[state.chosen]
    finalists = choice.candidates(state.seed, state.population, run.context.loss, incumbent)
    run.context.meter.release_reserve()
    if run.context.split.regime.held_out:
        run.begin_step("the final choice on validation")
        await run.judge_validation(finalists)
        run.end_step()
    compare = _against(run.context, run.state.seed)
    rng = final_choice_rng(run.context.config.random_seed)
    best = choice.choose(finalists, compare, rng, incumbent=incumbent, alone=_why_alone(state))
    state.chosen = best.id
    run.state.final_choice = {"regime": run.context.split.regime.value, **choice.report}
    run.context.events.emit("stop", run.state.generation, reason=stop_reason, best=best.id)
    return best


def _refuse_a_dead_end(run: StageView) -> None:
    """A search that ended while its server answered nothing (the last ``RUN_OF_FAILURES // 2``
    attempts or more failed on the server's side, none answered since: its last generations made
    nothing) is stopped with the cause, not finished as if its plans or generations had run out.

    Raises:
        LLMUnusableError: it did.
    """
    failed = run.context.watch.run
    if failed.total() < RUN_OF_FAILURES // 2:
        return
    cause, count = failed.most_common(1)[0]
    what = (
        f"the search ended with its last {failed.total()} attempts failed on the server's side and "
        "none answered since, so its last generations made nothing"
    )
    run.stop(what, cause, count, failed.total(), run.context.watch.examples.get(cause, ""))
    run.end_step()


def _why_alone(state: SearchState) -> str:
    """Why no candidate besides the seed is left to choose from, from what became of the offspring
    (the pipeline's candidates — distilled rungs, the examples stage's, the cross-fit rung —
    judged before the search, apart)."""
    staged = [c for c in state.candidates[1:] if c.operator in PIPELINE_OPERATORS]
    why = _why_offspring_alone(state)
    if not staged:
        return why
    kinds = sorted({_STAGE_NAMES[c.operator] for c in staged})
    stages = ", ".join(kinds)
    return f"no candidate of the pipeline's stages ({stages}) beat it on held-out samples, and {why}"


#: Operators of the candidates the pipeline's stages make before the search.
PIPELINE_OPERATORS = frozenset({"distill", "examples", "cross_fit"})
_STAGE_NAMES = {"distill": "distilled rungs", "examples": "teaching examples", "cross_fit": "cross-fit rung"}


def _why_offspring_alone(state: SearchState) -> str:
    made = [c for c in state.candidates[1:] if c.operator not in PIPELINE_OPERATORS]
    screened = sum(c.screened_out for c in made)
    if not made:
        rejected = sum(state.rejections.values())
        if not rejected and not state.duplicates:
            return "the search made no offspring"
        return (
            f"the search made no offspring ({rejected} operator answers rejected, {state.duplicates} "
            "duplicates of existing candidates)"
        )
    if screened == len(made):
        return (
            f"each of the {len(made)} offspring was screened out on its minibatch (none did better than "
            "its parent there)"
        )
    judged = [c for c in made if not c.screened_out]
    failed = sum(c.train is None or c.train.coverage < 1.0 for c in judged)
    parts = [f"{screened} were screened out on their minibatch"] if screened else []
    if failed:
        parts.append(f"{failed} had too few measured samples (failed evaluations)")
    if len(judged) - failed:
        parts.append(f"{len(judged) - failed} did not survive into the final population")
    return f"of the {len(made)} offspring, " + ", ".join(parts)


async def _judged(run: StageView, seed: Candidate) -> list[Child]:
    """The seed's evaluations, typed to run beside the breeder (it makes no child): on train, and
    on validation too (the seed is always a finalist), so the final choice waits for fewer calls."""
    if run.context.split.regime.held_out:
        await asyncio.gather(run.judge_train([seed]), run.judge_validation([seed]))
    else:
        await run.judge_train([seed])
    return []


# --- the distill-first pipeline (strategy auto and distill) ---------------------------------------


def register_seed(run: StageView, seed_instructions: Mapping[str, str]) -> Candidate:
    """The seed as candidate 0, not judged yet (the pipeline judges it where it needs to)."""
    seed = adoption.new_candidate(run.state, dict(seed_instructions), "seed")
    assert seed is not None
    return seed


async def distill(run: StageView) -> list[Candidate]:
    """Stage 1: the ladders of :mod:`._distill`, adopted as candidates (operator ``distill``; rung
    k's parent is rung k − 1, the first rung's the seed); meta calls only.

    Raises:
        LLMUnusableError: too many of the stage's meta calls failed.
    """
    started, before = time.perf_counter(), run.stage_start()
    seed, cfg = run.state.seed, run.context.config
    small = run.context.refit
    distiller = Distiller(
        rounds=cfg.distill_rounds,
        lessons=cfg.distill_lessons,
        sample_size=cfg.distill_sample_size,
        max_calls=cfg.distill_max_calls,
        barren_rounds=SMALL_BARREN_ROUNDS if small else BARREN_ROUNDS,
        contrast=SMALL_CONTRAST if small else CONTRAST,
    )
    run.context.events.emit("stage_start", 0, stage="distill")
    run.begin_step("the distillation stage")
    ladders = await distiller.climb(
        views.distill_view(run.context, seed),
        views.meta_context(run.context, [seed]),
        run.state.rng,
        run.state.slots,
    )
    run.state.slots += 1_000_000  # the stage's slots: its own range, apart from the search's
    rungs: list[Candidate] = []
    ladder_ids: dict[str, list[int]] = {}
    for ladder in ladders:
        parent, ids = seed, ladder_ids.setdefault(_ladder_key(ladder.fold), [])
        for child in ladder.rungs:
            adopted = run.adopt([child])
            for c in adopted:
                c.parents, c.seen = (parent.id,), c.seen | parent.seen
                rungs.append(c)
                parent = c
                ids.append(c.id)
            same = None if adopted or child.instructions is None else run.state.find(child.instructions)
            if same is not None and not same.is_seed:  # another ladder's rung, word for word
                ids.append(same.id)
    run.end_step()
    run.state.lessons = [x.to_dict() for ladder in ladders if ladder.pool for x in ladder.pool.lessons]
    stops = {_ladder_key(ladder.fold): ladder.stop for ladder in ladders}
    run.state.stages.add(
        DistillRecord(
            cost=_cost(run, before, started),
            produced=tuple(c.id for c in rungs),
            stop=stops,
            ladders={k: tuple(v) for k, v in ladder_ids.items()},
            context_splits=sum(ladder.context_splits for ladder in ladders),
            corrections=len(run.context.evidence_pool),
            unshown=len(set(run.context.evidence_pool) - set().union(*(ladder.shown for ladder in ladders))),
            lessons=len(run.state.lessons),
            sample_facts=sum(1 for x in run.state.lessons if x["sample_fact"]),
            budget_stop=BudgetStop.LADDER in stops.values(),
        )
    )
    run.context.events.emit(
        "stage_end", 0, stage="distill", candidates=[c.id for c in rungs], figures=_figures(run, "distill")
    )
    return rungs


def _ladder_key(fold: int | None) -> str:
    """A ladder's key in ``stages.distill`` (``stop``, ``ladders``): its fold, or ``all`` (every
    correction: the one ladder of held-out runs, the refit out of bag)."""
    return "all" if fold is None else str(fold)


async def verify(run: StageView, candidates: Sequence[Candidate]) -> Candidate:
    """Stage 2: the seed and the ladder judged on held-out samples (validation; out of bag, each
    candidate on the samples its lineage never learned from), then the paired final choice
    against the seed. Returns the verified choice (the seed when nothing beat it).

    Top first: the seed and each ladder's top rung (every general lesson it learned) are judged
    first; when a top rung beats the seed the lower rungs are never judged (their lessons are a
    subset). Otherwise the lower rungs race (:mod:`.strategies.racing`; the seed and the top rungs
    are never dropped) and the choice is made among all of them, a higher rung kept unless the
    held-out samples say its extra lessons hurt. ``result.json``'s ``racing`` says what was
    judged and the judge calls saved.

    Raises:
        LLMUnusableError: too many of the stage's judge calls failed.
    """
    started, before = time.perf_counter(), run.stage_start()
    distilled = run.state.stages.distill
    ladder_ids = {} if distilled is None else distilled.ladders
    if refit.has_refit(run.context, ladder_ids):
        return await _verify_refit(run, ladder_ids, started, before)
    seed = run.state.seed
    tops = [c for c in candidates if not any(o.parents == (c.id,) for o in candidates)]
    lower = [c for c in candidates if c not in tops]
    run.context.events.emit("stage_start", 0, stage="verify")
    run.begin_step("the verification on held-out samples", count_parse=True)
    run.context.meter.release_reserve()
    n_eval = len(_held_out_samples(run.context))
    per_rung = n_eval * run.context.metric.calls_per_evaluation
    field = await _held_out(run, [seed, *tops], keep=())
    best, report = _choose(run, field)
    run.state.race = {
        "rule": "top first: the seed and the top rung of each ladder",
        "dropped": [],
        "saved_judge_calls": 0,
        "lower_rungs": "none",
    }
    if lower and (best.is_seed or best not in tops):
        race = Race(looks=4 if run.context.config.racing else 1)
        field = await _held_out(run, [seed, *tops, *lower], keep={c.id for c in (seed, *tops)}, race=race)
        best, report = _choose(run, field)
        run.state.race = {**race.report, "lower_rungs": "raced: no top rung beat the seed"}
    elif lower:
        run.state.race["saved_judge_calls"] = len(lower) * per_rung
        run.state.race["lower_rungs"] = f"not judged: a top rung beat the seed ({len(lower)} rungs)"
    run.end_step()
    run.state.final_choice = {"regime": run.context.split.regime.value, "stage": "verify", **report}
    run.state.stages.add(
        VerifyRecord(
            cost=_cost(run, before, started),
            produced=(best.id,),
            judged=tuple(c.id for c in field),
            saved_judge_calls=run.state.race.get("saved_judge_calls", 0),
            final_choice=run.state.final_choice,
        )
    )
    run.context.events.emit("stage_end", 0, stage="verify", chosen=best.id, figures=_figures(run, "verify"))
    return best


async def _verify_refit(
    run: StageView, ladder_ids: Mapping[str, Sequence[int]], started: float, before: Usage
) -> Candidate:
    """:func:`verify` on small data with a refit: the recipe cross-validated over the folds
    (:mod:`._refit`)."""
    run.context.events.emit(
        "stage_start",
        0,
        stage="verify",
        phase="cross-validation: each fold's candidate on the samples it never learned from",
    )
    run.begin_step("the cross-validation of the distillation recipe", count_parse=True)
    run.context.meter.release_reserve()
    best, choice = await refit.verify(run, ladder_ids)
    run.end_step()
    run.state.final_choice = choice
    run.state.race = {
        "rule": (
            "cross-validation: each fold's top rung on its fold; the seed on "
            + (
                "a random share of the train samples, the recorded verdicts standing in for the others"
                if choice.get("seed_figure", {}).get("method") == "prediction_powered"
                else "every train sample"
            )
        ),
        "dropped": [],
        "saved_judge_calls": 0,
        "lower_rungs": "judged on their folds only when the top rungs hurt",
    }
    run.state.stages.add(
        VerifyRecord(
            cost=_cost(run, before, started),
            produced=(best.id,),
            judged=tuple(sorted({int(i) for row in choice["depths"] for i in row["rungs"].values()} | {0})),
            saved_judge_calls=0,
            final_choice=run.state.final_choice,
        )
    )
    run.context.events.emit("stage_end", 0, stage="verify", chosen=best.id, figures=_figures(run, "verify"))
    return best


async def _held_out(
    run: StageView, field: list[Candidate], *, keep: Any, race: Race | None = None
) -> list[Candidate]:
    """Judge ``field`` on its held-out samples (racing with ``race`` when given, never dropping
    the ids in ``keep``); returns those judged on all of them, with their scores set."""
    if not run.context.split.regime.held_out:
        await run.judge_train(field)
        return field
    focus = run.context.validation_focus
    if race is not None:
        weights = focus.weight_array(focus.positions)

        async def judge(cands: Sequence[Candidate], positions: Sequence[int]) -> list[Any]:
            return await run.judge(cands, positions, "validation")

        rng = np.random.default_rng((run.context.config.random_seed, RACE_STREAM))
        field = await race.run(
            field,
            focus.positions,
            weights,
            judge,
            rng,
            keep=keep,
            calls_per_evaluation=run.context.metric.calls_per_evaluation,
        )
    await run.judge_validation(field)  # whole scores (from the race's judgements: no call)
    return field


def _held_out_samples(ctx: RunContext) -> list[int]:
    """The samples held out for the run's candidates: the validation focus set; out of bag, the
    train focus set (each candidate's unseen ones among them)."""
    return ctx.validation_focus.positions if ctx.split.regime.held_out else ctx.train


def _held_out_score(ctx: RunContext, candidate: Candidate) -> Score | None:
    """``candidate``'s score on :func:`_held_out_samples` (None: not judged there)."""
    return candidate.validation if ctx.split.regime.held_out else candidate.train


def _against(ctx: RunContext, reference: Candidate) -> Comparison:
    """The paired comparison with ``reference`` on the samples the regime holds out: the
    validation part (its focus weights); out of bag, each candidate's unseen train samples."""
    if ctx.split.regime.held_out:
        focus = ctx.validation_focus
        return held_out(reference, focus.weight_array(focus.positions))
    return out_of_bag(reference, ctx.train)


def _choose(run: StageView, field: Sequence[Candidate]) -> tuple[Candidate, dict[str, Any]]:
    """The paired choice against the seed among ``field``, then the ladder's higher-rung rule."""
    seed = run.state.seed
    compare = _against(run.context, seed)
    choice = PairedChoice(
        finalists=max(1, len(field) - 1),
        confidence=run.context.config.confidence,
        min_coverage=run.context.min_coverage,
    )
    rng = final_choice_rng(run.context.config.random_seed)
    best = choice.choose(field, compare, rng)
    report = dict(choice.report)
    higher = _higher_rung(run, best, field, choice.compared, compare, rng)
    higher = higher or _nothing_to_beat(run, best, field, choice.compared, report)
    if higher is not None:
        best, report["chosen"] = higher[0], higher[0].id
        report["why"] = higher[1]
    return best, report


def _nothing_to_beat(
    run: StageView,
    best: Candidate,
    field: Sequence[Candidate],
    compared: Mapping[int, Paired],
    report: dict[str, Any],
) -> tuple[Candidate, str] | None:
    """When the seed makes no error on its held-out samples, no candidate can be shown better
    there, and the paired rule would keep the seed whatever the corrections taught. Then the
    ladder's rule decides (:func:`_higher_rung`, the cross-fit stage): a distilled rung is kept
    unless the held-out samples say, with probability ``confidence``, that the seed is better
    than it. Among such rungs: the one closest to the seed there, then the one with the most
    lessons (out of bag each fold climbs its own ladder). None when the seed made an error, was
    not chosen, or no rung qualifies.

    Only distilled rungs qualify: their lessons come from the human corrections of the learning
    samples (reason-only corrections included), which is the evidence this rule relies on; a
    search offspring has no such evidence."""
    seed = run.state.seed
    if not best.is_seed:
        return None
    score = _held_out_score(run.context, seed)
    if score is None or not score.measured.any() or (score.correct[score.measured] < 1.0).any():
        return None
    rule = run.context.rule
    ok = [
        c
        for c in field
        if c.operator == "distill"
        and c.id in compared
        and rule.eligible(compared[c.id])
        and rule.not_shown_worse(compared[c.id])
    ]
    if not ok:
        return None
    top = max(ok, key=lambda c: (compared[c.id].delta, _lessons_learnt(run.state.candidates, c), c.id))
    n = int(score.measured.sum())
    x = compared[top.id]
    report["rule"] = f"{report['rule']}; nothing to beat: the ladder's rule"
    return top, (
        f"the seed makes no error on its {n} held-out samples, so no candidate can be shown better "
        f"there; candidate {top.id}, a rung of the distilled ladder, is kept: it does no worse "
        f"(Δ {x.delta:+.3f}; probability that the seed is better {1.0 - x.p_better:.2f} < "
        f"{rule.confidence:g}) and its lessons come from the human corrections"
    )


def _higher_rung(
    run: StageView,
    best: Candidate,
    field: Sequence[Candidate],
    compared: Mapping[int, Paired],
    compare: Comparison,
    rng: np.random.Generator,
) -> tuple[Candidate, str] | None:
    """The ladder's rule for nested candidates: a higher rung above the chosen one (it holds
    every lesson of the chosen rung and more, each learnt from corrections) replaces it when it
    too beats the seed with the required probability and the held-out samples do not say, with
    that probability, that the chosen rung is better than it — the extra lessons are kept unless
    the evidence says they hurt. None when no such rung exists."""
    if best.is_seed or best.operator != "distill":
        return None
    rule = run.context.rule
    ok = [
        c
        for c in field
        if _descends(run.state.candidates, c, best)
        and c.id in compared
        and rule.eligible(compared[c.id])
        and rule.beats(compared[c.id])
    ]
    if not ok:
        return None
    top = max(ok, key=lambda c: c.id)
    mine, _, mask, weights = compare(best)
    theirs, _, mask_top, _ = compare(top)
    lower = rule.compare(mine, theirs, mask & mask_top, weights, rng)
    if rule.likely_better(lower):
        return None
    return top, (
        f"a higher rung of the ladder than candidate {best.id}: it beats the seed on validation by "
        f"{compared[top.id].delta:+.3f} with probability {compared[top.id].p_better:.2f}, and candidate "
        f"{best.id} is not better than it with probability {rule.confidence:g} "
        f"({lower.p_better:.2f}): its extra lessons are kept"
    )


def _lessons_learnt(candidates: Sequence[Candidate], c: Candidate) -> int:
    """How many lessons ``c``'s rung and the distilled rungs below it on its ladder applied
    (``candidates``: every candidate, by id)."""
    n, seen = len(c.feedback), 0
    while c.parents and seen < len(candidates):
        c, seen = candidates[c.parents[0]], seen + 1
        n += len(c.feedback) if c.operator == "distill" else 0
    return n


def _descends(candidates: Sequence[Candidate], c: Candidate, ancestor: Candidate) -> bool:
    """Whether ``c`` is a later rung of ``ancestor``'s ladder (its parents lead to it; ``candidates``:
    every candidate, by id)."""
    seen = 0
    while c.parents and seen < len(candidates):
        c, seen = candidates[c.parents[0]], seen + 1
        if c.id == ancestor.id:
            return True
    return False


def skip_distill(run: StageView) -> None:
    """``strategy: examples``: no distillation (the instruction is kept as it is; 0 meta calls)."""
    run.state.stages.add(DistillRecord.skipped("strategy examples: the instruction is kept as it is"))


def example_policies(ctx: RunContext) -> tuple[list[str], str]:
    """The example policies the examples stage verifies, and why (none: why not)."""
    policy = ctx.config.examples.policy
    if policy == "none":
        return [], "examples: {policy: none}"
    store = ctx.examples
    if store is None:
        return [], "the judge cannot show examples (several prompts, or an ajudge without them)"
    if not len(store):
        return [], "no annotated train sample to show"
    policies: list[str] = ["static", "retrieval"] if policy == "auto" else [policy]
    if "static" in policies and not store.static:
        policies.remove("static")
    if not policies:
        return [], "no train correction to make a static set of"
    return policies, f"policy {policy}"


async def choose_examples(run: StageView, base: Candidate) -> Candidate:
    """Stage 2b: the verified candidate ``base`` with teaching examples (one candidate per policy
    of :func:`example_policies`, operator ``examples``, its parent ``base``), judged on the same
    held-out samples as ``base`` and kept only when the paired bootstrap says, with probability
    ``confidence``, that it beats ``base`` (the one with the largest gain among those that do).
    Returns the chosen candidate (``base`` when no example policy wins or none was tried);
    ``result.json``'s ``stages.examples`` says what was judged, each policy's Δ and p.

    Raises:
        LLMUnusableError: too many of the stage's judge calls failed.
    """
    started, before = time.perf_counter(), run.stage_start()
    policies, why = example_policies(run.context)
    if base.cross_validated is not None and not run.context.split.regime.held_out:
        return await _examples_cross_validated(run, base, policies, why, started, before)
    if policies:
        policies, why = _gate(run.context, policies, why, _wrong(run.context, base))
    policies, why, refused = _budgeted(run, policies, why, len(_held_out_samples(run.context)))
    if not policies:
        cost = _cost(run, before, started)
        run.state.stages.add(ExamplesRecord(cost=cost, produced=(base.id,), why=why, budget_stop=refused))
        return base
    store = run.context.examples
    assert store is not None
    static = frozenset(store.positions_for("static", {})) if "static" in policies else frozenset()
    candidates = [
        _example_candidate(run, base, policy, static if policy == "static" else frozenset())
        for policy in policies
    ]
    run.context.events.emit("stage_start", 0, stage="examples")
    run.begin_step("the examples' verification on held-out samples", count_parse=True)
    race = Race(looks=4 if run.context.config.racing else 1, futility=base.id)
    judged = await _held_out(run, [base, *candidates], keep={base.id}, race=race)
    run.end_step()
    for c in candidates:  # stopped for futility: not measured on every held-out sample
        if c not in judged:
            c.validation = None
    compare = _against(run.context, base)
    stopped = run.context.split.regime.held_out  # a policy the race stopped has no validation score
    rows, chosen, best_delta = _policy_rows(
        run.context.rule,
        base,
        candidates,
        lambda c: None if stopped and c.validation is None else compare(c),
        final_choice_rng(run.context.config.random_seed),
    )
    verdict = (
        f"candidate {chosen.id} ({chosen.examples}) beats candidate {base.id} without examples by "
        f"{best_delta:+.3f} with probability >= {run.context.config.confidence:g}"
        if chosen is not base
        else f"no example policy beat candidate {base.id} with probability {run.context.config.confidence:g}"
    )
    embeddings = store.embedding_usage()
    _record_judged(run, before, started, base, chosen, rows, verdict, race, embeddings=embeddings)
    run.context.events.emit(
        "stage_end", 0, stage="examples", chosen=chosen.id, figures=_figures(run, "examples")
    )
    return chosen


def _budgeted(run: StageView, policies: list[str], why: str, n_samples: int) -> tuple[list[str], str, bool]:
    """``policies`` and ``why``; or none, the budget's why and True when judging each policy on
    ``n_samples`` samples does not fit in the budget."""
    calls = len(policies) * n_samples * run.context.metric.calls_per_evaluation
    if policies and not run.context.meter.allows(calls, reserve=0):
        return [], BudgetStop.examples(calls), True
    return policies, why, False


def _record_judged(
    run: StageView,
    before: Usage,
    started: float,
    base: Candidate,
    chosen: Candidate,
    rows: Sequence[dict[str, Any]],
    why: str,
    race: Race,
    *,
    embeddings: dict[str, Any] | None = None,
) -> None:
    """The examples stage's record once its policies were judged against ``base``: ``chosen``
    (``base`` when none won), each policy's row, why, the race and the store's figures."""
    store = run.context.examples
    assert store is not None
    run.state.stages.add(
        ExamplesRecord(
            cost=_cost(run, before, started),
            produced=(chosen.id,),
            judged=True,
            base=base.id,
            tried=tuple(rows),
            why=why,
            policy=chosen.examples,
            static_set=tuple(store.positions_for("static", {})),
            racing=race.report,
            similarity=store.similarity_record(),
            embeddings=embeddings,
        )
    )


def _policy_rows(
    rule: PairedRule,
    base: Candidate,
    candidates: Sequence[Candidate],
    measure: Callable[[Candidate], tuple[Score, Score, np.ndarray, np.ndarray] | None],
    rng: np.random.Generator,
) -> tuple[list[dict[str, Any]], Candidate, float]:
    """(each example policy's row, the chosen candidate, its Δ): each of ``candidates`` compared
    with ``base`` (``measure(c)``: the two scores, the mask and the weights; None when the race
    stopped it), the one with the largest Δ among those that :meth:`~PairedRule.beats` ``base``
    chosen (``base`` when none does, Δ 0)."""
    rows: list[dict[str, Any]] = []
    chosen, best_delta = base, 0.0
    for c in candidates:
        measured = measure(c)
        if measured is None:
            rows.append(
                {"id": c.id, "policy": c.examples, "delta": None, "p_better": None, "eligible": False}
            )
            continue
        x = rule.compare(*measured, rng)
        eligible = rule.eligible(x)
        rows.append(
            {"id": c.id, "policy": c.examples, "delta": x.delta, "p_better": x.p_better, "eligible": eligible}
        )
        if eligible and rule.beats(x) and x.delta is not None and x.delta > best_delta:
            chosen, best_delta = c, x.delta
    return rows, chosen, best_delta


def _wrong(ctx: RunContext, base: Candidate) -> list[int]:
    """The held-out samples ``base`` judges unlike the human (validation; out of bag, the train
    samples its lineage never learned from)."""
    positions, score = _held_out_samples(ctx), _held_out_score(ctx, base)
    if score is None:
        return []
    return [
        p
        for i, p in enumerate(positions)
        if score.measured[i] and score.correct[i] < 1.0 and p not in base.seen
    ]


def _gate(ctx: RunContext, policies: list[str], why: str, wrong: Sequence[int]) -> tuple[list[str], str]:
    """The example policies worth judging, and why: a teaching example can only help a sample the
    candidate judges wrongly, and only when one shown beside it carries the human's view — so the
    stage runs when some sample in ``wrong`` has, among the ``k`` train samples retrieval would show
    it, a verdict correction with its human label (the same wording, the human's side). Otherwise
    no policy is judged (0 judge calls). Under ``examples.policy: auto`` only: a policy the user
    names is judged (raced) whatever this says."""
    store = ctx.examples
    if store is None or ctx.config.examples.policy != "auto":
        return policies, why
    if not wrong:
        return [], "the verified candidate judges every held-out sample as the human did: nothing to teach"
    teachable = [
        p
        for p in wrong
        if any(
            ctx.evidence[q].kind == "verdict" and ctx.labels[q] == ctx.labels[p]
            for q in store.positions_for("retrieval", ctx.dataset.samples[p].metric_input)
            if q in ctx.evidence
        )
    ]
    if not teachable:
        return [], (
            f"none of the {len(wrong)} held-out samples the verified candidate judges wrongly has a train "
            f"correction with its human label among its {store.k} most similar train samples: no teaching "
            "example would show it the human's view"
        )
    return policies, f"{why}; {len(teachable)} of {len(wrong)} held-out errors resemble a train correction"


async def _examples_cross_validated(
    run: StageView, base: Candidate, policies: list[str], why: str, started: float, before: Usage
) -> Candidate:
    """:func:`choose_examples` for a refit chosen by cross-validation (:mod:`._refit`): each policy
    is judged with the folds' candidates on their own folds (a cross-validated figure, like the
    recipe's), raced against them (a policy no better after a look stops), and kept only when it
    beats them with probability ``confidence``; the result is then the refit with that policy."""
    ctx = run.context
    tops = refit.fold_tops(run.state, ctx)
    cv = base.cross_validated
    assert cv is not None
    if policies and not tops:
        policies, why = [], "the seed was kept: no fold candidate to judge examples with"
    if policies and ctx.config.examples.policy == "auto":
        policies, why = (
            [],
            (
                "small data: example policies are cross-validated only when one is asked for "
                "(optimizer.examples.policy static or retrieval): judged with the folds' candidates, which "
                "learned from fewer corrections than the refit, a policy shows gains the refit does not have"
            ),
        )
    if policies:
        policies, why = _gate(ctx, policies, why, refit.errors(ctx, cv))
    policies, why, refused = _budgeted(run, policies, why, len(ctx.train))
    if not policies:
        cost = _cost(run, before, started)
        run.state.stages.add(ExamplesRecord(cost=cost, produced=(base.id,), why=why, budget_stop=refused))
        return base
    store = ctx.examples
    assert store is not None
    per_policy: dict[str, dict[int, Candidate]] = {}
    finals: list[Candidate] = []
    for policy in policies:
        shown = frozenset(store.positions_for(policy, {})) if policy == "static" else frozenset()
        per_policy[policy] = {}
        for f, top in tops.items():
            if top.is_seed:
                continue
            c = _example_candidate(run, top, policy, shown)
            per_policy[policy][f] = c
        finals.append(_example_candidate(run, base, policy, shown))
    static = frozenset(store.positions_for("static", {})) if "static" in policies else frozenset()

    async def judge(cands: Sequence[Candidate], shown: Sequence[int]) -> list[Any]:
        out = []
        for c in cands:
            own = per_policy.get(c.examples, {}) if c is not base else {}
            out.append(
                await refit.judge_policy(
                    run, tops, own, shown, static if c.examples == "static" else frozenset()
                )
            )
        return out

    ctx.events.emit(
        "stage_start", 0, stage="examples", phase="teaching examples, cross-validated on the folds"
    )
    run.begin_step("the examples' cross-validation on the folds", count_parse=True)
    race = Race(looks=4 if ctx.config.racing else 1, futility=base.id)
    weights = ctx.train_focus.weight_array(ctx.train)
    rng = np.random.default_rng((ctx.config.random_seed, RACE_STREAM, 3))
    alive = await race.run([base, *finals], ctx.train, weights, judge, rng, keep={base.id})
    scores = dict(zip((c.id for c in alive), await judge(alive, ctx.train)))  # memoised: no call
    run.end_step()
    mask = np.ones(len(ctx.train), dtype=bool)
    rows, chosen, best_delta = _policy_rows(
        ctx.rule,
        base,
        finals,
        lambda c: (scores[c.id], scores[base.id], mask, weights) if c in alive else None,
        final_choice_rng(ctx.config.random_seed),
    )
    if chosen is not base:
        chosen.cross_validated = scores[chosen.id]
        verdict = (
            f"candidate {chosen.id} (the refit with {chosen.examples} examples) beats candidate "
            f"{base.id} without them by {best_delta:+.3f} cross-validated, with probability >= "
            f"{ctx.config.confidence:g}"
        )
    else:
        verdict = (
            f"no example policy beat candidate {base.id} cross-validated with probability "
            f"{ctx.config.confidence:g}"
        )
    embeddings = ctx.examples.embedding_usage() if ctx.examples is not None else None
    _record_judged(run, before, started, base, chosen, rows, f"{why}; {verdict}", race, embeddings=embeddings)
    if chosen is not base:
        own = per_policy[chosen.examples]
        leak = static if chosen.examples == "static" else frozenset()
        judged_by = {
            str(p): (own.get(ctx.folds[p]) if p not in leak else None) or tops[ctx.folds[p]]
            for p in ctx.train
        }
        run.state.final_choice = {
            **run.state.final_choice,
            "chosen": chosen.id,
            "why": f"{run.state.final_choice.get('why')}; {verdict}",
            "judged_by": {p: c.id for p, c in judged_by.items()},
        }
    ctx.events.emit("stage_end", 0, stage="examples", chosen=chosen.id, figures=_figures(run, "examples"))
    return chosen


def _example_candidate(run: StageView, parent: Candidate, policy: str, shown: frozenset[int]) -> Candidate:
    """``parent``'s instructions with example ``policy`` (operator ``examples``), registered."""
    c = Candidate(
        id=len(run.state.candidates),
        instructions=dict(parent.instructions),
        generation=parent.generation,
        operator="examples",
        parents=(parent.id,),
        seen=parent.seen | shown,
        fold=parent.fold,
        examples=policy,
    )
    run.state.add(c)
    return c


async def cross_fit(run: StageView, base: Candidate) -> Candidate:
    """Stage 2c: learn from the held-out corrections too, and verify that on the learning part.

    The distillation learned from the learning part only, and the verification chose ``base`` on
    the held-out part. Here a short ladder (operator ``cross_fit``, at most
    :data:`CROSS_FIT_ROUNDS` rounds, its first parent ``base``) is climbed from the held-out
    verdict corrections ``base`` still judges wrongly and every held-out reason correction, with
    held-out agreeing samples for contrast. Its top rung and ``base`` are then judged on at most
    :data:`CROSS_FIT_CHECK` of the learning part's judged samples, which its new lessons never saw — the two
    folds swap roles, as in cross-fitting (Chernozhukov et al. 2018); in looks, but with two
    candidates and no win required the looks stop neither. The rung is kept unless the paired
    bootstrap says, with probability ``confidence``, that ``base`` is better there — the ladder's
    rule (:func:`_higher_rung`): lessons learnt from human corrections are kept unless the
    evidence says they hurt. (A criterion
    whose only carriers were held out can rarely be shown to help on the learning part, which
    is why it was missed: requiring a win there would reject the very lessons this stage
    exists for.) Returns the kept rung, else ``base``. A kept rung has no held-out validation
    figure (``n/a``: it learned from the validation samples); ``stages.cross_fit`` holds its
    paired evidence.

    Runs only in the held-out regime (out of bag, every sample already teaches), with
    ``cross_fit`` on, and when the budget can pay for the judging.

    Raises:
        LLMUnusableError: too many of the stage's meta or judge calls failed.
    """
    started, before = time.perf_counter(), run.stage_start()
    why = _cross_fit_skip(run.context, base)
    wrong = [] if why else _still_wrong(run.context, base)
    if not why and not wrong:
        why = f"candidate {base.id} judges every held-out verdict correction as the human did"
    if why:
        run.state.stages.add(CrossFitRecord.skipped(why, base.id))
        return base
    run.context.events.emit("stage_start", 0, stage="cross_fit")
    view = DistillView(
        base,
        {name: wrong for name in base.instructions},
        [p for p in run.context.split.validation if run.context.evidence[p].kind == "agree"],
        run.context.evidence,
        run.context.labels,
        {},
        run.context.sample_facts,
    )
    cfg = run.context.config
    distiller = Distiller(
        rounds=min(CROSS_FIT_ROUNDS, cfg.distill_rounds),
        lessons=cfg.distill_lessons,
        sample_size=cfg.distill_sample_size,
        max_calls=cfg.distill_max_calls,
        operator="cross_fit",
    )
    run.begin_step("the cross-fit ladder from the held-out corrections")
    (ladder,) = await distiller.climb(
        view, views.meta_context(run.context, [base]), run.state.rng, run.state.slots
    )
    run.state.slots += 1_000_000
    parent, rungs = base, []
    for child in ladder.rungs:
        for c in run.adopt([child]):
            c.parents, c.seen, c.examples = (parent.id,), c.seen | parent.seen, base.examples
            rungs.append(c)
            parent = c
    run.end_step()
    lessons = tuple(x.to_dict() for x in ladder.pool.lessons) if ladder.pool else ()
    check: dict[str, Any] = {}
    chosen = base
    if not rungs:
        why = "the cross-fit ladder made no rung (no general lesson, or its rewrite was rejected)"
    else:
        chosen, why = await _cross_check(run, base, rungs[-1], len(wrong), check)
    run.state.stages.add(
        CrossFitRecord(
            cost=_cost(run, before, started),
            produced=(chosen.id,),
            rungs=tuple(c.id for c in rungs),
            base=base.id,
            corrections=len(wrong),
            lessons=lessons,
            stop=ladder.stop,
            context_splits=ladder.context_splits,
            why=why,
            **check,
        )
    )
    run.context.events.emit(
        "stage_end", 0, stage="cross_fit", chosen=chosen.id, figures=_figures(run, "cross_fit")
    )
    return chosen


def _cross_fit_skip(ctx: RunContext, base: Candidate) -> str | None:
    """Why the cross-fit stage does not run for ``base`` (None: it runs)."""
    if not ctx.config.cross_fit:
        return "cross_fit off"
    if ctx.config.strategy == "examples":
        return "strategy examples: the instruction is kept as it is (0 meta calls)"
    if not ctx.split.regime.held_out:
        return "out of bag: every sample was already shown to the distillation's ladders"
    if base.validation is None:
        return f"candidate {base.id} has no held-out verdicts to learn from"
    calls = 2 * min(len(ctx.train), CROSS_FIT_CHECK) * ctx.metric.calls_per_evaluation
    if not ctx.meter.allows(calls, reserve=0):
        return f"the budget cannot pay for the {calls} judge calls of its check"
    return None


def _check_positions(train: Sequence[int], rng: np.random.Generator) -> list[int]:
    """At most :data:`CROSS_FIT_CHECK` positions of the train focus set ``train``, a seeded
    subsample in focus order (each keeps the weight of what it stands for)."""
    focus = list(train)
    if len(focus) <= CROSS_FIT_CHECK:
        return focus
    keep = set(rng.choice(len(focus), size=CROSS_FIT_CHECK, replace=False).tolist())
    return [p for i, p in enumerate(focus) if i in keep]


def _still_wrong(ctx: RunContext, base: Candidate) -> list[int]:
    """The held-out corrections for the cross-fit ladder: the judged verdict corrections ``base``
    still gets wrong, and every reason correction (a verdict right for a wrong reason)."""
    score = base.validation
    assert score is not None
    positions = ctx.validation_focus.positions
    out = []
    for i, p in enumerate(positions):
        kind = ctx.evidence[p].kind
        if kind == "reason" or (kind == "verdict" and score.measured[i] and score.correct[i] < 1.0):
            out.append(p)
    return out


async def _cross_check(
    run: StageView, base: Candidate, rung: Candidate, corrections: int, report: dict[str, Any]
) -> tuple[Candidate, str]:
    """``rung`` against ``base`` on the learning part's judged samples (in looks; neither is
    dropped: the rung need not win); ``rung`` unless ``base`` is better with probability
    ``confidence``. ``report`` receives the check's fields of :class:`CrossFitRecord` (``racing``;
    ``delta``, ``p_better`` and ``samples`` unless stopped for futility); ``corrections``: the
    held-out corrections the rung learned from."""
    run.begin_step("the cross-fit check on the learning samples", count_parse=True)
    rng = np.random.default_rng((run.context.config.random_seed, RACE_STREAM, 2))
    positions = _check_positions(run.context.train, rng)
    weights = run.context.train_focus.weight_array(positions)

    async def judge(cands: Sequence[Candidate], pos: Sequence[int]) -> list[Any]:
        return await run.judge(cands, pos, "train")

    # no futility reference: the rung is kept unless the base is shown better, it need not win
    race = Race(looks=4 if run.context.config.racing else 1)
    field = await race.run(
        [base, rung],
        positions,
        weights,
        judge,
        rng,
        keep={base.id},
        calls_per_evaluation=run.context.metric.calls_per_evaluation,
    )
    report["racing"] = race.report
    if rung not in field:
        run.end_step()
        return (
            base,
            f"stopped for futility: candidate {rung.id} did not beat candidate {base.id} on the learning "
            "samples",
        )
    mine, theirs = await run.judge([rung, base], positions, "train")  # the race's judgements: no call
    run.end_step()
    mask = np.ones(len(positions), dtype=bool)
    rule = run.context.rule
    x = rule.compare(mine, theirs, mask, weights, final_choice_rng(run.context.config.random_seed))
    delta, p = x.delta, x.p_better
    report.update(delta=delta, p_better=p, samples=len(positions))
    confidence = rule.confidence
    if rule.eligible(x) and rule.not_shown_worse(x):
        return rung, (
            f"candidate {rung.id} adds lessons from {corrections} held-out corrections, and the "
            f"{len(positions)} learning samples those lessons never saw do not say they hurt "
            f"({delta:+.3f} against candidate {base.id}; candidate {base.id} better with probability "
            f"{1.0 - p:.2f} < {confidence:g})"
        )
    shown = "n/a" if delta is None else f"{delta:+.3f}"
    return base, (
        f"candidate {rung.id}'s lessons from the held-out corrections hurt on the learning samples "
        f"({shown} against candidate {base.id}; candidate {base.id} better with probability {1.0 - p:.2f})"
    )


def search_warranted(run: StageView, verified: Candidate) -> SearchRecord:
    """Whether the search stage runs after verification (``ran``), and why (or why not: the
    stage's record, ``budget_stop`` when warranted but the budget cannot pay). Under ``strategy:
    auto`` it runs when the distillation left evidence unused or did not help: no rung beat the
    seed on held-out samples while the train part has corrections, or a ladder stopped (its
    rounds or the budget ran out) before every correction had been shown — and when the budget
    can pay for its start and one generation. A ladder that showed every correction and stopped
    teaching general lessons has used what the corrections say: the search would pay judge calls
    to rediscover it (its failures left are one-sample lessons and noise)."""
    if run.context.config.strategy != "auto":
        return SearchRecord.not_run(f"strategy {run.context.config.strategy}: no search")
    if run.context.config.generations == 0 or run.context.config.population_size == 1:
        return SearchRecord.not_run("generations 0 or population_size 1: no search")
    if not run.context.evidence_pool:
        return SearchRecord.not_run("no correction in the train part: nothing for a search to learn")
    fixed, total = _held_out_fixes(run.context, verified)
    stage = run.state.stages.distill or DistillRecord()
    unshown, stops = stage.unshown, stage.stop
    refit = verified.cross_validated is not None
    ladders = stage.ladders
    if run.context.refit and "all" in ladders and not ladders["all"] and stops.get("all") == "converged":
        return SearchRecord.not_run(
            "not warranted: the ladder learning from every correction converged without a general "
            "lesson (what is left are one-sample lessons and noise)"
        )
    untested = run.context.refit and not any(v for k, v in ladders.items() if k != "all")
    if verified.is_seed:
        why = (
            "no fold's ladder learned a general lesson, so the refit's could not be measured and the "
            "seed was kept"
            if untested
            else "the cross-validated recipe hurt, so the seed was kept"
            if run.context.refit
            else "no rung of the ladder beat the seed on held-out samples"
        )
    elif unshown and any(stop in ("rounds", BudgetStop.LADDER) for stop in stops.values()):
        why = f"the distillation stopped with {unshown} corrections not shown yet"
    else:
        where = "cross-validated" if refit else "held out"
        fixes = (
            f"{where}, it judges {fixed} of the {total} samples whose recorded verdict the humans "
            "corrected as they did"
            if total
            else "no verdict correction to fix there"
        )
        kept = (
            "the refit was kept, the folds not saying its recipe hurts"
            if refit
            else "a verified rung beat the seed"
        )
        return SearchRecord.not_run(
            f"not warranted: {kept} ({fixes}) and the distillation used every correction"
        )
    if not run.context.meter.allows(run.context.calls.initial_search(), reserve=run.context.calls.final):
        return SearchRecord.not_run(BudgetStop.search(why), budget_stop=True)
    return SearchRecord(why=why)


def _held_out_fixes(ctx: RunContext, candidate: Candidate) -> tuple[int, int]:
    """(fixed, total): held-out samples whose recorded verdict the human corrected, and how many
    of them ``candidate`` judges as the human did (validation; out of bag, its unseen samples)."""
    learned, score = candidate.seen, candidate.cross_validated
    positions: Sequence[int]
    if score is not None:  # each sample judged by a fold's candidate that never saw it
        positions, learned = ctx.train, frozenset()
    else:
        positions, score = _held_out_samples(ctx), _held_out_score(ctx, candidate)
    if score is None:
        return 0, 0
    keep = [i for i, p in enumerate(positions) if ctx.evidence[p].kind == "verdict" and p not in learned]
    measured = [i for i in keep if score.measured[i]]
    return int(sum(score.correct[i] >= 1.0 for i in measured)), len(measured)


async def start_search(
    run: StageView, verified: Candidate, why: str, chosen: Candidate | None = None
) -> None:
    """Stage 3's start: the seed and the verified candidates judged on train (the search ranks by
    train fitness), recorded as generation 0; the generation loop follows. ``chosen``: the
    examples stage's choice, in the population too when it carries a static set (mutation and
    crossover then evolve the set, :mod:`.operators.demos`)."""
    run.state.stages.add(SearchRecord.begun(why, time.perf_counter(), run.usage()))
    run.context.limit.take_intervals()  # the search's waves are counted per generation (history)
    seed = run.state.seed
    population = [seed, *([verified] if not verified.is_seed else [])]
    if chosen is not None and chosen.examples == "static":
        population.append(chosen)
    if not verified.is_seed:
        run.state.chosen = verified.id  # the incumbent: a finalist must beat it to replace it
    run.begin_step("the search's first population", count_parse=True)
    await run.judge_train(population)
    run.end_step()
    budget.after_seed(run.budget(), seed)
    run.state.population = population
    run.record_generation(0)


def end_search(run: StageView) -> None:
    """Close stage 3's report (calls, tokens, seconds) once the generations are done."""
    stage = run.state.stages.search
    if stage is None or stage.started is None or stage.before is None:
        return
    cost = _cost(run, stage.before, stage.started)
    cost = dataclasses.replace(cost, waves=sum(h.get("waves", 0) for h in run.state.history))
    produced = tuple(c.id for c in run.state.population)
    run.state.stages.add(SearchRecord(why=stage.why, ended=True, cost=cost, produced=produced))


def finish_verified(run: StageView, best: Candidate, stop_reason: str, no_search: SearchRecord) -> Candidate:
    """The result of a run that ended after verification (``strategy: distill``, or ``auto``
    when the search was not warranted: ``no_search`` says why). The stop reason is ``budget``
    instead of ``stop_reason`` when the budget refused a stage the run would have made (the
    search, when warranted, the examples' verification, or a distillation round)."""
    stages = run.state.stages
    if "search" not in stages:
        stages.add(no_search)
    if stages.budget_stop:
        stop_reason = "budget"
    run.state.stop_reason = stop_reason
    run.state.chosen = best.id
    verified = stages.verify
    run.state.final_choice = run.state.final_choice or (
        dict(verified.final_choice) if verified is not None else {}
    )
    cross = stages.cross_fit
    if best.operator == "cross_fit" and cross is not None and cross.why and cross.base is not None:
        base = run.state.candidates[cross.base]
        validation = reporting.estimates(run.context, base)["validation"]
        shown = "n/a" if validation is None else f"{validation:.3f}"
        run.state.final_choice = {
            **run.state.final_choice,
            "stage": "cross_fit",
            "chosen": best.id,
            "why": (
                f"{cross.why}; its validation figure is n/a (it learned from the held-out corrections): "
                f"candidate {base.id}, which it extends, scored {shown} there"
            ),
        }
    run.context.events.emit("stop", run.state.generation, reason=stop_reason, best=best.id)
    return best


def _figures(run: StageView, stage: str) -> dict[str, Any]:
    """The ``figures`` of a ``stage_end`` event: the stage's record as result.json holds it."""
    return next(r for r in run.state.stages if r.name == stage).to_dict()


def _cost(run: StageView, before: Usage, started: float) -> StageCost:
    """A stage's calls, tokens, seconds and ``waves`` since ``before`` and ``started``
    (:class:`~._records.StageCost`)."""
    used = run.usage() - before
    return StageCost(
        waves=waves(run.context.limit.take_intervals()),
        judge_calls=used.judge_calls,
        meta_calls=used.meta_calls,
        prompt_tokens=used.prompt_tokens,
        completion_tokens=used.completion_tokens,
        prompt_tokens_per_judge_call=used.prompt_tokens_per_call().get("judge"),
        seconds=round(time.perf_counter() - started, 3),
    )
