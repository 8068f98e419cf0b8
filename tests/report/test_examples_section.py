"""The report's "Teaching examples" section: the policy kept and why, prompt tokens per judge
call, the static set or the examples retrieved per validation sample, and later changes."""

from __future__ import annotations

import asyncio
import json

import yaml

from promptevolver import rundir
from promptevolver.judge._examples import ExampleStore
from promptevolver.report._data import load_run
from promptevolver.report._write import build_report
from promptevolver.runs.memory import update_examples

from ..helpers import make_dataset
from ..optimizers.test_examples_stage import DEFINITION, _llm, _optimize


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _run(tmp_path, *, helps: bool = True):
    ds = make_dataset(60, 24)
    result = _optimize(
        ds, _llm(ds, examples_help=helps), strategy="examples", examples={"policy": "retrieval"}
    )
    ds.to_json(tmp_path / "annotations.json")
    config = {
        "metric": {"name": ds.name, "definition": DEFINITION},
        "dataset": str(tmp_path / "annotations.json"),
        "llm": {"provider": "fake"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result.to_json(tmp_path / "result.json")
    return ds, result


def test_retrieval_lists_the_examples_each_validation_sample_is_shown(tmp_path):
    ds, result = _run(tmp_path)
    md = build_report(load_run(tmp_path)).markdown
    part = _section(md, "Teaching examples")
    assert "policy retrieval" in part and "prompt tokens per judge call" in part
    store = result.example_store()
    assert store is not None
    validation = result.split["validation_positions"]
    train = [p for p in store.positions if p not in validation]
    during = ExampleStore([ds.samples[p] for p in train], train, k=store.k)  # the run's pool
    for p in validation[:5]:
        row = next(line for line in part.splitlines() if line.startswith(f"| #{p} |")).split("|")
        for column, pool in ((3, during), (4, store)):
            shown = [f"#{q}" for q in pool.positions_for("retrieval", ds.samples[p].metric_input)]
            assert [x.split(" ")[0] for x in row[column].strip().split(", ")] == shown
    per_call = result.usage["prompt_tokens_per_call"]["judge"]
    assert f"{per_call:.1f}" in part
    assert "| examples |" in _section(md, "Pipeline: distill, verify, search")


def test_a_static_set_is_listed_with_the_humans_reasons(tmp_path):
    ds, result = _run(tmp_path)
    data = json.loads((tmp_path / "result.json").read_text())
    store = ExampleStore.from_dict(data["examples"]["store"])
    data["examples"]["policy"] = "static"
    data["examples"]["store"]["static"] = [0, 2]
    (tmp_path / "result.json").write_text(json.dumps(data))
    part = _section(build_report(load_run(tmp_path)).markdown, "Teaching examples")
    assert "same 2 examples" in part
    for i in (0, 2):
        reason = ds.samples[store.positions[i]].expected_output(next(iter(result.seed_instructions)))
        assert f"| #{store.positions[i]} |" in part and (reason or {}).get("reason", "—") in part


def test_no_example_kept_says_why_and_later_changes_are_listed(tmp_path):
    (tmp_path / "none").mkdir()
    _run(tmp_path / "none", helps=False)
    part = _section(build_report(load_run(tmp_path / "none")).markdown, "Teaching examples")
    assert "shown no teaching example" in part and "no example policy beat" in part
    run = tmp_path / "with"
    with rundir.locked(run):  # a run directory (marked as ours) before its files are written
        pass
    _run(run)
    pool = json.loads((run / "result.json").read_text())["examples"]["store"]["positions"]
    asyncio.run(update_examples(run, remove=pool[:3]))
    part = _section(build_report(load_run(run)).markdown, "Teaching examples")
    assert "+0 / -3" in part and f"{len(pool)} → {len(pool) - 3}" in part
