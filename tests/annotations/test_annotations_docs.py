"""The "Coming from Ragas" code of docs/ragas.md runs as written, from the repository root."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from promptevolver import SingleMetricAnnotation

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Coming from Ragas"


def ragas_section_code() -> list[str]:
    """The python blocks of docs/ragas.md's "Coming from Ragas" section (up to the next heading)."""
    text = (ROOT / "docs" / "ragas.md").read_text(encoding="utf-8")
    start = text.index(SECTION) + len(SECTION)
    end = re.search(r"^#{2,3} ", text[start:], flags=re.MULTILINE)  # "# " starts code comments
    section = text[start : start + end.start()] if end else text[start:]
    return re.findall(r"^```python\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)


def test_the_section_has_code_calling_the_annotation_api() -> None:
    blocks = ragas_section_code()
    assert blocks, "no python block in docs/ragas.md's Coming from Ragas section"
    code = "\n".join(blocks)
    assert "from ragas.dataset_schema import" in code  # the line a Ragas user replaces
    for call in ("from_json", "stratified_batches", "train_test_split"):
        assert call in code


def test_the_section_runs_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the docs' paths are relative to the repository root
    namespace: dict[str, Any] = {"__name__": "readme"}
    for block in ragas_section_code():
        exec(compile(block, "docs/ragas.md (Coming from Ragas)", "exec"), namespace)

    dataset = namespace["dataset"]
    assert isinstance(dataset, SingleMetricAnnotation)
    assert (dataset.name, len(dataset)) == ("answer_correctness", 18)
    assert namespace["accepted"].samples == [s for s in dataset if s.is_accepted]
    batches = namespace["batches"]
    flat = sorted(id(s) for batch in batches for s in batch)
    assert flat == sorted(id(s) for s in dataset)
    train, test = namespace["train"], namespace["test"]
    assert len(test) == round(0.3 * len(dataset)) and len(train) + len(test) == len(dataset)
