"""Checkpoints: the whole search state after each generation, to resume an interrupted run.

``DIR/checkpoint.json`` holds the candidates with their scores, every judgement made (so a
resumed run judges nothing twice, even without a persistent cache), the random generator's
state, the history and the usage so far. ``DIR/best_so_far.json`` holds the best train candidate
at that point, readable while the run goes on or after it was interrupted. Both are written
atomically (temporary file + rename), so an interruption never leaves a half-written file.

A checkpoint resumes only with the same dataset (fingerprint of its samples) and the same
config, except ``generations``, ``patience`` and ``budget``, which may change to extend a run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from promptevolver.errors import CheckpointError
from promptevolver.evaluation.evaluator import Score
from promptevolver.judge.aspect_critic import Judgement
from promptevolver.llm.base import Usage
from promptevolver.optimizers.candidates import Candidate

__all__ = ["BEST_SO_FAR_FILE", "CHECKPOINT_FILE", "CheckpointError", "load", "restore", "save"]

CHECKPOINT_FILE = "checkpoint.json"
BEST_SO_FAR_FILE = "best_so_far.json"
VERSION = 1
_MAY_CHANGE = {"generations", "patience", "budget"}


def fingerprint(search: Any) -> str:
    """sha256 of the dataset's samples (as JSON) and the loss: what a checkpoint belongs to."""
    payload = json.dumps([search.dataset.model_dump(mode="json"), search.loss.describe()], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _score(s: Score | None) -> dict[str, Any] | None:
    return None if s is None else {"value": s.value, "correct": s.correct.tolist(), "failures": s.failures}


def _unscore(d: dict[str, Any] | None) -> Score | None:
    return None if d is None else Score(d["value"], np.asarray(d["correct"], dtype=np.float64), d["failures"])


def _candidate(c: Candidate) -> dict[str, Any]:
    return {
        "id": c.id,
        "instructions": c.instructions,
        "generation": c.generation,
        "operator": c.operator,
        "parents": list(c.parents),
        "feedback": c.feedback,
        "screened_out": c.screened_out,
        "train": _score(c.train),
        "minibatch": _score(c.minibatch),
    }


def _uncandidate(d: dict[str, Any]) -> Candidate:
    return Candidate(
        d["id"],
        dict(d["instructions"]),
        d["generation"],
        d["operator"],
        tuple(d["parents"]),
        train=_unscore(d["train"]),
        feedback=list(d["feedback"]),
        minibatch=_unscore(d["minibatch"]),
        screened_out=d["screened_out"],
    )


def _write_atomic(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
    os.replace(tmp, path)


def save(search: Any, directory: str | Path) -> None:
    """Write checkpoint.json and best_so_far.json for ``search`` into ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    memo = [[list(map(list, key)), pos, vars(j)] for (key, pos), j in search.evaluator.memo_items()]
    state = {
        "version": VERSION,
        "fingerprint": fingerprint(search),
        "config": search.config.model_dump(mode="json"),
        "generation": search.generation,
        "population": [c.id for c in search.population],
        "candidates": [_candidate(c) for c in search.candidates],
        "memo": memo,
        "rng": search.rng.bit_generator.state,
        "history": search.history,
        "best_so_far": search.best_so_far,
        "since_improvement": search.since_improvement,
        "duplicates": search.duplicates,
        "breeder_slots": search.breeder.slots,
        "rejections": dict(search.breeder.rejections),
        "usage": vars(search.usage()),
        "tried": [
            [op, list(parents), list(positions)] for op, parents, positions in sorted(search.breeder.tried)
        ],
        "exhausted": search.exhausted,
        "elapsed_s": search.elapsed(),
    }
    _write_atomic(out / CHECKPOINT_FILE, state)
    best = search.best_train_candidate()
    _write_atomic(
        out / BEST_SO_FAR_FILE,
        {
            "generation": search.generation,
            "candidate": best.id,
            "train": best.train_value(),
            "best_instructions": best.instructions,
        },
    )


def load(directory: str | Path) -> dict[str, Any]:
    """Read ``directory``/checkpoint.json.

    Raises:
        CheckpointError: missing, unreadable, or of another format version.
    """
    path = Path(directory) / CHECKPOINT_FILE
    try:
        with path.open(encoding="utf-8") as fh:
            state: dict[str, Any] = json.load(fh)
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path}: no checkpoint to resume from") from exc
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path}: unreadable checkpoint ({exc.msg})") from exc
    if state.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {state.get('version')!r}, expected {VERSION}")
    return state


def restore(search: Any, state: dict[str, Any]) -> None:
    """Put ``state`` into a freshly built ``search`` of the same run.

    Raises:
        CheckpointError: the dataset/loss or the config differ from the checkpoint's.
    """
    if state["fingerprint"] != fingerprint(search):
        raise CheckpointError("the checkpoint belongs to another dataset or loss")
    ours = {k: v for k, v in search.config.model_dump(mode="json").items() if k not in _MAY_CHANGE}
    theirs = {k: v for k, v in state["config"].items() if k not in _MAY_CHANGE}
    changed = sorted(k for k in ours if ours[k] != theirs.get(k))
    if changed:
        raise CheckpointError(f"config differs from the checkpoint's in {changed}")
    search.candidates = [_uncandidate(d) for d in state["candidates"]]
    by_id = {c.id: c for c in search.candidates}
    search.population = [by_id[i] for i in state["population"]]
    search.generation = state["generation"]
    search.history = state["history"]
    search.best_so_far, search.since_improvement = state["best_so_far"], state["since_improvement"]
    search.duplicates = state["duplicates"]
    search.breeder.slots = state["breeder_slots"]
    search.breeder.rejections.update(state["rejections"])
    search.breeder.tried = {
        (op, tuple(parents), tuple(positions)) for op, parents, positions in state["tried"]
    }
    search.exhausted = state["exhausted"]
    search.rng.bit_generator.state = state["rng"]
    for key, pos, judgement in state["memo"]:
        search.evaluator.remember({name: text for name, text in key}, pos, Judgement(**judgement))
    search.usage_offset = Usage(**state["usage"])
    search.elapsed_before = state["elapsed_s"]
