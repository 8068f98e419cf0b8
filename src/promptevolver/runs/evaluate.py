"""Scoring given instructions on a config's annotations: ``promptevolver evaluate``.

:func:`score_instructions` judges every chosen sample once with the instructions given (for
example a previous run's best) and returns the agreement figures a report shows. Samples: all
usable ones, or the validation samples of a run (``result.json``'s ``split.validation_positions``),
so that a run's held-out score can be checked again, on another LLM for instance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.config.build import build_llm, build_metric, load_dataset
from promptevolver.config.models import RunConfig
from promptevolver.errors import ConfigError
from promptevolver.evaluation.agreement import Agreement, agreement_of
from promptevolver.evaluation.evaluator import Evaluator
from promptevolver.llm.preflight import preflight
from promptevolver.rundir import read_result, result_path

__all__ = ["Scorecard", "score_instructions", "validation_positions"]


@dataclass(frozen=True)
class Scorecard:
    """Agreement of a judge with given instructions with the humans.

    Attributes:
        metric: the metric's name; split: ``all`` or ``validation``.
        agreement: the figures (see :class:`~promptevolver.evaluation.agreement.Agreement`).
        judge_calls: LLM calls made (cache hits excluded); usage: the client's full usage.
    """

    metric: str
    split: str
    agreement: Agreement
    judge_calls: int
    usage: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: metric, split, the agreement figures at the top level, usage."""
        return {
            "metric": self.metric,
            "split": self.split,
            **self.agreement.to_dict(),
            "judge_calls": self.judge_calls,
            "usage": self.usage,
        }


def validation_positions(run_dir: str | Path, dataset: SingleMetricAnnotation) -> list[int]:
    """A run's validation sample positions (its result.json's ``split.validation_positions``),
    checked against ``dataset``.

    Args:
        run_dir: a run directory or its result.json (release-0.1 results included).

    Raises:
        RunDirError: no readable result.json, or one of a newer format (see
            :func:`promptevolver.rundir.read_result`).
        ConfigError: no positions in it, or positions that are not usable samples of ``dataset``
            (the run used other annotations).
    """
    path = result_path(run_dir)
    positions = (read_result(path).get("split") or {}).get("validation_positions")
    if not isinstance(positions, list) or not all(isinstance(p, int) for p in positions):
        raise ConfigError(
            f"{path}: no split.validation_positions (a list of sample positions) to evaluate on"
        )
    labels = dataset.labels()
    if any(not 0 <= p < len(labels) or labels[p] is None for p in positions):
        raise ConfigError(f"{path}: its validation samples are not usable samples of {dataset.source}")
    return list(positions)


def _check_prompts(instructions: Mapping[str, str], known: Sequence[str]) -> None:
    unknown = sorted(set(instructions) - set(known))
    if unknown:
        raise ConfigError(f"unknown prompt(s) {unknown} in the instructions; the judge has {sorted(known)}")


async def score_instructions(
    config: RunConfig,
    instructions: Mapping[str, str],
    *,
    positions: Sequence[int] | None = None,
    dataset: SingleMetricAnnotation | None = None,
) -> Scorecard:
    """Judge ``positions`` (default: every usable sample) with ``instructions`` and score them.

    Uses the config's metric, LLM (with its cache) and loss type (binary or numeric).

    Raises:
        ConfigError: instructions for a prompt the judge does not have; an OpenAI config whose
            key is not set.
        AnnotationError: the annotations cannot be loaded.
    """
    data = dataset if dataset is not None else load_dataset(config)
    metric = build_metric(config.metric, temperature=config.llm.temperature)
    _check_prompts(instructions, list(metric.get_prompts()))
    llm = build_llm(config.llm, dataset=data, random_seed=config.effective_optimizer().random_seed)
    await preflight(llm)
    labels = data.labels()
    chosen = list(positions) if positions is not None else [i for i, y in enumerate(labels) if y is not None]
    evaluator = Evaluator(metric=metric, llm=llm, dataset=data, max_concurrency=config.llm.max_concurrency)
    judged = await evaluator.evaluate(instructions, chosen)
    figures = agreement_of(judged, chosen, labels, binary=config.loss.type == "binary")
    return Scorecard(
        metric=config.metric.name,
        split="all" if positions is None else "validation",
        agreement=figures,
        judge_calls=llm.usage.judge_calls,
        usage=llm.usage.to_dict(),
    )
