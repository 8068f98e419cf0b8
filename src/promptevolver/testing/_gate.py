"""Pin your judge in CI: fail a test when its agreement with your annotations drops.

:func:`assert_agreement` is the pytest face of ``promptevolver evaluate CONFIG --instructions
FILE --fail-under X``: the same measurement (:mod:`promptevolver.runs._evaluate`) and the same
gate (:mod:`promptevolver.runs._gate`), raising :class:`AssertionError` with the gate's one-line
reason, confidence interval included::

    from promptevolver.testing import assert_agreement

    def test_judge_agrees_with_our_annotations():
        assert_agreement("configs/answer_correctness.yaml", instructions="judge/best_instructions.json",
                         at_least=0.85)
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from promptevolver.config import (
    ManyConfig,
    RunConfig,
    apply_overrides,
    build_metric,
    load_config,
    load_dataset,
    resolve_prompt,
)
from promptevolver.rundir import ChosenJudge, as_chosen_judge
from promptevolver.runs import (
    SIMULATED_GATE,
    GateResult,
    check_threshold,
    chosen_positions,
    score_instructions,
)
from promptevolver.runs.many import evaluate_job

__all__ = ["assert_agreement"]


def assert_agreement(
    config: str | Path | RunConfig | ManyConfig,
    *,
    at_least: float,
    instructions: str | Path | Mapping[str, str] | ChosenJudge | None = None,
    figure: str | None = None,
    run: str | Path | None = None,
    split: str | None = None,
    max_failure_rate: float = 0.0,
    overrides: Sequence[str] = (),
) -> GateResult | dict[str, GateResult]:
    """Measure the judge's agreement with the config's annotations; fail below ``at_least``.

    Args:
        config: a run config file (or a loaded :class:`RunConfig`): annotations, judge, LLM. A
            job's config (``metrics:``, or a loaded ``ManyConfig``) gates every metric of the job
            whose run directory ``instructions`` is: each metric's chosen judge, as ``evaluate``
            does; it fails when one metric fails, naming each.
        at_least: the least acceptable ``figure``.
        instructions: the chosen judge (:func:`promptevolver.rundir.read_chosen_judge`): a run
            directory, a result.json, a best_instructions.json, a JSON file of prompt name →
            instruction, a :class:`~promptevolver.rundir.ChosenJudge` or an ``OptimizationResult``
            (judged with its teaching examples), or a plain mapping of instructions; None: the
            config's judge as it is (its seed instructions).
        figure: ``accuracy``, ``f1`` or ``cohen_kappa`` (binary metrics; default ``accuracy``),
            ``within_one``, ``exact`` or ``weighted_kappa`` (ordinal scores; default ``within_one``).
        run: the run whose validation samples to score, found by content; default: the run
            ``instructions`` is a directory of or a file in (as ``evaluate -i``); a run of
            another metric or annotation file is a ConfigError.
        split: ``validation`` (default when a run is known: its train samples were learned
            from) or ``all`` (every usable sample; the default otherwise), as ``evaluate --split``.
        max_failure_rate: share of evaluations that may fail, in [0, 1) (default 0).
        overrides: ``KEY.PATH=VALUE`` changes to a config file, as ``--set`` (e.g.
            ``llm.model=gpt-4o-mini``).

    Returns:
        The gate's :class:`~promptevolver.runs._gate.GateResult` (it passed); for a job, metric
        name → its GateResult. When the simulated
        LLM judged (``provider: fake``), its ``simulated_llm`` is True, its reason says so and a
        warning is issued: the gate measured the simulator, not a model.

    Raises:
        ConfigError: ``at_least`` or ``max_failure_rate`` is not a share (nan, ``85``...), before
            anything is judged.
        AssertionError: the gate failed; the message is its one-line reason with the interval.
        ConfigError, AnnotationError, RunDirError: the config, annotations or files are unusable.
        ValueError: ``split="validation"`` with no run to take it from.
        RuntimeError: called from a running event loop (call it from a plain, synchronous test).
    """
    check_threshold(at_least, name="at_least")  # before anything is loaded or judged
    check_threshold(max_failure_rate, name="max_failure_rate", below_one=True)
    loaded = _config(config, overrides)
    if isinstance(loaded, ManyConfig):
        return _assert_job(loaded, instructions, at_least, figure, split, max_failure_rate)
    cfg = loaded
    dataset = load_dataset(cfg)
    chosen = _chosen(cfg, instructions, resolve_prompt(cfg, dataset).rename)
    source = instructions if isinstance(instructions, str | os.PathLike) else None
    positions, notes = chosen_positions(
        cfg, dataset, source=source, instructions=chosen.instructions, run=run, split=split
    )
    for note in notes:
        warnings.warn(note, stacklevel=2)
    card = asyncio.run(score_instructions(cfg, chosen, positions=positions, dataset=dataset))
    rng = np.random.default_rng(cfg.effective_optimizer().random_seed)
    result = card.gate(threshold=at_least, figure=figure, max_failure_rate=max_failure_rate, rng=rng)
    if not result.passed:
        raise AssertionError(f"{cfg.metric.name}: {result.reason}")
    if result.simulated_llm:
        warnings.warn(f"{cfg.metric.name}: {SIMULATED_GATE}", stacklevel=2)
    return result


def _assert_job(
    config: ManyConfig,
    instructions: object,
    at_least: float,
    figure: str | None,
    split: str | None,
    max_failure_rate: float,
) -> dict[str, GateResult]:
    if not isinstance(instructions, str | os.PathLike):
        raise TypeError("a job's gate takes the job's run directory as instructions")
    job = evaluate_job(
        config,
        instructions,
        split=split,
        threshold=at_least,
        figure=figure,
        max_failure_rate=max_failure_rate,
    )
    if not job.passed:
        raise AssertionError(job.reason())
    if job.simulated_llm:
        warnings.warn(f"the job's metrics: {SIMULATED_GATE}", stacklevel=3)
    return dict(job.gates)


def _config(config: str | Path | RunConfig | ManyConfig, overrides: Sequence[str]) -> RunConfig | ManyConfig:
    if isinstance(config, RunConfig | ManyConfig):
        if overrides:
            raise ValueError("overrides apply to a config file; change a RunConfig with model_copy")
        return config
    edit = (lambda raw: apply_overrides(raw, list(overrides))) if overrides else None
    return load_config(config, edit=edit)


def _chosen(
    config: RunConfig, given: str | Path | Mapping[str, str] | ChosenJudge | None, prompt: str | None
) -> ChosenJudge:
    if given is None:
        return ChosenJudge(instructions=build_metric(config.metric, prompt_name=prompt).get_instructions())
    return as_chosen_judge(given)
