"""Strict, validated configuration: the optimizer's options and a whole run's YAML file.

Models use pydantic with ``extra="forbid"``: a misspelt key is an error naming its key path.
:func:`load_run_config` adds the file name to every message and resolves the dataset path
relative to the config file.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from promptevolver.config._yaml_file import read_yaml_mapping
from promptevolver.errors import ConfigError
from promptevolver.llm import DEFAULT_MAX_ATTEMPTS, MASK, redact_url
from promptevolver.llm.pricing import PRICE_TABLE_DATE, Price, table_price

if TYPE_CHECKING:
    from promptevolver.llm.openai import OpenAIEmbeddings

__all__ = [
    "AnnotatorsConfig",
    "BudgetConfig",
    "EmbeddingsConfig",
    "ExamplesConfig",
    "GeneticConfig",
    "LLMConfig",
    "LossConfig",
    "METRIC_FOLDER",
    "METRIC_TYPES",
    "ManyConfig",
    "MetricConfig",
    "PriceConfig",
    "RUN_LEVEL_KEYS",
    "RunConfig",
    "SYNTHETIC_KEYS",
    "SyntheticDatasetConfig",
    "SyntheticSource",
    "TrackingConfig",
    "MlflowTrackingConfig",
    "default_cache",
    "embedder_from_record",
    "expand_base_url",
    "format_validation_error",
    "load_config",
    "load_run_config",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """``generations: true`` is no number (pydantic's lax mode would read it as 1), and
        ``.nan`` or ``.inf`` is no value of any setting (a NaN compares false with every bound,
        so pydantic said ``should be less than 1`` of ``confidence: .nan``)."""
        if isinstance(value, bool) and info.field_name not in (None, "random_seed", "seeds"):  # seeds: Seed
            annotation = cls.model_fields[info.field_name].annotation
            if annotation is not bool and bool not in get_args(annotation) and _numeric(annotation):
                raise ValueError(f"expected a number, got {str(value).lower()}")
        if info.field_name is not None and _not_finite(
            value, _holds_model(cls.model_fields[info.field_name].annotation)
        ):
            raise ValueError(f"Input should be a finite number, got {value}")
        return value


def _not_finite(value: Any, shallow: bool = False) -> bool:
    """Whether ``value`` is a NaN or an infinity, or (unless ``shallow``: a section, whose own
    fields say it naming themselves) holds one in a list, tuple or mapping."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if shallow:
        return False
    if isinstance(value, list | tuple):
        return any(_not_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_not_finite(k) or _not_finite(v) for k, v in value.items())
    return False


def _holds_model(annotation: Any) -> bool:
    """Whether a field's type is (or includes) a config section (a pydantic model)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_model(a) for a in get_args(annotation))


def _numeric(annotation: Any) -> bool:
    """Whether a field's type is (or includes) int or float."""
    return annotation in (int, float) or any(_numeric(a) for a in get_args(annotation))


#: A population above this many candidates gets a warning naming its cost (each one is judged on
#: every train sample of the focus set).
LARGE_POPULATION = 100


_SEED_RULE = "must be a whole number >= 0 (numpy's random generators refuse negative seeds)"


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"{_SEED_RULE}, got {value}")
    return value


def _non_negative(seed: int) -> int:
    if seed < 0:
        raise ValueError(f"{_SEED_RULE}, got {seed}")
    return seed


#: A random seed: an integer >= 0 (numpy's ``default_rng`` refuses negative ones; a bool is no seed).
Seed = Annotated[int, BeforeValidator(_not_a_bool), AfterValidator(_non_negative)]


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


def default_cache() -> Path:
    """The response cache of a ``provider: openai`` config without a ``cache`` key (and of an
    embeddings endpoint without one): ``promptevolver/cache.sqlite`` in the user's cache folder,
    ``$XDG_CACHE_HOME`` (when set to an absolute path) else ``~/.cache``, as the XDG Base
    Directory specification says. Read when a config is validated, so the environment of the run
    decides; the run's config.yaml records the resolved path.

    Why there, not in the working directory (a run started from a checkout wrote
    ``.promptevolver/`` into it) nor in the run directory: the cache's worth is reuse across runs
    and commands (a config run again, the seeds of a benchmark, ``evaluate`` and ``suggest``
    after ``optimize``), keyed by what was asked; a run's own answers are already kept in its
    directory by the journal, which a resume replays.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "promptevolver" / "cache.sqlite"


class BudgetConfig(_Strict):
    """Upper bounds on a run's spending; None means unbounded.

    Every LLM call counts — judge and meta calls alike. Reaching a bound ends the search with the
    best candidate so far (``stop_reason: budget``); the calls of the final validation are
    reserved up front, so the bound holds for the whole run.

    Attributes:
        max_calls: LLM calls (answered requests, cache hits excluded).
        max_tokens: prompt + completion tokens.
        max_cost_usd: cost in US dollars from the LLM's price table.
    """

    max_calls: int | None = Field(None, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0, allow_inf_nan=False)


class EmbeddingsConfig(_Strict):
    """An OpenAI-compatible ``/embeddings`` endpoint for retrieval (``optimizer.examples.embeddings``;
    :class:`promptevolver.llm.openai.OpenAIEmbeddings`), configured as ``llm`` is.

    Attributes:
        model: the embedding model (e.g. ``text-embedding-3-small``, ``nomic-embed-text``).
        base_url: API root (``${NAME}`` placeholders expanded from the environment, as in
            ``llm.base_url``); null: ``OPENAI_BASE_URL`` or api.openai.com.
        api_key_env: the environment variable holding the key (never the key itself).
        timeout_s: per-request timeout in seconds; max_attempts: attempts per request (retry
            policy of :mod:`promptevolver.llm._retry`).
        batch_size: texts per request. dimensions: asked of the server (null: the model's own).
        cache: SQLite cache file of vectors by model and text (relative to the working
            directory; null: memory only); default the response cache's file (:func:`default_cache`).
        on_failure: ``stop`` (default): an endpoint that cannot embed the pool stops the run
            with one line before any judge call; ``tfidf``: retrieve by TF-IDF instead, recorded
            in the store's ``similarity.fallback``.
    """

    model: Annotated[str, AfterValidator(_not_blank)]
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(60.0, gt=0, allow_inf_nan=False)
    max_attempts: int = Field(DEFAULT_MAX_ATTEMPTS, ge=1)
    batch_size: int = Field(64, ge=1, le=2048)
    dimensions: int | None = Field(None, ge=1)
    cache: Annotated[Path, AfterValidator(Path.expanduser)] | None = Field(default_factory=default_cache)
    on_failure: Literal["stop", "tfidf"] = "stop"

    @field_serializer("base_url")
    def _no_secret_in_the_url(self, url: str | None) -> str | None:
        # Every dump (result.json's config, the checkpoint, config.yaml) keeps the URL as
        # stored_base_url does: ${NAME} placeholders as written, any other secret masked.
        return None if url is None else stored_base_url(url)

    def record(self) -> dict[str, Any]:
        """The settings as a result's example store records them (no secret; paths as text)."""
        return self.model_dump(mode="json")

    def build(self, *, where: str = "optimizer.examples.embeddings") -> OpenAIEmbeddings:
        """The embeddings client these settings describe: the key from the environment variable
        named by ``api_key_env``, ``${NAME}`` in ``base_url`` expanded (as for ``llm``); ``where``
        names the settings in messages; the client records :meth:`record` (no secret).

        Raises:
            ConfigError: the key's variable is unset or empty, a ``${NAME}`` is unset, or the
                URL's secret was masked when a result stored it.
            CacheError: the cache file cannot be opened.
        """
        from promptevolver.llm.openai import OpenAIEmbeddings  # the SDK, only when used

        missing = (
            f"{where}: retrieval by embeddings needs an API key in the environment variable "
            f"{self.api_key_env}, which is not set (any non-empty value works for local servers)"
        )
        return OpenAIEmbeddings(
            **_endpoint(self, f"{where}.base_url", missing),
            **self.model_dump(include={"batch_size", "dimensions", "cache"}),
            settings=self.record(),
        )


def _endpoint(config: EmbeddingsConfig | LLMConfig, url_key: str, missing: str) -> dict[str, Any]:
    """The connection arguments of an OpenAI-compatible client (:class:`OpenAIClient
    <promptevolver.llm.openai.OpenAIClient>`, :class:`OpenAIEmbeddings
    <promptevolver.llm.openai.OpenAIEmbeddings>`) from ``config``: ``model``, ``base_url`` with
    each ``${NAME}`` expanded (``url_key`` names the setting in messages), the key from the
    environment variable ``api_key_env`` and that variable's name, ``timeout_s``, ``max_attempts``.

    Raises:
        ConfigError: the key's variable is unset or empty (the message is ``missing``), or as
            :func:`expand_base_url`.
    """
    key = os.environ.get(config.api_key_env)
    if not key:
        raise ConfigError(missing)
    return {
        "model": config.model,
        "base_url": None if config.base_url is None else expand_base_url(config.base_url, url_key),
        "api_key": key,
        "api_key_source": config.api_key_env,
        "timeout_s": config.timeout_s,
        "max_attempts": config.max_attempts,
    }


def embedder_from_record(record: Mapping[str, Any]) -> OpenAIEmbeddings:
    """The embeddings client of an example store's ``similarity`` record (result.json's
    ``examples.store.similarity``), to retrieve as the run did.

    Raises:
        ConfigError: the record is not a valid embeddings record, or as :meth:`EmbeddingsConfig.build`.
    """
    settings = {k: v for k, v in record.items() if k != "kind"}
    try:
        config = EmbeddingsConfig.model_validate(settings)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, "examples.store.similarity")) from None
    return config.build(where="the example store's embeddings (examples.store.similarity)")


