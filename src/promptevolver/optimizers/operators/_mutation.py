"""Mutation: feedback on samples the parent gets wrong, then a rewrite that applies it.

The parent is chosen by the breeder's selector among the candidates :meth:`Mutation.eligible`
accepts (by default a tournament winner on their Pareto front): those that still get a judged
train sample wrong, or whose lineage has not yet been shown some of the annotations' corrections
(:mod:`..evidence`). The feedback call is shown up to ``sample_size``
samples: the parent's judged failures (a stratified draw), then corrections its lineage has not
seen (the human's verdict and reason; the judge's recorded output when the parent is the seed),
and, for contrast, up to a quarter as many samples it gets right, corrected reasons first — as
GEPA's reflection sees whole minibatches. Two meta calls per prompt: feedback, then rewrite (as
Ragas' feedback mutation). A metric of several prompts has one prompt rewritten per mutation,
chosen by where the failures come from: the prompt whose outputs the humans corrected on the most
of the shown samples (GEPA selects one component per reflection too).

The initial population is made the same way from the seed (:meth:`Mutation.plan_from_evidence`):
each child is shown its own batch of the corrections, before the seed is even judged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from promptevolver.annotations import stratified_sample
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.operators import _demos as demos
from promptevolver.optimizers.operators import _meta_prompts as ops
from promptevolver.optimizers.operators._base import BreedingView, Child, MetaContext, Plan, Weighted

__all__ = ["Mutation"]


class Mutation(Weighted):
    """Feedback-guided rewrite of one parent (see the module docstring).
    ``weight``: its odds of being drawn for an offspring (:class:`Weighted`)."""

    name = "mutation"
    arity = 1

    def meta_calls(self, prompts: int) -> int:
        return 2  # feedback and rewrite of one prompt (a metric of several: one per mutation)

    def eligible(self, candidate: Candidate, view: BreedingView) -> bool:
        """Whether ``candidate`` has something to learn: a judged train sample it gets wrong, or a
        correction its lineage has not been shown."""
        return bool(_failing(candidate, view) or _unseen(candidate, view))

    def plan(
        self, view: BreedingView, parents: tuple[Candidate, ...], rng: np.random.Generator
    ) -> Plan | None:
        (parent,) = parents
        fold = parent.fold if parent.fold is not None or not view.folds else int(rng.integers(view.n_folds))
        ok = view.allowed(fold)
        size = view.config.sample_size
        shown = _draw([p for p in _failing(parent, view) if ok(p)], size, view, rng)
        shown += _draw([p for p in _unseen(parent, view) if ok(p)], size - len(shown), view, rng)
        if not shown:
            return None  # nothing it may learn from (out-of-bag: all it lacks is in its own fold)
        contrast = _contrast([p for p in _passing(parent, view) if ok(p)], max(1, size // 4), view, rng)
        prompt = _component(view, shown, rng)
        failing = set(_failing(parent, view))
        examples = demos.mutated(parent, [p for p in shown if p in failing], view, rng)
        return Plan(
            self.name,
            (parent,),
            positions=tuple(shown),
            contrast=tuple(contrast),
            fold=fold,
            prompt=prompt,
            examples=examples,
        )

    def plan_from_evidence(
        self, parent: Candidate, view: BreedingView, count: int, rng: np.random.Generator
    ) -> list[Plan]:
        """``count`` mutations of ``parent`` (not judged yet), each shown its own batch of the
        corrections (disjoint while there are enough) and agreeing samples for contrast."""
        if count <= 0 or not view.evidence_pool:
            return []
        size = view.config.sample_size
        agree = [
            p for p in view.train if view.evidence.get(p) is not None and view.evidence[p].kind == "agree"
        ]
        plans = []
        shuffles: dict[int | None, list[int]] = {}  # one shuffle per pool: its children take slices
        for k in range(count):
            fold = k % view.n_folds if view.folds else None  # out-of-bag: each child keeps a fold unseen
            ok = view.allowed(fold)
            pool = [p for p in view.evidence_pool if ok(p)]
            if not pool:
                continue
            if fold not in shuffles:
                shuffles[fold] = rng.permutation(len(pool)).tolist()
            nth = k // view.n_folds if view.folds else k  # this child's rank among its pool's
            batch = _batch(pool, shuffles[fold], nth, size, rng)
            contrast = _contrast([p for p in agree if ok(p)], max(1, size // 4), view, rng)
            plans.append(
                Plan(self.name, (parent,), positions=tuple(batch), contrast=tuple(contrast), fold=fold)
            )
        return plans

    async def run(self, plan: Plan, ctx: MetaContext) -> Child:
        (parent,) = plan.parents
        judged = ctx.judged.get(parent.id, {})
        instructions, notes = dict(parent.instructions), list[str]()
        for name, instruction in parent.instructions.items():
            if plan.prompt is not None and name != plan.prompt:
                continue  # a metric of several prompts: one prompt rewritten per mutation
            fb = await ops.feedback(
                ctx.llm,
                instruction=instruction,
                failures=[ctx.example(p, name, judged.get(p)) for p in plan.positions],
                passing=[ctx.example(p, name, judged.get(p)) for p in plan.contrast],
                max_feedbacks=ctx.config.max_feedbacks,
                temperature=ctx.config.meta_temperature,
                sample_index=plan.slot,
            )
            if fb.value is None:
                return Child(plan, None, rejected=fb.rejected, error=fb.error)
            items = list(fb.value)
            if ctx.facts is not None:  # never spend instruction length on one-sample lessons
                items = [item for item in items if not ctx.facts.quoted_in(item)]
                if not items:
                    why = "every feedback item quotes a sample fact"
                    return Child(plan, None, list(fb.value), rejected=why)
            out = await ops.rewrite(
                ctx.llm,
                instruction=instruction,
                feedback_items=items,
                temperature=ctx.config.meta_temperature,
                sample_index=plan.slot,
            )
            if out.value is None:
                return Child(plan, None, items, rejected=out.rejected, error=out.error)
            instructions[name], notes = str(out.value), notes + items
        return Child(plan, instructions, notes)


def _component(view: BreedingView, shown: Sequence[int], rng: np.random.Generator) -> str | None:
    """Which prompt a mutation of a metric of several prompts rewrites: the one whose outputs the
    humans corrected on the most of the shown samples (where the failures come from, like GEPA's
    component selection); ties, and samples with no per-prompt correction, drawn at random.
    None for a single-prompt metric (its one prompt)."""
    if len(view.prompt_corrections) < 2:
        return None
    counts = {name: sum(p in positions for p in shown) for name, positions in view.prompt_corrections.items()}
    top = max(counts.values())
    names = sorted(name for name, n in counts.items() if n == top)
    return names[int(rng.integers(len(names)))]


def _batch(pool: list[int], order: list[int], k: int, size: int, rng: np.random.Generator) -> list[int]:
    """The ``k``-th child's batch of corrections: while the pool holds more than ``size``, the
    ``k``-th consecutive slice of ``order`` (the pool's one shuffle: disjoint until the pool is
    used up, then wrapping round); from a smaller pool, an independent draw of two thirds of it (so
    no two children are shown the same samples, which would ask the same question twice)."""
    if len(pool) > size:
        start = (k * size) % len(pool)
        return [pool[order[(start + i) % len(pool)]] for i in range(size)]
    n = max(1, math.ceil(2 * len(pool) / 3)) if len(pool) > 1 else 1
    return [pool[i] for i in rng.permutation(len(pool)).tolist()[:n]]


def _failing(candidate: Candidate, view: BreedingView) -> list[int]:
    """Judged train positions ``candidate`` gets wrong (failed evaluations excluded)."""
    if candidate.train is None:
        return []
    return [p for p, ok in zip(view.train, candidate.train_correct()) if ok < 1.0]


def _passing(candidate: Candidate, view: BreedingView) -> list[int]:
    if candidate.train is None:
        return []
    return [p for p, ok in zip(view.train, candidate.train_correct()) if ok == 1.0]


def _unseen(candidate: Candidate, view: BreedingView) -> list[int]:
    """Corrections never shown to ``candidate``'s lineage and not judged for it."""
    judged = set(view.train) if candidate.train is not None else set()
    return [p for p in view.evidence_pool if p not in candidate.seen and p not in judged]


def _draw(positions: Sequence[int], n: int, view: BreedingView, rng: np.random.Generator) -> list[int]:
    """A stratified draw (by label) of ``n`` of ``positions``, in random order."""
    n = max(0, min(n, len(positions)))
    chosen = stratified_sample([view.labels[p] for p in positions], n, rng)
    return [positions[i] for i in rng.permutation(chosen).tolist()]


def _contrast(passing: Sequence[int], n: int, view: BreedingView, rng: np.random.Generator) -> list[int]:
    """Up to ``n`` passing samples, corrected reasons first (they show the criteria at work)."""
    reasons = [p for p in passing if view.evidence.get(p) is not None and view.evidence[p].kind == "reason"]
    taken = set(reasons)
    others = [p for p in passing if p not in taken]
    chosen = _draw(reasons, n, view, rng)
    return chosen + _draw(others, n - len(chosen), view, rng)
