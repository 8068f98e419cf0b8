"""Ragas' evaluation dataset, single-turn: :class:`BaseSample`, :class:`SingleTurnSample` and
:class:`EvaluationDataset` with Ragas' methods (lists of dicts, JSONL, CSV, pandas, Hugging Face).

pandas and Hugging Face ``datasets`` are imported only by the methods that use them (installed
with Ragas; ``pip install pandas`` / ``datasets`` otherwise). Multi-turn samples are Ragas'
alone: promptevolver's judges and annotations are single-turn.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator

from promptevolver.annotations._io import _located, _write_jsonl, read_file
from promptevolver.annotations._models import _normalized
from promptevolver.rundir import write_atomic


class BaseSample(BaseModel):
    """Base of evaluation samples (Ragas' ``BaseSample``): the fields that are set, as a dict,
    a list of names or a text."""

    def to_dict(self) -> dict[str, Any]:
        """The fields that are not None."""
        return self.model_dump(exclude_none=True)

    def get_features(self) -> list[str]:
        """Names of the fields that are not None, extra fields included."""
        return list(self.to_dict())

    def to_string(self) -> str:
        """Each field that is set as ``\\nname:\\n\\tvalue\\n`` (Ragas' layout)."""
        return "".join(f"\n{key}:\n\t{value}\n" for key, value in self.to_dict().items())


class SingleTurnSample(BaseSample):
    """One single-turn evaluation sample: the fields of ``ragas.dataset_schema.SingleTurnSample``.
    Other libraries' field names are renamed (:data:`FIELD_ALIASES`) and a string context becomes
    a one-element list. Extra fields are kept (Ragas drops them)."""

    model_config = ConfigDict(extra="allow")

    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    reference_contexts: list[str] | None = None
    retrieved_context_ids: list[str | int] | None = None
    reference_context_ids: list[str | int] | None = None
    response: str | None = None
    multi_responses: list[str] | None = None
    reference: str | None = None
    rubrics: dict[str, str] | None = None
    persona_name: str | None = None
    query_style: str | None = None
    query_length: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalize(cls, value: Any) -> Any:
        return _normalized(value)


_TURNS: TypeAdapter[list[SingleTurnSample]] = TypeAdapter(list[SingleTurnSample])


def _validate_turns(
    inputs: Sequence[Mapping[str, Any]], *, path: str | Path | None, metric: str | None
) -> list[SingleTurnSample]:
    try:
        return _TURNS.validate_python(list(inputs))
    except ValidationError as exc:
        raise _located(exc, path=path, metric=metric, prefix="metric_input" if metric else "") from exc


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this needs {module}: pip install {module}") from exc


class EvaluationDataset(BaseModel):
    """A list of single-turn samples with Ragas' ``EvaluationDataset`` methods. Sized, iterable;
    an int index gives a sample, a slice a new dataset. ``backend`` and ``name`` are kept as
    given, as in Ragas.

    Raises:
        pydantic.ValidationError: a sample that is not a single-turn sample (a ValueError).
    """

    samples: list[SingleTurnSample]
    backend: str | None = None
    name: str | None = None

    # --- Ragas' conversions ---------------------------------------------------------------
    @classmethod
    def from_list(
        cls, data: Sequence[Mapping[str, Any]], backend: str | None = None, name: str | None = None
    ) -> EvaluationDataset:
        """A dataset from a list of dicts (one per sample).

        Raises:
            AnnotationError: an item that is not a single-turn sample (names its index and field).
        """
        return cls(samples=_validate_turns(data, path=None, metric=None), backend=backend, name=name)

    @classmethod
    def from_dict(
        cls, mapping: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]]
    ) -> EvaluationDataset:
        """A dataset from a list of dicts (what Ragas' ``from_dict`` takes) or a dict of
        equal-length columns (field name → one value per sample).

        Raises:
            AnnotationError: as :meth:`from_list`.
            ValueError: columns of different lengths.
        """
        if not isinstance(mapping, Mapping):
            return cls.from_list(mapping)
        lengths = {name: len(values) for name, values in mapping.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"columns of different lengths: {lengths}")
        n = next(iter(lengths.values()), 0)
        return cls.from_list([{name: values[i] for name, values in mapping.items()} for i in range(n)])

    def to_list(self) -> list[dict[str, Any]]:
        """One dict per sample, without None fields (as Ragas)."""
        return [sample.to_dict() for sample in self.samples]

    def to_jsonl(self, path: str | Path) -> None:
        """Write one sample a line (UTF-8, non-ASCII kept), as Ragas; :meth:`from_jsonl` reads it
        back as an equal dataset."""
        _write_jsonl(path, self.to_list())

    @classmethod
    def from_jsonl(cls, path: str | Path) -> EvaluationDataset:
        """The dataset of a JSONL file, one sample a line (blank lines skipped).

        Raises:
            AnnotationFileNotFoundError: no such file (also a FileNotFoundError).
            AnnotationError: invalid JSON (names the line) or a line that is not a single-turn
                sample (names the sample and field).
        """
        path = Path(path)
        return cls(samples=_validate_turns(read_file(path, jsonl=True), path=path, metric=None))

    def to_csv(self, path: str | Path) -> None:
        """Write a CSV file (UTF-8) with a header of :meth:`features`, one sample a row; a list or
        dict field is written as its JSON text (Ragas wrote Python's repr), an absent one empty.
        An empty dataset writes nothing, as in Ragas."""
        rows = self.to_list()
        if not rows:
            return
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, fieldnames=self.features())
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
        write_atomic(path, text.getvalue())  # atomically, never through a symbolic link

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row a sample (needs pandas)."""
        return _import("pandas").DataFrame(self.to_list())

    @classmethod
    def from_pandas(cls, dataframe: Any) -> EvaluationDataset:
        """The dataset of a DataFrame's rows (missing values as absent fields)."""
        rows = dataframe.to_dict(orient="records")
        return cls.from_list([{k: v for k, v in row.items() if not _missing(v)} for row in rows])

    def to_hf_dataset(self) -> Any:
        """A Hugging Face ``datasets.Dataset`` with a column per feature, None where a sample has
        none (needs datasets). Ragas' took the first sample's fields as the columns and dropped
        the other samples' silently."""
        features = self.features()
        rows = [{name: row.get(name) for name in features} for row in self.to_list()]
        return _import("datasets").Dataset.from_list(rows)

    @classmethod
    def from_hf_dataset(cls, dataset: Any) -> EvaluationDataset:
        """The dataset of a Hugging Face ``datasets.Dataset`` (None columns as absent fields)."""
        return cls.from_list([{k: v for k, v in row.items() if v is not None} for row in dataset.to_list()])

    # --- Ragas' inspection ----------------------------------------------------------------
    def validate_samples(self, samples: Sequence[SingleTurnSample]) -> list[SingleTurnSample]:
        """``samples`` as a list once each is a single-turn sample (Ragas checks one type).

        Raises:
            ValueError: a sample of another type, naming its index and type.
        """
        for index, sample in enumerate(samples):
            if not isinstance(sample, SingleTurnSample):
                expected = SingleTurnSample
                raise ValueError(f"Sample at index {index} is of type {type(sample)}, expected {expected}")
        return list(samples)

    def get_sample_type(self) -> type[SingleTurnSample]:
        """The type of the samples: always :class:`SingleTurnSample` here."""
        return SingleTurnSample

    def is_multi_turn(self) -> bool:
        """False: the samples are single-turn."""
        return False

    def features(self) -> list[str]:
        """Names of the fields set in any sample, in first-seen order (Ragas: the first sample's)."""
        return list(dict.fromkeys(name for sample in self.samples for name in sample.get_features()))

    def __repr__(self) -> str:
        return f"EvaluationDataset(features={self.features()}, len={len(self)})"

    __str__ = __repr__

    # --- Sequence protocol ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.samples)

    @overload
    def __getitem__(self, idx: int) -> SingleTurnSample: ...
    @overload
    def __getitem__(self, idx: slice) -> EvaluationDataset: ...
    def __getitem__(self, idx: int | slice) -> SingleTurnSample | EvaluationDataset:
        if isinstance(idx, slice):
            return EvaluationDataset(samples=self.samples[idx], backend=self.backend, name=self.name)
        return self.samples[idx]

    def __iter__(self) -> Iterator[SingleTurnSample]:  # type: ignore[override]
        return iter(self.samples)


def _cell(value: Any) -> Any:
    """A CSV cell: strings and numbers as they are, lists and dicts as their JSON text."""
    return value if isinstance(value, str | int | float) else json.dumps(value, ensure_ascii=False)


def _missing(value: Any) -> bool:
    """None or a float NaN (how pandas fills an absent field)."""
    return value is None or (isinstance(value, float) and value != value)
