"""The state of one search: a plain dataclass the generation loop alone writes.

The mutable half of a :class:`~promptevolver.optimizers._run.SearchRun` (``run.state``), beside its
frozen :class:`~promptevolver.optimizers._run.RunContext`. Strategies (selection, screening,
stopping, the final choice) and operators read it through views; only the loop in :mod:`._genetic`
and the pipeline's steps it composes (:mod:`._phases`, :mod:`._adoption`, :mod:`._history`,
:mod:`._checkpoint`) change it. The checkpoint is :meth:`SearchState.to_dict` /
:meth:`SearchState.from_dict` written to a file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
from pydantic import ConfigDict, Strict, TypeAdapter, ValidationError
from typing_extensions import NotRequired, TypedDict

from promptevolver.evaluation import CandidateKey, PredictionPoweredScore, Score, candidate_key
from promptevolver.llm import Usage
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._records import Stages

__all__ = ["PlanKey", "SearchState", "check_state_dict"]

#: Identity of an operator plan: (operator, parent ids, shown sample positions).
PlanKey = tuple[str, tuple[int, ...], tuple[int, ...]]


@dataclass
class SearchState:
    """Everything a search has done so far.

    Attributes:
        rng: the run's one random generator (seeded from ``random_seed``).
        candidates: every candidate ever made, by id (the seed is 0).
        population: the current population, best-ranked first.
        generation: generations finished (0 = the initial population).
        history: one entry per finished generation (see ``OptimizationResult.history``).
        best_so_far: best train score seen (loss direction), for ``patience``.
        since_improvement: generations in a row without a better best train score.
        duplicates: operator answers skipped because they repeat an existing candidate.
        exhausted: the last planning round found no plan it had not tried before.
        rejections: rejected operator answers by ``"<operator>: <reason>"``.
        tried: operator plans made so far (a tabu list: a plan is never made twice).
        slots: operator plans numbered so far (a plan's slot keeps its meta calls distinct).
        usage_before: LLM usage of the run before a resume (added to the clients' usage).
        elapsed_before: wall-clock seconds of the run before a resume.
        stop_reason: why the search stopped, once it has.
        stages: the record of each stage of the pipeline done so far (:class:`~._records.Stages`:
            its LLM calls, tokens and seconds, and what it produced; ``OptimizationResult.stages``).
        lessons: the distillation stage's lessons (:meth:`~._distill.Lesson.to_dict`).
        race: the verification stage's racing report (:attr:`~.strategies.racing.Race.report`).
        chosen: the id of the final choice, once made (an extension keeps it as a finalist).
        final_choice: how the final choice was made (``PairedChoice.report`` and the stage's
            additions), once it was; not checkpointed (a resume reads it from the verification's
            record).
        meta_failed_in_row: the search's meta calls in a row that failed on the server's side after
            their retries, none answered in between (across generations; not checkpointed: a
            resume starts counting afresh).
    """

    rng: np.random.Generator
    best_so_far: float
    candidates: list[Candidate] = field(default_factory=list)
    population: list[Candidate] = field(default_factory=list)
    generation: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    since_improvement: int = 0
    duplicates: int = 0
    exhausted: bool = False
    rejections: Counter[str] = field(default_factory=Counter)
    tried: set[PlanKey] = field(default_factory=set)
    slots: int = 0
    usage_before: Usage = field(default_factory=Usage)
    elapsed_before: float = 0.0
    stop_reason: str | None = None
    stages: Stages = field(default_factory=Stages)
    lessons: list[dict[str, Any]] = field(default_factory=list)
    race: dict[str, Any] = field(default_factory=dict)
    chosen: int | None = None
    meta_failed_in_row: int = 0
    final_choice: dict[str, Any] = field(default_factory=dict)
    _keys: dict[CandidateKey, int] = field(default_factory=dict, repr=False)

    @property
    def seed(self) -> Candidate:
        """The seed candidate (the metric's own instructions)."""
        return self.candidates[0]

    def find(self, instructions: dict[str, str], examples: str = "none") -> Candidate | None:
        """The existing candidate with these instructions (whitespace-normalised) and example
        policy, if any."""
        key = candidate_key(instructions)
        if examples != "none":
            same = (c for c in self.candidates if c.examples == examples)
            return next((c for c in same if candidate_key(c.instructions) == key), None)
        index = self._keys.get(key)
        return None if index is None else self.candidates[index]

    def add(self, candidate: Candidate) -> None:
        """Register a new candidate (its id must be the next one)."""
        if candidate.id != len(self.candidates):
            raise ValueError(f"candidate id {candidate.id} is not the next id {len(self.candidates)}")
        self.candidates.append(candidate)
        if candidate.examples == "none":  # one with examples shares its base's instructions
            self._keys[candidate_key(candidate.instructions)] = candidate.id

    # --- checkpoint form -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole state (random generator included)."""
        return {
            "rng": self.rng.bit_generator.state,
            "candidates": [_candidate(c) for c in self.candidates],
            "population": [c.id for c in self.population],
            "generation": self.generation,
            "history": self.history,
            "best_so_far": self.best_so_far,
            "since_improvement": self.since_improvement,
            "duplicates": self.duplicates,
            "exhausted": self.exhausted,
            "rejections": dict(self.rejections),
            "tried": [[op, list(parents), list(positions)] for op, parents, positions in sorted(self.tried)],
            "slots": self.slots,
            "usage_before": vars(self.usage_before),
            "elapsed_before": self.elapsed_before,
            "stop_reason": self.stop_reason,
            "stages": self.stages.to_dict(),
            "lessons": self.lessons,
            "race": self.race,
            "chosen": self.chosen,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], rng: np.random.Generator) -> SearchState:
        """Rebuild a state from :meth:`to_dict`; ``rng`` gets the saved generator state.

        Raises:
            ValueError: a field missing, of the wrong type, or pointing nowhere (a damaged or
                hand-edited checkpoint; the message names the field).
        """
        check_state_dict(data)
        rng.bit_generator.state = data["rng"]
        state = cls(rng=rng, best_so_far=data["best_so_far"])
        for d in data["candidates"]:
            state.add(_uncandidate(d))
        state.population = [state.candidates[i] for i in data["population"]]
        state.generation = data["generation"]
        state.history = data["history"]
        state.since_improvement = data["since_improvement"]
        state.duplicates = data["duplicates"]
        state.exhausted = data["exhausted"]
        state.rejections = Counter(data["rejections"])
        state.tried = {(op, tuple(parents), tuple(positions)) for op, parents, positions in data["tried"]}
        state.slots = data["slots"]
        state.usage_before = Usage(**data["usage_before"])
        state.elapsed_before = data["elapsed_before"]
        state.stop_reason = data["stop_reason"]
        state.stages = Stages.from_dict(data.get("stages", {}))
        state.lessons = list(data.get("lessons", []))
        state.race = dict(data.get("race", {}))
        state.chosen = data.get("chosen")  # absent from checkpoints before the final choice kept it
        return state


def _floats(a: np.ndarray) -> list[float | None]:
    return [None if np.isnan(x) else float(x) for x in a]


def _array(values: list[float | None]) -> np.ndarray:
    return np.array([np.nan if x is None else x for x in values], dtype=np.float64)


def _score(s: Score | None) -> dict[str, Any] | None:
    if s is None:
        return None
    out: dict[str, Any] = {
        "value": s.value,
        "correct": _floats(s.correct),
        "failures": s.failures,
        "y_true": _floats(s.y_true),
        "y_pred": _floats(s.y_pred),
    }
    if isinstance(s, PredictionPoweredScore):  # an estimate: what made it, to resume it as one
        out["prediction_powered"] = {
            "fresh": [bool(x) for x in s.fresh],
            "share": s.share,
            "recorded": _floats(s.recorded),
        }
    return out


def _unscore(d: dict[str, Any] | None) -> Score | None:
    if d is None:
        return None
    args = (d["value"], _array(d["correct"]), d["failures"], _array(d["y_true"]), _array(d["y_pred"]))
    ppi = d.get("prediction_powered")
    if ppi is not None:
        fresh = np.array(ppi["fresh"], dtype=bool)
        return PredictionPoweredScore(
            *args, fresh=fresh, share=ppi["share"], recorded=_array(ppi["recorded"])
        )
    return Score(*args)


def _candidate(c: Candidate) -> dict[str, Any]:
    return {
        "id": c.id,
        "instructions": c.instructions,
        "generation": c.generation,
        "operator": c.operator,
        "parents": list(c.parents),
        "feedback": c.feedback,
        "screened_out": c.screened_out,
        "seen": sorted(c.seen),
        "fold": c.fold,
        "examples": c.examples,
        "train": _score(c.train),
        "minibatch": _score(c.minibatch),
        "validation": _score(c.validation),
        **({"cross_validated": _score(c.cross_validated)} if c.cross_validated is not None else {}),
    }


def _uncandidate(d: dict[str, Any]) -> Candidate:
    return Candidate(
        d["id"],
        dict(d["instructions"]),
        d["generation"],
        d["operator"],
        tuple(d["parents"]),
        train=_unscore(d["train"]),
        validation=_unscore(d.get("validation")),
        feedback=list(d["feedback"]),
        minibatch=_unscore(d["minibatch"]),
        screened_out=d["screened_out"],
        seen=frozenset(d.get("seen", ())),
        fold=d.get("fold"),
        examples=d.get("examples", "none"),
        cross_validated=_unscore(d.get("cross_validated")),
    )


# --- the checkpoint form's types (what to_dict writes; a damaged file is refused naming the field) ---

_STRICT = ConfigDict(strict=True, extra="allow")
_Number = int | float
_Cell = float | int | None


class _PredictionPoweredDict(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    fresh: list[bool]
    share: _Number
    recorded: list[_Cell]


class _ScoreDict(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    value: _Number | None
    correct: list[_Cell]
    failures: int
    y_true: list[_Cell]
    y_pred: list[_Cell]
    prediction_powered: NotRequired[_PredictionPoweredDict]


class _CandidateDict(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    id: int
    instructions: dict[str, str]
    generation: int
    operator: str
    parents: list[int]
    feedback: list[str]
    screened_out: bool
    seen: NotRequired[list[int]]
    fold: NotRequired[int | None]
    examples: NotRequired[str]
    train: _ScoreDict | None
    minibatch: _ScoreDict | None
    validation: NotRequired[_ScoreDict | None]


class _UsageDict(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    calls_by_operation: dict[str, int]
    prompt_tokens: int
    completion_tokens: int
    cache_hits: int
    retries: int
    failures: int
    cost_usd: _Number


class _StateDict(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]
    rng: dict[str, Any]
    candidates: list[_CandidateDict]
    population: list[int]
    generation: int
    history: list[dict[str, Any]]
    best_so_far: _Number
    since_improvement: int
    duplicates: int
    exhausted: bool
    rejections: dict[str, int]
    tried: list[Annotated[tuple[str, list[int], list[int]], Strict(False)]]  # JSON has no tuples
    slots: int
    usage_before: _UsageDict
    elapsed_before: _Number
    stop_reason: str | None
    stages: NotRequired[dict[str, dict[str, Any]]]
    lessons: NotRequired[list[dict[str, Any]]]
    race: NotRequired[dict[str, Any]]
    chosen: NotRequired[int | None]


_STATE = TypeAdapter(_StateDict)


def check_state_dict(data: Any) -> None:
    """Refuse a state dict that :meth:`SearchState.to_dict` could not have written: a field
    missing or of the wrong JSON type, a candidate id out of order, the seed not first, a
    population or choice naming no candidate, a count below 0.

    Raises:
        ValueError: naming the first bad field (``state.candidates.3.train``...).
    """
    try:
        _STATE.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise ValueError(f"state.{where}: {error['msg'].lower()}") from None
    ids = [c["id"] for c in data["candidates"]]
    if ids != list(range(len(ids))):
        raise ValueError("state.candidates: ids are not 0, 1, 2... in order")
    if ids and data["candidates"][0]["operator"] != "seed":
        raise ValueError("state.candidates.0: the first candidate is not the seed")
    named = [*data["population"], *([data["chosen"]] if data.get("chosen") is not None else [])]
    named += [p for c in data["candidates"] for p in c["parents"]]
    if any(not 0 <= i < len(ids) for i in named):
        raise ValueError("state: a population member, parent or choice names no candidate")
    if any(data["candidates"][i]["train"] is None for i in data["population"]):
        raise ValueError("state.population: a member has no train score")
    counts = ("generation", "since_improvement", "duplicates", "slots")
    if any(data[k] < 0 for k in counts) or data["elapsed_before"] < 0:
        raise ValueError(f"state: one of {', '.join(counts)}, elapsed_before is below 0")
