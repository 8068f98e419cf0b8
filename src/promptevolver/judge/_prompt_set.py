"""The prompts of one judge, by name: the part of the :class:`~promptevolver.judge._protocol.Metric`
protocol every judge of ours shares (Ragas' ``get_prompts``/``set_prompts``, and candidates as
prompt name → instruction), asking one of them for a call (:meth:`PromptSet.ask`), and the check
of a sample's input fields."""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from promptevolver.errors import AnnotationError, ConfigError
from promptevolver.judge._asking import Answer, ask
from promptevolver.judge._prompts import OutputT, Prompt
from promptevolver.judge._protocol import Judge, Judgement, JudgeRequest
from promptevolver.llm import ChatMessage, LLMClient
from promptevolver.rundir import (
    DRY_RUN_NOTE,
    as_chosen_judge,
    as_instructions,
    metric_config_near,
    prompt_name_near,
    read_chosen_judge,
)

if TYPE_CHECKING:
    from typing_extensions import Self

    from promptevolver.annotations import SampleAnnotation

__all__ = ["JudgeOptions", "PromptSet", "pick_inputs"]


class JudgeOptions(TypedDict, total=False):
    """The settings every judge of ours takes besides its criterion, with :class:`PromptSet`'s
    defaults (``llm`` None, ``max_reasks`` 1, ``temperature`` 0.0): a judge's constructor takes
    them as ``**options: Unpack[JudgeOptions]`` and passes them on."""

    llm: LLMClient | None
    max_reasks: int
    temperature: float


