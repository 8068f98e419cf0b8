"""The prompts of one judge, by name: the part of the :class:`~promptevolver.judge.protocol.Metric`
protocol every judge of ours shares (Ragas' ``get_prompts``/``set_prompts``, and candidates as
prompt name → instruction), and the check of a sample's input fields."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from promptevolver.errors import AnnotationError
from promptevolver.judge.prompts import Prompt
from promptevolver.llm.base import LLMClient
from promptevolver.rundir import as_instructions

if TYPE_CHECKING:
    from promptevolver.annotations.models import SampleAnnotation

__all__ = ["PromptSet", "check_judge_arguments", "pick_inputs"]


class PromptSet:
    """Prompt name → :class:`Prompt` of a judge; subclasses fill ``_prompts`` in ``__init__``."""

    name: str
    llm: LLMClient | None
    _prompts: dict[str, Prompt[Any]]
    #: The output field that holds the judge's label: ``verdict`` (binary) or ``score``.
    LABEL_FIELD = "verdict"

    def prompt_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The fields this judge shows the LLM (each judge defines its own)."""
        raise NotImplementedError(f"{type(self).__name__} defines no prompt_inputs")

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
        binary = self.LABEL_FIELD == "verdict"
        out = []
        for sample in examples:
            label = sample.human_label(binary=binary)
            if label is None:
                raise AnnotationError(f"{self.name}: an example has no human label", field="metric_output")
            shown: dict[str, Any] = {
                self.LABEL_FIELD: int(label) if binary or float(label).is_integer() else label
            }
            expected = sample.expected_output(prompt_name) or {}
            if isinstance(expected.get("reason"), str) and expected["reason"].strip():
                shown["reason"] = expected["reason"]
            out.append((self.prompt_inputs(sample.metric_input), shown))
        return out

    def client(self, llm: LLMClient | None) -> LLMClient:
        """The client of a call: ``llm``, else the judge's own. Raises ValueError with neither."""
        client = llm or self.llm
        if client is None:
            raise ValueError(f"{self.name}: no llm given to the metric or the call")
        return client

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


def check_judge_arguments(name: str, definition: str, max_reasks: int) -> None:
    """Raise ValueError for an empty ``name`` or ``definition`` or a negative ``max_reasks``."""
    if not name.strip():
        raise ValueError("name must not be empty")
    if not definition.strip():
        raise ValueError("definition must not be empty")
    if max_reasks < 0:
        raise ValueError(f"max_reasks must be >= 0, got {max_reasks}")


def pick_inputs(
    metric: str, inputs: Mapping[str, Any], required: Sequence[str], optional: Sequence[str]
) -> dict[str, Any]:
    """The ``required`` and present ``optional`` fields of ``inputs``, in that order.

    Raises:
        AnnotationError: a required field is missing or empty (names ``metric_input.<field>``).
    """
    for field in required:
        if inputs.get(field) in (None, "", []):
            raise AnnotationError(f"{metric} needs {field!r}", field=f"metric_input.{field}")
    return {k: inputs[k] for k in (*required, *optional) if inputs.get(k) is not None}
