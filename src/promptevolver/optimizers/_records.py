"""What each stage of the pipeline did: typed, frozen records, one per stage, and their JSON.

A stage (:mod:`._stages`) returns one record; the run keeps them in :class:`Stages` (its state's
``stages``, checkpointed), ``result.json`` writes them under ``stages`` (:meth:`Stages.to_dict`:
the JSON is the contract, its keys and shapes unchanged since release 0.2), and every reader —
the optimizer's own steps, the report, the summary lines of the command line, a resume — reads
the record's attributes, never a key of that JSON (:meth:`Stages.from_dict` reads it back).

* :class:`StageCost`: a stage's calls, tokens, waves and seconds;
* :class:`DistillRecord`, :class:`VerifyRecord`, :class:`ExamplesRecord`,
  :class:`CrossFitRecord`, :class:`SearchRecord`: what each stage produced and why;
* :class:`BudgetStop`: the one home of a stage the budget refused (its wording, and how a record
  read back from a checkpoint knows it).

A record's ``produced`` holds the ids of the candidates the stage hands on (the first: its
choice). Nested parts the report shows as they are (a final choice, a race, the lessons, the
tried example policies) stay JSON-shaped mappings inside the frozen record.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, overload

from promptevolver.llm import Usage

__all__ = [
    "BudgetStop",
    "CrossFitRecord",
    "DistillRecord",
    "ExamplesRecord",
    "SearchRecord",
    "StageCost",
    "StageRecord",
    "Stages",
    "VerifyRecord",
]


class BudgetStop:
    """A stage the budget refused: the wording each writes, and the one test a record read back
    from JSON (a checkpoint, a result) is recognised by. Nothing else reads these messages: a
    record made in this run carries :attr:`StageRecord.budget_stop` as a typed value."""

    #: A ladder's stop when the budget refused its next call (``DistillRecord.stop`` values).
    LADDER = "budget"

    @staticmethod
    def examples(calls: int) -> str:
        """Why the examples stage judged no policy: the budget cannot pay for ``calls`` judge calls."""
        return f"the budget cannot pay for the {calls} judge calls of the examples' check"

    @staticmethod
    def search(why: str) -> str:
        """Why a warranted search (``why``) did not run: the budget cannot pay for its start."""
        return f"warranted ({why}) but the budget cannot pay for it"

    @staticmethod
    def examples_refused(why: str) -> bool:
        """Whether an examples record's ``why`` (read back from JSON) says the budget refused it."""
        return why.startswith("the budget")

    @staticmethod
    def search_refused(why: str) -> bool:
        """Whether a search record's ``why`` (read back from JSON) says the budget refused it."""
        return why.startswith("warranted (")


@dataclass(frozen=True)
class StageCost:
    """A stage's LLM usage and time.

    Attributes:
        waves: its longest chain of calls that waited for one another (wall time ≈ waves ×
            latency: the stage's dependent-call floor).
        judge_calls, meta_calls: LLM calls that scored a sample / wrote or critiqued instructions.
        prompt_tokens, completion_tokens: tokens sent and received.
        prompt_tokens_per_judge_call: mean prompt tokens of its judge calls (None: none made).
        seconds: wall-clock seconds (kept out of ``result.json``'s ``stages``: ``stage_seconds``).
    """

    waves: int = 0
    judge_calls: int = 0
    meta_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_per_judge_call: float | None = None
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # the fields, in their order

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageCost:
        return cls(
            waves=int(data.get("waves", 0)),
            judge_calls=int(data.get("judge_calls", 0)),
            meta_calls=int(data.get("meta_calls", 0)),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            prompt_tokens_per_judge_call=data.get("prompt_tokens_per_judge_call"),
            seconds=float(data.get("seconds", 0.0)),
        )


_NONE = StageCost()


