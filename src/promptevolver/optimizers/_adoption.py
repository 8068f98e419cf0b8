"""Adoption: offspring become candidates — registered with their lineage, duplicates dropped.

:func:`adopt` takes the breeder's children: a rejected answer is counted (by operator and reason)
and told to the failure policy when it was a failed call; an instruction already seen (whitespace
aside) is a duplicate, counted and dropped; the others become :class:`Candidate` records with
their parents, feedback, the samples their lineage was shown (``seen``) and their fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers.operators._base import Child

if TYPE_CHECKING:
    from promptevolver.optimizers._run import SearchRun
    from promptevolver.optimizers._state import SearchState

__all__ = ["adopt", "new_candidate"]


def new_candidate(
    state: SearchState, instructions: dict[str, str], operator: str, child: Child | None = None
) -> Candidate | None:
    """Register in ``state`` a candidate made in its current generation (its example policy the
    plan's); None (counted) for a duplicate (the same instructions and example policy)."""
    examples = child.plan.examples if child else "none"
    if state.find(instructions, examples) is not None:
        state.duplicates += 1
        return None
    parents = tuple(p.id for p in child.plan.parents) if child else ()
    feedback = list(child.feedback) if child else []
    seen = (
        frozenset(child.plan.positions + child.plan.contrast).union(*(p.seen for p in child.plan.parents))
        if child
        else frozenset()
    )
    c = Candidate(
        len(state.candidates),
        dict(instructions),
        state.generation,
        operator,
        parents,
        feedback=feedback,
        seen=seen,
        fold=child.plan.fold if child else None,
        examples=examples,
    )
    state.add(c)
    return c


def adopt(run: SearchRun, children: Sequence[Child]) -> list[Candidate]:
    """Register the children that produced instructions; count rejections; emit events."""
    adopted = []
    for child in children:
        plan = child.plan
        if child.rejected:
            run.state.rejections[f"{plan.operator}: {child.rejected}"] += 1
        run.tally.plan(1)
        run.tally.record(_meta_failure(child.rejected), child.error or child.rejected, check=False)
        parents = [p.id for p in plan.parents]
        accepted = child.instructions is not None
        run.context.events.emit(
            "operator_call",
            run.state.generation,
            operator=plan.operator,
            parents=parents,
            accepted=accepted,
            rejected=child.rejected,
        )
        if child.instructions is not None:
            c = new_candidate(run.state, child.instructions, plan.operator, child)
            if c is not None:
                adopted.append(c)
    return adopted


def _meta_failure(rejected: str | None) -> str | None:
    """The cause of a meta call that failed after retries (None: it answered, maybe unusably)."""
    prefix = "llm error: "
    return rejected.removeprefix(prefix) if rejected and rejected.startswith(prefix) else None
