"""A finished run in words, for the terminal: which candidate was chosen and why, why it stopped.

The numbers alone can look contradictory (``best train 0.923`` beside ``stop reason:
perfect_train`` when another candidate got train right but could not be told better than the
seed on held-out samples, and the seed was kept); :func:`choice_line` and :func:`stop_line` say
what happened, in the final choice's own words (``final_choice.why``) where the result has them.
:func:`outcome_lines` is what ``promptevolver optimize`` prints at the end: the scores, those two
lines, where the run's files are, and the best instructions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from promptevolver import rundir
from promptevolver.evaluation import loss_label
from promptevolver.optimizers import OptimizationResult, seed_kept_whole
from promptevolver.optimizers.strategies import STOP_REASONS

__all__ = ["choice_line", "chosen_lines", "outcome_lines", "stage_line", "stop_line"]


def outcome_lines(result: OptimizationResult, run_dir: Path, *, quiet: bool = False) -> list[str]:
    """What ``optimize`` prints when a run ends: the seed's and the best candidate's scores with
    the LLM calls (``n/a`` for a score not measured); unless ``quiet``, also why the best was
    chosen and the run stopped, the files written in ``run_dir`` and the best instructions."""
    s, calls = result.scores, result.usage["llm_calls"]
    name = loss_label(result.loss)
    simulated = " | simulated LLM: no model was called" if result.simulated_llm else ""
    if "cross_validated" in s["best"]:  # small data: a refit chosen by cross-validation
        folds = (result.final_choice or {}).get("folds", "n/a")
        figure = (result.final_choice or {}).get("seed_figure") or {}
        how = (
            f" (prediction-powered: {figure.get('fresh', 'n/a')} of {figure.get('of', 'n/a')} judged afresh)"
            if figure.get("method") == "prediction_powered"
            else ""
        )
        figures = (
            f"seed train {_f(s['seed'].get('train'))}{how} | best cross-validated "
            f"{_f(s['best'].get('cross_validated'))} ({folds} folds; refit on every annotation, so no "
            "train or validation figure of its own)"
        )
    elif seed_kept_whole(result.split or {}, result.best_id):
        figures = (
            f"seed kept: {_f(s['seed'].get('validation'))} on all {result.split['train']} usable "
            "annotations (it learned from none of them: a held-out figure)"
        )
    else:
        figures = (
            f"seed train {_f(s['seed'].get('train'))} validation {_f(s['seed'].get('validation'))} | "
            f"best train {_f(s['best'].get('train'))} validation {_f(s['best'].get('validation'))}"
        )
    failures = result.usage.get("failures") or 0
    causes = ", ".join(f"{c} {n}" for c, n in sorted((result.usage.get("failures_by_cause") or {}).items()))
    failed = f" ({failures} failed after retries: {causes or 'cause not recorded'})" if failures else ""
    hits = result.usage.get("cache_hits") or 0  # answers the response cache gave: no call made
    cached = f" (and {hits} answered from the response cache)" if hits else ""
    lines = [
        f"{result.metric}: {name} {figures} | "
        f"LLM calls: {calls['judge']} judge + {calls['meta']} meta = {calls['judge'] + calls['meta']}"
        f"{cached}{failed}{simulated}"
    ]
    if quiet:
        return lines
    lines += [choice_line(result), stop_line(result)]
    if result.stages:
        lines.insert(1, stage_line(result))
    note = (result.split or {}).get("note")
    if note:
        lines.append(f"note: {note}")
    return lines + _files(run_dir) + chosen_lines(result.chosen_judge(), run_dir)


def chosen_lines(chosen: rundir.ChosenJudge, run_dir: Path) -> list[str]:
    """The chosen judge as ``optimize`` prints it, from its one record: each instruction, then
    the teaching examples it is shown with (they are part of it), ``DRY RUN`` first when the
    simulated LLM judged."""
    lines = [f"\nDRY RUN: {rundir.DRY_RUN_NOTE.removeprefix('dry run: ')}"] if chosen.dry_run else []
    lines += [f"\nbest instruction for {prompt}:\n{text}" for prompt, text in chosen.instructions.items()]
    if chosen.has_examples:
        n = len(chosen.examples.get("store", {}).get("samples", []))
        lines.append(
            f"\nshown with teaching examples: {chosen.examples.get('key') or chosen.example_policy} from "
            f"{n} annotated samples (part of the chosen judge: {run_dir / rundir.BEST_INSTRUCTIONS_FILE} "
            "carries them; without them it judges differently)"
        )
    return lines


def _files(run_dir: Path) -> list[str]:
    """Where a finished run's result, report and best instructions are."""
    return [
        f"result written to {run_dir / rundir.RESULT_FILE}",
        f"report: {run_dir / rundir.REPORT_HTML} (open it in a browser) and {run_dir / rundir.REPORT_MD}",
        f"best instructions: {run_dir / rundir.BEST_INSTRUCTIONS_FILE}; "
        f"to apply: {run_dir / rundir.APPLY_SNIPPET_FILE}",
    ]


