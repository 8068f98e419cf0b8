"""The run directory: every file name, every writer's atomicity and every reader, in one place.

An ``optimize`` run leaves::

    DIR/config.yaml               the effective run config, written first
    DIR/checkpoint.json           the search state after the last finished step (for --resume)
    DIR/best_so_far.json          best train candidate at the last checkpoint
    DIR/result.json               the result contract (README "Where results go")
    DIR/report.md, report.html    the run report; DIR/plots/ its plots
    DIR/best_instructions.json    prompt name → best instruction
    DIR/apply_best.py             a snippet that applies them

Every file is written atomically (:func:`write_atomic`: a temporary file in the same folder,
fsync, rename), so an interruption or a full disk never leaves a half-written file, and no
temporary file is left behind when a write fails. Readers check :data:`FORMAT_VERSION` where a
file carries one and raise :class:`~promptevolver.errors.RunDirError` naming the file.

This module is a low layer: it depends on :mod:`promptevolver.errors` and the config models only,
so any layer (the judge's ``from_result`` included) may read a run directory through it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from promptevolver.errors import RunDirError

__all__ = [
    "APPLY_SNIPPET_FILE",
    "BEST_INSTRUCTIONS_FILE",
    "BEST_SO_FAR_FILE",
    "CHECKPOINT_FILE",
    "CONFIG_FILE",
    "FORMAT_VERSION",
    "PLOTS_DIR",
    "REPORT_HTML",
    "REPORT_MD",
    "RESULT_FILE",
    "read_json",
    "write_atomic",
    "write_json",
]

CONFIG_FILE = "config.yaml"
CHECKPOINT_FILE = "checkpoint.json"
BEST_SO_FAR_FILE = "best_so_far.json"
RESULT_FILE = "result.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
PLOTS_DIR = "plots"
BEST_INSTRUCTIONS_FILE = "best_instructions.json"
APPLY_SNIPPET_FILE = "apply_best.py"
#: Version of the run-directory formats written by this release (result.json, checkpoint.json).
FORMAT_VERSION = 2


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text is UTF-8 encoded) to ``path`` atomically; return the path.

    The bytes go to a temporary file in the same folder, are flushed to disk (fsync) and renamed
    over ``path``: readers see the old file or the new one, never a mix. On any failure (a full
    disk, an interrupt) the temporary file is removed and the old file is left untouched.

    Raises:
        OSError: the folder cannot be created or the file cannot be written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def write_json(path: str | Path, data: Any, *, indent: int | None = None) -> Path:
    """Write ``data`` as UTF-8 JSON atomically (see :func:`write_atomic`); return the path."""
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    return write_atomic(path, text + "\n" if indent is not None else text)


def read_json(path: str | Path, *, what: str = "file") -> Any:
    """Parse a JSON file of a run directory.

    Args:
        what: what the file is, for the error message (``"checkpoint"``, ``"result"``...).

    Raises:
        RunDirError: missing, unreadable or invalid JSON; the message names the file.
    """
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RunDirError(f"{p}: no {what} here") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{p}: cannot read the {what} ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{p}: the {what} is not valid JSON (line {exc.lineno}: {exc.msg})") from exc
