"""What a finished search reports: scores as estimates for whole parts, and the split block.

Scores are the judged focus sets' weighted estimates of each part (:mod:`._focus`); out of bag
(small data) the ``validation`` figure is measured on the samples the chosen candidate never
learned from, where ``evaluate --split validation`` measures it again.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from promptevolver.annotations import sample_key
from promptevolver.optimizers._candidates import Candidate

if TYPE_CHECKING:
    from promptevolver.optimizers._run import RunContext

__all__ = ["KEY_DIGITS", "estimates", "lineage_entry", "out_of_bag_estimates", "split_report"]

#: Hex digits of a sample's content key kept in result.json (64 bits: no collision in practice).
KEY_DIGITS = 16


def estimates(ctx: RunContext, candidate: Candidate) -> dict[str, float | None]:
    """``candidate``'s train and validation scores as estimates for the whole parts
    (weighted by what each judged sample stands for, :mod:`._focus`); None where unmeasured."""
    out: dict[str, float | None] = {}
    for part, s, focus in (
        ("train", candidate.train, ctx.train_focus),
        ("validation", candidate.validation, ctx.validation_focus),
    ):
        out[part] = None if s is None else s.estimate(ctx.loss, focus.weight_array(focus.positions))
    return out


def out_of_bag_estimates(
    ctx: RunContext, seed: Candidate, best: Candidate
) -> dict[str, dict[str, float | None]]:
    """Small data: ``best`` and the seed on the samples ``best`` never learned from (all of
    them when ``best`` is the seed), as their ``validation`` figure. A refit chosen by
    cross-validation (``best.cross_validated``, :mod:`._refit`) has no such samples: its figure is
    the recipe's ``cross_validated`` one (the seed's: its train judgements), ``validation`` None."""
    if best.cross_validated is not None and seed.cross_validated is not None and not best.is_seed:
        weights = ctx.train_focus.weight_array(ctx.train)
        return {
            name: {
                **estimates(ctx, c),
                "validation": None,
                "cross_validated": c.cross_validated.estimate(ctx.loss, weights),  # type: ignore[union-attr]
            }
            for name, c in (("seed", seed), ("best", best))
        }
    assert seed.train is not None and best.train is not None
    mask = np.array([p not in best.seen for p in ctx.train], dtype=bool)
    values = {"seed": seed.train.value_on(ctx.loss, mask), "best": best.train.value_on(ctx.loss, mask)}
    return {
        name: {**estimates(ctx, c), "validation": values[name]}
        for name, c in (("seed", seed), ("best", best))
    }


def lineage_entry(ctx: RunContext, candidate: Candidate) -> dict[str, Any]:
    """``candidate``'s lineage entry in result.json: ``train`` is its fitness (the loss on the
    judged train samples, what the search ranked it by); ``validation`` the estimate for the whole
    validation part, the same figure as ``scores`` (None where not judged there)."""
    entry = candidate.to_dict()
    if candidate.validation is not None and ctx.split.regime.held_out:
        entry["validation"] = estimates(ctx, candidate)["validation"]
    return entry


def split_report(ctx: RunContext, best: Candidate) -> dict[str, Any]:
    """The ``split`` block of result.json: the parts, their focus sets (``focus``: the judged
    positions of each part and how many samples each stands for) and the evidence. Out
    of bag, ``validation_positions`` are the samples ``best`` never learned from: where its
    ``validation`` figure was measured (``promptevolver evaluate --split validation``).
    ``validation_keys`` identify those samples by content (:func:`sample_key`, first 16 hex
    digits), so ``evaluate`` finds them in any file, never by position alone."""
    report = ctx.split.to_dict(ctx.dataset)
    if not ctx.split.regime.held_out and best.is_seed and best.cross_validated is not None:
        # small data, the seed kept after cross-validation: it learned from no annotation, so every
        # usable one is held out for it (validation_positions below: all of them)
        report["note"] = (
            f"small data: {ctx.split.n_usable} usable annotations: the seed instruction was kept "
            "(the cross-validated recipe learned nothing general, or the folds said it hurts), so "
            "nothing was refit; it learned from none of them, so its figure on every usable "
            "annotation is a held-out one"
        )
    if not ctx.split.regime.held_out and best.cross_validated is not None and not best.is_seed:
        k = len(set(ctx.folds.values()))
        report["validation_positions"], report["validation"] = [], 0
        report["note"] = (
            f"small data: {ctx.split.n_usable} usable annotations: the distillation recipe was "
            f"cross-validated over {k} folds (each sample judged by a candidate that never learned "
            "from it), then refit on all of them; the cross-validated figure is the result's "
            "honest one (slightly pessimistic: each fold learned from fewer corrections)"
        )
    elif not ctx.split.regime.held_out:
        report["validation_positions"] = [p for p in ctx.train if p not in best.seen]
        report["validation"] = len(report["validation_positions"])
    samples = ctx.dataset.samples
    report["validation_keys"] = [
        sample_key(samples[p].metric_input)[:KEY_DIGITS] for p in report["validation_positions"]
    ]
    kinds = {
        part: Counter(ctx.evidence[p].kind for p in getattr(ctx.split, part))
        for part in ("train", "validation")
    }
    report["judged"] = {
        "train": len(ctx.train_focus.positions),
        "validation": len(ctx.validation_focus.positions),
    }
    report["focus"] = {  # what each judged sample stands for: reports estimate the whole parts with it
        part: {"positions": list(f.positions), "weights": [round(f.weights[p], 6) for p in f.positions]}
        for part, f in (("train", ctx.train_focus), ("validation", ctx.validation_focus))
    }
    report["evidence"] = {part: dict(sorted(k.items())) for part, k in kinds.items()}
    return report