class ExamplesConfig(_Strict):
    """Teaching examples shown to the judge (``optimizer.examples``; ``docs/examples.md``).

    Attributes:
        policy: ``auto`` (default): the verification stage also judges the verified instruction
            with examples (``static`` and ``retrieval``) on the held-out samples, and keeps
            examples only where the paired choice says they win; ``none``: never; ``static``: one
            fixed set (the medoids of the largest groups of train corrections); ``retrieval``:
            per input the ``k`` most similar annotated train samples (TF-IDF cosine). A policy
            other than ``auto`` is verified against the instruction alone too: it is kept only if
            it wins. Ignored under ``strategy: genetic`` (instructions only, as before).
        k: examples per judged input (≥ 1; judgeworld and Ragas: 3; more than 4 dilute).
        min_similarity: retrieval shows only samples at least this similar (cosine).
        similarity: what retrieval compares: ``tfidf`` (default; scikit-learn, no call) or
            ``embeddings`` (the ``embeddings`` endpoint's vectors, cached).
        embeddings: the endpoint (:class:`EmbeddingsConfig`); required by, and only with,
            ``similarity: embeddings``.
    """

    policy: Literal["none", "static", "retrieval", "auto"] = "auto"
    k: int = Field(3, ge=1, le=16)
    min_similarity: float = Field(0.0, ge=0.0, le=1.0)
    similarity: Literal["tfidf", "embeddings"] = "tfidf"
    embeddings: EmbeddingsConfig | None = None

    @model_validator(mode="after")
    def _embeddings_with_their_similarity(self) -> ExamplesConfig:
        if self.similarity == "embeddings" and self.embeddings is None:
            raise ValueError("similarity 'embeddings' needs 'embeddings: {model: ...}' (the endpoint)")
        if self.similarity != "embeddings" and self.embeddings is not None:
            raise ValueError("'embeddings' is set but similarity is 'tfidf': set similarity: embeddings")
        return self


