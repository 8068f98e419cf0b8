"""The annotation benchmark runs end to end (at a small size; the 20,000-sample run is manual)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from promptevolver import SingleMetricAnnotation

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "perf" / "annotations.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_annotations", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_synthetic_file_is_seeded_and_loads(bench: ModuleType, tmp_path: Path) -> None:
    first = bench.write_ragas_file(tmp_path / "a.json", 200, 7)
    second = bench.write_ragas_file(tmp_path / "b.json", 200, 7)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != bench.write_ragas_file(tmp_path / "c.json", 200, 8).read_bytes()
    dataset = SingleMetricAnnotation.from_json(first)
    assert len(dataset) == 200 and dataset.is_binary
    assert 0.05 < sum(not s.is_accepted for s in dataset) / 200 < 0.3
    raw = json.loads(first.read_text(encoding="utf-8"))["answer_correctness"]
    sizes = [len(json.dumps(item)) for item in raw]
    assert 1500 < float(np.median(sizes)) < 4500  # like the bundled files' samples


def test_benchmark_prints_its_table(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--samples", "300", "--repeat", "1", "--max-load-ratio", "1000"]) == 0
    out = capsys.readouterr().out
    for row in ("json.load (baseline)", "SingleMetricAnnotation.from_json", "labels()", "train_test_split"):
        assert row in out