class PromptSet(Judge):
    """Prompt name → :class:`Prompt` of a judge, and the settings every judge of ours has.

    Subclasses call ``__init__`` (or set ``name``, ``llm``, ``temperature`` and ``max_reasks``
    themselves) and then fill ``_prompts``.

    Args:
        name: the metric's name (the key of its annotations).
        definition: the criterion in plain words (a seed instruction embeds it).
        llm: default client for :meth:`ajudge` (None: each call gives one).
        max_reasks: times a malformed answer is re-asked (with the problem shown) before the
            evaluation is recorded as failed (≥ 0).
        temperature: sampling temperature of judge calls.

    Raises:
        ValueError: an empty ``name`` or ``definition``, or ``max_reasks`` < 0.
    """

    name: str
    definition: str
    llm: LLMClient | None
    temperature: float
    max_reasks: int
    _prompts: dict[str, Prompt[Any]]
    #: The output field that holds the judge's label: ``verdict`` (binary) or ``score``.
    LABEL_FIELD = "verdict"
    #: The sample fields :meth:`prompt_inputs` requires, and those it shows when present
    #: (Ragas' single-turn fields).
    REQUIRED_FIELDS: tuple[str, ...] = ("user_input", "response")
    OPTIONAL_FIELDS: tuple[str, ...] = ("reference", "retrieved_contexts", "reference_contexts")

    def __init__(
        self,
        *,
        name: str,
        definition: str,
        llm: LLMClient | None = None,
        max_reasks: int = 1,
        temperature: float = 0.0,
    ) -> None:
        if not name.strip():
            raise ValueError("name must not be empty")
        if not definition.strip():
            raise ValueError("definition must not be empty")
        if max_reasks < 0:
            raise ValueError(f"max_reasks must be >= 0, got {max_reasks}")
        self.name = name
        self.definition = definition
        self.llm = llm
        self.max_reasks = max_reasks
        self.temperature = temperature

    @property
    def calls_per_evaluation(self) -> int:
        """LLM calls one evaluation makes when every answer parses, re-asks excluded: one per
        prompt (1; 2 for an extractor and its verifier)."""
        return len(self._prompts)

    @property
    def prompt_name(self) -> str:
        """The name of the judge's (first) prompt: a one-prompt judge's only one."""
        return next(iter(self._prompts))

    def prompt_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The fields this judge shows the LLM: :attr:`REQUIRED_FIELDS`, then the present
        :attr:`OPTIONAL_FIELDS`.

        Raises:
            AnnotationError: a required field is missing or empty (names ``metric_input.<field>``).
        """
        return pick_inputs(self.name, inputs, self.REQUIRED_FIELDS, self.OPTIONAL_FIELDS)

    def demonstrations(
        self, examples: Sequence[SampleAnnotation]
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Teaching examples for :meth:`Prompt.render`: per annotated sample, the inputs this judge
        shows and the human's answer, label first (``{"verdict": 1, "reason": ...}``; the reason is
        the prompt's edited output's, else the accepted output's; left out when there is none).

        Raises:
            AnnotationError: an example has no human label, or misses a required input field.
        """
        prompt_name = next(iter(self._prompts))
        scale = getattr(self, "label_scale", None)
        binary = self.LABEL_FIELD == "verdict" if scale is None else scale.kind == "binary"
        out = []
        for sample in examples:
            label = sample.human_label(binary=binary)
            if label is None:
                raise AnnotationError(f"{self.name}: an example has no human label", field="metric_output")
            shown: dict[str, Any] = {self.LABEL_FIELD: self.shown_label(label)}
            expected = sample.expected_output(prompt_name) or {}
            if isinstance(expected.get("reason"), str) and expected["reason"].strip():
                shown["reason"] = expected["reason"]
            out.append((self.prompt_inputs(sample.metric_input), shown))
        return out

    @classmethod
    def from_result(
        cls,
        path: str | Path,
        *,
        name: str | None = None,
        definition: str | None = None,
        **kwargs: Any,
    ) -> Self:
        """The judge a run chose, of this kind: its instructions AND its teaching examples
        applied (:meth:`~promptevolver.judge._protocol.Judge.apply_chosen`), so it judges as it
        did when it was chosen.

        Args:
            path: a run directory, its ``result.json``, its ``best_instructions.json`` or a JSON
                object prompt name → instruction (:func:`promptevolver.rundir.read_chosen_judge`).
            name, definition: the judge's; default: those of the run's ``config.yaml`` next to
                ``path``.
            kwargs: other constructor arguments (``llm``, ``max_reasks``, ``temperature``,
                ``prompt_name``, a rubric's ``score_range``...; default: the run's, from its
                config.yaml next to ``path``).

        Warns:
            UserWarning: the run was a dry run (chosen on the simulated LLM: not a judge to ship).

        Raises:
            ConfigError: unreadable instructions; no name/definition given and no config.yaml
                next to ``path`` to take them from; the run's judge is of another kind (the
                message names the class to load it with).
            KeyError: the instructions name a prompt this judge does not have.
        """
        chosen = read_chosen_judge(path)
        if chosen.dry_run:  # as every other place that shows or exports a dry run's judge says
            warnings.warn(f"{path}: {DRY_RUN_NOTE}", UserWarning, stacklevel=2)
        config = metric_config_near(path)
        if config is not None:
            kind, arguments = config.judge_source()
            if kind != cls.__name__:
                raise ConfigError(
                    f"{path}: the run's judge is a {kind} (metric type {config.type}); load it with "
                    f"{kind}.from_result"
                )
            kwargs = {**arguments, **kwargs}
        if name is not None:
            kwargs["name"] = name
        if definition is not None:
            kwargs["definition"] = definition
        accepted = inspect.signature(cls.__init__).parameters
        recorded = prompt_name_near(path) if "prompt_name" in accepted else None
        if recorded is not None:
            kwargs.setdefault("prompt_name", recorded)
        if not {"name", "definition"} <= set(kwargs) and "name" not in _defaults(cls):
            raise ConfigError(f"{path}: pass name= and definition= (no config.yaml next to it)")
        metric = cls(**kwargs)
        metric.apply_chosen(chosen)
        return metric

    def shown_label(self, value: float) -> Any:
        """How label ``value`` (a number of the annotations) is written where the judge reads it —
        a teaching example's answer, a meta-prompt's sample: as the judge answers it (a whole
        number as an int; a judge answering names, e.g. ``"tie"``, overrides this)."""
        return int(value) if float(value).is_integer() else value

    def label_of(self, output: Any) -> float:
        """The label of a parsed answer as the number annotations hold (its :attr:`LABEL_FIELD`;
        a judge answering names maps them to their values)."""
        return float(getattr(output, self.LABEL_FIELD))

    def client(self, llm: LLMClient | None) -> LLMClient:
        """The client of a call: ``llm``, else the judge's own. Raises ValueError with neither."""
        client = llm or self.llm
        if client is None:
            raise ValueError(f"{self.name}: no llm given to the metric or the call")
        return client

    async def _ajudge(self, inputs: Mapping[str, Any], request: JudgeRequest) -> Judgement:
        """A one-prompt judge (:meth:`~promptevolver.judge._protocol.Judge.ajudge`): the answer's
        :attr:`LABEL_FIELD` as the score (0.0/1.0 for a verdict), with its reason; an answer that
        does not parse or that :meth:`check_answer` refuses is re-asked, then a failed
        :class:`Judgement` (a judge with several prompts overrides this)."""
        prompt = self.prompt_for(self.prompt_name, request.instructions)
        shown = self.prompt_inputs(inputs)
        messages = prompt.render(shown, self.shown_examples(shown, request.examples))
        answer = await self.ask(prompt, messages, request, check=self.check_answer)
        if answer.output is None:
            return answer.failure()
        return Judgement(score=self.label_of(answer.output), reason=answer.output.reason, raw=answer.raw)

    def shown_examples(
        self, shown: Mapping[str, Any], examples: Sequence[SampleAnnotation] | None
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The teaching examples a call shows before the sample whose fields are ``shown``:
        :meth:`demonstrations` of ``examples`` (None: none; a judge with examples of its own
        overrides this)."""
        return self.demonstrations(examples or ())

    def check_answer(self, output: Any) -> None:
        """Raise :class:`~promptevolver.judge._asking.UnusableAnswer` for a parsed answer that
        cannot be used (it is re-asked); the output model's own validation suffices here."""

    async def ask(
        self,
        prompt: Prompt[OutputT],
        messages: tuple[ChatMessage, ...],
        request: JudgeRequest,
        check: Callable[[OutputT], None] | None = None,
    ) -> Answer[OutputT]:
        """:func:`~promptevolver.judge._asking.ask` ``prompt`` for one call: its client, sample index
        and temperature, and this judge's ``max_reasks``. Never raises for LLM trouble."""
        temperature = request.temperature
        if temperature is None:  # Judge.ajudge applied this judge's own, a float
            raise TypeError(f"{self.name}: a judge of ours needs a temperature, got None")
        return await ask(
            self.client(request.llm),
            prompt,
            messages,
            sample_index=request.sample_index,
            temperature=temperature,
            max_reasks=self.max_reasks,
            check=check,
        )

    def get_prompts(self) -> dict[str, Prompt[Any]]:
        """Prompt name → prompt (a copy of the mapping; prompts are immutable)."""
        return dict(self._prompts)

    def set_prompts(self, **prompts: Prompt[Any]) -> None:
        """Replace prompts by name. Raises KeyError for a name the metric does not have."""
        for name, prompt in prompts.items():
            if name not in self._prompts:
                raise KeyError(f"unknown prompt {name!r}; prompts: {sorted(self._prompts)}")
            self._prompts[name] = prompt

    def get_instructions(self) -> dict[str, str]:
        """Prompt name → instruction: a candidate."""
        return {name: p.instruction for name, p in self._prompts.items()}

    def set_instructions(self, instructions: Mapping[str, str] | str | os.PathLike[str]) -> None:
        """Apply a candidate (prompt name → instruction), e.g. an optimization result, or the
        best instructions of a run (a run directory, result.json or best_instructions.json path).

        Raises:
            TypeError: neither a mapping nor a path.
            ConfigError: the path holds no readable instructions.
            KeyError: a prompt name the metric does not have (nothing is changed then).
        """
        carries = isinstance(instructions, str | os.PathLike) or hasattr(instructions, "chosen_judge")
        if carries and (dropped := as_chosen_judge(instructions)).has_examples:
            warnings.warn(
                f"these instructions were chosen with teaching examples ({dropped.example_policy}); "
                "set_instructions applies the instructions alone, which judge differently: "
                "apply_chosen(...) or from_result(...) applies both",
                stacklevel=2,
            )
        instructions = as_instructions(instructions)
        unknown = sorted(set(instructions) - set(self._prompts))
        if unknown:
            raise KeyError(f"unknown prompt(s) {unknown}; prompts: {sorted(self._prompts)}")
        self.set_prompts(**{n: self._prompts[n].with_instruction(i) for n, i in instructions.items()})

    def prompt_for(self, name: str, instructions: Mapping[str, str] | None) -> Prompt[Any]:
        """Prompt ``name`` with ``instructions[name]`` applied when given (the metric is unchanged)."""
        prompt = self._prompts[name]
        if instructions and name in instructions:
            prompt = prompt.with_instruction(instructions[name])
        return prompt


def _defaults(cls: type) -> dict[str, Any]:
    """The constructor's keyword arguments that have defaults (StatementSupport names itself)."""
    parameters = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    return {k: p.default for k, p in parameters.items() if p.default is not inspect.Parameter.empty}


def pick_inputs(
    metric: str, inputs: Mapping[str, Any], required: Sequence[str], optional: Sequence[str]
) -> dict[str, Any]:
    """The ``required`` and present ``optional`` fields of ``inputs``, in that order.

    Raises:
        AnnotationError: a required field is missing or empty (names ``metric_input.<field>``).
    """
    for field in required:
        if inputs.get(field) in (None, "", []):
            given = [k for k, v in inputs.items() if v not in (None, "", [])]
            has = f" (it has {', '.join(map(repr, given))})" if given else " (it has no input field)"
            raise AnnotationError(f"{metric} needs {field!r}{has}", field=f"metric_input.{field}")
    return {k: inputs[k] for k in (*required, *optional) if inputs.get(k) is not None}
