"""Scoring given instructions on a config's annotations: ``promptevolver evaluate``.

:func:`score_instructions` judges every chosen sample once with the instructions given (for
example a previous run's best) and returns the agreement figures a report shows. Samples: all
usable ones, or the validation samples of a run, found by content (:func:`validation_positions`):
a run's held-out score can be checked again, on another LLM for instance, and a run of another
metric or file is refused rather than scored on whatever sits at its positions.

:func:`run_of` finds the run the instructions come from (``evaluate`` then defaults to its
validation samples: its train samples were learned from), and :func:`other_metric` says when
that run optimized another metric than the config's (an error for its validation samples; a
warning with ``--split all``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation, sample_key
from promptevolver.config import RunConfig, build_llm, build_metric, load_dataset, resolve_prompt
from promptevolver.errors import AnnotationError, ConfigError, RunDirError
from promptevolver.evaluation import Agreement, Evaluator, agreement_of
from promptevolver.judge import ExampleStore, Judgement, label_scale_of, prepare_store
from promptevolver.llm import is_simulated, preflight
from promptevolver.optimizers import Regime
from promptevolver.rundir import (
    CONFIG_FILE,
    RESULT_FILE,
    ChosenJudge,
    metric_config_near,
    read_config,
    read_result,
    result_path,
)
from promptevolver.runs._gate import GateResult, check_gate

__all__ = [
    "Scorecard",
    "chosen_positions",
    "learned_from_validation",
    "refit_on_every_sample",
    "other_metric",
    "run_of",
    "score_instructions",
    "validation_positions",
]


@dataclass(frozen=True)
class Scorecard:
    """Agreement of a judge with given instructions with the humans.

    Attributes:
        metric: the metric's name; split: ``all`` or ``validation``.
        agreement: the figures (see :class:`~promptevolver.evaluation._agreement.Agreement`).
        judge_calls: LLM calls made (cache hits excluded); usage: the client's full usage.
        pairs: the measured (human label, judge score) pairs, in sample order (failed evaluations
            left out): what the figures and their confidence intervals are computed from.
        judged: position → judgement of every sample scored (failed ones included, score None);
            positions: the samples scored, in order (``evaluate --samples-out`` writes them).
        prompt_name: the judge's prompt (the annotations' key of the humans' reasons).
        simulated_llm: True when the simulated LLM judged (``provider: fake``): the figures show
            the simulator, not a model, and a gate on them cannot catch a regression.
    """

    metric: str
    split: str
    agreement: Agreement
    judge_calls: int
    usage: dict[str, Any]
    pairs: tuple[tuple[float, float], ...] = field(default=(), compare=False)
    judged: Mapping[int, Judgement] = field(default_factory=dict, compare=False)
    positions: tuple[int, ...] = field(default=(), compare=False)
    prompt_name: str = field(default="", compare=False)
    simulated_llm: bool = False

    def gate(
        self, *, threshold: float, figure: str | None, max_failure_rate: float, rng: np.random.Generator
    ) -> GateResult:
        """The gate (:func:`~promptevolver.runs.check_gate`, its arguments) on this card's
        agreement and pairs, saying so when the simulated LLM judged."""
        return check_gate(
            self.agreement,
            self.pairs,
            threshold=threshold,
            figure=figure,
            max_failure_rate=max_failure_rate,
            rng=rng,
            simulated_llm=self.simulated_llm,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: metric, split, the agreement figures at the top level, usage."""
        return {
            "metric": self.metric,
            "split": self.split,
            **self.agreement.to_dict(),
            "judge_calls": self.judge_calls,
            "simulated_llm": self.simulated_llm,
            "usage": self.usage,
        }