@dataclass(frozen=True)
class StageRecord:
    """What one stage did (the base of each stage's record).

    Attributes:
        produced: ids of the candidates the stage hands on, its choice first.
        cost: its usage (a stage that did not run: all 0).
        ran: whether it ran (False: ``why`` says why not).
        why: why it chose what it did, or why it did not run (None: not recorded).
        budget_stop: whether the budget refused a call the stage would have made
            (:class:`BudgetStop`).
    """

    #: The stage's key in ``stages`` (and its name in events and the report).
    name: ClassVar[str] = ""

    produced: tuple[int, ...] = ()
    cost: StageCost = _NONE
    ran: bool = True
    why: str | None = None
    budget_stop: bool = False

    @property
    def choice(self) -> int:
        """The id of the candidate the stage chose (the first it produced)."""
        return self.produced[0]

    def to_dict(self) -> dict[str, Any]:
        """The record's JSON (``stages.<name>`` of ``result.json`` and of the checkpoint)."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageRecord:
        """The record a :meth:`to_dict` wrote (``seconds`` may be missing: result.json)."""
        raise NotImplementedError


@dataclass(frozen=True)
class DistillRecord(StageRecord):
    """The distillation stage (:mod:`._distill`): its rungs (``produced``), each ladder's stop
    (key: its fold, or ``all``), each ladder's rungs by id, how often a batch was split for the
    context window, the corrections (and those never shown), the lessons and sample facts."""

    name: ClassVar[str] = "distill"

    stop: Mapping[str, str] = field(default_factory=dict)
    ladders: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    context_splits: int = 0
    corrections: int = 0
    unshown: int = 0
    lessons: int = 0
    sample_facts: int = 0

    @classmethod
    def skipped(cls, why: str) -> DistillRecord:
        """No distillation (``strategy: examples``), 0 calls."""
        return cls(ran=False, why=why)

    def to_dict(self) -> dict[str, Any]:
        if not self.ran:
            c = self.cost
            return {
                "ran": False,
                "why": self.why,
                "judge_calls": c.judge_calls,
                "meta_calls": c.meta_calls,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "seconds": c.seconds,
                "produced": list(self.produced),
            }
        return {
            **self.cost.to_dict(),
            "produced": list(self.produced),
            "stop": dict(self.stop),
            "ladders": {k: list(v) for k, v in self.ladders.items()},
            "context_splits": self.context_splits,
            "corrections": self.corrections,
            "unshown": self.unshown,
            "lessons": self.lessons,
            "sample_facts": self.sample_facts,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DistillRecord:
        if not data.get("ran", True):
            return cls(
                ran=False,
                why=data.get("why"),
                cost=StageCost.from_dict(data),
                produced=tuple(data["produced"]),
            )
        stop = dict(data.get("stop", {}))
        return cls(
            cost=StageCost.from_dict(data),
            produced=tuple(data.get("produced", ())),
            stop=stop,
            ladders={k: tuple(v) for k, v in data.get("ladders", {}).items()},
            context_splits=int(data.get("context_splits", 0)),
            corrections=int(data.get("corrections", 0)),
            unshown=int(data.get("unshown", 0)),
            lessons=int(data.get("lessons", 0)),
            sample_facts=int(data.get("sample_facts", 0)),
            budget_stop=BudgetStop.LADDER in stop.values(),
        )


@dataclass(frozen=True)
class VerifyRecord(StageRecord):
    """The verification: the verified choice (``produced``), the candidates judged on held-out
    samples, the judge calls racing saved, and the stage's final choice (JSON-shaped: the rule,
    every finalist's Δ and p, the choice and why)."""

    name: ClassVar[str] = "verify"

    judged: tuple[int, ...] = ()
    saved_judge_calls: int = 0
    final_choice: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.cost.to_dict(),
            "produced": list(self.produced),
            "judged": list(self.judged),
            "saved_judge_calls": self.saved_judge_calls,
            "final_choice": dict(self.final_choice),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VerifyRecord:
        return cls(
            cost=StageCost.from_dict(data),
            produced=tuple(data.get("produced", ())),
            judged=tuple(data.get("judged", ())),
            saved_judge_calls=int(data.get("saved_judge_calls", 0)),
            final_choice=dict(data.get("final_choice", {})),
        )


