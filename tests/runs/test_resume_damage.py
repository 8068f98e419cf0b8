"""Issue 31, items 3 and 4: a run stays resumable whatever a crash, a full disk or a hand did to
its files. A torn journal line (also in the middle of a UTF-8 character) is skipped and only it;
a damaged or hand-edited checkpoint is one line naming the field, never an internal error; a
config.yaml edited between runs is refused on resume."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptevolver import rundir
from promptevolver.cli import main
from promptevolver.config._models import load_run_config
from promptevolver.llm._journal import Journal, read_lines
from promptevolver.runs._optimize import execute
from promptevolver.runs._resume import resume_point

from ..rundirs import SYNTHETIC, interrupt_after, optimize_into

SMALL = {**SYNTHETIC, "optimizer": {**SYNTHETIC["optimizer"], "generations": 1}}


def _records(n: int) -> list[dict[str, Any]]:
    """Journal records with multi-byte answers (CJK, accents, an emoji), as a run writes them."""
    texts = ["正确。答案与参考一致", '{"verdict": 1, "reason": "réponse exacte 👍"}', "нет", "ok"]
    return [
        {"key": f"{i:064x}", "op": "judge", "text": texts[i % len(texts)], "pt": 10 + i, "ct": 3}
        for i in range(n)
    ]


def _encoded(records: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(r, ensure_ascii=False).encode("utf-8") for r in records]


def _tears(line: bytes) -> Iterator[bytes]:
    """``line`` cut at every byte (also inside a UTF-8 character)."""
    for cut in range(1, len(line)):
        yield line[:cut]


@pytest.mark.parametrize("merged", [False, True], ids=["torn-then-newline", "torn-then-next-line"])
def test_a_line_torn_anywhere_loses_that_line_only(tmp_path: Path, merged: bool) -> None:
    """Every cut of a line in the middle of the journal: the lines before and after it are read;
    a record written right after a tear (no newline between) is recovered too."""
    records = _records(5)
    lines = _encoded(records)
    path = tmp_path / rundir.JOURNAL_FILE
    for torn in _tears(lines[2]):
        glue = b"" if merged else b"\n"
        path.write_bytes(b"\n".join(lines[:2]) + b"\n" + torn + glue + b"\n".join(lines[3:]) + b"\n")
        assert read_lines(path) == records[:2] + records[3:], torn


def test_garbage_undecodable_bytes_and_wrong_fields_in_the_middle_are_skipped(tmp_path: Path) -> None:
    records = _records(4)
    lines = _encoded(records)
    junk = [
        b"\x00\x00garbage",
        b"\xff\xfe not utf-8",
        b'{"key": 7, "op": "judge", "text": "x", "pt": 1, "ct": 1}',  # a key that is no key
        b'{"key": "k", "op": "judge", "text": "x", "pt": -1, "ct": 1}',  # negative tokens
        b'{"key": "k", "op": "judge", "text": null, "pt": 1, "ct": 1}',
        b'{"key": "k", "op": "judge", "failed": 3}',
        b"[1, 2, 3]",
        b"",
    ]
    path = tmp_path / rundir.JOURNAL_FILE
    path.write_bytes(b"\n".join([lines[0], *junk, lines[1], lines[2], *junk, lines[3]]) + b"\n")
    assert read_lines(path) == records
    journal = Journal(path, fresh=False)  # a resume keeps them and rewrites the file clean
    journal.close()
    assert path.read_bytes() == b"\n".join(lines) + b"\n"


def test_a_journal_that_is_no_regular_file_is_one_clear_error(tmp_path: Path) -> None:
    from promptevolver.errors import RunDirError

    fifo = tmp_path / rundir.JOURNAL_FILE
    os.mkfifo(fifo)
    with pytest.raises(RunDirError, match="is a fifo, not a regular file"):
        read_lines(fifo)


# -- end to end: an interrupted run, its journal torn by a full disk ----------------------------------


@pytest.fixture
def interrupted(tmp_path: Path) -> Path:
    config = tmp_path / "small.yaml"
    config.write_text(yaml.safe_dump(SYNTHETIC))
    directory = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        execute(load_run_config(config), directory, callbacks=[interrupt_after(40)])  # of the run's 95 calls
    return directory


def test_a_journal_torn_mid_character_by_a_full_disk_still_resumes_replaying_every_whole_line(
    interrupted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stop line said "continue with --resume"; every resume then failed with "internal
    error: UnicodeDecodeError". Now the torn line alone is lost."""
    path = interrupted / rundir.JOURNAL_FILE
    whole = resume_point(interrupted).journaled
    assert whole > 0
    lines = path.read_bytes().splitlines()
    cjk = json.dumps(_records(1)[0], ensure_ascii=False).encode("utf-8")
    torn = cjk[: cjk.index("确".encode()) + 1]  # cut inside a three-byte character
    path.write_bytes(b"\n".join([*lines[:3], b"\x00garbage\xff", *lines[3:], torn]))
    assert resume_point(interrupted).journaled == whole
    assert main(["optimize", "--resume", str(interrupted), "-q"]) == 0
    assert "internal error" not in capsys.readouterr().err
    assert (interrupted / rundir.RESULT_FILE).is_file()