def validation_positions(
    run_dir: str | Path, dataset: SingleMetricAnnotation, *, config: RunConfig | None = None
) -> list[int]:
    """The positions in ``dataset`` of a run's validation samples, found by content, never by
    position: the samples of ``dataset`` whose input fields are those of the run's validation
    samples (result.json's ``split.validation_keys``; a result without them is matched through
    the annotations its config.yaml names).

    Args:
        run_dir: a run directory or its result.json (release-0.1 results included).
        dataset: the annotations to score.
        config: the config scoring them: a run of another metric (name or definition) is refused.

    Raises:
        RunDirError: no readable result.json, or one of a newer format (see
            :func:`promptevolver.rundir.read_result`).
        ConfigError: the run optimized another metric than ``config``'s; it records no validation
            samples; some of them are not usable samples of ``dataset`` (a run of another file).
            Each message says that ``--split all`` scores every usable sample instead.
    """
    path = result_path(run_dir)
    if config is not None and (mismatch := other_metric(run_dir, config)):
        raise ConfigError(f"{mismatch}: its validation samples are not this metric's; {_ALL}")
    result = read_result(run_dir)
    wanted = _validation_keys(path, result)
    size = len(wanted[0]) if wanted else 0
    labels = dataset.labels()
    where: dict[str, list[int]] = {}
    for i, sample in enumerate(dataset.samples):
        if labels[i] is not None:
            where.setdefault(sample_key(sample.metric_input)[:size], []).append(i)
    needed = Counter(wanted)
    missing = sum(max(0, k - len(where.get(key, []))) for key, k in needed.items())
    if missing:
        raise ConfigError(
            f"{path}: {missing} of its {len(wanted)} validation samples are not usable samples of "
            f"{dataset.source} (matched by content: the run used other annotations); {_ALL}"
        )
    recorded = (result.get("split") or {}).get("validation_positions")
    if _same_positions(recorded, wanted, where, size):
        return sorted(int(p) for p in recorded or [])
    # Another file: as many samples of each input as the run held out (a duplicate the run
    # learned from is not a validation sample because its twin was held out).
    return sorted(i for key, k in needed.items() for i in where[key][:k])


def _same_positions(recorded: Any, wanted: list[str], where: Mapping[str, list[int]], size: int) -> bool:
    """Whether the run's recorded validation positions are, in ``dataset``, the samples of the
    recorded keys (the same file): then exactly those samples are scored."""
    if not isinstance(recorded, list) or len(recorded) != len(wanted):
        return False
    found = {p: key for key, positions in where.items() for p in positions}
    return all(isinstance(p, int) and found.get(p) == key[:size] for p, key in zip(recorded, wanted))


_ALL = "--split all scores every usable sample of the config's annotations instead"


def _validation_keys(path: Path, result: Mapping[str, Any]) -> list[str]:
    """The content keys of the run's validation samples: recorded, or computed from the samples
    at its ``validation_positions`` in the annotations of its config.yaml (older results)."""
    split = result.get("split") or {}
    keys = split.get("validation_keys")
    if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
        return list(keys)
    positions = split.get("validation_positions")
    if not isinstance(positions, list) or not all(isinstance(p, int) for p in positions):
        raise ConfigError(f"{path}: no split.validation_positions (the run's validation samples); {_ALL}")
    try:
        theirs = load_dataset(read_config(path.parent))
    except (RunDirError, ConfigError, AnnotationError) as exc:
        raise ConfigError(
            f"{path}: records its validation samples by position only, and the annotations it ran "
            f"on cannot be read to find them by content ({exc}); {_ALL}"
        ) from exc
    if any(not 0 <= p < len(theirs.samples) for p in positions):
        raise ConfigError(f"{path}: its validation positions are not samples of {theirs.source}; {_ALL}")
    return [sample_key(theirs.samples[p].metric_input) for p in positions]


def run_of(instructions: str | Path, run: str | Path | None = None) -> Path | None:
    """The run directory behind an ``evaluate``: ``run`` if given, else ``instructions`` when it
    is a run directory or a file inside one (next to a result.json); None for a plain file."""
    if run is not None:
        return Path(run)
    path = Path(instructions)
    folder = path if path.is_dir() else path.parent
    return folder if (folder / RESULT_FILE).is_file() else None


def other_metric(run_dir: str | Path, config: RunConfig) -> str | None:
    """A warning when the run in ``run_dir`` optimized another metric (name or definition) than
    ``config.metric``; None when they match or the run does not say.

    Raises:
        ConfigError: the run's config.yaml exists but its metric block is invalid.
    """
    theirs = metric_config_near(run_dir)
    name = theirs.name if theirs is not None else _result_metric(run_dir)
    ours = config.metric
    if name is not None and name != ours.name:
        return (
            f"the instructions were optimized for metric {name!r} ({run_dir}), but are scored against "
            f"the config's metric {ours.name!r}"
        )
    if theirs is not None and theirs.definition != ours.definition:
        return (
            f"the instructions were optimized for another definition of {ours.name!r} "
            f"({Path(run_dir) / CONFIG_FILE}) than the config's"
        )
    return None


