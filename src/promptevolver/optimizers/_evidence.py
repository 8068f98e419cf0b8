"""What the human annotations already say about the recorded judge, before any LLM call.

Every annotated sample holds the judge's recorded output (``prompt_output``: reason and verdict)
and the human's view: accepted or rejected, and sometimes an edited output. Three kinds of
samples follow, each sample in exactly one:

* **verdict** — the human's label differs from the recorded verdict (a rejected sample, or an
  edited verdict, or a ``target`` that differs): the judge was wrong there;
* **reason** — the verdict stands but the human edited the reason: the judge was right for the
  wrong reason, and the edited reason usually names the criterion it should apply;
* **agree** — nothing to correct.

Verdict and reason corrections are the search's evidence: meta calls are shown them (with the
recorded judge output beside the human's) to learn criteria from, and judge calls are spent
mostly on the verdict samples, where candidates differ (:mod:`._focus`). "Nothing left to learn"
means no verdict and no reason correction left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from promptevolver.annotations import SampleAnnotation, SingleMetricAnnotation

if TYPE_CHECKING:
    from promptevolver.judge import Metric

__all__ = ["Evidence", "EvidenceKind", "classify", "evidence_prompt"]

EvidenceKind = Literal["verdict", "reason", "agree"]


@dataclass(frozen=True)
class Evidence:
    """The annotation's verdict on the recorded judge at one sample.

    Attributes:
        position: the sample's position in the dataset.
        kind: ``verdict``, ``reason`` or ``agree`` (see the module docstring).
        recorded: the recorded judge output (``reason``, ``verdict``) when the file has one.
        human_reason: the human edited the recorded reason (a non-empty one that differs, white
            space aside): always so for ``reason``; for ``verdict``, a correction that says why.
        verdict: the recorded verdict (``recorded``'s, else the sample's ``metric_output``), what
            ``kind`` compares with the label; None when the file records none.
    """

    position: int
    kind: EvidenceKind
    recorded: dict[str, Any] | None
    human_reason: bool = False
    verdict: float | None = None


def classify(
    dataset: SingleMetricAnnotation,
    labels: Sequence[float | None],
    positions: Sequence[int],
    prompt_name: str | None,
) -> dict[int, Evidence]:
    """The evidence of each sample at ``positions`` (usable samples: their label is not None).

    ``prompt_name`` is the prompt whose recorded output and edits are read (None: the sample's
    only prompt, or none).
    """
    return {p: _evidence(dataset.samples[p], p, labels[p], prompt_name) for p in positions}


def evidence_prompt(metric: Metric) -> str | None:
    """The prompt whose annotations are evidence: the metric's only prompt (None when it has
    several: their recorded outputs are not the judge's verdict)."""
    names = list(metric.get_prompts())
    return names[0] if len(names) == 1 else None


def _evidence(
    sample: SampleAnnotation, position: int, label: float | None, prompt_name: str | None
) -> Evidence:
    prompt = _prompt(sample, prompt_name)
    recorded = None if prompt is None else _as_dict(prompt.prompt_output)
    verdict = _verdict(recorded) if recorded else None
    if verdict is None:
        verdict = None if sample.metric_output != sample.metric_output else sample.metric_output
    edited = None if prompt is None else _as_dict(prompt.edited_output)
    said = bool(edited and recorded and _reason(edited) and _reason(edited) != _reason(recorded))
    verdict = None if verdict is None else float(verdict)
    if label is not None and verdict is not None and verdict != float(label):
        return Evidence(position, "verdict", recorded, human_reason=said, verdict=verdict)
    if said:
        return Evidence(position, "reason", recorded, human_reason=True, verdict=verdict)
    return Evidence(position, "agree", recorded, verdict=verdict)


def _prompt(sample: SampleAnnotation, prompt_name: str | None) -> Any:
    if prompt_name is not None and prompt_name in sample.prompts:
        return sample.prompts[prompt_name]
    return next(iter(sample.prompts.values()), None) if len(sample.prompts) == 1 else None


def _as_dict(output: Any) -> dict[str, Any] | None:
    return output if isinstance(output, dict) else None


def _verdict(output: dict[str, Any]) -> float | None:
    for key in ("verdict", "score", "value"):
        value = output.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def _reason(output: dict[str, Any]) -> str:
    value = output.get("reason")
    return " ".join(value.split()) if isinstance(value, str) else ""
