"""What the simulated LLM knows about numeric and two-prompt metrics, read from annotations only.

* :func:`score_world` — for a numeric judge (a rubric score): per sample, the recorded score,
  the human label and the correction terms (TF-IDF top words of the human's edited reason, or,
  for a rejected sample without an edit, of its input text), as
  :class:`~promptevolver.simulation.simulated_llm.SimulatedJudgeLLM` does for verdicts.
* :func:`statement_world` — for :class:`~promptevolver.judge.statements.StatementSupport`: per
  sample, the recorded and the human extraction (with the terms of the extractor's edit note),
  and per (context, statement) the recorded and the human verdict (with the terms of the
  verifier's edit note). A statement only the human's extraction has keeps its human verdict as
  the recorded one (the recorded verifier never saw it). A rejected sample without an edit but
  with a ``target`` blames the verifier: the fewest recorded verdicts are flipped (first ones
  first) to bring the supported fraction nearest the target, with terms from the input text.

Nothing here reads a label the annotations do not hold.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promptevolver.annotations import SampleAnnotation, SingleMetricAnnotation
from promptevolver.judge.statements import StatementSupport
from promptevolver.simulation.simulated_llm import sample_key, top_terms, words

__all__ = [
    "METRIC_STOP_WORDS",
    "ExtractionTruth",
    "ScoreTruth",
    "ScoreWorld",
    "StatementWorld",
    "VerdictTruth",
    "context_key",
    "score_world",
    "statement_world",
    "world_digest",
]

EXTRACTOR, VERIFIER = StatementSupport.EXTRACTOR, StatementSupport.VERIFIER
#: Words any scoring, extracting or verifying instruction naturally contains; never correction
#: terms (as the binary world's ``JUDGE_STOP_WORDS``).
METRIC_STOP_WORDS = frozenset(
    words(
        "score scores scale level levels rubric worst best whole number context contexts statement "
        "statements claim claims support supported supports sentence sentences word wording infer "
        "inferred directly series given return criterion"
    )
)


@dataclass(frozen=True)
class ScoreTruth:
    """One sample of a numeric judge: the recorded score, the human's, the correction terms."""

    original: float
    label: float
    terms: tuple[str, ...]


@dataclass(frozen=True)
class ScoreWorld:
    """Sample key → :class:`ScoreTruth`, and the scale: lowest and highest score, noise step."""

    truths: dict[str, ScoreTruth]
    low: float
    high: float
    step: float


@dataclass(frozen=True)
class ExtractionTruth:
    """One sample's extraction: recorded statements, the human's, the extractor's correction terms."""

    original: tuple[str, ...]
    human: tuple[str, ...]
    terms: tuple[str, ...]


@dataclass(frozen=True)
class VerdictTruth:
    """One statement's verdict against one context: recorded, human, the verifier's correction terms."""

    original: int
    human: int
    terms: tuple[str, ...]


@dataclass(frozen=True)
class StatementWorld:
    """Extractor inputs' key → :class:`ExtractionTruth`; (context key, statement) → :class:`VerdictTruth`."""

    extractions: dict[str, ExtractionTruth]
    verdicts: dict[tuple[str, str], VerdictTruth]


def context_key(context: str) -> str:
    """Identity of a verifier's context text."""
    return hashlib.sha256(context.encode()).hexdigest()


def _input_text(sample: SampleAnnotation) -> str:
    return " ".join(str(v) for _, v in sorted(sample.metric_input.items()) if isinstance(v, str))


def _recorded_score(sample: SampleAnnotation) -> float:
    for prompt in sample.prompts.values():
        output = prompt.prompt_output or {}
        value = output.get("score")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return float(sample.metric_output)


def score_world(dataset: SingleMetricAnnotation, k: int) -> ScoreWorld:
    """The numeric judge's world (see the module docstring); ``k`` terms per correction."""
    rows = []
    for sample, label in zip(dataset.samples, dataset.labels()):
        original = _recorded_score(sample)
        if math.isnan(original):
            continue
        edited = next((p.edited_output for p in sample.prompts.values() if p.edited_output), None) or {}
        text = str(edited.get("reason") or _input_text(sample))
        rows.append((sample_key(sample.metric_input), original, original if label is None else label, text))
    terms = top_terms([r[3] for r in rows], k, exclude=METRIC_STOP_WORDS)
    truths = {key: ScoreTruth(o, y, tuple(t)) for (key, o, y, _), t in zip(rows, terms)}
    values = [v for t in truths.values() for v in (t.original, t.label)] or [0.0, 1.0]
    low, high = min(values), max(values)
    whole = all(float(v).is_integer() for v in values)
    return ScoreWorld(truths, low, high, 1.0 if whole else (high - low) / 10 or 0.1)


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


def statement_world(dataset: SingleMetricAnnotation, k: int) -> StatementWorld:
    """The two-prompt metric's world (see the module docstring); ``k`` terms per correction.
    Samples without both prompts' traces are left out."""
    ex_rows: list[tuple[str, tuple[str, ...], tuple[str, ...], str]] = []
    ver_rows: list[tuple[str, dict[str, int], dict[str, int], str]] = []
    for sample, label in zip(dataset.samples, dataset.labels()):
        ex, ver = sample.prompts.get(EXTRACTOR), sample.prompts.get(VERIFIER)
        if ex is None or ver is None or sample.metric_input.get("retrieved_contexts") is None:
            continue
        fields = sample.metric_input
        original = tuple(str(s) for s in (ex.prompt_output or {}).get("statements") or [])
        edit = ex.edited_output or {}
        human = tuple(str(s) for s in edit.get("statements") or original)
        key = sample_key(StatementSupport.extractor_inputs(fields))
        ex_rows.append((key, original, human, str(edit.get("reason") or "")))
        recorded = _verdict_map(ver.prompt_output)
        corrected = {**recorded, **_verdict_map(ver.edited_output)}
        text = str((ver.edited_output or {}).get("reason") or "")
        if ver.edited_output is None and not sample.is_accepted and label is not None and recorded:
            corrected, text = _blamed_verifier(recorded, label), _input_text(sample)
        context = StatementSupport.verifier_inputs(fields, [])["context"]
        ver_rows.append((context_key(context), {**corrected, **recorded}, corrected, text))
    ex_terms = top_terms([r[3] for r in ex_rows], k, exclude=METRIC_STOP_WORDS)
    ver_terms = top_terms([r[3] for r in ver_rows], k, exclude=METRIC_STOP_WORDS)
    extractions = {
        key: ExtractionTruth(o, h, tuple(t)) for (key, o, h, _), t in zip(ex_rows, ex_terms)
    }
    verdicts = {
        (ctx, s): VerdictTruth(recorded[s], corrected.get(s, recorded[s]), tuple(t))
        for (ctx, recorded, corrected, _), t in zip(ver_rows, ver_terms)
        for s in recorded
    }
    return StatementWorld(extractions, verdicts)


def world_digest(*worlds: object) -> str:
    """sha256 of the worlds' content (for cache identities)."""
    return hashlib.sha256(json.dumps(_plain(worlds), sort_keys=True).encode()).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return sorted((json.dumps(_plain(k)), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    return value

