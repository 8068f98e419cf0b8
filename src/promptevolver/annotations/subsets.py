"""The subsets behind :class:`~promptevolver.annotations.SingleMetricAnnotation`'s sampling
methods: a sample, shuffled or stratified batches, a train/test split.

Each function reads the set's class keys (:mod:`~promptevolver.annotations.strata`), makes the
Generator from ``random_seed`` (:func:`~promptevolver.annotations.sampling.make_rng`), picks
positions with the arithmetic of :mod:`~promptevolver.annotations.sampling` and returns new sets
through :meth:`SingleMetricAnnotation.select` (sharing the sample objects; same name, kind and
source). The methods' docstrings are the contract; these add no rule of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptevolver.annotations import sampling

if TYPE_CHECKING:
    from promptevolver.annotations.single import SingleMetricAnnotation

__all__ = ["batches", "sample", "stratified_batches", "train_test_split"]


def sample(
    dataset: SingleMetricAnnotation, n: int, stratify_key: str | None, random_seed: sampling.Seed
) -> SingleMetricAnnotation:
    """:meth:`SingleMetricAnnotation.sample`: ``n`` distinct samples, in sample order.

    Raises:
        AnnotationKeyError: an unknown ``stratify_key`` (checked first).
        ValueError: ``n`` < 0 or ``n`` > ``len(dataset)``.
    """
    keys = [0] * len(dataset) if stratify_key is None else dataset.stratify_keys(stratify_key)
    if not 0 <= n <= len(dataset):
        raise ValueError(f"n must be in [0, {len(dataset)}] (the number of samples), got {n}")
    return dataset.select(sampling.stratified_sample(keys, n, sampling.make_rng(random_seed)))


def batches(
    dataset: SingleMetricAnnotation, batch_size: int, drop_last_batch: bool, random_seed: sampling.Seed
) -> list[SingleMetricAnnotation]:
    """:meth:`SingleMetricAnnotation.batch`: shuffled, disjoint batches of ``batch_size``.

    Raises:
        ValueError: ``batch_size`` < 1.
    """
    rng = sampling.make_rng(random_seed)
    positions = sampling.shuffled_batches(len(dataset), batch_size, rng, drop_last_batch)
    return [dataset.select(batch) for batch in positions]


def stratified_batches(
    dataset: SingleMetricAnnotation,
    batch_size: int,
    stratify_key: str | None,
    drop_last_batch: bool,
    replace: bool,
    random_seed: sampling.Seed,
) -> list[SingleMetricAnnotation]:
    """:meth:`SingleMetricAnnotation.stratified_batches`: batches mirroring the class proportions.

    Raises:
        AnnotationKeyError: an unknown ``stratify_key`` (checked first).
        ValueError: ``batch_size`` < 1.
    """
    keys = dataset.stratify_keys(stratify_key)
    positions = sampling.stratified_batches(
        keys, batch_size, sampling.make_rng(random_seed), drop_last_batch=drop_last_batch, replace=replace
    )
    return [dataset.select(batch) for batch in positions]


def train_test_split(
    dataset: SingleMetricAnnotation,
    test_size: float | int,
    random_seed: sampling.Seed,
    stratify_key: str | None,
) -> tuple[SingleMetricAnnotation, SingleMetricAnnotation]:
    """:meth:`SingleMetricAnnotation.train_test_split`: disjoint, covering (train, test) sets.

    Raises:
        ValueError: fewer than 2 samples, or ``test_size`` out of range (checked first).
        AnnotationKeyError: an unknown ``stratify_key``.
    """
    n_test = sampling.split_count(test_size, len(dataset))
    keys = dataset.stratify_keys(stratify_key)
    train, test = sampling.stratified_split(keys, n_test, sampling.make_rng(random_seed))
    return dataset.select(train), dataset.select(test)