def learned_from_validation(run_dir: str | Path, instructions: Mapping[str, str]) -> str | None:
    """A warning when ``instructions`` are the run's chosen ones and they learned from the run's
    validation samples (the cross-fit stage, :func:`promptevolver.optimizers._phases.cross_fit`):
    a score on those samples is then in-sample, not a held-out figure. None otherwise."""
    try:
        result = read_result(run_dir)
    except RunDirError:
        return None
    if (result.get("final_choice") or {}).get("stage") != "cross_fit":
        return None
    if dict(result.get("best_instructions") or {}) != dict(instructions):
        return None
    return (
        f"the run's chosen instructions ({run_dir}) learned from its validation samples' corrections "
        "(cross-fit): this score on them is in-sample, not a held-out figure"
    )


def refit_on_every_sample(run_dir: str | Path, instructions: Mapping[str, str]) -> str | None:
    """A note when ``instructions`` are the run's chosen ones and the run refit them on every
    annotation after cross-validating the recipe (small data, :mod:`promptevolver.optimizers._refit`):
    no sample is held out from them, so a score on the run's annotations is in-sample, and the
    run's honest figure is its cross-validated one (named in the note). None otherwise."""
    try:
        result = read_result(run_dir)
    except RunDirError:
        return None
    choice = result.get("final_choice") or {}
    if Regime.of(choice.get("regime")) is not Regime.CROSS_VALIDATED or choice.get("chosen") == 0:
        return None
    if dict(result.get("best_instructions") or {}) != dict(instructions):
        return None
    figure = ((result.get("scores") or {}).get("best") or {}).get("cross_validated")
    shown = "n/a" if figure is None else f"{figure:.3f}"
    return (
        f"the run's chosen instructions ({run_dir}) were refit on every annotation after "
        f"cross-validating the recipe over {choice.get('folds', 'n/a')} folds: no sample is held out "
        f"from them, so this score is in-sample; the run's honest figure is its cross-validated {shown}"
    )


def chosen_positions(
    config: RunConfig,
    dataset: SingleMetricAnnotation,
    *,
    source: str | Path | None,
    instructions: Mapping[str, str],
    run: str | Path | None = None,
    split: str | None = None,
) -> tuple[list[int] | None, list[str]]:
    """Which samples ``evaluate`` and ``assert_agreement`` score, decided once for both: the
    positions (None: every usable sample) and the warnings to show.

    Args:
        source: where the instructions came from (a path; None for a mapping in memory).
        run: the run whose validation samples to score; default: the run ``source`` is in
            (:func:`run_of`).
        split: ``validation`` or ``all``; default ``validation`` when a run is known (its train
            samples were learned from), else ``all``; a run whose chosen instructions were refit
            on every annotation (:func:`refit_on_every_sample`) has no held-out samples: ``all``,
            with the note naming its cross-validated figure.

    Raises:
        ValueError: ``split`` is neither; ``validation`` with no run to take it from, or of a run
            refit on every annotation.
        ConfigError: as :func:`validation_positions` (a run of another metric or file).
    """
    run_dir = Path(run) if run is not None else (run_of(source) if source is not None else None)
    refit = refit_on_every_sample(run_dir, instructions) if run_dir is not None else None
    chosen_split = split or ("validation" if run_dir is not None and refit is None else "all")
    if chosen_split not in ("validation", "all"):
        raise ValueError(f"split must be 'validation' or 'all', got {split!r}")
    if run_dir is None:
        if chosen_split == "validation":
            raise ValueError("the validation split needs the run directory (--run DIR, run=)")
        return None, []
    if refit is not None and chosen_split == "validation":
        raise ValueError(f"the validation split: {refit}; the split all scores every usable sample")
    if chosen_split == "all":
        mismatch = other_metric(run_dir, config)
        return None, [n for n in (refit, mismatch) if n]
    positions = validation_positions(run_dir, dataset, config=config)
    if not positions:  # small data: nothing held out (the seed kept, or a refit on every sample)
        kept = not (_result(run_dir) or {}).get("best_id")
        why = (
            "its seed kept: it learned from none of them"
            if kept
            else "its result refit on every one, its honest figure the cross-validated one"
        )
        note = (
            f"the run in {run_dir} holds no sample out (small data, {why}), so every usable sample is scored"
        )
        return None, [note]
    in_sample = learned_from_validation(run_dir, instructions)
    return positions, [in_sample] if in_sample else []


