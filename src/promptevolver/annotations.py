"""Human annotations of judge verdicts, in Ragas' annotation JSON format.

The classes mirror ``ragas.dataset_schema`` (PromptAnnotation, SampleAnnotation,
MetricAnnotation, SingleMetricAnnotation, and a minimal EvaluationDataset of SingleTurnSample)
so code written against Ragas works after changing the import line. A Ragas export looks like::

    {"<metric name>": [
        {"metric_input": {...}, "metric_output": 1, "is_accepted": true, "target": null,
         "prompts": {"<prompt name>": {"prompt_input": {...}, "prompt_output": {...},
                                       "edited_output": null, "is_accepted": true}}}]}

Both loaders also read ``{"name": ..., "samples": [...]}`` files, a bare JSON list of samples and
JSONL (``.jsonl``: one sample a line, blank lines skipped); a list or JSONL file holds one metric,
named by ``metric_name`` or else by the file's stem.

**Human label** of a sample (DESIGN.md): ``target`` if present; else ``metric_output`` if the
sample is accepted; else, for a binary metric, ``1 - metric_output``; else none. A
``metric_output`` of NaN (how Ragas records a failed judge call) gives no label unless ``target``
is set. A sample without a label is *unusable*: :meth:`SingleMetricAnnotation.unusable_samples`
lists them with the reason and the loaders warn (:class:`UnusableSamplesWarning`). **Expected
output** of a prompt: ``edited_output`` if present, else ``prompt_output`` when the sample was
accepted, else none.

Errors: a missing or malformed file or sample raises
:class:`~promptevolver.errors.AnnotationError` naming the file, metric, sample index and field
path; an unknown metric name, sample field or stratify key raises :class:`AnnotationKeyError`,
which is also a ``KeyError``.

Differences from Ragas, on purpose: sampling methods take ``random_seed`` and never touch the
global ``random`` state; ``train_test_split`` is implemented; ``batch`` and ``stratified_batches``
return ``SingleMetricAnnotation`` batches (sized, indexable, iterable like Ragas' lists);
metric-input and prompt-input field names of other libraries are accepted (:data:`FIELD_ALIASES`).
"""

from __future__ import annotations

import gc
import json
import math
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, overload

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from promptevolver import sampling
from promptevolver.errors import AnnotationError, AnnotationKeyError

__all__ = [
    "FIELD_ALIASES",
    "AnnotationKeyError",
    "EvaluationDataset",
    "MetricAnnotation",
    "PromptAnnotation",
    "SampleAnnotation",
    "SingleMetricAnnotation",
    "SingleTurnSample",
    "UnusableSample",
    "UnusableSamplesWarning",
]

#: Input field names of other evaluation libraries → Ragas' names.
FIELD_ALIASES: dict[str, str] = {
    "input": "user_input",
    "actual_output": "response",
    "expected_output": "reference",
    "retrieved_context": "retrieved_contexts",
    "retrieval_context": "retrieved_contexts",
    "expected_context": "reference_contexts",
}
_LIST_FIELDS = ("retrieved_contexts", "reference_contexts")
#: Sample fields that may serve as a stratify key, besides extra fields and ``metric_input.X``.
_KEY_FIELDS = ("metric_output", "is_accepted", "target")


class UnusableSamplesWarning(UserWarning):
    """Loaded samples without a human label; see :meth:`SingleMetricAnnotation.unusable_samples`."""


class UnusableSample(NamedTuple):
    """A sample without a human label: its position in the set and the reason."""

    sample_index: int
    reason: str


def normalize_metric_input(data: dict[str, Any]) -> dict[str, Any]:
    """Rename other libraries' field names to Ragas' and wrap a string context in a list.

    Raises:
        ValueError: one field given under two names (e.g. both ``input`` and ``user_input``).
    """
    if FIELD_ALIASES.keys().isdisjoint(data) and not any(isinstance(data.get(f), str) for f in _LIST_FIELDS):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = FIELD_ALIASES.get(key, key)
        if name in out:
            raise ValueError(f"{name!r} is given twice (also as {key!r})")
        out[name] = [value] if name in _LIST_FIELDS and isinstance(value, str) else value
    return out


