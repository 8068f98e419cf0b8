"""Taking a run elsewhere: its best instructions as JSON and a Python snippet, and its verdicts
sample by sample.

Every ``optimize`` run writes into its directory (names from :mod:`promptevolver.rundir`)::

    DIR/best_instructions.json   the chosen judge (:class:`~promptevolver.rundir.ChosenJudge`): its
                                 instructions AND teaching examples, the figures it was chosen on,
                                 the model, whether the simulated LLM judged (a dry run)
    DIR/apply_best.py            a runnable snippet that builds the judge as it was chosen
    DIR/samples.jsonl            one JSON object per usable annotation (:func:`sample_rows`)

``promptevolver evaluate --samples-out FILE`` writes the same kind of file for the instructions it
scores (:func:`scorecard_rows`). A failed evaluation is never a verdict: its verdict is null and
``failures`` gives its cause; a sample the run did not judge (outside its focus set, with a paid
LLM) has null verdicts and ``judged`` false.

Loading them back is the run directory's job: :func:`promptevolver.rundir.read_chosen_judge`,
which the judges' ``from_result``, ``evaluate -i`` and ``assert_agreement`` use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from promptevolver.annotations import SampleAnnotation, SingleMetricAnnotation
from promptevolver.config import MetricConfig
from promptevolver.judge import AspectCritic, Judgement
from promptevolver.report import RunFacts
from promptevolver.rundir import (
    APPLY_SNIPPET_FILE,
    BEST_INSTRUCTIONS_FILE,
    DRY_RUN_NOTE,
    SAMPLES_FILE,
    ChosenJudge,
    load_instructions,
    locked,
    metric_config_near,
    write_atomic,
    write_json,
    write_jsonl,
)

__all__ = [
    "APPLY_SNIPPET_FILE",
    "BEST_INSTRUCTIONS_FILE",
    "SAMPLES_FILE",
    "apply_snippet",
    "load_instructions",
    "metric_config_near",
    "sample_rows",
    "scorecard_rows",
    "write_exports",
    "write_samples",
]


def apply_snippet(chosen: ChosenJudge | Mapping[str, str], metric: MetricConfig) -> str:
    """Python source that builds ``metric`` (its judge — an AspectCritic, RubricJudge or
    StatementSupport — or a JudgeEnsemble of one) as it was chosen: ``chosen``'s instructions,
    and its teaching examples when it kept some (read from the ``best_instructions.json`` beside
    the snippet, which holds their store); running it prints the applied instructions. A dry
    run (the simulated LLM judged) says so in its docstring and when run."""
    record = chosen if isinstance(chosen, ChosenJudge) else ChosenJudge(instructions=dict(chosen))
    instructions = record.instructions
    items = "".join(f"    {name!r}: {text!r},\n" for name, text in instructions.items())
    ensemble = metric.is_ensemble
    judge, kwargs = metric.judge_source()
    named = [n for n in instructions if n != AspectCritic.PROMPT_NAME]  # a file's own prompt name
    if judge == "AspectCritic" and len(instructions) == 1 and named:
        kwargs["prompt_name"] = named[0]
    arguments = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    head = [f'"""Apply the chosen judge to the {metric.name} metric (written by promptevolver).', ""]
    if record.dry_run:
        head += [f"DRY RUN: {DRY_RUN_NOTE.removeprefix('dry run: ')}.", ""]
    head += ["Run it to print them, or copy it into your code; `metric` is ready to use.", '"""', ""]
    imports = f"from promptevolver import {judge}" + (", JudgeEnsemble" if ensemble else "")
    lines = [*head]
    if record.has_examples:
        reader = "from promptevolver.rundir import read_chosen_judge"
        lines += ["from pathlib import Path", "", imports, reader]
    else:
        lines.append(imports)
    lines += [
        "",
        f"BEST_INSTRUCTIONS = {{\n{items}}}",
        "",
        f"critic = {judge}({arguments})",
        "critic.set_instructions(BEST_INSTRUCTIONS)",
    ]
    if record.has_examples:
        lines += [
            f"# chosen WITH teaching examples ({record.examples.get('key') or record.example_policy}); "
            "without them it judges differently.",
            f"# Their store is in the {BEST_INSTRUCTIONS_FILE} written beside this file.",
            f'critic.set_examples(read_chosen_judge(Path(__file__).with_name("{BEST_INSTRUCTIONS_FILE}")).examples)',
        ]
    lines.append(f"metric = JudgeEnsemble({_ensemble_args(metric)})" if ensemble else "metric = critic")
    lines += ["", 'if __name__ == "__main__":']
    if record.dry_run:
        lines.append(f"    print({('DRY RUN: ' + DRY_RUN_NOTE.removeprefix('dry run: '))!r})")
    lines += [
        "    for name, prompt in metric.get_prompts().items():",
        '        print(f"{name}:\\n{prompt.instruction}\\n")',
        "",
    ]
    return "\n".join(lines)


def _ensemble_args(metric: MetricConfig) -> str:
    args = {
        "num_judges": metric.num_judges,
        "aggregation_method": metric.aggregation,
        "max_concurrent_judges": metric.max_concurrent_judges,
        "timeout_s": metric.timeout_s,
        "temperature": metric.temperature,
    }
    return ", ".join(["metric=critic", *(f"{k}={v!r}" for k, v in args.items() if v is not None)])


