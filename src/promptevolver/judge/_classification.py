"""Judges whose answer is a name among a few: :class:`ClassificationJudge` (one of named classes in
no order: a topic, a failure category, an intent) and the base it shares with the pairwise judge,
:class:`NamedLabelJudge`.

The judge answers a class **name** (``{"reason": ..., "label": "refund"}``; the answer's schema
lists the names, so a server that enforces schemas can only answer one of them); the annotations
hold its **value**, the number the metric's label space gives it
(:class:`~promptevolver.annotations.LabelScale`, kind ``nominal``: class i is the value i). A
name outside the list is a malformed answer: re-asked, then a failed evaluation. Optimize it with
:class:`~promptevolver.evaluation._losses.ClassificationLoss` (accuracy or macro F1); its figures
are accuracy, unweighted Cohen's kappa, per-class precision / recall / F1 and the k×k confusion
matrix — never within-one or a squared error, which would read the class numbers as distances.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, create_model

from promptevolver.annotations import LabelChoice, LabelScale
from promptevolver.judge._prompt_set import JudgeOptions, PromptSet
from promptevolver.judge._prompts import Prompt

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11 on

__all__ = ["ClassificationJudge", "NamedLabelJudge", "named_output_model"]


@functools.lru_cache(maxsize=64)
def named_output_model(field: str, names: tuple[str, ...], about: str) -> type[BaseModel]:
    """The answer model ``{"reason": str, field: one of names}``; one class per (field, names)."""
    choice: Any = Literal[names]  # Literal of a tuple: Literal["a", "b", ...]
    fields: dict[str, Any] = {
        "reason": (str, Field(description="Reason for the answer")),
        field: (choice, Field(description=about)),
    }
    return create_model("NamedLabelOutput", **fields)


class NamedLabelJudge(PromptSet):
    """A one-prompt judge answering a name of its :attr:`label_scale` (set by subclasses):
    answers map names to values, values are shown as names (teaching examples, meta-prompts)."""

    label_scale: LabelScale

    def _names(self) -> dict[str, float]:
        return {c.name: c.value for c in self.label_scale.label_space() or ()}

    def label_of(self, output: Any) -> float:
        """The value of the answer's name (its schema admits only the names)."""
        return self._names()[getattr(output, self.LABEL_FIELD)]

    def shown_label(self, value: float) -> Any:
        """The name of label ``value`` (``"tie"``, a class name)."""
        return self.label_scale.name_of(value)


CLASSIFICATION_SEED = (
    "Classify the input into exactly one of these classes: {names}. Answer with the class name.\n"
    "Criteria Definition: {definition}"
)


class ClassificationJudge(NamedLabelJudge):
    """A judge that puts the input into one of named classes (see the module docstring).

    Args:
        name: the metric's name (the key of its annotations).
        definition: what the classes mean, in plain words; the seed instruction embeds it.
        labels: the class names, at least two, distinct and non-empty; class i is the value i in
            the annotations (``metric_output``, ``target``, ``annotator_labels``).
        prompt_name: the name of the judge's prompt (default :attr:`PROMPT_NAME`): the key under
            which the annotation file keeps its traces.
        llm, max_reasks, temperature: see :class:`~promptevolver.judge._prompt_set.PromptSet`.

    Raises:
        ValueError: an empty name, definition or prompt name, fewer than two labels, an empty or
            repeated label, or ``max_reasks`` < 0.
    """

    PROMPT_NAME = "single_turn_classification_prompt"
    LABEL_FIELD = "label"
    #: It classifies the input (``user_input``), with the response and reference when present.
    REQUIRED_FIELDS = ("user_input",)
    OPTIONAL_FIELDS = ("response", "reference", "retrieved_contexts", "reference_contexts")

    def __init__(
        self,
        *,
        name: str,
        definition: str,
        labels: Sequence[str],
        prompt_name: str = PROMPT_NAME,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(name=name, definition=definition, **options)
        names = tuple(str(label) for label in labels)
        if len(names) < 2 or len(set(names)) < len(names) or not all(n.strip() for n in names):
            raise ValueError(f"labels must be at least two distinct, non-empty names, got {list(names)}")
        if not prompt_name.strip():
            raise ValueError("prompt_name must not be empty")
        self.labels = names
        self.label_scale = LabelScale(
            "nominal", choices=tuple(LabelChoice(float(i), n) for i, n in enumerate(names))
        )
        model = named_output_model(self.LABEL_FIELD, names, f"The class: one of {', '.join(names)}")
        seed = CLASSIFICATION_SEED.format(names=", ".join(names), definition=definition)
        self._prompts: dict[str, Prompt[Any]] = {prompt_name: Prompt(prompt_name, seed, model)}

    def __repr__(self) -> str:
        return f"ClassificationJudge(name={self.name!r}, labels={list(self.labels)!r})"
