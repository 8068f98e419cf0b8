"""The annotated samples of one metric (:class:`SingleMetricAnnotation`): loading and saving,
labels, selection, sampling, batches and splits; and :class:`_Sourced`, the base of the sets."""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar, overload

import numpy as np
from pydantic import BaseModel, PrivateAttr, model_validator

from promptevolver.annotations import _sampling as sampling
from promptevolver.annotations._dataset import EvaluationDataset, _validate_turns
from promptevolver.annotations._io import _dump_samples, _load, _write_json, _write_jsonl
from promptevolver.annotations._labels import (
    LabelKind,
    LabelScale,
    check_label_values,
    check_labels,
    unusable_samples,
)
from promptevolver.annotations._models import (
    PromptAnnotation,
    SampleAnnotation,
    UnusableSample,
    UnusableSamplesWarning,
)

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
    gives a :class:`SampleAnnotation`, a slice a new set). Where Ragas gave lists (slices,
    batches), the sets concatenate as lists do: ``ds[0:2] + ds[3:4]``, ``batch + [sample]``,
    ``sum(batches, [])``; and a set equals the list of its samples.

    ``kind`` is the kind of the metric's labels, ``"binary"``, ``"numeric"`` or ``"nominal"``
    (:mod:`~promptevolver.annotations._labels`): given (then every label must fit it, else building
    or loading the set raises AnnotationError), or read off the values when the set is built or
    loaded (None on input; any finite numbers are accepted, as in Ragas). A run binds the set to
    its metric's kind with :meth:`with_scale`.

    Sampling methods take ``random_seed``: an int or a ``numpy.random.Generator`` (same seed →
    same result); ``None`` draws fresh entropy, not reproducible. Unlike Ragas, which draws from
    Python's global ``random`` (reproducible after ``random.seed(0)``), they never read or
    advance the global state: ``random.seed`` does not seed them, pass ``random_seed``.
    Sets they return share the sample objects and keep ``name``, ``kind`` and ``source``.
    """

    name: str
    samples: list[SampleAnnotation]
    kind: LabelKind | None = None

    @model_validator(mode="after")
    def _labels_fit_the_kind(self) -> SingleMetricAnnotation:
        self.kind = check_labels(self.samples, self.kind, metric=self.name)
        return self

    def __repr__(self) -> str:
        return f"SingleMetricAnnotation(name={self.name!r}, len={len(self)})"

    # --- Loading and saving -------------------------------------------------------------
    @classmethod
    def from_json(
        cls,
        path: str | Path,
        metric_name: str | None = None,
        *,
        kind: LabelKind | None = None,
        scale: LabelScale | None = None,
        judge: str = "its judge",
    ) -> SingleMetricAnnotation:
        """Load one metric: a ``{"name", "samples"}`` file, a Ragas file holding one metric (or
        ``metric_name`` of several), a JSON list of samples or a JSONL file (named ``metric_name``,
        else the file's stem). ``kind``: ``"binary"`` or ``"numeric"`` labels; None takes the
        file's ``"kind"`` or infers it (:mod:`~promptevolver.annotations._labels`). Every label is
        checked here, before anything uses the set. ``scale``: the metric's label scale, which
        then decides the kind (:meth:`with_scale`; ``judge`` names it in errors). Warns
        (UnusableSamplesWarning) when samples have no human label.

        Raises:
            AnnotationError: missing or malformed file, a directory, nesting too deep to read; a
                key given twice in one JSON object; a malformed sample (names the sample index and
                field; strings and booleans are not numbers); a label that does not fit the kind
                (e.g. 0.5 among binary verdicts; names the sample index and field);
                ``metric_name`` absent, or several metrics and no ``metric_name`` (lists the names
                present).
        """
        ((name, (samples, label_kind)),) = _load(Path(path), metric_name, single=True, kind=kind).items()
        dataset = _trusted(name, samples, path, label_kind)  # validated
        if scale is not None:
            dataset = dataset.with_scale(scale, judge=judge)
        _warn_unusable(dataset)
        return dataset

    def to_json(self, path: str | Path) -> None:
        """Write ``{"name", "kind", "samples"}`` JSON (UTF-8) that :meth:`from_json` reads back as
        an equal set. Fields absent when the samples were loaded are not written, so writing a
        loaded file back gives the same samples (other libraries' field names come back as Ragas')."""
        _write_json(path, {"name": self.name, "kind": self.kind, "samples": _dump_samples(self.samples)})

    def to_jsonl(self, path: str | Path) -> None:
        """Write one sample a line (UTF-8). The file does not hold the metric name or kind:
        :meth:`from_json` takes the name from ``metric_name`` or the file's stem and infers the
        kind, so write to ``<name>.jsonl`` (or pass ``metric_name``, and ``kind`` if inference
        would differ) to read back an equal set."""
        _write_jsonl(path, _dump_samples(self.samples))

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

    def __eq__(self, other: object) -> bool:
        """Equal content to another set; equal samples, in order, to a list (a Ragas slice)."""
        if isinstance(other, list):
            return self.samples == other
        return super().__eq__(other)

    def __add__(self, other: object) -> SingleMetricAnnotation:
        """A new set: these samples, then ``other``'s (a set of the same metric, or a list of
        samples), the kind checked over all of them.

        Raises:
            ValueError: sets of two metrics (their names differ) or of two label kinds.
            AnnotationError: a sample's label that does not fit the set's kind (a ValueError).
        """
        return _concatenated(self, other)

    def __radd__(self, other: object) -> SingleMetricAnnotation:
        """``[samples] + a set`` and ``sum(batches, [])``: the list's samples first."""
        return _concatenated(other, self)

    # --- Labels ---------------------------------------------------------------------------
    @property
    def is_binary(self) -> bool:
        """Whether the metric's labels are binary verdicts (``kind == "binary"``); then every
        ``metric_output`` (NaN aside) and ``target`` is 0 or 1."""
        return self.kind == "binary"

    def with_scale(self, scale: LabelScale, *, judge: str = "its judge") -> SingleMetricAnnotation:
        """This set with the kind of a metric's labels (``scale.kind``), once every label fits the
        scale: 0 or 1 for a binary metric, within ``scale.value_range`` for a numeric one. What a
        run does before any LLM call; ``judge`` names who says so in the error.

        Raises:
            AnnotationError: the first value that does not fit, naming the file, metric, sample
                index and field (``metric_output`` or ``target``).
        """
        kind = check_label_values(
            [s.metric_output for s in self.samples],
            [s.target for s in self.samples],
            scale.kind,
            value_range=scale.value_range,
            allowed=scale.label_space() if scale.kind == "nominal" else None,
            path=self.source,
            metric=self.name,
            declared_by=f"which is binary as {judge} gives verdicts 0 or 1",
            remedy="judge scores with a numeric metric (RubricJudge; in a config, metric type: rubric)",
        )
        return _trusted(self.name, self.samples, self.source, kind)

    def labels(self) -> list[float | None]:
        """Human label of every sample (None where a sample has none), aligned with ``samples``."""
        binary = self.is_binary
        return [s.human_label(binary=binary) for s in self.samples]

    def usable_indices(self) -> list[int]:
        """Positions of samples that have a human label."""
        return [i for i, label in enumerate(self.labels()) if label is not None]

    def unusable_samples(self) -> list[UnusableSample]:
        """(position, reason) of every sample without a human label, in sample order."""
        return unusable_samples(self.samples, binary=self.is_binary)

    def get_prompt_annotations(self, accepted_only: bool = True) -> dict[str, list[PromptAnnotation]]:
        """Prompt traces grouped by prompt name, in sample order; by default only those of
        accepted samples, as Ragas (a rejected sample's ``prompt_output`` is what the human
        rejected; use :meth:`SampleAnnotation.expected_output` for the approved output).
        A ``defaultdict(list)`` as Ragas': a prompt no sample holds gives ``[]``."""
        grouped: defaultdict[str, list[PromptAnnotation]] = defaultdict(list)
        for sample in self.samples:
            if sample.is_accepted or not accepted_only:
                for name, prompt in sample.prompts.items():
                    grouped[name].append(prompt)
        return grouped

    # --- Selection ------------------------------------------------------------------------
    def select(self, indices: Iterable[int]) -> SingleMetricAnnotation:
        """A new set with the samples at ``indices``, in that order (repeats allowed)."""
        samples = [self.samples[i] for i in indices]
        return _trusted(self.name, samples, self.source, self.kind)

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
        return sampling.stratify_keys(
            self.samples, self.labels, stratify_key, path=self.source, metric=self.name
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
        return self.select(sampling.sample_positions(keys, n, random_seed))

    def batch(
        self, batch_size: int, drop_last_batch: bool = False, random_seed: sampling.Seed = None
    ) -> list[SingleMetricAnnotation]:
        """The samples shuffled and cut into batches of ``batch_size`` (as Ragas): disjoint,
        covering every sample once; the last batch is short unless ``drop_last_batch`` drops it.

        Raises:
            ValueError: ``batch_size`` < 1.
        """
        rng = sampling.make_rng(random_seed)
        positions = sampling.shuffled_batches(len(self), batch_size, rng, drop_last_batch)
        return [self.select(batch) for batch in positions]

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
        :func:`promptevolver.annotations._sampling.stratified_batches` for the arithmetic.

        Raises:
            ValueError: ``batch_size`` < 1.
            AnnotationKeyError: an unknown ``stratify_key``.
        """
        keys = self.stratify_keys(stratify_key)
        rng = sampling.make_rng(random_seed)
        positions = sampling.stratified_batches(
            keys, batch_size, rng, drop_last_batch=drop_last_batch, replace=replace
        )
        return [self.select(batch) for batch in positions]

    def group_keys(self, group_key: str = sampling.GROUP_BY_INPUT) -> list[Hashable]:
        """The group of every sample for ``group_key``; shape ``(len(self),)``. Samples of one
        group are never split apart (:meth:`train_test_split`, :meth:`kfold`).

        ``"input"`` (default): the ``metric_input`` without the response(s) (``response``,
        ``response_a``, ``response_b``): every response to one prompt is one group; ``"sample"``:
        no grouping; ``"metric_input.X"``: that input field; an extra sample field (e.g.
        ``item_id``): its value. A sample without the key is a group of its own.

        Raises:
            AnnotationKeyError: an unknown key.
        """
        return sampling.group_keys(self.samples, group_key, path=self.source, metric=self.name)

    def conflicting_duplicates(self) -> list[list[int]]:
        """Positions of samples with identical ``metric_input`` whose human labels differ, one
        list per input (a judge can agree with at most one of them); empty when there are none."""
        return sampling.conflicting_duplicates(self.samples, self.labels())

    def train_test_split(
        self,
        test_size: float | int = 0.2,
        random_seed: sampling.Seed = 42,
        stratify_key: str | None = None,
        group_key: str = sampling.GROUP_BY_INPUT,
    ) -> tuple[SingleMetricAnnotation, SingleMetricAnnotation]:
        """Disjoint, covering (train, test) sets, each in sample order, stratified on
        ``stratify_key`` (default: the human label; unusable samples form a class of their own),
        no group of ``group_key`` (see :meth:`group_keys`; default: samples sharing their input
        without the response) on both sides.

        ``test_size`` is a fraction in (0, 1) of the samples (rounded, then clipped to
        [1, n - 1]) or a count in [1, n - 1]: exact when every sample is a group of its own, else
        the nearest whole groups reach (never an empty side).

        Raises:
            ValueError: fewer than 2 samples, ``test_size`` out of range, or a single group.
            AnnotationKeyError: an unknown ``stratify_key`` or ``group_key``.
        """
        n_test = sampling.split_count(test_size, len(self))  # checked before the key
        keys = self.stratify_keys(stratify_key)
        groups = self.group_keys(group_key)
        train, test = sampling.stratified_split(keys, n_test, sampling.make_rng(random_seed), groups)
        return self.select(train), self.select(test)

    def kfold(
        self,
        n_splits: int = 5,
        random_seed: sampling.Seed = 42,
        stratify_key: str | None = None,
        group_key: str = sampling.GROUP_BY_INPUT,
    ) -> list[tuple[SingleMetricAnnotation, SingleMetricAnnotation]]:
        """``n_splits`` (train, test) pairs of K-fold cross-validation: the test sets are disjoint
        and cover every sample once, each fold's classes (``stratify_key``) near the whole's, and
        a group (``group_key``) in one fold only
        (:func:`~promptevolver.annotations._sampling.stratified_group_kfold`).

        Raises:
            ValueError: ``n_splits`` < 2, or fewer groups than ``n_splits``.
            AnnotationKeyError: an unknown ``stratify_key`` or ``group_key``.
        """
        keys = self.stratify_keys(stratify_key)
        groups = self.group_keys(group_key)
        folds = sampling.stratified_group_kfold(keys, groups, n_splits, sampling.make_rng(random_seed))
        return [(self.select(train), self.select(test)) for train, test in folds]


def _concatenated(first: object, second: object) -> SingleMetricAnnotation:
    """``first``'s samples then ``second``'s, each a set or a list of samples (at least one a set)."""
    parts: list[SingleMetricAnnotation | list[Any]] = []
    for part in (first, second):
        if not isinstance(part, SingleMetricAnnotation | list):
            return NotImplemented  # Python raises its TypeError
        parts.append(part)
    sets = [p for p in parts if isinstance(p, SingleMetricAnnotation)]
    names = list(dict.fromkeys(s.name for s in sets))
    if len(names) > 1:
        raise ValueError(f"cannot concatenate the annotations of two metrics, {names[0]!r} and {names[1]!r}")
    kinds = list(dict.fromkeys(s.kind for s in sets if s.kind is not None))
    if len(kinds) > 1:
        raise ValueError(f"cannot concatenate {kinds[0]} and {kinds[1]} annotations of metric {names[0]!r}")
    samples: list[SampleAnnotation] = []
    for part in parts:
        for index, sample in enumerate(part):
            if not isinstance(sample, SampleAnnotation):
                kind_of = type(sample).__name__
                raise TypeError(f"item {index} of the list added is a {kind_of}, not a SampleAnnotation")
            samples.append(sample)
    kind = check_labels(samples, kinds[0] if kinds else None, metric=names[0])
    sources = {s.source for s in sets}
    return _trusted(names[0], samples, sources.pop() if len(sources) == 1 else None, kind)


def _trusted(
    name: str, samples: list[SampleAnnotation], source: str | Path | None, kind: LabelKind | None
) -> SingleMetricAnnotation:
    """A set of samples that are validated already, labels checked against ``kind`` (not validated
    again: 20,000 checks cost 50 ms)."""
    dataset = SingleMetricAnnotation.model_construct(name=name, samples=samples, kind=kind)
    return dataset._with_source(source)


def _warn_unusable(dataset: SingleMetricAnnotation) -> None:
    """Warn (:class:`UnusableSamplesWarning`, attributed to the loader's caller) when samples of
    ``dataset`` have no human label: how many, grouped by reason, the first 10 positions of each."""
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


def usable_label_array(dataset: SingleMetricAnnotation) -> tuple[np.ndarray, np.ndarray]:
    """(positions, labels) of usable samples as arrays of shape ``(n_usable,)``."""
    labels = dataset.labels()
    idx = np.array([i for i, y in enumerate(labels) if y is not None], dtype=np.int64)
    return idx, np.array([labels[i] for i in idx], dtype=np.float64)
