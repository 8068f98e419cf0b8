"""What the simulated LLM knows about numeric and two-prompt metrics, read from annotations only.

* :func:`score_world` — a numeric judge (a rubric score): per sample, the recorded score (the
  prompt's ``score``, else ``metric_output``) and the human label.
* :func:`statement_world` — :class:`~promptevolver.judge._statements.StatementSupport`: per
  sample, the recorded and the human extraction; per (context, statement), the recorded and the
  human verdict. A statement only the human's extraction has keeps its human verdict as the
  recorded one (the recorded verifier never saw it). A rejected sample without an edit but with a
  ``target`` blames the verifier: the fewest recorded verdicts are flipped (first ones first) to
  bring the supported fraction nearest the target.
* :func:`criteria_world` — the hidden criteria, mined per prompt by
  :func:`~promptevolver.simulation._criteria.mine_world` from a binary view of that prompt's
  faults (:func:`fault_view`: a sample is "wrong" where that prompt erred, its correction is that
  prompt's edit note, or a rejected sample's response), then merged into one world whose
  criterion ids carry the prompt's prefix (``r`` rubric, ``x`` extractor, ``v`` verifier). The
  simulated prompt engineer learns from that world; a judge call is corrected when its prompt's
  instruction names a criterion of that prompt that the sample carries.

Nothing here reads a label the annotations do not hold.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from promptevolver.annotations import SampleAnnotation, SingleMetricAnnotation
from promptevolver.judge import StatementSupport
from promptevolver.simulation._criteria import Truth, World, mine_world, sample_key

__all__ = [
    "EXTRACTOR_PREFIX",
    "RUBRIC_PREFIX",
    "VERIFIER_PREFIX",
    "ExtractionTruth",
    "ScoreTruth",
    "ScoreWorld",
    "StatementWorld",
    "VerdictTruth",
    "context_key",
    "criteria_world",
    "fault_view",
    "score_world",
    "statement_world",
    "world_digest",
]

EXTRACTOR, VERIFIER = StatementSupport.EXTRACTOR, StatementSupport.VERIFIER
RUBRIC_PREFIX, EXTRACTOR_PREFIX, VERIFIER_PREFIX = "r", "x", "v"
_VIEW_PROMPT = "prompt_at_fault"

#: A fault: (the recorded verdict, the human's) in the binary view, and the human's note (None:
#: a rejected sample, whose response is the evidence).
Fault = tuple[int, int, str | None]


@dataclass(frozen=True)
class ScoreTruth:
    """One sample of a numeric judge: the recorded score and the human's."""

    original: float
    label: float


@dataclass(frozen=True)
class ScoreWorld:
    """Sample key → :class:`ScoreTruth`, and the scale: lowest and highest score, noise step."""

    truths: dict[str, ScoreTruth]
    low: float
    high: float
    step: float


@dataclass(frozen=True)
class ExtractionTruth:
    """One sample's extraction: the recorded statements, the human's, the sample's key."""

    original: tuple[str, ...]
    human: tuple[str, ...]
    sample: str


@dataclass(frozen=True)
class VerdictTruth:
    """One statement's verdict against one context: recorded, human, the sample's key."""

    original: int
    human: int
    sample: str


@dataclass(frozen=True)
class StatementWorld:
    """Extractor inputs' key → :class:`ExtractionTruth`; (context key, statement) → :class:`VerdictTruth`."""

    extractions: dict[str, ExtractionTruth]
    verdicts: dict[tuple[str, str], VerdictTruth]


def context_key(context: str) -> str:
    """Identity of a verifier's context text."""
    return hashlib.sha256(context.encode()).hexdigest()


# --- numbers -----------------------------------------------------------------------------------
def recorded_score(sample: SampleAnnotation) -> float:
    """The recorded judge score: a prompt's numeric ``score``, else ``metric_output``."""
    for prompt in sample.prompts.values():
        value = (prompt.prompt_output or {}).get("score")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return float(sample.metric_output)


