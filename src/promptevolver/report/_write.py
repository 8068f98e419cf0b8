"""Run reports: ``report.md`` and a self-contained ``report.html`` in every run directory.

``promptevolver optimize`` writes them at the end of a run; ``promptevolver report DIR``
regenerates them. They answer, in this order: is the new judge prompt better on samples it has
not seen (seed vs best on train and validation: accuracy, F1 and Cohen's kappa for a binary
metric, MSE and MAE for a numeric one), how the search went (fitness and calls per generation),
which teaching examples the judge is shown and the prompt tokens per judge call
(:mod:`promptevolver.report._examples`), where the verdicts land (confusion matrices on
validation; for a numeric metric, judge vs human scores and, on an ordinal scale, level
tables, with exact, within-one and weighted-kappa agreement), what changed in the wording (a word
diff), where it still disagrees with the humans (with the human's reason), where the winner came
from (its lineage) and what it cost (usage by operation).

Files written, each atomically (names and writer from :mod:`promptevolver.rundir`)::

    DIR/report.md            Markdown; plots linked as files
    DIR/report.html          one HTML page; CSS inline, plots embedded as base64 PNG; no network
    DIR/plots/fitness.png    best and mean train fitness per generation
    DIR/plots/calls.png      LLM calls spent per generation
    DIR/plots/regression.png judge vs human scores on validation (numeric metrics)
    DIR/plots/candidates.png the seed, the rungs or finalists and the chosen judge on validation,
                             each with its 95% interval (every run, with or without a search)
    DIR/plots/confusion.png  the seed's and the chosen judge's confusion matrices (binary metrics)
    DIR/plots/cost.png       calls and tokens per stage (per operation without stages)

A score the run did not measure (None or absent in result.json, e.g. when its evaluations
failed) is shown as ``n/a`` with the reason, never as a number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.evaluation import agreement_of, loss_label, order_swap_bias, wilson_interval
from promptevolver.judge import ORDER_SWAP
from promptevolver.optimizers import OptimizationResult, Regime, Stages, seed_kept_whole
from promptevolver.optimizers.strategies import STOP_REASONS
from promptevolver.report._data import RunFacts, lineage, load_run, seed_estimated, seed_figure, word_diff
from promptevolver.report._examples import examples_section
from promptevolver.report._plots import (
    Point,
    calls_png,
    candidates_png,
    confusion_png,
    fitness_png,
    noted,
    stage_cost_png,
)
from promptevolver.report._regression import regression_section
from promptevolver.report._render import (
    Bullets,
    Diff,
    Fold,
    Image,
    Para,
    Pre,
    Section,
    Table,
    to_html,
    to_markdown,
)
from promptevolver.rundir import (
    DRY_RUN_NOTE,
    PLOTS_DIR,
    REPORT_HTML,
    REPORT_MD,
    check_links,
    locked,
    own_folder,
    read_result,
    write_atomic,
)
from promptevolver.runs import stop_line

__all__ = ["REPORT_HTML", "REPORT_MD", "Report", "build_report", "write_report"]  # file names: rundir's

#: Disagreements listed per split at most (the count is always given).
MAX_DISAGREEMENTS = 50


@dataclass(frozen=True)
class Report:
    """A rendered report: its title, Markdown, HTML and plots (file name → PNG bytes)."""

    title: str
    markdown: str
    html: str
    images: dict[str, bytes]


def build_report(facts: RunFacts) -> Report:
    """Render the report of a run from its facts (see :func:`promptevolver.report._data.load_run`)."""
    simulated = bool(facts.result.get("simulated_llm"))
    with noted("simulated LLM: a dry run, not a model" if simulated else None):
        return _built(facts)


def _built(facts: RunFacts) -> Report:
    sections = [
        _summary(facts),
        _scores(facts),
        _recorded(facts),
        _candidates(facts),
        _pipeline(facts),
        examples_section(facts),
        _progress(facts),
        _confusion(facts),
        _wording(facts),
        _disagreements(facts),
        _finalists(facts),
        _lineage(facts),
        _usage(facts),
        _details(facts),
    ]
    kept = [s for s in sections if s is not None]
    images = {b.name: b.png for s in kept for b in s.blocks if isinstance(b, Image)}
    title = f"promptevolver report: {facts.result['metric']}"
    return Report(title, to_markdown(title, kept), to_html(title, kept), images)


def write_report(
    run_dir: str | Path, *, dataset: SingleMetricAnnotation | None = None, facts: RunFacts | None = None
) -> list[Path]:
    """Write report.md, report.html and plots/*.png into ``run_dir``; return their paths.

    Args:
        run_dir: a run directory (with result.json; config.yaml and checkpoint.json add the
            per-sample parts).
        dataset: the run's annotations, when already loaded (skips loading them again).
        facts: the run's facts, when already gathered (:func:`~promptevolver.report._data.load_run`).

    Raises:
        RunDirError: no readable result.json in ``run_dir``, or one of a newer format; a folder
            promptevolver did not make, or another process writing it (the run directory's lock,
            :func:`promptevolver.rundir.locked`, is held while the files are written); a plots
            folder or a file name that is a symbolic link.
        OSError: a file cannot be written (written atomically: an existing one is left intact).
    """
    directory = Path(run_dir)
    check_links(directory)  # before anything of it is read through a link
    read_result(directory)  # a run directory (nothing is created where there is none)
    with locked(directory):
        report = build_report(facts if facts is not None else load_run(directory, dataset=dataset))
        paths = [write_atomic(directory / REPORT_MD, report.markdown)]
        paths.append(write_atomic(directory / REPORT_HTML, report.html))
        if report.images:
            plots = own_folder(directory / PLOTS_DIR)
            paths += [write_atomic(plots / name, png) for name, png in report.images.items()]
    return paths


# --- sections ------------------------------------------------------------------------------------


def _metric_name(result: dict[str, Any]) -> str:
    return loss_label(result.get("loss") or {})


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _score(facts: RunFacts, who: str, split: str) -> float | None:
    """result.json's ``scores[who][split]``; None when the run did not measure it: None or absent
    there, or every recorded evaluation of it failed (a release-0.1 run scored those as wrong)."""
    scores = facts.result.get("scores", {}).get(who) or {}
    if split == "validation" and _cross_validated(facts):  # a refit: its honest figure
        split = "cross_validated"
    value = scores.get(split)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    all_failed = bool(facts.failed.get((who, split))) and (who, split) not in facts.agreements
    return None if all_failed else float(value)


def _unmeasured_reason(facts: RunFacts) -> str:
    """Why a score of the run is n/a, from what the run recorded about failures."""
    calls = (facts.result.get("usage") or {}).get("failures") or 0
    evaluations = sum(c.get("failures") or 0 for c in facts.result.get("lineage", []))
    recorded = len({p for positions in facts.failed.values() for p in positions})
    parts = [
        f"{calls} failed LLM calls" if calls else "",
        f"{evaluations} failed evaluations in the lineage" if evaluations else "",
        f"failed verdicts on {recorded} samples" if recorded else "",
    ]
    if any(parts):
        return f"not measured, evaluations failed: {', '.join(p for p in parts if p)}; see Usage and cost"
    return "not measured: result.json records no score there"


def _verdict(facts: RunFacts) -> str:
    r, name = facts.result, _metric_name(facts.result)
    seed, best = _score(facts, "seed", "validation"), _score(facts, "best", "validation")
    n_val = r["split"]["validation"]
    if seed is None or (best is None and r.get("best_id", 0) != 0):
        return _unmeasured_verdict(facts, seed, best)
    if _cross_validated(facts):
        n, k = r["split"]["train"], (r.get("final_choice") or {}).get("folds", "n/a")
        if r.get("best_id", 0) == 0:
            return (
                f"The distillation recipe, cross-validated over {k} folds of the {n} annotations, would "
                f"hurt, so the original (seed) instruction is kept: {name} {seed:.3f}{_seed_how(facts)}."
                f"{_agreed_sentence(facts)}"
            )
        return (
            f"The optimized instruction (candidate #{r['best_id']}) was distilled from all {n} "
            f"annotations with the recipe that {k}-fold cross-validation chose: cross-validated {name} "
            f"{best:.3f} (each sample judged by a candidate that never learned from it) against "
            f"{seed:.3f} for the original (seed) instruction{_seed_how(facts)}.{_agreed_sentence(facts)}"
        )
    if _kept_whole(facts):
        made = len(r.get("lineage") or ()) > 1
        return (
            f"{'No candidate beat the original instruction' if made else _NONE_MADE}, so the original "
            f"(seed) instruction is kept: "
            f"{name} {seed:.3f} on all {n_val} usable annotations{_seed_how(facts)} (small data: "
            f"nothing was held out, and the seed learned from none of them).{_agreed_sentence(facts)}"
        )
    if r.get("best_id", 0) == 0:
        return (
            f"No candidate beat the original instruction on the {n_val} held-out validation samples, so the "
            f"original (seed) instruction is kept: validation {name} {seed:.3f}.{_agreed_sentence(facts)}"
        )
    return (
        f"The optimized instruction (candidate #{r['best_id']}) scores validation {name} {best:.3f} on "
        f"{n_val} held-out samples, against {seed:.3f} for the original (seed) instruction."
        f"{_agreed_sentence(facts)}"
    )


#: The outcome when the seed is the only candidate (nothing to beat it).
_NONE_MADE = "No candidate was made (the distillation learned no general lesson from the corrections)"


def _unmeasured_verdict(facts: RunFacts, seed: float | None, best: float | None) -> str:
    r, name = facts.result, _metric_name(facts.result)
    n_val, reason = r["split"]["validation"], _unmeasured_reason(facts)
    if r.get("best_id", 0) == 0:
        return (
            f"The original (seed) instruction is kept, but its validation {name} on the {n_val} held-out "
            f"samples is n/a ({reason}), so this report makes no claim about how well it agrees with the "
            "humans."
        )
    return (
        f"The optimized instruction (candidate #{r['best_id']}) was chosen; validation {name} {_f(best)} on "
        f"{n_val} held-out samples against {_f(seed)} for the original (seed) instruction (n/a: {reason}), "
        "so this report makes no claim that it is better."
    )


def _seed_how(facts: RunFacts) -> str:
    """How a prediction-powered seed figure was made, in a parenthesis (else nothing)."""
    if not seed_estimated(facts.result):
        return ""
    figure = seed_figure(facts.result)
    return (
        f" (prediction-powered: judged afresh on {figure.get('fresh', 'n/a')} of {figure.get('of', 'n/a')} "
        "samples drawn at random, the verdicts the file records standing in for the others, corrected "
        "by the fresh ones)"
    )


def _agreed_sentence(facts: RunFacts) -> str:
    best, seed = facts.agreements.get(("best", "validation")), facts.agreements.get(("seed", "validation"))
    if best is None or seed is None or best.confusion is None or seed.confusion is None:
        return ""
    if facts.result.get("best_id", 0) == 0:  # the seed kept: one instruction, counted once
        failed = len(facts.failed.get(("seed", "validation"), []))
        tail = f" ({failed} failed evaluations left out)" if failed else ""
        return f" It agrees with the humans on {_diagonal(seed.confusion)} of {seed.n} judged samples{tail}."
    failed = len(facts.failed.get(("best", "validation"), [])) + len(
        facts.failed.get(("seed", "validation"), [])
    )
    tail = f" ({failed} failed evaluations left out)" if failed else ""
    return (
        f" It agrees with the humans on {_diagonal(best.confusion)} of {best.n} judged samples, "
        f"the seed on {_diagonal(seed.confusion)} of {seed.n}{tail}."
    )


def _diagonal(confusion: list[list[int]]) -> int:
    return sum(row[i] for i, row in enumerate(confusion))


def _stop_sentence(result: dict[str, Any]) -> str:
    """Why the run stopped, in the summary's own words (:func:`promptevolver.runs._outcome.stop_line`,
    one wording for the terminal and the report); a result too old to read as one: the search's."""
    try:
        line = stop_line(OptimizationResult.from_dict(result))
    except (TypeError, KeyError, AttributeError):
        return _old_stop_sentence(result)
    return f"{line[0].upper()}{line[1:]}."


def _old_stop_sentence(result: dict[str, Any]) -> str:
    cfg = result.get("config", {})
    words = STOP_REASONS.get(result["stop_reason"])
    template = words.report if words is not None and words.report else "stop reason: {reason}"
    gens = max(0, len(result.get("history", [])) - 1)
    why = template.format(
        reason=result["stop_reason"], **{k: cfg.get(k, "?") for k in ("generations", "patience")}
    )
    return f"The search ran {gens} generation(s) after the initial population and stopped because {why}."


def _cost(usage: dict[str, Any]) -> str:
    cost = usage.get("cost_usd")
    return "n/a" if cost is None else f"${cost:.4f}"


def _run_cost(facts: RunFacts) -> str:
    """What the run cost, said once for the outcome and the usage section: the dollars, or an
    unknown amount naming the models nothing prices (their calls count $0 in ``usage``)."""
    u = facts.result["usage"]
    cost = _cost(u)
    unpriced = [] if facts.config is None else facts.config.unpriced_models()
    if unpriced:
        models = ", ".join(map(repr, unpriced))
        if not u.get("cost_usd"):
            return f"an unknown amount (no price for {models}: set llm.prices, USD per 1M tokens)"
        return f"{cost} for the priced calls, plus an unknown amount for {models} (no price)"
    if facts.config is not None and facts.config.llm.provider == "fake":
        return f"{cost} (simulated LLM)"
    return cost if u.get("cost_usd") or cost == "n/a" else f"{cost} (no prices in the config)"


def _cost_sentence(facts: RunFacts) -> str:
    u = facts.result["usage"]
    calls = u["llm_calls"]["judge"] + u["llm_calls"]["meta"]
    tokens = u["prompt_tokens"] + u["completion_tokens"]
    cost = _run_cost(facts)
    return (
        f"It cost {calls} LLM calls ({u['llm_calls']['judge']} judge, {u['llm_calls']['meta']} meta), "
        f"{tokens:,} tokens and {cost}, in {facts.result.get('duration_s', 0):.1f} s."
    )


def _simulated(facts: RunFacts) -> bool:
    """Whether the simulated LLM answered (result.json says so; older results: the config's provider)."""
    if "simulated_llm" in facts.result:
        return bool(facts.result["simulated_llm"])
    return facts.config is not None and facts.config.llm.provider == "fake"


def _summary(facts: RunFacts) -> Section:
    blocks: list[Any] = [Para(_verdict(facts), lead=True)]
    if _simulated(facts):
        blocks.append(
            Para(
                "Simulated LLM: no language model was called. The judge and the prompt engineer were the "
                "built-in simulation (llm.provider fake, the default of a config without llm:), so these "
                "figures show the search on these annotations, not how a real judge agrees with the humans."
                + (
                    " Nor is the simulator the judge that recorded the file's verdicts: the seed's figure "
                    "here is the simulator's; how the recorded verdicts agree with the humans is in 'The "
                    "recorded judge' below."
                    if _recorded(facts) is not None
                    else ""
                ),
                caveat=True,
            )
        )
    note = (facts.result.get("split") or {}).get("note")
    if note:  # next to the figures it qualifies, not at the bottom
        blocks.append(Para(f"{note}.", caveat=True))
    blocks += [Para(_stop_sentence(facts.result)), Para(_cost_sentence(facts))]
    return Section("Outcome", blocks)


def _scores(facts: RunFacts) -> Section:
    r, name = facts.result, _metric_name(facts.result)
    ordinal = not facts.binary and _ordinal(facts)
    figures = ["accuracy", "F1", "Cohen's kappa"] if facts.binary else ["MSE", "MAE"]
    if _nominal(facts):
        figures = ["accuracy", "macro F1", "Cohen's kappa"]
    elif ordinal:
        figures += ["exact", "within one", "weighted kappa"]
    headers = ["instruction", "split", "samples judged", *figures, "failed"]
    # a refit, or a seed kept with nothing learned (every usable sample held out): one picture
    splits = ("validation",) if _cross_validated(facts) or _kept_whole(facts) else ("train", "validation")
    rows = [_score_row(facts, who, split) for who in ("seed", "best") for split in splits]
    blocks: list[Any] = [Table(headers, rows)]
    if any(_score(facts, who, split) is None for who in ("seed", "best") for split in splits):
        blocks.append(Para(f"{name.capitalize()} n/a: {_unmeasured_reason(facts)}."))
    swap = _order_swap_sentence(facts)
    if swap:
        blocks.append(Para(swap))
    if not facts.agreements:
        blocks.append(
            Para(f"Only {name} is recorded for this run; per-sample figures are not (see Run details).")
        )
    else:
        direction = "higher" if (r.get("loss") or {}).get("higher_is_better", True) else "lower"
        if _cross_validated(facts) or _kept_whole(facts):  # small data: one picture, every sample
            blocks.append(
                Para(
                    f"Small data: every usable annotation is in this one picture, {name} here is the figure "
                    f"of the summary line and result.json ({direction} is better). Failed evaluations are "
                    "not verdicts and are counted apart." + (_ORDINAL_NOTE if ordinal else "")
                )
            )
            return Section("Seed vs best", blocks)
        blocks.append(
            Para(
                f"Every figure is for the whole part (train or validation): when only some of its samples "
                "were judged (a focus set, corrected samples first), each judged sample is weighted by how "
                f"many it stands for, so {name} here is the figure of the summary line and result.json "
                f"({direction} is better). Failed evaluations are not verdicts and are counted apart. "
                f"The search ranked candidates by their fitness, {name} on the judged train samples "
                "unweighted (the plot and the lineage); it runs below these figures when corrected "
                "samples dominate the judged ones." + (_ORDINAL_NOTE if ordinal else "")
            )
        )
    return Section("Seed vs best", blocks)


def _score_row(facts: RunFacts, who: str, split: str) -> list[str]:
    a = facts.agreements.get((who, split))
    failed = facts.failed.get((who, split))
    size = (facts.result.get("split") or {}).get("train" if _cross_validated(facts) else split, "")
    judged = facts.judged.get((who, split))
    n = f"{a.n if a is not None else 0} of {size}" if judged is not None else f"? of {size}"
    if who == "seed" and seed_estimated(facts.result):
        figure = seed_figure(facts.result)
        n = f"{figure.get('fresh', '?')} afresh + recorded verdicts, of {size} (prediction-powered)"
    label = "original (seed)" if who == "seed" else "optimized (best)"
    recorded = _score(facts, who, split)
    # result.json says it was not measured: no figure, whatever verdicts the checkpoint holds
    figures = _figures(
        a if recorded is not None else None, facts.binary, ordinal=_ordinal(facts), nominal=_nominal(facts)
    )
    if a is None:  # no per-sample verdicts: the recorded score alone, in its own column
        figures[_loss_column(facts)] = _f(recorded)
    failures = "n/a" if failed is None else str(len(failed))
    return [label, _split_label(facts, split), n, *figures, failures]


def _loss_column(facts: RunFacts) -> int:
    """The column of the figures that the run's loss is (accuracy, F1 or MSE)."""
    return 1 if (facts.result.get("loss") or {}).get("metric") in ("f1_score", "macro_f1") else 0


def _out_of_bag(facts: RunFacts) -> bool:
    return Regime.of((facts.result.get("split") or {}).get("regime")) is Regime.OUT_OF_BAG


def _held_out_name(facts: RunFacts) -> str:
    """What the held-out picture is: ``validation``, or ``cross-validated`` for a refit."""
    return "cross-validated" if _cross_validated(facts) else "validation"


def _kept_whole(facts: RunFacts) -> bool:
    """The seed kept on small data (:func:`~promptevolver.optimizers.seed_kept_whole`)."""
    return seed_kept_whole(facts.result.get("split") or {}, facts.result.get("best_id", -1))


def _cross_validated(facts: RunFacts) -> bool:
    """A refit chosen by cross-validation (small data): its figure is ``cross_validated``."""
    return "cross_validated" in ((facts.result.get("scores") or {}).get("best") or {})


def _split_label(facts: RunFacts, split: str) -> str:
    """``train`` / ``validation``; small data (out of bag), what those parts are for the best
    candidate: every usable sample (result.json's ``scores.train``) and the ones it never learned
    from; a refit: the cross-validated verdicts (each sample judged by a fold's candidate that
    never learned from it)."""
    if _cross_validated(facts):
        return (
            "train (learned from)"
            if split == "train"
            else "cross-validated (every sample, unseen by its judge)"
        )
    if not _out_of_bag(facts):
        return split
    if split == "train":
        return "train (every usable sample)"
    if _kept_whole(facts):
        return "every usable sample (the kept seed learned from none)"
    return "validation (out of bag: never learned from)"


_ORDINAL_NOTE = (
    " On this ordinal scale: exact is the share of scores equal to the human's, within one the share at"
    " most one level off, and weighted kappa Cohen's kappa with quadratic weights (1 is perfect"
    " agreement, 0 chance)."
)


def _ordinal(facts: RunFacts) -> bool:
    """Whether the run's numeric scores are on an ordinal scale (every figure says so)."""
    return any(a.ordinal for a in facts.agreements.values())


def _nominal(facts: RunFacts) -> bool:
    """Whether the run's labels are named classes (a pairwise a / b / tie, a classification)."""
    return facts.scale is not None and facts.scale.kind == "nominal"


def _figures(a: Any, binary: bool, *, ordinal: bool = False, nominal: bool = False) -> list[str]:
    if a is None:
        return ["n/a"] * (3 if binary or nominal else 5 if ordinal else 2)
    if nominal:
        return [_f(a.accuracy), _f(a.macro_f1), _f(a.cohen_kappa, 2)]
    if binary:
        return [_f(a.accuracy), _f(a.f1), _f(a.cohen_kappa, 2)]
    extra = [_f(a.exact), _f(a.within_one), _f(a.weighted_kappa, 2)] if ordinal else []
    return [_f(a.mse, 4), _f(a.mae, 4), *extra]


def _progress(facts: RunFacts) -> Section | None:
    r = facts.result
    if not r.get("history"):
        return None
    seed: dict[str, Any] = next((c for c in r.get("lineage", []) if c.get("id") == 0), {})
    fitness = fitness_png(  # train: fitness, as the history's lines; validation: the table's figures
        r["history"],
        metric=_metric_name(r),
        higher_is_better=(r.get("loss") or {}).get("higher_is_better", True),
        scores={
            "seed": {"train": seed.get("train"), "validation": _score(facts, "seed", "validation")},
            "best": {"validation": _score(facts, "best", "validation")},
        },
    )
    judged = ((r.get("split") or {}).get("judged") or {}).get("train")
    on = f"the {judged} judged train samples" if judged else "the judged train samples"
    calls = calls_png(
        r["history"], judge_total=r["usage"]["llm_calls"]["judge"], meta_total=r["usage"]["llm_calls"]["meta"]
    )
    return Section(
        "Search progress",
        [
            Image(
                "fitness.png",
                fitness,
                f"Fitness per generation: {_metric_name(r)} on {on}, what the search ranks by (best, "
                "mean, the seed); at the right the validation figures of Seed vs best",
            ),
            Image("calls.png", calls, "LLM calls spent per generation"),
        ],
        row=True,
    )


def _confusion(facts: RunFacts) -> Section | None:
    if not (facts.binary or _nominal(facts)):
        return regression_section(facts)
    tables: list[Any] = []
    for who, label in (("seed", "Original (seed)"), ("best", "Optimized (best)")):
        a = facts.agreements.get((who, "validation"))
        if a is None or a.confusion is None:
            continue
        names = _class_names(a)
        rows = [[f"human {n}", *map(str, row)] for n, row in zip(names, a.confusion)]
        failed = len(facts.failed.get((who, "validation"), []))
        caption = f"{label}: {a.n} {_held_out_name(facts)} samples judged" + (
            f", {failed} failed" if failed else ""
        )
        tables.append(Table(["", *(f"judge {n}" for n in names)], rows, caption=caption, heat=True))
    if not tables and _kept_whole(facts):  # nothing was held out: no validation part to draw
        return Section(
            "Confusion matrices",
            [
                Para(
                    "None drawn: the seed was kept on small data, where nothing is held out; its figure "
                    "(Seed vs best) is on every usable annotation, and its verdicts, fresh or recorded, "
                    "are in samples.jsonl."
                )
            ],
        )
    if not tables:
        text = "Per-sample validation verdicts are not available."
        if facts.failed.get(("best", "validation")):
            text = "No validation verdict was measured: every evaluation failed."
        return Section(f"Confusion matrices ({_held_out_name(facts)})", [Para(text)])
    matrices, drawn = [], []
    for who, label, short in (("seed", "Original (seed)", "seed"), ("best", "Optimized (best)", "chosen")):
        found = facts.agreements.get((who, "validation"))
        if found is not None and found.confusion is not None:
            matrices.append((label, found.confusion))
            drawn.append(short)
    tables.append(Para("Rows: the human label; columns: the judge's verdict. The diagonal is agreement."))
    what = "Confusion matrices" if len(drawn) > 1 else "Confusion matrix"
    caption = f"{what}, {_held_out_name(facts)} ({', '.join(drawn)})"
    tables.append(Image("confusion.png", confusion_png(matrices), caption))
    return Section(f"Confusion matrices ({_held_out_name(facts)})", tables, row=True)


def _class_names(a: Any) -> list[str]:
    """The confusion matrix's class names: the label space's, as ``0`` / ``1`` for yes / no."""
    names = list(a.classes or [])
    if not names or names == ["no", "yes"]:
        return [str(i) for i in range(len(a.confusion))]
    return names


def _order_swap_sentence(facts: RunFacts) -> str | None:
    """Position consistency of an order-swapped pairwise judge (both orders asked), from the best
    candidate's validation judgements; None when they hold no order swap."""
    judged = facts.judgements.get(("best", "validation")) or {}
    bias = order_swap_bias(list(judged.values()))
    if bias is None or bias.consistency is None:
        return None
    first = "n/a" if bias.first_position is None else f"{bias.first_position:.3f}"
    agreed = [p for p, j in judged.items() if j.details and j.details.get(ORDER_SWAP, {}).get("consistent")]
    labelled = [p for p in agreed if facts.labels[p] is not None]
    only = ""
    if labelled:  # the verdicts both orders agree on, counted alone (unweighted)
        a = agreement_of(judged, labelled, facts.labels, binary=facts.binary, scale=facts.scale)
        only = f" On the {a.n} pairs both orders agree on, its accuracy is {_f(a.accuracy)}."
    return (
        f"Both orders (order_swap): the chosen judge named the same winner with a and with b shown "
        f"first on {bias.consistency:.3f} of {bias.pairs} validation pairs (position consistency; an "
        f"inconsistent pair counts as a tie, or as the a-first verdict without ties) and chose the "
        f"response shown first in {first} of its verdicts (0.5: no preference).{only}"
    )


def _recorded(facts: RunFacts) -> Section | None:
    """The judge the annotations record, against the humans, with no call (``agreement``'s figures)."""
    found = facts.recorded
    if found is None:
        return None
    a = found.figures
    if a.n == 0:
        text = (
            "The annotations record no verdict of their judge to compare with the humans"
            f" ({len(found.without_verdict)} labelled samples without one)."
        )
        return Section("The recorded judge (no LLM call)", [Para(text)])
    blocks: list[Any] = [
        Para(
            "The verdicts the annotation file records, against the human labels, on every usable sample "
            f"(not the split): measured with no LLM call, as `promptevolver agreement` prints them. "
            f"{a.n} samples scored, {len(found.without_verdict)} labelled without a recorded verdict."
        ),
        Pre("\n".join(line.strip() for line in found.lines()[2:]), caption="promptevolver agreement"),
    ]
    return Section("The recorded judge (no LLM call)", blocks)


def _wording(facts: RunFacts) -> Section:
    r = facts.result
    blocks: list[Any] = []
    if _simulated(facts):  # wherever an instruction is shown: it was chosen on the simulator
        blocks.append(Para(f"DRY RUN: {DRY_RUN_NOTE.removeprefix('dry run: ')}.", caveat=True))
    for prompt, best in r["best_instructions"].items():
        seed = r["seed_instructions"].get(prompt, "")
        if seed == best:
            blocks.append(Pre(best, caption=f"{prompt}: unchanged"))
            continue
        blocks.append(
            Diff(
                word_diff(seed, best),
                caption=f"{prompt}: removed words struck through, added words highlighted",
            )
        )
        blocks.append(Pre(best, caption=f"{prompt}: the optimized instruction in full"))
    return Section("What changed in the instruction", blocks)


def _disagreements(facts: RunFacts) -> Section:
    blocks: list[Any] = []
    for split in ("validation", "train"):
        if not facts.positions.get(split) and facts.positions.get(
            "validation" if split == "train" else "train"
        ):
            continue  # a part the run does not have (small data: one picture of every sample)
        if ("best", split) not in facts.judgements:
            blocks.append(Para(f"{split.capitalize()}: per-sample verdicts are not available."))
            continue
        found = facts.disagreements(split)
        failed = len(facts.failed.get(("best", split), []))
        judged = len(facts.positions.get(split, [])) - failed
        summary = f"{_split_label(facts, split).capitalize()}: {len(found)} of {judged} samples disagree"
        summary += f"; {failed} could not be judged (failed evaluations, left out)." if failed else "."
        listed = _disagreement_blocks(found)
        if split == "train" and listed:  # held-out samples matter most; train ones stay folded
            blocks.append(Fold(summary, listed))
        else:
            blocks += [Para(summary), *listed]
    return Section("Where the best prompt still disagrees with the humans", blocks)


def _idle_folds(facts: RunFacts) -> str:
    """A refit's folds whose ladder learned nothing, in words: on their samples the recipe is the
    seed, so the cross-validated figure there is the seed's verdicts (empty when there are none)."""
    distilled = Stages.from_dict(facts.result.get("stages")).distill
    by = facts.cross_validated_by
    if distilled is None or not by or facts.result.get("best_id", 0) == 0:
        return ""
    idle = [name for name, ids in sorted((distilled.ladders or {}).items()) if name != "all" and not ids]
    if not idle:
        return ""
    seeds = sum(1 for c in by.values() if c == 0)
    names = " and ".join(f"fold {name}" for name in idle)
    stops = ", ".join(f"{distilled.stop.get(name, 'n/a')}" for name in idle)
    return (
        f"The ladder of {names} learned nothing general (it stopped: {stops}), so on "
        f"{'its' if len(idle) == 1 else 'their'} {seeds} samples the recipe is the original (seed) "
        "instruction: the cross-validated figure there is the seed's verdicts, judged afresh (a "
        "disagreement there names the seed as its judge)."
    )


def _disagreement_blocks(found: list[Any]) -> list[Para | Table]:
    if not found:
        return []
    shown = found[:MAX_DISAGREEMENTS]
    reference = any(d.inputs.get("reference") for d in shown)  # the judge saw it: so does the reader
    by = any(d.judged_by is not None for d in shown)  # a refit's: each verdict a fold candidate's
    headers = ["sample", "question", *(["reference"] if reference else []), "response"]
    headers += ["human", "judge", *(["judged by"] if by else []), "judge's reason", "human's reason"]
    blocks: list[Para | Table] = [Table(headers, [_disagreement_row(d, reference, by) for d in shown])]
    if len(found) > MAX_DISAGREEMENTS:
        blocks.append(Para(f"… and {len(found) - MAX_DISAGREEMENTS} more."))
    return blocks


def _short(value: Any, limit: int = 240) -> str:
    """``value`` on one line, at most ``limit`` characters, cut on the right at a word."""
    text = " ".join(str(value or "").split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def _disagreement_row(d: Any, reference: bool = False, by: bool = False) -> list[str]:
    human = d.human_reason or f"({d.human_action}; no reason given)"
    if d.human_reason and d.human_action != "accepted":
        human = f"{d.human_reason} ({d.human_action})"
    verdict = "n/a" if d.verdict is None else f"{d.verdict:g}"
    who = "the seed (its fold learned nothing)" if d.judged_by == 0 else f"#{d.judged_by}"
    return [
        f"#{d.position}",
        _short(d.inputs.get("user_input"), 160),
        *([_short(d.inputs.get("reference"), 160)] if reference else []),
        _short(d.inputs.get("response"), 140),
        f"{d.label:g}",
        verdict,
        *([who] if by else []),
        _short(d.judge_reason),
        _short(human, 400),
    ]


def _changes(seed: Mapping[str, Any], candidate: Mapping[str, Any], limit: int = 1000) -> str:
    """What ``candidate``'s instructions say that the seed's do not: their lines absent from the
    seed's, in order, joined by " / " and cut on the right at a word (never from the left, which
    left fragments such as "…e response"); the seed itself: "(the original instruction)"."""
    added = []
    for prompt, text in candidate.items():
        before = {" ".join(line.split()) for line in str(seed.get(prompt, "")).splitlines()}
        added += [
            flat for line in str(text).splitlines() if (flat := " ".join(line.split())) and flat not in before
        ]
    return _short(" / ".join(added), limit) if added else "(the original instruction)"


def _finalists(facts: RunFacts) -> Section | None:
    """How the final choice was made: every finalist against the seed (difference on the samples
    held out for it, probability that it is better), so a finalist that lost is visible too."""
    choice = facts.result.get("final_choice") or {}
    if choice.get("finalists"):
        measured = any(f.get("delta") is not None for f in choice["finalists"])
        return _paired_finalists(facts, choice) if measured else None
    judged = [c for c in facts.result.get("lineage", []) if c.get("validation") is not None]
    if len(judged) < 2:
        return None
    higher = (facts.result.get("loss") or {}).get("higher_is_better", True)
    judged.sort(key=lambda c: (-c["validation"] if higher else c["validation"], c["id"]))
    chosen = facts.result.get("best_id")
    rows = [
        [
            f"#{c['id']}" + (" (chosen)" if c["id"] == chosen else ""),
            c["operator"],
            _f(c.get("train")),
            _f(c["validation"]),
            _changes(facts.result["seed_instructions"], c["instructions"]),
        ]
        for c in judged
    ]
    intro = Para(
        "The candidates judged on validation: the seed and the best on train (each shown by the lines it "
        "adds to the original instruction). On a tie the seed wins, then the shorter instruction."
    )
    return Section(
        "Finalists", [intro, Table(["candidate", "operator", "train", "validation", "instruction"], rows)]
    )


def _paired_finalists(facts: RunFacts, choice: dict[str, Any]) -> Section:
    by_id = {c["id"]: c for c in facts.result.get("lineage", [])}
    chosen = choice.get("chosen")
    rows = [["#0 (seed)" + (" (chosen)" if chosen == 0 else ""), "seed", "0 (reference)", "", ""]]
    for f in choice["finalists"]:
        c = by_id.get(f["id"], {})
        delta = "n/a" if f.get("delta") is None else f"{f['delta']:+.3f}"
        rows.append(
            [
                f"#{f['id']}" + (" (chosen)" if f["id"] == chosen else ""),
                str(c.get("operator", "")),
                delta,
                "n/a" if f.get("p_better") is None else f"{f['p_better']:.2f}",
                _changes(facts.result["seed_instructions"], c.get("instructions", {})),
            ]
        )
    where = (
        "the samples each finalist never learned from (small data: out-of-bag)"
        if Regime.of(choice.get("regime")) is Regime.OUT_OF_BAG
        else "the validation samples"
    )
    intro = Para(
        f"Each finalist was compared with the seed on {where}: Δ is its per-sample agreement minus "
        f"the seed's, p the probability that it is better (paired bootstrap)."
        + (f" Chosen: #{chosen}, {choice['why']}." if choice.get("why") else "")
    )
    headers = ["candidate", "operator", "Δ vs seed", "p better", "added to the original instruction"]
    return Section("Finalists", [intro, Table(headers, rows)])


def _candidates(facts: RunFacts) -> Section | None:
    """The candidates on validation with their 95% intervals: the seed, every candidate judged
    there (the ladder's rungs, the finalists) and the chosen judge, drawn with or without a search."""
    r = facts.result
    cv = _cross_validated(facts)  # a refit: every usable sample, each judged by a fold's candidate
    n = (r.get("split") or {}).get("train" if cv else "validation")
    proportion = (r.get("loss") or {}).get("metric") == "accuracy" and isinstance(n, int) and n > 0
    by_id = {c["id"]: c for c in r.get("lineage", [])}
    best = r.get("best_id", 0)
    values: dict[int, float] = {}
    for c in r.get("lineage", []):
        out_of_bag = Regime.of(r.get("split", {}).get("regime")) is Regime.OUT_OF_BAG
        if isinstance(c.get("validation"), (int, float)) and not out_of_bag:
            values[c["id"]] = float(c["validation"])
    for who, cid in (("seed", 0), ("best", best)):
        if (value := _score(facts, who, "validation")) is not None:
            values[cid] = value
    if not values:
        return None
    points = []
    for cid in sorted(values, key=lambda i: (i != 0, i)):
        c = by_id.get(cid, {})
        low = high = None
        if proportion and not (cid == 0 and seed_estimated(r)):  # an estimate's is no Wilson interval
            assert isinstance(n, int)
            low, high = wilson_interval(round(values[cid] * n), n)
        name = "seed" if cid == 0 else str(c.get("operator", "")).replace("_", " ")
        policy = c.get("examples")
        shown = f" + {policy} examples" if policy and policy != "none" else ""
        points.append(Point(f"#{cid} {name}{shown}", values[cid], low, high, cid == best, cid == 0))
    name = _metric_name(r)
    figure = "cross-validated" if cv else "validation"
    png = candidates_png(
        points,
        metric=name,
        higher_is_better=(r.get("loss") or {}).get("higher_is_better", True),
        samples=n,
        figure=figure,
    )
    if proportion:
        interval = (
            f"with the Wilson 95% interval on {n} samples: overlapping bars are differences this many "
            "annotations cannot tell apart"
        )
    else:
        interval = f"on {n} samples, without an interval (drawn for accuracy only)"
    judged = (
        "the chosen refit, each sample judged by a fold's candidate that never learned from it"
        if cv
        else "each candidate judged on validation and the chosen judge"
    )
    caption = f"{figure.capitalize()} {name} of the seed and of {judged} (starred), {interval}."
    if proportion and seed_estimated(r):
        caption += " The seed's figure is prediction-powered (see Notes): drawn without an interval."
    title = "Candidates, cross-validated" if cv else "Candidates on validation"
    return Section(title, [Image("candidates.png", png, caption)])


def _pipeline(facts: RunFacts) -> Section | None:
    """The distill-first pipeline: each stage's calls, tokens and seconds, the ladder of distilled
    rungs with the lessons each applied (and their evidence), and the lessons left out."""
    result = facts.result
    stages = Stages.from_dict(result.get("stages"))
    if not len(stages):
        return None
    rows = []
    for st in (stages.distill, stages.verify, stages.examples, stages.cross_fit, stages.search):
        if st is None or not st.ran:
            continue
        rows.append(
            [
                st.name,
                str(st.cost.judge_calls),
                str(st.cost.meta_calls),
                f"{st.cost.tokens:,}",
                _f(st.cost.prompt_tokens_per_judge_call, 1),
                f"{(result.get('stage_seconds') or {}).get(st.name, 0):.1f}",
            ]
        )
    search, verified = stages.search, stages.verify
    produced = {
        "seed": "the seed (nothing beat it)"
        if len(result.get("lineage") or ()) > 1
        else "the seed (no other candidate was made)",
        "distill": "a distilled rung",
        "examples": "the examples stage",
        "cross_fit": "the cross-fit stage (lessons from the held-out corrections)",
        "search": "the search",
    }
    intro = Para(
        f"Strategy {result.get('strategy', 'n/a')}. The result comes from "
        f"{produced.get(result.get('produced_by', ''), 'n/a')}. Search: "
        + (
            "ran, because " + str(search.why)
            if search is not None and search.ran
            else f"not run ({'n/a' if search is None else search.why})"
        )
        + f". Racing saved {0 if verified is None else verified.saved_judge_calls} judge calls "
        f"({(result.get('racing') or {}).get('lower_rungs', 'n/a')})."
    )
    headers = ["stage", "judge calls", "meta calls", "tokens", "prompt tokens / judge call", "seconds"]
    blocks: list[Any] = [intro, Table(headers, rows)]
    lessons = result.get("lessons") or []
    by_round: dict[Any, list[str]] = {}
    for x in lessons:
        if x.get("applied_round") is not None:
            by_round.setdefault((x.get("fold"), x["applied_round"]), []).append(
                f"{_short(x['text'], 160)} (evidence {x['evidence']})"
            )
    lineage = {c["id"]: c for c in result.get("lineage", []) if c.get("operator") == "distill"}
    ladder_rows = []
    # each ladder's rungs by candidate id (stages.distill.ladders: "0", "1", ... and "all", the refit),
    # rung k made by the ladder's k-th round that applied lessons; a rung two ladders wrote word for
    # word is one candidate, shown in both
    distilled = stages.distill
    ladders: Mapping[str, Sequence[int]] = (distilled.ladders if distilled is not None else {}) or {
        "all": sorted(lineage)
    }
    for name in sorted(ladders, key=lambda k: (k == "all", k)):
        fold = None if name == "all" else int(name)
        rounds = sorted(r for f, r in by_round if f == fold)
        for cid, round_ in zip(ladders[name], rounds):
            rung = lineage.get(cid, {"id": cid})
            chosen = " (chosen)" if cid == result.get("best_id") else ""
            ladder_rows.append(
                [
                    f"#{cid}{chosen}",
                    "all" if fold is None else str(fold),
                    str(round_),
                    _f(rung.get("validation")),
                    "; ".join(by_round[(fold, round_)]),
                ]
            )
    if ladder_rows:
        blocks += [
            Para(
                "The ladder: rung k holds what k rounds learned; each row the lessons its round applied, "
                "best evidenced first (evidence = corrections a lesson explains)."
            ),
            Table(["rung", "fold", "round", "validation", "lessons applied"], ladder_rows),
        ]
    idle = _idle_folds(facts)
    if idle:
        blocks.append(Para(idle))
    left = _not_applied(lessons)
    if left:
        facts_left = sum(1 for x in left if x.get("sample_fact"))
        left_out = sum(1 for x in left if not x.get("sample_fact") and x.get("offered"))
        parts = [
            f"{n} {what}"
            for n, what in (
                (facts_left, "quote a name, number or phrase of one sample (they cannot transfer)"),
                (
                    left_out,
                    "were given to rewrites that did not write them (the instruction came back "
                    "unchanged, or with the round's other lessons only)",
                ),
                (len(left) - facts_left - left_out, "came after the round's best evidenced ones"),
            )
            if n
        ]
        blocks.append(
            Para(
                f"{len(left)} lesson{'s were' if len(left) != 1 else ' was'} not applied by any "
                f"ladder: {', '.join(parts)}."
            )
        )
    cross = stages.cross_fit
    if cross is not None and cross.rungs:
        applied = [x for x in cross.lessons if x.get("applied_round") is not None]
        kept = cross.produced != (cross.base,)
        blocks.append(
            Para(
                f"Cross-fit: a ladder from {cross.corrections} held-out corrections that candidate "
                f"#{cross.base} still got wrong applied "
                + (
                    "; ".join(f"{_short(x['text'], 160)} (evidence {x['evidence']})" for x in applied)
                    or "nothing"
                )
                + f". {'Kept' if kept else 'Not kept'}: {cross.why}."
            )
        )
    elif cross is not None and cross.why:
        blocks.append(Para(f"Cross-fit: not run ({cross.why})."))
    return Section("Pipeline: distill, verify, search", blocks)


def _not_applied(lessons: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The lessons no ladder applied, one per wording (each ladder keeps its own record of a
    lesson: a fold's and the refit's of one wording are one lesson here), the first record of
    each; one given to a rewrite by any ladder counts as given."""
    applied = {x["text"] for x in lessons if x.get("applied_round") is not None}
    first: dict[str, dict[str, Any]] = {}
    for x in lessons:
        if x["text"] in applied:
            continue
        if x["text"] not in first:
            first[x["text"]] = dict(x)
            continue
        kept = first[x["text"]]
        kept["offered"] = (kept.get("offered") or 0) + (x.get("offered") or 0)
        kept["sample_fact"] = bool(kept.get("sample_fact") or x.get("sample_fact"))
    return list(first.values())


def _lineage(facts: RunFacts) -> Section:
    steps = lineage(facts.result)
    rows = [
        [
            "  " * s.depth + f"#{s.id}",
            str(s.generation),
            s.operator,
            ", ".join(f"#{p}" for p in s.parents) or "—",
            _f(s.train),
            _f(s.validation),
            _short("; ".join(s.feedback), 300) or "—",
        ]
        for s in steps
    ]
    name = _metric_name(facts.result)
    headers = [
        "candidate",
        "generation",
        "operator",
        "parents",
        "fitness (judged train)",
        f"validation {name}",
    ]
    headers.append("feedback applied")
    measured = (
        "Small data (out of bag): no candidate is judged on a validation part of its own; the chosen "
        "candidate's and the seed's out-of-bag figures are under Seed vs best"
        if _out_of_bag(facts)
        else "Validation is measured only for the finalists"
    )
    intro = Para(
        f"The chosen candidate first, then its parents and their parents. Fitness is {name} on the "
        f"judged train samples, what the search ranked by; validation {name} is the figure of Seed vs "
        f"best. {measured}; n/a is a score not measured."
    )
    return Section("Lineage of the chosen candidate", [intro, Table(headers, rows)])


def _by_cause(usage: dict[str, Any]) -> str:
    causes = usage.get("failures_by_cause") or {}
    return " (" + ", ".join(f"{c}: {n}" for c, n in sorted(causes.items())) + ")" if causes else ""


def _usage(facts: RunFacts) -> Section:
    u = facts.result["usage"]
    extra = [k for k in ("prompt_tokens", "completion_tokens", "cost_usd") if f"{k}_by_operation" in u]
    headers = ["operation", "calls", "cache hits", "retries", "failures", *extra]
    ops = sorted(set(u.get("calls_by_operation", {})) | set(u.get("cache_hits_by_operation", {})))
    rows = [
        [
            op,
            *(
                str(u.get(f"{k}_by_operation", {}).get(op, 0))
                for k in ("calls", "cache_hits", "retries", "failures")
            ),
        ]
        + [str(u[f"{k}_by_operation"].get(op, 0)) for k in extra]
        for op in ops
    ]
    totals = Bullets(
        [
            f"prompt tokens: {u['prompt_tokens']:,}; completion tokens: {u['completion_tokens']:,}",
            f"cost: {_run_cost(facts)}",
            f"cache hits: {u.get('cache_hits', 0)}; retries: {u.get('retries', 0)}; "
            f"failures: {u.get('failures', 0)}{_by_cause(u)}",
        ]
    )
    blocks: list[Any] = [Table(headers, rows), totals]
    if not extra:
        blocks.append(Para("Tokens and cost are recorded for the whole run, not per operation."))
    blocks.append(_cost_image(facts))
    return Section("Usage and cost by operation", blocks)


def _cost_image(facts: RunFacts) -> Image:
    """Calls and tokens per stage of the pipeline; a run without stages (``strategy: genetic``):
    per operation, tokens for the whole run."""
    r = facts.result
    stages = Stages.from_dict(r.get("stages"))
    rows = [
        (st.name, st.cost.judge_calls, st.cost.meta_calls, st.cost.tokens)
        for st in (stages.distill, stages.verify, stages.examples, stages.cross_fit, stages.search)
        if st is not None and st.ran
    ]
    if rows:
        return Image("cost.png", stage_cost_png(rows), "Calls and tokens per stage of the pipeline")
    u = r.get("usage") or {}
    calls = u.get("calls_by_operation") or {}
    meta = {"judge"}  # the judge's calls; every other operation writes instructions
    ops = [(op, n if op in meta else 0, 0 if op in meta else n, 0) for op, n in sorted(calls.items())] or [
        ("run", u.get("llm_calls", {}).get("judge", 0), u.get("llm_calls", {}).get("meta", 0), 0)
    ]
    return Image(
        "cost.png", stage_cost_png(ops, by="operation"), "Calls per operation (this run has no stages)"
    )


def _details(facts: RunFacts) -> Section:
    r, cfg = facts.result, facts.result.get("config", {})
    split = r["split"]
    knobs = ("population_size", "generations", "patience", "minibatch_size", "finalists")
    items = [
        f"metric: {r['metric']}; loss: {(r.get('loss') or {}).get('name')} ({_metric_name(r)})",
        _split_sentence(split),
        "; ".join(f"{k}: {cfg.get(k, '?')}" for k in knobs),
        f"random seed: {r.get('random_seed')}; stop reason: {r['stop_reason']}; "
        f"duration: {r.get('duration_s', 0):.1f} s",
        f"candidates created: {len(r.get('lineage', []))}; operator outcomes: {_operator_stats(r)}",
    ]
    if facts.config is not None:
        items.insert(0, f"dataset: {_dataset_name(facts)}; LLM: {_llm_name(facts)}")
    blocks: list[Any] = [Bullets(items)]
    if facts.notes:
        blocks += [Para("Notes:"), Bullets(facts.notes)]
    return Section("Run details", blocks)


def _split_sentence(split: Mapping[str, Any]) -> str:
    """How the samples were used: held out (train + validation = every usable sample), or out of
    bag on small data (all of them to learn and to choose)."""
    how = f" ({split['strategy']})" if split.get("strategy") else ""
    regime = Regime.of(split.get("regime"))
    if regime is Regime.OUT_OF_BAG and split.get("validation") == 0:  # a refit
        return (
            f"split: small data: all {split['train']} usable annotations used to learn and to choose; "
            "the recipe cross-validated over its folds (each sample judged by a fold's candidate that "
            f"never learned from it), then refit on all of them{how}"
        )
    if regime is Regime.OUT_OF_BAG and split.get("validation") == split.get("train"):
        return (
            f"split: small data: all {split['train']} usable annotations; the seed was kept and learned "
            f"from none of them, so all of them are its held-out figure{how}"
        )
    if regime is Regime.OUT_OF_BAG:
        return (
            f"split: small data, out of bag: all {split['train']} usable annotations used to learn and to "
            f"choose; the chosen candidate never learned from {split['validation']} of them, its validation "
            f"figure{how}"
        )
    return f"split: {split['train']} train, {split['validation']} validation (held out){how}"


def _operator_stats(result: dict[str, Any]) -> str:
    stats = result.get("operator_stats", {})
    rejected = sum(stats.get("rejected", {}).values())
    return (
        f"{rejected} rejected, {stats.get('duplicates', 0)} duplicates, "
        f"{stats.get('screened_out', 0)} screened out on a minibatch"
    )


def _dataset_name(facts: RunFacts) -> str:
    assert facts.config is not None
    d = facts.config.dataset
    return str(d) if isinstance(d, Path) else f"synthetic {d.synthetic.model_dump()}"


def _llm_name(facts: RunFacts) -> str:
    assert facts.config is not None
    llm = facts.config.llm
    return "simulated judge (provider fake)" if llm.provider == "fake" else f"{llm.model} ({llm.provider})"
