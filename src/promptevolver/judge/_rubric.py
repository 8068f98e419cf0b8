"""A numeric rubric judge: a score in a declared range, with optional rubric text per level.

:class:`RubricJudge` is in the spirit of Ragas' ``SimpleCriteriaScore`` (a criterion and a score)
and ``RubricsScore`` (a description per score level). It has one prompt, named as Ragas'
``SimpleCriteriaScore`` single-turn prompt (``single_turn_simple_criteria_prompt``) with the same
output fields (``reason``, ``score``), so annotations exported from that Ragas metric are read as
they are. The rubric lives in the instruction, so an optimizer may refine the level descriptions
too. Optimize it with :class:`~promptevolver.evaluation._losses.MSELoss`; its human labels are the
annotations' numeric ``target`` (or the accepted score).

The answer's schema bounds the score (``minimum``/``maximum``; an integer for a discrete scale);
an answer out of range or not a whole number on a discrete scale is re-asked like a malformed one,
then recorded as a failed evaluation — never clipped into range.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, create_model

from promptevolver.annotations import LabelScale
from promptevolver.judge._prompt_set import JudgeOptions, PromptSet
from promptevolver.judge._prompts import Prompt

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11 on

__all__ = ["RubricJudge", "rubric_output_model", "seed_instruction"]


@functools.lru_cache(maxsize=32)
def rubric_output_model(low: float, high: float, discrete: bool) -> type[BaseModel]:
    """The answer model ``{"reason": str, "score": number in [low, high]}`` (an ``int`` when
    ``discrete``); one class per range, shared (its JSON schema is computed once)."""
    score_type: Any = int if discrete else float
    return create_model(
        "RubricScoreOutput",
        reason=(str, Field(description="Reason for the score")),
        score=(score_type, Field(ge=low, le=high, description=f"The score, from {low:g} to {high:g}")),
    )


def seed_instruction(
    definition: str, low: float, high: float, discrete: bool, rubrics: Mapping[float, str] | None
) -> str:
    """The seed instruction: the task with the range, the criterion, and the rubric when given."""
    kind = "a whole number" if discrete else "a number"
    lines = [
        f"Evaluate the input based on the criteria defined and give {kind} score from {low:g} "
        f"(worst) to {high:g} (best).",
        f"Criteria Definition: {definition}",
    ]
    if rubrics:
        lines.append("Scoring rubric:")
        lines += [f"- score {level:g}: {text}" for level, text in sorted(rubrics.items())]
    return "\n".join(lines)


class RubricJudge(PromptSet):
    """A judge that scores one criterion on a numeric scale (see the module docstring).

    Args:
        name: the metric's name (the key of its annotations), e.g. ``helpfulness``.
        definition: the criterion in plain words; the seed instruction embeds it.
        score_range: (lowest, highest) score, lowest < highest; whole numbers when ``discrete``.
        discrete: True for an ordinal scale of whole numbers (e.g. 1–5), False for any number in
            the range (e.g. 0–1).
        rubrics: optional description per score level (level → text), written into the seed
            instruction; levels must lie in ``score_range``.
        prompt_name: the name of the judge's prompt (default :attr:`PROMPT_NAME`, Ragas'
            SimpleCriteriaScore's): the key under which the annotation file keeps its traces (a
            config takes the file's own name, as for an aspect critic).
        llm, max_reasks, temperature: the judge's client, re-asks of a malformed answer and
            sampling temperature (:class:`~promptevolver.judge._prompt_set.PromptSet`).

    Raises:
        ValueError: an empty name, definition or prompt name, a range that is empty or not whole
            numbers on a discrete scale, a rubric level outside the range, or ``max_reasks`` < 0.
    """

    LABEL_FIELD = "score"

    PROMPT_NAME = "single_turn_simple_criteria_prompt"

    def __init__(
        self,
        *,
        name: str,
        definition: str,
        score_range: tuple[float, float] = (1, 5),
        discrete: bool = True,
        rubrics: Mapping[float, str] | None = None,
        prompt_name: str = PROMPT_NAME,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(name=name, definition=definition, **options)
        low, high = (float(v) for v in score_range)
        _check(low, high, discrete, rubrics)
        self.score_range = (low, high)
        self.discrete = discrete
        self.rubrics = {float(k): v for k, v in (rubrics or {}).items()}
        seed = seed_instruction(definition, low, high, discrete, self.rubrics)
        model = rubric_output_model(low, high, discrete)
        if not prompt_name.strip():
            raise ValueError("prompt_name must not be empty")
        self._prompts: dict[str, Prompt[Any]] = {prompt_name: Prompt(prompt_name, seed, model)}

    @property
    def label_scale(self) -> LabelScale:
        """Scores in ``score_range`` (each level a label a human can give on a discrete scale): a
        run checks that every annotation's value lies in it."""
        return LabelScale("numeric", *self.score_range, discrete=self.discrete)

    def __repr__(self) -> str:
        low, high = self.score_range
        return (
            f"RubricJudge(name={self.name!r}, definition={self.definition!r}, "
            f"score_range=({low:g}, {high:g}))"
        )

    @property
    def levels(self) -> tuple[float, ...] | None:
        """The score levels of a discrete scale, lowest first; None for a continuous one."""
        if not self.discrete:
            return None
        low, high = self.score_range
        return tuple(float(v) for v in range(int(low), int(high) + 1))


def _check(low: float, high: float, discrete: bool, rubrics: Mapping[float, str] | None) -> None:
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"score_range must be (low, high) with low < high, got ({low:g}, {high:g})")
    if discrete and not (low.is_integer() and high.is_integer()):
        raise ValueError(f"a discrete score_range needs whole numbers, got ({low:g}, {high:g})")
    outside = sorted(float(k) for k in (rubrics or {}) if not low <= float(k) <= high)
    if outside:
        raise ValueError(f"rubric levels {outside} lie outside score_range ({low:g}, {high:g})")