def score_world(dataset: SingleMetricAnnotation) -> ScoreWorld:
    """The numeric judge's recorded and human scores, and its scale."""
    truths = {}
    for sample, label in zip(dataset.samples, dataset.labels()):
        original = recorded_score(sample)
        if not math.isnan(original):
            truths[sample_key(sample.metric_input)] = ScoreTruth(
                original, original if label is None else label
            )
    values = [v for t in truths.values() for v in (t.original, t.label)] or [0.0, 1.0]
    low, high = min(values), max(values)
    whole = all(float(v).is_integer() for v in values)
    return ScoreWorld(truths, low, high, 1.0 if whole else (high - low) / 10 or 0.1)


# --- statements --------------------------------------------------------------------------------
def _verdict_map(output: Mapping[str, Any] | None) -> dict[str, int]:
    items = (output or {}).get("statements") or []
    return {str(i["statement"]): int(i["verdict"]) for i in items if isinstance(i, dict) and "statement" in i}


def _blamed_verifier(recorded: dict[str, int], label: float) -> dict[str, int]:
    """Recorded verdicts with the fewest flips (first statements first) that bring the supported
    fraction nearest ``label``."""
    need = round(label * len(recorded)) - sum(recorded.values())
    human = dict(recorded)
    for statement, verdict in recorded.items():
        if need > 0 and verdict == 0:
            human[statement], need = 1, need - 1
        elif need < 0 and verdict == 1:
            human[statement], need = 0, need + 1
    return human


def _traced(sample: SampleAnnotation) -> bool:
    return (
        EXTRACTOR in sample.prompts
        and VERIFIER in sample.prompts
        and bool(sample.metric_input.get("retrieved_contexts"))
    )


def _verdicts_of(sample: SampleAnnotation, label: float | None) -> tuple[dict[str, int], dict[str, int]]:
    """(recorded, human) verdict of every statement either side has."""
    ver = sample.prompts[VERIFIER]
    recorded = _verdict_map(ver.prompt_output)
    human = {**recorded, **_verdict_map(ver.edited_output)}
    if ver.edited_output is None and not sample.is_accepted and label is not None and recorded:
        human = _blamed_verifier(recorded, label)
    return {**human, **recorded}, human


def _extraction_of(sample: SampleAnnotation) -> tuple[tuple[str, ...], tuple[str, ...]]:
    ex = sample.prompts[EXTRACTOR]
    original = tuple(str(s) for s in (ex.prompt_output or {}).get("statements") or [])
    human = tuple(str(s) for s in (ex.edited_output or {}).get("statements") or original)
    return original, human


def statement_world(dataset: SingleMetricAnnotation) -> StatementWorld:
    """The two-prompt metric's recorded and human outputs (see the module docstring); samples
    without both prompts' traces are left out."""
    extractions: dict[str, ExtractionTruth] = {}
    verdicts: dict[tuple[str, str], VerdictTruth] = {}
    for sample, label in zip(dataset.samples, dataset.labels()):
        if not _traced(sample):
            continue
        fields, key = sample.metric_input, sample_key(sample.metric_input)
        original, human = _extraction_of(sample)
        extractions[sample_key(StatementSupport.extractor_inputs(fields))] = ExtractionTruth(
            original, human, key
        )
        recorded, corrected = _verdicts_of(sample, label)
        context = context_key(StatementSupport.verifier_inputs(fields, [])["context"])
        for statement, verdict in recorded.items():
            verdicts[(context, statement)] = VerdictTruth(verdict, corrected.get(statement, verdict), key)
    return StatementWorld(extractions, verdicts)


# --- criteria ----------------------------------------------------------------------------------
def _direction(recorded: float, label: float) -> tuple[int, int]:
    """The binary view of a fault: (1, 0) when the human's value is lower, else (0, 1)."""
    return (1, 0) if label < recorded else (0, 1)


def _note(output: Mapping[str, Any] | None) -> str | None:
    reason = (output or {}).get("reason")
    return str(reason) if isinstance(reason, str) and reason.strip() else None


def rubric_faults(sample: SampleAnnotation, label: float | None) -> Fault | None:
    """The rubric prompt erred where its recorded score differs from the human label."""
    recorded = recorded_score(sample)
    if label is None or math.isnan(recorded) or recorded == label:
        return None
    edited = next((p.edited_output for p in sample.prompts.values() if p.edited_output), None)
    return (*_direction(recorded, label), _note(edited) if sample.is_accepted else None)


