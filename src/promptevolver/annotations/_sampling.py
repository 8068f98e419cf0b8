"""Seeded, stratified sampling: the one home of how annotation sets are sampled, batched and split.

Four parts, none of which knows :class:`~promptevolver.annotations.SingleMetricAnnotation` (its
sampling methods call these and select the positions returned):

* **class keys** — :func:`stratify_keys`: the class of each sample for a ``stratify_key``;
* **group keys** — :func:`group_keys`: the group of each sample for a ``group_key``. Samples of
  one group share what the judge is asked about (by default its input without the response(s):
  the prompt, the question, the reference), so a group never straddles a split: several responses
  to one question, or one row per annotator of one item, are all on one side, and a score on the
  held-out side is a score on inputs the search never saw. :func:`conflicting_duplicates` finds
  samples of identical input whose human labels differ;
* **the arithmetic** — :func:`stratified_sample`, :func:`stratified_split`,
  :func:`stratified_group_kfold`, :func:`shuffled_batches`, :func:`stratified_batches`,
  :func:`largest_remainder`: each takes the class key of each item (any hashable values, shape
  ``(n,)``), for the splits optionally its group key (same shape), and a
  ``numpy.random.Generator`` and returns positions into that sequence. Every split honours the
  groups; batches do not need to (a batch is screened or shown, never held out);
* **the sets' contracts** — :func:`make_rng` (the Generator from a ``random_seed``),
  :func:`sample_positions` and :func:`split_count` (the argument checks of ``sample`` and
  ``train_test_split``).

Nothing here touches Python's global ``random`` or numpy's global state.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from promptevolver.annotations._models import SampleAnnotation, sample_key
from promptevolver.errors import AnnotationKeyError

__all__ = [
    "GROUP_BY_INPUT",
    "GROUP_NONE",
    "KEY_FIELDS",
    "RESPONSE_FIELDS",
    "class_key",
    "conflicting_duplicates",
    "group_by_class",
    "group_keys",
    "largest_remainder",
    "make_rng",
    "sample_positions",
    "shuffled_batches",
    "split_count",
    "stratified_batches",
    "stratified_sample",
    "stratified_group_kfold",
    "stratified_split",
    "stratify_keys",
]

Seed = int | np.random.Generator | None


# -- class keys ----------------------------------------------------------------------------

#: Sample fields usable as a ``stratify_key`` besides the label and extra fields.
KEY_FIELDS = ("metric_output", "is_accepted", "target")


def stratify_keys(
    samples: Sequence[SampleAnnotation],
    labels: Callable[[], Sequence[float | None]],
    stratify_key: str | None,
    *,
    path: str | None,
    metric: str,
) -> list[Hashable]:
    """The class key of every sample for ``stratify_key``; shape ``(len(samples),)``.

    ``labels`` gives the human label of each sample (read only for the label key); ``path`` and
    ``metric`` name the set in errors. See :meth:`SingleMetricAnnotation.stratify_keys
    <promptevolver.annotations.SingleMetricAnnotation.stratify_keys>` for the keys understood.

    Raises:
        AnnotationKeyError: an unknown key (the message names it and the valid forms).
    """
    if stratify_key is None or stratify_key == "label":
        return [class_key(label) for label in labels()]
    if stratify_key in KEY_FIELDS or any(stratify_key in (s.model_extra or {}) for s in samples):
        return [class_key(getattr(s, stratify_key, None)) for s in samples]
    if stratify_key.startswith("metric_input."):
        return _input_keys(samples, stratify_key.split(".", 1)[1], path=path, metric=metric)
    raise _unknown_key(samples, stratify_key, path=path, metric=metric)


def _input_keys(
    samples: Sequence[SampleAnnotation],
    field: str,
    *,
    path: str | None,
    metric: str,
    what: str = "stratify_key",
) -> list[Hashable]:
    if samples and not any(field in s.metric_input for s in samples):
        present = sorted({k for s in samples for k in s.metric_input})
        raise AnnotationKeyError(
            f"unknown {what} 'metric_input.{field}': no sample has metric_input.{field}; "
            f"metric_input fields: {present}",
            path=path,
            metric=metric,
        )
    return [class_key(s.metric_input.get(field)) for s in samples]


def _unknown_key(
    samples: Sequence[SampleAnnotation], key: str, *, path: str | None, metric: str
) -> AnnotationKeyError:
    hint = ""
    if any(key in s.metric_input for s in samples):
        hint = f" (did you mean 'metric_input.{key}'?)"
    return AnnotationKeyError(
        f"unknown stratify_key {key!r}{hint}; use 'label', 'metric_output', 'is_accepted', "
        "'target', an extra sample field or 'metric_input.<field>'",
        path=path,
        metric=metric,
    )


def class_key(value: Any) -> Hashable:
    """A hashable class key for a field value: NaN → None, lists and dicts → their JSON text."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


