"""Before ``optimize`` writes into a run directory: never clobber a run, and say where a resume
picks up.

* :func:`check_run_dir` — a new run refuses a directory holding an interrupted run (pointing to
  ``--resume``) or a finished one (pointing to another ``--output``, ``--resume`` to extend it, or
  ``--force``); a resume refuses a directory without a checkpoint ("not a run directory").
* :func:`check_same_search` — a resume refuses a config that changes the search (everything but
  ``generations``, ``patience`` and ``budget``) or what a judgement means (the metric, the
  judge's and the reflection LLM's model, provider, temperature and token caps:
  :data:`JUDGEMENT_KEYS`, compared with the run's own ``config.yaml``; another dataset or loss is
  refused by the checkpoint's fingerprint), naming the checkpoint,
  the config file and each value, before anything is written.
* :class:`ResumePoint` — what the checkpoint and the journal hold, in a sentence: the step the
  run resumes after and the LLM calls it will not make again.

The checkpoint's format is :mod:`promptevolver.optimizers._checkpoint`'s; this module only reads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptevolver import rundir
from promptevolver.config import RunConfig
from promptevolver.errors import CheckpointError, RunDirError
from promptevolver.llm import read_lines
from promptevolver.optimizers import (
    RESUMABLE_CHANGES,  # the one list
    Stages,
    load_checkpoint,
)
from promptevolver.optimizers.strategies import STOP_REASONS

__all__ = [
    "JUDGEMENT_KEYS",
    "RESUMABLE_CHANGES",
    "ResumePoint",
    "check_run_dir",
    "check_same_search",
    "record_judgement",
    "resume_point",
]

_LLM_JUDGEMENT = (
    "provider",
    "model",
    "temperature",
    "noise",
    "structured_output",
    "judge_max_tokens",
    "meta_max_tokens",
)
#: Config keys that change what a judgement means: section → its keys (None: all of them). A
#: resume that changes one is refused (the kept judgements would mix two judges). The dataset
#: and the loss are the checkpoint's fingerprint (:mod:`promptevolver.optimizers._checkpoint`).
JUDGEMENT_KEYS: dict[str, tuple[str, ...] | None] = {
    "metric": None,
    "llm": _LLM_JUDGEMENT,
    "reflection_llm": _LLM_JUDGEMENT,
}


def check_run_dir(run_dir: str | Path, *, resume: bool, force: bool = False) -> None:
    """Refuse to write a run into ``run_dir`` where that would lose one (see the module docstring).

    Args:
        resume: continue the run in ``run_dir`` (it must have a checkpoint).
        force: start afresh even over an interrupted or finished run (its run files are removed
            by the caller, :func:`promptevolver.rundir.clear_run`).

    Raises:
        RunDirError: one line saying what ``run_dir`` holds and the command that continues it; a
            folder promptevolver did not make (:func:`promptevolver.rundir.check_ours`).
    """
    d = Path(run_dir)
    if resume:
        if not (d / rundir.CHECKPOINT_FILE).is_file():
            raise RunDirError(_not_resumable(d))
        rundir.check_ours(d)
        return
    rundir.check_ours(d)
    status = rundir.run_status(d)
    if force or status == "new":
        return
    if status == "interrupted":
        raise RunDirError(
            f"{d} holds an interrupted run{_where(d)}; continue it with: promptevolver optimize "
            f"--resume {d} (or start it over with --force)"
        )
    words = STOP_REASONS.get(str(_stop_reason(d)))
    extend = (
        f"it cannot be extended ({words.final})"
        if words is not None and words.final
        else f"extend it with: promptevolver optimize --resume {d} --set optimizer.generations=N "
        "(and optimizer.patience=M if it stopped on patience)"
    )
    raise RunDirError(
        f"{d} holds a finished run ({d / rundir.RESULT_FILE}); nothing was changed. Write to another "
        f"--output, or overwrite it with --force; {extend}"
    )


def _stop_reason(d: Path) -> str | None:
    """The finished run's stop reason (None when its result.json cannot be read)."""
    try:
        return rundir.read_result(d).get("stop_reason")
    except (RunDirError, OSError, ValueError):
        return None


def _not_resumable(d: Path) -> str:
    if not d.is_dir():
        return f"{d}: not a run directory (no such folder)"
    if (d / rundir.CONFIG_FILE).is_file():
        return (
            f"{d}: the run wrote no {rundir.CHECKPOINT_FILE}, so there is nothing to resume; start it again"
        )
    return f"{d}: not a run directory (no {rundir.CHECKPOINT_FILE} or {rundir.CONFIG_FILE} in it)"