def extractor_faults(sample: SampleAnnotation, label: float | None) -> Fault | None:
    """The extractor erred where the human edited its statements."""
    if label is None or not _traced(sample):
        return None
    original, human = _extraction_of(sample)
    if original == human:
        return None
    return (*_direction(sample.metric_output, label), _note(sample.prompts[EXTRACTOR].edited_output))


def verifier_faults(sample: SampleAnnotation, label: float | None) -> Fault | None:
    """The verifier erred where a human verdict differs from its recorded one (a rejected sample
    with a target blames it)."""
    if label is None or not _traced(sample):
        return None
    recorded, human = _verdicts_of(sample, label)
    if all(human[s] == v for s, v in recorded.items() if s in human):
        return None
    note = _note(sample.prompts[VERIFIER].edited_output) if sample.is_accepted else None
    return (*_direction(sample.metric_output, label), note)


def fault_view(
    dataset: SingleMetricAnnotation, faults: Callable[[SampleAnnotation, float | None], Fault | None]
) -> SingleMetricAnnotation:
    """A binary annotation set, aligned with ``dataset``, where a sample disagrees when
    ``faults`` says its prompt erred: an edit note becomes an edited reason; a fault without one
    is a rejected sample (its response is the evidence)."""
    samples = []
    for sample, label in zip(dataset.samples, dataset.labels()):
        fault = faults(sample, label)
        original, human, note = fault if fault is not None else (1, 1, None)
        rejected = fault is not None and note is None
        edited = {"reason": note, "verdict": human} if note is not None else None
        samples.append(
            {
                "metric_input": sample.metric_input,
                "metric_output": original if rejected else human,
                "is_accepted": not rejected,
                "prompts": {
                    _VIEW_PROMPT: {
                        "prompt_input": {},
                        "prompt_output": {"reason": "", "verdict": original},
                        "edited_output": edited,
                    }
                },
            }
        )
    return SingleMetricAnnotation.model_validate({"name": dataset.name, "kind": "binary", "samples": samples})


def _prefixed(world: World, prefix: str) -> World:
    criteria = {prefix + cid: dataclasses.replace(c, id=prefix + cid) for cid, c in world.criteria.items()}
    samples = {
        key: dataclasses.replace(t, criteria=tuple(prefix + c for c in t.criteria))
        for key, t in world.samples.items()
    }
    return World(samples, criteria, world.has_reference, world.stop, labels=world.labels, topic=world.topic)


def criteria_world(
    dataset: SingleMetricAnnotation,
    prompts: Mapping[str, Callable[[SampleAnnotation, float | None], Fault | None]],
    *,
    scored: bool = False,
) -> World:
    """One world of the criteria mined from each prompt's faults (prefix → fault finder), merged
    (see the module docstring); ``scored``: its criteria move a score (a rubric), so the engineer
    writes "Score lower when:" / "Score higher when:" rather than binary verdict rules."""
    worlds = [
        _prefixed(mine_world(fault_view(dataset, f), prompt_name=_VIEW_PROMPT), p) for p, f in prompts.items()
    ]
    samples: dict[str, Truth] = {}
    for world in worlds:
        for key, truth in world.samples.items():
            known = samples.get(key)
            samples[key] = (
                truth
                if known is None
                else dataclasses.replace(known, criteria=known.criteria + truth.criteria)
            )
    criteria = {cid: c for world in worlds for cid, c in world.criteria.items()}
    stop = frozenset().union(*(w.stop for w in worlds))
    topic = frozenset().union(*(w.topic for w in worlds))
    return World(
        samples, criteria, worlds[0].has_reference, stop, scored, labels=worlds[0].labels, topic=topic
    )


def world_digest(*worlds: object) -> str:
    """sha256 of the worlds' content (for cache identities)."""
    return hashlib.sha256(json.dumps(_plain(worlds), sort_keys=True).encode()).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return sorted((json.dumps(_plain(k)), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, frozenset, set)):
        items = [_plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, (set, frozenset)) else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value