# -- group keys ----------------------------------------------------------------------------

#: Input fields that hold what is judged (one response, or the two of a pairwise judge): the
#: default group key leaves them out, so every response to one prompt is in one group.
RESPONSE_FIELDS = ("response", "response_a", "response_b")
#: The default ``group_key``: the judge's input without :data:`RESPONSE_FIELDS`.
GROUP_BY_INPUT = "input"
#: The ``group_key`` of no grouping: every sample is a group of its own.
GROUP_NONE = "sample"


def group_keys(
    samples: Sequence[SampleAnnotation],
    group_key: str = GROUP_BY_INPUT,
    *,
    path: str | None = None,
    metric: str = "",
) -> list[Hashable]:
    """The group of every sample for ``group_key``; shape ``(len(samples),)``.

    ``"input"`` (default): the sample's ``metric_input`` without :data:`RESPONSE_FIELDS` (and
    empty values), compared as JSON text: the samples asking about one prompt (with its reference
    and contexts) are one group. ``"sample"``: no grouping. ``"metric_input.X"``: that input field;
    an extra sample field (e.g. ``item_id``): its value. A sample whose key is missing or empty is
    a group of its own (it shares nothing).

    Raises:
        AnnotationKeyError: an unknown key (the message names it and the valid forms).
    """
    if group_key == GROUP_NONE:
        return [("sample", i) for i in range(len(samples))]
    if group_key == GROUP_BY_INPUT:
        values: list[Any] = [_prompt_of(s.metric_input) for s in samples]
    elif group_key.startswith("metric_input."):
        values = _input_keys(samples, group_key.split(".", 1)[1], path=path, metric=metric, what="group_key")
    elif any(group_key in (s.model_extra or {}) for s in samples):
        values = [class_key((s.model_extra or {}).get(group_key)) for s in samples]
    else:
        raise AnnotationKeyError(
            f"unknown group_key {group_key!r}; use 'input' (the judge's input without the response), "
            "'sample' (no grouping), 'metric_input.<field>' or an extra sample field",
            path=path,
            metric=metric,
        )
    return [("sample", i) if v in (None, "", "{}") else v for i, v in enumerate(values)]


def _prompt_of(metric_input: dict[str, Any]) -> str:
    shown = {k: v for k, v in metric_input.items() if k not in RESPONSE_FIELDS and v not in (None, "", [])}
    return json.dumps(shown, sort_keys=True, ensure_ascii=False)


def conflicting_duplicates(
    samples: Sequence[SampleAnnotation], labels: Sequence[float | None]
) -> list[list[int]]:
    """Positions of samples with the same ``metric_input`` (every field, responses included) whose
    human labels differ, one list per such input, in sample order; samples without a label are
    left out. A judge cannot agree with both: at most one of them can count as agreement."""
    by_input: dict[str, list[int]] = {}
    for i, sample in enumerate(samples):
        if labels[i] is not None:
            by_input.setdefault(sample_key(sample.metric_input), []).append(i)
    return [group for group in by_input.values() if len({labels[i] for i in group}) > 1]


# -- the sets' contracts --------------------------------------------------------------------


