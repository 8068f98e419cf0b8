"""Each stage's typed record (optimizers/_records.py): written to JSON and read back unchanged
(key order included: the checkpoint and result.json are byte-identical to what dicts wrote),
budget stops carried as typed values, and readers that see records, not keys."""

from __future__ import annotations

import json

import pytest

from promptevolver.config import load_run_config
from promptevolver.optimizers import (
    BudgetStop,
    CrossFitRecord,
    DistillRecord,
    ExamplesRecord,
    SearchRecord,
    StageCost,
    Stages,
    VerifyRecord,
)
from promptevolver.rundir import CHECKPOINT_FILE, RESULT_FILE
from promptevolver.runs import execute

from ..conftest import ROOT


@pytest.mark.parametrize(("name", "strategy"), [("answer_correctness", "auto"), ("helpfulness", "distill")])
def test_a_runs_records_read_back_as_they_were_written(name, strategy, tmp_path):
    config = load_run_config(ROOT / "configs" / f"{name}.yaml")
    optimizer = config.optimizer.model_copy(update={"strategy": strategy})
    execute(config.model_copy(update={"optimizer": optimizer}), tmp_path)
    written = json.loads((tmp_path / CHECKPOINT_FILE).read_text())["state"]["stages"]
    assert set(written) >= {"distill", "verify", "examples", "search"}
    again = Stages.from_dict(written).to_dict()
    assert json.dumps(again) == json.dumps(written)  # the same keys in the same order
    result = json.loads((tmp_path / RESULT_FILE).read_text())
    records = Stages.from_dict(result["stages"])
    assert records.verify is not None and 0 in records.verify.judged  # the seed is always judged
    assert records.verify.choice in {c["id"] for c in result["lineage"]}
    assert records.distill is not None and records.distill.cost.meta_calls == written["distill"]["meta_calls"]


def test_budget_stops_are_typed_and_survive_a_checkpoint():
    cost = StageCost(judge_calls=3)
    examples = ExamplesRecord(cost=cost, produced=(1,), why=BudgetStop.examples(40), budget_stop=True)
    search = SearchRecord.not_run(BudgetStop.search("a reason"), budget_stop=True)
    distill = DistillRecord(cost=cost, produced=(1,), stop={"all": BudgetStop.LADDER}, budget_stop=True)
    for record in (examples, search, distill):
        stages = Stages([record])
        assert stages.budget_stop
        assert Stages.from_dict(stages.to_dict()).budget_stop  # read back from JSON: still a budget stop
    calm = Stages(
        [
            DistillRecord(cost=cost, produced=(1,), stop={"all": "converged"}),
            VerifyRecord(cost=cost, produced=(1,), judged=(0, 1)),
            ExamplesRecord(cost=cost, produced=(1,), why="the verified candidate judges every sample"),
            CrossFitRecord.skipped("cross_fit off", 1),
            SearchRecord.not_run("strategy distill: no search"),
        ]
    )
    assert not calm.budget_stop and not Stages.from_dict(calm.to_dict()).budget_stop
    assert [r.name for r in calm] == ["distill", "verify", "examples", "cross_fit", "search"]


def test_a_record_is_frozen():
    record = VerifyRecord(produced=(2,))
    with pytest.raises(AttributeError):
        record.produced = (3,)  # type: ignore[misc]
    assert record.choice == 2


def test_every_stop_reason_reads_from_one_home():
    from promptevolver.optimizers.strategies import DEFAULT_STOP_CONDITIONS, STOP_REASONS

    reasons = {c.reason for c in DEFAULT_STOP_CONDITIONS} | {"distilled", BudgetStop.LADDER}
    assert reasons <= set(STOP_REASONS)
    assert all(w.line for w in STOP_REASONS.values())
