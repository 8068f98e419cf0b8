"""The split: which usable samples the search learns from (train) and which choose the result.

Two regimes, recorded in the result (``split.regime``):

* **held-out** (at least ``small_data`` usable samples): a validation part is set aside and the
  final choice is made on it;
* **out-of-bag** (fewer, or fewer than ``refit_below`` under the pipeline, which then
  cross-validates its recipe and refits it, :mod:`._refit`): every annotation is used both to
  learn and to choose. There is no validation part; each candidate learned only from the samples
  its lineage's meta calls were shown (``Candidate.seen``), so the others are held out *for it*,
  and the final choice compares each finalist with the seed on that finalist's unseen samples —
  out-of-bag estimation, as in bagging (Breiman, "Bagging predictors", 1996). On 18 annotations
  a 30 % validation part would hold 5 samples; out-of-bag, a finalist is compared on every
  sample it did not learn from.

:func:`make_split` draws the samples: validation gets ``round(validation_fraction · N)`` of the
N usable samples (at least 2, leaving at least 2 for train), stratified on the human label and
the kind of evidence (:mod:`._evidence`), so both parts get their share of the corrections. It
draws whole groups (``group_key``; default: the samples whose judge input is the same but for the
response, :func:`promptevolver.annotations.group_keys`): no validation sample shares its input
with a train sample, so a held-out figure is one on inputs the search never saw (with several
responses per question, an ungrouped split left 263 of 265 validation samples' questions in
train). The validation part is then as near the fraction as whole groups allow.
Candidates are judged on a *focus set* of each part (at most ``max_train_samples`` /
``max_validation_samples`` samples, :mod:`._focus`); :func:`split_sizes` gives those judged
counts (shared with ``estimate`` through :mod:`._cost`).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from promptevolver.annotations import (
    SingleMetricAnnotation,
    conflicting_duplicates,
    group_keys,
    stratified_split,
)
from promptevolver.config import GeneticConfig, match_prompt
from promptevolver.errors import AnnotationError, InsufficientDataError
from promptevolver.judge import Metric

__all__ = [
    "MIN_USABLE_SAMPLES",
    "SMALL_VALIDATION",
    "Regime",
    "Split",
    "UnshownFieldsWarning",
    "check_inputs",
    "check_prompt_names",
    "is_out_of_bag",
    "make_split",
    "refits",
    "split_sizes",
    "validation_count",
]

#: Fewer usable annotations than this cannot give a train and a validation set worth the name.
MIN_USABLE_SAMPLES = 10
#: Below this many validation samples the result carries a small-data note.
SMALL_VALIDATION = 10


class Regime(str, Enum):
    """Where a run's honest figure comes from: the one type of the held-out / out-of-bag switch
    (``split.regime``) and of the final choice's ``regime`` (result.json writes its value).

    * ``HELD_OUT``: a validation part set aside, the final choice made on it;
    * ``OUT_OF_BAG``: no validation part; each candidate compared on the samples its lineage never
      learned from (:attr:`Candidate.seen <promptevolver.optimizers._candidates.Candidate.seen>`);
    * ``CROSS_VALIDATED``: the final choice of a refit (small data, :mod:`._refit`): its figure is
      the recipe's, each sample judged by a fold's candidate that never learned from it. A final
      choice's regime only: the split of such a run is ``OUT_OF_BAG``.
    """

    HELD_OUT = "held-out"
    OUT_OF_BAG = "out-of-bag"
    CROSS_VALIDATED = "cross-validated"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, value: object) -> Regime | None:
        """The regime a record read back from JSON names (its ``regime`` value); None for none."""
        try:
            return cls(value)
        except ValueError:
            return None

    @property
    def held_out(self) -> bool:
        """Whether candidates are judged on a validation part set aside (else on train samples)."""
        return self is Regime.HELD_OUT


@dataclass(frozen=True)
class Split:
    """Sample positions (indices into ``dataset.samples``) of each part, and a note on its size.

    Attributes:
        train: positions the search learns from, in draw order.
        validation: positions the final choice is made on.
        n_usable: usable samples before the split.
        regime: :attr:`Regime.HELD_OUT`, or :attr:`Regime.OUT_OF_BAG` (no validation part).
    """

    train: list[int]
    validation: list[int]
    n_usable: int
    regime: Regime = Regime.HELD_OUT
    group_key: str = "input"
    #: Groups among the usable samples (as many as samples: no two share an input).
    n_groups: int = 0
    #: Positions of usable samples with the same input and different human labels, per input.
    conflicting: tuple[tuple[int, ...], ...] = ()

    @property
    def note(self) -> str | None:
        """A warning when validation is too small for a confident choice; None otherwise."""
        if not self.regime.held_out:
            return (
                f"small data: {self.n_usable} usable annotations, all used to learn and to choose; "
                "each finalist was compared with the seed on the samples it did not learn from"
            )
        if len(self.validation) >= SMALL_VALIDATION:
            return None
        return (
            f"small data: {self.n_usable} usable annotations leave {len(self.validation)} validation "
            "samples, so one sample moves the validation score by a large step; treat the final "
            "choice as indicative"
        )

    def to_dict(self, dataset: SingleMetricAnnotation) -> dict[str, Any]:
        """The ``split`` block of result.json."""
        return {
            "train": len(self.train),
            "validation": len(self.validation),
            "regime": self.regime.value,
            "strategy": "stratified on the human label and the kind of correction, by whole groups",
            "group_key": self.group_key,
            "groups": self.n_groups,
            "conflicting_duplicates": [list(c) for c in self.conflicting],
            "validation_positions": self.validation,
            "note": self.note,
            "unusable": [{"index": u.sample_index, "reason": u.reason} for u in dataset.unusable_samples()],
        }


def refits(n_usable: int, config: GeneticConfig) -> bool:
    """Whether a run of ``n_usable`` usable samples cross-validates the distillation recipe and
    refits it on every correction (the pipeline's small data: ``strategy`` auto or distill, fewer
    than ``refit_below``; :mod:`._refit`)."""
    return config.strategy in ("auto", "distill") and n_usable < config.refit_below


def is_out_of_bag(n_usable: int, config: GeneticConfig) -> bool:
    """Whether a run of ``n_usable`` usable samples holds no validation part: below ``small_data``,
    or when it :func:`refits`."""
    return n_usable < config.small_data or refits(n_usable, config)


def validation_count(n_usable: int, fraction: float) -> int:
    """Validation samples drawn from ``n_usable`` (before the cap): at least 2, leaving 2 for train."""
    return min(max(2, round(fraction * n_usable)), n_usable - 2)


def split_sizes(n_usable: int, config: GeneticConfig) -> tuple[int, int]:
    """(train, validation) samples a candidate is judged on, for ``n_usable`` usable samples: the
    parts' sizes capped by the focus sizes ``max_train_samples`` / ``max_validation_samples``
    (validation 0 out-of-bag: the final choice reuses the train judgements; the train part is
    every usable sample then, its focus set capped all the same, as :func:`._focus.make_focus`
    draws it)."""
    if is_out_of_bag(n_usable, config):
        return _capped(n_usable, config.max_train_samples), 0
    n_val = validation_count(n_usable, config.validation_fraction)
    return _capped(n_usable - n_val, config.max_train_samples), _capped(n_val, config.max_validation_samples)


def _capped(n: int, cap: int | None) -> int:
    return n if cap is None else min(n, cap)


def make_split(
    dataset: SingleMetricAnnotation,
    labels: Sequence[float | None],
    metric: Metric,
    config: GeneticConfig,
    rng: np.random.Generator,
    strata: Mapping[int, Hashable] | None = None,
) -> Split:
    """Draw the split from ``rng`` (see the module docstring), stratified on ``strata`` (position →
    class key; default: the human label).

    Raises:
        InsufficientDataError: fewer than :data:`MIN_USABLE_SAMPLES` usable samples.
        AnnotationError: a usable sample lacks a field the metric needs (names file, sample, field).
    """
    usable = [i for i, y in enumerate(labels) if y is not None]
    if len(usable) < MIN_USABLE_SAMPLES:
        raise InsufficientDataError(
            f"{len(usable)} usable annotations (need at least {MIN_USABLE_SAMPLES}); a sample is "
            "usable when it is accepted, has a target, or is a rejected sample of a binary metric",
            path=dataset.source,
            metric=dataset.name,
        )
    check_inputs(dataset, metric, usable)
    check_prompt_names(dataset, metric)
    all_groups = group_keys(dataset.samples, config.group_key, path=dataset.source, metric=dataset.name)
    groups = [all_groups[i] for i in usable]
    conflicting = tuple(tuple(c) for c in conflicting_duplicates(dataset.samples, labels))
    if conflicting:
        shown = ", ".join(str(list(c)) for c in conflicting[:5]) + (" …" if len(conflicting) > 5 else "")
        warnings.warn(
            f"file {dataset.source}, metric {dataset.name!r}: {len(conflicting)} inputs appear more than "
            f"once with different human labels (samples {shown}); a judge can agree with only one label "
            "of each, so agreement cannot reach 1 (result.json: split.conflicting_duplicates)",
            stacklevel=2,
        )
    if is_out_of_bag(len(usable), config):
        n_groups = len(set(groups))
        out_of_bag = Regime.OUT_OF_BAG
        return Split(list(usable), [], len(usable), out_of_bag, config.group_key, n_groups, conflicting)
    n_val = validation_count(len(usable), config.validation_fraction)
    keys = [labels[i] if strata is None else strata[i] for i in usable]
    try:
        train, val = stratified_split(keys, n_val, rng, groups)
    except ValueError as exc:  # one group holds every usable sample
        raise InsufficientDataError(
            f"{exc} (optimizer.group_key {config.group_key!r}); name another group_key, or 'sample'",
            path=dataset.source,
            metric=dataset.name,
        ) from None
    return Split(
        [usable[i] for i in train],
        [usable[i] for i in val],
        len(usable),
        group_key=config.group_key,
        n_groups=len(set(groups)),
        conflicting=conflicting,
    )


def check_prompt_names(dataset: SingleMetricAnnotation, metric: Metric) -> None:
    """Raise before any LLM call if the file keeps prompt traces under other names than the
    judge's prompts: the humans' corrected reasons would be silently lost (Python callers build
    the judge themselves; the CLI matches names when it builds the judge).

    Raises:
        ConfigError: naming the file, the judge's prompt names and the prompts present, and
            ``AspectCritic(prompt_name=...)`` as the way to name the file's prompt.
    """
    match_prompt(dataset, None, judge_prompts=list(metric.get_prompts()), renamable=False)


class UnshownFieldsWarning(UserWarning):
    """Input fields of the annotations that the judge's prompt never shows."""