def sample_positions(keys: Sequence[Hashable], n: int, random_seed: Seed) -> list[int]:
    """``SingleMetricAnnotation.sample``: ``n`` distinct positions, sorted, stratified on ``keys``
    (all equal for a uniform draw).

    Raises:
        ValueError: ``n`` < 0 or ``n`` > ``len(keys)`` (the number of samples).
    """
    if not 0 <= n <= len(keys):
        raise ValueError(f"n must be in [0, {len(keys)}] (the number of samples), got {n}")
    return stratified_sample(keys, n, make_rng(random_seed))


# -- the arithmetic --------------------------------------------------------------------------


def make_rng(random_seed: Seed) -> np.random.Generator:
    """A Generator from an int seed or an existing Generator (returned as is).

    ``None`` draws fresh OS entropy: the result is then not reproducible, and unlike Ragas'
    sampling (Python's global ``random``) ``random.seed`` does not seed it. Pass an int for
    repeatable results.
    """
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if random_seed is not None and (
        isinstance(random_seed, bool) or not isinstance(random_seed, (int, np.integer))
    ):
        raise TypeError(f"random_seed must be an int, a numpy Generator or None, got {random_seed!r}")
    return np.random.default_rng(random_seed)


def _sort_key(value: Hashable) -> tuple[str, str]:
    return (type(value).__name__, repr(value))


