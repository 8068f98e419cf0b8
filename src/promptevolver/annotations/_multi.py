"""Annotations of several metrics (:class:`MetricAnnotation`), in Ragas' multi-metric shape."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from pathlib import Path

from pydantic import PrivateAttr, model_validator

from promptevolver.annotations._dataset import EvaluationDataset
from promptevolver.annotations._io import (
    KindOption,
    _dump_samples,
    _load,
    _metric_groups,
    _write_json,
    read_file,
)
from promptevolver.annotations._labels import LabelKind, check_labels
from promptevolver.annotations._models import SampleAnnotation
from promptevolver.annotations._single import SingleMetricAnnotation, _Sourced, _trusted, _warn_unusable
from promptevolver.errors import AnnotationKeyError


class MetricAnnotation(_Sourced):
    """Annotations of several metrics: ``root`` maps a metric name to its samples (Ragas' shape).

    As in Ragas, ``len(m)`` is the number of annotations over all metrics (also
    :attr:`n_samples`), ``m["name"]`` gives a :class:`SingleMetricAnnotation` (sharing the samples
    and the source file), and ``root`` and ``from_json`` work as there. Like a read-only dict of
    metric name → annotations, ``keys()``, ``values()``, ``items()``, ``get()``, ``in`` and
    iteration go over the metrics in file order; ``len(m.keys())`` counts the metrics. It is not a
    ``collections.abc.Mapping``: a Mapping's ``len`` must count its keys, which would break Ragas'
    ``len``. Each metric has a label kind, binary or numeric
    (:mod:`~promptevolver.annotations._labels`; :attr:`kinds`), checked when the set is built or
    loaded.
    """

    root: dict[str, list[SampleAnnotation]]
    _kinds: dict[str, LabelKind] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _labels_fit_their_kinds(self) -> MetricAnnotation:
        self._kinds = {name: check_labels(samples, metric=name) for name, samples in self.root.items()}
        return self

    @property
    def kinds(self) -> dict[str, LabelKind]:
        """Metric name → the kind of its labels, ``"binary"`` or ``"numeric"``."""
        return dict(self._kinds)

    def __repr__(self) -> str:
        return f"MetricAnnotation({ {name: len(samples) for name, samples in self.root.items()} })"

    @classmethod
    def from_json(
        cls, path: str | Path, metric_name: str | None = None, *, kind: KindOption = None
    ) -> MetricAnnotation:
        """Load all metrics of a file, or only ``metric_name``. Reads every shape
        :meth:`SingleMetricAnnotation.from_json` reads. ``kind``: the label kind of every metric
        (``"binary"`` or ``"numeric"``), or metric name → kind; metrics without one take the
        file's or an inferred kind. Every label is checked here. Warns (UnusableSamplesWarning)
        when samples have no human label.

        Raises:
            AnnotationError: as :meth:`SingleMetricAnnotation.from_json` (missing/malformed file,
                repeated key, malformed sample, label that does not fit its metric's kind; names
                the metric, sample index and field), ``metric_name`` not in the file (lists the
                names present), or ``kind`` naming a metric not in the file.
        """
        metrics = _load(Path(path), metric_name, single=False, kind=kind)
        annotations = cls.model_construct(root={name: samples for name, (samples, _) in metrics.items()})
        annotations._kinds = {name: label_kind for name, (_, label_kind) in metrics.items()}  # validated
        annotations._with_source(path)
        for dataset in annotations.values():
            _warn_unusable(dataset)
        return annotations

    @staticmethod
    def names_in(path: str | Path) -> list[str]:
        """The metric names a file holds, in file order, without validating any sample (a job of
        several metrics checks its names first, then each metric's samples on their own).

        Raises:
            AnnotationError: a missing or malformed file (not a JSON object of metric → samples).
        """
        return list(_metric_groups(read_file(Path(path)), Path(path), None))

    def to_json(self, path: str | Path) -> None:
        """Write Ragas' multi-metric format; :meth:`from_json` reads back an equal object, and a
        loaded Ragas file is written back as the same JSON value (see
        :meth:`SingleMetricAnnotation.to_json`)."""
        _write_json(path, self.to_json_value())

    def to_json_value(self) -> dict[str, list[dict[str, object]]]:
        """The JSON value :meth:`to_json` writes (metric name → samples, Ragas' multi-metric
        format), for a writer of its own (``promptevolver import`` writes it atomically)."""
        return {name: _dump_samples(samples) for name, samples in self.root.items()}

    def to_evaluation_dataset(self) -> EvaluationDataset:
        """The metric inputs of every metric, metric after metric, as one :class:`EvaluationDataset`.

        Raises:
            AnnotationError: a metric input that is not a single-turn sample.
        """
        return EvaluationDataset(
            samples=[t for dataset in self.values() for t in dataset.to_evaluation_dataset()]
        )

    def __getitem__(self, key: str) -> SingleMetricAnnotation:
        """The samples of metric ``key``. Raises AnnotationKeyError (a KeyError) when absent."""
        if key not in self.root:
            raise AnnotationKeyError(
                f"metric {key!r} not present; metrics present: {sorted(self.root)}", path=self.source
            )
        samples = self.root[key]
        kind = self._kinds.get(key) or check_labels(samples, path=self.source, metric=key)
        return _trusted(key, samples, self.source, kind)

    def get(self, key: str, default: SingleMetricAnnotation | None = None) -> SingleMetricAnnotation | None:
        """The samples of metric ``key``, or ``default`` when the file has no such metric."""
        return self[key] if key in self.root else default

    def keys(self) -> KeysView[str]:
        """The metric names, in file order (a read-only view)."""
        return self.root.keys()

    def values(self) -> ValuesView[SingleMetricAnnotation]:
        """Each metric's :class:`SingleMetricAnnotation`, in file order."""
        return {name: self[name] for name in self.root}.values()

    def items(self) -> ItemsView[str, SingleMetricAnnotation]:
        """(metric name, :class:`SingleMetricAnnotation`) pairs, in file order."""
        return {name: self[name] for name in self.root}.items()

    def __contains__(self, key: object) -> bool:
        return key in self.root

    def __len__(self) -> int:
        """Number of annotations over all metrics, as Ragas' ``len`` (``len(keys())``: the metrics)."""
        return self.n_samples

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        """The metric names, in file order (as a dict's keys)."""
        return iter(self.root)

    @property
    def n_samples(self) -> int:
        """Number of annotations over all metrics (``len``)."""
        return sum(len(samples) for samples in self.root.values())
