"""Human annotations of judge verdicts, in Ragas' annotation JSON format.

The classes mirror ``ragas.dataset_schema`` (PromptAnnotation, SampleAnnotation,
MetricAnnotation, SingleMetricAnnotation) so code written against Ragas works after changing the
import line. A Ragas export looks like::

    {"<metric name>": [
        {"metric_input": {...}, "metric_output": 1, "is_accepted": true, "target": null,
         "prompts": {"<prompt name>": {"prompt_input": {...}, "prompt_output": {...},
                                       "edited_output": null, "is_accepted": true}}}]}

**Human label** of a sample (DESIGN.md): ``target`` if present; else ``metric_output`` if the
sample is accepted; else, for a binary metric, ``1 - metric_output``; else none (the sample is not
usable). **Expected output** of a prompt: ``edited_output`` if present, else ``prompt_output`` when
the sample was accepted, else none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from promptevolver import sampling
from promptevolver.errors import AnnotationError

__all__ = [
    "FIELD_ALIASES",
    "MetricAnnotation",
    "PromptAnnotation",
    "SampleAnnotation",
    "SingleMetricAnnotation",
]

#: Metric-input field names of other evaluation libraries → Ragas' names.
FIELD_ALIASES: dict[str, str] = {
    "input": "user_input",
    "actual_output": "response",
    "expected_output": "reference",
    "retrieved_context": "retrieved_contexts",
    "expected_context": "reference_contexts",
}
_LIST_FIELDS = ("retrieved_contexts", "reference_contexts")


def normalize_metric_input(data: dict[str, Any]) -> dict[str, Any]:
    """Rename other libraries' field names to Ragas' and wrap a string context in a list."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = FIELD_ALIASES.get(key, key)
        if name in _LIST_FIELDS and isinstance(value, str):
            value = [value]
        out[name] = value
    return out


class PromptAnnotation(BaseModel):
    """One prompt's trace inside a sample: what it was given, what it answered, the human's edit.

    Extra keys (such as a prompt-level ``is_accepted``) are kept.
    """

    model_config = ConfigDict(extra="allow")

    prompt_input: dict[str, Any]
    prompt_output: dict[str, Any] | None = None
    edited_output: dict[str, Any] | None = None
    is_accepted: bool | None = None

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


class SampleAnnotation(BaseModel):
    """One judged sample: the metric's input and output, the human's verdict, the prompt traces.

    ``metric_output`` is a number (0/1 for a binary metric); ``target``, when given, overrides it
    as the human label.
    """

    model_config = ConfigDict(extra="allow")

    metric_input: dict[str, Any]
    metric_output: float
    prompts: dict[str, PromptAnnotation] = Field(default_factory=dict)
    is_accepted: bool
    target: float | None = None

    @field_validator("metric_input", mode="before")
    @classmethod
    def _normalize_input(cls, value: Any) -> Any:
        return normalize_metric_input(value) if isinstance(value, dict) else value

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields and key not in (self.model_extra or {}):
            raise KeyError(key)
        return getattr(self, key)

    def human_label(self, *, binary: bool) -> float | None:
        """The human label per DESIGN.md's rule; None when the sample has none."""
        if self.target is not None:
            return self.target
        if self.is_accepted:
            return self.metric_output
        if binary:
            return 1.0 - self.metric_output
        return None

    def expected_output(self, prompt_name: str) -> dict[str, Any] | None:
        """The human-approved output of ``prompt_name``: edited, else accepted, else None."""
        prompt = self.prompts.get(prompt_name)
        if prompt is None:
            return None
        if prompt.edited_output is not None:
            return prompt.edited_output
        return prompt.prompt_output if self.is_accepted else None


