"""Which prompt of an annotation file the judge's instruction is.

A Ragas annotation sample keeps the trace of each prompt of the judged metric under the prompt's
name (``prompts: {single_turn_aspect_critic_prompt: {prompt_output, edited_output, ...}}``);
the human's corrected reason lives there. The judge's prompt must have that name, or every
corrected reason is silently lost (and the simulated judge reads no original verdicts).
:func:`match_prompt` settles the name, never silently:

* ``prompt_name`` given (config key, or ``AspectCritic(prompt_name=...)`` in Python): it must be
  one of the file's prompt keys; otherwise an error lists them;
* else one prompt key in the file: that one;
* else several: the judge's default name when it is one of them; otherwise an error lists the
  keys and asks for ``prompt_name``;
* a file without prompt traces: the default name, with a note that no corrected reason exists.

The match says how it was made (:meth:`PromptMatch.describe`), for the terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.errors import ConfigError

__all__ = ["PromptMatch", "match_prompt", "prompt_keys"]


@dataclass(frozen=True)
class PromptMatch:
    """The judge's prompt name and how it was chosen.

    Attributes:
        name: the prompt name (the judge's prompt and the file's key).
        how: ``given`` (prompt_name), ``only`` (the file's one prompt), ``default`` (the judge's
            own name among several) or ``absent`` (the file has no prompt traces).
        keys: the file's prompt keys, in order of first appearance.
    """

    name: str
    how: str
    keys: tuple[str, ...]

    def describe(self) -> str:
        """One line, e.g. ``prompt: 'aspect_critic_prompt' (the only prompt in the file)``."""
        why = {
            "given": "prompt_name",
            "only": "the only prompt in the file",
            "default": f"the judge's own prompt name, one of {len(self.keys)} prompts in the file",
            "absent": "the file has no prompt traces, so no human-corrected reason to learn from",
        }[self.how]
        return f"prompt: {self.name!r} ({why})"


def prompt_keys(dataset: SingleMetricAnnotation) -> tuple[str, ...]:
    """Every prompt key of the samples, in order of first appearance."""
    keys: dict[str, None] = {}
    for sample in dataset.samples:
        keys.update(dict.fromkeys(sample.prompts))
    return tuple(keys)


def match_prompt(dataset: SingleMetricAnnotation, prompt_name: str | None, *, default: str) -> PromptMatch:
    """The judge's prompt name for ``dataset`` (rules in the module docstring).

    Args:
        prompt_name: the name asked for (None: choose from the file).
        default: the judge's own prompt name (``AspectCritic.PROMPT_NAME``).

    Raises:
        ConfigError: ``prompt_name`` is not a prompt of the file, or the file has several prompts
            and none is ``default``; the message names the file and lists the keys present.
    """
    keys = prompt_keys(dataset)
    where = f"{dataset.source or 'the annotations'} (metric {dataset.name!r})"
    if prompt_name is not None:
        if prompt_name in keys:
            return PromptMatch(prompt_name, "given", keys)
        present = f"prompts present: {list(keys)}" if keys else "it has no prompt traces"
        raise ConfigError(f"{where}: prompt_name {prompt_name!r} is not a prompt of this file; {present}")
    if len(keys) == 1:
        return PromptMatch(keys[0], "only", keys)
    if not keys:
        return PromptMatch(default, "absent", keys)
    if default in keys:
        return PromptMatch(default, "default", keys)
    raise ConfigError(
        f"{where} has {len(keys)} prompts {list(keys)}: set prompt_name in the config "
        "(AspectCritic(prompt_name=...) in Python) to the one whose instruction the judge is"
    )