def _where(d: Path) -> str:
    try:
        data = load_checkpoint(d)
        return f" (its checkpoint: {_step(data['state'], data['config'].get('generations'))})"
    except (CheckpointError, KeyError, TypeError, ValueError, AttributeError):
        return ""


def check_same_search(run_dir: str | Path, config: RunConfig, *, source: str | Path) -> None:
    """Refuse to resume ``run_dir`` with a ``config`` (read from ``source``) that changes the
    search: only :data:`RESUMABLE_CHANGES` may differ from the checkpoint's config.

    Raises:
        CheckpointError: naming the checkpoint, ``source`` and each changed value.
    """
    path = Path(run_dir) / rundir.CHECKPOINT_FILE
    theirs: dict[str, Any] = load_checkpoint(run_dir)["config"]
    ours = config.effective_optimizer().model_dump(mode="json")
    changed = [
        f"{key} {_show(theirs.get(key))} -> {_show(value)}"
        for key, value in ours.items()
        if key not in RESUMABLE_CHANGES and theirs.get(key) != value
    ]
    own = rundir.read_config(run_dir)
    _check_config_file_kept(Path(run_dir), own)
    changed += _judgement_changes(own, config)
    if changed:
        raise CheckpointError(
            f"{path}: {source} changes the search ({', '.join(changed)}); only "
            f"{', '.join(sorted(RESUMABLE_CHANGES))} may change on --resume. Resume with the run's "
            f"own {rundir.CONFIG_FILE} (promptevolver optimize --resume {run_dir}) or start a new run"
        )


def record_judgement(run_dir: str | Path, config: RunConfig) -> None:
    """Note in the run directory's ownership marker what a judgement means in ``config`` (the
    config.yaml just written): a resume compares the config.yaml it finds with it."""
    rundir.update_owner(run_dir, judgement=_judgement_view(config))


def _check_config_file_kept(run_dir: Path, found: RunConfig) -> None:
    """Refuse a run directory whose config.yaml was edited since the run wrote it in a way that
    changes what a judgement means (its answers, kept in the checkpoint and the journal, would be
    replayed beside the new judge's).

    Raises:
        CheckpointError: naming the file and each changed key.
    """
    recorded = rundir.read_owner(run_dir).get("judgement")
    if not isinstance(recorded, dict):
        return  # a run written before the record existed
    now = _judgement_view(found)
    changed = [
        f"{key} {_show(recorded.get(key))} -> {_show(now.get(key))}"
        for key in sorted(recorded.keys() | now.keys())
        if recorded.get(key) != now.get(key)
    ]
    if changed:
        raise CheckpointError(
            f"{run_dir / rundir.CONFIG_FILE} was edited after the run wrote it ({', '.join(changed)}): its "
            "kept answers are the old judge's, so a resume would mix two judges. Put the file back as "
            "it was, or start a new run with the new settings"
        )


def _judgement_changes(before: RunConfig, after: RunConfig) -> list[str]:
    """``key old -> new`` for each :data:`JUDGEMENT_KEYS` value that differs (dotted key paths)."""
    old, new = _judgement_view(before), _judgement_view(after)
    return [
        f"{key} {_show(old.get(key))} -> {_show(new.get(key))}"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]


def _judgement_view(config: RunConfig) -> dict[str, Any]:
    data = config.model_dump(mode="json")
    flat: dict[str, Any] = {}
    for section, keys in JUDGEMENT_KEYS.items():
        value = data.get(section)
        if isinstance(value, dict):
            for key, item in value.items():
                if keys is None or key in keys:
                    flat[f"{section}.{key}"] = item
        elif value is not None:
            flat[section] = value
    return flat


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


