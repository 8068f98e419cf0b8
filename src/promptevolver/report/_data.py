"""What a run report shows, gathered from a run directory.

Sources, all read through :mod:`promptevolver.rundir` (file names, format versions):

* ``result.json`` — scores, history, usage, lineage, ``split.validation_positions``;
* ``config.yaml`` — the dataset (a file or ``{synthetic: ...}``), metric, loss and LLM;
* the checkpoint — every judgement the run recorded, through :func:`load_judgements` (never its
  internals), hence the per-sample verdicts of the seed and of the best candidate.

Per-sample verdicts come from the checkpoint when it holds them; otherwise they are re-judged
when the run used the simulated LLM (free and deterministic: the very verdicts the run saw);
otherwise they are not available and :attr:`RunFacts.notes` says so. Nothing here calls a paid
LLM. A failed evaluation is not a verdict: agreement figures are computed on the judged samples
only, and the failed ones are counted apart (:attr:`RunFacts.failed`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptevolver.annotations import LabelScale, SampleAnnotation, SingleMetricAnnotation
from promptevolver.config import RunConfig, build_judge, build_llm, build_metric, load_dataset
from promptevolver.errors import PromptEvolverError, RunDirError
from promptevolver.evaluation import (
    Agreement,
    CandidateKey,
    Evaluator,
    RecordedAgreement,
    agreement_of,
    candidate_key,
    recorded_agreement,
)
from promptevolver.judge import AspectCritic, ExampleStore, Judgement, label_scale_of
from promptevolver.llm import LLMClient
from promptevolver.optimizers import Regime, load_judgements
from promptevolver.rundir import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    REPORT_HTML,
    REPORT_MD,
    SAMPLES_FILE,
    ChosenJudge,
    read_config,
    read_result,
)

__all__ = [
    "Disagreement",
    "cross_validation_judges",
    "LineageStep",
    "ReportError",
    "RunFacts",
    "lineage",
    "load_run",
    "seed_estimated",
    "seed_figure",
    "word_diff",
]

#: Numeric metrics: a sample disagrees when the judge is off by more than this.
NUMERIC_TOLERANCE = 0.25


#: A run directory that cannot be reported on (no, unreadable or too new a result.json): the run
#: directory's error (release 0.1 had a class of its own; ``except ReportError`` keeps working).
ReportError = RunDirError


@dataclass(frozen=True)
class Disagreement:
    """A sample where the best candidate's verdict differs from the human label.

    Attributes:
        split: ``validation`` or ``train``.
        position: the sample's index in the annotation set.
        inputs: the judge's input fields (``user_input``, ``response``, ``reference``, ...).
        label: the human label; verdict: the best candidate's verdict (failed evaluations are
            not disagreements and are not listed).
        judge_reason: the best candidate's reason (or its error).
        human_reason: the human's reason (edited, or accepted), None when there is none.
        human_action: ``edited``, ``rejected without an edit``, ``accepted`` or ``target``.
        judged_by: a refit's cross-validated picture: the lineage id of the fold candidate whose
            verdict this is (0: the seed, where the fold's ladder learned nothing); None otherwise.
    """

    split: str
    position: int
    inputs: dict[str, Any]
    label: float
    verdict: float | None
    judge_reason: str
    human_reason: str | None
    human_action: str
    judged_by: int | None = None


@dataclass(frozen=True)
class LineageStep:
    """One ancestor of the best candidate (the best itself at depth 0), from result.json's lineage."""

    depth: int
    id: int
    generation: int
    operator: str
    parents: list[int]
    train: float | None
    validation: float | None
    feedback: list[str]


@dataclass
class RunFacts:
    """Everything a report shows about one run.

    Attributes:
        run_dir: the run directory.
        result: result.json as a dict.
        config: the run config (None when config.yaml is missing or invalid; see ``notes``).
        dataset: the annotations (None when they cannot be loaded).
        binary: True for a binary metric (accuracy, F1, kappa), False for a numeric or nominal one.
        scale: the metric's labels (from the run's config; None without one): a nominal scale's
            figures are accuracy, macro F1 and kappa over its named classes.
        recorded: the judge the annotations record, measured against the humans with no call
            (:func:`~promptevolver.evaluation.recorded_agreement`; None without annotations).
        positions: ``train`` / ``validation`` → sample positions (empty when unknown).
        judgements: (``seed`` | ``best``, split) → position → judgement, where available (failed
            evaluations included, with ``score`` None).
        agreements: (``seed`` | ``best``, split) → agreement figures of the split (failed
            evaluations left out), where at least one was judged: estimates for the whole part
            from its judged focus set, each sample weighted by what it stands for (result.json
            ``split.focus``), so they equal ``scores``; unweighted on older results.
        failed: (``seed`` | ``best``, split) → positions whose evaluation failed (not a verdict).
        judged: (``seed`` | ``best``, split) → samples the agreement figures were judged on.
        notes: why something is missing, in plain words.
        unloaded: why the run's config or annotations could not be loaded (None: they were).
    """

    run_dir: Path
    result: dict[str, Any]
    config: RunConfig | None = None
    dataset: SingleMetricAnnotation | None = None
    binary: bool = True
    scale: LabelScale | None = None
    recorded: RecordedAgreement | None = None
    positions: dict[str, list[int]] = field(default_factory=dict)
    judgements: dict[tuple[str, str], dict[int, Judgement]] = field(default_factory=dict)
    agreements: dict[tuple[str, str], Agreement] = field(default_factory=dict)
    failed: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    judged: dict[tuple[str, str], int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unloaded: str | None = None

    @property
    def labels(self) -> list[float | None]:
        return [] if self.dataset is None else self.dataset.labels()

    @property
    def cross_validated_by(self) -> dict[int, int]:
        """A refit chosen by cross-validation: train position → the id of the fold candidate
        whose verdict there is the best's cross-validated one (:func:`cross_validation_judges`);
        empty for any other run."""
        return cross_validation_judges(self.result)

    @property
    def prompt_name(self) -> str:
        """The judge's prompt name in this run (the key of its instructions; it is also the
        annotation file's key of the humans' reasons)."""
        return next(iter(self.result.get("seed_instructions") or {}), AspectCritic.PROMPT_NAME)

    def disagreements(self, split: str) -> list[Disagreement]:
        """Samples of ``split`` where the best candidate's verdict differs from the human's, in
        sample order (a failed evaluation is no verdict, so it is not a disagreement)."""
        judged = self.judgements.get(("best", split))
        if judged is None or self.dataset is None:
            return []
        labels = self.labels
        by = self.cross_validated_by if split == "validation" else {}
        out = []
        for p in sorted(judged):
            label, j = labels[p], judged[p]
            if label is not None and j.score is not None and _disagrees(j.score, label, self.binary):
                found = _disagreement(split, p, self.dataset.samples[p], label, j, self.prompt_name)
                out.append(dataclasses.replace(found, judged_by=by.get(p)))
        return out


def _disagrees(score: float, label: float, binary: bool) -> bool:
    """Binary and named classes: any difference; scores: beyond :data:`NUMERIC_TOLERANCE`."""
    return score != label if binary else abs(score - label) > NUMERIC_TOLERANCE


def _disagreement(
    split: str, position: int, sample: SampleAnnotation, label: float, j: Judgement, prompt_name: str
) -> Disagreement:
    prompt = sample.prompts.get(prompt_name)
    edited = prompt.edited_output if prompt else None
    if sample.target is not None:
        action = "target"
    elif edited is not None:
        action = "edited"
    else:
        action = "accepted" if sample.is_accepted else "rejected without an edit"
    return Disagreement(
        split=split,
        position=position,
        inputs=dict(sample.metric_input),
        label=label,
        verdict=j.score,
        judge_reason=j.reason or (f"(failed: {j.error})" if j.error else ""),
        human_reason=sample.human_reason(prompt_name),
        human_action=action,
    )


# --- loading ---------------------------------------------------------------------------------


def load_run(
    run_dir: str | Path,
    *,
    dataset: SingleMetricAnnotation | None = None,
    llm: LLMClient | None = None,
    rebuild: bool = False,
) -> RunFacts:
    """Gather a run's facts (see the module docstring); ``dataset`` skips reloading the annotations,
    ``llm`` (the run's simulated LLM, when the report follows the run) re-judges a missing verdict
    without building the simulated world again. ``rebuild``: the facts are for rewriting the run's
    report and samples.jsonl (``promptevolver report``), which a report without the annotations
    would empty of every per-sample result.

    Raises:
        RunDirError: ``run_dir`` has no readable result.json, or one of a newer format
            (:func:`promptevolver.rundir.read_result`; ``ReportError`` is this class); with
            ``rebuild``, the run's config or annotations cannot be loaded while its report or
            samples.jsonl is there (they are left as they were).
    """
    directory = Path(run_dir)
    result = read_result(directory)
    loss = result.get("loss") or {}
    facts = RunFacts(run_dir=directory, result=result, binary=loss.get("name") != "MSELoss")
    facts.config = _config(directory, facts)
    if facts.config is not None:
        facts.scale = label_scale_of(build_judge(facts.config.metric))
        facts.binary = facts.scale is None or facts.scale.kind == "binary"
    facts.dataset = dataset if dataset is not None else _dataset(directory, facts)
    kept = [n for n in (REPORT_MD, REPORT_HTML, SAMPLES_FILE) if (directory / n).exists()]
    if rebuild and facts.unloaded is not None and kept:
        raise RunDirError(
            f"{directory}: its report is not rebuilt: {facts.unloaded}; {', '.join(kept)} left as they "
            "were (rebuilt without the annotations they would lose every per-sample result)"
        )
    if facts.dataset is not None:
        _gather_verdicts(facts, llm)
        scale = facts.scale or LabelScale(facts.dataset.kind or "numeric")
        # the recorded judge's figures are the file's, not the run's: drawn with the default seed
        # as `promptevolver agreement` draws them, so the report and the command say the same
        facts.recorded = recorded_agreement(facts.dataset, scale)
    return facts


def _config(directory: Path, facts: RunFacts) -> RunConfig | None:
    try:
        return read_config(directory)
    except PromptEvolverError as exc:
        facts.unloaded = f"the run config could not be read ({exc})"
        facts.notes.append(f"The run config could not be read ({exc}); per-sample results are left out.")
        return None


def _dataset(directory: Path, facts: RunFacts) -> SingleMetricAnnotation | None:
    if facts.config is None:
        return None
    try:
        return load_dataset(facts.config, source=directory / CONFIG_FILE)
    except PromptEvolverError as exc:
        facts.unloaded = f"the annotations could not be loaded ({exc})"
        facts.notes.append(f"The annotations could not be loaded ({exc}); per-sample results are left out.")
        return None


def _recorded(directory: Path, notes: list[str]) -> dict[tuple[CandidateKey, int], Judgement]:
    """:func:`load_judgements`, or nothing (with a note when a checkpoint exists but is unusable)."""
    if not (directory / CHECKPOINT_FILE).is_file():
        return {}
    try:
        return load_judgements(directory)
    except RunDirError as exc:
        notes.append(f"The recorded verdicts could not be read ({exc}).")
        return {}


def _gather_verdicts(facts: RunFacts, llm: LLMClient | None = None) -> None:
    """Fill positions, judgements and agreements of seed and best on train and validation."""
    assert facts.dataset is not None
    result, memo = facts.result, _recorded(facts.run_dir, facts.notes)
    validation = list((result.get("split") or {}).get("validation_positions") or [])
    keys = {
        "seed": candidate_key(result["seed_instructions"]),
        "best": candidate_key(result["best_instructions"], (result.get("examples") or {}).get("key", "none")),
    }
    judged_by = cross_validation_judges(result)
    train = _train_positions(facts, memo, keys["seed"], validation)
    if judged_by:  # a refit: its held-out picture is the cross-validated one, over every train sample
        validation = sorted(judged_by)
        train = [p for p in train if p not in judged_by]
    elif not validation and _seed_kept_out_of_bag(result):
        validation = list(train)  # small data, the seed kept: it learned from none (evaluate scores all)
    facts.positions = {"train": train, "validation": validation}
    missing: dict[tuple[str, str], list[int]] = {}
    seed_failures = next((c.get("failures") or 0 for c in result.get("lineage", []) if c["id"] == 0), 0)
    estimated = seed_estimated(result)
    for who, key in keys.items():
        for split, positions in facts.positions.items():
            if split == "validation" and estimated and (who == "seed" or not result.get("best_id")):
                # judged afresh on a random share only: its figure is result.json's estimate, and
                # its verdicts are those it was judged on (never re-judged: that would be another
                # figure than the one the run chose by)
                found = {p: memo[(key, p)] for p in positions if (key, p) in memo}
                facts.judgements[(who, split)] = found
                facts.failed[(who, split)] = [p for p, j in found.items() if j.score is None]
                continue
            if who == "best" and split == "validation" and judged_by:
                found = {p: memo[k] for p in positions if (k := (_key_of(result, judged_by[p]), p)) in memo}
            else:
                found = {p: memo[(key, p)] for p in positions if (key, p) in memo}
            gap = [p for p in positions if p not in found]
            if gap and (
                (_seed_judged_everywhere(result) and len(gap) == seed_failures)
                or (split == "validation" and _cross_validation_failures(result, judged_by, who, gap))
            ):
                # each of these samples was judged once (the kept seed on every usable sample; a
                # cross-validation's seed and fold candidates on theirs): those without a recorded
                # verdict are failed evaluations (a failure is never checkpointed as a verdict)
                found.update({p: _FAILED for p in gap})
                gap = []
            facts.judgements[(who, split)] = found
            if gap:
                missing[(who, split)] = gap
    if judged_by and ("best", "validation") in missing:
        facts.notes.append(
            "The cross-validated verdicts (each sample judged by a fold's candidate that never learned "
            "from it) are not all in the checkpoint; they are not re-judged."
        )
        facts.judgements.pop(("best", "validation"), None)
        missing.pop(("best", "validation"))
    _rejudge_missing(facts, missing, llm)
    focus = _focus(result)
    if judged_by and "train" in focus:  # the cross-validated figure weighs the train focus set
        focus["validation"] = focus.pop("train")
    if estimated:
        figure = seed_figure(result)
        fresh, of = figure.get("fresh", "n/a"), figure.get("of", "n/a")
        facts.notes.append(
            f"The seed's figure is prediction-powered: it was judged afresh on {fresh} of the {of} "
            "samples, drawn at random, and the verdicts the annotation file "
            "records stand in for the others, corrected by how the fresh ones differ from them (an unbiased "
            "estimate); its per-sample picture (confusion matrix, kappa) is not drawn."
        )
    for (who, split), judged in list(facts.judgements.items()):
        positions = facts.positions[split]
        if split == "validation" and estimated and (who == "seed" or not result.get("best_id")):
            continue  # a partial picture by design: samples.jsonl lists it, no figure is drawn from it
        if not positions or len(judged) < len(positions):
            del facts.judgements[(who, split)]
        elif split in focus and set(focus[split]) <= set(judged):
            _agree(facts, (who, split), judged, list(focus[split]), focus[split])
        else:
            _agree(facts, (who, split), judged, positions)


def cross_validation_judges(result: Mapping[str, Any]) -> dict[int, int]:
    """A refit chosen by cross-validation (small data): train position → the id of the candidate
    whose verdict there makes the cross-validated figure (result.json
    ``final_choice.judged_by``); empty for any other run."""
    choice = result.get("final_choice") or {}
    if Regime.of(choice.get("regime")) is not Regime.CROSS_VALIDATED:
        return {}
    return {int(p): int(c) for p, c in (choice.get("judged_by") or {}).items()}


def seed_figure(result: Mapping[str, Any]) -> dict[str, Any]:
    """How a cross-validated run made the seed's figure (result.json ``final_choice.seed_figure``,
    ``optimizers/_refit.py``: ``method``, ``fresh``, ``of``, ...); empty for any other run."""
    return dict((result.get("final_choice") or {}).get("seed_figure") or {})


def seed_estimated(result: Mapping[str, Any]) -> bool:
    """A cross-validated run whose seed figure is prediction-powered (:func:`seed_figure`): the
    seed was judged afresh on a random share of the samples only."""
    return bool(cross_validation_judges(result)) and seed_figure(result).get("method") == "prediction_powered"


def _key_of(result: Mapping[str, Any], candidate: int) -> CandidateKey:
    """The memo key of lineage candidate ``candidate`` (its instructions and example policy)."""
    row = next(c for c in result.get("lineage", []) if c["id"] == candidate)
    examples = (
        "none" if row.get("examples", "none") == "none" else (result.get("examples") or {}).get("key", "none")
    )
    return candidate_key(row["instructions"], examples)


#: A failed evaluation of the kept seed, which the checkpoint does not hold (see _gather_verdicts).
_FAILED = Judgement(None, error="the evaluation failed (no verdict was recorded)", cause="failed")


def _seed_judged_everywhere(result: Mapping[str, Any]) -> bool:
    """Small data whose seed was kept: the seed (and so the best) was judged once on every usable
    sample, so a sample without its verdict is one of its failed evaluations."""
    return _seed_kept_out_of_bag(result) and all(c == 0 for c in cross_validation_judges(result).values())


def _cross_validation_failures(
    result: Mapping[str, Any], judged_by: Mapping[int, int], who: str, gap: Sequence[int]
) -> bool:
    """A cross-validated run (``judged_by``): whether the samples of ``who``'s picture without a
    recorded verdict (``gap``) are failed evaluations. Its seed was judged once on every sample
    (its lineage entry counts its failures) and each sample once by the candidate ``judged_by``
    names (the chosen depth's ``coverage`` says how many of those verdicts were measured), so they
    are when the counts match."""
    if not judged_by:
        return False
    if who == "seed":
        seed: Mapping[str, Any] = next((c for c in result.get("lineage", []) if c["id"] == 0), {})
        return len(gap) == int(seed.get("failures") or 0)
    choice = result.get("final_choice") or {}
    row = next(
        (
            r
            for r in choice.get("depths", ())
            if r.get("delta") == choice.get("delta") and r.get("p_better") == choice.get("p_better")
        ),
        None,
    )
    if row is None or not isinstance(row.get("coverage"), (int, float)):
        return False
    return len(gap) == round(len(judged_by) * (1.0 - float(row["coverage"])))


def _seed_kept_out_of_bag(result: Mapping[str, Any]) -> bool:
    """Small data whose seed was kept: nothing is held out, and the seed learned from none."""
    regime = Regime.of((result.get("split") or {}).get("regime"))
    return regime is Regime.OUT_OF_BAG and not result.get("best_id")


def _focus(result: Mapping[str, Any]) -> dict[str, dict[int, float]]:
    """The judged samples of each part and what each stands for (result.json ``split.focus``;
    empty for older results and for a part nothing was judged on)."""
    found = (result.get("split") or {}).get("focus") or {}
    out = {}
    for part, f in found.items():
        positions, weights = f.get("positions") or [], f.get("weights") or []
        if positions and len(positions) == len(weights):
            out[part] = {int(p): float(w) for p, w in zip(positions, weights)}
    return out


def _agree(
    facts: RunFacts,
    at: tuple[str, str],
    judged: Mapping[int, Judgement],
    positions: Sequence[int],
    weights: Mapping[int, float] | None = None,
) -> None:
    """Agreement on the judged ``positions``, each weighted by what it stands for in its part
    (``weights``: the run's focus set; the figures then estimate the whole part, as result.json's
    ``scores`` do); the failed ones are recorded apart, never scored."""
    measured = [p for p in positions if judged[p].score is not None]
    facts.failed[at] = [p for p in positions if judged[p].score is None]
    facts.judged[at] = len(positions)
    if measured:
        facts.agreements[at] = agreement_of(
            judged, measured, facts.labels, binary=facts.binary, weights=weights, scale=facts.scale
        )


def _train_positions(
    facts: RunFacts,
    memo: Mapping[tuple[CandidateKey, int], Judgement],
    seed: CandidateKey,
    validation: Sequence[int],
) -> list[int]:
    """The train positions: those the seed was judged on (it is judged on all of train and, during
    the search, on nothing else); without a checkpoint, the usable samples outside validation when
    that matches the recorded train size (no cap was applied). Out of bag (small data) train is
    every usable sample, the validation ones included, as result.json's ``scores.train``."""
    out_of_bag = Regime.of((facts.result.get("split") or {}).get("regime")) is Regime.OUT_OF_BAG
    held_out = set() if out_of_bag else set(validation)
    judged = sorted({p for (key, p) in memo if key == seed} - held_out)
    if judged and not _seed_judged_everywhere(facts.result):
        return judged
    assert facts.dataset is not None
    usable = [i for i, y in enumerate(facts.labels) if y is not None and i not in held_out]
    return usable if len(usable) == (facts.result.get("split") or {}).get("train") else []


def _rejudge_missing(
    facts: RunFacts, missing: Mapping[tuple[str, str], list[int]], llm: LLMClient | None = None
) -> None:
    """Re-judge missing verdicts with the simulated LLM (free, deterministic; ``llm``: the run's
    own, else one built here), or note why not."""
    if not missing:
        return
    config = facts.config
    if config is None or config.llm.provider != "fake":
        provider = "unknown" if config is None else config.llm.provider
        facts.notes.append(
            f"Per-sample verdicts on {', '.join(sorted({s for _, s in missing}))} are not recorded for this "
            f"run and are not re-judged (provider {provider}: that would cost LLM calls)."
        )
        return
    assert facts.dataset is not None
    instructions = {"seed": facts.result["seed_instructions"], "best": facts.result["best_instructions"]}
    chosen = ChosenJudge.from_result(facts.result)  # the best is judged with its examples, as chosen
    renamable = config.metric.type != "statement_support"  # one prompt: it takes the file's name
    prompt = next(iter(instructions["seed"])) if renamable else None
    if llm is None:
        llm = build_llm(  # built once: the simulated LLM mines its world from the whole dataset
            config.llm.model_copy(update={"cache": None}),
            dataset=facts.dataset,
            random_seed=facts.result["random_seed"],
            prompt_name=prompt,
            scale=facts.scale,
        )
    for (who, split), positions in missing.items():
        examples = chosen.examples if who == "best" else None
        judging = _judge(config, facts.dataset, instructions[who], positions, llm, prompt, examples)
        facts.judgements[(who, split)].update(asyncio.run(judging))


async def _judge(
    config: RunConfig,
    dataset: SingleMetricAnnotation,
    instructions: Mapping[str, str],
    positions: Sequence[int],
    llm: LLMClient,
    prompt: str | None,
    examples: Mapping[str, Any] | None = None,
) -> dict[int, Judgement]:
    metric = build_metric(config.metric, temperature=config.llm.temperature, prompt_name=prompt)
    policy = str((examples or {}).get("policy", "none"))
    store = ExampleStore.from_dict(examples["store"]) if examples and policy != "none" else None
    evaluator = Evaluator(
        metric=metric, llm=llm, dataset=dataset, max_concurrency=config.llm.max_concurrency, examples=store
    )
    return await evaluator.evaluate(instructions, positions, policy if store is not None else "none")


# --- lineage and wording -----------------------------------------------------------------------


def lineage(result: Mapping[str, Any]) -> list[LineageStep]:
    """The best candidate and its ancestors, breadth first (each once), from result.json."""
    by_id = {c["id"]: c for c in result.get("lineage", [])}
    out: list[LineageStep] = []
    queue, seen = [(result.get("best_id", 0), 0)], set()
    while queue:
        cid, depth = queue.pop(0)
        if cid in seen or cid not in by_id:
            continue
        seen.add(cid)
        c = by_id[cid]
        out.append(
            LineageStep(
                depth,
                cid,
                c["generation"],
                c["operator"],
                list(c["parents"]),
                c.get("train"),
                c.get("validation"),
                list(c.get("feedback") or []),
            )
        )
        queue.extend((p, depth + 1) for p in c["parents"])
    return out


_TOKEN = re.compile(r"\n|[^\s]+")


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """Word-level diff of two texts: (``equal`` | ``delete`` | ``insert``, text) runs, where text
    is words joined by single spaces (line breaks kept as ``\\n``). Joining the ``equal`` and
    ``delete`` runs gives ``before``'s words, ``equal`` and ``insert`` ``after``'s."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("equal", "delete", "replace"):
            out.append(("equal" if op == "equal" else "delete", _join(a[i1:i2])))
        if op in ("insert", "replace"):
            out.append(("insert", _join(b[j1:j2])))
    return out


def _join(words: Sequence[str]) -> str:
    return " ".join(words).replace(" \n ", "\n").replace("\n ", "\n").replace(" \n", "\n")
