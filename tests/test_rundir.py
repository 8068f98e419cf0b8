"""The run directory's owner: atomic writes that never leave a half-written file or a temporary
one, the version-checked result reader, the config and instructions readers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from promptevolver import rundir
from promptevolver.errors import ConfigError, RunDirError

PROMPT = "single_turn_aspect_critic_prompt"
RESULT = {
    "metric": "m",
    "seed_instructions": {PROMPT: "seed"},
    "best_instructions": {PROMPT: "best"},
    "scores": {"seed": {"train": 0.5, "validation": 0.5}, "best": {"train": 0.75, "validation": 0.5}},
}


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- atomic writes ---------------------------------------------------------------------------------


def test_write_atomic_replaces_the_file_and_leaves_nothing_else(tmp_path):
    target = tmp_path / "sub" / "result.json"
    assert rundir.write_atomic(target, "old") == target
    rundir.write_atomic(target, b"new bytes")
    assert target.read_bytes() == b"new bytes"
    assert sorted(p.name for p in target.parent.iterdir()) == ["result.json"]


def test_text_written_in_pieces_is_the_joined_text_and_a_failure_midway_keeps_the_old_file(tmp_path):
    """write_jsonl streams its lines (a large samples.jsonl is never whole in memory): the file is
    the lines joined, and rows that fail half way leave the old file and no temporary one."""
    target = tmp_path / "samples.jsonl"
    rows = [{"i": i, "text": "日本語 ✓ \u2028"} for i in range(3)]
    rundir.write_jsonl(target, rows)
    assert target.read_text(encoding="utf-8") == "".join(
        json.dumps(r, ensure_ascii=False) + "\n" for r in rows
    )
    before = target.read_bytes()

    def broken():
        yield {"i": 0}
        raise KeyboardInterrupt  # Ctrl-C (or a row that cannot be encoded) half way

    with pytest.raises(KeyboardInterrupt):
        rundir.write_jsonl(target, broken())
    assert target.read_bytes() == before and _leftovers(tmp_path) == []


def test_a_failed_rename_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "result.json"
    target.write_text('{"old": true}')

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        rundir.write_json(target, {"new": True})
    assert json.loads(target.read_text()) == {"old": True}
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("failure", [KeyboardInterrupt(), OSError(28, "No space left on device")])
def test_an_interrupted_or_failed_flush_never_leaves_invalid_json(tmp_path, monkeypatch, failure):
    target = tmp_path / "result.json"
    rundir.write_json(target, {"old": True}, indent=2)

    def fail(fd):  # the new bytes are in the temporary file, not yet renamed: Ctrl-C or a full disk now
        raise failure

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(type(failure)):
        rundir.write_json(target, {"new": list(range(1000))}, indent=2)
    assert json.loads(target.read_text()) == {"old": True}
    assert _leftovers(tmp_path) == []


def test_write_result_stamps_the_format_version_first(tmp_path):
    path = rundir.write_result(tmp_path / "result.json", RESULT)
    text = path.read_text()
    assert text.endswith("}\n") and '\n  "metric": "m"' in text  # 2-space indent, newline at the end
    data = json.loads(text)
    assert next(iter(data)) == "format_version" and data["format_version"] == rundir.FORMAT_VERSION
    assert {k: v for k, v in data.items() if k != "format_version"} == RESULT


# --- the result reader -------------------------------------------------------------------------------


def test_read_result_takes_a_run_directory_or_its_file(tmp_path):
    rundir.write_result(tmp_path / "result.json", RESULT)
    assert rundir.read_result(tmp_path)["best_instructions"] == {PROMPT: "best"}
    assert rundir.read_result(tmp_path / "result.json") == rundir.read_result(tmp_path)


def test_a_release_0_1_result_without_a_version_is_read_as_version_1(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps(RESULT))
    data = rundir.read_result(tmp_path)
    assert rundir.check_format_version(data, tmp_path / "result.json") == 1
    assert data["scores"] == RESULT["scores"]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (rundir.FORMAT_VERSION + 1, f"format version {rundir.FORMAT_VERSION + 1} was written by a newer"),
        ("2", "format_version '2' is not a version number"),
        (0, "format_version 0 is not a version number"),
        (True, "format_version True is not a version number"),
    ],
)
def test_an_unknown_format_version_is_refused_naming_the_file(tmp_path, version, expected):
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"format_version": version, **RESULT}))
    with pytest.raises(RunDirError) as exc:
        rundir.read_result(tmp_path)
    assert str(exc.value).startswith(f"{path}: ") and expected in str(exc.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "the result is not valid JSON (line 1"),
        ("[1, 2]", "not a promptevolver result (expected a JSON object)"),
        (json.dumps({"metric": "m", "scores": {}}), "no valid seed_instructions, best_instructions"),
        (json.dumps({**RESULT, "best_instructions": "x"}), "no valid best_instructions"),
    ],
)
def test_a_broken_result_is_one_clear_error_naming_the_file(tmp_path, content, expected):
    (tmp_path / "result.json").write_text(content)
    with pytest.raises(RunDirError) as exc:
        rundir.read_result(tmp_path)
    assert str(exc.value).startswith(f"{tmp_path / 'result.json'}: ") and expected in str(exc.value)


def test_a_missing_result_says_whether_the_run_can_be_resumed(tmp_path):
    with pytest.raises(RunDirError, match=r"not a run directory \(no result.json in it\)"):
        rundir.read_result(tmp_path)
    missing = tmp_path / "runs" / "nothere"  # 'report runs/nothere' said "(is runs a run directory?)"
    with pytest.raises(
        RunDirError, match=r"nothere: not found \(a run directory holds the result.json"
    ) as exc:
        rundir.read_result(missing)
    assert str(exc.value).startswith(f"{missing}: ")
    (tmp_path / rundir.CHECKPOINT_FILE).write_text("{}")
    with pytest.raises(RunDirError, match=f"did not finish .*--resume {tmp_path}"):
        rundir.read_result(tmp_path)


# --- config and instructions -----------------------------------------------------------------------


def test_read_config_refuses_a_directory_that_is_not_a_run(tmp_path):
    with pytest.raises(RunDirError, match="not a run directory"):
        rundir.read_config(tmp_path / "nope")
    config = {"dataset": {"synthetic": {"n_samples": 40}}, "metric": {"name": "m", "definition": "d"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    assert rundir.read_config(tmp_path).metric.name == "m"
    edited = rundir.read_config(tmp_path, edit=lambda raw: {**raw, "random_seed": 9})
    assert edited.random_seed == 9


def test_metric_config_near_reads_the_metric_block_next_to_a_file(tmp_path):
    assert rundir.metric_config_near(tmp_path / "result.json") is None
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"metric": {"name": "m", "definition": "d"}}))
    assert rundir.metric_config_near(tmp_path / "result.json").definition == "d"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"metric": {"name": "m"}}))
    with pytest.raises(ConfigError, match="config.yaml: metric: definition"):
        rundir.metric_config_near(tmp_path)


def test_load_instructions_reads_results_checkpoint_snapshots_and_plain_mappings(tmp_path):
    rundir.write_result(tmp_path / "result.json", RESULT)
    assert rundir.load_instructions(tmp_path) == {PROMPT: "best"}
    best_so_far = tmp_path / rundir.BEST_SO_FAR_FILE
    best_so_far.write_text(json.dumps({"generation": 2, "best_instructions": {PROMPT: "so far"}}))
    assert rundir.load_instructions(best_so_far) == {PROMPT: "so far"}
    plain = tmp_path / "mine.json"
    plain.write_text(json.dumps({PROMPT: "mine"}))
    assert rundir.load_instructions(plain) == {PROMPT: "mine"}


def test_load_instructions_refuses_a_newer_result_as_a_config_error(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps({**RESULT, "format_version": rundir.FORMAT_VERSION + 1}))
    with pytest.raises(ConfigError, match="result.json: format version .* newer promptevolver"):
        rundir.load_instructions(tmp_path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "instructions file not found"),
        ("not json", "not valid JSON"),
        ("[1, 2]", "prompt name → instruction"),
        (json.dumps({PROMPT: 3}), "prompt name → instruction"),
        ("{}", "prompt name → instruction"),
    ],
)
def test_load_instructions_errors_name_the_file(tmp_path, content, expected):
    path = tmp_path / "instructions.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=expected) as exc:
        rundir.load_instructions(path)
    assert str(path) in str(exc.value)


def test_load_instructions_from_an_empty_directory_names_both_files(tmp_path):
    with pytest.raises(ConfigError, match="no result.json or best_instructions.json"):
        rundir.load_instructions(tmp_path)


def test_every_exported_name_exists_and_callables_are_documented():
    for name in rundir.__all__:
        obj = getattr(rundir, name)
        assert not callable(obj) or obj.__doc__, name
    names = [
        getattr(rundir, n)
        for n in rundir.__all__
        if n.isupper() and n.endswith(("_FILE", "_DIR", "_MD", "_HTML"))
    ]
    assert len(names) == len(set(names))  # one name per file, none defined twice
    assert all(f"DIR/{name}" in rundir.__doc__ or f" {name}" in rundir.__doc__ for name in names)


def test_leftover_temporary_files_of_a_kill_are_removed_and_nothing_else(tmp_path):
    """A SIGKILL mid-write leaves ``.NAME.xxxx.tmp`` beside an intact file: a resume (and
    --force) removes those of the run's own files, and leaves the user's files alone."""
    from promptevolver import rundir

    plots = tmp_path / rundir.PLOTS_DIR
    plots.mkdir()
    ours = [
        tmp_path / f".{rundir.BEST_INSTRUCTIONS_FILE}.k2j3.tmp",
        tmp_path / f".{rundir.RESULT_FILE}.a1b2.tmp",
        plots / ".scores.png.zz.tmp",
    ]
    theirs = [tmp_path / ".notes.txt.tmp", tmp_path / "mine.tmp", tmp_path / rundir.RESULT_FILE]
    for path in ours + theirs:
        path.write_text("x")
    assert sorted(rundir.remove_leftovers(tmp_path)) == sorted(ours)
    assert not any(p.exists() for p in ours) and all(p.exists() for p in theirs)
    assert rundir.remove_leftovers(tmp_path) == []


# --- file locks and modes --------------------------------------------------------------------------


def test_a_rewritten_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path):
    private = tmp_path / "labels.json"
    private.write_text("{}")
    private.chmod(0o600)
    rundir.write_atomic(private, "{}\n")
    assert private.stat().st_mode & 0o777 == 0o600
    old = os.umask(0o027)
    try:
        fresh = rundir.write_atomic(tmp_path / "new.json", "{}")
    finally:
        os.umask(old)
    assert fresh.stat().st_mode & 0o777 == 0o640


def test_a_second_holder_of_a_file_lock_is_refused_naming_the_first(tmp_path):
    target = tmp_path / "labels.json"  # need not exist
    with rundir.locked_file(target, use="reviewed") as lock:
        assert lock == rundir.file_lock_path(target) == tmp_path / ".labels.json.lock"
        assert json.loads(lock.read_text())["pid"] == os.getpid()
        with pytest.raises(RunDirError) as exc, rundir.locked_file(target, use="reviewed"):
            pass
        assert str(exc.value).startswith(f"{target} is being reviewed by another promptevolver process")
        assert f"pid {os.getpid()}" in str(exc.value)
    assert not lock.exists()
    with rundir.locked_file(target):  # free again
        pass


def test_a_file_lock_left_by_a_killed_holder_is_taken_over(tmp_path):
    import subprocess
    import sys

    target = tmp_path / "labels.json"
    code = (
        "import sys, time\n"
        "from promptevolver import rundir\n"
        f"with rundir.locked_file({str(target)!r}):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirError, match=f"pid {holder.pid}"), rundir.locked_file(target):
            pass
    finally:
        holder.kill()
        holder.wait()
    assert rundir.file_lock_path(target).exists()  # SIGKILL leaves the file, not the lock
    with rundir.locked_file(target) as lock:
        assert json.loads(lock.read_text())["pid"] == os.getpid()