@dataclass(frozen=True)
class ResumePoint:
    """Where a resume picks up.

    Attributes:
        run_dir: the run directory.
        generation: generations finished after the initial population (0: none, or only it).
        candidates: candidates the checkpoint holds (0: not even the initial population finished).
        judgements: successful judge evaluations kept (not asked again; failed ones are).
        journaled: answers of the interrupted step in the journal (replayed, not sent again).
        stop_reason: the stop reason of a finished run being extended, else None.
        since_improvement: generations in a row without a better best train score (what
            ``optimizer.patience`` is compared with).
        exhausted: every operator plan the population allows had been tried.
        stages: the pipeline stages the checkpoint had finished, in order (``distill``, ``verify``,
            ``examples``, ``cross_fit``; empty under ``strategy: genetic`` or before the first).
    """

    run_dir: Path
    generation: int
    candidates: int
    judgements: int
    journaled: int
    stop_reason: str | None
    since_improvement: int = 0
    exhausted: bool = False
    stages: tuple[str, ...] = ()

    def describe(self, generations: int, patience: int | None = None) -> str:
        """One line for the terminal; ``generations`` and ``patience``: the resumed run's
        ``optimizer.generations`` and ``optimizer.patience`` (None: not checked)."""
        if self.stop_reason:
            where = (
                f"after the pipeline's {', '.join(_STAGE_WORDS.get(s, s) for s in self.stages)}"
                if self.stop_reason == "distilled" and self.stages
                else f"after generation {self.generation}"
            )
            head = (
                f"extending the finished run in {self.run_dir} (it stopped {where}: {self.stop_reason}) "
                f"up to generation {generations}"
            )
            if generations <= self.generation:
                head += f" (optimizer.generations must be above {self.generation}: expect no new generation)"
            elif (words := STOP_REASONS.get(str(self.stop_reason))) is not None and words.final:
                why = words.final
                head += f" (its stop reason still holds: {why}; expect no new generation)"
            elif self.exhausted:
                head += (
                    " (but every operator plan the population allows had been tried: expect no new "
                    "generation)"
                )
            elif patience is not None and self.since_improvement >= patience:
                head += (
                    f" (but patience still holds: {self.since_improvement} generations without a better "
                    f"train score, patience {patience}; expect no new generation unless you raise it "
                    f"too, e.g. --set optimizer.patience={self.since_improvement + 2})"
                )
        elif self.candidates == 0:
            head = (
                f"resuming {self.run_dir} from its start (its first step, the distillation or a "
                "search's initial population, had not finished)"
            )
        elif self.generation == 0 and self.stages and "search" not in self.stages:
            done = ", ".join(_STAGE_WORDS.get(s, s) for s in self.stages)
            head = f"resuming {self.run_dir} after the pipeline's {done}"
        else:
            head = f"resuming {self.run_dir} {_after(self.generation)} of {generations}"
        kept = [
            f"{self.candidates} candidates and {self.judgements} judgements kept" if self.candidates else "",
            f"{self.journaled} answers of the interrupted step replayed from {rundir.JOURNAL_FILE}"
            if self.journaled
            else "",
        ]
        said = "; ".join(k for k in kept if k)
        return f"{head}: {said}; none of these LLM calls is made again" if said else head


#: The pipeline's stages in words (``stages`` of the checkpoint's state).
_STAGE_WORDS = {"distill": "distillation", "verify": "verification", "cross_fit": "cross-fit"}


def _after(generation: int) -> str:
    return (
        "after the initial population, generation 0" if generation == 0 else f"after generation {generation}"
    )


def _stages_done(state: dict[str, Any]) -> tuple[str, ...]:
    """The pipeline stages a checkpoint's state had finished, in order."""
    return tuple(r.name for r in Stages.from_dict(state.get("stages")) if r.ran)


def _step(state: dict[str, Any], generations: Any) -> str:
    if not state.get("candidates"):
        return "before its first step finished"
    stages = _stages_done(state)
    if state.get("generation", 0) == 0 and stages and "search" not in stages:
        return f"after the pipeline's {', '.join(_STAGE_WORDS.get(s, s) for s in stages)}"
    if state.get("generation", 0) == 0:
        return "after the initial population"
    return f"after generation {state['generation']} of {generations}"


def resume_point(run_dir: str | Path) -> ResumePoint:
    """What the checkpoint and journal of ``run_dir`` hold (see :class:`ResumePoint`).

    Raises:
        CheckpointError: no checkpoint, or one of another format version.
    """
    data = load_checkpoint(run_dir)
    try:
        return _resume_point(run_dir, data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise CheckpointError(
            f"{Path(run_dir) / rundir.CHECKPOINT_FILE}: the checkpoint is damaged ({type(exc).__name__}: "
            f"{str(exc)[:200]}); restore it, or start the run again"
        ) from None


def _resume_point(run_dir: str | Path, data: dict[str, Any]) -> ResumePoint:
    state = data["state"]
    return ResumePoint(
        run_dir=Path(run_dir),
        generation=int(state.get("generation", 0)),
        candidates=len(state.get("candidates", [])),
        judgements=len(data.get("memo", [])),
        journaled=_answers_after(Path(run_dir) / rundir.JOURNAL_FILE, int(data.get("journal_entries", 0))),
        stop_reason=state.get("stop_reason"),
        since_improvement=int(state.get("since_improvement", 0)),
        exhausted=bool(state.get("exhausted", False)),
        stages=_stages_done(state),
    )


def _answers_after(journal: Path, entry: int) -> int:
    """Answered calls in the journal from line ``entry`` on, read as a resume reads them."""
    return sum("text" in line for line in read_lines(journal)[entry:])
