"""The run directory: every file name, every writer's atomicity and every reader, in one place.

An ``optimize`` run leaves::

    DIR/config.yaml               the effective run config, written first
    DIR/checkpoint.json           the search state after the last finished step (for --resume)
    DIR/journal.jsonl             every LLM answer since the run started, as it arrived (for --resume)
    DIR/best_so_far.json          best train candidate at the last checkpoint
    DIR/result.json               the result contract (README "Where results go")
    DIR/report.md, report.html    the run report; DIR/plots/ its plots
    DIR/best_instructions.json    prompt name → best instruction
    DIR/apply_best.py             a snippet that applies them
    DIR/samples.jsonl             one line per usable annotation: seed and best verdicts, reasons
    DIR/.lock                     held (flock) by the process writing the run: pid, host, start
    DIR/.promptevolver-run        the ownership marker: this folder was made by promptevolver

Nothing is written into, or removed from, a folder promptevolver did not make: :func:`locked`, which
every writer takes, first checks :func:`check_ours` (the marker; or a new or empty folder, which it
then marks; or a run written before the marker existed, which holds nothing but run files). A
folder holding anything else is refused naming what it holds, ``--force`` included, and
:func:`clear_run` removes only the run files of a marked folder. No file is written through or
over a symbolic link: :func:`write_atomic` refuses a link at the target's name, the lock file and
the journal are opened with ``O_NOFOLLOW``, and the plots folder must be a real folder. A run
that stops before its first LLM call (a failed preflight, bad input, Ctrl-C) leaves no debris: a
folder its lock created is removed again, an empty one emptied again (:func:`locked`).

Every file is written atomically (:func:`write_atomic`: a temporary file in the same folder,
fsync, rename), so an interruption or a full disk never leaves a half-written file, and no
temporary file is left behind when a write fails. Readers check :data:`FORMAT_VERSION` where a
file carries one and raise :class:`~promptevolver.errors.RunDirError` naming the file.

One process at a time writes a run directory: :func:`locked` takes an exclusive lock
(``fcntl.flock`` on ``DIR/.lock``, released by the kernel when the process ends, however it ends)
and a second process is refused with a line naming the holder's pid, host and start time. Every
writer takes it: ``optimize`` (and a job, on its folder and each metric's), the optimizer given a
``run_dir``, ``report``, ``examples`` and ``bench``; a process that holds it may take it again.
:func:`locked_file` does the same for one file outside a run directory (``.NAME.lock`` beside it).

Readers: :func:`read_result` (the one parser of ``result.json``), :func:`read_config`,
:func:`read_chosen_judge` (the one reader of a chosen judge: its instructions AND its teaching
examples, the figures it was chosen on, the model it was verified on, whether the simulated LLM
judged; every export and consumer reads it: ``best_instructions.json``, ``apply_best.py``, the
judges' ``from_result``, ``evaluate -i``, ``assert_agreement``), :func:`load_instructions` and
:func:`load_examples` (its two halves) and :func:`metric_config_near`. ``result.json`` carries
``format_version`` (:data:`FORMAT_VERSION`); a file without one is a release-0.1 result, read as
version 1; a newer version is refused with a message naming the file.

This module is a low layer: it depends on :mod:`promptevolver.errors` and the config models only,
so any layer (the judge's ``from_result`` included) may read a run directory through it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import shutil
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from promptevolver.errors import ConfigError, RunDirError

if TYPE_CHECKING:  # imported where used: the file names and JSON readers load no pydantic or YAML
    from promptevolver.config import MetricConfig, RunConfig

__all__ = [
    "APPLY_SNIPPET_FILE",
    "load_examples",
    "BEST_INSTRUCTIONS_FILE",
    "BEST_SO_FAR_FILE",
    "CHECKPOINT_FILE",
    "ChosenJudge",
    "DRY_RUN_NOTE",
    "CONFIG_FILE",
    "FORMAT_VERSION",
    "JOURNAL_FILE",
    "FORMAT_VERSION_KEY",
    "LOCK_FILE",
    "OWNER_FILE",
    "PLOTS_DIR",
    "REPORT_HTML",
    "REPORT_MD",
    "RESULT_FILE",
    "RUN_FILES",
    "SAMPLES_FILE",
    "as_chosen_judge",
    "as_instructions",
    "check_format_version",
    "check_links",
    "check_ours",
    "check_unlocked",
    "check_writable",
    "clear_run",
    "own_folder",
    "read_owner",
    "remove_leftovers",
    "file_lock_path",
    "load_instructions",
    "locked",
    "locked_file",
    "metric_config_near",
    "prompt_name_near",
    "read_chosen_judge",
    "read_config",
    "read_json",
    "read_regular",
    "not_a_file",
    "read_result",
    "refuse_link",
    "result_path",
    "run_status",
    "update_owner",
    "write_atomic",
    "write_json",
    "write_jsonl",
    "write_result",
]

CONFIG_FILE = "config.yaml"
CHECKPOINT_FILE = "checkpoint.json"
JOURNAL_FILE = "journal.jsonl"
BEST_SO_FAR_FILE = "best_so_far.json"
RESULT_FILE = "result.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
PLOTS_DIR = "plots"
BEST_INSTRUCTIONS_FILE = "best_instructions.json"
APPLY_SNIPPET_FILE = "apply_best.py"
SAMPLES_FILE = "samples.jsonl"
#: A job of several metrics (``metrics:``): its index page, linking each metric's report.
INDEX_HTML = "index.html"
#: The lock file of the process writing the run (:func:`locked`), there while it runs.
LOCK_FILE = ".lock"
#: The ownership marker (JSON: who made the folder, when; the judgement keys of the config a run
#: wrote): a folder holding it was made by promptevolver, which writes only into such folders.
OWNER_FILE = ".promptevolver-run"
#: Version of the run-directory formats written by this release (result.json, checkpoint.json).
FORMAT_VERSION = 2
#: The key of :data:`FORMAT_VERSION` in result.json; a file without it is a release-0.1 result (version 1).
FORMAT_VERSION_KEY = "format_version"
#: Every file (and the plots folder) a run writes into its directory: what ``--force`` removes.
RUN_FILES = (
    CONFIG_FILE,
    CHECKPOINT_FILE,
    JOURNAL_FILE,
    BEST_SO_FAR_FILE,
    RESULT_FILE,
    REPORT_MD,
    REPORT_HTML,
    PLOTS_DIR,
    BEST_INSTRUCTIONS_FILE,
    APPLY_SNIPPET_FILE,
    SAMPLES_FILE,
    INDEX_HTML,
)
#: What a directory holds, for ``optimize -o DIR``: ``new`` (no run in it: no run file, or only
#: the config and an empty journal of a run that stopped before its first checkpoint, e.g. at the
#: LLM preflight), ``interrupted`` (a checkpoint or an answered call, no result.json) or
#: ``finished`` (a result.json).
RunStatus = Literal["new", "interrupted", "finished"]
#: Keys every result.json has had since release 0.1, with their JSON types.
_RESULT_KEYS: dict[str, type] = {
    "metric": str,
    "seed_instructions": dict,
    "best_instructions": dict,
    "scores": dict,
}


# --- writing -------------------------------------------------------------------------------------


def write_atomic(path: str | Path, data: str | bytes | Iterable[str]) -> Path:
    """Write ``data`` (text is UTF-8 encoded; pieces of text are written as they come, so a large
    file is never whole in memory) to ``path`` atomically; return the path.

    The bytes go to a temporary file in the same folder, are flushed to disk (fsync) and renamed
    over ``path``: readers see the old file or the new one, never a mix. On any failure (a full
    disk, an interrupt) the temporary file is removed and the old file is left untouched. A new
    file's mode is what the umask leaves of 0o666, as for any file a program creates (0o644
    under umask 022), so others can read a report where the umask lets them; a file replaced
    keeps its mode.

    Raises:
        RunDirError: ``path`` is a symbolic link (never written through or over: it may point
            at any file of the user's).
        OSError: the folder cannot be created or the file cannot be written.
    """
    target = Path(path)
    refuse_link(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    pieces = [data] if isinstance(data, (str, bytes)) else data
    fd, tmp = _create_temporary(target)
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece.encode("utf-8") if isinstance(piece, str) else piece)
            fh.flush()
            _keep_mode(fh.fileno(), target)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(target)  # a full disk's message names the file
        raise
    return target


def _keep_mode(fd: int, target: Path) -> None:
    """Give the new file the permissions of the file it replaces, if any: a file its owner made
    private (0o600) stays private when it is rewritten."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    os.fchmod(fd, stat.S_IMODE(mode))


def _create_temporary(target: Path) -> tuple[int, str]:
    """A new, exclusively created temporary file next to ``target``: (descriptor, path). Created
    with mode 0o666 so that the kernel applies the umask (``tempfile.mkstemp`` forces 0o600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # another writer's name: draw again
            continue
    raise FileExistsError(f"no free temporary file name next to {target}")


def write_json(path: str | Path, data: Any, *, indent: int | None = None) -> Path:
    """Write ``data`` as UTF-8 JSON atomically (see :func:`write_atomic`); return the path."""
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    return write_atomic(path, text + "\n" if indent is not None else text)


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``rows`` as JSON Lines (one compact UTF-8 object per line) atomically, line by line
    (20,000 annotations' samples.jsonl was joined whole in memory: the run's peak); return the path."""
    return write_atomic(path, (json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def write_result(path: str | Path, result: Mapping[str, Any]) -> Path:
    """Write a result.json at ``path`` atomically: ``format_version`` first, then ``result``
    (:meth:`~promptevolver.optimizers._result.OptimizationResult.to_dict`), 2-space indent.

    Raises:
        OSError: the file cannot be written (the old one, if any, is left intact).
    """
    return write_json(path, {FORMAT_VERSION_KEY: FORMAT_VERSION, **result}, indent=2)


def clear_run(directory: str | Path) -> list[Path]:
    """Remove the run files (:data:`RUN_FILES`) of ``directory``; return what was removed.

    Other files in the folder are left alone. Used by ``optimize --force``, so that a new run
    never leaves a stale result.json or report next to its own files. A symbolic link at a run
    file's name is removed as a link (its target is never touched).

    Raises:
        RunDirError: ``directory`` is not marked as made by promptevolver (:data:`OWNER_FILE`):
            nothing is removed from a folder it did not make.
        OSError: a file cannot be removed.
    """
    if Path(directory).exists() and not _marked(Path(directory)):
        raise RunDirError(f"{directory}: not a folder promptevolver made (no {OWNER_FILE}); nothing removed")
    removed = remove_leftovers(directory)
    for name in RUN_FILES:
        path = Path(directory) / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(path)
    return removed


def remove_leftovers(directory: str | Path) -> list[Path]:
    """Remove the temporary files a kill left behind mid-write (``.NAME.*.tmp`` of the run
    files, in the folder and in its plots folder); return what was removed. The run files
    themselves are intact: :func:`write_atomic` renames a temporary file only when it is complete.

    Raises:
        OSError: a file cannot be removed.
    """
    folder, plots = Path(directory), Path(directory) / PLOTS_DIR
    ours = [p for p in folder.glob(".*.tmp") if _leftover(p)]
    ours += list(plots.glob(".*.tmp")) if _real_folder(plots) else []  # the plots folder is all ours
    for path in ours:
        path.unlink()
    return ours


#: Run directories this process holds the lock of (real path -> depth): :func:`locked` is re-entrant.
_HELD: dict[str, int] = {}
_HELD_GUARD = threading.Lock()


@contextlib.contextmanager
def locked(directory: str | Path) -> Iterator[Path]:
    """Hold an exclusive lock on the run directory ``directory`` (created if needed) for the
    duration of the ``with`` block; yields the lock file's path.

    The folder must be ours first (:func:`check_ours`, before anything is created in it); a new
    or empty one is marked (:data:`OWNER_FILE`) once the lock is held. The lock is
    ``fcntl.flock`` on :data:`LOCK_FILE` (opened with ``O_NOFOLLOW``), which records the holder
    (pid, host, start time, UTC); the kernel releases it when the process ends, so a killed run
    leaves no stale lock (only its file, taken over by the next run). The file is removed at the
    end of the block; a lock taken on a file removed meanwhile is dropped and taken again on the
    new one. A process already holding the lock takes it again at once (the optimizer writing a
    run directory inside ``optimize``'s lock); the lock is released when the outermost block ends.

    A block that raises (a failed preflight, bad input, a budget refused, Ctrl-C) before the run in
    a new or empty folder started leaves the folder as it found it: a folder it created is
    removed (with the parents it created), an empty one is emptied again
    (:func:`_discard_unstarted`: only when no run is in it, :func:`run_status` ``new``, and only
    files a run writes). A folder that held anything before is never deleted from.

    Raises:
        RunDirError: the folder is not ours (:func:`check_ours`), its lock file is a symbolic link,
            or another process holds the lock (the message names its pid, host and start).
        OSError: the folder or the lock file cannot be created.
    """
    d = Path(directory)
    key = os.path.realpath(d)
    with _HELD_GUARD:
        held = key in _HELD
        if held:
            _HELD[key] += 1
    if held:
        try:
            yield d / LOCK_FILE
        finally:
            _release(key)
        return
    check_ours(d)
    made = _first_missing(d)
    try:  # a new or empty folder: a block that fails before its run starts leaves it so again
        fresh = made is not None or not any(p.name != LOCK_FILE for p in d.iterdir())
    except OSError:
        fresh = False  # unreadable: refused below, naming the folder
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(d, exc) from None
    discarded = False
    try:
        with _held(d / LOCK_FILE, lambda path: _in_use(d, path), folder=d) as path:
            _mark(d)
            with _HELD_GUARD:
                _HELD[key] = 1
            try:
                yield path
            except BaseException:
                discarded = fresh and _discard_unstarted(d)  # under the lock
                raise
            finally:
                _release(key)
    finally:
        if discarded and made is not None:  # the lock file is gone now: the folders, if still empty
            _remove_empty_folders(d, made)


def _first_missing(d: Path) -> Path | None:
    """The outermost of ``d`` and its parents that does not exist (what ``mkdir -p d`` creates
    first), or None when ``d`` exists."""
    missing = None
    for folder in (d, *d.parents):
        if folder.exists() or folder.is_symlink():
            break
        missing = folder
    return missing


def _discard_unstarted(d: Path) -> bool:
    """Remove what a run that stopped before its first LLM call wrote into the folder ``d``, which
    held nothing before it (a new or empty folder); return whether ``d`` is empty again (its lock
    file aside).

    Only a run that never started is discarded (:func:`run_status` ``new``: no checkpoint, no
    answered call, no result), and only when ``d`` holds nothing but what it wrote: the marker,
    config.yaml, an empty journal, temporary files of run files. Anything else (a file someone put
    there meanwhile, a job's metric folder that did start) keeps the folder as it is.
    """
    if run_status(d) != "new":
        return False
    entries = [p for p in d.iterdir() if p.name != LOCK_FILE]
    names = {OWNER_FILE, CONFIG_FILE, JOURNAL_FILE}
    if not all(not p.is_symlink() and p.is_file() and (p.name in names or _leftover(p)) for p in entries):
        return False
    for p in entries:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    return True


def _remove_empty_folders(d: Path, made: Path) -> None:
    """Remove ``d`` and its parents up to ``made`` (the folders a lock created), each only while
    empty: a folder someone wrote into meanwhile is kept."""
    for folder in (d, *d.parents):
        try:
            folder.rmdir()
        except OSError:
            return
        if folder == made:
            return


def file_lock_path(path: str | Path) -> Path:
    """The lock file of :func:`locked_file` for the file ``path``: ``.NAME.lock`` beside it."""
    p = Path(path)
    return p.parent / f".{p.name}.lock"


@contextlib.contextmanager
def locked_file(path: str | Path, *, use: str = "written") -> Iterator[Path]:
    """Hold an exclusive lock on the file ``path`` (which need not exist yet) for the ``with``
    block, as :func:`locked` does for a run directory; yields the lock file's path
    (:func:`file_lock_path`, removed at the end; a kill leaves it, unlocked, for the next holder).

    A process writing a file outside a run directory (an annotation file a review page labels)
    takes it, so two never write that file at once; the file is still replaced atomically
    (:func:`write_atomic`), so its readers need no lock.

    Args:
        use: what the holder does with the file, for the refusal (``written``, ``reviewed``).

    Raises:
        RunDirError: another process holds the lock (the message names its pid, host and start),
            or the lock file's name is a symbolic link.
        OSError: the lock file cannot be created (a missing or read-only folder).
    """
    target = Path(path)

    def refused(lock: Path) -> RunDirError:
        return RunDirError(
            f"{target} is being {use} by another promptevolver process ({_holder(lock)}); nothing "
            "was changed. Use that one, or stop it first"
        )

    with _held(file_lock_path(target), refused) as lock:
        yield lock


@contextlib.contextmanager
def _held(
    path: Path, refused: Callable[[Path], RunDirError], *, folder: Path | None = None
) -> Iterator[Path]:
    """The exclusive ``flock`` on the lock file ``path`` (see :func:`locked`), holder recorded;
    opened with ``O_NOFOLLOW`` (a link at its name is refused). ``folder``: the run directory,
    named when the file cannot be created there (read-only, no rights)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            fd = os.open(path, flags, 0o666)
        except OSError as exc:
            if path.is_symlink():
                raise _link_error(path) from None
            if folder is not None and (_denied(exc) or exc.errno == errno.EROFS):
                raise _unwritable(folder, exc) from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise refused(path) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # its holder removed the file as we locked it: lock the new one
    try:
        os.ftruncate(fd, 0)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": started}
        os.write(fd, json.dumps(holder).encode())
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)  # releases the lock


def _denied(exc: OSError) -> bool:
    return isinstance(exc, PermissionError | FileNotFoundError | NotADirectoryError)


def _unwritable(d: Path, exc: OSError) -> RunDirError:
    return RunDirError(
        f"{d}: cannot be written ({exc.strerror or exc}); nothing was done and no LLM call was made. "
        "Make it writable, or choose another folder"
    )


def check_writable(path: str | Path) -> None:
    """Refuse at once an output file that cannot be written (its folder read-only or missing
    rights; a link at its name), before any LLM call is spent on what it would hold. The folder
    is created if missing; a temporary file is made in it and removed.

    Raises:
        RunDirError: naming the file and why.
    """
    target = Path(path)
    refuse_link(target)
    if target.is_dir():
        raise RunDirError(f"{target}: is a folder, not a file to write")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_temporary(target)
    except OSError as exc:
        raise RunDirError(
            f"{target}: cannot be written ({exc.strerror or exc}); nothing was done and no LLM call "
            "was made. Choose a writable place"
        ) from None
    os.close(fd)
    os.unlink(tmp)


def _release(key: str) -> None:
    with _HELD_GUARD:
        _HELD[key] -= 1
        if not _HELD[key]:
            del _HELD[key]


def check_ours(directory: str | Path) -> None:
    """Refuse a folder promptevolver did not make, before anything is written into it.

    Ours: a folder that does not exist yet, an empty one (its stale lock file aside), one holding
    :data:`OWNER_FILE`, or a run written before the marker existed (a result.json or
    checkpoint.json of ours, and nothing but run files and run folders beside it).

    Raises:
        RunDirError: naming the folder and (some of) what it holds, or a link at a name a run
            writes (:func:`check_links`); nothing is changed.
    """
    d = Path(directory)
    if not d.exists():
        return
    if not d.is_dir():
        raise RunDirError(f"{d}: is a file, not a folder")
    check_links(d)
    if _marked(d) or _unmarked_but_ours(d):
        return
    names = sorted(p.name for p in d.iterdir() if p.name != LOCK_FILE)
    names = [n for n in names if n not in RUN_FILES] + [n for n in names if n in RUN_FILES]  # others first
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    raise RunDirError(
        f"{d} holds files promptevolver did not write ({shown}); nothing was changed. promptevolver "
        f"writes only into a new or empty folder, or one it made (marked by {OWNER_FILE}): choose another "
        "folder, e.g. a new one inside it"
    )


def check_links(directory: str | Path) -> None:
    """Refuse a run directory holding a symbolic link at a name a run writes (before anything of
    it is read or written: the link may point at any file of the user's).

    Raises:
        RunDirError: naming the link.
    """
    d = Path(directory)
    for name in (OWNER_FILE, LOCK_FILE, *RUN_FILES):
        if (d / name).is_symlink():
            raise _link_error(d / name)


def _marked(d: Path) -> bool:
    marker = d / OWNER_FILE
    return marker.is_file() and not marker.is_symlink()


def _unmarked_but_ours(d: Path, depth: int = 2) -> bool:
    """An empty folder, or a run (or job) written before :data:`OWNER_FILE` existed: nothing in it
    but run files (and their leftovers) and run folders (``depth`` levels down at most: a job's
    metric folders), and a result.json or checkpoint.json of ours in it or in one of its folders."""
    entries = [p for p in d.iterdir() if p.name != LOCK_FILE]
    if not entries:
        return True
    known = {*RUN_FILES, OWNER_FILE}
    for p in entries:
        leftover = _leftover(p)
        folder = p.is_dir() and depth > 0 and (_marked(p) or _unmarked_but_ours(p, depth - 1))
        if p.is_symlink() or not (p.name in known or leftover or folder):
            return False
    return _holds_a_run(d) or any(p.is_dir() and _holds_a_run(p) for p in entries)


def _leftover(p: Path) -> bool:
    """A temporary file of a run file (``.NAME.*.tmp``) a kill left mid-write."""
    return p.name.endswith(".tmp") and any(p.name.startswith(f".{n}.") for n in RUN_FILES)


def _holds_a_run(d: Path) -> bool:
    """A result.json or checkpoint.json of ours in ``d``."""
    signs = {RESULT_FILE: (FORMAT_VERSION_KEY, "metric", "kind"), CHECKPOINT_FILE: ("fingerprint",)}
    for name, keys in signs.items():
        try:
            data = read_json(d / name)
        except RunDirError:
            continue
        if isinstance(data, dict) and any(k in data for k in keys):
            return True
    return False


def _mark(d: Path) -> None:
    """Write :data:`OWNER_FILE` into ``d`` unless it is there."""
    if not _marked(d):
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_json(d / OWNER_FILE, {"written_by": "promptevolver", "created": created}, indent=2)


def read_owner(directory: str | Path) -> dict[str, Any]:
    """What the ownership marker of ``directory`` records (empty: no marker, or an unreadable one)."""
    try:
        data = read_json(Path(directory) / OWNER_FILE)
    except RunDirError:
        return {}
    return data if isinstance(data, dict) else {}


def update_owner(directory: str | Path, **fields: Any) -> None:
    """Record ``fields`` in the ownership marker of ``directory`` (a folder of ours, locked)."""
    d = Path(directory)
    if not _marked(d):
        raise RunDirError(f"{d}: not a folder promptevolver made (no {OWNER_FILE})")
    write_json(d / OWNER_FILE, {**read_owner(d), **fields}, indent=2)


def own_folder(path: str | Path) -> Path:
    """``path`` as a folder of a run directory (the plots folder), created if missing.

    Raises:
        RunDirError: ``path`` is a symbolic link or not a folder (never written through).
    """
    p = Path(path)
    refuse_link(p)
    p.mkdir(parents=True, exist_ok=True)
    if not _real_folder(p):
        raise RunDirError(f"{p}: is not a folder")
    return p


def _real_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def refuse_link(path: str | Path) -> None:
    """Raise :class:`RunDirError` when ``path`` is a symbolic link (see :func:`write_atomic`)."""
    if Path(path).is_symlink():
        raise _link_error(Path(path))


def _link_error(path: Path) -> RunDirError:
    return RunDirError(
        f"{path} is a symbolic link; nothing was written: promptevolver never writes through or over a "
        "link (it may point at any file of yours). Remove the link, or choose another folder"
    )


def check_unlocked(directory: str | Path) -> None:
    """Refuse at once a run directory another process is writing (before reading what it holds:
    its files are that process's, mid-run).

    Raises:
        RunDirError: another process holds the lock of :func:`locked` (naming it).
    """
    path = Path(directory) / LOCK_FILE
    if os.path.realpath(directory) in _HELD:
        return  # this process writes it
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return  # no lock file (or a link, refused by locked()): nobody is writing
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _in_use(Path(directory), path) from None
    finally:
        os.close(fd)


def _in_use(d: Path, path: Path) -> RunDirError:
    return RunDirError(
        f"{d} is being written by another promptevolver process ({_holder(path)}); nothing "
        "was changed. Wait for it to finish (or stop it), or write to another --output"
    )


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _holder(path: Path) -> str:
    """``pid N on host H, started T`` from a lock file, or what is known of it."""
    try:
        data = json.loads(read_regular(path, limit=4096).decode("utf-8"))
        return f"pid {data['pid']} on host {data['host']}, started {data['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its pid is not recorded yet"


# --- reading -------------------------------------------------------------------------------------


def run_status(directory: str | Path) -> RunStatus:
    """What ``directory`` holds (see :data:`RunStatus`); a missing folder is ``new``."""
    d = Path(directory)
    if (d / RESULT_FILE).is_file():
        return "finished"
    if (d / CHECKPOINT_FILE).exists() or _journal_has_entries(d / JOURNAL_FILE):
        return "interrupted"
    return "new"


def _journal_has_entries(path: Path) -> bool:
    """Whether the journal at ``path`` records any call (its first bytes are enough to tell)."""
    if not path.exists() and not path.is_symlink():
        return False
    try:
        return bool(read_regular(path, limit=64).strip())
    except RunDirError:
        return not path.is_dir()  # unreadable or not a file: keep it rather than overwrite it


def read_regular(path: str | Path, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit`` of them; None: all). A fifo,
    a device (``/dev/zero``) or a socket is refused before anything is read, so that a reader
    never blocks or reads without end.

    Raises:
        RunDirError: missing (the message says ``not found``), not a regular file, unreadable.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise RunDirError(f"{p}: not found") from None
    except OSError as exc:
        raise RunDirError(f"{p}: cannot be read ({exc.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunDirError(f"{p}: {not_a_file(p)}")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read() if limit is None else fh.read(limit)
    except OSError as exc:
        raise RunDirError(f"{p}: cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def not_a_file(path: str | Path) -> str:
    """What ``path`` is when it is not a regular file (for messages): a folder, a fifo, a device..."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "not found"
    kinds = [(stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a fifo"), (stat.S_ISSOCK, "a socket")]
    kinds += [(stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")]
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    return f"is {kind}, not a regular file" if kind != "not a regular file" else kind


def read_json(path: str | Path, *, what: str = "file") -> Any:
    """Parse a JSON file of a run directory.

    Args:
        what: what the file is, for the error message (``"checkpoint"``, ``"result"``...).

    Raises:
        RunDirError: missing, unreadable or invalid JSON; the message names the file.
    """
    p = Path(path)
    if not p.exists():
        raise RunDirError(f"{p}: no {what} here")
    try:
        return json.loads(read_regular(p).decode("utf-8"))
    except RunDirError as exc:
        raise RunDirError(f"{p}: cannot read the {what} ({str(exc).removeprefix(f'{p}: ')})") from None
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{p}: cannot read the {what} ({exc})") from exc
    except RecursionError:
        raise RunDirError(f"{p}: the {what} is nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{p}: the {what} is not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise RunDirError(f"{p}: the {what} is not valid JSON ({exc})") from exc


def check_format_version(data: Mapping[str, Any], path: str | Path) -> int:
    """The ``format_version`` of a parsed run-directory file (1 when absent: release 0.1).

    Raises:
        RunDirError: a version newer than :data:`FORMAT_VERSION` (written by a later release) or
            not a positive integer; the message names the file.
    """
    version = data.get(FORMAT_VERSION_KEY, 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RunDirError(f"{path}: {FORMAT_VERSION_KEY} {version!r} is not a version number")
    if version > FORMAT_VERSION:
        raise RunDirError(
            f"{path}: format version {version} was written by a newer promptevolver; this one reads "
            f"versions up to {FORMAT_VERSION} (upgrade promptevolver to read it)"
        )
    return version


def result_path(path: str | Path) -> Path:
    """The result.json of ``path``: a run directory's, or ``path`` itself when it is not a directory."""
    p = Path(path)
    return p / RESULT_FILE if p.is_dir() else p


def read_result(path: str | Path) -> dict[str, Any]:
    """A run's result.json as a dict (README "Where results go"), version-checked.

    Args:
        path: a run directory, or its result.json. Release-0.1 files (no ``format_version``) are
            read as version 1.

    Raises:
        RunDirError: no result.json (the message says when the run was interrupted and can be
            resumed), unreadable, not JSON, not a promptevolver result, or of a newer format.
    """
    file = result_path(path)
    if not file.is_file():
        raise RunDirError(_no_result(Path(path), file))
    data = read_json(file, what="result")
    if not isinstance(data, dict):
        raise RunDirError(f"{file}: not a promptevolver result (expected a JSON object)")
    check_format_version(data, file)
    bad = [key for key, kind in _RESULT_KEYS.items() if not isinstance(data.get(key), kind)]
    if bad:
        raise RunDirError(f"{file}: not a promptevolver result (no valid {', '.join(bad)})")
    return data


def _no_result(given: Path, file: Path) -> str:
    """Why ``file`` (the result.json of ``given``, a run directory or a file) cannot be read."""
    if file.exists():
        return f"{file}: {not_a_file(file)}"
    if not given.exists():
        return f"{given}: not found (a run directory holds the {RESULT_FILE} that optimize writes)"
    if (file.parent / CHECKPOINT_FILE).is_file():
        return (
            f"{file}: not found; the run in {file.parent} did not finish "
            f"(continue it with: promptevolver optimize --resume {file.parent})"
        )
    return f"{given}: not a run directory (no {RESULT_FILE} in it)"


def read_config(
    run_dir: str | Path, *, edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> RunConfig:
    """The run config of a run directory (its config.yaml), validated.

    Args:
        edit: changes the parsed mapping before validation (``--set`` overrides on ``--resume``).

    Raises:
        RunDirError: ``run_dir`` has no config.yaml (it is not a run directory).
        ConfigError: the config.yaml is not valid (naming file and key path).
    """
    from promptevolver.config import load_run_config

    directory = Path(run_dir)
    if not (directory / CONFIG_FILE).is_file():
        raise RunDirError(f"{directory}: not a run directory (no {CONFIG_FILE} in it)")
    return load_run_config(directory / CONFIG_FILE, edit=edit)


def metric_config_near(path: str | Path) -> MetricConfig | None:
    """The ``metric`` block of the run's config.yaml next to ``path`` (a run directory or a file
    in one); None when there is no config.yaml.

    Raises:
        ConfigError: the config.yaml exists but its metric block is missing or invalid.
    """
    from pydantic import ValidationError

    from promptevolver.config import MetricConfig, format_validation_error

    found = _config_near(path)
    if found is None:
        return None
    config, raw = found
    try:
        return MetricConfig.model_validate((raw if isinstance(raw, dict) else {}).get("metric"))
    except ValidationError as exc:
        message = format_validation_error(exc, f"{config}: metric", model=MetricConfig)
        raise ConfigError(message.replace("\n", "; ")) from exc


def prompt_name_near(path: str | Path) -> str | None:
    """The judge's ``prompt_name`` recorded in the run's config.yaml next to ``path`` (a run
    directory or a file in one); None without a config.yaml or a recorded name.

    Raises:
        ConfigError: the config.yaml is not valid YAML.
    """
    found = _config_near(path)
    raw = None if found is None else found[1]
    name = raw.get("prompt_name") if isinstance(raw, dict) else None
    return name if isinstance(name, str) and name else None


def _config_near(path: str | Path) -> tuple[Path, Any] | None:
    """The config.yaml next to ``path`` (a run directory or a file in one) and its parsed YAML;
    None when there is none.

    Raises:
        ConfigError: it is not valid YAML.
    """
    import yaml

    p = Path(path)
    config = (p if p.is_dir() else p.parent) / CONFIG_FILE
    if not config.is_file():
        return None
    try:
        return config, yaml.safe_load(config.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{config}: not valid YAML: {exc}") from exc


# --- the chosen judge ----------------------------------------------------------------------------

#: What a chosen judge's record says when the simulated LLM judged (``ChosenJudge.dry_run``): shown
#: wherever its instruction is printed or exported.
DRY_RUN_NOTE = (
    "dry run: chosen on the simulated LLM (llm.provider fake), not on a model; its figures show "
    "the pipeline on these annotations, not a judge to ship (an llm: block in the config runs it "
    "on a model)"
)
_POLICIES = ("none", "static", "retrieval")


@dataclass(frozen=True)
class ChosenJudge:
    """The judge a run chose, as one record: what it is told, what it is shown, what it scored,
    on which model. Every export and every consumer of a chosen judge reads this record
    (:func:`read_chosen_judge`), so what is shipped is what was chosen.

    Attributes:
        instructions: prompt name → instruction (at least one).
        examples: its teaching examples, the ``examples`` block of ``result.json``: ``policy``
            (``none``, ``static`` or ``retrieval``) and, unless ``none``, ``key`` and ``store``
            (:meth:`ExampleStore.to_dict <promptevolver.judge._examples.ExampleStore.to_dict>`:
            the pool samples themselves, so the record judges without the run's dataset).
        metric: the metric's name; None when the file does not say (a plain mapping).
        figures: what it was chosen on, ``{}`` when unknown: ``loss`` (result.json's ``loss``:
            ``name``, ``metric``, ``higher_is_better``), ``train`` and ``validation`` (the chosen
            judge's figures, as result.json's ``scores.best``; None where not measured),
            ``cross_validated`` (small data refit on every annotation: its honest figure; absent
            otherwise), ``seed`` (the seed's figures of those), ``regime`` (``held-out`` or
            ``out-of-bag``),
            ``samples`` (``train`` and ``validation`` counts), ``candidate`` (its lineage id) and
            ``produced_by`` (the stage that made it).
        model: the judge model it was verified on: ``provider`` (``simulated``, ``openai``...)
            and ``model`` (None for the simulated LLM); None when not recorded.
        simulated_llm: True when the simulated LLM judged (a dry run, :attr:`dry_run`), False
            when a model did, None when the file does not say.
        source: the file it was read from (None when made from a result in memory).
    """

    instructions: Mapping[str, str]
    examples: Mapping[str, Any] = field(default_factory=lambda: {"policy": "none"})
    metric: str | None = None
    figures: Mapping[str, Any] = field(default_factory=dict)
    model: Mapping[str, Any] | None = None
    simulated_llm: bool | None = None
    source: Path | None = field(default=None, compare=False)

    @property
    def example_policy(self) -> str:
        """``none``, ``static`` or ``retrieval``."""
        return str(self.examples.get("policy", "none"))

    @property
    def has_examples(self) -> bool:
        """Whether the judge is shown teaching examples (its policy is not ``none``)."""
        return self.example_policy != "none"

    @property
    def dry_run(self) -> bool:
        """True when the simulated LLM judged: the record is a dry run, not a judge to ship."""
        return self.simulated_llm is True

    def to_dict(self) -> dict[str, Any]:
        """The record as ``best_instructions.json`` holds it (``format_version`` first; read
        back by :func:`read_chosen_judge`)."""
        out: dict[str, Any] = {FORMAT_VERSION_KEY: FORMAT_VERSION, "metric": self.metric}
        if self.dry_run:
            out["dry_run"] = DRY_RUN_NOTE
        out |= {
            "simulated_llm": self.simulated_llm,
            "model": dict(self.model) if self.model is not None else None,
            "figures": dict(self.figures),
            "instructions": dict(self.instructions),
            "examples": dict(self.examples),
        }
        return out

    @classmethod
    def from_result(cls, result: Mapping[str, Any], *, source: Path | None = None) -> ChosenJudge:
        """The chosen judge of a result (result.json parsed, or ``OptimizationResult.to_dict()``).

        Raises:
            RunDirError: no best instructions, or an ``examples`` block that is not one (naming
                ``source``).
        """
        where = source if source is not None else "the result"
        instructions = _instruction_map(result.get("best_instructions"), where)
        scores, loss, split = (_mapping(result.get(key)) for key in ("scores", "loss", "split"))
        best, seed = _mapping(scores.get("best")), _mapping(scores.get("seed"))
        figures: dict[str, Any] = {}
        if best or seed:
            figures = {
                "loss": dict(loss),
                "train": best.get("train"),
                "validation": best.get("validation"),
                # small data: a refit's honest figure, and the folds it was cross-validated over
                **(
                    {
                        "cross_validated": best["cross_validated"],
                        "folds": (result.get("final_choice") or {}).get("folds"),
                    }
                    if "cross_validated" in best
                    else {}
                ),
                "seed": {k: v for k, v in seed.items() if k in ("train", "validation", "cross_validated")},
                "regime": split.get("regime", "held-out"),
                "samples": {k: split.get(k) for k in ("train", "validation")},
                "candidate": result.get("best_id"),
                "produced_by": result.get("produced_by"),
            }
        simulated = result.get("simulated_llm")
        model = result.get("judge_model")
        return cls(
            instructions=instructions,
            examples=_examples_block(result.get("examples"), where),
            metric=result.get("metric") if isinstance(result.get("metric"), str) else None,
            figures=figures,
            model=dict(model) if isinstance(model, Mapping) else None,
            simulated_llm=simulated if isinstance(simulated, bool) else None,
            source=source,
        )


def read_chosen_judge(path: str | os.PathLike[str]) -> ChosenJudge:
    """The chosen judge behind ``path``: the one reader every export and consumer uses.

    Args:
        path: a run directory (its result.json, else its best_instructions.json), a result.json
            or best_so_far.json (version-checked), a ``best_instructions.json`` (the record
            :meth:`ChosenJudge.to_dict` writes), or a plain JSON object prompt name → instruction
            (strings; no examples, figures, model: those are None or empty).

    Raises:
        ConfigError: missing or unreadable file, not JSON, of a newer format, or none of those
            shapes; the message names the file.
    """
    try:
        file = _instructions_file(Path(path))
        data = read_json(file, what="instructions file")
        if isinstance(data, dict) and data.get("kind") == "metrics":  # a job: each metric's own
            folders = ", ".join(str(file.parent / n) for n in sorted(data.get("metrics") or {}))
            raise RunDirError(
                f"{file}: a job of several metrics chose one judge per metric: pass a metric's "
                f"folder ({folders}), or the job's config to evaluate them all"
            )
        if isinstance(data, dict) and isinstance(data.get("best_instructions"), dict):
            check_format_version(data, file)
            return ChosenJudge.from_result(data, source=file)
        if isinstance(data, dict) and isinstance(data.get("instructions"), dict):
            check_format_version(data, file)
            return _from_record(data, file)
        return ChosenJudge(instructions=_instruction_map(data, file), source=file)
    except RunDirError as exc:
        raise ConfigError(str(exc)) from exc


def _from_record(data: Mapping[str, Any], file: Path) -> ChosenJudge:
    """A :class:`ChosenJudge` from its :meth:`~ChosenJudge.to_dict` form."""
    simulated, model, figures = data.get("simulated_llm"), data.get("model"), data.get("figures")
    metric = data.get("metric")
    return ChosenJudge(
        instructions=_instruction_map(data["instructions"], file),
        examples=_examples_block(data.get("examples"), file),
        metric=metric if isinstance(metric, str) else None,
        figures=dict(figures) if isinstance(figures, Mapping) else {},
        model=dict(model) if isinstance(model, Mapping) else None,
        simulated_llm=simulated if isinstance(simulated, bool) else None,
        source=file,
    )


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _instruction_map(data: Any, where: object) -> dict[str, str]:
    if not isinstance(data, dict) or not data or not all(isinstance(v, str) for v in data.values()):
        raise RunDirError(
            f"{where}: expected a run directory, a result.json, a best_instructions.json or a JSON "
            "object of prompt name → instruction (strings)"
        )
    return {str(k): v for k, v in data.items()}


def _examples_block(block: Any, where: object) -> dict[str, Any]:
    """A chosen judge's examples block, checked: ``{"policy": "none"}`` when absent."""
    if block is None:
        return {"policy": "none"}
    if not isinstance(block, dict) or block.get("policy") not in _POLICIES:
        raise RunDirError(f"{where}: 'examples' must be an object with a policy none, static or retrieval")
    if block["policy"] != "none" and not isinstance(block.get("store"), dict):
        raise RunDirError(f"{where}: examples.store is missing for policy {block['policy']!r}")
    return dict(block)


def as_chosen_judge(given: Any) -> ChosenJudge:
    """A :class:`ChosenJudge` from what a user hands to ``apply_chosen``: a record as it is, an
    ``OptimizationResult`` (its ``chosen_judge()``), a path (:func:`read_chosen_judge`), or a
    plain mapping of instructions (no examples).

    Raises:
        TypeError: none of those.
        ConfigError: the path holds no chosen judge (the message names the file).
    """
    if isinstance(given, ChosenJudge):
        return given
    if isinstance(given, str | os.PathLike):
        return read_chosen_judge(given)
    made = getattr(given, "chosen_judge", None)
    if callable(made):
        record = made()
        if isinstance(record, ChosenJudge):
            return record
    if isinstance(given, Mapping):
        return ChosenJudge(instructions=_instruction_map(dict(given), "the instructions"))
    raise TypeError(
        "a chosen judge is a ChosenJudge, an OptimizationResult, a mapping of prompt name to "
        "instruction, or the path of a run directory, result.json or best_instructions.json; "
        f"got {type(given).__name__}"
    )


def load_instructions(path: str | os.PathLike[str]) -> dict[str, str]:
    """Prompt name → instruction of the chosen judge behind ``path`` (:func:`read_chosen_judge`:
    a run directory, a result.json, a best_instructions.json or a plain JSON mapping).

    Raises:
        ConfigError: as :func:`read_chosen_judge`.
    """
    return dict(read_chosen_judge(path).instructions)


def load_examples(path: str | Path) -> dict[str, Any]:
    """The teaching examples of the chosen judge behind ``path`` (:func:`read_chosen_judge`):
    its example policy and store; ``{"policy": "none"}`` for a plain instructions file or a
    result written before examples existed.

    Raises:
        ConfigError: as :func:`read_chosen_judge`.
    """
    return dict(read_chosen_judge(path).examples)


def as_instructions(given: Mapping[str, str] | str | os.PathLike[str]) -> Mapping[str, str]:
    """Prompt name → instruction from what a user hands to ``set_instructions`` or ``write_back``:
    a mapping (an ``OptimizationResult`` is one) as it is, a path read by :func:`load_instructions`.

    Raises:
        TypeError: neither a mapping nor a path (a path string is never iterated as prompt names).
        ConfigError: the path holds no readable instructions (the message names the file).
    """
    if isinstance(given, str | os.PathLike):
        return load_instructions(given)
    if isinstance(given, Mapping):
        return given
    raise TypeError(
        "instructions must be a mapping of prompt name to instruction (e.g. an OptimizationResult) "
        f"or the path of a run directory, result.json or best_instructions.json; got {type(given).__name__}"
    )


def _instructions_file(path: Path) -> Path:
    """The file to read for ``path``: itself, or a run directory's result.json."""
    if path.is_dir():
        for name in (RESULT_FILE, BEST_INSTRUCTIONS_FILE):
            if (path / name).is_file():
                return path / name
        raise RunDirError(f"{path}: no {RESULT_FILE} or {BEST_INSTRUCTIONS_FILE} in this directory")
    if not path.is_file():
        said = not_a_file(path)  # a fifo or a device is said so; nothing there, as main says it
        if said == "not found":
            said = "not found (no run directory or judge file there)"
        raise RunDirError(f"{path}: instructions file {said}")
    return path