def choice_line(result: OptimizationResult) -> str:
    """Which candidate was chosen and why, with its train score against the seed's (the estimates
    of the summary line, ``scores``); when the seed was kept, why, and what the best other
    finalist scored on the train samples judged (its lineage entry, beside the seed's). The reason
    is the final choice's own (``final_choice.why``); a result without one (release 0.2) is
    explained from its lineage."""
    lineage = result.lineage
    if not lineage:
        return "chosen: n/a (the result records no candidates)"
    why = _why_chosen(result)
    if not why:
        return _from_lineage(result)
    seed, by_id = lineage[0], {c["id"]: c for c in lineage}
    if result.improved:
        best, scores = by_id[result.best_id], result.scores
        train = _f(scores.get("best", {}).get("train")), _f(scores.get("seed", {}).get("train"))
        if train[0] == "n/a":  # held-out samples only, or a refit (its figure: cross-validated)
            return f"chosen: {_who(best)}: {why}"
        return f"chosen: {_who(best)}: {why}; train {train[0]} against the seed's {train[1]}"
    rows = [r for r in result.final_choice.get("finalists", []) if r.get("id") in by_id]
    if not rows:
        return f"kept the seed: {why}"
    row = max(rows, key=lambda r: (r.get("delta") is not None, r.get("delta") or 0.0))
    top, delta = by_id[row["id"]], row.get("delta")
    on_validation = "" if delta is None else f", and {delta:+.3f} against it on validation"
    judged = ((result.split or {}).get("judged") or {}).get("train")
    samples = f"the {judged} judged train samples" if judged else "the judged train samples"
    return (
        f"kept the seed: {why}; the best other finalist, {_who(top)}, had fitness {_f(top['train'])} on "
        f"{samples} (the seed {_f(seed['train'])}){on_validation}"
    )


def _why_chosen(result: OptimizationResult) -> str | None:
    """The reason the result was chosen: the final choice's, unless that choice was of another
    candidate (the examples stage after it replaced the verified choice: its own reason)."""
    final = result.final_choice or {}
    examples = result.stage_records.examples
    replaced = final.get("chosen", result.best_id) != result.best_id
    if replaced and result.produced_by == "examples" and examples is not None and examples.why:
        return str(examples.why)
    return str(final["why"]) if final.get("why") else None


def _from_lineage(result: OptimizationResult) -> str:
    """:func:`choice_line` for a result without ``final_choice``: validation scores of the lineage."""
    lineage, higher = result.lineage, bool(result.loss.get("higher_is_better", True))
    seed = lineage[0]
    n_val = (result.split or {}).get("validation")
    if result.improved:
        best = lineage[result.best_id]
        return (
            f"chosen: {_who(best)}: validation {_f(best['validation'])} against the seed's "
            f"{_f(seed['validation'])} on {n_val} held-out samples (train {_f(best['train'])} against "
            f"{_f(seed['train'])})"
        )
    rivals = [c for c in lineage[1:] if c.get("validation") is not None]
    if not rivals:
        why = (
            "no other candidate was made"
            if len(lineage) == 1
            else "no other candidate was judged on validation (none was measured well enough on train)"
        )
        return f"kept the seed: {why}"
    top = _best(rivals, higher)
    verdict = "no better than" if top["validation"] == seed["validation"] else "worse than"
    return (
        f"kept the seed: the best other candidate, {_who(top)}, scored train {_f(top['train'])} "
        f"(the seed {_f(seed['train'])}) but validation {_f(top['validation'])}, {verdict} the seed's "
        f"{_f(seed['validation'])} on {n_val} held-out samples (a tie keeps the seed)"
    )