def check_inputs(dataset: SingleMetricAnnotation, metric: Metric, positions: Sequence[int]) -> None:
    """Raise before any LLM call if a sample lacks a field the metric needs; warn
    (:class:`UnshownFieldsWarning`, once per message) naming the ``metric_input`` fields the judge
    does not show: its prompt never sees them, so a verdict cannot depend on them (a pairwise
    file's ``response_a`` / ``response_b`` given to a judge of one ``response``).

    Raises:
        AnnotationError: naming the file, metric, sample index and field.
    """
    unshown: dict[str, int] = {}
    for i in positions:
        inputs = dataset.samples[i].metric_input
        try:
            shown = metric.prompt_inputs(inputs)
        except AnnotationError as exc:
            raise AnnotationError(
                str(exc).split(": ", 1)[-1],
                path=dataset.source,
                metric=dataset.name,
                sample_index=i,
                field=exc.field,
            ) from exc
        for field, value in inputs.items():
            if field not in shown and value not in (None, "", []):
                unshown[field] = unshown.get(field, 0) + 1
    if unshown:
        fields = ", ".join(f"{f} ({n} samples)" for f, n in sorted(unshown.items()))
        warnings.warn(
            f"file {dataset.source}, metric {dataset.name!r}: the judge ({type(metric).__name__}) does not "
            f"show the input fields {fields}: its prompt never sees them, so no verdict can depend on "
            "them; judge them with a judge that reads them (two responses: metric type pairwise) or "
            "leave them out of metric_input",
            UnshownFieldsWarning,
            stacklevel=1,
        )