def group_by_class(keys: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Positions of each class, classes in a deterministic order (by type name, then repr)."""
    groups: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return {k: groups[k] for k in sorted(groups, key=_sort_key)}


def largest_remainder(sizes: Sequence[int], total: int, *, at_least_one: bool = False) -> list[int]:
    """Split ``total`` into integer shares proportional to ``sizes`` (Hamilton's method).

    Shares never exceed their size. With ``at_least_one``, every non-empty class gets at least
    one when ``total`` allows it (the proportional split is kept when it already does so; else
    each non-empty class gets one first and the rest is split proportionally). Ties in
    remainders go to the larger class, then the first. Exact integer arithmetic.
    """
    sizes_list = [int(s) for s in sizes]
    n = sum(sizes_list)
    if total < 0 or total > n:
        raise ValueError(f"total must be in [0, {n}], got {total}")
    shares = _hamilton(sizes_list, total, sizes_list)
    nonempty = [s > 0 for s in sizes_list]
    if at_least_one and total >= sum(nonempty) and any(ne and sh == 0 for ne, sh in zip(nonempty, shares)):
        rest = _hamilton([s - ne for s, ne in zip(sizes_list, nonempty)], total - sum(nonempty), sizes_list)
        shares = [r + ne for r, ne in zip(rest, nonempty)]
    return shares


def _hamilton(capacity: list[int], total: int, sizes: list[int]) -> list[int]:
    """Largest-remainder split of ``total`` over ``capacity`` (ties: larger ``sizes``, then first)."""
    n = sum(capacity)
    if total == 0 or n == 0:
        return [0] * len(capacity)
    shares = [c * total // n for c in capacity]
    remainders = [c * total - s * n for c, s in zip(capacity, shares)]  # numerators over n
    order = sorted(range(len(capacity)), key=lambda i: (-remainders[i], -sizes[i], i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


def stratified_sample(keys: Sequence[Hashable], n: int, rng: np.random.Generator) -> list[int]:
    """``n`` distinct positions whose class counts follow the classes' proportions.

    Every class appears when ``n`` is at least the number of classes. Returned sorted.

    Raises:
        ValueError: ``n`` < 0 or ``n`` > ``len(keys)``.
    """
    if n < 0 or n > len(keys):
        raise ValueError(f"cannot sample {n} items from {len(keys)}")
    groups = list(group_by_class(keys).values())
    shares = largest_remainder([len(g) for g in groups], n, at_least_one=True)
    chosen: list[int] = []
    for group, share in zip(groups, shares):
        chosen.extend(rng.choice(group, size=share, replace=False).tolist())
    return sorted(chosen)


def split_count(test_size: float | int, n: int) -> int:
    """The number of test items for ``test_size`` out of ``n`` items.

    A float is a fraction in (0, 1): ``round(test_size * n)`` clipped to [1, n - 1]; an int is a
    count in [1, n - 1].

    Raises:
        ValueError: ``n`` < 2 (nothing to split), a fraction outside (0, 1), a count outside
            [1, n - 1], or a ``test_size`` that is neither (e.g. a bool).
    """
    if n < 2:
        raise ValueError(f"need at least 2 items to split into train and test, got {n}")
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float, np.integer, np.floating)):
        raise ValueError(f"test_size must be a fraction or a count, got {test_size!r}")
    if isinstance(test_size, (float, np.floating)):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size as a fraction must be in (0, 1), got {test_size}")
        return min(max(int(round(test_size * n)), 1), n - 1)
    if not 1 <= test_size <= n - 1:
        raise ValueError(f"test_size as a count must be in [1, {n - 1}], got {test_size}")
    return int(test_size)


def stratified_split(
    keys: Sequence[Hashable],
    n_test: int,
    rng: np.random.Generator,
    groups: Sequence[Hashable] | None = None,
) -> tuple[list[int], list[int]]:
    """Disjoint, covering (train, test) positions, stratified by class, each sorted.

    Without ``groups`` (or when every group has one item) the test part has exactly ``n_test``
    items. With ``groups`` (the group of each item, shape ``(n,)``) no group straddles the two
    parts: whole groups are drawn in a random order, each taken into test when it brings the test
    part's class counts closer to the stratified target for ``n_test`` (L1 distance), so the test
    part has about ``n_test`` items; never none, never all.
    """
    if groups is not None and len(set(groups)) < len(groups):
        return _grouped_split(keys, groups, n_test, rng)
    test = stratified_sample(keys, n_test, rng)
    test_set = set(test)
    train = [i for i in range(len(keys)) if i not in test_set]
    return train, test


def _members(groups: Sequence[Hashable]) -> list[list[int]]:
    """Positions of each group, groups in order of first appearance."""
    found: dict[Hashable, list[int]] = {}
    for i, group in enumerate(groups):
        found.setdefault(group, []).append(i)
    return list(found.values())


def _grouped_split(
    keys: Sequence[Hashable], groups: Sequence[Hashable], n_test: int, rng: np.random.Generator
) -> tuple[list[int], list[int]]:
    if len(groups) != len(keys):
        raise ValueError(f"groups must have one key per item: {len(groups)} for {len(keys)} items")
    by_class = group_by_class(keys)
    classes = list(by_class)
    index = {c: j for j, c in enumerate(classes)}
    target = np.array(largest_remainder([len(p) for p in by_class.values()], n_test), dtype=np.int64)
    members = _members(groups)
    if len(members) < 2:
        raise ValueError("cannot split one group into train and test: every item shares its group")
    counts = np.zeros((len(members), len(classes)), dtype=np.int64)
    for g, positions in enumerate(members):
        for i in positions:
            counts[g, index[keys[i]]] += 1
    taken = np.zeros(len(classes), dtype=np.int64)
    test_groups: list[int] = []
    for g in rng.permutation(len(members)).tolist():
        after = taken + counts[g]
        if np.abs(target - after).sum() < np.abs(target - taken).sum():
            taken = after
            test_groups.append(g)
    if not test_groups:  # every group is larger than the target: the smallest one
        test_groups = [min(range(len(members)), key=lambda g: (len(members[g]), g))]
    if len(test_groups) == len(members):
        test_groups.pop()
    test = sorted(i for g in test_groups for i in members[g])
    chosen = set(test)
    return [i for i in range(len(keys)) if i not in chosen], test


def stratified_group_kfold(
    keys: Sequence[Hashable],
    groups: Sequence[Hashable] | None,
    n_splits: int,
    rng: np.random.Generator,
) -> list[tuple[list[int], list[int]]]:
    """K-fold cross-validation that keeps every group in one fold and each fold's classes near
    the whole's proportions: ``n_splits`` (train, test) pairs of sorted positions; the test parts
    are disjoint and cover every item once. scikit-learn's ``StratifiedGroupKFold`` (shuffled,
    its seed drawn from ``rng``; ``GroupKFold`` when no class has ``n_splits`` items); ``groups``
    None: every item a group of its own.

    Raises:
        ValueError: ``n_splits`` < 2, or fewer groups than ``n_splits``.
    """
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    if n_splits < 2:
        raise ValueError(f"n_splits must be >= 2, got {n_splits}")
    group_list = list(range(len(keys))) if groups is None else list(groups)
    if len(group_list) != len(keys):
        raise ValueError(f"groups must have one key per item: {len(group_list)} for {len(keys)} items")
    members = _members(group_list)
    if len(members) < n_splits:
        raise ValueError(f"cannot make {n_splits} folds of {len(members)} groups (a fold needs a group)")
    code = {c: j for j, c in enumerate(group_by_class(keys))}
    y = np.array([code[k] for k in keys], dtype=np.int64)
    group_ids = np.empty(len(keys), dtype=np.int64)
    for g, positions in enumerate(members):
        group_ids[positions] = g
    seed = int(rng.integers(0, 2**31 - 1))
    folds: StratifiedGroupKFold | GroupKFold = StratifiedGroupKFold(
        n_splits=n_splits, shuffle=True, random_state=seed
    )
    if np.bincount(y).max() < n_splits:  # no class fills every fold: groups alone decide
        folds = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # "the least populated class has fewer members than n_splits"
        warnings.simplefilter("ignore", UserWarning)
        splits = list(folds.split(np.zeros(len(keys)), y, group_ids))
    return [(sorted(train.tolist()), sorted(test.tolist())) for train, test in splits]


def shuffled_batches(
    n: int, batch_size: int, rng: np.random.Generator, drop_last_batch: bool = False
) -> list[list[int]]:
    """A random permutation of ``range(n)`` cut into consecutive batches of ``batch_size``.

    Disjoint and covering; the last batch is short (``n % batch_size`` items) unless
    ``drop_last_batch``, which drops it. ``n == 0`` gives no batches.

    Raises:
        ValueError: ``batch_size`` < 1.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = rng.permutation(n).tolist()
    stop = n - n % batch_size if drop_last_batch else n
    return [order[i : i + batch_size] for i in range(0, stop, batch_size)]


def stratified_batches(
    keys: Sequence[Hashable],
    batch_size: int,
    rng: np.random.Generator,
    *,
    drop_last_batch: bool = False,
    replace: bool = False,
) -> list[list[int]]:
    """Split positions into batches that each mirror the class proportions.

    Classes are shuffled and laid end to end, then dealt round-robin over the batches, so each
    batch receives ⌊n_c/B⌋ or ⌈n_c/B⌉ items of a class of size n_c, and a class with at least B
    items appears in every batch. Without ``drop_last_batch`` there are B = ⌈n/batch_size⌉
    batches covering every item exactly once; their sizes differ by at most one and never exceed
    ``batch_size``. With ``drop_last_batch`` there are ⌊n/batch_size⌋ batches of exactly
    ``batch_size`` (a stratified choice of the items kept). With ``replace``, batches shorter than
    ``batch_size`` are filled with items drawn from the rest of the data (distinct within a batch).
    An empty input gives no batches.

    Raises:
        ValueError: ``batch_size`` < 1.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = len(keys)
    if n == 0:
        return []
    positions = list(range(n))
    if drop_last_batch:
        n_batches = n // batch_size
        if n_batches == 0:
            return []
        positions = stratified_sample(keys, n_batches * batch_size, rng)
    else:
        n_batches = -(-n // batch_size)
    kept_keys = [keys[i] for i in positions]
    ordered: list[int] = []
    for group in group_by_class(kept_keys).values():
        ordered.extend(positions[j] for j in rng.permutation(group).tolist())
    batches: list[list[int]] = [ordered[b::n_batches] for b in range(n_batches)]
    if replace:
        batches = [_fill(batch, batch_size, n, rng) for batch in batches]
    return batches


def _fill(batch: list[int], batch_size: int, n: int, rng: np.random.Generator) -> list[int]:
    missing = min(batch_size, n) - len(batch)
    if missing <= 0:
        return batch
    members = set(batch)
    pool = [i for i in range(n) if i not in members]
    return batch + rng.choice(pool, size=missing, replace=False).tolist()
