"""Which prompts of an annotation file the judge's instructions are.

A Ragas annotation sample keeps the trace of each prompt of the judged metric under the prompt's
name (``prompts: {single_turn_aspect_critic_prompt: {prompt_output, edited_output, ...}}``);
the human's corrected reasons live there. The judge's prompts must have those names, or every
corrected reason is silently lost (and the simulated judge reads no original verdicts).
:func:`match_prompt` settles the names, never silently:

* a judge of one prompt that can take any name (an aspect critic): ``prompt_name`` given (config
  key, or ``AspectCritic(prompt_name=...)`` in Python) must be one of the file's prompt keys;
  else one prompt key in the file is that one; else, among several, the judge's own name;
  otherwise an error lists the keys and asks for ``prompt_name``;
* a judge whose prompts have fixed names (a rubric judge, the two prompts of statement
  support): every one of them must be in the file, else an error lists both sides; a
  ``prompt_name`` other than its own is an error;
* a file without prompt traces: the judge's own names, with a note that no corrected reason exists.

The match says how it was made (:meth:`PromptMatch.describe`), for the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.errors import ConfigError

__all__ = ["PromptMatch", "match_prompt", "prompt_keys"]


@dataclass(frozen=True)
class PromptMatch:
    """The judge's prompt names and how they were chosen.

    Attributes:
        names: the judge's prompt names, each a key of the file (unless ``how`` is ``absent``).
        how: ``given`` (prompt_name), ``only`` (the file's one prompt), ``default`` (the judge's
            own names, found in the file) or ``absent`` (the file has no prompt traces).
        keys: the file's prompt keys, in order of first appearance.
        renamable: the judge has one prompt that takes the file's name (an aspect critic).
    """

    names: tuple[str, ...]
    how: str
    keys: tuple[str, ...]
    renamable: bool = False

    @property
    def rename(self) -> str | None:
        """The name to give the judge's one renamable prompt (what ``prompt_name`` records);
        None when the judge keeps its own prompt names."""
        return self.names[0] if self.renamable else None

    def describe(self) -> str:
        """One line, e.g. ``prompt: 'aspect_critic_prompt' (the only prompt in the file)``."""
        why = {
            "given": "prompt_name",
            "only": "the only prompt in the file",
            "default": f"the judge's own, among {len(self.keys)} prompts in the file",
            "absent": "the file has no prompt traces, so no human-corrected reason to learn from",
        }[self.how]
        label = "prompt" if len(self.names) == 1 else "prompts"
        return f"{label}: {', '.join(map(repr, self.names))} ({why})"


def prompt_keys(dataset: SingleMetricAnnotation) -> tuple[str, ...]:
    """Every prompt key of the samples, in order of first appearance."""
    keys: dict[str, None] = {}
    for sample in dataset.samples:
        keys.update(dict.fromkeys(sample.prompts))
    return tuple(keys)


def match_prompt(
    dataset: SingleMetricAnnotation,
    prompt_name: str | None,
    *,
    judge_prompts: Sequence[str],
    renamable: bool,
) -> PromptMatch:
    """The judge's prompt names for ``dataset`` (rules in the module docstring).

    Args:
        prompt_name: the name asked for (None: choose from the file).
        judge_prompts: the judge's own prompt names (e.g. ``[AspectCritic.PROMPT_NAME]``).
        renamable: whether the judge's one prompt may take another name (an aspect critic).

    Raises:
        ConfigError: ``prompt_name`` is not a prompt of the file or cannot name this judge's
            prompt, the file has several prompts and none is the judge's, or a fixed-name prompt
            of the judge is not in the file; the message names the file and lists the keys.
    """
    keys, own = prompt_keys(dataset), tuple(judge_prompts)
    where = f"{dataset.source or 'the annotations'} (metric {dataset.name!r})"
    present = f"prompts present: {list(keys)}" if keys else "it has no prompt traces"
    one = renamable and len(own) == 1
    if prompt_name is not None and not one:
        if prompt_name not in own:
            raise ConfigError(
                f"prompt_name {prompt_name!r}: this judge's prompts have fixed names {list(own)}; only "
                "an aspect_critic judge's prompt takes the file's name"
            )
        prompt_name = None  # one of its fixed names: nothing to choose
    if prompt_name is not None:
        if prompt_name in keys:
            return PromptMatch((prompt_name,), "given", keys, one)
        raise ConfigError(f"{where}: prompt_name {prompt_name!r} is not a prompt of this file; {present}")
    if not keys:
        return PromptMatch(own, "absent", keys, one)
    if one:
        return _one_of(keys, own[0], where)
    missing = [name for name in own if name not in keys]
    if missing:
        raise ConfigError(
            f"{where}: the judge's prompt(s) {missing} are not in the file ({present}); its prompts must "
            "keep the names the annotations were made with (an aspect critic takes the file's name: "
            "prompt_name in the config, AspectCritic(prompt_name=...) in Python)"
        )
    return PromptMatch(own, "only" if len(keys) == 1 else "default", keys)


def _one_of(keys: tuple[str, ...], own: str, where: str) -> PromptMatch:
    if len(keys) == 1:
        return PromptMatch(keys, "only", keys, True)
    if own in keys:
        return PromptMatch((own,), "default", keys, True)
    raise ConfigError(
        f"{where} has {len(keys)} prompts {list(keys)}: set prompt_name in the config "
        "(AspectCritic(prompt_name=...) in Python) to the one whose instruction the judge is"
    )