def _read_json(path: str | Path) -> Any:
    p = Path(path)
    if not p.is_file():
        raise AnnotationError("file not found", path=p)
    try:
        with p.open(encoding="utf-8") as fh:
            if p.suffix == ".jsonl":
                return [json.loads(line) for line in fh if line.strip()]
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise AnnotationError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path=p
        ) from exc
    except UnicodeDecodeError as exc:
        raise AnnotationError(f"not UTF-8 text ({exc.reason})", path=p) from exc


def _field_path(error: Any) -> str:
    return ".".join(str(part) for part in error["loc"]) or "<sample>"


def _parse_samples(raw: Any, *, path: str | Path | None, metric: str) -> list[SampleAnnotation]:
    if not isinstance(raw, list):
        raise AnnotationError(
            f"expected a list of samples, got {type(raw).__name__}", path=path, metric=metric
        )
    samples = []
    for index, item in enumerate(raw):
        try:
            samples.append(SampleAnnotation.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise AnnotationError(
                f"{first['msg']} (input: {str(first.get('input'))[:80]!r})",
                path=path,
                metric=metric,
                sample_index=index,
                field=_field_path(first),
            ) from exc
    return samples


class SingleMetricAnnotation(BaseModel):
    """The annotated samples of one metric. Sequence-like: ``len``, indexing, iteration.

    Sampling methods take ``random_seed`` (an int or a ``numpy.random.Generator``); ``None``
    gives a non-reproducible draw, as in Ragas.
    """

    name: str
    samples: list[SampleAnnotation]
    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        """The file this set was loaded from (None when built in memory); used in error messages."""
        return self._source

    def _from(self, source: str | Path | None) -> SingleMetricAnnotation:
        self._source = None if source is None else str(source)
        return self

    def __eq__(self, other: object) -> bool:
        """Equal name and samples; the source file is provenance, not content."""
        if not isinstance(other, SingleMetricAnnotation):
            return NotImplemented
        return self.name == other.name and self.samples == other.samples

    # --- Loading and saving -------------------------------------------------------------
    @classmethod
    def from_json(cls, path: str | Path, metric_name: str | None = None) -> SingleMetricAnnotation:
        """Load a ``{"name", "samples"}`` file, or one metric of a Ragas multi-metric file.

        Raises:
            AnnotationError: missing or malformed file, malformed sample (names the sample index
                and field), or ``metric_name`` absent / ambiguous (lists the names present).
        """
        raw = _read_json(path)
        if isinstance(raw, list):
            name = metric_name or Path(path).stem
            return cls(name=name, samples=_parse_samples(raw, path=path, metric=name))._from(path)
        if not isinstance(raw, dict):
            raise AnnotationError(f"expected a JSON object, got {type(raw).__name__}", path=path)
        if set(raw) >= {"name", "samples"} and isinstance(raw["name"], str):
            samples = _parse_samples(raw["samples"], path=path, metric=raw["name"])
            return cls(name=raw["name"], samples=samples)._from(path)
        return (
            MetricAnnotation.from_json(path, metric_name=metric_name)._single(metric_name, path)._from(path)
        )

    def to_json(self, path: str | Path) -> None:
        """Write ``{"name", "samples"}`` JSON that :meth:`from_json` reads back unchanged."""
        with Path(path).open("w", encoding="utf-8") as fh:
            json.dump(self.model_dump(mode="json"), fh, ensure_ascii=False, indent=2)

    # --- Sequence protocol --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, idx: int) -> SampleAnnotation:
        return self.samples[idx]

    def __iter__(self) -> Iterator[SampleAnnotation]:  # type: ignore[override]
        return iter(self.samples)

    # --- Labels ---------------------------------------------------------------------------
    @property
    def is_binary(self) -> bool:
        """True when every ``metric_output`` (and ``target``) is 0 or 1."""
        values = [s.metric_output for s in self.samples] + [
            s.target for s in self.samples if s.target is not None
        ]
        return bool(values) and all(v in (0.0, 1.0) for v in values)

    def labels(self) -> list[float | None]:
        """Human label of every sample (None where a sample has none), aligned with ``samples``."""
        binary = self.is_binary
        return [s.human_label(binary=binary) for s in self.samples]

    def usable_indices(self) -> list[int]:
        """Positions of samples that have a human label."""
        return [i for i, label in enumerate(self.labels()) if label is not None]

    def get_prompt_annotations(self) -> dict[str, list[PromptAnnotation]]:
        """Prompt traces grouped by prompt name, in sample order."""
        grouped: dict[str, list[PromptAnnotation]] = {}
        for sample in self.samples:
            for name, prompt in sample.prompts.items():
                grouped.setdefault(name, []).append(prompt)
        return grouped

    # --- Selection ------------------------------------------------------------------------
    def select(self, indices: Sequence[int]) -> SingleMetricAnnotation:
        """A new annotation set with the samples at ``indices``, in that order."""
        return SingleMetricAnnotation(name=self.name, samples=[self.samples[i] for i in indices])._from(
            self.source
        )

    def filter(self, function: Callable[[SampleAnnotation], bool] | None = None) -> SingleMetricAnnotation:
        """Samples for which ``function`` is true; by default the accepted ones (as Ragas)."""
        keep = function or (lambda s: s.is_accepted)
        return SingleMetricAnnotation(name=self.name, samples=[s for s in self.samples if keep(s)])._from(
            self.source
        )

    def stratify_keys(self, stratify_key: str | None) -> list[Hashable]:
        """The class key of every sample for ``stratify_key``.

        ``None`` or ``"label"`` → the human label; a sample field (``metric_output``,
        ``is_accepted``, ``target``); or ``metric_input.X``.

        Raises:
            KeyError: an unknown key (the message names it and the valid forms).
        """
        if stratify_key in (None, "label"):
            return list(self.labels())
        if stratify_key in ("metric_output", "is_accepted", "target"):
            return [getattr(s, stratify_key) for s in self.samples]
        if stratify_key.startswith("metric_input."):
            field = stratify_key.split(".", 1)[1]
            if self.samples and not any(field in s.metric_input for s in self.samples):
                raise KeyError(f"unknown stratify_key {stratify_key!r}: no sample has metric_input.{field}")
            return [_hashable(s.metric_input.get(field)) for s in self.samples]
        raise KeyError(
            f"unknown stratify_key {stratify_key!r}; use 'label', 'metric_output', 'is_accepted', "
            "'target' or 'metric_input.<field>'"
        )

    def sample(
        self, n: int, stratify_key: str | None = None, random_seed: sampling.Seed = None
    ) -> SingleMetricAnnotation:
        """Exactly ``n`` distinct samples; with ``stratify_key``, class counts follow the data's
        proportions (largest remainder) and every class appears when ``n`` ≥ number of classes.

        Raises:
            ValueError: ``n`` < 0 or ``n`` > ``len(self)``.
        """
        rng = sampling.make_rng(random_seed)
        keys = self.stratify_keys(stratify_key) if stratify_key else [0] * len(self)
        return self.select(sampling.stratified_sample(keys, n, rng))

    def batch(self, batch_size: int, drop_last_batch: bool = False) -> list[SingleMetricAnnotation]:
        """Consecutive batches of ``batch_size`` samples in file order (the last may be short)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        batches = [
            self.select(range(i, min(i + batch_size, len(self)))) for i in range(0, len(self), batch_size)
        ]
        if drop_last_batch and batches and len(batches[-1]) < batch_size:
            batches.pop()
        return batches

    def stratified_batches(
        self,
        batch_size: int,
        stratify_key: str,
        drop_last_batch: bool = False,
        replace: bool = False,
        random_seed: sampling.Seed = None,
    ) -> list[SingleMetricAnnotation]:
        """Batches mirroring the class proportions of ``stratify_key``; see
        :func:`promptevolver.sampling.stratified_batches` for the exact guarantees."""
        rng = sampling.make_rng(random_seed)
        keys = self.stratify_keys(stratify_key)
        positions = sampling.stratified_batches(
            keys, batch_size, rng, drop_last_batch=drop_last_batch, replace=replace
        )
        return [self.select(batch) for batch in positions]

    def train_test_split(
        self, test_size: float | int = 0.2, random_seed: sampling.Seed = 42, stratify_key: str | None = None
    ) -> tuple[SingleMetricAnnotation, SingleMetricAnnotation]:
        """Disjoint, covering (train, test) sets, stratified on the human label by default.

        ``test_size`` is a fraction in (0, 1) or a count in [1, len - 1].
        """
        n_test = _test_count(test_size, len(self))
        keys = self.stratify_keys(stratify_key)
        train, test = sampling.stratified_split(keys, n_test, sampling.make_rng(random_seed))
        return self.select(train), self.select(test)


def _test_count(test_size: float | int, n: int) -> int:
    if isinstance(test_size, float):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size as a fraction must be in (0, 1), got {test_size}")
        count = int(round(test_size * n))
        return min(max(count, 1), n - 1)
    if not 1 <= test_size <= n - 1:
        raise ValueError(f"test_size as a count must be in [1, {n - 1}], got {test_size}")
    return test_size


def _hashable(value: Any) -> Hashable:
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


class MetricAnnotation(BaseModel):
    """Annotations of several metrics: ``root`` maps a metric name to its samples (Ragas' shape)."""

    root: dict[str, list[SampleAnnotation]]

    @classmethod
    def from_json(cls, path: str | Path, metric_name: str | None = None) -> MetricAnnotation:
        """Load all metrics of a Ragas export, or only ``metric_name``.

        Raises:
            AnnotationError: missing/malformed file or sample, or ``metric_name`` not in the file
                (the message lists the names present).
        """
        raw = _read_json(path)
        if not isinstance(raw, dict):
            raise AnnotationError(
                f"expected a JSON object of metric name → samples, got {type(raw).__name__}", path=path
            )
        if metric_name is not None:
            if metric_name not in raw:
                raise AnnotationError(
                    f"metric {metric_name!r} not in file; metrics present: {sorted(raw)}", path=path
                )
            raw = {metric_name: raw[metric_name]}
        return cls(
            root={name: _parse_samples(samples, path=path, metric=name) for name, samples in raw.items()}
        )

    def to_json(self, path: str | Path) -> None:
        """Write the Ragas multi-metric format."""
        with Path(path).open("w", encoding="utf-8") as fh:
            json.dump(self.model_dump(mode="json")["root"], fh, ensure_ascii=False, indent=2)

    def __getitem__(self, key: str) -> SingleMetricAnnotation:
        if key not in self.root:
            raise KeyError(f"metric {key!r} not present; metrics present: {sorted(self.root)}")
        return SingleMetricAnnotation(name=key, samples=self.root[key])

    def __len__(self) -> int:
        """Number of samples over all metrics (as Ragas)."""
        return sum(len(samples) for samples in self.root.values())

    def __iter__(self) -> Iterator[SingleMetricAnnotation]:  # type: ignore[override]
        return (self[name] for name in self.root)

    def _single(self, metric_name: str | None, path: str | Path) -> SingleMetricAnnotation:
        if metric_name is None and len(self.root) != 1:
            raise AnnotationError(
                f"file holds {len(self.root)} metrics {sorted(self.root)}; pass metric_name", path=path
            )
        return self[metric_name or next(iter(self.root))]


def usable_label_array(dataset: SingleMetricAnnotation) -> tuple[np.ndarray, np.ndarray]:
    """(positions, labels) of usable samples as arrays of shape ``(n_usable,)``."""
    labels = dataset.labels()
    idx = np.array([i for i, y in enumerate(labels) if y is not None], dtype=np.int64)
    return idx, np.array([labels[i] for i in idx], dtype=np.float64)
