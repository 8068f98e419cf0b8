"""The one contract between a judge and everything that uses it (optimizer, evaluator, reports).

:class:`Metric` is what a judge must provide; :class:`~promptevolver.judge._aspect_critic.AspectCritic`
and :class:`~promptevolver.judge._ensemble.JudgeEnsemble` implement it, and a user's own judge can
too (check it with the contract suite in :mod:`promptevolver.testing`). :class:`Judgement` is the
outcome of judging one sample: a score, or a failure with its cause — never both.

:class:`Judge` is the base our judges share: the one public :meth:`Judge.ajudge` (its signature,
its docstring and its defaults, written once) turns a call into a frozen :class:`JudgeRequest` and
hands it to the judge's own ``_ajudge``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from promptevolver.annotations import LabelScale, LabelTarget, SampleAnnotation
from promptevolver.judge._prompts import Prompt
from promptevolver.llm import LLMClient
from promptevolver.rundir import ChosenJudge, as_chosen_judge

if TYPE_CHECKING:
    from promptevolver.judge._examples import ExampleStore

__all__ = [
    "OUTPUTS",
    "Judge",
    "JudgeRequest",
    "Judgement",
    "Metric",
    "label_entry",
    "label_scale_of",
    "label_target_of",
    "refuse_ragas_object",
]

#: What to pass instead of a Ragas object, by the argument it was given as.
_INSTEAD_OF_RAGAS = {
    "metric": (
        "a Ragas metric object: wrap it in RagasMetric (from promptevolver.integrations.ragas import "
        "RagasMetric; metric=RagasMetric(your_metric)), or call optimize_ragas_metric(your_metric, "
        "dataset, llm=...), which also writes the result back into it"
    ),
    "loss": (
        "a Ragas loss: use promptevolver's, of the same name (from promptevolver import "
        "BinaryMetricLoss, MSELoss)"
    ),
    "dataset": (
        "Ragas' annotation object: load the same file with promptevolver's "
        "SingleMetricAnnotation.from_json(path) (or MetricAnnotation.from_json)"
    ),
    "llm": (
        "a Ragas LLM wrapper: pass a client of ours (from promptevolver.llm import OpenAIClient: any "
        "OpenAI-compatible server)"
    ),
}


def refuse_ragas_object(value: Any, role: str) -> None:
    """Refuse a Ragas object handed where ours is meant (a metric, loss, dataset or LLM), with
    one line saying what to pass instead (``wrap it in RagasMetric``...), before it can fail
    later with an ``AttributeError`` about a method it lacks.

    Args:
        role: ``metric``, ``loss``, ``dataset`` or ``llm`` (also ``reflection_llm``).

    Raises:
        TypeError: ``value``'s class comes from the ``ragas`` package.
    """
    kind = type(value)
    if kind.__module__ != "ragas" and not kind.__module__.startswith("ragas."):
        return
    instead = _INSTEAD_OF_RAGAS["llm" if role.endswith("llm") else role]
    raise TypeError(f"{role}: got {kind.__module__}.{kind.__name__}, {instead}")


#: Key of ``Judgement.details`` under which a metric with several prompts puts each prompt's
#: parsed output (prompt name → JSON-ready dict), e.g.
#: :class:`~promptevolver.judge._statements.StatementSupport`: comparing them with a sample's
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
    :class:`~promptevolver.judge._ensemble.JudgeEnsemble`, or each prompt's output under
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

    Optional: ``label_scale``, a :class:`~promptevolver.annotations._labels.LabelScale` saying
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
        """Judge one sample with ``instructions`` (default: the metric's own); ours also take
        ``examples`` (see :meth:`Judge.ajudge`, whose behaviour a user's judge should follow).

        Never raises for LLM trouble: a failed call or an unparseable answer is a failed
        :class:`Judgement`. Raises AnnotationError for a sample missing a required field.
        """
        ...


@dataclass(frozen=True)
class JudgeRequest:
    """One :meth:`Judge.ajudge` call, its defaults applied (what a judge's ``_ajudge`` reads).

    Attributes:
        llm: the client of the call, else the judge's own (None only for a judge that has none
            itself and passes the call on, e.g. an ensemble: then the wrapped metric's).
        instructions: prompt name → instruction overriding the judge's own for this call; None:
            the judge's own (prompts not named keep theirs).
        sample_index: tells repeated judgements of the same sample apart (part of the request,
            hence of cache keys; re-asks add their attempt number to it).
        temperature: the call's, else the judge's own (None only for an ensemble without one of
            its own: the wrapped metric's).
        examples: annotated samples shown first as teaching examples; None: the judge's own
            (none for ours, the Ragas prompt's few-shot examples for
            :class:`~promptevolver.integrations.ragas.RagasMetric`).
    """

    llm: LLMClient | None
    instructions: Mapping[str, str] | None
    sample_index: int
    temperature: float | None
    examples: Sequence[SampleAnnotation] | None


class Judge:
    """The base of our judges: the one public :meth:`ajudge`; each judge implements ``_ajudge``."""

    #: The judge's own client (None: each call must give one, or the judge passes the call on).
    llm: LLMClient | None = None
    #: The judge's own sampling temperature (None: the wrapped metric's, for an ensemble).
    temperature: float | None = None
    #: The teaching examples it shows when a call gives none (:meth:`set_examples`): the policy
    #: and its store; None: none.
    _own_examples: tuple[str, ExampleStore] | None = None

    @property
    def example_policy(self) -> str:
        """The policy of the judge's own teaching examples: ``none``, ``static`` or ``retrieval``."""
        return "none" if self._own_examples is None else self._own_examples[0]

    def set_examples(self, examples: Mapping[str, Any] | None) -> None:
        """Show these teaching examples whenever a call gives none (``ajudge(examples=None)``).

        Args:
            examples: a chosen judge's examples block (:attr:`ChosenJudge.examples
                <promptevolver.rundir.ChosenJudge.examples>`, result.json's ``examples``):
                policy ``static`` (one set for every input) or ``retrieval`` (per input, from its
                store); None or policy ``none``: no examples.

        Raises:
            ValueError: an unknown policy, or a block without its ``store``.
        """
        policy = "none" if examples is None else str(examples.get("policy", "none"))
        if policy == "none":
            self._own_examples = None
            return
        if policy not in ("static", "retrieval"):
            raise ValueError(f"unknown example policy {policy!r}; policies: none, static, retrieval")
        assert examples is not None
        store = examples.get("store")
        if not isinstance(store, Mapping):
            raise ValueError(f"example policy {policy!r} needs its store (the examples block's 'store')")
        from promptevolver.judge._examples import ExampleStore  # scikit-learn, loaded when needed

        self._own_examples = (policy, ExampleStore.from_dict(store))

    def apply_chosen(self, chosen: ChosenJudge | Mapping[str, str] | str | os.PathLike[str]) -> None:
        """Become the judge a run chose: its instructions AND its teaching examples.

        Args:
            chosen: a :class:`~promptevolver.rundir.ChosenJudge`, an ``OptimizationResult``, or
                the path of a run directory, result.json or best_instructions.json
                (:func:`promptevolver.rundir.read_chosen_judge`); a plain mapping of
                instructions applies those and no examples.

        Raises:
            ConfigError: the path holds no chosen judge (naming the file).
            KeyError: a prompt name the judge does not have (nothing is changed then).
            ValueError: an examples block that is not one.
        """
        record = as_chosen_judge(chosen)
        self.set_instructions(record.instructions)  # type: ignore[attr-defined]
        self.set_examples(record.examples)

    def client(self, llm: LLMClient | None) -> LLMClient | None:
        """The client of a call: ``llm``, else the judge's own (a judge that needs one raises
        ValueError when there is neither)."""
        return llm or self.llm

    async def ajudge(
        self,
        inputs: Mapping[str, Any],
        *,
        llm: LLMClient | None = None,
        instructions: Mapping[str, str] | None = None,
        sample_index: int = 0,
        temperature: float | None = None,
        examples: Sequence[SampleAnnotation] | None = None,
    ) -> Judgement:
        """Judge one sample with ``instructions`` (default: the judge's own).

        Args:
            inputs: the sample's fields (``metric_input``).
            llm: the client of this call (default: the judge's own).
            instructions: prompt name → instruction for this call only (the judge is unchanged).
            sample_index: tells repeated judgements of the same sample apart (it is part of the
                request, hence of cache keys; re-asks add their attempt number to it).
            temperature: overrides the judge's own for this call.
            examples: annotated samples shown first as teaching examples
                (:meth:`~promptevolver.judge._prompt_set.PromptSet.demonstrations`); None: the
                judge's own (those of :meth:`set_examples` or :meth:`apply_chosen`, else none;
                the Ragas prompt's own for a
                :class:`~promptevolver.integrations.ragas.RagasMetric`); ``[]`` shows none.

        Returns:
            a :class:`Judgement` (what its score and details hold: each judge's ``_ajudge``).

        Never raises for LLM trouble: failed calls and unusable answers become a failed
        :class:`Judgement`. Raises :class:`AnnotationError` for a sample missing a required field,
        ValueError when neither the call nor the judge has an LLM.
        """
        if examples is None and self._own_examples is not None:
            policy, store = self._own_examples
            examples = store.examples_for(policy, inputs)
        request = JudgeRequest(
            llm=self.client(llm),
            instructions=instructions,
            sample_index=sample_index,
            temperature=self.temperature if temperature is None else temperature,
            examples=examples,
        )
        return await self._ajudge(inputs, request)

    async def _ajudge(self, inputs: Mapping[str, Any], request: JudgeRequest) -> Judgement:
        """Judge one sample for ``request`` (see :meth:`ajudge`)."""
        raise NotImplementedError(f"{type(self).__name__} defines no _ajudge")


def label_scale_of(metric: object) -> LabelScale | None:
    """The metric's declared ``label_scale`` (an ensemble's is its judge's), or None when it
    declares none (a user's judge may not); then a run keeps the annotations' own kind.

    The one answer to "what labels can a human give for this metric":
    ``label_scale_of(metric).label_space()`` (:meth:`LabelScale.label_space
    <promptevolver.annotations._labels.LabelScale.label_space>`: values and names, e.g. ``a`` /
    ``b`` / ``tie`` for a pairwise judge; None for a free score in a range)."""
    scale = getattr(metric, "label_scale", None)
    return scale if isinstance(scale, LabelScale) else None


def label_entry(metric: object, value: float, *, binary: bool) -> tuple[str, Any]:
    """(the answer field, the value as the judge answers it) of human label ``value``: how a
    meta-prompt shows a sample's label — ``("verdict", 1)``, ``("score", 4)``, ``("verdict",
    "tie")`` for a pairwise judge, ``("label", "refund")`` for a classification. A judge whose
    label space names its labels otherwise than no / yes (an ensemble's wrapped one) answers
    names in its ``LABEL_FIELD``; any other: ``verdict`` when ``binary`` else ``score``, the
    number (a whole one as an int)."""
    inner = getattr(metric, "metric", metric)
    scale = label_scale_of(inner)
    names = [c.name for c in (scale.label_space() if scale is not None else None) or ()]
    field = getattr(inner, "LABEL_FIELD", None)
    if scale is not None and scale.kind != "numeric" and names != ["no", "yes"] and isinstance(field, str):
        return field, scale.name_of(value)
    return ("verdict" if binary else "score"), int(value) if float(value).is_integer() else value


def label_target_of(metric: Metric) -> LabelTarget | None:
    """Where a human label of ``metric`` goes in an annotation sample (what a review page writes,
    :func:`~promptevolver.annotations._labelling.labelled_sample`), or None when the metric
    declares no :func:`label_scale_of`.

    A metric of one prompt (an ensemble's: its judge's): that prompt, its answer field and the
    judge's answer for each label (:func:`label_entry`: ``"tie"``, a class name, or the number).
    A metric of several prompts (statement support's extractor and verifier, an ensemble of it):
    no prompt (``prompt_name`` None), since no one prompt's output is its score; the label is
    the sample's ``target`` and ``is_accepted``, which is what the loaders and
    :func:`~promptevolver.optimizers.classify` read as its human label."""
    scale = label_scale_of(metric)
    if scale is None:
        return None
    binary = scale.kind == "binary"
    prompts = list(metric.get_prompts())
    space = scale.label_space() or ()
    field, _ = label_entry(metric, space[0].value if space else 0.0, binary=binary)
    if len(prompts) != 1:
        return LabelTarget(None, field, binary)
    names = []
    for choice in space:
        shown = label_entry(metric, choice.value, binary=binary)[1]
        if isinstance(shown, str):
            names.append((choice.value, shown))
    return LabelTarget(prompts[0], field, binary, tuple(names))