class GeneticConfig(_Strict):
    """Options of :class:`promptevolver.GeneticOptimizer` (Ragas' keys plus ours).

    Attributes:
        population_size: candidates kept per generation (≥ 1; 1 evaluates and returns the seed).
        generations: generations of offspring after the initial population (≥ 0).
        num_demonstrations: examples per reverse-engineering batch (Ragas' key).
        sample_size: failing train samples a feedback call may draw from (Ragas' key).
        max_feedbacks: feedback items one feedback call may return.
        validation_fraction: share of usable samples held out to choose the final candidate.
        group_key: which samples are one group, never split between train and validation (nor
            between the out-of-bag halves): ``input`` (default) the samples whose judge input is the
            same but for the response(s) (several responses to one question, one row per
            annotator); ``sample`` none; ``metric_input.<field>`` or an extra sample field (e.g.
            ``item_id``) the samples sharing its value (``annotations/_sampling.py``).
        small_data: below this many usable samples no validation part is held out: every
            annotation is used to learn and to choose, each finalist compared with the seed on the
            samples it did not learn from (out-of-bag; ``optimizers/_split.py``). 0: always held out.
        refit_below: the pipeline's small data (``strategy`` ``auto`` or ``distill``): below this
            many usable samples no validation part is held out either; the distillation recipe is
            cross-validated over ``cv_folds`` folds and the final candidate is distilled from every
            correction with it (a refit, as after cross-validated model selection), its figure the
            cross-validated one (``optimizers/_refit.py``). 0: never (below ``small_data`` the
            best fold's rung is returned, each fold having learned from part of the corrections).
        cv_folds: the folds of that cross-validation (≥ 2): one distilled ladder per fold learns
            from the other folds' corrections and is judged on its own fold's samples. See
            docs/pipeline.md.
        seed_judged_share: in that cross-validation, the share of the train samples the seed
            instruction is judged on afresh when the file records a verdict on every one (at
            least 10 samples): the recorded verdicts stand in for the others, corrected by the
            fresh ones (prediction-powered inference, ``evaluation/_prediction_powered.py``: an
            unbiased figure, a little wider). Where the fresh verdicts differ from the recorded
            ones on more than a fifth of them, the seed is judged on every sample. 1: always.
        elite_count: best candidates copied unchanged into the next generation.
        tournament_size: candidates drawn per tournament.
        patience: generations without a better best train score before stopping.
        mutation_weight / crossover_weight: relative odds of each offspring operator
            (0 switches one off; both 0 means no offspring).
        reverse_engineer: seed the population with reverse-engineered instructions.
        meta_temperature: sampling temperature of meta calls.
        max_concurrency: LLM requests (judge and meta) in flight at once, for the whole run.
        minibatch_size: train samples an offspring is first judged on (at most a quarter of train;
            half of them samples its parents get wrong, see ``optimizers/strategies/_screening.py``); it is
            judged on all train samples only if it beats its best parent there. 0: no screening.
        max_train_samples: train samples a candidate is judged on: the train *focus set*, fixed
            for the run — the samples where the annotations correct the recorded verdict first (up
            to two thirds), a stratified draw of the others for the rest, each weighted by what it
            stands for (``optimizers/_focus.py``); None = all. Bounds the judge calls per candidate.
        max_validation_samples: validation samples the finalists are judged on (the validation
            focus set, made the same way; None = all).
        finalists: best train candidates of the last population judged on validation, besides
            the seed; each is compared with the seed, paired (see
            ``optimizers/strategies/_final_choice.py``).
        confidence: probability that a finalist is better than the seed on validation (paired
            bootstrap) needed to return it instead of the seed, in [0.5, 1).
        offspring_per_generation: offspring planned per generation; None = automatic:
            ``population_size`` × (train samples // 100, clamped to 1..3). With many train samples
            a full evaluation costs far more than screening, so breeding more and screening them
            buys more search for the same calls.
        max_failure_rate: share of judge evaluations that may fail (after retries) before the
            run stops with an error naming the cause: of the seed's train evaluations, or of a
            generation's. A candidate whose evaluations failed on more than this share cannot
            be chosen (it ranks after every candidate measured well enough).
        budget: bounds on calls, tokens and cost (see :class:`BudgetConfig`).
        random_seed: the one seed behind every random choice of a run.
        strategy: ``auto`` (default): distill the corrections into a ladder of candidates (meta
            calls only), verify the seed and the ladder on held-out samples, and search
            genetically only when that is warranted and the budget allows; ``distill``: the first
            two stages only; ``genetic``: the genetic search alone (the behaviour before 0.3);
            ``examples``: the instruction kept as it is, teaching examples chosen only (0 meta
            calls: the seed judged with and without examples on the held-out samples).
        distill_rounds: most rounds of the distillation stage (each: feedback calls, then one
            rewrite per prompt; it stops earlier once a round teaches no new general lesson).
        distill_lessons: most new lessons one round applies (the best evidenced first).
        distill_sample_size: most corrections one round shows (more: a stratified subsample by
            kind of correction, rotating through them from round to round).
        distill_max_calls: most feedback calls of one round (the corrections are packed into
            prompts that fit ``llm.context_tokens``).
        cross_fit: after verification, learn from the held-out corrections too: a short ladder
            from the validation corrections the verified candidate still gets wrong, kept only
            when it beats that candidate on the learning samples (which its new lessons never
            saw). Its held-out evidence is that paired comparison; its validation figure is
            ``n/a`` (it learned from the validation samples). See docs/pipeline.md.
        racing: stop judging a verified candidate once it is clearly worse than the best one so
            far (a sequential paired test, ``optimizers/strategies/_racing.py``).
        examples: teaching examples (see :class:`ExamplesConfig`).
    """

    population_size: int = Field(6, ge=1)
    generations: int = Field(4, ge=0)
    num_demonstrations: int = Field(3, ge=1)
    sample_size: int = Field(12, ge=1)
    max_feedbacks: int = Field(3, ge=1)
    validation_fraction: float = Field(0.3, gt=0.0, lt=1.0)
    group_key: Annotated[str, AfterValidator(_not_blank)] = "input"
    small_data: int = Field(40, ge=0)
    refit_below: int = Field(100, ge=0)
    cv_folds: int = Field(2, ge=2, le=10)
    seed_judged_share: float = Field(0.34, gt=0.0, le=1.0)
    elite_count: int = Field(1, ge=0)
    tournament_size: int = Field(2, ge=1)
    patience: int = Field(2, ge=1)
    mutation_weight: float = Field(1.0, ge=0.0)
    crossover_weight: float = Field(1.0, ge=0.0)
    reverse_engineer: bool = True
    meta_temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_concurrency: int = Field(16, ge=1)
    minibatch_size: int = Field(6, ge=0)
    max_train_samples: int | None = Field(48, ge=2)
    max_validation_samples: int | None = Field(64, ge=2)
    finalists: int = Field(2, ge=1)
    confidence: float = Field(0.7, ge=0.5, lt=1.0)
    max_failure_rate: float = Field(0.2, ge=0.0, lt=1.0)
    offspring_per_generation: int | None = Field(None, ge=1)
    budget: BudgetConfig = BudgetConfig()
    random_seed: Seed = 42
    strategy: Literal["auto", "distill", "genetic", "examples"] = "auto"
    distill_rounds: int = Field(6, ge=1)
    distill_lessons: int = Field(5, ge=1)
    distill_sample_size: int = Field(60, ge=2)
    distill_max_calls: int = Field(4, ge=1)
    cross_fit: bool = True
    racing: bool = True
    examples: ExamplesConfig = ExamplesConfig()

    @model_validator(mode="after")
    def _settings_that_work_together(self) -> GeneticConfig:
        if self.elite_count > self.population_size:
            raise ValueError(
                f"elite_count: {self.elite_count} elites cannot be kept in a population of "
                f"{self.population_size} (population_size); use at most {self.population_size}"
            )
        if self.mutation_weight == 0 and self.crossover_weight == 0 and self.generations > 0:
            warnings.warn(
                "optimizer.mutation_weight and optimizer.crossover_weight are both 0: no offspring "
                f"are made, so the {self.generations} generations change nothing",
                stacklevel=2,
            )
        if self.population_size > LARGE_POPULATION:
            warnings.warn(
                f"optimizer.population_size={self.population_size} is large: every candidate is "
                "judged on the train samples (up to max_train_samples judge calls each); run "
                "promptevolver estimate for the calls and cost first",
                stacklevel=2,
            )
        return self


#: Metric types: the judge each builds (see :func:`promptevolver.config._build.build_metric`).
METRIC_TYPES = ("aspect_critic", "rubric", "statement_support", "pairwise", "classification")
_RUBRIC_KEYS = ("score_range", "discrete", "rubrics")
#: Keys of one metric type only: the type that takes them.
_TYPE_KEYS = {"labels": "classification", "ties": "pairwise", "order_swap": "pairwise"}
#: ``statement_support``'s default definition (the same as StatementSupport's own default).
SUPPORT_DEFINITION = "the statement can be directly inferred from the context."


