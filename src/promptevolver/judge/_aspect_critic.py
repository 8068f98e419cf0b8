"""Judge metrics: the LLM-as-judge whose instructions the optimizer rewrites.

A metric exposes its prompts by name (Ragas' ``get_prompts``/``set_prompts``) and judges one
sample with :meth:`AspectCritic.ajudge` (:meth:`~promptevolver.judge._protocol.Judge.ajudge`),
which takes the instructions to use as an argument so that concurrent evaluations of different
candidates never share mutable state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from promptevolver.annotations import LabelScale
from promptevolver.judge._prompt_set import JudgeOptions, PromptSet
from promptevolver.judge._prompts import Prompt

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11 on

__all__ = ["AspectCritic", "AspectCriticOutput"]


class AspectCriticOutput(BaseModel):
    """The judge's answer: a short reason and a binary verdict (1 = yes, 0 = no)."""

    reason: str = Field(description="Reason for the verdict")
    verdict: Literal[0, 1] = Field(description="The verdict (0 or 1) for the submission")


SEED_TEMPLATE = (
    "Evaluate the Input based on the criteria defined. Use only 'Yes' (1) and 'No' (0) as verdict.\n"
    "Criteria Definition: {definition}"
)


class AspectCritic(PromptSet):
    """A binary judge of one aspect, as Ragas' ``AspectCritic`` (single-turn).

    Args:
        name: the metric's name, e.g. ``answer_correctness``.
        definition: the criterion in plain words; the seed instruction embeds it.
        llm, max_reasks, temperature: the judge's client, re-asks of a malformed answer and
            sampling temperature (:class:`~promptevolver.judge._prompt_set.PromptSet`).
        prompt_name: the name of the judge's prompt (default :attr:`PROMPT_NAME`, Ragas' name): the
            key under which the annotation file keeps its traces and the humans' corrected reasons,
            so it must match the file's (see :mod:`promptevolver.config._prompt_match`).

    Raises:
        ValueError: empty ``name``, ``definition`` or ``prompt_name``, or ``max_reasks`` < 0.
    """

    PROMPT_NAME = "single_turn_aspect_critic_prompt"
    #: Verdicts 0 or 1: a run checks that every annotation's value is one of them.
    label_scale = LabelScale("binary")

    def __init__(
        self,
        *,
        name: str,
        definition: str,
        prompt_name: str = PROMPT_NAME,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(name=name, definition=definition, **options)
        if not prompt_name.strip():
            raise ValueError("prompt_name must not be empty")
        seed = SEED_TEMPLATE.format(definition=definition)
        self._prompts: dict[str, Prompt[Any]] = {prompt_name: Prompt(prompt_name, seed, AspectCriticOutput)}

    def __repr__(self) -> str:
        return f"AspectCritic(name={self.name!r}, definition={self.definition!r})"
