"""Human annotations of judge verdicts, in Ragas' annotation JSON format.

The classes mirror ``ragas.dataset_schema`` (PromptAnnotation, SampleAnnotation,
MetricAnnotation, SingleMetricAnnotation, and EvaluationDataset of SingleTurnSample with Ragas'
methods) so code written against Ragas works after changing the import line; docs/ragas.md lists
the differences. A Ragas export looks like::

    {"<metric name>": [
        {"metric_input": {...}, "metric_output": 1, "is_accepted": true, "target": null,
         "prompts": {"<prompt name>": {"prompt_input": {...}, "prompt_output": {...},
                                       "edited_output": null, "is_accepted": true}}}]}

Both loaders also read ``{"name": ..., "samples": [...]}`` files, a bare JSON list of samples and
JSONL (``.jsonl``: one sample a line, blank lines skipped); a list or JSONL file holds one metric,
named by ``metric_name`` or else by the file's stem.

**Human label** of a sample: ``target`` if present; else ``metric_output`` if the
sample is accepted; else, for a binary metric, ``1 - metric_output``; else none. A
``metric_output`` of NaN (how Ragas records a failed judge call) gives no label unless ``target``
is set. A sample without a label is *unusable*: :meth:`SingleMetricAnnotation.unusable_samples`
lists them with the reason and the loaders warn (:class:`UnusableSamplesWarning`). **Expected
output** of a prompt: ``edited_output`` if present, else ``prompt_output`` when the sample was
accepted, else none.

**Binary or numeric** (:mod:`~promptevolver.annotations._labels`): a metric's labels are 0/1
verdicts or scores. The kind is the loaders' ``kind`` argument, else the file's ``"kind"``, else
inferred: binary when more than half of the label values are exactly 0 or 1. Every label is
checked when the file is read, before anything uses it: a binary metric's ``metric_output``
(NaN aside) and ``target`` must be 0 or 1, so one 0.5 among verdicts is an error naming its
sample and field; a number is never a string or a boolean, nor a boolean a number.

Errors: a missing or malformed file or sample raises
:class:`~promptevolver.errors.AnnotationError` naming the file, metric, sample index and field
path (a missing file its subclass :class:`AnnotationFileNotFoundError`, also a
``FileNotFoundError`` as Ragas raised); so does a key given twice in one JSON object, a label
that does not fit the metric's kind, a directory given as the file, and nesting too deep to read.
An unknown metric name, sample field or stratify key raises :class:`AnnotationKeyError`, which
is also a ``KeyError``.

Differences from Ragas, on purpose: sampling methods take ``random_seed`` and never touch the
global ``random`` state (``random.seed(0)`` does not seed them); ``train_test_split`` is
implemented; slices, ``batch`` and ``stratified_batches`` give ``SingleMetricAnnotation`` sets
(sized, indexable, iterable and concatenable with ``+`` like Ragas' lists; equal to the list of
their samples); metric-input and prompt-input field names of other libraries are accepted
(:data:`FIELD_ALIASES`); multi-turn samples are not offered.

Layout: :mod:`~promptevolver.annotations._models` (the sample records, field aliases and the label
rule), :mod:`~promptevolver.annotations._io` (reading, validating and writing files),
:mod:`~promptevolver.annotations._labels` (binary or numeric labels, their check, and which samples
have none), :mod:`~promptevolver.annotations._sampling` (class keys, seeded stratified samples,
batches, splits and K-fold splits, each keeping a group of samples that share their input on one
side: the one home of sampling; :func:`stratified_group_kfold` and :func:`group_keys` are on this
face for the optimizer's cross-validation), :mod:`~promptevolver.annotations._single`
(:class:`SingleMetricAnnotation`: labels, selection, and the sampling methods that select what
``sampling`` picks), :mod:`~promptevolver.annotations._multi` (:class:`MetricAnnotation`) and
:mod:`~promptevolver.annotations._dataset` (:class:`EvaluationDataset`). No module here imports
another that imports it back (``tests/test_import_circles.py``).
"""

from promptevolver.annotations._dataset import BaseSample, EvaluationDataset, SingleTurnSample
from promptevolver.annotations._io import read_file as read_file
from promptevolver.annotations._labelling import AnnotationDocument as AnnotationDocument
from promptevolver.annotations._labelling import HumanLabel as HumanLabel
from promptevolver.annotations._labelling import LabelTarget as LabelTarget
from promptevolver.annotations._labelling import labelled_sample as labelled_sample
from promptevolver.annotations._labelling import new_sample as new_sample
from promptevolver.annotations._labelling import recorded_label as recorded_label
from promptevolver.annotations._labels import PAIRWISE as PAIRWISE
from promptevolver.annotations._labels import PAIRWISE_BINARY as PAIRWISE_BINARY
from promptevolver.annotations._labels import LabelChoice, LabelScale
from promptevolver.annotations._labels import LabelKind as LabelKind
from promptevolver.annotations._labels import check_annotator_labels as check_annotator_labels
from promptevolver.annotations._labels import check_inputs as check_inputs
from promptevolver.annotations._labels import check_recorded_verdicts as check_recorded_verdicts
from promptevolver.annotations._labels import infer_kind as infer_kind
from promptevolver.annotations._models import (
    FIELD_ALIASES,
    PromptAnnotation,
    SampleAnnotation,
    UnusableSample,
    UnusableSamplesWarning,
)
from promptevolver.annotations._models import HUMAN_REASON as HUMAN_REASON
from promptevolver.annotations._models import normalize_metric_input as normalize_metric_input
from promptevolver.annotations._models import sample_key as sample_key
from promptevolver.annotations._multi import MetricAnnotation
from promptevolver.annotations._pool import read_pool as read_pool
from promptevolver.annotations._sampling import conflicting_duplicates, group_keys, stratified_group_kfold
from promptevolver.annotations._sampling import stratified_batches as stratified_batches
from promptevolver.annotations._sampling import stratified_sample as stratified_sample
from promptevolver.annotations._sampling import stratified_split as stratified_split
from promptevolver.annotations._single import SingleMetricAnnotation
from promptevolver.annotations._single import usable_label_array as usable_label_array
from promptevolver.errors import AnnotationFileNotFoundError, AnnotationKeyError

__all__ = [
    "FIELD_ALIASES",
    "HUMAN_REASON",
    "PAIRWISE",
    "PAIRWISE_BINARY",
    "AnnotationDocument",
    "AnnotationFileNotFoundError",
    "AnnotationKeyError",
    "BaseSample",
    "EvaluationDataset",
    "HumanLabel",
    "LabelChoice",
    "LabelKind",
    "LabelScale",
    "LabelTarget",
    "MetricAnnotation",
    "PromptAnnotation",
    "SampleAnnotation",
    "SingleMetricAnnotation",
    "SingleTurnSample",
    "UnusableSample",
    "UnusableSamplesWarning",
    "check_annotator_labels",
    "check_inputs",
    "check_recorded_verdicts",
    "conflicting_duplicates",
    "group_keys",
    "infer_kind",
    "labelled_sample",
    "new_sample",
    "normalize_metric_input",
    "read_file",
    "read_pool",
    "recorded_label",
    "sample_key",
    "stratified_batches",
    "stratified_group_kfold",
    "stratified_sample",
    "stratified_split",
]