def stage_line(result: OptimizationResult) -> str:
    """The distill-first pipeline in one line: each stage's calls and tokens, whether the search
    ran and why, and which stage produced the result (``produced_by``)."""
    st = result.stage_records
    parts = []
    if (d := st.distill) is not None:
        rungs = len(d.produced)
        parts.append(
            f"distill {d.cost.meta_calls} meta calls ({d.cost.tokens:,} tokens), "
            f"{rungs} rung{'' if rungs == 1 else 's'}"
        )
    if (v := st.verify) is not None:
        saved = v.saved_judge_calls
        saving = f" ({saved} saved by racing)" if saved else ""
        parts.append(f"verify {v.cost.judge_calls} judge calls{saving}")
    if (e := st.examples) is not None and e.tried:
        per_call = e.cost.prompt_tokens_per_judge_call
        tokens = f", {per_call:,.0f} prompt tokens a call" if per_call else ""
        parts.append(f"examples {e.cost.judge_calls} judge calls{tokens}, kept: {e.policy}")
    elif st.examples is not None and st.verify is not None:  # not judged: not warranted, the budget, ...
        parts.append("examples not judged")
    if (x := st.cross_fit) is not None and x.rungs:
        kept = "kept" if x.produced != (x.base,) else "not kept"
        parts.append(f"cross-fit {x.cost.judge_calls} judge + {x.cost.meta_calls} meta calls, {kept}")
    search = st.search
    if search is not None and search.ran:
        parts.append(f"search {search.cost.judge_calls} judge + {search.cost.meta_calls} meta calls")
    else:
        parts.append(f"no search ({'n/a' if search is None else search.why})")
    sources = {
        "seed": "the seed",
        "distill": "the distillation stage",
        "examples": "the examples stage (the verified instruction with teaching examples)",
        "cross_fit": "the cross-fit stage (the verified candidate with held-out lessons)",
        "search": "the search",
    }
    source = sources[result.produced_by]
    return f"stages: {' -> '.join(parts)}; the result comes from {source}"


def stop_line(result: OptimizationResult) -> str:
    """Why the search stopped, after how many generations, in words (``stop_reason`` in brackets)."""
    reason = result.stop_reason
    patience = (result.config or {}).get("patience")
    words = (STOP_REASONS[reason].line if reason in STOP_REASONS else reason).format(patience=patience)
    if reason == "distilled":
        words = _pipeline_end(result)
    generations = max((h.get("generation", 0) for h in result.history), default=0)
    after = "after the initial population" if generations == 0 else f"after generation {generations}"
    if not result.history:
        after = "after verification"
    return f"stopped {after}: {words} ({reason})"


def _pipeline_end(result: OptimizationResult) -> str:
    """Why a pipeline ended after its verification (stop reason ``distilled``), in what ran."""
    distilled, search = result.stage_records.distill, result.stage_records.search
    rungs = 0 if distilled is None else len(distilled.produced)
    no_search = None if search is None else search.why
    tail = f"; no search ({no_search})" if no_search else "; no search"
    if result.strategy == "examples":
        return "strategy examples: the instruction was kept as written, only teaching examples were chosen"
    if rungs == 0:
        return "the pipeline ended after verification: the distillation made no rung" + tail
    ladder = f"{rungs} rung{'' if rungs == 1 else 's'}"
    return f"the pipeline ended after verifying the distilled ladder ({ladder})" + tail


def _best(candidates: Sequence[Mapping[str, Any]], higher: bool) -> Mapping[str, Any]:
    sign = 1.0 if higher else -1.0

    def key(c: Mapping[str, Any]) -> tuple[float, float, int]:
        train = c.get("train")
        return sign * c["validation"], -float("inf") if train is None else sign * train, -c["id"]

    return max(candidates, key=key)


def _who(c: Mapping[str, Any]) -> str:
    if c.get("operator") == "distill":
        return f"candidate {c['id']} (distilled rung)"
    if c.get("operator") == "cross_fit":
        return f"candidate {c['id']} (cross-fit rung)"
    made = "the seed" if c["id"] == 0 else f"{c['operator'].replace('_', ' ')}, generation {c['generation']}"
    return f"candidate {c['id']} ({made})"


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
