"""Turn a validated :class:`RunConfig` into objects: dataset, metric, loss, LLM clients.

The one place where config names become objects; an unknown name cannot get here (the config
models only admit known ones, and their errors list them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from promptevolver.annotations import (
    LabelScale,
    SingleMetricAnnotation,
    check_annotator_labels,
    check_inputs,
    check_recorded_verdicts,
)
from promptevolver.config._models import (
    LLMConfig,
    LossConfig,
    MetricConfig,
    RunConfig,
    SyntheticSource,
)
from promptevolver.config._prompt_match import PromptMatch, match_prompt
from promptevolver.errors import AnnotationError, AnnotationFileNotFoundError, ConfigError
from promptevolver.evaluation import BinaryMetricLoss, ClassificationLoss, Loss, MSELoss
from promptevolver.judge import (
    AspectCritic,
    ClassificationJudge,
    JudgeEnsemble,
    Metric,
    PairwiseJudge,
    RubricJudge,
    StatementSupport,
    label_scale_of,
)
from promptevolver.llm import BaseLLMClient, CachedLLM, LLMClient
from promptevolver.llm.context import context_tokens_for
from promptevolver.llm.openai import OpenAIClient
from promptevolver.llm.pricing import Price
from promptevolver.optimizers import check_inputs as check_fields
from promptevolver.simulation import RubricSpec, StatementsSpec, generate_rubric, generate_statements
from promptevolver.simulation.simulated_metrics import SimulatedMetricsLLM
from promptevolver.simulation.synthetic import SyntheticSpec, generate

__all__ = [
    "check_dataset_found",
    "build_judge",
    "build_llm",
    "build_loss",
    "build_metric",
    "build_run_parts",
    "load_dataset",
    "resolve_prompt",
]


def check_dataset_found(dataset: Path, source: str | Path) -> None:
    """Refuse an annotation file that is not there, naming the config file ``source`` whose
    ``dataset`` it is (a relative path is that file's folder's: a run directory moved elsewhere
    finds none).

    Raises:
        AnnotationFileNotFoundError: naming the file, the config and its key.
    """
    if not dataset.exists():
        where = f"the `dataset` in {source}; a relative path there is its folder's"
        raise AnnotationFileNotFoundError(f"file not found ({where})", path=dataset)


def load_dataset(config: RunConfig, *, source: str | Path | None = None) -> SingleMetricAnnotation:
    """The annotations of the run's metric: ``metric_name`` if set, else the metric's ``name``;
    ``source``: the config file ``config`` was read from, named when its ``dataset`` is not found
    (a relative path is that file's folder's: a run directory moved elsewhere finds none).

    Raises:
        AnnotationError: missing/malformed file or sample, a label that does not fit the metric's
            ``label_scale`` (a binary metric's 0/1, a rubric's score range; names the file,
            sample and field), or the metric is not in the file (the message lists the metrics
            present); the metric has no samples; a usable sample lacking a field the judge
            shows (``metric_input.response`` ...); a text input that is not a string; a recorded
            verdict of a binary metric that is not 0 or 1.
        ConfigError: ``loss.type: binary`` and the metric's labels are numeric.
    """
    if isinstance(config.dataset, SyntheticSource):
        synthetic = config.dataset.synthetic
        arguments = {"name": config.metric.name, **synthetic.spec_arguments()}
        if synthetic.kind == "rubric":
            return generate_rubric(RubricSpec(**arguments))
        if synthetic.kind == "statements":
            return generate_statements(StatementsSpec(**arguments))
        return generate(SyntheticSpec(**arguments))
    if source is not None:
        check_dataset_found(config.dataset, source)
    name = config.metric_name or config.metric.name
    # The kind of the labels comes from the metric, not from the values: an aspect critic's are
    # 0/1 verdicts, a rubric's scores in its range, a supported fraction's in [0, 1].
    judge = build_judge(config.metric)
    dataset = SingleMetricAnnotation.from_json(
        config.dataset, metric_name=name, scale=judge.label_scale, judge=type(judge).__name__
    )
    if config.annotators.split_items == "drop":  # the annotators must agree on a sample to keep it
        dataset = dataset.filter(lambda s: len(set(s.annotator_labels().values())) <= 1)
    if not dataset.samples:
        raise AnnotationError(f"metric {name!r} has no samples: nothing to learn from", path=config.dataset)
    check_inputs(dataset.samples, path=config.dataset, metric=name)
    check_fields(dataset, judge, dataset.usable_indices())  # every field the judge shows it
    check_annotator_labels(dataset.samples, judge.label_scale, path=config.dataset, metric=name)
    if dataset.is_binary:
        check_recorded_verdicts(dataset.samples, path=config.dataset, metric=name, scale=judge.label_scale)
    if config.loss.type == "binary" and not dataset.is_binary:
        raise ConfigError(
            f"loss.type is 'binary' but the labels of metric {name!r} in {config.dataset} are numeric "
            "scores, not 0/1 verdicts; use loss.type: mse, or fix the labels"
        )
    return dataset


def resolve_prompt(config: RunConfig, dataset: SingleMetricAnnotation) -> PromptMatch:
    """The judge's prompt names for ``dataset``: ``config.prompt_name`` checked against the file's
    prompt keys, or chosen from them (:func:`~promptevolver.config._prompt_match.match_prompt`);
    a one-prompt judge (an aspect critic, a rubric, a pairwise or a classification judge) takes the
    file's name; statement support's two prompts keep theirs.

    Raises:
        ConfigError: ``prompt_name`` is not in the file or cannot name this judge's prompt, the
            file has several prompts and none is the judge's, or a fixed-name prompt of the judge
            is missing from the file (the message lists the keys).
    """
    judge = build_judge(config.metric)
    return match_prompt(
        dataset,
        config.prompt_name,
        judge_prompts=list(judge.get_prompts()),
        renamable=isinstance(judge, ONE_PROMPT),
    )


#: A single judge of ours.
Judge = AspectCritic | RubricJudge | StatementSupport | PairwiseJudge | ClassificationJudge
#: Our judges of one prompt, which takes the annotation file's name for it.
ONE_PROMPT = (AspectCritic, RubricJudge, PairwiseJudge, ClassificationJudge)


def build_judge(config: MetricConfig, *, temperature: float = 0.0, prompt_name: str | None = None) -> Judge:
    """The single judge ``config`` describes (never an ensemble): by ``config.type``, an
    AspectCritic, a RubricJudge, a StatementSupport, a PairwiseJudge or a ClassificationJudge.
    ``temperature`` (the LLM's) applies unless ``config.temperature`` is set; ``prompt_name``
    names a one-prompt judge's prompt (:func:`resolve_prompt`; None: the judge's own name;
    statement support's prompts keep their names)."""
    if config.temperature is not None:
        temperature = config.temperature
    name, definition = config.name, config.definition
    if config.type == "rubric":
        return RubricJudge(
            name=name,
            definition=definition,
            score_range=config.score_range or (1, 5),
            discrete=True if config.discrete is None else config.discrete,
            rubrics=config.rubrics,
            temperature=temperature,
            prompt_name=prompt_name or RubricJudge.PROMPT_NAME,
        )
    if config.type == "statement_support":
        return StatementSupport(name=name, definition=definition, temperature=temperature)
    if config.type == "pairwise":
        ties, swap = config.ties is not False, bool(config.order_swap)
        prompt = prompt_name or PairwiseJudge.PROMPT_NAME
        return PairwiseJudge(
            name=name,
            definition=definition,
            ties=ties,
            order_swap=swap,
            temperature=temperature,
            prompt_name=prompt,
        )
    if config.type == "classification":
        labels, prompt = list(config.labels or ()), prompt_name or ClassificationJudge.PROMPT_NAME
        return ClassificationJudge(
            name=name, definition=definition, labels=labels, temperature=temperature, prompt_name=prompt
        )
    prompt = prompt_name or AspectCritic.PROMPT_NAME
    return AspectCritic(name=name, definition=definition, temperature=temperature, prompt_name=prompt)


def build_metric(config: MetricConfig, *, temperature: float = 0.0, prompt_name: str | None = None) -> Metric:
    """The judge ``config`` describes (:func:`build_judge`, ``prompt_name`` included), wrapped in a
    :class:`JudgeEnsemble` when ``config.is_ensemble``."""
    judge = build_judge(config, temperature=temperature, prompt_name=prompt_name)
    if not config.is_ensemble:
        return judge
    return JudgeEnsemble(
        metric=judge,
        num_judges=config.num_judges,
        aggregation_method=config.aggregation,
        max_concurrent_judges=config.max_concurrent_judges,
        timeout_s=config.timeout_s,
    )


def build_loss(config: LossConfig) -> Loss:
    if config.type == "mse":
        return MSELoss(reduction=config.reduction)
    if config.type == "classification":
        return ClassificationLoss(metric="macro_f1" if config.metric == "macro_f1" else "accuracy")
    return BinaryMetricLoss(metric="f1_score" if config.metric == "f1_score" else "accuracy")


def build_llm(
    config: LLMConfig,
    *,
    dataset: SingleMetricAnnotation,
    random_seed: int,
    prompt_name: str | None = None,
    scale: LabelScale | None = None,
) -> LLMClient:
    """The client for ``config``: the simulated judge over ``dataset`` (reading the original
    verdicts under ``prompt_name``, default ``AspectCritic.PROMPT_NAME``; ``scale``: the judge's
    labels, whose names a pairwise or classification judge answers), or an OpenAI client;
    wrapped in a :class:`CachedLLM` when ``config.cache`` names a file.

    Raises:
        ConfigError: ``provider: openai`` and the key's environment variable is unset.
        CacheError: the cache file cannot be opened (before any call is made).
    """
    client = _build_client(
        config, dataset=dataset, random_seed=random_seed, prompt_name=prompt_name, scale=scale
    )
    return client if config.cache is None else CachedLLM(inner=client, path=config.cache)


def build_run_parts(
    config: RunConfig,
    dataset: SingleMetricAnnotation,
    *,
    random_seed: int,
    prompt_name: str | None,
    step: Callable[[str], None],
    whose: str = "",
) -> tuple[Metric, LLMClient, LLMClient | None]:
    """What a run of ``config`` on ``dataset`` judges with: (the metric, its LLM, the reflection
    LLM or None for the judge's own), as :func:`build_metric` and :func:`build_llm` make them
    (``prompt_name``: the resolved prompt, :func:`resolve_prompt`). ``step`` receives a line
    before a simulated LLM is built (it mines the annotations; ``whose``, e.g. ``" of
    faithfulness"``, names the metric in it).

    Raises:
        as :func:`build_llm`.
    """
    if "fake" in (config.llm.provider, getattr(config.reflection_llm, "provider", None)):
        step(f"building the simulated LLM{whose}: mining criteria from {len(dataset):,} annotations")
    metric = build_metric(config.metric, temperature=config.llm.temperature, prompt_name=prompt_name)
    judge = build_judge(config.metric, prompt_name=prompt_name)
    made = {"dataset": dataset, "random_seed": random_seed, "scale": label_scale_of(judge)}
    prompt = prompt_name or (judge.prompt_name if isinstance(judge, ONE_PROMPT) else None)
    llm = build_llm(config.llm, prompt_name=prompt, **made)  # type: ignore[arg-type]
    reflection = None
    if config.reflection_llm is not None:
        reflection = build_llm(config.reflection_llm, prompt_name=prompt, **made)  # type: ignore[arg-type]
    return metric, llm, reflection


def _build_client(
    config: LLMConfig,
    *,
    dataset: SingleMetricAnnotation,
    random_seed: int,
    prompt_name: str | None,
    scale: LabelScale | None,
) -> BaseLLMClient:
    price = _price(config)
    if config.provider == "fake":
        return SimulatedMetricsLLM(
            dataset=dataset,
            random_seed=random_seed,
            prompt_name=prompt_name or AspectCritic.PROMPT_NAME,
            scale=scale,
            noise=config.noise,
            max_concurrency=config.max_concurrency,
            price=price,
            context_tokens=config.context_tokens,
        )
    assert config.model is not None
    client = OpenAIClient(**config.client_arguments(), price=price)
    client.context_tokens = context_tokens_for(config.model, config.context_tokens)
    return client


def _price(config: LLMConfig) -> Price | None:
    """``llm.prices``, else the price table's entry for the model (:meth:`LLMConfig.price`)."""
    found = config.price()
    return None if found is None else found[0]