def _normalized(value: Any) -> Any:
    return normalize_metric_input(value) if isinstance(value, dict) else value


def _item(model: BaseModel, key: str) -> Any:
    """``model[key]`` for a declared or an extra field."""
    extra = model.model_extra or {}
    if key in type(model).model_fields or key in extra:
        return getattr(model, key)
    known = sorted([*type(model).model_fields, *extra])
    raise AnnotationKeyError(f"unknown field of {type(model).__name__}; fields: {known}", field=key)


class PromptAnnotation(BaseModel):
    """One prompt's trace inside a sample: what it was given, what it answered, the human's edit.

    ``is_accepted`` is the optional prompt-level verdict real exports contain. ``prompt_input``
    field names of other libraries are renamed as in metric inputs. Extra keys are kept.
    """

    model_config = ConfigDict(extra="allow")

    prompt_input: dict[str, Any]
    prompt_output: dict[str, Any] | None = None
    edited_output: dict[str, Any] | None = None
    is_accepted: bool | None = None

    @field_validator("prompt_input", mode="before")
    @classmethod
    def _normalize_input(cls, value: Any) -> Any:
        return _normalized(value)

    def __getitem__(self, key: str) -> Any:
        """Any declared or extra field. Raises AnnotationKeyError for an unknown one."""
        return _item(self, key)


class SampleAnnotation(BaseModel):
    """One judged sample: the metric's input and output, the human's verdict, the prompt traces.

    ``metric_output`` is a number (0/1 for a binary metric; NaN marks a failed judge call);
    ``target``, a finite number when given, overrides it as the human label. Extra keys are kept.
    """

    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")

    metric_input: dict[str, Any]
    metric_output: float
    prompts: dict[str, PromptAnnotation] = Field(default_factory=dict)
    is_accepted: bool
    target: float | None = Field(default=None, allow_inf_nan=False)

    @field_validator("metric_input", mode="before")
    @classmethod
    def _normalize_input(cls, value: Any) -> Any:
        return _normalized(value)

    @field_validator("metric_output")
    @classmethod
    def _not_infinite(cls, value: float) -> float:
        if math.isinf(value):
            raise ValueError("metric_output must be finite (NaN marks a failed judge call)")
        return value

    def __getitem__(self, key: str) -> Any:
        """Any declared or extra field. Raises AnnotationKeyError for an unknown one."""
        return _item(self, key)

    def human_label(self, *, binary: bool) -> float | None:
        """The human label per DESIGN.md's rule; None when the sample has none."""
        if self.target is not None:
            return self.target
        if math.isnan(self.metric_output):
            return None
        if self.is_accepted:
            return self.metric_output
        return 1.0 - self.metric_output if binary else None

    def unusable_reason(self, *, binary: bool) -> str | None:
        """Why the sample has no human label; None when it has one."""
        if self.human_label(binary=binary) is not None:
            return None
        if math.isnan(self.metric_output):
            return "metric_output is NaN (failed judge call) and there is no target"
        return "rejected sample of a non-binary metric without a target"

    def expected_output(self, prompt_name: str) -> dict[str, Any] | None:
        """The human-approved output of ``prompt_name``: edited, else accepted, else None."""
        prompt = self.prompts.get(prompt_name)
        if prompt is None:
            return None
        if prompt.edited_output is not None:
            return prompt.edited_output
        return prompt.prompt_output if self.is_accepted else None


# --- Reading, validating and writing files ----------------------------------------------------

_SAMPLES: TypeAdapter[list[SampleAnnotation]] = TypeAdapter(list[SampleAnnotation])


