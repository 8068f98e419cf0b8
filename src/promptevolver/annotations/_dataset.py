"""A minimal Ragas evaluation dataset: :class:`SingleTurnSample` and :class:`EvaluationDataset`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator

from promptevolver.annotations._io import _located
from promptevolver.annotations._models import _normalized


class SingleTurnSample(BaseModel):
    """One single-turn evaluation sample: the fields of ``ragas.dataset_schema.SingleTurnSample``
    that judges read. Other libraries' field names are renamed (:data:`FIELD_ALIASES`) and a string
    context becomes a one-element list. Extra fields are kept (Ragas drops them)."""

    model_config = ConfigDict(extra="allow")

    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    reference_contexts: list[str] | None = None
    response: str | None = None
    multi_responses: list[str] | None = None
    reference: str | None = None
    rubrics: dict[str, str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalize(cls, value: Any) -> Any:
        return _normalized(value)

    def get_features(self) -> list[str]:
        """Names of the fields that are set (not None), extra fields included."""
        return [name for name, value in self.to_dict().items() if value is not None]

    def to_dict(self) -> dict[str, Any]:
        """The fields that are not None."""
        return self.model_dump(exclude_none=True)


_TURNS: TypeAdapter[list[SingleTurnSample]] = TypeAdapter(list[SingleTurnSample])


def _validate_turns(
    inputs: Sequence[Mapping[str, Any]], *, path: str | None, metric: str | None
) -> list[SingleTurnSample]:
    try:
        return _TURNS.validate_python(list(inputs))
    except ValidationError as exc:
        raise _located(exc, path=path, metric=metric, prefix="metric_input" if metric else "") from exc


class EvaluationDataset(BaseModel):
    """A list of single-turn samples: the part of ``ragas.dataset_schema.EvaluationDataset``
    that :meth:`SingleMetricAnnotation.to_evaluation_dataset` needs (no pandas, Hugging Face or
    CSV export; no multi-turn samples). Sized, iterable; an int index gives a sample, a slice a
    new dataset."""

    samples: list[SingleTurnSample]

    @classmethod
    def from_list(cls, data: Sequence[Mapping[str, Any]]) -> EvaluationDataset:
        """A dataset from a list of dicts (one per sample).

        Raises:
            AnnotationError: an item that is not a single-turn sample (names its index and field).
        """
        return cls(samples=_validate_turns(data, path=None, metric=None))

    def to_list(self) -> list[dict[str, Any]]:
        """One dict per sample, without None fields (as Ragas)."""
        return [sample.to_dict() for sample in self.samples]

    def features(self) -> list[str]:
        """Names of the fields set in any sample, in first-seen order."""
        return list(dict.fromkeys(name for sample in self.samples for name in sample.get_features()))

    def __repr__(self) -> str:
        return f"EvaluationDataset(features={self.features()}, len={len(self)})"

    def __len__(self) -> int:
        return len(self.samples)

    @overload
    def __getitem__(self, idx: int) -> SingleTurnSample: ...
    @overload
    def __getitem__(self, idx: slice) -> EvaluationDataset: ...
    def __getitem__(self, idx: int | slice) -> SingleTurnSample | EvaluationDataset:
        if isinstance(idx, slice):
            return EvaluationDataset(samples=self.samples[idx])
        return self.samples[idx]

    def __iter__(self) -> Iterator[SingleTurnSample]:  # type: ignore[override]
        return iter(self.samples)
