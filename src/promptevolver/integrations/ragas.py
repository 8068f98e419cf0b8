"""Optimize a Ragas metric object through its prompts, and write the result back into it.

Ragas users hold ``ragas.metrics`` objects; this module optimizes one directly::

    from ragas.metrics import AspectCritic
    from promptevolver.integrations.ragas import optimize_ragas_metric

    critic = AspectCritic(name="answer_correctness", definition="Is the response correct?")
    result = optimize_ragas_metric(critic, annotations, llm=llm)   # best instructions applied

:class:`RagasMetric` is the adapter: it is a :class:`~promptevolver.judge.protocol.Metric` whose
one prompt is the Ragas metric's single-turn prompt — its name (``single_turn_aspect_critic_prompt``,
``single_turn_simple_criteria_prompt``), instruction and output model (``reason`` with ``verdict``
or ``score``) — so Ragas annotation exports match it as they are. :meth:`RagasMetric.apply` (or
:func:`write_back`) writes instructions into the Ragas object with ``set_prompts`` in one call;
the object is never changed during the search.

Supported: ``AspectCritic`` (binary, 0/1 verdicts; default loss accuracy) and
``SimpleCriteriaScore`` (a score; default loss MSE), the versions of ``ragas==0.4.3`` (the extra
``promptevolver[ragas]`` pins it). What differs from Ragas scoring the same prompt: judge calls
are rendered by promptevolver (the instruction, the JSON schema of the output model, the input
fields as JSON) through promptevolver's LLM clients (cache, budget, retries), without Ragas'
few-shot examples (these two metrics have none by default) and with one call per sample (Ragas'
``strictness`` > 1 votes over several; wrap the adapter in a
:class:`~promptevolver.judge.ensemble.JudgeEnsemble` for that).

Ragas is imported when an adapter is made, never when this module is; ``RAGAS_DO_NOT_TRACK`` is
set to ``true`` first unless the environment already sets it (Ragas' analytics stay off).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.annotations.labels import LabelScale
from promptevolver.config.models import GeneticConfig
from promptevolver.errors import AnnotationError
from promptevolver.evaluation.losses import BinaryMetricLoss, Loss, MSELoss
from promptevolver.judge.asking import UnusableAnswer, ask
from promptevolver.judge.prompt_set import PromptSet
from promptevolver.judge.prompts import Prompt
from promptevolver.judge.protocol import Judgement
from promptevolver.llm.base import LLMClient
from promptevolver.optimizers.genetic import GeneticOptimizer
from promptevolver.optimizers.result import OptimizationResult
from promptevolver.rundir import as_instructions

__all__ = ["INSTALL_HINT", "RAGAS_VERSION", "RagasMetric", "optimize_ragas_metric", "write_back"]

#: The Ragas version this integration is tested with (the extra pins it).
RAGAS_VERSION = "0.4.3"
INSTALL_HINT = f'pip install "promptevolver[ragas]"  (ragas=={RAGAS_VERSION})'
_FIELDS = ("user_input", "response", "retrieved_contexts", "reference_contexts", "reference")


def import_ragas() -> ModuleType:
    """``ragas.metrics``, imported now (analytics off unless the environment says otherwise).

    Raises:
        ImportError: Ragas is not installed (the message says how to install it).
    """
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import ragas.metrics as metrics
    except ImportError as exc:
        raise ImportError(f"the Ragas integration needs Ragas: {INSTALL_HINT}") from exc
    return metrics


def _kind(metric: Any) -> str:
    """``binary`` for a Ragas AspectCritic, ``score`` for a SimpleCriteriaScore.

    Raises:
        TypeError: another object.
    """
    metrics = import_ragas()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        critic, criteria = metrics.AspectCritic, metrics.SimpleCriteriaScore
    if isinstance(metric, critic):
        return "binary"
    if isinstance(metric, criteria):
        return "score"
    supported = "ragas.metrics.AspectCritic and SimpleCriteriaScore"
    raise TypeError(f"RagasMetric supports {supported}, got {type(metric).__name__}")


class RagasMetric(PromptSet):
    """A Ragas ``AspectCritic`` or ``SimpleCriteriaScore`` as a promptevolver metric.

    Args:
        metric: the Ragas metric object (read now; changed only by :meth:`apply`).
        prompt: the Ragas prompt to optimize (default: the single-turn one).
        score_range: for a SimpleCriteriaScore, the (lowest, highest) score an answer may give
            (None: any integer); an answer outside is re-asked, then a failed evaluation.
        llm: default client for :meth:`ajudge`.
        max_reasks: times a malformed answer is re-asked (≥ 0).
        temperature: sampling temperature of judge calls.

    Raises:
        ImportError: Ragas is not installed.
        TypeError: ``metric`` is neither an AspectCritic nor a SimpleCriteriaScore.
        KeyError: ``prompt`` is not one of the metric's prompts.
    """

    def __init__(
        self,
        metric: Any,
        *,
        prompt: str | None = None,
        score_range: tuple[float, float] | None = None,
        llm: LLMClient | None = None,
        max_reasks: int = 1,
        temperature: float = 0.0,
    ) -> None:
        self.kind = _kind(metric)
        prompts = metric.get_prompts()
        name = prompt or next((n for n in prompts if n.startswith("single_turn_")), "")
        if name not in prompts:
            raise KeyError(f"unknown prompt {prompt!r}; the Ragas metric has {sorted(prompts)}")
        if max_reasks < 0:
            raise ValueError(f"max_reasks must be >= 0, got {max_reasks}")
        source = prompts[name]
        self.ragas_metric = metric
        self.name = str(metric.name)
        self.score_range = score_range
        self.llm = llm
        self.max_reasks = max_reasks
        self.temperature = temperature
        self._prompts: dict[str, Prompt[Any]] = {name: Prompt(name, source.instruction, source.output_model)}

    def __repr__(self) -> str:
        kind = type(self.ragas_metric).__name__
        return f"RagasMetric({kind}(name={self.name!r}), prompt={self.prompt_name!r})"

    @property
    def prompt_name(self) -> str:
        """The optimized Ragas prompt's name."""
        return next(iter(self._prompts))

    @property
    def label_scale(self) -> LabelScale:
        """Binary for an AspectCritic; scores (in ``score_range`` when given) for a SimpleCriteriaScore."""
        if self.kind == "binary":
            return LabelScale("binary")
        return LabelScale("numeric", *self.score_range) if self.score_range else LabelScale("numeric")

    @property
    def calls_per_evaluation(self) -> int:
        """LLM calls one evaluation makes at most, re-asks excluded (1)."""
        return 1

    def default_loss(self) -> Loss:
        """Accuracy for an AspectCritic, mean squared error for a SimpleCriteriaScore."""
        return BinaryMetricLoss() if self.kind == "binary" else MSELoss()

    def prompt_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The single-turn fields Ragas' prompt takes (``user_input``, ``response``,
        ``retrieved_contexts``, ``reference_contexts``, ``reference``) that the sample has.

        Raises:
            AnnotationError: the sample has none of them.
        """
        shown = {k: inputs[k] for k in _FIELDS if inputs.get(k) not in (None, "", [])}
        if not shown:
            raise AnnotationError(f"{self.name} needs one of {list(_FIELDS)}", field="metric_input")
        return shown

    def _check(self, output: Any) -> None:
        if self.kind == "binary":
            if output.verdict not in (0, 1):
                raise UnusableAnswer(f"verdict must be 0 or 1, got {output.verdict!r}")
        elif self.score_range is not None and not self.score_range[0] <= output.score <= self.score_range[1]:
            low, high = self.score_range
            raise UnusableAnswer(f"score must be in [{low:g}, {high:g}], got {output.score!r}")

    async def ajudge(
        self,
        inputs: Mapping[str, Any],
        *,
        llm: LLMClient | None = None,
        instructions: Mapping[str, str] | None = None,
        sample_index: int = 0,
        temperature: float | None = None,
    ) -> Judgement:
        """Judge one sample with the Ragas prompt and ``instructions`` (default: its own).

        Never raises for LLM trouble (a failed :class:`Judgement` instead). Raises
        :class:`AnnotationError` for a sample with no field the prompt takes, ValueError when
        neither the call nor the adapter has an LLM.
        """
        client = self.client(llm)
        prompt = self.prompt_for(self.prompt_name, instructions)
        answer = await ask(
            client,
            prompt,
            prompt.render(self.prompt_inputs(inputs)),
            sample_index=sample_index,
            temperature=self.temperature if temperature is None else temperature,
            max_reasks=self.max_reasks,
            check=self._check,
        )
        if answer.output is None:
            return answer.failure()
        value = answer.output.verdict if self.kind == "binary" else answer.output.score
        return Judgement(score=float(value), reason=answer.output.reason, raw=answer.raw)

    def apply(self, instructions: Mapping[str, str] | str | os.PathLike[str]) -> Any:
        """Write ``instructions`` (e.g. an :class:`OptimizationResult`, or a run directory or
        result.json path) into the Ragas metric and into this adapter; return the Ragas metric.
        Raises as :func:`write_back` (nothing is changed then)."""
        chosen = as_instructions(instructions)
        self.set_instructions(chosen)
        return write_back(self.ragas_metric, chosen)


def write_back(metric: Any, instructions: Mapping[str, str] | str | os.PathLike[str]) -> Any:
    """Set each named prompt's instruction on the Ragas ``metric`` (``set_prompts``, one call);
    return ``metric``.

    Args:
        metric: the Ragas metric object.
        instructions: prompt name → instruction (an :class:`OptimizationResult` is one), or the
            path of a run directory, its result.json or a best_instructions.json
            (:func:`promptevolver.rundir.as_instructions`).

    Raises:
        TypeError: ``instructions`` is neither a mapping nor a path.
        ConfigError: the path holds no readable instructions (the message names the file).
        KeyError: a prompt name the metric does not have (nothing is changed then).
    """
    chosen = as_instructions(instructions)
    prompts = metric.get_prompts()
    unknown = sorted(set(chosen) - set(prompts))
    if unknown:
        raise KeyError(f"unknown prompt(s) {unknown}; the Ragas metric has {sorted(prompts)}")
    for name, text in chosen.items():
        prompts[name].instruction = text
    metric.set_prompts(**{name: prompts[name] for name in chosen})
    return metric


def optimize_ragas_metric(
    metric: Any,
    dataset: SingleMetricAnnotation,
    *,
    llm: LLMClient,
    loss: Loss | None = None,
    config: Mapping[str, Any] | GeneticConfig | None = None,
    reflection_llm: LLMClient | None = None,
    run_dir: str | None = None,
    apply: bool = True,
    **adapter: Any,
) -> OptimizationResult:
    """Optimize a Ragas ``AspectCritic`` or ``SimpleCriteriaScore`` on ``dataset`` and, with
    ``apply``, write the best instructions into it.

    Args:
        metric: the Ragas metric object.
        dataset: its annotations (Ragas' format; the prompt names match the metric's).
        llm: client for judge calls; reflection_llm: for meta calls (default ``llm``).
        loss: default :meth:`RagasMetric.default_loss`.
        config: the optimizer's options (:class:`~promptevolver.config.models.GeneticConfig`).
        run_dir: directory for the checkpoint (None: none).
        apply: write the best instructions into ``metric`` (never worse than its own on the
            validation samples: the seed is among the finalists).
        adapter: other :class:`RagasMetric` arguments (``prompt``, ``score_range``...).

    Raises:
        ImportError, TypeError, KeyError: as :class:`RagasMetric`; and whatever
            :meth:`GeneticOptimizer.optimize <promptevolver.optimizers.genetic.GeneticOptimizer.optimize>`
            raises (nothing is applied then).
    """
    judge = RagasMetric(metric, **adapter)
    optimizer = GeneticOptimizer(metric=judge, llm=llm, reflection_llm=reflection_llm)
    result = optimizer.optimize(dataset, loss or judge.default_loss(), config, run_dir=run_dir)
    if apply:
        judge.apply(result)
    return result