# -- a damaged checkpoint ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return optimize_into(tmp_path_factory.mktemp("damage") / "run", SMALL)


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``."""
    if isinstance(value, bool | int | float):
        return "x"
    if isinstance(value, str):
        return 7
    if isinstance(value, dict):
        return [1]
    if isinstance(value, list):
        return {"a": 1}
    return "x"


def _fields(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every field of a checkpoint down to a candidate's score and a judgement of the memo."""
    state, candidate = data["state"], data["state"]["candidates"][0]
    paths: list[tuple[Any, ...]] = [(k,) for k in data]
    paths += [("state", k) for k in state]
    paths += [("state", "candidates", 0, k) for k in candidate]
    paths += [("state", "candidates", 0, "train", k) for k in candidate["train"]]
    paths += [("state", "usage_before", k) for k in state["usage_before"]]
    paths += [("memo", 0, i) for i in range(3)] + [("memo", 0, 2, k) for k in data["memo"][0][2]]
    return paths


def test_every_field_of_a_checkpoint_damaged_is_one_line_or_a_resume_never_an_internal_error(
    tmp_path: Path, finished: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each field set to a value of another type, then to null: the resume either goes on (the
    value is one the field may hold) or stops with one error line; never "internal error"."""
    data = json.loads((finished / rundir.CHECKPOINT_FILE).read_text())
    refused = 0
    for path in _fields(data):
        for kind in ("wrong", "null"):
            damaged = json.loads(json.dumps(data))
            node = damaged
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = _wrong(node[path[-1]]) if kind == "wrong" else None
            run = tmp_path / "run"
            shutil.rmtree(run, ignore_errors=True)
            shutil.copytree(finished, run)
            (run / rundir.CHECKPOINT_FILE).write_text(json.dumps(damaged))
            code = main(["optimize", "--resume", str(run), "--set", "optimizer.generations=2", "-q"])
            err = capsys.readouterr().err
            said = [line for line in err.splitlines() if line.strip()]
            assert code in (0, 1) and "internal error" not in err and "Traceback" not in err, (
                path,
                kind,
                err,
            )
            if code == 1:
                refused += 1
                assert len(said) == 1 and said[0].startswith("promptevolver: error: "), (path, kind, err)
    assert refused >= len(_fields(data))  # most damage is refused, not run with


# -- config.yaml edited between runs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [("llm.noise", 0.3), ("llm.temperature", 0.9), ("metric.definition", "Is it polite?")],
)
def test_a_config_yaml_edited_after_the_run_is_refused_on_resume_naming_the_key(
    tmp_path: Path, finished: Path, capsys: pytest.CaptureFixture[str], key: str, value: Any
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    config = yaml.safe_load((run / rundir.CONFIG_FILE).read_text())
    section, name = key.split(".")
    config[section][name] = value
    (run / rundir.CONFIG_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert main(["optimize", "--resume", str(run), "--set", "optimizer.generations=2", "-q"]) == 1
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "was edited after the run wrote it" in line and key in line, line
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_an_edit_that_only_extends_the_search_still_resumes(tmp_path: Path, finished: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    config = yaml.safe_load((run / rundir.CONFIG_FILE).read_text())
    config["optimizer"]["generations"] = 2
    (run / rundir.CONFIG_FILE).write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["optimize", "--resume", str(run), "-q"]) == 0


def test_a_full_disk_stops_the_journal_once_and_calls_in_flight_are_dropped_quietly(tmp_path: Path) -> None:
    """The first failed write raises (the run stops, naming the file); answers of calls still in
    flight, and any arriving after the run closed the journal, are not written and raise nothing
    (they printed 'I/O operation on closed file' tracebacks; they are asked again on resume)."""
    import errno

    from promptevolver.llm._base import Completion

    journal = Journal(tmp_path / rundir.JOURNAL_FILE, fresh=True)
    journal.record("a" * 64, "judge", Completion("ok", 1, 1))

    class Full:
        closed = False

        def write(self, text: str) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None:
            pass

        def close(self) -> None:
            self.closed = True

    real = journal._file
    journal._file = Full()  # type: ignore[assignment]
    with pytest.raises(OSError, match="No space left") as info:
        journal.record("b" * 64, "judge", Completion("ok", 1, 1))
    assert info.value.filename == str(tmp_path / rundir.JOURNAL_FILE)
    journal.record("c" * 64, "judge", Completion("ok", 1, 1))  # in flight: dropped, no error
    journal._file = real
    journal.close()
    journal.record("d" * 64, "judge", Completion("ok", 1, 1))  # after close: dropped, no error
    assert [line["key"][0] for line in read_lines(tmp_path / rundir.JOURNAL_FILE)] == ["a"]