def _result_metric(run_dir: str | Path) -> str | None:
    return (_result(run_dir) or {}).get("metric")


def _result(run_dir: str | Path) -> dict[str, Any] | None:
    """The run's result.json, or None when it cannot be read."""
    try:
        return read_result(run_dir)
    except RunDirError:
        return None


def _simulator_seed(config: RunConfig, chosen: ChosenJudge, seed: int) -> int:
    """The seed of the simulated LLM the chosen judge was verified on, when the config asks the
    simulator too (its answers are its seed's: the same simulator, the same verdicts); else
    ``seed``."""
    recorded = (chosen.model or {}).get("random_seed")
    simulated = (chosen.model or {}).get("provider") == "simulated" and config.llm.provider == "fake"
    return int(recorded) if simulated and isinstance(recorded, int) else seed


def _check_prompts(instructions: Mapping[str, str], known: Sequence[str]) -> None:
    unknown = sorted(set(instructions) - set(known))
    if unknown:
        raise ConfigError(f"unknown prompt(s) {unknown} in the instructions; the judge has {sorted(known)}")


async def score_instructions(
    config: RunConfig,
    instructions: Mapping[str, str] | ChosenJudge,
    *,
    positions: Sequence[int] | None = None,
    dataset: SingleMetricAnnotation | None = None,
    examples: Mapping[str, Any] | None = None,
) -> Scorecard:
    """Judge ``positions`` (default: every usable sample) with ``instructions`` and score them.

    ``instructions``: prompt name → instruction, or a chosen judge
    (:func:`promptevolver.rundir.read_chosen_judge`), judged with its teaching examples.
    ``examples``: a result's ``examples`` block (:func:`promptevolver.rundir.load_examples`):
    under policy ``static`` or ``retrieval`` each sample is judged with the teaching examples the
    optimized judge is shown (from the run's store of train samples; retrieval never shows a
    sample its own text). None or policy ``none``: instructions only.

    Uses the config's metric, LLM (with its cache) and loss type (binary or numeric).

    Raises:
        ConfigError: instructions for a prompt the judge does not have (its prompt is named after
            the annotation file's, :func:`~promptevolver.config._build.resolve_prompt`); an unknown
            ``prompt_name``; an OpenAI config whose key is not set.
        AnnotationError: the annotations cannot be loaded.
    """
    seed = config.effective_optimizer().random_seed
    if isinstance(instructions, ChosenJudge):
        examples = instructions.examples if examples is None else examples
        seed = _simulator_seed(config, instructions, seed)
        instructions = instructions.instructions
    data = dataset if dataset is not None else load_dataset(config)
    prompt = resolve_prompt(config, data).rename
    metric = build_metric(config.metric, temperature=config.llm.temperature, prompt_name=prompt)
    _check_prompts(instructions, list(metric.get_prompts()))
    scale = label_scale_of(metric)
    llm = build_llm(config.llm, dataset=data, random_seed=seed, prompt_name=prompt, scale=scale)
    await preflight(llm)
    labels = data.labels()
    chosen = list(positions) if positions is not None else [i for i, y in enumerate(labels) if y is not None]
    policy = str((examples or {}).get("policy", "none"))
    store = ExampleStore.from_dict(examples["store"]) if examples and policy != "none" else None
    if store is not None and policy == "retrieval":
        await prepare_store(store, [data.samples[p].metric_input for p in chosen])
    evaluator = Evaluator(
        metric=metric, llm=llm, dataset=data, max_concurrency=config.llm.max_concurrency, examples=store
    )
    judged = await evaluator.evaluate(instructions, chosen, policy)
    figures = agreement_of(judged, chosen, labels, binary=config.loss.type == "binary", scale=scale)
    pairs = tuple(
        (float(labels[p] or 0.0), float(score)) for p in chosen if (score := judged[p].score) is not None
    )
    return Scorecard(
        metric=config.metric.name,
        split="all" if positions is None else "validation",
        agreement=figures,
        judge_calls=llm.usage.judge_calls,
        usage=(llm.usage + evaluator.failures).to_dict(),
        pairs=pairs,
        judged=judged,
        positions=tuple(chosen),
        prompt_name=next(iter(metric.get_prompts())),
        simulated_llm=is_simulated(llm),
    )