@dataclass(frozen=True)
class ExamplesRecord(StageRecord):
    """The examples stage: the chosen candidate (``produced``), each policy tried (its Δ and p
    against ``base``; empty when none was judged, ``why`` then says why), and when policies were
    judged (``judged``): the policy kept, the static set, the race, the similarity used and the
    embeddings' usage (None: no embeddings)."""

    name: ClassVar[str] = "examples"

    tried: tuple[Mapping[str, Any], ...] = ()
    judged: bool = False
    base: int | None = None
    policy: str | None = None
    static_set: tuple[int, ...] = ()
    racing: Mapping[str, Any] = field(default_factory=dict)
    similarity: Mapping[str, Any] = field(default_factory=dict)
    embeddings: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.cost.to_dict(), "produced": list(self.produced)}
        if not self.judged:
            return {**out, "tried": [dict(r) for r in self.tried], "why": self.why}
        out.update(
            base=self.base,
            tried=[dict(r) for r in self.tried],
            why=self.why,
            policy=self.policy,
            static_set=list(self.static_set),
            racing=dict(self.racing),
            similarity=dict(self.similarity),
        )
        if self.embeddings is not None:
            out["embeddings"] = dict(self.embeddings)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExamplesRecord:
        why = data.get("why")
        judged = "base" in data
        return cls(
            cost=StageCost.from_dict(data),
            produced=tuple(data.get("produced", ())),
            tried=tuple(dict(r) for r in data.get("tried", ())),
            why=why,
            judged=judged,
            base=data.get("base"),
            policy=data.get("policy"),
            static_set=tuple(data.get("static_set", ())),
            racing=dict(data.get("racing", {})),
            similarity=dict(data.get("similarity", {})),
            embeddings=data.get("embeddings"),
            budget_stop=not judged and BudgetStop.examples_refused(str(why or "")),
        )


@dataclass(frozen=True)
class CrossFitRecord(StageRecord):
    """The cross-fit stage: the kept rung or ``base`` (``produced``), the ladder's rungs, the
    held-out corrections it learned from, its lessons and stop, and the check on the learning
    samples (``racing``; ``delta``, ``p_better`` and ``samples`` when it was not stopped for
    futility: ``samples`` None then)."""

    name: ClassVar[str] = "cross_fit"

    rungs: tuple[int, ...] = ()
    base: int | None = None
    corrections: int = 0
    lessons: tuple[Mapping[str, Any], ...] = ()
    stop: str | None = None
    context_splits: int = 0
    racing: Mapping[str, Any] | None = None
    delta: float | None = None
    p_better: float | None = None
    samples: int | None = None

    @classmethod
    def skipped(cls, why: str, base: int) -> CrossFitRecord:
        """The stage did not run for candidate ``base`` (``why``)."""
        return cls(ran=False, why=why, produced=(base,))

    def to_dict(self) -> dict[str, Any]:
        if not self.ran:
            return {"ran": False, "why": self.why, "produced": list(self.produced)}
        out: dict[str, Any] = {
            **self.cost.to_dict(),
            "produced": list(self.produced),
            "rungs": list(self.rungs),
            "base": self.base,
            "corrections": self.corrections,
            "lessons": [dict(x) for x in self.lessons],
            "stop": self.stop,
            "context_splits": self.context_splits,
        }
        if self.racing is not None:
            out["racing"] = dict(self.racing)
        if self.samples is not None:
            out.update(delta=self.delta, p_better=self.p_better, samples=self.samples)
        out["why"] = self.why
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CrossFitRecord:
        if not data.get("ran", True):
            return cls.skipped(str(data.get("why")), int(data["produced"][0]))
        return cls(
            cost=StageCost.from_dict(data),
            produced=tuple(data.get("produced", ())),
            rungs=tuple(data.get("rungs", ())),
            base=data.get("base"),
            corrections=int(data.get("corrections", 0)),
            lessons=tuple(dict(x) for x in data.get("lessons", ())),
            stop=data.get("stop"),
            context_splits=int(data.get("context_splits", 0)),
            racing=data.get("racing"),
            delta=data.get("delta"),
            p_better=data.get("p_better"),
            samples=data.get("samples"),
            why=data.get("why"),
        )