class MetricConfig(_Strict):
    """The judge: its ``type``, ``name`` and ``definition``.

    * ``aspect_critic`` — a binary verdict (:class:`promptevolver.judge._aspect_critic.AspectCritic`);
    * ``rubric`` — a score in ``score_range`` (default ``[1, 5]``), whole numbers unless
      ``discrete: false``, with optional ``rubrics`` (level → description)
      (:class:`promptevolver.judge._rubric.RubricJudge`); needs ``loss: {type: mse}``;
    * ``statement_support`` — two prompts, a statement extractor and a per-statement verifier,
      scored as the supported fraction (:class:`promptevolver.judge._statements.StatementSupport`);
      ``definition`` says when a statement is supported (default: it can be directly inferred
      from the context); needs ``loss: {type: mse}``;
    * ``pairwise`` — which of two responses (``response_a``, ``response_b``) to one input is
      better (:class:`promptevolver.judge._pairwise.PairwiseJudge`): a / b / tie, values 1 / 0 /
      0.5 (``loss: {type: classification}``, the default), or with ``ties: false`` only a / b, a
      binary "is a better" (``loss: {type: binary}``); ``order_swap: true`` judges both orders
      (two calls a sample) and reports position consistency;
    * ``classification`` — one of the named ``labels`` (at least two; class i is the value i in
      the annotations; :class:`promptevolver.judge._classification.ClassificationJudge`);
      ``loss: {type: classification, metric: accuracy | macro_f1}`` (the default: accuracy).

    A judge ensemble (:class:`promptevolver.judge._ensemble.JudgeEnsemble`) is built when ``num_judges``
    > 1 or any of ``aggregation_method``, ``max_concurrent_judges``, ``timeout_s`` is set:
    ``num_judges`` judge calls per sample, aggregated by ``aggregation_method``: ``majority``
    (the default for ``aspect_critic``; a tie gives 0), ``mean`` (the default for the numeric
    types), ``median``, ``min`` or ``max``; at most ``max_concurrent_judges`` of one sample in
    flight (null: all), ``timeout_s`` seconds per sample (judges not done by then count as failed;
    null: no limit). ``temperature``: sampling temperature of judge calls (null:
    ``llm.temperature``); on a real LLM, judges only differ at a temperature > 0.
    """

    type: Literal["aspect_critic", "rubric", "statement_support", "pairwise", "classification"] = (
        "aspect_critic"
    )
    name: Annotated[str, AfterValidator(_not_blank), AfterValidator(_metric_name)]
    definition: Annotated[str, AfterValidator(_not_blank)]
    num_judges: int = Field(1, ge=1)
    aggregation_method: Literal["majority", "mean", "median", "min", "max"] | None = None
    max_concurrent_judges: int | None = Field(None, ge=1)
    timeout_s: float | None = Field(None, gt=0)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    score_range: tuple[float, float] | None = None
    discrete: bool | None = None
    rubrics: dict[float, str] | None = None
    labels: list[Annotated[str, AfterValidator(_not_blank)]] | None = None
    ties: bool | None = None
    order_swap: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_definition(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("type") == "statement_support" and "definition" not in data:
            return {**data, "definition": SUPPORT_DEFINITION}
        return data

    @model_validator(mode="after")
    def _keys_of_the_type(self) -> MetricConfig:
        if self.type != "rubric":
            given = [k for k in _RUBRIC_KEYS if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{', '.join(given)}: for type 'rubric' only (this metric is {self.type!r})")
        for key, owner in _TYPE_KEYS.items():
            if getattr(self, key) is not None and self.type != owner:
                raise ValueError(f"{key}: for type {owner!r} only (this metric is {self.type!r})")
        if self.type == "classification" and (
            self.labels is None or len(self.labels) < 2 or len(set(self.labels)) < len(self.labels)
        ):
            raise ValueError("labels: type 'classification' needs at least two distinct class names")
        if self.is_nominal and self.is_ensemble:
            raise ValueError(
                f"num_judges and aggregation: an ensemble of type {self.type!r} is not supported"
            )
        if not self.is_binary and self.aggregation_method == "majority":
            raise ValueError(
                f"aggregation_method 'majority' needs binary verdicts; type {self.type!r} scores "
                "numbers: use mean, median, min or max"
            )
        low, high = self.score_range or (1.0, 5.0)
        if not low < high:
            raise ValueError(f"score_range must be [low, high] with low < high, got [{low:g}, {high:g}]")
        return self

    @property
    def is_ensemble(self) -> bool:
        """Whether these keys ask for a judge ensemble rather than a single judge."""
        extra = (self.aggregation_method, self.max_concurrent_judges, self.timeout_s)
        return self.num_judges > 1 or any(v is not None for v in extra)

    @property
    def is_binary(self) -> bool:
        """Whether the judge gives 0/1 verdicts (``aspect_critic``; ``pairwise`` without ties)."""
        return self.type == "aspect_critic" or (self.type == "pairwise" and self.ties is False)

    @property
    def is_nominal(self) -> bool:
        """Whether the judge answers one of named classes (``classification``; ``pairwise`` with ties)."""
        return self.type == "classification" or (self.type == "pairwise" and self.ties is not False)

    @property
    def loss_type(self) -> str:
        """The loss type this judge's labels take: ``binary``, ``classification`` or ``mse``."""
        return "binary" if self.is_binary else "classification" if self.is_nominal else "mse"

    def judge_source(self) -> tuple[str, dict[str, Any]]:
        """(class name, constructor keyword arguments) of the single judge this config builds,
        for generated code (see :func:`promptevolver.runs._export.apply_snippet`)."""
        kwargs: dict[str, Any] = {"name": self.name, "definition": self.definition}
        if self.type == "rubric":
            kwargs["score_range"] = tuple(self.score_range or (1.0, 5.0))
            if self.discrete is not None:
                kwargs["discrete"] = self.discrete
            if self.rubrics:
                kwargs["rubrics"] = dict(self.rubrics)
        if self.type == "classification":
            kwargs["labels"] = list(self.labels or ())
        if self.type == "pairwise":
            kwargs.update(
                {k: getattr(self, k) for k in ("ties", "order_swap") if getattr(self, k) is not None}
            )
        names = {
            "aspect_critic": "AspectCritic",
            "rubric": "RubricJudge",
            "statement_support": "StatementSupport",
            "pairwise": "PairwiseJudge",
            "classification": "ClassificationJudge",
        }
        return names[self.type], kwargs

    @property
    def aggregation(self) -> str:
        """The ensemble's aggregation: the one set, else ``majority`` (binary) or ``mean``."""
        return self.aggregation_method or ("majority" if self.is_binary else "mean")


class PriceConfig(_Strict):
    """A model's price in US dollars per 1M tokens: ``prompt`` (input) and ``completion`` (output)."""

    prompt: float = Field(ge=0.0)
    completion: float = Field(ge=0.0)


#: The ``llm`` settings an :class:`~promptevolver.llm.openai.OpenAIClient` takes as they are.
_CLIENT_SETTINGS = (
    "structured_output",
    "judge_max_tokens",
    "meta_max_tokens",
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
)


class LLMConfig(_Strict):
    """An LLM client.

    ``provider: fake`` is the simulated judge built from the run's dataset (``noise``);
    ``provider: openai`` is any OpenAI-compatible server (``model``, ``base_url``; the key comes
    from the environment variable named by ``api_key_env``, never from the file).

    ``cache``: a SQLite response-cache file (relative paths are relative to the working
    directory, not the config file); a re-run answers repeated requests from it. ``null``: no
    cache. Default: :func:`default_cache` (the user's cache folder) for ``provider: openai``
    (re-runs cost nothing), none for ``fake`` (its answers are free).
    ``max_concurrency``: LLM requests in flight at once, for the whole run (judge and meta calls
    together; also the optimizer's ``max_concurrency``).
    ``requests_per_minute`` / ``tokens_per_minute`` (openai only): client-side rate limits.
    ``prices``: model name → price (USD per 1M tokens); when given, it must price this ``model``
    (``fake`` for the simulated provider without a model). Without it, an ``openai`` model listed
    in :data:`promptevolver.llm.pricing.PRICE_TABLE` (common models, dated) is priced from there;
    priced calls add to ``usage.cost_usd`` (see :meth:`price`).
    ``structured_output`` (openai only): ``auto`` negotiates json_schema → json_object → prompt
    with the server; a fixed mode is used as is. ``judge_max_tokens`` / ``meta_max_tokens``
    (openai only): completion-token caps of judge and meta calls (null: the server's default).
    ``context_tokens``: the model's context window in tokens; null: a known model's published
    window (:data:`promptevolver.llm.context.CONTEXT_WINDOWS`), else 32,000 for ``openai`` and no
    limit for the simulated provider. The distillation stage packs its prompts to fit it.
    """

    provider: Literal["fake", "openai"] = "fake"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(60.0, gt=0, allow_inf_nan=False)
    max_attempts: int = Field(DEFAULT_MAX_ATTEMPTS, ge=1)
    max_concurrency: int = Field(16, ge=1)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    noise: float = Field(0.02, ge=0.0, le=0.5)
    cache: Annotated[Path, AfterValidator(Path.expanduser)] | None = None  # ~ is the user's home
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    structured_output: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    judge_max_tokens: int | None = Field(256, ge=1)
    meta_max_tokens: int | None = Field(1024, ge=1)
    context_tokens: int | None = Field(None, ge=1024)

    @model_validator(mode="before")
    @classmethod
    def _cache_on_by_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("provider") == "openai" and "cache" not in data:
            return {**data, "cache": default_cache()}
        return data

    def client_arguments(self) -> dict[str, Any]:
        """The keyword arguments of the :class:`~promptevolver.llm.openai.OpenAIClient` these
        settings describe, ``price`` aside: the endpoint's (``model``, ``base_url`` with
        ``${NAME}`` expanded, the key from ``api_key_env``, ``timeout_s``, ``max_attempts``) and
        the client settings taken as they are (:data:`_CLIENT_SETTINGS`).

        Raises:
            ConfigError: the key's environment variable is unset or empty, or a ``${NAME}`` in
                ``base_url`` is.
        """
        missing = f"llm.provider is 'openai' but the environment variable {self.api_key_env} is not set"
        return {**_endpoint(self, "llm.base_url", missing), **self.model_dump(include=set(_CLIENT_SETTINGS))}

    @property
    def priced_model(self) -> str:
        """The name looked up in ``prices``: ``model``, or the provider name without one."""
        return self.model or self.provider

    def price(self) -> tuple[Price, str] | None:
        """This LLM's price and where it comes from (``config's llm.prices`` or ``price table of
        <date>``); None when neither prices it (its cost is unknown).

        The simulated provider is priced only by ``llm.prices`` (its calls cost nothing otherwise).
        """
        entry = self.prices.get(self.priced_model)
        if entry is not None:
            return Price(prompt=entry.prompt, completion=entry.completion), "config's llm.prices"
        listed = table_price(self.model) if self.provider == "openai" else None
        return None if listed is None else (listed, f"price table of {PRICE_TABLE_DATE}")

    @model_validator(mode="after")
    def _model_for_openai(self) -> LLMConfig:
        if self.provider == "openai" and not self.model:
            raise ValueError("provider 'openai' needs 'model'")
        return self

    @model_validator(mode="after")
    def _limits_and_prices(self) -> LLMConfig:
        if self.provider != "openai" and (self.requests_per_minute or self.tokens_per_minute):
            raise ValueError("requests_per_minute and tokens_per_minute apply to provider 'openai' only")
        if self.prices and self.priced_model not in self.prices:
            raise ValueError(f"prices has no entry for {self.priced_model!r} (priced: {sorted(self.prices)})")
        return self


class LossConfig(_Strict):
    """``binary`` (BinaryMetricLoss with ``metric``: accuracy or f1_score), ``classification``
    (ClassificationLoss with ``metric``: accuracy or macro_f1) or ``mse`` (MSELoss with
    ``reduction``)."""

    type: Literal["binary", "mse", "classification"] = "binary"
    metric: Literal["accuracy", "f1_score", "macro_f1"] = "accuracy"
    reduction: Literal["mean", "sum"] = "mean"

    @model_validator(mode="after")
    def _metric_of_the_type(self) -> LossConfig:
        allowed = {"binary": ("accuracy", "f1_score"), "classification": ("accuracy", "macro_f1")}
        if self.type in allowed and self.metric not in allowed[self.type]:
            raise ValueError(
                f"metric {self.metric!r}: a {self.type} loss takes {' or '.join(allowed[self.type])}"
            )
        return self


#: Keys of a synthetic dataset config by ``kind`` (besides ``kind``, ``n_samples``, ``random_seed``).
SYNTHETIC_KEYS: dict[str, tuple[str, ...]] = {
    "binary": (
        "positive_rate",
        "disagreement_rate",
        "generic_share",
        "n_generic",
        "reject_rate",
        "evidence_rate",
    ),
    "rubric": (
        "disagreement_rate",
        "generic_share",
        "n_generic",
        "reject_rate",
        "target_rate",
        "score_range",
        "level_weights",
    ),
    "statements": (
        "generic_share",
        "reject_rate",
        "target_rate",
        "support_rate",
        "extractor_error_rate",
        "verifier_error_rate",
    ),
}


class SyntheticDatasetConfig(_Strict):
    """Parameters of a generated annotation set, by ``kind``:

    * ``binary`` (default): :class:`promptevolver.simulation.synthetic.SyntheticSpec`;
    * ``rubric``: :class:`promptevolver.simulation._synthetic_rubric.RubricSpec` (a 1–5 score);
    * ``statements``: :class:`promptevolver.simulation._synthetic_statements.StatementsSpec`
      (a statement extractor and a verifier).

    A key the kind does not use is an error (:data:`SYNTHETIC_KEYS`); one not given takes the
    spec's default.
    """

    kind: Literal["binary", "rubric", "statements"] = "binary"
    n_samples: int = Field(ge=10)
    random_seed: Seed = 0
    positive_rate: float = Field(0.7, ge=0.0, le=1.0)
    disagreement_rate: float = Field(0.25, ge=0.0, le=1.0)
    generic_share: float = Field(0.6, ge=0.0, le=1.0)
    n_generic: int = Field(6, ge=2, le=10)
    reject_rate: float = Field(0.3, ge=0.0, le=1.0)
    evidence_rate: float = Field(0.1, ge=0.0, le=1.0)
    target_rate: float | None = Field(None, ge=0.0, le=1.0)
    score_range: tuple[int, int] | None = None
    level_weights: tuple[float, ...] | None = None
    support_rate: float | None = Field(None, ge=0.0, le=1.0)
    extractor_error_rate: float | None = Field(None, ge=0.0, le=1.0)
    verifier_error_rate: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _keys_of_the_kind(self) -> SyntheticDatasetConfig:
        allowed = {"kind", "n_samples", "random_seed", *SYNTHETIC_KEYS[self.kind]}
        extra = sorted(self.model_fields_set - allowed)
        if extra:
            raise ValueError(f"{', '.join(extra)}: not a key of kind {self.kind!r}")
        return self

    @model_serializer(mode="wrap")
    def _only_the_kinds_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Dumped with the keys of its kind only, so a dumped config reads back (config.yaml)."""
        data = handler(self)
        keep = {"n_samples", "random_seed", *self.spec_arguments()}
        if self.kind != "binary":
            keep.add("kind")
        return {k: v for k, v in data.items() if k in keep}

    def spec_arguments(self) -> dict[str, Any]:
        """Keyword arguments of the kind's spec: ``n_samples``, ``random_seed`` and the kind's
        keys (for ``binary`` all of them, for the others those given)."""
        keys = SYNTHETIC_KEYS[self.kind]
        chosen = keys if self.kind == "binary" else [k for k in keys if k in self.model_fields_set]
        return {
            "n_samples": self.n_samples,
            "random_seed": self.random_seed,
            **{k: getattr(self, k) for k in chosen},
        }


class MlflowTrackingConfig(_Strict):
    """``tracking: {mlflow: {...}}`` — log the run to an MLflow tracking server while it runs
    (:class:`promptevolver.integrations.mlflow.MlflowTracker`; ``pip install "promptevolver[mlflow]"``).

    Attributes:
        tracking_uri: the server (``http://host:5000``, ``sqlite:///mlflow.db``, ...; ``${NAME}``
            placeholders expanded from the environment, any other credential masked wherever the
            config is stored); null: MLflow's own default (``MLFLOW_TRACKING_URI``).
        experiment: the experiment's name (created when absent).
        run_name: the MLflow run's name (null: the metric and the run directory's name).
        timeout_s: seconds the end of the run waits for the logging to catch up (a slow or dead
            server gets one warning, never a blocked or failed run).
    """

    tracking_uri: str | None = None
    experiment: Annotated[str, AfterValidator(_not_blank)] = "promptevolver"
    run_name: str | None = None
    timeout_s: float = Field(10.0, gt=0, allow_inf_nan=False)

    @field_serializer("tracking_uri")
    def _no_secret_in_the_uri(self, uri: str | None) -> str | None:
        return None if uri is None else stored_base_url(uri)

    def resolved_uri(self) -> str | None:
        """``tracking_uri`` with its ``${NAME}`` placeholders expanded.

        Raises:
            ConfigError: a named variable is unset, or the URI's secret was masked when stored.
        """
        uri = self.tracking_uri
        return None if uri is None else expand_base_url(uri, "tracking.mlflow.tracking_uri")


class TrackingConfig(_Strict):
    """``tracking:`` — where a run is logged as it goes: ``mlflow`` (:class:`MlflowTrackingConfig`)."""

    mlflow: MlflowTrackingConfig | None = None


class SyntheticSource(_Strict):
    """``dataset: {synthetic: {...}}`` — a generated annotation set instead of a file."""

    synthetic: SyntheticDatasetConfig


#: Optimizer keys that a run config sets in one other place (key → where it is set).
RUN_LEVEL_KEYS = {
    "random_seed": "at the top level (random_seed)",
    "budget": "at the top level (budget)",
    "max_concurrency": "as llm.max_concurrency",
}


class _OnePlacePerSetting(_Strict):
    """A config with an ``optimizer`` block (:class:`RunConfig`, :class:`ManyConfig`): the block
    must not hold a run-level key (:data:`RUN_LEVEL_KEYS`)."""

    @field_validator("optimizer", mode="before", check_fields=False)
    @classmethod
    def _one_place_per_setting(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for key, where in RUN_LEVEL_KEYS.items():
                if key in value:
                    raise ValueError(f"{key}: set it {where}, not under optimizer (one place per setting)")
        return value


class AnnotatorsConfig(_Strict):
    """Samples labelled by several annotators (their ``annotator_labels``).

    Attributes:
        split_items: ``keep`` (default): every sample, labelled by its annotators' majority;
            ``drop``: leave out the samples whose annotators did not all give the same label
            before anything uses the annotations (the split, the search, ``evaluate``,
            ``estimate``), as ``promptevolver agreement --split-items drop`` does.
    """

    split_items: Literal["keep", "drop"] = "keep"


class RunConfig(_OnePlacePerSetting):
    """A config-driven run (``promptevolver optimize CONFIG``) or benchmark (``promptevolver bench``).

    ``dataset`` is a Ragas annotation file (relative paths are relative to the config file) or
    ``{synthetic: {n_samples: ..., ...}}``; ``metric_name`` picks one metric of a multi-metric
    file (default: the metric's ``name``); ``prompt_name`` picks the prompt of the file whose
    instruction the judge is (default: the file's only prompt, see
    :mod:`promptevolver.config._prompt_match`); ``seeds`` are the random seeds a benchmark runs
    (default: ``[random_seed]``); ``tracking`` logs the run to MLflow as it goes
    (:class:`TrackingConfig`).

    Every setting has one place: the run's ``random_seed`` and ``budget`` at the top level, the
    requests in flight as ``llm.max_concurrency`` (:data:`RUN_LEVEL_KEYS`); the same keys under
    ``optimizer`` are an error naming where they belong. :meth:`effective_optimizer` puts them
    into the optimizer's config.
    """

    dataset: Path | SyntheticSource
    metric_name: str | None = None
    prompt_name: str | None = Field(None, min_length=1)
    seeds: list[Seed] | None = Field(None, min_length=1)
    metric: MetricConfig
    llm: LLMConfig = LLMConfig()
    reflection_llm: LLMConfig | None = None
    loss: LossConfig = LossConfig()
    optimizer: GeneticConfig = GeneticConfig()
    budget: BudgetConfig | None = None
    random_seed: Seed | None = None
    tracking: TrackingConfig = TrackingConfig()
    annotators: AnnotatorsConfig = AnnotatorsConfig()

    @field_validator("dataset", mode="wrap")
    @classmethod
    def _file_or_synthetic(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A mapping is a synthetic source, anything else a path: errors of the one meant, not of both."""
        if isinstance(value, dict):
            return SyntheticSource.model_validate(value)
        if isinstance(value, str | os.PathLike | SyntheticSource):
            return handler(value)
        raise ValueError(f"expected a file path or {{synthetic: {{n_samples: ...}}}}, got {repr(value)[:60]}")

    @model_validator(mode="before")
    @classmethod
    def _one_metric(cls, data: Any) -> Any:
        if isinstance(data, dict) and "metrics" in data:
            raise ValueError(
                "metrics: a config of several metrics (a job) is taken by `promptevolver optimize`, "
                "`estimate` and `evaluate` (its run directory by `report` and `suggest`); here give "
                "one metric: (docs/many-metrics.md)"
            )
        return data

    @model_validator(mode="before")
    @classmethod
    def _loss_of_the_metric(cls, data: Any) -> Any:
        """Without ``loss``, a named-class judge (classification, pairwise with ties) takes the
        classification loss (accuracy); the others the binary loss, as before."""
        if isinstance(data, dict) and "loss" not in data and isinstance(data.get("metric"), dict):
            metric = data["metric"]
            if metric.get("type") == "classification" or (
                metric.get("type") == "pairwise" and metric.get("ties") is not False
            ):
                return {**data, "loss": {"type": "classification"}}
        return data

    @model_validator(mode="after")
    def _the_loss_fits_the_labels(self) -> RunConfig:
        wanted = self.metric.loss_type
        if self.loss.type != wanted and not (wanted == "binary" and self.loss.type == "mse"):
            what = {
                "binary": "gives 0/1 verdicts",
                "classification": "answers named classes",
                "mse": "scores numbers",
            }
            raise ValueError(
                f"loss.type: metric type {self.metric.type!r} {what[wanted]}; use loss: {{type: {wanted}}}"
            )
        return self

    def effective_optimizer(self) -> GeneticConfig:
        """The optimizer config with the run-level ``random_seed``, ``budget`` and
        ``llm.max_concurrency`` applied."""
        update: dict[str, Any] = {"max_concurrency": self.llm.max_concurrency}
        if self.random_seed is not None:
            update["random_seed"] = self.random_seed
        if self.budget is not None:
            update["budget"] = self.budget
        return self.optimizer.model_copy(update=update)

    def unpriced_models(self) -> list[str]:
        """The models of the run's LLMs (the judge's, the prompt engineer's) that a real provider
        serves and nothing prices (``llm.prices`` or the price table): their cost is unknown, not
        zero. The simulated LLM costs nothing unless ``llm.prices`` says otherwise."""
        llms = [self.llm] + ([self.reflection_llm] if self.reflection_llm is not None else [])
        return list(
            dict.fromkeys(llm.priced_model for llm in llms if llm.provider != "fake" and llm.price() is None)
        )

    def dump(self, *, relative_to: Path | None = None) -> dict[str, Any]:
        """The config as a YAML-ready dict, each setting once: the effective ``random_seed`` and
        ``budget`` at the top level, none of :data:`RUN_LEVEL_KEYS` under ``optimizer``; a dataset
        file path relative to ``relative_to`` (the folder the dict will be written to) if given
        and both are in one tree below the root (else absolute)."""
        return _dump(self, relative_to)


def _dump(config: RunConfig | ManyConfig, relative_to: Path | None) -> dict[str, Any]:
    """:meth:`RunConfig.dump` of a run's or a job's ``config``."""
    effective = config.effective_optimizer()
    data = config.model_dump(mode="json", exclude={"optimizer": set(RUN_LEVEL_KEYS)})
    data["random_seed"] = effective.random_seed
    data["budget"] = effective.budget.model_dump(mode="json")
    if isinstance(config.dataset, Path) and relative_to is not None:
        data["dataset"] = _portable(config.dataset, Path(relative_to))
    if config.llm.base_url is not None:
        data["llm"]["base_url"] = stored_base_url(config.llm.base_url)
    return data


#: An environment variable named in ``llm.base_url`` (``${NAME}``), expanded when the client is built.
ENV_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def stored_base_url(url: str) -> str:
    """``url`` as a run directory may keep it: a URL whose secrets come from ``${NAME}``
    placeholders as written; any other userinfo or query value masked (``***``), so a key in
    the URL never reaches ``config.yaml`` (a resume then needs the original config, or the key
    moved into an environment variable)."""
    return url if ENV_PLACEHOLDER.search(url) else redact_url(url)


def expand_base_url(url: str, key: str = "llm.base_url") -> str:
    """``url`` (the setting ``key``) with each ``${NAME}`` replaced by that environment variable.

    Raises:
        ConfigError: a named variable is unset, or the URL holds a secret masked when a run
            directory stored it (``***``: resume with the original config).
    """
    if MASK in url and not ENV_PLACEHOLDER.search(url):
        raise ConfigError(
            f"{key} {url} had its secret removed when the run directory stored it: resume "
            "with your own config (promptevolver optimize CONFIG --resume DIR), or name the secret "
            "as an environment variable in the URL, e.g. ?api-key=${PROXY_KEY}"
        )

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ConfigError(f"{key} names the environment variable {name}, which is not set")
        return os.environ[name]

    return ENV_PLACEHOLDER.sub(value, url)


def _portable(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder`` when both sit in one tree below the filesystem root (a
    repository and its ``runs/``: they move together), else absolute (a run folder and a data
    file under two different top-level folders: a relative path would climb to the root and
    break when either moves)."""
    target, base = path.resolve(), folder.resolve()
    common = Path(os.path.commonpath([target, base]))
    return str(target) if common == Path(common.anchor) else os.path.relpath(target, base)


def format_validation_error(
    exc: ValidationError, source: str, *, model: type[BaseModel] | None = None
) -> str:
    """One line per problem: ``source: key.path: message``; an unknown key of ``model`` (the
    validated model) names the closest known key (``did you mean 'optimizer'?``), as ``--set``
    does."""
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "<root>"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key" + (_key_hint(model, err["loc"]) if model is not None else "")
        elif err["type"] in ("literal_error", "enum") and isinstance(err.get("input"), str):
            allowed = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
            close = close_key(err["input"], allowed) if allowed else None
            msg += f"; did you mean {close!r}?" if close else ""
        lines.append(f"{source}: {where}: {msg}")
    return "\n".join(lines)


def close_key(key: str, known: Collection[str]) -> str | None:
    """The known key ``key`` is most likely a typo of (difflib), or None."""
    found = difflib.get_close_matches(key, list(known), n=1)
    return found[0] if found else None


def _key_hint(model: type[BaseModel], loc: Sequence[str | int]) -> str:
    """``; did you mean 'X'?`` for the unknown key at ``loc`` in ``model``, or ""."""
    known = _keys_at(model, loc[:-1])
    key = loc[-1] if loc else None
    close = close_key(key, known) if isinstance(key, str) and known else None
    return f"; did you mean {close!r}?" if close else ""


def _keys_at(model: type[BaseModel], path: Sequence[str | int]) -> list[str]:
    """The keys the config models allow under ``path`` (a pydantic error location: field names,
    list indexes, mapping keys, union members' names); empty when it cannot tell."""
    models: list[type[BaseModel]] = [model]
    skip = False
    for part in path:
        if skip:  # a list index or a mapping key
            skip = False
            continue
        fields = {name: f for m in models for name, f in m.model_fields.items()}
        if isinstance(part, str) and part in fields:
            models, skip = _inner_models(fields[part].annotation)
        elif not any(m.__name__ == part for m in models):  # a union member's tag: stay
            return []
    return sorted({name for m in models for name in m.model_fields})


def _inner_models(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The config models a field holds, and whether they sit in a list or mapping (whose index
    or key comes next in an error location)."""
    found: list[type[BaseModel]] = []
    contained = False
    members = (annotation,) if get_origin(annotation) in (list, dict, tuple) else get_args(annotation)
    for arg in members or (annotation,):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            found.append(arg)
        elif get_origin(arg) in (list, dict, tuple):
            inner = [a for a in get_args(arg) if isinstance(a, type) and issubclass(a, BaseModel)]
            found += inner
            contained = contained or bool(inner)
        elif get_args(arg):
            more, deeper = _inner_models(arg)
            found += more
            contained = contained or deeper
    return found, contained


def load_run_config(
    path: str | Path, *, edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> RunConfig:
    """Read and validate a YAML run config.

    ``edit``, if given, receives the parsed YAML mapping and returns the mapping to validate
    (command-line overrides such as ``--set optimizer.generations=5``).

    Raises:
        ConfigError: missing file or a directory, invalid YAML, a key given twice (key path and
            lines), or invalid keys/values (naming file and key path).
    """
    p = Path(path)
    raw = read_yaml_mapping(p)
    if edit is not None:
        raw = edit(raw)
    try:
        config = RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, str(p), model=RunConfig)) from exc
    if isinstance(config.dataset, Path) and not config.dataset.is_absolute():
        config = config.model_copy(update={"dataset": (p.parent / config.dataset).resolve()})
    return config


class ManyConfig(_OnePlacePerSetting):
    """A job of several metrics (``metrics:``, :mod:`promptevolver.runs.many`; docs/many-metrics.md).

    The keys of :class:`RunConfig` with ``metrics`` (name in the annotation file → metric spec,
    the shape of ``metric:``; a spec without ``name`` takes the key) instead of ``metric`` and
    ``metric_name``; ``dataset`` is one annotation file holding every metric. ``loss`` applies to
    every metric (default: ``binary`` accuracy for a binary metric, ``mse`` for a numeric one);
    ``losses`` (name → loss) overrides it per metric. ``llm``, ``reflection_llm``, ``optimizer``,
    ``budget`` and ``random_seed`` are the job's: one client setting, one ``max_concurrency``
    shared by every metric, one budget split across them
    (:func:`promptevolver.runs.many.split_budget`).
    """

    dataset: Path
    metrics: dict[str, MetricConfig] = Field(min_length=1)
    llm: LLMConfig = LLMConfig()
    reflection_llm: LLMConfig | None = None
    loss: LossConfig | None = None
    losses: dict[str, LossConfig] = Field(default_factory=dict)
    optimizer: GeneticConfig = GeneticConfig()
    budget: BudgetConfig | None = None
    random_seed: Seed | None = None

    @model_validator(mode="before")
    @classmethod
    def _named_specs(cls, data: Any) -> Any:
        if isinstance(data, dict) and "metric" in data:
            raise ValueError("metric, metrics: give one of the two (metric: one judge; metrics: several)")
        if isinstance(data, dict) and isinstance(data.get("dataset"), dict):
            raise ValueError("dataset: a job of several metrics reads one annotation file, not synthetic")
        if isinstance(data, dict) and "tracking" in data:
            raise ValueError(
                "tracking: a job of several metrics is not tracked as it goes yet; run each metric with "
                "its own metric: config, or log each metric's run after the job with "
                "promptevolver export DIR/<metric> --to mlflow"
            )
        if isinstance(data, dict) and isinstance(data.get("metrics"), dict):
            specs = {
                key: {"name": key, **spec} if isinstance(spec, dict) and "name" not in spec else spec
                for key, spec in data["metrics"].items()
            }
            return {**data, "metrics": specs}
        return data

    @field_validator("metrics")
    @classmethod
    def _folder_names(cls, value: dict[str, MetricConfig]) -> dict[str, MetricConfig]:
        for key in value:
            _metric_name(key)
        return value

    @model_validator(mode="after")
    def _losses_of_metrics(self) -> ManyConfig:
        unknown = sorted(self.losses.keys() - self.metrics.keys())
        if unknown:
            raise ValueError(f"losses: {unknown} are not among the metrics {sorted(self.metrics)}")
        for key in self.metrics:
            self.loss_of(key)
        return self

    def loss_of(self, key: str) -> LossConfig:
        """Metric ``key``'s loss: ``losses[key]``, else ``loss``, else by the metric's kind.

        Raises:
            ValueError: a binary loss for a metric that scores numbers.
        """
        spec = self.metrics[key]
        loss = self.losses.get(key) or self.loss or LossConfig(type=spec.loss_type)
        if loss.type != spec.loss_type and not (spec.loss_type == "binary" and loss.type == "mse"):
            raise ValueError(f"loss of {key!r}: metric type {spec.type!r} takes {{type: {spec.loss_type}}}")
        return loss

    def for_metric(self, key: str, budget: BudgetConfig | None) -> RunConfig:
        """Metric ``key``'s own run config: what a separate run of it would read, with ``budget``
        (its share) as the budget."""
        return RunConfig(
            dataset=self.dataset,
            metric_name=key,
            metric=self.metrics[key],
            llm=self.llm,
            reflection_llm=self.reflection_llm,
            loss=self.loss_of(key),
            optimizer=self.optimizer,
            budget=budget,
            random_seed=self.random_seed,
        )

    def effective_optimizer(self) -> GeneticConfig:
        """The job's optimizer config (the whole budget; see :meth:`RunConfig.effective_optimizer`)."""
        return self.for_metric(next(iter(self.metrics)), self.budget).effective_optimizer()

    def dump(self, *, relative_to: Path | None = None) -> dict[str, Any]:
        """The config as a YAML-ready dict (as :meth:`RunConfig.dump`)."""
        return _dump(self, relative_to)


#: What a metric's name may be: it names the metric's folder in a job's run directory, and it is
#: written into the run's files (report.md, report.html, apply_best.py): letters, digits, ``_``,
#: ``-`` and ``.``, not first, and none of the names a run directory's own files have.
METRIC_FOLDER = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")


def _metric_name(name: str) -> str:
    """``name`` if it can name a metric (:data:`METRIC_FOLDER`); raises ValueError otherwise."""
    from promptevolver import rundir

    if not METRIC_FOLDER.fullmatch(name):
        raise ValueError(
            f"{name!r}: a metric's name is also a folder's name and is written into the run's files: "
            "letters, digits, '_', '-', '.', not starting with '.'"
        )
    if name.lower() in {n.lower() for n in (*rundir.RUN_FILES, rundir.LOCK_FILE, rundir.OWNER_FILE)}:
        raise ValueError(
            f"{name!r}: a metric's name is its folder's name in a job's run directory, and {name} is "
            "one of the run directory's own files; rename the metric"
        )
    return name


def load_config(
    path: str | Path, *, edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> RunConfig | ManyConfig:
    """A run config (``metric:``) or a job of several metrics (``metrics:``), read and validated
    as :func:`load_run_config`.

    Raises:
        ConfigError: as :func:`load_run_config`; both ``metric`` and ``metrics`` given, or neither
            (one line naming the file and the keys).
    """
    p = Path(path)
    raw = read_yaml_mapping(p)
    if edit is not None:
        raw = edit(raw)
    if "metric" in raw and "metrics" in raw:
        raise ConfigError(f"{p}: metric, metrics: give one of the two (metric: one judge; metrics: several)")
    if "metric" not in raw and "metrics" not in raw:
        raise ConfigError(f"{p}: metric: missing (or metrics: name -> metric, for several in one job)")
    if "metric" in raw:
        return load_run_config(p, edit=edit)
    try:
        config = ManyConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, str(p), model=ManyConfig)) from exc
    if not config.dataset.is_absolute():
        config = config.model_copy(update={"dataset": (p.parent / config.dataset).resolve()})
    return config
