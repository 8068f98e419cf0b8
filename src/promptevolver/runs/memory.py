"""Incremental memory: add annotations to a finished run's example store, or remove some, and
re-verify on the run's held-out samples without a search (``promptevolver examples``).

MLflow's MemAlign keeps an episodic memory of annotated examples it can add feedback to or
remove feedback from (``unalign``) without re-optimizing; a run whose chosen judge shows
teaching examples (policy ``static`` or ``retrieval``, ``docs/examples.md``) has the same
memory: ``result.json``'s ``examples.store``. :func:`update_examples` changes it and judges the
run's validation samples (found by content) with the chosen instructions before and after the
change, 0 meta calls; the run's result.json then holds the new store and, in
``examples.updates``, one record per change: what was added (dataset positions given to the new
samples) and removed, the held-out agreement before and after, the judge calls.

What changes with the policy:

* ``retrieval``: added samples can be retrieved for any input from then on; removed ones never;
* ``static``: removed samples leave the set (it is not refilled); added samples join the pool
  but not the set (the run chose the set; run again to choose another).

The held-out samples are judged leave-one-out: a store written after the run's choice holds
them too, and retrieval never shows a sample its own text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation, sample_key
from promptevolver.config import RunConfig, load_dataset
from promptevolver.errors import AnnotationError, ConfigError, LLMUnusableError
from promptevolver.judge import ExampleStore
from promptevolver.rundir import (
    FORMAT_VERSION_KEY,
    check_links,
    load_examples,
    locked,
    read_config,
    read_result,
    result_path,
    write_result,
)
from promptevolver.runs._evaluate import Scorecard, score_instructions, validation_positions

__all__ = ["MAX_FIELD_CHARS", "MAX_POOL", "changed_store", "update_examples"]


def changed_store(
    store: ExampleStore,
    policy: str,
    *,
    add: SingleMetricAnnotation | None = None,
    remove: Sequence[int] = (),
    first_position: int = 0,
) -> tuple[ExampleStore, dict[str, Any]]:
    """``store`` without the samples at dataset positions ``remove`` and with the samples of
    ``add`` (those already in the pool, by content, skipped), and what changed.

    Args:
        store: the run's store; policy: its ``static`` or ``retrieval`` policy.
        add: annotations to add (each needs a human label).
        remove: dataset positions of pool samples (``examples.store.positions``).
        first_position: the position given to the first added sample (the next ones follow).

    Returns:
        (the new store, ``{"added", "added_positions", "already_in_the_pool", "removed",
        "static_before", "static_after"}``; static sets as dataset positions).

    Raises:
        ConfigError: a position in ``remove`` that is not in the pool (nothing is changed).
        AnnotationError: an added sample without a human label (naming the file and sample).
    """
    unknown = sorted(set(remove) - set(store.positions))
    if unknown:
        raise ConfigError(
            f"positions {unknown} to remove are not in the run's example store (examples.store.positions)"
        )
    gone = set(remove)
    keep = [i for i, p in enumerate(store.positions) if p not in gone]
    new_index = {old: new for new, old in enumerate(keep)}
    kept = ExampleStore(
        [store.samples[i] for i in keep],
        [store.positions[i] for i in keep],
        k=store.k,
        min_similarity=store.min_similarity,
        binary=store.binary,
        prompt_name=store.prompt_name,
        static=[new_index[i] for i in store.static if i in new_index],
        **store.similarity_arguments(),
    )
    new, duplicates = _new_samples(kept, add)
    positions = list(range(first_position, first_position + len(new)))
    changed = kept.extended(new, positions)
    return changed, {
        "policy": policy,
        "added": len(new),
        "added_positions": positions,
        "already_in_the_pool": duplicates,
        "removed": sorted(gone),
        "static_before": store.positions_for("static", {}),
        "static_after": changed.positions_for("static", {}),
        "pool_before": len(store),
        "pool_after": len(changed),
    }


def _new_samples(store: ExampleStore, add: SingleMetricAnnotation | None) -> tuple[list[Any], int]:
    """The samples of ``add`` not in ``store`` by content, and how many were (each checked)."""
    if add is None:
        return [], 0
    have = {sample_key(s.metric_input) for s in store.samples}
    new, duplicates = [], 0
    for i, sample in enumerate(add.samples):
        why = sample.unusable_reason(binary=store.binary)
        if why is not None:
            raise AnnotationError(
                f"an added example has no human label: {why}",
                path=add.source,
                sample_index=i,
                field="metric_output",
            )
        key = sample_key(sample.metric_input)
        if key in have:
            duplicates += 1
            continue
        have.add(key)
        new.append(sample)
    return new, duplicates


async def update_examples(
    run_dir: str | Path,
    *,
    add: str | Path | None = None,
    remove: Sequence[int] = (),
    config: RunConfig | None = None,
) -> dict[str, Any]:
    """Add the annotations in the file ``add`` to the example store of the finished run in
    ``run_dir`` and remove the pool samples at dataset positions ``remove``; judge the run's
    validation samples with its chosen instructions before and after; write the new store and
    the record into the run's result.json; return the record (module docstring).

    Args:
        run_dir: a finished run directory (its result.json and config.yaml).
        add: a Ragas annotation file of the run's metric (None: add nothing).
        remove: dataset positions of pool samples to forget.
        config: the config to judge with (default: the run's config.yaml; pass one with another
            ``llm`` to re-verify elsewhere).

    Returns:
        The record: what changed (:func:`changed_store`), ``changed`` (False when every added
        sample was already in the pool and nothing was removed: then nothing is judged or
        written, ``held_out`` is None and ``judge_calls`` 0), ``held_out`` (``before``/``after``
        agreement figures on ``n`` samples, ``delta`` of the default figure), ``judge_calls``,
        ``meta_calls`` (0), ``prompt_tokens_per_judge_call`` before and after.

    Raises:
        ConfigError: the run's judge shows no teaching examples, nothing to change, an unknown
            position, no validation samples, or a file of another metric (before any LLM call).
        AnnotationError: the added file cannot be read, a sample without a human label, or a
            text field longer than :data:`MAX_FIELD_CHARS` (naming file, sample and field).
        ConfigError: the store would hold more than :data:`MAX_POOL` samples.
        LLMUnusableError: every held-out evaluation failed, before or after (nothing written).
        RunDirError: no readable result.json; another process writing the run directory (its
            lock is held from the first read to the last write, so two updates never lose one);
            a folder that cannot be written (before any LLM call).
    """
    path = result_path(run_dir)
    check_links(Path(path).parent)  # before anything of it is read through a link
    read_result(run_dir)  # a run directory: the lock creates nothing elsewhere
    with locked(Path(path).parent):  # one writer at a time: a second add waits for no one, it is refused
        return await _update(path, add=add, remove=remove, config=config)


async def _update(
    path: Path, *, add: str | Path | None, remove: Sequence[int], config: RunConfig | None
) -> dict[str, Any]:
    run_dir = path.parent
    result = read_result(run_dir)
    block = load_examples(run_dir)
    if block["policy"] == "none":
        raise ConfigError(
            f"{path}: the run's judge shows no teaching examples (examples.policy none): no store to change"
        )
    if add is None and not remove:
        raise ConfigError("nothing to change: give annotations to add, positions to remove, or both")
    config = config if config is not None else read_config(Path(path).parent)
    dataset = load_dataset(config)
    added = None if add is None else _read_added(add, str(result.get("metric")), dataset)
    store = ExampleStore.from_dict(block["store"])
    first = max([len(dataset.samples) - 1, *store.positions]) + 1
    new_store, record = changed_store(store, block["policy"], add=added, remove=remove, first_position=first)
    if not record["added"] and not record["removed"]:  # every added sample already in the pool
        return {**record, "changed": False, "held_out": None, "judge_calls": 0, "meta_calls": 0}
    _check_pool_size(len(new_store), add)
    positions = validation_positions(run_dir, dataset, config=config)
    new_block = {**block, "key": new_store.key(block["policy"]), "store": new_store.to_dict()}
    instructions = result["best_instructions"]
    before, after = [
        await score_instructions(config, instructions, positions=positions, dataset=dataset, examples=b)
        for b in (block, new_block)
    ]
    _check_measured(before, after, path)
    record.update({"changed": True, **_figures(before, after)})
    result["examples"] = {**new_block, "updates": [*block.get("updates", []), record]}
    write_result(path, {k: v for k, v in result.items() if k != FORMAT_VERSION_KEY})
    return record


#: The most samples an example store may hold after an update (a retrieval pool of the run's size
#: is hundreds; every one is in result.json and, for retrieval, embedded).
MAX_POOL = 5_000
#: The most characters one text field of an added sample may hold: a teaching example is shown in
#: the judge's prompt, and one longer than this fits no model's context beside the judged sample.
MAX_FIELD_CHARS = 20_000


def _check_pool_size(size: int, add: str | Path | None) -> None:
    if size > MAX_POOL:
        raise ConfigError(
            f"{add}: the example store would hold {size} samples, more than {MAX_POOL}; nothing was "
            "changed. Add fewer (the most informative: promptevolver suggest), or run optimize on them"
        )


def _check_fields(added: SingleMetricAnnotation) -> None:
    """Refuse an added sample with a text field longer than :data:`MAX_FIELD_CHARS` (naming the
    file, sample and field), before any call."""
    for i, sample in enumerate(added.samples):
        for field, text in _texts(sample.model_dump(mode="json"), ""):
            if len(text) > MAX_FIELD_CHARS:
                raise AnnotationError(
                    f"{len(text):,} characters, more than a teaching example may show ({MAX_FIELD_CHARS:,})",
                    path=added.source,
                    sample_index=i,
                    field=field,
                )


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _texts(item, f"{path}.{i}")


def _check_measured(before: Scorecard, after: Scorecard, path: Path) -> None:
    """Refuse an update whose held-out figures could not be measured: every evaluation failed."""
    for side, card in (("before", before), ("after", after)):
        if card.positions and not card.pairs:
            causes = sorted({j.cause or "llm" for j in card.judged.values() if j.failed})
            raise LLMUnusableError(
                f"every held-out evaluation {side} the change failed ({len(card.positions)} of "
                f"{len(card.positions)}; cause {', '.join(causes) or 'unknown'}); {path} was not changed",
                cause=causes[0] if causes else "llm",
                failures=len(card.positions),
                attempted=len(card.positions),
            )


def _read_added(add: str | Path, metric: str, dataset: SingleMetricAnnotation) -> SingleMetricAnnotation:
    """The annotations to add, as the run's metric (its label kind). Raises ConfigError for a
    file whose metric is another (a Ragas file of several metrics is read for ``metric``)."""
    added = SingleMetricAnnotation.from_json(add, metric, kind=dataset.kind)
    if added.name != metric:
        raise ConfigError(f"{add}: annotations of metric {added.name!r}, but the run optimized {metric!r}")
    _check_pool_size(len(added.samples), add)
    _check_fields(added)
    return added


def _figures(before: Scorecard, after: Scorecard) -> dict[str, Any]:
    """The held-out figures of the record (module docstring)."""
    from promptevolver.runs._gate import default_figure

    figure = default_figure(before.agreement)
    was = None if figure is None else before.agreement.to_dict().get(figure)
    now = None if figure is None else after.agreement.to_dict().get(figure)
    tokens = [c.usage.get("prompt_tokens_per_call", {}).get("judge") for c in (before, after)]
    return {
        "held_out": {
            "n": len(before.positions),
            "figure": figure,
            "before": before.agreement.to_dict(),
            "after": after.agreement.to_dict(),
            "delta": None if was is None or now is None else round(now - was, 6),
        },
        "judge_calls": before.judge_calls + after.judge_calls,
        "meta_calls": 0,
        "prompt_tokens_per_judge_call": {"before": tokens[0], "after": tokens[1]},
    }
