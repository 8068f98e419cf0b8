"""The one contract between a judge and everything that uses it (optimizer, evaluator, reports).

:class:`Metric` is what a judge must provide; :class:`~promptevolver.judge.aspect_critic.AspectCritic`
and :class:`~promptevolver.judge.ensemble.JudgeEnsemble` implement it, and a user's own judge can
too (check it with the contract suite in :mod:`promptevolver.testing`). :class:`Judgement` is the
outcome of judging one sample: a score, or a failure with its cause — never both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Protocol, runtime_checkable

from promptevolver.annotations.labels import LabelScale
from promptevolver.judge.prompts import Prompt
from promptevolver.llm.base import LLMClient

__all__ = ["OUTPUTS", "Judgement", "Metric", "label_scale_of"]

#: Key of ``Judgement.details`` under which a metric with several prompts puts each prompt's
#: parsed output (prompt name → JSON-ready dict), e.g.
#: :class:`~promptevolver.judge.statements.StatementSupport`: comparing them with a sample's
#: expected output per prompt (``SampleAnnotation.expected_output(name)``) tells which prompt a
#: disagreement comes from.
OUTPUTS = "outputs"


@dataclass(frozen=True)
class Judgement:
    """The outcome of judging one sample.

    ``score`` is the verdict (0.0/1.0 for a binary metric) or None when the evaluation failed;
    then ``error`` says why, ``cause`` names the kind of failure (``http <status>``,
    ``transport``, ``parse``, ``timeout``, ``budget``... see :attr:`LLMError.cause
    <promptevolver.errors.LLMError.cause>`) and ``raw`` holds the model's last text, if any. A
    failure is data, never a verdict. ``details`` holds extra, JSON-serialisable facts of a
    composite metric, e.g. the per-judge verdicts of a
    :class:`~promptevolver.judge.ensemble.JudgeEnsemble`, or each prompt's output under
    :data:`OUTPUTS` for a metric with several prompts; None otherwise. ``score`` is a 0/1 verdict
    for a binary metric, any number in the metric's range for a numeric one.
    """

    score: float | None
    reason: str | None = None
    raw: str | None = None
    error: str | None = None
    cause: str | None = None
    details: Mapping[str, Any] | None = dataclass_field(default=None, hash=False)

    @property
    def failed(self) -> bool:
        return self.score is None


@runtime_checkable
class Metric(Protocol):
    """What the optimizer, the evaluator and the reports need from a judge.

    Attributes:
        name: the metric's name (the key of its annotations in a Ragas annotation file).
        calls_per_evaluation: LLM calls one :meth:`ajudge` makes when every answer parses (1 for
            a single judge, 2 for a statement extractor and its verifier, ``num_judges`` times the
            wrapped metric's for an ensemble; a re-ask after a malformed answer adds one); the cost
            model reads it.

    Optional: ``label_scale``, a :class:`~promptevolver.annotations.labels.LabelScale` saying
    what its labels are (binary verdicts, or scores in a range); ours all declare it, and a run
    checks the annotations against it before any call (:func:`label_scale_of`).
    """

    name: str

    @property
    def calls_per_evaluation(self) -> int: ...

    def get_prompts(self) -> dict[str, Prompt[Any]]:
        """Prompt name → prompt (a copy of the mapping; prompts are immutable)."""
        ...

    def set_prompts(self, **prompts: Prompt[Any]) -> None:
        """Replace prompts by name. Raises KeyError for a name the metric does not have."""
        ...

    def get_instructions(self) -> dict[str, str]:
        """Prompt name → instruction: a candidate."""
        ...

    def set_instructions(self, instructions: Mapping[str, str]) -> None:
        """Apply a candidate. Raises KeyError for a prompt name the metric does not have."""
        ...

    def prompt_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The sample fields this judge shows the LLM. Raises AnnotationError for a missing one."""
        ...

    async def ajudge(
        self,
        inputs: Mapping[str, Any],
        *,
        llm: LLMClient | None = None,
        instructions: Mapping[str, str] | None = None,
        sample_index: int = 0,
        temperature: float | None = None,
    ) -> Judgement:
        """Judge one sample with ``instructions`` (default: the metric's own).

        Never raises for LLM trouble: a failed call or an unparseable answer is a failed
        :class:`Judgement`. Raises AnnotationError for a sample missing a required field.
        """
        ...


def label_scale_of(metric: object) -> LabelScale | None:
    """The metric's declared ``label_scale`` (an ensemble's is its judge's), or None when it
    declares none (a user's judge may not); then a run keeps the annotations' own kind."""
    scale = getattr(metric, "label_scale", None)
    return scale if isinstance(scale, LabelScale) else None