def _read(path: Path) -> Any:
    """The parsed file: its JSON value, or for ``.jsonl`` the list of its lines' values."""
    if not path.is_file():
        raise AnnotationError("file not found", path=path)
    try:
        with path.open(encoding="utf-8") as fh:
            return _read_jsonl(fh, path) if path.suffix.lower() == ".jsonl" else json.load(fh)
    except json.JSONDecodeError as exc:
        raise AnnotationError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path=path
        ) from exc
    except UnicodeDecodeError as exc:
        raise AnnotationError(f"not UTF-8 text ({exc.reason})", path=path) from exc
    except OSError as exc:
        raise AnnotationError(f"cannot be read ({exc.strerror})", path=path) from exc


def _read_jsonl(lines: Iterable[str], path: Path) -> list[Any]:
    samples: list[Any] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            samples.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise AnnotationError(
                f"not valid JSON on line {number} (column {exc.colno}: {exc.msg})",
                path=path,
                sample_index=len(samples),
            ) from exc
    return samples


def _metric_groups(raw: Any, path: Path, metric_name: str | None) -> dict[str, Any]:
    """Any supported file shape → {metric name: raw samples}, only ``metric_name`` when given."""
    if isinstance(raw, list):
        return {metric_name or path.stem: raw}
    if not isinstance(raw, dict):
        raise AnnotationError(
            f"expected a JSON object of metric name → samples, got {type(raw).__name__}", path=path
        )
    groups = {raw["name"]: raw["samples"]} if isinstance(raw.get("name"), str) and "samples" in raw else raw
    if metric_name is None:
        return groups
    if metric_name not in groups:
        raise AnnotationError(
            f"metric {metric_name!r} not in file; metrics present: {sorted(groups)}", path=path
        )
    return {metric_name: groups[metric_name]}


def _load(path: Path, metric_name: str | None, *, single: bool) -> dict[str, list[SampleAnnotation]]:
    """Metric name → validated samples of a file; with ``single``, exactly one metric."""
    with _gc_paused():
        groups = _metric_groups(_read(path), path, metric_name)
        if single and len(groups) != 1:
            names = sorted(groups)
            raise AnnotationError(f"file holds {len(names)} metrics {names}; pass metric_name", path=path)
        return {name: _validate_samples(raw, path=path, metric=name) for name, raw in groups.items()}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file's objects are built (restored after).

    Loading builds millions of dicts and strings, none of them cyclic; with the collector on,
    ever larger collections keep traversing them, which doubles the load time of a 20,000-sample
    file. Reference counting still frees memory meanwhile.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _validate_samples(raw: Any, *, path: Path, metric: str) -> list[SampleAnnotation]:
    """All samples of one metric, validated in one pass (pydantic-core, no Python loop)."""
    if not isinstance(raw, list):
        raise AnnotationError(
            f"expected a list of samples, got {type(raw).__name__}", path=path, metric=metric
        )
    try:
        return _SAMPLES.validate_python(raw)
    except ValidationError as exc:
        raise _located(exc, path=path, metric=metric) from exc


def _located(
    exc: ValidationError, *, path: str | Path | None, metric: str | None, prefix: str = ""
) -> AnnotationError:
    """Our error for the first of a list validation's errors: sample index and field path."""
    first = exc.errors(include_url=False)[0]
    loc = first["loc"]
    index = loc[0] if loc and isinstance(loc[0], int) else None
    field = ".".join(str(part) for part in ([prefix] if prefix else []) + list(loc[1:])) or "<sample>"
    more = exc.error_count() - 1
    message = f"{first['msg']} (input: {repr(first.get('input'))[:80]})"
    if more:
        message += f"; {more} more error(s) after this one"
    return AnnotationError(message, path=path, metric=metric, sample_index=index, field=field)


def _dump_samples(samples: list[SampleAnnotation]) -> list[dict[str, Any]]:
    """JSON-ready samples; fields that were absent when loaded stay absent."""
    return _SAMPLES.dump_python(samples, mode="json", exclude_unset=True)