def write_exports(directory: str | Path, chosen: ChosenJudge, metric: MetricConfig) -> list[Path]:
    """Write DIR/best_instructions.json (``chosen``'s record, :meth:`ChosenJudge.to_dict
    <promptevolver.rundir.ChosenJudge.to_dict>`) and DIR/apply_best.py, each atomically; return
    their paths.

    Raises:
        RunDirError: a folder promptevolver did not make, or another process writing it.
        OSError: a file cannot be written (an existing one is left intact).
    """
    out = Path(directory)
    with locked(out):  # the run directory's lock (re-entrant: optimize holds it already)
        as_json = write_json(out / BEST_INSTRUCTIONS_FILE, chosen.to_dict(), indent=2)
        snippet = write_atomic(out / APPLY_SNIPPET_FILE, apply_snippet(chosen, metric))
    return [as_json, snippet]


# --- per-sample exports ----------------------------------------------------------------------------


def sample_rows(facts: RunFacts) -> Iterator[dict[str, Any]]:
    """A run's rows of ``samples.jsonl``, one per usable annotation in sample order: ``position``,
    ``split`` (``train`` or ``validation``; out of bag, ``validation`` is what the best candidate
    never learned from; a refit chosen by cross-validation, ``cross_validated``: every sample),
    ``metric_input``, ``human`` (label), ``human_reason``, ``seed_verdict`` / ``best_verdict``
    with ``seed_reason`` / ``best_reason`` (null where not judged or failed), ``judged`` ({seed,
    best}: whether a verdict was sought) and ``failures`` ({seed|best: cause}). A refit's
    ``best_verdict`` is the cross-validated one, given by the fold candidate ``best_judged_by``
    (its lineage id; the seed's where the fold learned nothing): the refit itself learned from
    every sample and is never judged. ``simulated_llm``: the verdicts are the simulated LLM's (a
    dry run). Nothing when the run's annotations could not be loaded."""
    if facts.dataset is None:
        return
    simulated = bool(facts.result.get("simulated_llm"))
    validation = set(facts.positions.get("validation", []))
    by = facts.cross_validated_by
    seen: dict[str, dict[int, Judgement]] = {"seed": {}, "best": {}}
    for (who, _), judged in facts.judgements.items():
        seen[who].update(judged)
    for position, (sample, label) in enumerate(zip(facts.dataset.samples, facts.labels)):
        if label is None:
            continue
        row = _row(position, sample, label, facts.prompt_name)
        split = "validation" if position in validation else "train"
        row["split"] = "cross_validated" if by and position in by else split
        for who in ("seed", "best"):
            _judged(row, who, seen[who].get(position))
        if by:
            row["best_judged_by"] = by.get(position)
        row["simulated_llm"] = simulated
        yield _last(row, "judged", "failures")


def write_samples(directory: str | Path, facts: RunFacts) -> Path:
    """Write DIR/samples.jsonl (:func:`sample_rows`) atomically; return its path.

    Raises:
        RunDirError: a folder promptevolver did not make, or another process writing it.
        OSError: the file cannot be written (an existing one is left intact).
    """
    with locked(directory):  # the run directory's lock (re-entrant: optimize holds it already)
        return write_jsonl(Path(directory) / SAMPLES_FILE, sample_rows(facts))


def scorecard_rows(
    dataset: SingleMetricAnnotation,
    judged: Mapping[int, Judgement],
    positions: Sequence[int],
    *,
    split: str,
    prompt_name: str,
    simulated: bool = False,
) -> Iterator[dict[str, Any]]:
    """``evaluate --samples-out``'s rows: as :func:`sample_rows` for the ``positions`` scored
    (``split``: ``all`` or ``validation``), with one ``verdict`` and ``reason`` for the
    instructions given instead of the seed's and the best's; ``simulated``: the simulated LLM
    judged (each row's ``simulated_llm``)."""
    labels = dataset.labels()
    for position in positions:
        label = labels[position]
        if label is None:
            continue
        row = _row(position, dataset.samples[position], label, prompt_name)
        row["split"] = split
        _judged(row, "", judged.get(position))
        row["simulated_llm"] = simulated
        yield _last(row, "judged", "failures")


def _row(position: int, sample: SampleAnnotation, label: float, prompt_name: str) -> dict[str, Any]:
    return {
        "position": position,
        "split": "",
        "metric_input": dict(sample.metric_input),
        "human": label,
        "human_reason": sample.human_reason(prompt_name),
        "judged": {},
        "failures": {},
    }


def _judged(row: dict[str, Any], who: str, judgement: Judgement | None) -> None:
    """Fill ``row``'s verdict and reason of ``who`` (``seed``, ``best``; "" for evaluate's one)."""
    key = f"{who}_" if who else ""
    row[f"{key}verdict"] = None if judgement is None else judgement.score
    row[f"{key}reason"] = None if judgement is None or judgement.failed else judgement.reason
    row["judged"][who or "judge"] = judgement is not None
    if judgement is not None and judgement.failed:
        cause = ": ".join(x for x in (judgement.cause, judgement.error) if x)
        row["failures"][who or "judge"] = cause or "failed"


def _last(row: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``row`` with ``keys`` moved to the end (a spreadsheet's columns read left to right)."""
    for key in keys:
        row[key] = row.pop(key)
    return row