@dataclass(frozen=True)
class SearchRecord(StageRecord):
    """The search stage: whether it ran and why (or why not); once its generations are done, its
    cost (``waves``: the generations' summed) and final population (``produced``). While it
    runs, when it started (``started``, :func:`time.perf_counter` seconds) and the run's usage
    then (``before``): a checkpoint keeps them until it ends."""

    name: ClassVar[str] = "search"

    started: float | None = None
    before: Usage | None = None
    ended: bool = False

    @classmethod
    def not_run(cls, why: str, *, budget_stop: bool = False) -> SearchRecord:
        return cls(ran=False, why=why, budget_stop=budget_stop)

    @classmethod
    def begun(cls, why: str, started: float, before: Usage) -> SearchRecord:
        return cls(why=why, started=started, before=before)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ran": self.ran, "why": self.why}
        if self.ended:
            return {**out, **self.cost.to_dict(), "produced": list(self.produced)}
        if self.started is not None and self.before is not None:
            out.update(_started=self.started, _before=vars(self.before))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchRecord:
        why = str(data.get("why"))
        if not data.get("ran"):
            return cls.not_run(why, budget_stop=BudgetStop.search_refused(why))
        if "_started" in data:
            return cls.begun(why, float(data["_started"]), Usage(**data["_before"]))
        return cls(
            why=why, ended=True, cost=StageCost.from_dict(data), produced=tuple(data.get("produced", ()))
        )


_KINDS: dict[str, type[StageRecord]] = {
    k.name: k for k in (DistillRecord, VerifyRecord, ExamplesRecord, CrossFitRecord, SearchRecord)
}


R = TypeVar("R", bound=StageRecord)


class _Slot(Generic[R]):
    """A stage's record on :class:`Stages`, read by attribute (None until the stage ran)."""

    def __init__(self, kind: type[R]) -> None:
        self.kind = kind

    @overload
    def __get__(self, stages: None, owner: type[Stages]) -> _Slot[R]: ...

    @overload
    def __get__(self, stages: Stages, owner: type[Stages]) -> R | None: ...

    def __get__(self, stages: Stages | None, owner: type[Stages]) -> _Slot[R] | R | None:
        if stages is None:
            return self
        found = stages._records.get(self.kind.name)
        return found if isinstance(found, self.kind) else None


class Stages:
    """The records of the stages a run has done, in the order they were done (a state's
    ``stages``; ``result.json``'s). Read by attribute (``stages.verify``: None until it ran)."""

    def __init__(self, records: Sequence[StageRecord] = ()) -> None:
        self._records: dict[str, StageRecord] = {}
        for record in records:
            self.add(record)

    def add(self, record: StageRecord) -> None:
        """Record ``record`` (a stage done again replaces its record, in its place)."""
        self._records[record.name] = record

    def __contains__(self, name: object) -> bool:
        return name in self._records

    def __iter__(self) -> Iterator[StageRecord]:
        return iter(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stages) and self._records == other._records

    distill = _Slot(DistillRecord)
    verify = _Slot(VerifyRecord)
    examples = _Slot(ExamplesRecord)
    cross_fit = _Slot(CrossFitRecord)
    search = _Slot(SearchRecord)

    @property
    def budget_stop(self) -> bool:
        """Whether the budget refused a stage the run would have made (the search when
        warranted, the examples' check, a distillation round)."""
        return any(r.budget_stop for r in self._records.values())

    def to_dict(self, *, seconds: bool = True) -> dict[str, dict[str, Any]]:
        """Every record's JSON by stage name (``seconds``: with each stage's wall-clock seconds;
        result.json keeps them apart, in ``stage_seconds``)."""
        out = {name: r.to_dict() for name, r in self._records.items()}
        if not seconds:
            out = {k: {a: b for a, b in v.items() if a != "seconds"} for k, v in out.items()}
        return out

    def seconds(self) -> dict[str, float]:
        """Each stage's wall-clock seconds (those that record them)."""
        return {k: v["seconds"] for k, v in self.to_dict().items() if "seconds" in v}

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Any]] | None) -> Stages:
        """The records a :meth:`to_dict` wrote (a checkpoint's state, or result.json's ``stages``;
        a stage this release does not know is left out)."""
        return cls([_KINDS[k].from_dict(v) for k, v in (data or {}).items() if k in _KINDS])
