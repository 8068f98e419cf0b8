"""Judging candidates on samples: each distinct (candidate, sample) pair once per run.

:class:`Evaluator` runs a metric with a candidate's instructions over sample positions
concurrently and memoises every :class:`Judgement` by (whitespace-normalised instructions,
sample position). Results are keyed by position, so they never depend on the order in which
concurrent LLM calls complete. The requests in flight are bounded by the client it is given: a
search's client is behind the run's one limit (:class:`~promptevolver.llm._concurrency.InFlightLimit`,
shared by every phase), so the evaluator adds none of its own there; given ``max_concurrency``
(evaluating outside a search) it caps its judge requests in flight itself, however many
candidates are evaluated together and however many calls one evaluation makes (a judge ensemble
makes several).
:func:`score` turns judgements into a loss value and a per-sample correctness vector.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.evaluation._losses import Loss
from promptevolver.judge import ExampleStore, Judgement, Metric
from promptevolver.llm import JUDGE_OPERATION, InFlightLimit, LLMClient, Usage

__all__ = ["EVALUATION_CAUSES", "EXAMPLES_KEY", "Evaluator", "Observer", "Score", "candidate_key", "score"]

#: Causes of a failed evaluation that no failed call accounts for: every call was answered, but
#: the answer stayed malformed after the re-ask (``parse``) or a judge ensemble ran out of time.
EVALUATION_CAUSES = frozenset({"parse", "timeout"})

CandidateKey = tuple[tuple[str, str], ...]


#: The pseudo prompt name under which a candidate key holds its example policy (not ``none``).
EXAMPLES_KEY = "@examples"


def candidate_key(instructions: Mapping[str, str], examples: str = "none") -> CandidateKey:
    """Identity of a candidate: its instructions with whitespace normalised, sorted by prompt,
    and its example policy with its settings (:meth:`ExampleStore.key
    <promptevolver.judge._examples.ExampleStore.key>`) under :data:`EXAMPLES_KEY` unless ``none``
    (so an instruction-only candidate's key is as before examples existed)."""
    items = [(name, " ".join(text.split())) for name, text in instructions.items()]
    if examples != "none":
        items.append((EXAMPLES_KEY, examples))
    return tuple(sorted(items))


class Observer(Protocol):
    """Watches evaluations (e.g. :class:`~promptevolver.optimizers.strategies._failures.FailureTally`)."""

    def plan(self, n: int) -> None:
        """``n`` new evaluations are about to be made."""
        ...

    def record(self, cause: str | None, error: str | None = None) -> None:
        """One evaluation's outcome: ``cause`` None for success, else why it failed."""
        ...


class Evaluator:
    """Judges candidates on samples of ``dataset`` with ``metric`` and ``llm``, memoised.

    Args:
        metric: the judge; it receives the candidate's instructions per call (never mutated).
        llm: client for judge calls.
        dataset: the annotated samples; positions index ``dataset.samples``.
        max_concurrency: judge requests in flight at once through this evaluator (≥ 1), across
            all its concurrent evaluations; None: ``llm`` already enforces the run's limit
            (a search's client stack), no second one is added.
        examples: the store of teaching examples a candidate's example policy draws from (None:
            every candidate is judged without examples).
    """

    def __init__(
        self,
        *,
        metric: Metric,
        llm: LLMClient,
        dataset: SingleMetricAnnotation,
        max_concurrency: int | None = None,
        examples: ExampleStore | None = None,
    ) -> None:
        self.examples = examples
        self.metric = metric
        self.llm = llm
        self._limited = llm if max_concurrency is None else InFlightLimit(max_concurrency).wrap(llm)
        self.dataset = dataset
        self.max_concurrency = max_concurrency
        self._memo: dict[tuple[CandidateKey, int], Judgement] = {}
        #: Told of every new evaluation (``plan``) and its outcome (``record``).
        self.observer: Observer | None = None
        self.judged = 0
        #: Evaluations made here that failed with a cause in :data:`EVALUATION_CAUSES` (operation
        #: ``judge``, by cause); add it to the client's usage, which counts the calls that gave up.
        self.failures = Usage()

    def policy_key(self, policy: str) -> str:
        """The memo key part of an example policy (``none`` without a store)."""
        if policy == "none":
            return "none"
        if self.examples is None:
            raise ValueError(f"example policy {policy!r} needs an example store")
        return self.examples.key(policy)

    async def evaluate(
        self, instructions: Mapping[str, str], positions: Sequence[int], examples: str = "none"
    ) -> dict[int, Judgement]:
        """Judgements of ``instructions`` on ``positions`` (position → judgement), each shown
        the teaching examples of the example policy ``examples`` (``none``, ``static``,
        ``retrieval``; see :mod:`promptevolver.judge._examples`)."""
        key = candidate_key(instructions, self.policy_key(examples))
        todo = [p for p in dict.fromkeys(positions) if (key, p) not in self._memo]
        if self.observer is not None and todo:
            self.observer.plan(len(todo))

        async def judge(position: int) -> None:
            inputs = self.dataset.samples[position].metric_input
            if examples == "none" or self.examples is None:
                result = await self.metric.ajudge(inputs, llm=self._limited, instructions=instructions)
            else:
                shown = self.examples.examples_for(examples, inputs)
                result = await self.metric.ajudge(  # type: ignore[call-arg]
                    inputs, llm=self._limited, instructions=instructions, examples=shown
                )
            self._memo[(key, position)] = result
            self.judged += 1
            if result.failed and result.cause in EVALUATION_CAUSES:
                self.failures.record_failure(JUDGE_OPERATION, result.cause)
            if self.observer is not None:
                self.observer.record(result.cause if result.failed else None, result.error)

        await asyncio.gather(*(judge(p) for p in todo))
        return {p: self._memo[(key, p)] for p in positions}

    def lookup(
        self, instructions: Mapping[str, str], position: int, examples: str = "none"
    ) -> Judgement | None:
        """The memoised judgement of ``instructions`` on ``position``, or None if not judged."""
        return self._memo.get((candidate_key(instructions, self.policy_key(examples)), position))

    def remember(self, instructions: Mapping[str, str], position: int, judgement: Judgement) -> None:
        """Memoise a judgement made earlier (used when resuming from a checkpoint); the example
        policy, if any, is in ``instructions`` under :data:`EXAMPLES_KEY` (as memo keys hold it)."""
        examples = instructions.get(EXAMPLES_KEY, "none")
        plain = {name: text for name, text in instructions.items() if name != EXAMPLES_KEY}
        self._memo[(candidate_key(plain, examples), position)] = judgement

    def memo_items(self) -> list[tuple[tuple[CandidateKey, int], Judgement]]:
        """Every memoised ((candidate key, position), judgement), in insertion order."""
        return list(self._memo.items())


@dataclass(frozen=True)
class Score:
    """A candidate's score on a set of samples; failed evaluations are left out, never scored.

    Attributes:
        value: the loss over the samples whose evaluation succeeded (direction:
            ``loss.higher_is_better``), or None when none did — never a number for nothing.
        correct: per-sample quality (1 = perfect; ``Loss.per_sample_correct``), shape ``(n,)``,
            aligned with the positions scored;
            NaN where the evaluation failed.
        failures: samples whose evaluation failed.
        y_true: the human labels, shape ``(n,)``.
        y_pred: the judge's scores, shape ``(n,)``; NaN where the evaluation failed.
    """

    value: float | None
    correct: np.ndarray
    failures: int
    y_true: np.ndarray
    y_pred: np.ndarray

    @property
    def measured(self) -> np.ndarray:
        """Boolean mask, shape ``(n,)``: True where the evaluation succeeded."""
        return ~np.isnan(self.y_pred)

    @property
    def coverage(self) -> float:
        """Share of samples measured, in [0, 1] (1.0 for no samples)."""
        n = len(self.y_pred)
        return 1.0 if n == 0 else float(self.measured.sum()) / n

    def value_on(self, loss: Loss, mask: np.ndarray, weights: np.ndarray | None = None) -> float | None:
        """The loss over the measured samples within boolean ``mask`` (shape ``(n,)``), or None
        when there are none: compare two candidates on the samples both have. ``weights``
        (shape ``(n,)``): how many samples each stands for (a stratified estimate)."""
        keep = mask & self.measured
        if not keep.any():
            return None
        w = None if weights is None else weights[keep]
        return loss(y_true=self.y_true[keep], y_pred=self.y_pred[keep], sample_weight=w)

    def estimate(self, loss: Loss, weights: np.ndarray | None) -> float | None:
        """The loss over every measured sample, weighted by ``weights`` (None: unweighted)."""
        return self.value_on(loss, np.ones(len(self.y_pred), dtype=bool), weights)


def score(
    loss: Loss, judgements: Mapping[int, Judgement], positions: Sequence[int], labels: Sequence[float | None]
) -> Score:
    """Score judgements at ``positions`` against human ``labels`` (indexed by position).

    A failed evaluation is excluded: it is counted in ``failures`` and lowers ``coverage``, its
    ``correct`` and ``y_pred`` entries are NaN, and ``value`` is computed over the others only.
    """
    y_true = np.array([labels[p] for p in positions], dtype=np.float64)
    y_pred = np.array(
        [np.nan if judgements[p].score is None else judgements[p].score for p in positions], dtype=np.float64
    )
    measured = ~np.isnan(y_pred)
    correct = np.full(len(positions), np.nan)
    value = None
    if measured.any():
        correct[measured] = loss.per_sample_correct(y_true=y_true[measured], y_pred=y_pred[measured])
        value = loss(y_true=y_true[measured], y_pred=y_pred[measured])
    return Score(value, correct, int((~measured).sum()), y_true, y_pred)