def _write_json(path: str | Path, data: Any) -> None:
    with Path(path).open("w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=2)


def _warn_unusable(dataset: SingleMetricAnnotation) -> None:
    unusable = dataset.unusable_samples()
    if not unusable:
        return
    by_reason: dict[str, list[int]] = {}
    for sample_index, reason in unusable:
        by_reason.setdefault(reason, []).append(sample_index)
    details = "; ".join(
        f"{reason}: samples {indices[:10]}{' …' if len(indices) > 10 else ''}"
        for reason, indices in by_reason.items()
    )
    warnings.warn(
        f"file {dataset.source}, metric {dataset.name!r}: {len(unusable)} of {len(dataset)} samples have "
        f"no human label and cannot be learned from ({details}); see unusable_samples()",
        UnusableSamplesWarning,
        stacklevel=3,
    )


# --- Annotation sets ----------------------------------------------------------------------------


_S = TypeVar("_S", bound="_Sourced")


class _Sourced(BaseModel):
    """Base of the annotation sets: remembers the file they came from, for error messages."""

    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        """The file this set was loaded from (None when built in memory); used in error messages."""
        return self._source

    def _with_source(self: _S, source: str | Path | None) -> _S:
        self._source = None if source is None else str(source)
        return self

    def __eq__(self, other: object) -> bool:
        """Equal content; the source file is provenance, not content."""
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __str__(self) -> str:
        return repr(self)


class SingleMetricAnnotation(_Sourced):
    """The annotated samples of one metric. Sequence-like: ``len``, iteration, indexing (an int
    gives a :class:`SampleAnnotation`, a slice a new set).

    Sampling methods take ``random_seed``: an int or a ``numpy.random.Generator`` (same seed →
    same result); ``None`` draws fresh entropy, not reproducible, as Ragas' unseeded sampling.
    Sets they return share the sample objects and keep ``name`` and ``source``.
    """

    name: str
    samples: list[SampleAnnotation]

    def __repr__(self) -> str:
        return f"SingleMetricAnnotation(name={self.name!r}, len={len(self)})"

    # --- Loading and saving -------------------------------------------------------------
    @classmethod
    def from_json(cls, path: str | Path, metric_name: str | None = None) -> SingleMetricAnnotation:
        """Load one metric: a ``{"name", "samples"}`` file, a Ragas file holding one metric (or
        ``metric_name`` of several), a JSON list of samples or a JSONL file (named ``metric_name``,
        else the file's stem). Warns (UnusableSamplesWarning) when samples have no human label.

        Raises:
            AnnotationError: missing or malformed file; malformed sample (names the sample index
                and field); ``metric_name`` absent, or several metrics and no ``metric_name``
                (lists the names present).
        """
        ((name, samples),) = _load(Path(path), metric_name, single=True).items()
        dataset = cls.model_construct(name=name, samples=samples)._with_source(path)  # validated
        _warn_unusable(dataset)
        return dataset

    def to_json(self, path: str | Path) -> None:
        """Write ``{"name", "samples"}`` JSON (UTF-8) that :meth:`from_json` reads back as an equal
        set. Fields absent when the samples were loaded are not written, so writing a loaded file
        back gives the same JSON value (other libraries' field names come back as Ragas')."""
        _write_json(path, {"name": self.name, "samples": _dump_samples(self.samples)})

    def to_jsonl(self, path: str | Path) -> None:
        """Write one sample a line (UTF-8). The file does not hold the metric name:
        :meth:`from_json` takes it from ``metric_name`` or the file's stem, so write to
        ``<name>.jsonl`` (or pass ``metric_name``) to read back an equal set."""
        with Path(path).open("w", encoding="utf-8") as fh:
            for sample in _dump_samples(self.samples):
                fh.write(json.dumps(sample, ensure_ascii=False) + "\n")

    def to_evaluation_dataset(self) -> EvaluationDataset:
        """The metric inputs as an :class:`EvaluationDataset`, in sample order (as Ragas).

        Raises:
            AnnotationError: a metric input that is not a single-turn sample (names the sample
                index and field).
        """
        inputs = [sample.metric_input for sample in self.samples]
        return EvaluationDataset(samples=_validate_turns(inputs, path=self.source, metric=self.name))

    # --- Sequence protocol --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.samples)

    @overload
    def __getitem__(self, idx: int) -> SampleAnnotation: ...
    @overload
    def __getitem__(self, idx: slice) -> SingleMetricAnnotation: ...
    def __getitem__(self, idx: int | slice) -> SampleAnnotation | SingleMetricAnnotation:
        if isinstance(idx, slice):
            return self.select(range(len(self))[idx])
        return self.samples[idx]

    def __iter__(self) -> Iterator[SampleAnnotation]:  # type: ignore[override]
        return iter(self.samples)

    # --- Labels ---------------------------------------------------------------------------
    @property
    def is_binary(self) -> bool:
        """True when every ``metric_output`` (NaN aside) and ``target`` is 0 or 1."""
        values = [s.metric_output for s in self.samples if not math.isnan(s.metric_output)]
        values += [s.target for s in self.samples if s.target is not None]
        return bool(values) and all(v in (0.0, 1.0) for v in values)

    def labels(self) -> list[float | None]:
        """Human label of every sample (None where a sample has none), aligned with ``samples``."""
        binary = self.is_binary
        return [s.human_label(binary=binary) for s in self.samples]

    def usable_indices(self) -> list[int]:
        """Positions of samples that have a human label."""
        return [i for i, label in enumerate(self.labels()) if label is not None]

    def unusable_samples(self) -> list[UnusableSample]:
        """(position, reason) of every sample without a human label, in sample order."""
        binary = self.is_binary
        reasons = ((i, s.unusable_reason(binary=binary)) for i, s in enumerate(self.samples))
        return [UnusableSample(i, reason) for i, reason in reasons if reason is not None]

    def get_prompt_annotations(self, accepted_only: bool = True) -> dict[str, list[PromptAnnotation]]:
        """Prompt traces grouped by prompt name, in sample order; by default only those of
        accepted samples, as Ragas (a rejected sample's ``prompt_output`` is what the human
        rejected; use :meth:`SampleAnnotation.expected_output` for the approved output)."""
        grouped: dict[str, list[PromptAnnotation]] = {}
        for sample in self.samples:
            if sample.is_accepted or not accepted_only:
                for name, prompt in sample.prompts.items():
                    grouped.setdefault(name, []).append(prompt)
        return grouped

    # --- Selection ------------------------------------------------------------------------
    def select(self, indices: Iterable[int]) -> SingleMetricAnnotation:
        """A new set with the samples at ``indices``, in that order (repeats allowed)."""
        samples = [self.samples[i] for i in indices]
        return _trusted(self.name, samples, self.source)

    def filter(self, function: Callable[[SampleAnnotation], bool] | None = None) -> SingleMetricAnnotation:
        """The samples for which ``function`` is true, in order; all of them when it is None (as Ragas)."""
        if function is None:
            return self.select(range(len(self)))
        return self.select([i for i, s in enumerate(self.samples) if function(s)])

    def stratify_keys(self, stratify_key: str | None) -> list[Hashable]:
        """The class key of every sample for ``stratify_key``; shape ``(len(self),)``.

        ``None`` or ``"label"``: the human label (None for unusable samples); ``"metric_output"``,
        ``"is_accepted"``, ``"target"`` or an extra field of the samples: its value;
        ``"metric_input.X"``: that input field (lists and dicts compared by their JSON text).
        NaN counts as None.

        Raises:
            AnnotationKeyError: an unknown key (the message names it and the valid forms).
        """
        if stratify_key is None or stratify_key == "label":
            return [_class_key(label) for label in self.labels()]
        if stratify_key in _KEY_FIELDS or any(stratify_key in (s.model_extra or {}) for s in self.samples):
            return [_class_key(getattr(s, stratify_key, None)) for s in self.samples]
        if stratify_key.startswith("metric_input."):
            return self._input_keys(stratify_key.split(".", 1)[1])
        raise self._unknown_key(stratify_key)

    def _input_keys(self, field: str) -> list[Hashable]:
        if self.samples and not any(field in s.metric_input for s in self.samples):
            present = sorted({k for s in self.samples for k in s.metric_input})
            raise AnnotationKeyError(
                f"unknown stratify_key 'metric_input.{field}': no sample has metric_input.{field}; "
                f"metric_input fields: {present}",
                path=self.source,
                metric=self.name,
            )
        return [_class_key(s.metric_input.get(field)) for s in self.samples]

    def _unknown_key(self, key: str) -> AnnotationKeyError:
        hint = ""
        if any(key in s.metric_input for s in self.samples):
            hint = f" (did you mean 'metric_input.{key}'?)"
        return AnnotationKeyError(
            f"unknown stratify_key {key!r}{hint}; use 'label', 'metric_output', 'is_accepted', "
            "'target', an extra sample field or 'metric_input.<field>'",
            path=self.source,
            metric=self.name,
        )

    def sample(
        self, n: int, stratify_key: str | None = None, random_seed: sampling.Seed = None
    ) -> SingleMetricAnnotation:
        """Exactly ``n`` distinct samples, in sample order; ``n == 0`` gives an empty set.

        Without ``stratify_key`` a uniform draw; with one (see :meth:`stratify_keys`), class
        counts follow the data's proportions (largest remainder) and every class appears when
        ``n`` ≥ the number of classes.

        Raises:
            ValueError: ``n`` < 0 or ``n`` > ``len(self)``.
            AnnotationKeyError: an unknown ``stratify_key``.
        """
        keys = [0] * len(self) if stratify_key is None else self.stratify_keys(stratify_key)
        if not 0 <= n <= len(self):
            raise ValueError(f"n must be in [0, {len(self)}] (the number of samples), got {n}")
        return self.select(sampling.stratified_sample(keys, n, sampling.make_rng(random_seed)))

    def batch(
        self, batch_size: int, drop_last_batch: bool = False, random_seed: sampling.Seed = None
    ) -> list[SingleMetricAnnotation]:
        """The samples shuffled and cut into batches of ``batch_size`` (as Ragas): disjoint,
        covering every sample once; the last batch is short unless ``drop_last_batch`` drops it.

        Raises:
            ValueError: ``batch_size`` < 1.
        """
        rng = sampling.make_rng(random_seed)
        batches = sampling.shuffled_batches(len(self), batch_size, rng, drop_last_batch)
        return [self.select(batch) for batch in batches]

    def stratified_batches(
        self,
        batch_size: int,
        stratify_key: str | None,
        drop_last_batch: bool = False,
        replace: bool = False,
        random_seed: sampling.Seed = None,
    ) -> list[SingleMetricAnnotation]:
        """Batches mirroring the class proportions of ``stratify_key`` (see :meth:`stratify_keys`).

        Always terminates. Without ``drop_last_batch``: ⌈n/batch_size⌉ disjoint batches covering
        every sample once, sizes within one of each other and at most ``batch_size`` (one batch of
        everything when ``batch_size`` > n). With it: ⌊n/batch_size⌋ full batches (none when
        ``batch_size`` > n). With ``replace``: short batches are filled with other samples, distinct
        within a batch, up to ``min(batch_size, n)``. A class with at least as many samples as there
        are batches appears in every batch. An empty set gives no batches; see
        :func:`promptevolver.sampling.stratified_batches` for the arithmetic.

        Raises:
            ValueError: ``batch_size`` < 1.
            AnnotationKeyError: an unknown ``stratify_key``.
        """
        keys = self.stratify_keys(stratify_key)
        positions = sampling.stratified_batches(
            keys, batch_size, sampling.make_rng(random_seed), drop_last_batch=drop_last_batch, replace=replace
        )
        return [self.select(batch) for batch in positions]

    def train_test_split(
        self, test_size: float | int = 0.2, random_seed: sampling.Seed = 42, stratify_key: str | None = None
    ) -> tuple[SingleMetricAnnotation, SingleMetricAnnotation]:
        """Disjoint, covering (train, test) sets, each in sample order, stratified on
        ``stratify_key`` (default: the human label; unusable samples form a class of their own).

        ``test_size`` is a fraction in (0, 1) of the samples (rounded, then clipped to
        [1, n - 1]) or a count in [1, n - 1].

        Raises:
            ValueError: fewer than 2 samples, or ``test_size`` out of range.
            AnnotationKeyError: an unknown ``stratify_key``.
        """
        n_test = sampling.split_count(test_size, len(self))
        keys = self.stratify_keys(stratify_key)
        train, test = sampling.stratified_split(keys, n_test, sampling.make_rng(random_seed))
        return self.select(train), self.select(test)


def _trusted(name: str, samples: list[SampleAnnotation], source: str | Path | None) -> SingleMetricAnnotation:
    """A set of samples that are validated already (not validated again: 20,000 checks cost 50 ms)."""
    return SingleMetricAnnotation.model_construct(name=name, samples=samples)._with_source(source)


def _class_key(value: Any) -> Hashable:
    if isinstance(value, float) and math.isnan(value):
        return None
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


class MetricAnnotation(_Sourced):
    """Annotations of several metrics: ``root`` maps a metric name to its samples (Ragas' shape).

    ``m["name"]`` gives a :class:`SingleMetricAnnotation` (sharing the samples and the source
    file); iteration yields one per metric, in file order; ``len`` counts samples over all
    metrics (as Ragas).
    """

    root: dict[str, list[SampleAnnotation]]

    def __repr__(self) -> str:
        return f"MetricAnnotation({ {name: len(samples) for name, samples in self.root.items()} })"

    @classmethod
    def from_json(cls, path: str | Path, metric_name: str | None = None) -> MetricAnnotation:
        """Load all metrics of a file, or only ``metric_name``. Reads every shape
        :meth:`SingleMetricAnnotation.from_json` reads. Warns (UnusableSamplesWarning) when
        samples have no human label.

        Raises:
            AnnotationError: missing/malformed file or sample (names the metric, sample index
                and field), or ``metric_name`` not in the file (lists the names present).
        """
        annotations = cls.model_construct(root=_load(Path(path), metric_name, single=False))  # validated
        annotations._with_source(path)
        for dataset in annotations:
            _warn_unusable(dataset)
        return annotations

    def to_json(self, path: str | Path) -> None:
        """Write Ragas' multi-metric format; :meth:`from_json` reads back an equal object, and a
        loaded Ragas file is written back as the same JSON value (see
        :meth:`SingleMetricAnnotation.to_json`)."""
        _write_json(path, {name: _dump_samples(samples) for name, samples in self.root.items()})

    def to_evaluation_dataset(self) -> EvaluationDataset:
        """The metric inputs of every metric, metric after metric, as one :class:`EvaluationDataset`.

        Raises:
            AnnotationError: a metric input that is not a single-turn sample.
        """
        return EvaluationDataset(samples=[t for dataset in self for t in dataset.to_evaluation_dataset()])

    def __getitem__(self, key: str) -> SingleMetricAnnotation:
        """The samples of metric ``key``. Raises AnnotationKeyError (a KeyError) when absent."""
        if key not in self.root:
            raise AnnotationKeyError(
                f"metric {key!r} not present; metrics present: {sorted(self.root)}", path=self.source
            )
        return _trusted(key, self.root[key], self.source)

    def __contains__(self, key: object) -> bool:
        return key in self.root

    def __len__(self) -> int:
        """Number of samples over all metrics (as Ragas)."""
        return sum(len(samples) for samples in self.root.values())

    def __iter__(self) -> Iterator[SingleMetricAnnotation]:  # type: ignore[override]
        return (self[name] for name in self.root)


# --- Evaluation dataset -------------------------------------------------------------------------


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


def usable_label_array(dataset: SingleMetricAnnotation) -> tuple[np.ndarray, np.ndarray]:
    """(positions, labels) of usable samples as arrays of shape ``(n_usable,)``."""
    labels = dataset.labels()
    idx = np.array([i for i, y in enumerate(labels) if y is not None], dtype=np.int64)
    return idx, np.array([labels[i] for i in idx], dtype=np.float64)
