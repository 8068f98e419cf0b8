"""Checkpoints: file I/O of a search's state, to resume an interrupted run.

``DIR/checkpoint.json`` holds :meth:`SearchState.to_dict` (candidates with their scores, the
random generator's state, the history, the usage so far) and every judgement that succeeded (so
a resumed run judges nothing twice, even without a persistent cache; a failed evaluation is
never saved as an answer: it is made again). The calls of a step interrupted before its
checkpoint are in the run journal (:mod:`promptevolver.llm._journal`), which a resume replays.
``DIR/best_so_far.json`` holds the best train candidate at that point, readable while the run
goes on. Both are written atomically
(:func:`promptevolver.rundir.write_json`).

A checkpoint resumes only with the same dataset and loss (a fingerprint of both, computed once
per run) and the same config, except ``generations``, ``patience`` and ``budget``, which may
change to extend a run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import NotRequired, TypedDict

from promptevolver import rundir
from promptevolver.config import GeneticConfig
from promptevolver.errors import CheckpointError, RunDirError
from promptevolver.evaluation import CandidateKey
from promptevolver.judge import Judgement
from promptevolver.llm import is_simulated
from promptevolver.optimizers._run import SearchRun
from promptevolver.optimizers._state import SearchState, check_state_dict
from promptevolver.optimizers.strategies._selection import rank

__all__ = ["VERSION", "load", "load_judgements", "restore", "save"]

#: Format version of checkpoint.json (release 0.1 wrote 1).
VERSION = 2
RESUMABLE_CHANGES = {"generations", "patience", "budget"}


def save(run: SearchRun, directory: str | Path) -> None:
    """Write checkpoint.json and best_so_far.json of ``run`` into ``directory``."""
    out = Path(directory)
    state = run.state.to_dict()
    state["usage_before"] = vars(run.usage())
    state["elapsed_before"] = run.elapsed()
    memo = [
        [list(map(list, key)), pos, vars(j)]
        for (key, pos), j in run.context.evaluator.memo_items()
        if not j.failed
    ]
    data = {
        "version": VERSION,
        "fingerprint": run.context.fingerprint(),
        "config": run.context.config.model_dump(mode="json"),
        "state": state,
        "memo": memo,
        "journal_entries": 0 if run.context.journal is None else run.context.journal.entries,
    }
    if run.context.journal is not None:
        run.context.journal.sync()
    rundir.write_json(out / rundir.CHECKPOINT_FILE, data)
    simulated = is_simulated(run.context.llm) or is_simulated(run.context.reflection_llm)
    if run.state.population:
        best = rank(run.state.population, run.context.loss)[0]
        best_so_far = {
            "generation": run.state.generation,
            "candidate": best.id,
            "train": best.train_value(),
            "best_instructions": best.instructions,
            "simulated_llm": simulated,  # a dry run's: chosen on the simulator, not on a model
        }
        rundir.write_json(out / rundir.BEST_SO_FAR_FILE, best_so_far)
    elif run.state.stages.verify is not None:  # the pipeline before (or without) a search: its choice
        chosen = run.state.candidates[run.state.stages.verify.choice]
        verified: dict[str, object] = {
            "stage": "verify",
            "candidate": chosen.id,
            "validation": None if chosen.validation is None else chosen.validation.value,
            "best_instructions": chosen.instructions,
            "simulated_llm": simulated,
        }
        rundir.write_json(out / rundir.BEST_SO_FAR_FILE, verified)


def load(directory: str | Path) -> dict[str, Any]:
    """Read ``directory``/checkpoint.json.

    Raises:
        CheckpointError: missing, unreadable, or of another format version (names the file).
    """
    path = Path(directory) / rundir.CHECKPOINT_FILE
    try:
        data = rundir.read_json(path, what="checkpoint to resume from")
    except RunDirError as exc:
        raise CheckpointError(str(exc)) from exc
    if not isinstance(data, dict) or data.get("version") != VERSION:
        found = data.get("version") if isinstance(data, dict) else None
        raise CheckpointError(
            f"{path}: checkpoint format version {found!r}, this release reads {VERSION}; "
            "resume it with the release that wrote it, or start the run again"
        )
    for key, kind in _SHAPE.items():
        if not isinstance(data.get(key), kind) or isinstance(data.get(key), bool):
            what = "missing" if key not in data else f"not a {_KIND_WORDS[kind]}"
            raise CheckpointError(
                f"{path}: the checkpoint is damaged ({key} is {what}); restore it, or start the run again"
            )
    try:  # every field, before any call: a hand-edited or damaged file is named, not run
        check_state_dict(data["state"])
        _MEMO.validate_python(data["memo"])
    except ValidationError as exc:
        raise CheckpointError(_damaged(path, exc)) from None
    except ValueError as exc:
        raise CheckpointError(
            f"{path}: the checkpoint is damaged ({exc}); restore it, or start the run again"
        ) from None
    return data


def _damaged(path: str | Path, exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in ("memo", *error["loc"]))
    said = error["msg"].lower()
    return f"{path}: the checkpoint is damaged ({where}: {said}); restore it, or start the run again"


class _JudgementDict(TypedDict):
    __pydantic_config__ = ConfigDict(strict=True)  # type: ignore[misc]
    score: float | int | None
    reason: NotRequired[str | None]
    raw: NotRequired[str | None]
    error: NotRequired[str | None]
    cause: NotRequired[str | None]
    details: NotRequired[dict[str, Any] | None]


#: The memo's entries: [[[prompt name, instruction], ...], sample position >= 0, judgement].
_MEMO = TypeAdapter(list[tuple[list[tuple[str, str]], Annotated[int, Field(ge=0)], _JudgementDict]])

#: The top-level fields of checkpoint.json and their JSON types.
_SHAPE: dict[str, type] = {
    "fingerprint": str,
    "config": dict,
    "state": dict,
    "memo": list,
    "journal_entries": int,
}
_KIND_WORDS = {str: "string", dict: "JSON object", list: "list", int: "whole number"}


def restore(run: SearchRun, data: dict[str, Any], *, source: str | Path = "the checkpoint") -> None:
    """Put a loaded checkpoint into a freshly built ``run`` of the same search.

    Raises:
        CheckpointError: the dataset/loss or the config differ from the checkpoint's, or a field
            of it is missing or of the wrong kind (a damaged or hand-edited file; naming the field).
    """
    if data["fingerprint"] != run.context.fingerprint():
        raise CheckpointError(f"{source}: it belongs to another dataset or loss")
    ours = {k: v for k, v in run.context.config.model_dump(mode="json").items() if k not in RESUMABLE_CHANGES}
    theirs = {k: v for k, v in _with_todays_defaults(data["config"]).items() if k not in RESUMABLE_CHANGES}
    changed = sorted(k for k in ours if ours[k] != theirs.get(k))
    if changed:
        raise CheckpointError(f"{source}: the config differs from the checkpoint's in {changed}")
    with _naming_damage(source):  # every field was checked by load(); what is left says its field too
        run.state = SearchState.from_dict(data["state"], run.state.rng)
        if run.context.journal is not None:  # calls of the step that was interrupted, answered or failed
            run.replayed = run.context.journal.usage_since(data["journal_entries"])
            run.state.usage_before = run.state.usage_before + run.replayed
        for key, pos, judgement in _MEMO.validate_python(data["memo"]):
            found = Judgement(**cast(dict[str, Any], judgement))
            run.context.evaluator.remember({name: text for name, text in key}, pos, found)


@contextlib.contextmanager
def _naming_damage(source: str | Path) -> Iterator[None]:
    """A damaged checkpoint's error, raised in the block, as one :class:`CheckpointError` line."""
    try:
        yield
    except ValidationError as exc:
        raise CheckpointError(_damaged(source, exc)) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise CheckpointError(
            f"{source}: the checkpoint is damaged ({_damage(exc)}); it was not written by this run as it "
            "is: restore it, or start the run again"
        ) from None


def _damage(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no field {exc.args[0]!r}" if exc.args else "a field is missing"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _with_todays_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's config with the defaults of settings added since it was written (e.g.
    ``examples.similarity``; their default is what the run that wrote it did), so that a resume
    after an upgrade is not refused; a config that no longer validates is compared as it is."""
    try:
        return GeneticConfig.model_validate(config).model_dump(mode="json")
    except ValidationError:
        return config


def load_judgements(directory: str | Path) -> dict[tuple[CandidateKey, int], Judgement]:
    """Every judgement a run's checkpoint holds, by (candidate key, sample position).

    Raises:
        CheckpointError: no checkpoint, or one of another format version.
    """
    data = load(directory)
    return {(tuple((name, text) for name, text in key), pos): Judgement(**j) for key, pos, j in data["memo"]}
