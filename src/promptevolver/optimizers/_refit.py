"""Small data: the distillation recipe chosen by cross-validation, then refit on every correction.

Below ``refit_below`` usable samples (``strategy`` auto or distill) no validation part is held out.
The train part is dealt into ``cv_folds`` stratified folds; the distillation stage climbs one
ladder per fold, each learning from the other folds' corrections, and one more ladder from every
correction, the **refit** (:mod:`._distill`; its first round applies the folds' first lessons, drawn
from the seed over every correction, and asks no lessons call of its own). The verification then
judges:

1. each fold's top rung on its own fold's samples (which it never learned from; the seed on the
   samples of a fold whose ladder learned nothing: the recipe is the seed there): every sample
   judged once by a candidate that never saw it — the **cross-validated** score of the recipe
   "climb the ladder until it stops" (Stone 1974; Hastie, Tibshirani and Friedman, *The Elements
   of Statistical Learning*, 7.10) — and the seed, for its own figure (below);
2. the recipe is kept unless the paired bootstrap over those samples says, with probability
   :data:`HURT` (0.9, or ``confidence`` when higher), that the seed is better — the ladder's rule
   (lessons learnt from human corrections stay unless the evidence says they hurt), with a
   stricter bar than ``confidence`` (0.7), because on the 18–100 samples of small data one
   judge-noise flip moves the figure by 0.01–0.05 and the folds learned from fewer corrections
   than the refit. Measured in judgeworld (54 small held-back runs): 3 recipes fell 1–3 samples
   below the seed (probability that the seed is better 0.72–0.85), and each time the refit of
   the whole recipe scored at least as well on the test split as the shallower one a 0.7 bar, or
   "not below the seed", would have chosen (0.903 / 0.903, 0.903 / 0.855, 0.781 / 0.725). The
   figure is reported as measured, below the seed's when it is. When the recipe hurts, shallower
   recipes (the folds' rung k: "k rounds") are judged on their folds, deepest first, and the
   deepest that does not hurt is kept; when every depth hurts, the seed;
3. the result is the refit ladder's rung of the chosen depth: distilled from **every**
   correction, as a model chosen by cross-validation is refit on all its data. Its honest figure
   is the recipe's cross-validated one (slightly pessimistic: each fold learned from fewer
   corrections), recorded as ``Candidate.cross_validated`` and ``scores.best.cross_validated``;
   it has no train or validation figure of its own (it learned from every sample), and costs
   no judge call.

The judge calls are one candidate's per sample and the seed's (the lower depths only when the top
one hurts), whatever ``cv_folds``; the folds' ladders cost meta calls only.

**The seed's figure from the recorded verdicts.** The annotation file already records the seed's
verdict on every sample (it is the judge the humans reviewed). When it does, the loss is a mean of
per-sample quality (accuracy, mean squared error) and there are more than
:data:`SEED_FRESH_MIN` train samples, the seed is judged afresh only on a simple random
``seed_judged_share`` of them (at least :data:`SEED_FRESH_MIN`), and its figure is the
prediction-powered one (:mod:`promptevolver.evaluation._prediction_powered`): the recorded
verdicts corrected by how the fresh ones differ from them — unbiased whatever the file recorded,
its variance in every comparison with the seed (the paired bootstrap resamples its
pseudo-outcomes). Where the fresh verdicts equal the recorded ones on fewer than
:data:`RECORDED_AGREEMENT` of the drawn samples (another model wrote them, or another
instruction), the recorded verdicts say little of this seed and it is judged on every train
sample. And when the estimate says the recipe hurts — keeping the seed drops every lesson the
humans taught — the seed is judged on every sample and the decision made on its fresh verdicts
(``seed_figure.confirmed`` keeps what the estimate said). Measured in judgeworld (22 small worlds,
66 runs): the fresh seed verdicts equal the recorded ones on 96 % of samples; a third of the
seed's judge calls.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from promptevolver.evaluation import PredictionPoweredScore, Score, prediction_powered
from promptevolver.optimizers._candidates import Candidate
from promptevolver.optimizers._run import RunContext
from promptevolver.optimizers._split import Regime
from promptevolver.optimizers._state import SearchState
from promptevolver.optimizers._views import StageView
from promptevolver.optimizers.strategies._final_choice import Paired, final_choice_rng, paired

__all__ = [
    "HURT",
    "RECORDED_AGREEMENT",
    "SEED_FRESH_MIN",
    "composite",
    "fold_positions",
    "has_refit",
    "seed_draw",
    "verify",
]

#: The probability that the seed is better, over the folds, from which a recipe hurts (see the
#: module docstring; ``confidence`` when higher).
HURT = 0.9
#: The fewest train samples the seed is judged on afresh when the recorded verdicts stand in for
#: the others (fewer train samples: it is judged on every one).
SEED_FRESH_MIN = 10
#: The share of the seed's fresh verdicts that must equal the recorded ones for the recorded
#: verdicts to stand in for the others (below it the seed is judged on every train sample).
RECORDED_AGREEMENT = 0.8
#: The stream of the seed's draw (with the run's ``random_seed``): the same samples on a resume.
_DRAW_STREAM = 2029


def has_refit(ctx: RunContext, ladder_ids: Mapping[str, Sequence[int]]) -> bool:
    """Whether the run verifies by cross-validation: it refits (:attr:`RunContext.refit`) and the
    distillation climbed the refit ladder (``ladder_ids["all"]``, the stage's record; it may hold
    no rung: then the seed is judged alone and kept)."""
    return ctx.refit and bool(ctx.folds) and "all" in ladder_ids


def fold_positions(ctx: RunContext) -> dict[int, list[int]]:
    """Fold → its judged train positions (the train focus set's, in focus order)."""
    out: dict[int, list[int]] = {f: [] for f in sorted(set(ctx.folds.values()))}
    for p in ctx.train:
        out[ctx.folds[p]].append(p)
    return out


def seed_draw(ctx: RunContext) -> list[int] | None:
    """The train positions the seed is judged on afresh (a simple random sample of
    ``seed_judged_share`` of them, at least :data:`SEED_FRESH_MIN`, in train order), or None when
    it is judged on every one: the share draws them all, a train sample has no recorded verdict,
    or the loss is not a mean of per-sample quality (see the module docstring)."""
    train = list(ctx.train)
    n = max(SEED_FRESH_MIN, math.ceil(ctx.config.seed_judged_share * len(train)))
    if n >= len(train) or ctx.loss.from_mean_quality(0.5) is None:
        return None
    if any(ctx.evidence[p].verdict is None for p in train):
        return None
    rng = np.random.default_rng((ctx.config.random_seed, _DRAW_STREAM))
    drawn = set(rng.choice(len(train), size=n, replace=False).tolist())
    return [p for i, p in enumerate(train) if i in drawn]


async def _judge_seed(
    run: StageView, items: Sequence[tuple[Candidate, list[int]]], standing: Sequence[int]
) -> tuple[Score, list[Score], dict[str, Any], dict[int, tuple[float, float, float]]]:
    """The seed's train score (prediction-powered when :func:`seed_draw` draws), the scores of
    ``items`` (judged with it, at once), the record of how the seed's figure was made, and its
    fresh verdicts (position → (y_true, y_pred, correct)). The seed is judged afresh on
    ``standing`` too (the samples of folds whose ladder learned nothing, where the recipe is the
    seed: its cross-validated verdicts there are fresh ones), recorded as ``also_judged`` (the
    estimate expects them: ``runs/_estimate.py``, ``_Plan.seed_also_judged``)."""
    ctx, seed = run.context, run.state.seed
    draw = seed_draw(ctx)
    train = list(ctx.train)
    asked = train if draw is None else [p for p in train if p in set(draw) | set(standing)]
    scores = await run.judge_each([(seed, asked), *items], "train")
    first = scores[0]
    scored = {p: (first.y_true[i], first.y_pred[i], first.correct[i]) for i, p in enumerate(asked)}
    if draw is None:
        return first, scores[1:], {"method": "judged", "fresh": len(train), "of": len(train)}, scored
    fresh = {p: (None if np.isnan(scored[p][1]) else float(scored[p][1])) for p in draw}
    recorded = {p: ctx.evidence[p].verdict for p in train}
    ppi = prediction_powered(ctx.loss, fresh, recorded, train, ctx.labels)  # type: ignore[arg-type]
    agreement = ppi.agreement
    record = {
        "method": "prediction_powered",
        "fresh": len(draw),
        "of": len(train),
        # judged afresh beyond the draw: the samples of folds that learned nothing
        "also_judged": len(asked) - len(draw),
        "agreement": None if agreement is None else round(agreement, 6),
        "agreement_needed": RECORDED_AGREEMENT,  # the threshold, not a measurement
    }
    if agreement is not None and agreement >= RECORDED_AGREEMENT:
        return ppi, scores[1:], record, scored
    full = (await run.judge_each([(seed, train)], "train"))[0]  # the drawn ones memoised: no call
    scored = {p: (full.y_true[i], full.y_pred[i], full.correct[i]) for i, p in enumerate(train)}
    return full, scores[1:], {**record, "method": "judged", "fresh": len(train)}, scored


def _part(
    ctx: RunContext, scored: Mapping[int, tuple[float, float, float]], positions: Sequence[int]
) -> Score:
    """The score of fresh verdicts (position → (y_true, y_pred, correct)) at ``positions``."""
    y_true, y_pred, correct = (
        np.array([scored[p][k] for p in positions], dtype=np.float64) for k in range(3)
    )
    return _assembled(ctx, y_true, y_pred, correct)


def ladders(
    candidates: Sequence[Candidate], ladder_ids: Mapping[str, Sequence[int]]
) -> tuple[dict[int, list[Candidate]], list[Candidate]]:
    """(fold → its ladder's rungs, the refit's rungs), each ladder in rung order, from the
    distillation stage's ``ladders`` record (``candidates``: every candidate, by id). A rung two
    ladders wrote word for word is one candidate, in both."""
    folds = {int(k): [candidates[i] for i in ids] for k, ids in ladder_ids.items() if k != "all"}
    return folds, [candidates[i] for i in ladder_ids.get("all", ())]


def composite(
    ctx: RunContext, loss_seed: Score, by_fold: Mapping[int, Score], positions: Mapping[int, list[int]]
) -> Score:
    """The cross-validated score: at each train position the judgement of its fold's candidate
    (``by_fold``: fold → score on ``positions[fold]``), the seed's (``loss_seed``, on every train
    position) where the fold has no candidate of that depth. Aligned with ``ctx.train``."""
    index = {p: i for i, p in enumerate(ctx.train)}
    y_pred, correct = loss_seed.y_pred.copy(), loss_seed.correct.copy()
    replaced = np.zeros(len(ctx.train), dtype=bool)
    for f, s in by_fold.items():
        for j, p in enumerate(positions[f]):
            y_pred[index[p]], correct[index[p]] = s.y_pred[j], s.correct[j]
            replaced[index[p]] = True
    if isinstance(loss_seed, PredictionPoweredScore) and not replaced.all():  # the seed's stay estimates
        failures = int(np.isnan(y_pred).sum())
        spliced = dataclasses.replace(loss_seed, correct=correct, y_pred=y_pred, failures=failures)
        return dataclasses.replace(spliced, value=spliced.estimate(ctx.loss, None))
    return _assembled(ctx, loss_seed.y_true, y_pred, correct)


def _assembled(ctx: RunContext, y_true: np.ndarray, y_pred: np.ndarray, correct: np.ndarray) -> Score:
    """The :class:`~promptevolver.evaluation.Score` of verdicts gathered from several judgements
    (arrays of shape ``(n,)``; ``y_pred`` NaN where an evaluation failed: counted, never scored)."""
    measured = ~np.isnan(y_pred)
    value = ctx.loss(y_true=y_true[measured], y_pred=y_pred[measured]) if measured.any() else None
    return Score(value, correct, int((~measured).sum()), y_true, y_pred)


async def verify(run: StageView, ladder_ids: Mapping[str, Sequence[int]]) -> tuple[Candidate, dict[str, Any]]:
    """Stage 2 on small data with a refit (see the module docstring): returns the chosen candidate
    (a refit rung, or the seed) and the stage's record (what was judged, each depth's figures,
    the final choice). Sets ``cross_validated`` on the seed and on the chosen refit rung.

    Raises:
        LLMUnusableError: too many of the stage's judge calls failed.
    """
    ctx, seed = run.context, run.state.seed
    folds, refit = ladders(run.state.candidates, ladder_ids)
    positions = fold_positions(ctx)
    weights = ctx.train_focus.weight_array(ctx.train)
    deepest = max((len(r) for r in folds.values()), default=0)
    tops = {f: rungs[-1] for f, rungs in folds.items() if rungs} if refit else {}
    # a fold whose ladder learned nothing: the recipe there is the seed, judged afresh on its samples
    idle = [f for f in positions if f not in tops] if tops else []
    standing = [p for f in idle for p in positions[f]]
    items = [(c, positions[f]) for f, c in tops.items()]
    seed.train, scores, seed_figure, seed_scored = await _judge_seed(run, items, standing)
    seed.cross_validated = seed.train
    # (fold, candidate) → its score on the fold: one candidate may serve several folds (two ladders
    # can write the same rung word for word), judged on each fold's own samples
    judged: dict[tuple[int, int], Score] = {(f, c.id): s for (f, c), s in zip(tops.items(), scores)}
    for f in idle:  # judged with the seed's draw
        judged[(f, seed.id)] = _part(ctx, seed_scored, positions[f])
    rng = final_choice_rng(ctx.config.random_seed)
    rows: list[dict[str, Any]] = []
    compared: dict[int | None, Paired] = {}  # depth (None: the top) → the recipe against the seed

    def judge_depth(depth: int | None) -> dict[int, Candidate]:
        """Fold → its rung of ``depth`` (None: the top), for the folds whose ladder has rungs."""
        return {f: (r[-1] if depth is None else r[min(depth, len(r)) - 1]) for f, r in folds.items() if r}

    def evaluate(depth: int | None) -> tuple[Score, dict[str, Any]]:
        chosen = judge_depth(depth)
        by_fold = {
            **{f: judged[(f, seed.id)] for f in idle},
            **{f: judged[(f, c.id)] for f, c in chosen.items()},
        }
        cv = composite(ctx, seed.train, by_fold, positions)  # type: ignore[arg-type]
        mask = np.ones(len(ctx.train), dtype=bool)
        delta, p = paired(cv, seed.train, mask, weights, rng)  # type: ignore[arg-type]
        compared[depth] = Paired(delta, p, round(cv.coverage, 6))
        row = {
            "depth": "top" if depth is None else depth,
            "rungs": {str(f): c.id for f, c in chosen.items()},
            "cross_validated": cv.estimate(ctx.loss, weights),
            "delta": delta,
            "p_better": p,
            "coverage": round(cv.coverage, 6),
        }
        rows.append(row)
        return cv, row

    strict = ctx.rule.at_confidence(HURT)  # the seed better with probability HURT, or confidence

    def hurts(depth: int | None) -> bool:
        """The seed better with probability :data:`HURT` (or ``confidence``), or not measured
        well enough (:meth:`PairedRule.eligible`, :meth:`PairedRule.not_shown_worse`)."""
        x = compared[depth]
        return not (strict.eligible(x) and strict.not_shown_worse(x))

    if not refit:  # every correction taught no general lesson: the seed, judged for its figure only
        distilled = run.state.stages.distill
        stop = "n/a" if distilled is None else distilled.stop.get("all", "n/a")
        why = (
            f"the ladder learning from every correction made no rung (it stopped: {stop}), so there is "
            "no refit to choose; the folds' candidates were not judged"
        )
        return seed, {
            **_record(ctx, seed, rows, None, why, seed_figure),
            "judged_by": {str(p): seed.id for p in ctx.train},
        }
    if not tops:  # every fold's ladder learned nothing general: nothing measured the refit's lessons
        why = (
            "no fold's ladder learned a general lesson, so the recipe was never judged on samples "
            "it did not learn from: the refit's lessons (from every correction) are unmeasured, and "
            "an instruction no measurement supports is not chosen over the seed"
        )
        return seed, {
            **_record(ctx, seed, rows, None, why, seed_figure),
            "judged_by": {str(p): seed.id for p in ctx.train},
        }
    cv, row = evaluate(None)
    if hurts(None) and isinstance(seed.train, PredictionPoweredScore):
        # an estimate says the lessons hurt: keeping the seed drops every lesson the humans taught,
        # so it is decided on the seed's fresh verdicts everywhere (the drawn ones memoised)
        said = {"delta": row["delta"], "p_better": row["p_better"]}
        seed.train = (await run.judge_each([(seed, list(ctx.train))], "train"))[0]
        seed.cross_validated = seed.train
        seed_figure = {
            **seed_figure,
            "method": "judged",
            "drawn": seed_figure["fresh"],
            "fresh": len(ctx.train),
            "confirmed": said,
        }
        rows.clear()
        compared.clear()
        cv, row = evaluate(None)
    depth: int | None = None
    if hurts(None):
        depth = -1
        for d in range(deepest - 1, 0, -1):
            need = [(f, c) for f, c in judge_depth(d).items() if (f, c.id) not in judged]
            if need:
                got = await run.judge_each([(c, positions[f]) for f, c in need], "train")
                judged.update({(f, c.id): s for (f, c), s in zip(need, got)})
            cv_d, row_d = evaluate(d)
            if not hurts(d):
                cv, row, depth = cv_d, row_d, d
                break
        if depth == -1:
            why = (
                f"the cross-validated recipe hurts: {rows[0]['delta']:+.3f} against the seed (the seed "
                f"better with probability {1.0 - rows[0]['p_better']:.2f} >= "
                f"{strict.confidence:g}), and so at every shallower depth of the folds' "
                "ladders"
                if rows[0]["delta"] is not None
                else "the folds' candidates were not measured (failed evaluations)"
            )
            return seed, _record(ctx, seed, rows, None, why, seed_figure)
    chosen = refit[-1] if depth is None else refit[min(depth, len(refit)) - 1]
    chosen.cross_validated = cv
    judges = judge_depth(depth)
    judged_by = {str(p): judges.get(ctx.folds[p], seed).id for p in ctx.train}
    k = len(positions)
    recipe = (
        "climbing the ladder until it stops"
        if depth is None
        else f"{depth} round{'s' if depth != 1 else ''} of distillation"
    )
    rung = "top rung" if depth is None else f"rung {min(depth, len(refit))}"
    why = (
        f"refit on every correction with the recipe the {k} folds chose ({recipe}): cross-validated "
        f"{row['cross_validated']:.3f} against the seed's {seed.train.estimate(ctx.loss, weights):.3f} "
        f"on {len(ctx.train)} samples ({row['delta']:+.3f}; the seed better with probability "
        f"{1.0 - row['p_better']:.2f} < {strict.confidence:g}; each sample judged by a "
        f"fold's candidate that never learned from it{_idle_said(ctx, positions, judges)}); candidate "
        f"{chosen.id} is the refit ladder's {rung}"
    )
    return chosen, {**_record(ctx, chosen, rows, row, why, seed_figure), "judged_by": judged_by}


def _idle_said(
    ctx: RunContext, positions: Mapping[int, Sequence[int]], judges: Mapping[int, Candidate]
) -> str:
    """What the cross-validated figure's "each sample judged by a fold's candidate" leaves out: the
    samples of folds whose ladder learned nothing, judged by the seed (the recipe is measured on the
    others only), and how many of them correct the recorded judge; empty when every fold learned."""
    idle = [f for f in sorted(positions) if f not in judges]
    if not idle:
        return ""
    samples = [p for f in idle for p in positions[f]]
    corrections = len(set(samples) & set(ctx.evidence_pool))
    folds = " and ".join(str(f) for f in idle)
    return (
        f", but fold {folds}'s {len(samples)}, {corrections} of them corrections, by the seed: "
        f"{'that fold' if len(idle) == 1 else 'those folds'} learned nothing, so the recipe was measured "
        f"on the other {len(ctx.train) - len(samples)} samples only"
    )


def _record(
    ctx: RunContext,
    chosen: Candidate,
    rows: list[dict[str, Any]],
    row: Mapping[str, Any] | None,
    why: str,
    seed_figure: Mapping[str, Any],
) -> dict[str, Any]:
    """The verification's final choice for a cross-validated run; ``seed_figure``: how the seed's
    figure was made (:func:`_judge_seed`), said in ``why`` too."""
    hurt = ctx.rule.at_confidence(HURT).confidence
    return {
        "regime": Regime.CROSS_VALIDATED.value,
        "stage": "verify",
        "rule": (
            f"cross-validation over {len(set(ctx.folds.values()))} folds, then a refit on every "
            "correction: the recipe is kept unless the seed is better with probability "
            f"{hurt:g}"
        ),
        "folds": len(set(ctx.folds.values())),
        "chosen": chosen.id,
        "why": f"{why}; {seed_sentence(seed_figure)}",
        "seed_figure": dict(seed_figure),
        "depths": rows,
        "delta": None if row is None else row["delta"],
        "p_better": None if row is None else row["p_better"],
        "confidence": ctx.config.confidence,
        # the probability that the seed is better from which the recipe hurts: HURT, or confidence
        # when higher (the rule above says it in words)
        "hurt_threshold": hurt,
    }


def seed_sentence(seed_figure: Mapping[str, Any]) -> str:
    """How the seed's figure was made, in words (result.json ``final_choice.seed_figure``)."""
    n, of = seed_figure.get("fresh", "n/a"), seed_figure.get("of", "n/a")
    agreement = seed_figure.get("agreement")
    equal = "n/a" if agreement is None else f"{agreement:.0%}"
    if seed_figure.get("method") == "prediction_powered":
        return (
            f"the seed's figure is prediction-powered: judged afresh on {n} of the {of} samples (drawn "
            f"at random; its verdicts equal the recorded ones on {equal} of them), the verdicts the "
            "file records standing in for the others, corrected by the fresh ones"
        )
    if seed_figure.get("confirmed"):
        said = seed_figure["confirmed"]
        if said.get("delta") is None:
            by = "was not measured well enough"
        else:
            by = (
                f"hurts ({said['delta']:+.3f}, the seed better with probability {1.0 - said['p_better']:.2f})"
            )
        return (
            f"the seed was judged on every one of the {of} samples: its prediction-powered figure (from "
            f"{seed_figure.get('drawn', 'n/a')} fresh verdicts and the recorded ones) said the recipe {by}, "
            "and the lessons are dropped only on the seed's fresh verdicts"
        )
    if agreement is not None:
        return (
            f"the seed was judged on every one of the {of} samples (its fresh verdicts equal the "
            f"recorded ones on only {equal} of the drawn ones, below "
            f"{seed_figure.get('agreement_needed', RECORDED_AGREEMENT):.0%})"
        )
    return f"the seed was judged on every one of the {of} samples"


def fold_tops(state: SearchState, ctx: RunContext) -> dict[int, Candidate]:
    """Fold → the fold's candidate of the recipe the verification chose (its ``depths`` row; the
    seed for a fold whose ladder made no rung); empty when the seed was kept."""
    verified = state.stages.verify
    assert verified is not None
    choice = verified.final_choice
    row = next((r for r in choice.get("depths", ()) if _chosen(choice, r)), None)
    if row is None or choice.get("chosen") == state.seed.id:
        return {}
    tops = {f: state.seed for f in set(ctx.folds.values())}
    return {**tops, **{int(f): state.candidates[i] for f, i in row["rungs"].items()}}


def _chosen(choice: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    return row["delta"] == choice.get("delta") and row["p_better"] == choice.get("p_better")


def errors(ctx: RunContext, cv: Score) -> list[int]:
    """Train positions the cross-validated candidates judged unlike the human (measured)."""
    return [p for i, p in enumerate(ctx.train) if cv.measured[i] and cv.correct[i] < 1.0]


async def judge_policy(
    run: StageView,
    tops: Mapping[int, Candidate],
    policy_candidates: Mapping[int, Candidate],
    shown: Sequence[int],
    static: frozenset[int],
) -> Score:
    """A policy's cross-validated score on ``shown`` (train positions, aligned with it): each position
    judged by its fold's candidate with the policy (``policy_candidates``: fold → candidate); by the
    fold's candidate without it (``tops``: fold → candidate, every fold) at the static set's own
    positions (shown as examples there, they would leak their label) and where the policy has no
    candidate. Judgements made before cost no call (memoised)."""
    ctx = run.context
    folds = {p: ctx.folds[p] for p in shown}
    items = [
        (c, [p for p in shown if folds[p] == f and p not in static]) for f, c in policy_candidates.items()
    ]
    items = [(c, pos) for c, pos in items if pos]
    base = [(c, pos) for f, c in tops.items() if (pos := [p for p in shown if folds[p] == f])]
    scores = await run.judge_each([*items, *base], "train")
    judged: dict[int, tuple[float, float]] = {}
    for (_, pos), s in zip(base, scores[len(items) :]):
        judged.update({p: (s.y_pred[j], s.correct[j]) for j, p in enumerate(pos)})
    for (_, pos), s in zip(items, scores[: len(items)]):
        judged.update({p: (s.y_pred[j], s.correct[j]) for j, p in enumerate(pos)})
    y_true = np.array([ctx.labels[p] for p in shown], dtype=np.float64)
    y_pred = np.array([judged.get(p, (np.nan, np.nan))[0] for p in shown], dtype=np.float64)
    correct = np.array([judged.get(p, (np.nan, np.nan))[1] for p in shown], dtype=np.float64)
    return _assembled(ctx, y_true, y_pred, correct)
