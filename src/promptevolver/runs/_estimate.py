"""What a run will cost, before spending anything: ``promptevolver estimate CONFIG``.

:func:`estimate` reads the config and its annotations and returns the expected judge and meta
calls, tokens and cost of ``promptevolver optimize CONFIG``. It never calls an LLM: meta-prompts
are rendered by the real operators against a recorder that answers locally.

**The model** (constants in :class:`CostModel`, calibrated on runs of the simulated judge):

* *Split*: as the optimizer makes it (``optimizers/_split.py``) — ``n_val = min(max(2,
  round(fraction·N)), N-2)`` of the N usable samples, the rest train, each judged on a focus set of
  at most ``max_train_samples`` / ``max_validation_samples`` (disagreements first); below
  ``small_data`` usable samples, all train and no validation calls (out-of-bag).
* *The metric*: built from the config: J = its ``calls_per_evaluation`` (judges of an ensemble ×
  calls per judge: 2 for a statement extractor and its verifier), K = its prompts (a mutation
  rewrites one prompt; crossover and reverse engineering run once per prompt).
* *One offspring's evaluation*: ``J·n_train`` judge calls; with
  minibatch screening (``m = config.minibatch_size(cfg, n_train)``, as the optimizer sizes it)
  ``J·(m + pass_rate·(n_train - m))``: it is judged on the m minibatch samples, and on the rest
  only if it passes.
* *Initial population*: the seed on train, plus ``R = P-1`` offspring (none without
  ``reverse_engineer``): feedback mutations of the seed on the corrections (2 meta calls each),
  or reverse engineering (K) when the data has no correction; each offspring is kept (not a
  duplicate, not a rejected answer) with probability ``keep_rate``, then evaluated.
* *Generation g*: ``offspring_per_generation`` plans while anything is left to learn (mutations
  learn from failures and from corrections not yet shown; for a numeric metric every sample off
  its label by any amount is a failure, so the plans do not thin out). A mutation costs 2 meta
  calls (feedback + rewrite), a crossover K, mixed by the operator weights (each operator's cost
  read from the operator itself, :meth:`Operator.meta_calls`, through the breeder). Kept offspring:
  ``plans · keep_rate · novelty^(g-1)`` — as the population converges, more answers repeat an
  instruction already seen.
* *Final choice*: the seed and ``min(finalists, P)`` finalists judged on validation.
* *Expected length* (early stopping): the seed is expected to be wrong on ``wrong₀ = e·n_train``
  train samples, where e is the share of usable annotations whose recorded judge output (the
  prompt's ``verdict`` or ``score``, else ``metric_output``) differs from the human label (by
  half a point for a binary metric, at all for a numeric one: the data says how much there is
  to learn). A share ``unlearnable`` of
  them is never fixed (one-off corrections), and judge noise adds ``noise·n_train`` wrong ones
  (``llm.noise`` for the simulated judge, ``judge_noise`` otherwise; for an ensemble, the chance
  that most of its judges err); each round (the initial
  population is round 0) fixes a share ``learn_rate`` of the rest, for a binary metric at most
  ``fixes_per_round`` samples (a round's offspring name a few criteria: many disagreements take
  several rounds). The run stops at the first of: all
  ``generations``; a perfect train score (under 0.5 samples expected wrong; binary losses
  only); ``patience`` rounds in a row that fix under 0.5 samples; the budget (checked as the
  optimizer does, with the final validation reserved).
* *Tokens*: judge prompts are the seed's prompts rendered over the usable samples (with each
  prompt's recorded ``prompt_input`` when the annotation has one: a verifier's statements);
  completions the annotated prompt outputs; meta-prompts are rendered by the operators with
  annotated examples, averaged over the metric's prompts. Counted as the client counts them:
  whitespace words for the simulated LLM, characters / 4 for real providers.
* *Cost*: tokens × the LLM's price, from ``llm.prices`` or else the dated price table of common
  models (:mod:`promptevolver.llm.pricing`; meta calls at the reflection LLM's when set); 0 for
  the simulated LLM; None (unknown) for a real model priced by neither.

**The distill-first pipeline** (``strategy: auto``, the default, and ``distill``), with L ladders (2
out of bag, else 1), c the corrections each ladder learns from (verdict and reason corrections of
its learning part), s = min(c, ``distill_sample_size``) shown a round:

* *Distillation*: ``R_p = min(D − 2, 1 + ⌊log₂(1 + s/8)⌋)`` rounds that teach (more corrections,
  more criteria; D = ``distill_rounds``), then two barren rounds; each round ``b`` lessons calls
  (the shown corrections packed into ``llm.context_tokens``, at most ``distill_max_calls``) and,
  when it teaches, one rewrite per prompt: ``L · K · ((R_p + 2) · b + R_p)`` meta calls, 0 judge calls.
* *Examples*: each example policy tried (``examples.policy: auto``: static and retrieval) is
  raced against the verified rung on held-out samples and expected to stop after the first of its
  4 looks (it rarely beats a distilled rung): ``policies · n_eval · J / 4``; out of bag (small
  data) there is no race: each is judged on every train sample, ``policies · n_train · J``; 0 on
  small data with a refit (tried only when a policy is asked for, and then only when an error
  resembles a correction).
* *Small data with a refit* (below ``refit_below``, ``optimizers/_refit.py``; n_train is the train
  focus set there too: at most ``max_train_samples`` of the usable samples are judged, though the
  ladders learn from every correction): ``cv_folds`` = K fold ladders, each showing s = (K − 1)/K
  of the corrections a round, a share r = 1 − exp(−s / ``fold_corrections``) of them learning a
  rung (a lesson needs a few corrections). A ladder that learns teaches T = 1 + log₂(1 +
  s / ``fold_round_corrections``) rounds (an expectation) and asks ``(T + 1)·b`` lessons calls
  (its one barren round ends it) and T rewrites, plus one rejected rewrite with chance
  ``rejected_rewrites`` (a fold's ladder ends at its first once it has a rung); a fold that
  learns nothing asks ``b`` (its barren round). The refit's ladder, when a fold learned
  (1 − (1 − r)^K), takes the folds' first lessons in its first round with no lessons call, then
  teaches as a fold's ladder does and ends after two barren rounds: ``(T + 1)·b`` lessons calls,
  T rewrites, two rejected ones with chance ``rejected_rewrites``; else its two barren looks.
  Verification: the seed on ``seed_judged_share`` of train (at least 10 samples, when the file
  records a verdict on every sample and the loss is a mean of per-sample quality: its figure is
  then prediction-powered; else on all of it), and on the samples of a fold that learned nothing
  beyond that draw when another fold learned (``seed_figure.also_judged``: ``(1 − f)·((1 − r) −
  (1 − r)^K)·n_train``, f the drawn share); each fold's top rung on its own fold's samples
  (``r · n_train`` together). When no fold's ladder learns ((1 − r)^K) the seed is kept and,
  under ``strategy: auto``, the search runs from it: the seed judged on the rest of train, about
  one generation of offspring screened on a minibatch. Not modelled (measured on 22 small sets,
  66 runs): the seed judged on all of train when its fresh verdicts disagree with the recorded
  ones or the prediction-powered figure says the recipe hurts (1 run in 66), the shallower
  recipes judged when the top one hurts, and ladders whose every rewrite is rejected before a
  rung (the bundled helpfulness file: the seed kept, the search run).
* *Verification*, top first: the seed and each ladder's top rung on the held-out samples
  (``(1 + T) · n_eval · J``, T = 1 top rung held out, ``out_of_bag_rungs`` = 1.2 distinct ones
  out of bag: a fold may write nothing general, or the other fold's rung; times ``ρ + u·(1 − ρ)``,
  ρ the share of corrections with a human reason, u = ``unreasoned_rungs``: a rejection without
  an edit rarely shows a general rule); the lower rungs are raced only when no top rung beats
  the seed (not in the expectation; in ``max_calls``).
* *Cross-fit* (held out only, ``cross_fit`` on, when the search does not run): the verified and
  the cross-fit rung judged on at most 32 train samples, ``2 · min(n_train, 32) · J`` judge
  calls (racing rarely stops a rung whose lessons come from corrections), and ``K · 4`` meta
  calls (three lessons rounds, one rewrite).
* *Search*: expected to run only when a ladder has more corrections than its rounds can show
  (``c > D · distill_sample_size``): then the seed and the verified rung on train and about one
  generation whose offspring are screened on a minibatch (``O · m · J`` judge calls). It also runs
  when no rung beats the seed, which the model cannot foresee (measured on the bundled configs:
  2 of 23 pinned runs, both of the two-prompt faithfulness config, whose runs then cost 3×).
  ``max_calls`` counts it as if it ran.

Limits: the model knows how much there is to learn, not how hard it is, so a run can stop
earlier or later than expected; :attr:`Estimate.max_calls` bounds a run that never stops early.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from promptevolver.annotations import LabelScale, SingleMetricAnnotation
from promptevolver.config import (
    GeneticConfig,
    LLMConfig,
    RunConfig,
    build_judge,
    build_loss,
    build_metric,
    load_dataset,
    resolve_prompt,
)
from promptevolver.errors import AnnotationError, ConfigError, InsufficientDataError
from promptevolver.evaluation import RecordedAgreement, recorded_agreement
from promptevolver.judge import Metric, label_scale_of, sample_text
from promptevolver.llm import Completion, LLMRequest, Usage, count_tokens, estimate_tokens
from promptevolver.llm.context import DEFAULT_CONTEXT_TOKENS, context_tokens_for
from promptevolver.optimizers import (
    ANSWER_TOKENS,
    BARREN_ROUNDS,
    CONTEXT_SHARE,
    CONTRAST,
    MIN_USABLE_SAMPLES,
    SEED_FRESH_MIN,
    SMALL_BARREN_ROUNDS,
    SMALL_CONTRAST,
    TEMPLATE_TOKENS,
    VERDICT_SHARE,
    PhaseCalls,
    Regime,
    classify,
    evidence_prompt,
    example_candidates,
    is_out_of_bag,
    minibatch_size,
    offspring_count,
    phase_calls,
    refits,
    split_sizes,
    validation_count,
)
from promptevolver.optimizers import operators as ops
from promptevolver.optimizers.operators import Breeder, ReverseEngineering, default_operators
from promptevolver.optimizers.strategies import check_upfront

__all__ = ["CostModel", "Estimate", "estimate", "estimate_dataset"]

#: The looks of a race (optimizers/strategies/_racing.py's default): an example candidate that shows
#: no gain over the verified rung at the first look stops there.
RACE_LOOKS = 4

T = TypeVar("T")


@dataclass(frozen=True)
class CostModel:
    """The constants of the estimate (see the module docstring); shares in [0, 1] unless said.

    Refitted after the simulated engineer became careful (it writes general rules only, so a
    search keeps fewer offspring): over the bundled configs (answer_correctness, synthetic_200,
    synthetic_2000, each under ``genetic`` and ``auto``, every seed) and synthetic sets of 24 and
    36 annotations (5 seeds), the expected calls err by 8 % on average, at most +18 %
    (synthetic_200, auto); files of a newcomer's shape (24 annotations, ``auto`` and ``examples``,
    13 runs) by 17 % on average and 1 % on their sum, at most +83 % on a file where no fold
    learns a general rule (the run judges the seed alone). Known over-count: a set whose
    corrections hold nothing a careful writer can turn into a rule (helpfulness: rejections
    without a reason, no shared wording) stops at once and costs a third (``genetic``) to a half
    (``auto``) of the estimate. Earlier fits: 6.3 % on average before the careful writer; the
    two-prompt faithfulness_statements config over-counted by 65 %. Refit when the search or
    the simulated judge changes (``python -m benchmarks.perf.estimate_accuracy --fit``).

    Small data with a refit (``fold_corrections``, ``rejected_rewrites``,
    ``fold_round_corrections``, fitted on those configs alone): over the four bundled files below
    ``refit_below`` and 18 synthetic sets of 20-90 annotations (6 sizes, 3 generator seeds; 3
    seeds each) the expected calls err by 5.0 % on average (sd 6.3 %; 25.4 % before the refit's
    structure was modelled), judge calls 4.0 %, meta calls 13.7 %, tokens 12.8 %; at most +29 %
    (helpfulness: every rewrite rejected before a rung, the seed kept and searched from). The
    grid's best ``fold_round_corrections`` was unbounded (ladders that never teach a second
    round), 8.6 % against 8.8 % at 64: 64 is kept, as the rubric file's ladders do grow (2-5
    rungs).
    """

    pass_rate: float = 0.7
    keep_rate: float = 0.35
    novelty: float = 1.0
    learn_rate: float = 0.7
    unlearnable: float = 0.0
    #: Train samples one round can fix at most (a round's offspring name a few criteria each:
    #: many disagreements take several rounds, however learnable).
    fixes_per_round: float = 8.0
    #: Share of verdicts a real judge gets wrong at random (the simulated one uses ``llm.noise``).
    judge_noise: float = 0.02
    #: Completion tokens of one feedback item (a meta call's answer).
    feedback_item_words: int = 15
    #: Words an offspring's instruction has beyond the seed's (the criteria it learned), in every
    #: judge call made with it (bundled runs: best instructions 26-91 words longer than the seed).
    instruction_growth_words: int = 50
    #: Distinct top rungs the two ladders of small data (out of bag) bring to verification: a
    #: fold may write nothing general, or the same rung as the other (measured on synthetic sets
    #: of 18-36 annotations, 5 seeds each: 1.15 on average). Not a share.
    out_of_bag_rungs: float = 1.2
    #: A top rung's chance when its corrections carry no human reason (rejected without an
    #: edit: only a response's words show what was wrong, and a careful writer rarely finds a
    #: general rule in them); 1 when every correction has a reason.
    unreasoned_rungs: float = 0.5
    #: Small data with a refit: the corrections a fold's ladder shows a round at which 1 − 1/e of
    #: the folds learn a rung (:meth:`_Plan.fold_learns`; 22 small sets, 3 seeds each).
    fold_corrections: float = 2.0
    #: Small data with a refit: the share of ladders that end at a rejected rewrite (the rewrite
    #: returned the instruction unchanged, unparseable or failed), each costing a rewrite call
    #: that makes no rung: one for a fold's ladder, two in a row for the refit's.
    rejected_rewrites: float = 0.5
    #: Small data with a refit: the corrections a fold shows a round from which its ladder
    #: expects a second round that teaches (:meth:`_Plan.fold_rounds`).
    fold_round_corrections: float = 64.0


@dataclass(frozen=True)
class Estimate:
    """Expected LLM usage of one run (expected values, except the bound ``max_calls``).

    Attributes:
        judge_calls, meta_calls, total_calls: expected LLM calls.
        prompt_tokens, completion_tokens: expected tokens.
        cost_usd: expected cost in US dollars; None when a real model has no price in the config.
        max_calls: calls of a run that uses every generation and judges every offspring fully.
        generations: expected generations after the initial population (0 to ``generations``).
        train, validation: samples each candidate is judged on (the focus sets; validation 0
            out of bag).
        usable, train_part, validation_part: usable annotations and the split of them.
        regime: ``held-out``, or ``out-of-bag`` below ``small_data`` usable annotations (all
            used to learn and to choose).
        seed_error_rate: share of the judged train samples (the train focus set, which takes the
            disagreements first) whose recorded judge verdict differs from the human label, in [0, 1].
        recorded_disagreement: share of the usable samples with a recorded verdict
            (``metric_output``) that differs from the human label, in [0, 1] — the figure of
            ``promptevolver agreement`` (:mod:`promptevolver.runs._agreement`); None when none
            has a recorded verdict. recorded_scored: those samples.
        phases: expected judge and meta calls of ``initial``, each ``generation N``, ``final``.
        embedding_calls: requests to the embeddings endpoint when retrieval compares embeddings
            (``examples.similarity: embeddings``): at most ⌈distinct sample texts /
            ``batch_size``⌉, made once before the first judge call (0 when the cache file holds
            them); not LLM calls: outside ``total_calls``, the cost and ``budget``.
        corrections: expected verdict and reason corrections in the learning part (what the
            distillation learns from; a run records its own as ``stages.distill.corrections``),
            counted by the run's classification (:func:`promptevolver.optimizers.classify`): a
            verdict correction that also edits the reason is one correction.
        simulated_llm: the run would call the simulated LLM (``llm.provider: fake``, for judge or
            meta calls): its cost is 0 and its calls a dry run's.
    """

    judge_calls: int
    meta_calls: int
    total_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    max_calls: int
    generations: int
    train: int
    validation: int
    seed_error_rate: float
    phases: list[dict[str, Any]] = field(default_factory=list)
    usable: int = 0
    train_part: int = 0
    validation_part: int = 0
    regime: Regime = Regime.HELD_OUT
    embedding_calls: int = 0
    recorded_disagreement: float | None = None
    recorded_scored: int = 0
    corrections: float = 0.0
    simulated_llm: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every attribute (the object ``estimate --json`` prints)."""
        return asdict(self)


def estimate(config: RunConfig, *, model: CostModel | None = None) -> Estimate:
    """The expected usage of ``promptevolver optimize`` with ``config``; no LLM is called.

    Raises:
        AnnotationError: the dataset cannot be loaded.
        InsufficientDataError: fewer usable annotations than a run needs.
        BudgetExceededError: ``budget.max_calls`` is too small for a run to start (as in a run).
        ConfigError: a cost budget for a model with no price (the run refuses it too).
    """
    return estimate_dataset(config, load_dataset(config), model=model)


def estimate_dataset(
    config: RunConfig, dataset: SingleMetricAnnotation, *, model: CostModel | None = None
) -> Estimate:
    """:func:`estimate` for the config's ``dataset``, already loaded. Raises as :func:`estimate`."""
    prompt_name = resolve_prompt(config, dataset).rename  # the file's name of an aspect critic's prompt
    recorded = _recorded(config, dataset)  # one record: the disagreement line and the plan read it
    plan = _Plan.of(config, dataset, model or CostModel(), prompt_name, recorded)
    tokens = _Tokens.of(config, dataset, plan, prompt_name)
    if plan.cfg.strategy == "genetic":
        phases = plan.phases()
    else:
        plan._check_budget_upfront()
        phases = plan.pipeline_phases(tokens.batches)
    judge = sum(p["judge_calls"] for p in phases)
    meta = sum(p["meta_calls"] for p in phases)
    prompt, completion, cost = tokens.totals(phases)
    bound = config.effective_optimizer().budget.max_cost_usd
    if bound is not None and cost is None:  # as the run refuses it (strategies/_budget.check_prices)
        models = [config.llm.model] + ([config.reflection_llm.model] if config.reflection_llm else [])
        named = " or ".join(map(repr, models))
        raise ConfigError(
            f"budget.max_cost_usd={bound:g} needs a price for every LLM, but {named} "
            "has none in llm.prices or the price table: set llm.prices (USD per 1M tokens) for its model"
        )
    return Estimate(
        judge_calls=round(judge),
        meta_calls=round(meta),
        total_calls=round(judge) + round(meta),
        prompt_tokens=round(prompt),
        completion_tokens=round(completion),
        cost_usd=cost,
        max_calls=plan.max_calls(),
        generations=len(phases) - 2 if plan.cfg.strategy == "genetic" else 0,
        train=plan.n_train,
        validation=plan.n_val,
        seed_error_rate=round(plan.error_rate, 4),
        phases=[{k: round(v, 1) if isinstance(v, float) else v for k, v in p.items()} for p in phases],
        usable=plan.usable,
        train_part=plan.train_part,
        validation_part=plan.usable - plan.train_part,
        regime=Regime.OUT_OF_BAG if is_out_of_bag(plan.usable, plan.cfg) else Regime.HELD_OUT,
        embedding_calls=_embedding_calls(plan.cfg, dataset, plan.prompts),
        recorded_disagreement=None
        if recorded.disagreement_rate is None
        else round(recorded.disagreement_rate, 4),
        recorded_scored=recorded.figures.n,
        corrections=round(plan.corrections, 1),
        simulated_llm=config.llm.provider == "fake"
        or (config.reflection_llm is not None and config.reflection_llm.provider == "fake"),
    )


def _recorded(config: RunConfig, dataset: SingleMetricAnnotation) -> RecordedAgreement:
    """The recorded judge's agreement (no interval: estimate prints the disagreement share only)."""
    scale = label_scale_of(build_judge(config.metric)) or LabelScale(dataset.kind or "numeric")
    return recorded_agreement(dataset, scale, resamples=0)


def _embedding_calls(cfg: GeneticConfig, dataset: SingleMetricAnnotation, prompts: int) -> int:
    """Requests to embed every sample once (``Estimate.embedding_calls``; 0 without embeddings,
    under ``strategy: genetic`` or policy ``none``, and for a judge of several prompts)."""
    examples = cfg.examples
    if examples.embeddings is None or examples.policy == "none" or cfg.strategy == "genetic" or prompts != 1:
        return 0
    texts = {" ".join(sample_text(s.metric_input).split()) for s in dataset.samples}
    return math.ceil(len(texts) / examples.embeddings.batch_size)


# --- calls -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """The expected course of a run: split sizes, per-phase calls, length."""

    cfg: GeneticConfig
    model: CostModel
    n_train: int
    n_val: int
    judges: int
    prompts: int
    error_rate: float
    reasons: float
    binary: bool
    noise: float
    usable: int = 0
    train_part: int = 0
    corrections: float = 0.0
    reasoned_corrections: float = 0.0
    #: Whether the seed's figure on small data with a refit can be prediction-powered: the file
    #: records a verdict on every usable sample and the loss is a mean of per-sample quality.
    recorded_everywhere: bool = False

    @classmethod
    def of(
        cls,
        config: RunConfig,
        dataset: SingleMetricAnnotation,
        model: CostModel,
        prompt_name: str | None,
        recorded: RecordedAgreement,
    ) -> _Plan:
        cfg = config.effective_optimizer()
        labels = dataset.labels()
        usable = [i for i, y in enumerate(labels) if y is not None]
        if len(usable) < MIN_USABLE_SAMPLES:
            raise InsufficientDataError(
                f"{len(usable)} usable annotations (need at least {MIN_USABLE_SAMPLES})",
                path=dataset.source,
                metric=dataset.name,
            )
        n_train, n_val = split_sizes(len(usable), cfg)
        metric = build_metric(config.metric, prompt_name=prompt_name)
        binary = config.loss.type == "binary"
        prompt = evidence_prompt(metric)
        wrong = len(recorded.disagreements)  # the figure `agreement` prints
        share = wrong / len(usable)
        part = (
            len(usable)
            if is_out_of_bag(len(usable), cfg)
            else len(usable) - validation_count(len(usable), cfg.validation_fraction)
        )
        if n_train < part:  # the train focus set takes the disagreements first (up to 2/3 of it)
            share = min(share * part, VERDICT_SHARE * n_train) / n_train
        evidence = classify(dataset, labels, usable, prompt).values()  # the run's own classification
        kinds = Counter(e.kind for e in evidence)
        said = sum(e.human_reason for e in evidence if e.kind != "agree")
        return cls(
            cfg=cfg,
            model=model,
            n_train=n_train,
            n_val=n_val,
            judges=metric.calls_per_evaluation,
            prompts=len(metric.get_prompts()),
            error_rate=share,
            reasons=n_train * kinds["reason"] / len(usable),
            binary=binary,
            noise=_ensemble_noise(
                config.llm.noise if config.llm.provider == "fake" else model.judge_noise,
                config.metric.num_judges,
            ),
            usable=len(usable),
            train_part=part,
            corrections=part * (kinds["verdict"] + kinds["reason"]) / len(usable),
            reasoned_corrections=part * said / len(usable),
            recorded_everywhere=all(e.verdict is not None for e in evidence)
            and build_loss(config.loss).from_mean_quality(0.5) is not None,
        )

    @property
    def minibatch(self) -> int:
        """Screening minibatch size, as the optimizer sizes it; 0 when screening is off."""
        return minibatch_size(self.cfg, self.n_train)

    def offspring_judge_calls(self) -> float:
        m = self.minibatch
        if m == 0:
            return float(self.judges * self.n_train)
        return self.judges * (m + self.model.pass_rate * (self.n_train - m))

    @property
    def breeder(self) -> Breeder:
        """The run's operators, as the optimizer builds them: their meta-call costs are read from
        them (:meth:`Operator.meta_calls`), never written here a second time."""
        return Breeder(default_operators(self.cfg), ReverseEngineering())

    @property
    def learns(self) -> bool:
        """Whether the annotations hold corrections (verdict or reason) to learn from."""
        return self.error_rate > 0 or self.reasons > 0

    def meta_per_plan(self) -> float:
        return self.breeder.mean_meta_calls(self.prompts)

    def reverse_engineering(self) -> int:
        """Offspring of the initial population (learned from the corrections, or reverse-engineered)."""
        if not self.cfg.reverse_engineer:
            return 0
        return self.cfg.population_size - 1

    def initial(self) -> dict[str, Any]:
        r = self.reverse_engineering()
        judge = self.judges * self.n_train + r * self.model.keep_rate * self.offspring_judge_calls()
        # a mutation learning from the corrections, else reverse engineering of every prompt
        meta = r * float(self.breeder.initial_meta_calls(self.prompts, corrections=self.learns))
        return {"phase": "initial", "judge_calls": judge, "meta_calls": meta}

    def generation(self, g: int, wrong_before: float) -> dict[str, Any]:
        left = 1 + wrong_before
        plans = min(offspring_count(self.cfg, self.n_train), left) if self.meta_per_plan() else 0.0
        kept = plans * self.model.keep_rate * self.model.novelty ** (g - 1)
        return {
            "phase": f"generation {g}",
            "judge_calls": kept * self.offspring_judge_calls(),
            "meta_calls": plans * self.meta_per_plan(),
        }

    @property
    def bounds(self) -> PhaseCalls:
        """The optimizer's own upper bounds per phase (the shared cost model)."""
        return phase_calls(
            self.cfg,
            n_train=self.n_train,
            n_val=self.n_val,
            prompts=self.prompts,
            calls_per_evaluation=self.judges,
            meta_calls_per_offspring=self.breeder.meta_calls_per_offspring(self.prompts),
            ladders=self.ladders,
            refit=self.refit,
        )

    def final_judge_calls(self) -> int:
        return self.bounds.final

    def wrong_after(self, rounds: int) -> float:
        """Expected wrong train samples after round ``rounds`` (0 = the initial population)."""
        wrong = self.error_rate * self.n_train
        stuck = self.model.unlearnable * wrong
        left = wrong - stuck
        cap = self.model.fixes_per_round if self.binary else math.inf  # numeric: every deviation
        for _ in range(rounds + 1):  # is a "wrong" sample, and one criterion fixes many of them
            left -= min(self.model.learn_rate * left, cap)
        return self.noise * self.n_train + stuck + left

    @property
    def refit(self) -> bool:
        """Whether the run cross-validates its recipe and refits it (``optimizers/_refit.py``)."""
        return refits(self.usable, self.cfg)

    @property
    def ladders(self) -> int:
        if self.refit:  # a ladder per fold and the refit's
            return self.cfg.cv_folds + 1
        return 2 if self.usable < self.cfg.small_data else 1

    def shown(self) -> int:
        """Corrections one ladder shows a round (its learning part's, at most the sample size;
        with a refit the mean over the folds' ladders, each (K − 1)/K, and the refit's, all)."""
        if self.refit:
            k = self.cfg.cv_folds
            per_ladder = self.corrections * k / (k + 1)
        else:
            per_ladder = self.corrections / self.ladders if self.ladders > 1 else self.corrections
        return max(0, min(self.cfg.distill_sample_size, round(per_ladder)))

    def reasoned(self) -> float:
        """Share of the corrections that carry a human reason (an edited one), in [0, 1]."""
        return self.reasoned_corrections / self.corrections if self.corrections else 0.0

    def productive_rounds(self, shown: int | None = None) -> int:
        """Rounds of one ladder that teach a new lesson (see the module docstring); ``shown``: the
        corrections it shows a round (default :meth:`shown`)."""
        shown = self.shown() if shown is None else shown
        if shown == 0:
            return 0
        return max(1, min(self.cfg.distill_rounds - 2, 1 + int(math.log2(1 + shown / 8))))

    def fold_shown(self) -> int:
        """With a refit: corrections a fold's ladder shows a round ((K − 1)/K of them)."""
        k = self.cfg.cv_folds
        return max(0, min(self.cfg.distill_sample_size, round(self.corrections * (k - 1) / k)))

    def seed_judged(self) -> float:
        """The share of the verified samples the seed is judged on: :meth:`seed_share`, and with a
        refit the samples of idle folds beyond its draw (:meth:`seed_also_judged`)."""
        if not self.refit:
            return self.seed_share()
        return self.seed_share() + self.seed_also_judged(self.fold_learns(self.fold_shown()))

    def fold_learns(self, shown: float) -> float:
        """With a refit: the share of the folds' ladders that make a rung, in [0, 1], for ``shown``
        corrections a round: ``1 − exp(−shown / fold_corrections)`` (a lesson needs a few
        corrections; whether they carry a human reason does not matter here: the folds of the
        two-prompt faithfulness file, whose corrections carry none, learned in 9 runs of 9)."""
        return 1.0 - math.exp(-shown / self.model.fold_corrections) if shown else 0.0

    def fold_rounds(self, shown: float) -> float:
        """With a refit: the expected rounds that teach of a ladder that learns, for ``shown``
        corrections a fold shows a round: ``1 + log₂(1 + shown / fold_round_corrections)``, at
        most ``distill_rounds`` − 2 (an expectation over runs, unlike the whole rounds of
        :meth:`productive_rounds`; the refit's ladder teaches as many: its first round applies the
        folds' first lessons)."""
        rounds = 1.0 + math.log2(1.0 + shown / self.model.fold_round_corrections)
        return max(1.0, min(self.cfg.distill_rounds - 2, rounds))

    def refit_distill(self, batches: int) -> tuple[float, float, float]:
        """With a refit: (lessons calls and rewrite calls of the folds' ladders and the refit's, the
        share of folds whose ladder makes a rung, :meth:`fold_learns`). Per prompt, with T rounds that
        teach (:meth:`fold_rounds`), b lessons calls a round and ρ = ``rejected_rewrites``:

        * a fold's ladder that learns: T lessons rounds that teach, then the one barren round that
          ends it — ``(T + 1)·b`` lessons calls — and T rewrites, plus one rejected rewrite when it
          ends at one (ρ); a fold that learns nothing: its one barren round, ``b``;
        * the refit's, when a fold learned: its first round applies the folds' first lessons and
          asks nothing, its T − 1 further rounds that teach and the two barren rounds that end it
          ask ``(T + 1)·b``, with T rewrites, plus two rejected ones when it ends at them (ρ);
          when no fold learned, its two barren looks, ``2·b``."""
        k = self.cfg.cv_folds
        rho = self.model.rejected_rewrites
        shown_fold, shown_all = self.fold_shown(), self.shown_all()
        learn = self.fold_learns(shown_fold)
        any_learns = 1.0 - (1.0 - learn) ** k

        def calls(shown: int) -> int:
            return max(1, math.ceil(batches * shown / max(1, shown_all)))

        taught, b = self.fold_rounds(shown_fold), calls(shown_fold)
        rounds = min(self.cfg.distill_rounds, taught + SMALL_BARREN_ROUNDS)
        asks = k * (learn * rounds * b + (1.0 - learn) * SMALL_BARREN_ROUNDS * b)
        rewrites = k * learn * (taught + rho)
        b = calls(shown_all)  # its rounds teach as a fold's: its first is the folds' first
        rounds = min(self.cfg.distill_rounds, taught + BARREN_ROUNDS) - 1  # the first asks nothing
        asks += any_learns * rounds * b + (1.0 - any_learns) * BARREN_ROUNDS * b
        rewrites += any_learns * (taught + BARREN_ROUNDS * rho)
        return self.prompts * asks, self.prompts * rewrites, learn

    def seed_also_judged(self, learn: float) -> float:
        """With a refit: the share of the train samples the seed is judged on beyond its fresh draw
        (``seed_figure.also_judged``): the samples of a fold whose ladder learned nothing, where the
        recipe is the seed, when another fold's learned (else the seed is judged alone); ``learn``:
        the share of folds that learn (:meth:`refit_distill`)."""
        k = self.cfg.cv_folds
        return (1.0 - self.seed_share()) * ((1.0 - learn) - (1.0 - learn) ** k)

    def seed_share(self) -> float:
        """The share of the verified samples the seed is judged on: with a refit, when its figure
        is prediction-powered (``optimizers/_refit.py``), ``seed_judged_share`` of train, at least
        ``SEED_FRESH_MIN``; else all of them."""
        if not (self.refit and self.recorded_everywhere) or not self.n_train:
            return 1.0
        fresh = max(SEED_FRESH_MIN, math.ceil(self.cfg.seed_judged_share * self.n_train))
        return min(1.0, fresh / self.n_train)

    def shown_all(self) -> int:
        """Corrections a ladder learning from all of them shows a round."""
        return max(0, min(self.cfg.distill_sample_size, round(self.corrections)))

    def pipeline_phases(self, batches: int) -> list[dict[str, Any]]:
        """Expected calls of the pipeline's stages: distill, verify, examples (a candidate per
        example policy, judged on the held-out samples; a judge with one prompt), search
        (expected 0). ``strategy: examples`` distills nothing."""
        taught = self.productive_rounds() if self.cfg.strategy != "examples" else 0
        barren = SMALL_BARREN_ROUNDS if self.refit else BARREN_ROUNDS
        rounds = min(self.cfg.distill_rounds, taught + barren) if taught else 1
        distilling = self.shown() and self.cfg.strategy != "examples"
        meta: float = self.ladders * self.prompts * (rounds * batches + taught) if distilling else 0
        n_eval = self.n_val or self.n_train
        tops = self.model.out_of_bag_rungs if self.ladders > 1 else 1.0
        tops *= self.reasoned() + self.model.unreasoned_rungs * (1.0 - self.reasoned())
        rungs: float = tops if taught else 0.0
        if self.refit and distilling:  # the folds' tops, each on its own fold: one n_train together
            asks, rewrites, rungs = self.refit_distill(batches)
            meta = asks + rewrites
        examples = float(example_candidates(self.cfg)) if self.prompts == 1 else 0.0
        if self.cfg.racing and self.n_val:  # raced on held-out samples: no gain, one look; out of
            examples /= RACE_LOOKS  # bag (small data) each policy is judged on every train sample
        if self.refit:  # gated: judged only when the cross-validated errors resemble a train
            examples = 0.0  # correction (rare on small files); bounded in ``bounds``
        search = {"phase": "search", "judge_calls": 0.0, "meta_calls": 0.0}
        unshown = self.corrections / self.ladders - self.cfg.distill_rounds * self.cfg.distill_sample_size
        searches = self.cfg.strategy == "auto" and self.cfg.generations > 0 and self.cfg.population_size > 1
        if searches and unshown > 0:
            # corrections left unshown when the rounds ran out: the search runs, from the seed and
            # the verified rung judged on train, for about one generation whose offspring are
            # screened on a minibatch (after a verified rung few pass)
            first = self.generation(1, self.wrong_after(0))
            plans = offspring_count(self.cfg, self.n_train)
            search["judge_calls"] = float((2 * self.n_train + plans * self.minibatch) * self.judges)
            search["meta_calls"] = first["meta_calls"]
        elif searches and self.refit and distilling:
            # the seed kept, no fold's ladder having learned a rung ((1 − rungs)^K): the search runs
            # from it, judging it on the train samples its prediction-powered figure left to the
            # recorded verdicts, for about one generation screened on a minibatch
            kept = (1.0 - rungs) ** self.cfg.cv_folds
            first = self.generation(1, self.wrong_after(0))
            plans = offspring_count(self.cfg, self.n_train)
            rest = (1.0 - self.seed_share()) * self.n_train
            search["judge_calls"] = kept * (rest + plans * self.minibatch) * self.judges
            search["meta_calls"] = kept * first["meta_calls"]
        crossing = distilling and self.cfg.cross_fit and self.n_val > 0 and not search["judge_calls"]
        cross_fit = {
            "phase": "cross_fit",
            "judge_calls": float(2 * min(self.n_train, 32) * self.judges) if crossing else 0.0,
            "meta_calls": float(self.prompts * 4) if crossing else 0.0,
        }
        return [
            {"phase": "distill", "judge_calls": 0.0, "meta_calls": float(meta)},
            {
                "phase": "verify",
                "judge_calls": float((self.seed_judged() + rungs) * n_eval * self.judges),
                "meta_calls": 0.0,
            },
            {"phase": "examples", "judge_calls": float(examples * n_eval * self.judges), "meta_calls": 0.0},
            cross_fit,
            search,
        ]

    def phases(self) -> list[dict[str, Any]]:
        """Expected calls of each phase that runs: initial, generations, final.

        Raises:
            BudgetExceededError: the call budget cannot pay for the first generation.
        """
        self._check_budget_upfront()
        out, stalled = [self.initial()], 0
        for g in range(1, self.cfg.generations + 1):
            before = self.wrong_after(g - 1)
            if self._stopped(before, stalled) or not self._fits(out):
                break
            out.append(self.generation(g, before))
            stalled = 0 if before - self.wrong_after(g) >= 0.5 else stalled + 1
        return [*out, {"phase": "final", "judge_calls": float(self.final_judge_calls()), "meta_calls": 0.0}]

    def _stopped(self, wrong: float, stalled: int) -> bool:
        """The optimizer's stopping rules before a generation: a population of one, a perfect
        train score (binary losses), ``patience`` rounds without improvement."""
        perfect = self.binary and wrong < 0.5
        return self.cfg.population_size == 1 or perfect or stalled >= self.cfg.patience

    def _fits(self, done: Sequence[dict[str, Any]]) -> bool:
        limit = self.cfg.budget.max_calls
        used = sum(p["judge_calls"] + p["meta_calls"] for p in done)
        return limit is None or used + self.bounds.generation + self.bounds.final <= limit

    def _check_budget_upfront(self) -> None:
        check_upfront(self.cfg.budget, self.bounds)

    def max_calls(self) -> int:
        """Calls of a run with every generation and every offspring judged on all of train."""
        if self.cfg.strategy != "genetic":
            return self.bounds.total(self.cfg.generations)
        r = self.reverse_engineering()
        per_offspring = max(
            self.breeder.initial_meta_calls(self.prompts, corrections=learns) for learns in (True, False)
        )
        initial = self.judges * self.n_train * (1 + r) + per_offspring * r
        generations = 0 if self.cfg.population_size == 1 else self.cfg.generations * self.bounds.generation
        return initial + generations + self.final_judge_calls()


def _ensemble_noise(noise: float, judges: int) -> float:
    """Chance that most of ``judges`` independent judges, each wrong with chance ``noise``, are
    wrong (a tie counts as wrong): the noise left after aggregating an ensemble's verdicts."""
    if judges == 1:
        return noise
    wrong = range((judges + 1) // 2, judges + 1)
    return sum(math.comb(judges, k) * noise**k * (1 - noise) ** (judges - k) for k in wrong)


# --- tokens ----------------------------------------------------------------------------------


class _Recorder:
    """An :class:`~promptevolver.llm._base.LLMClient` that answers locally and keeps the requests."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list[LLMRequest] = []
        self.usage = Usage()

    async def complete(self, request: LLMRequest) -> Completion:
        self.requests.append(request)
        return Completion(self.answer)


def _drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (it only awaits a :class:`_Recorder`) without an
    event loop, so that estimating works inside a running loop too (e.g. a notebook).

    Raises:
        RuntimeError: the coroutine suspended (it awaited something else).
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the coroutine suspended; it must only await local recorders")


@dataclass(frozen=True)
class _Tokens:
    """Expected tokens per call of each kind (prompt, completion) and prices per 1M tokens."""

    judge: tuple[float, float]
    judge_offspring: tuple[float, float]
    seed_judge_calls: float
    meta_initial: tuple[float, float]
    meta_generation: tuple[float, float]
    judge_price: tuple[float, float] | None
    meta_price: tuple[float, float] | None
    meta_distill: tuple[float, float] = (0.0, 0.0)
    batches: int = 1

    @classmethod
    def of(
        cls, config: RunConfig, dataset: SingleMetricAnnotation, plan: _Plan, prompt_name: str | None
    ) -> _Tokens:
        metric = build_metric(config.metric, prompt_name=prompt_name)
        examples = _examples(dataset, metric)
        judge_count = _counter(config.llm)
        judge = _judge_tokens(dataset, metric, judge_count)
        meta_count = _counter(config.reflection_llm or config.llm)
        per_prompt = [
            _meta_tokens(instruction, examples, plan, config.metric.name, meta_count)
            for instruction in metric.get_instructions().values()
        ]
        per_op = {
            op: (_mean(p[op][0] for p in per_prompt), _mean(p[op][1] for p in per_prompt))
            for op in per_prompt[0]
        }
        growth = judge_count(" ".join(["word"] * plan.model.instruction_growth_words))
        feedback, rewrite = per_op["feedback"], per_op["rewrite"]
        mutation = ((feedback[0] + rewrite[0]) / 2, (feedback[1] + rewrite[1]) / 2)
        initial = mutation if plan.learns else per_op["reverse_engineer"]
        mix = _generation_mix(plan)
        generation = (
            sum(share * per_op[op][0] for op, share in mix.items()),
            sum(share * per_op[op][1] for op, share in mix.items()),
        )
        distill, batches = _distill_tokens(config, metric, examples, plan, meta_count, per_op["rewrite"])
        pipeline = plan.cfg.strategy != "genetic"
        seed_calls = plan.judges * (
            (plan.n_val or plan.n_train) * plan.seed_judged() if pipeline else plan.n_train + plan.n_val
        )
        return cls(
            judge=judge,
            judge_offspring=(judge[0] + growth, judge[1]),
            seed_judge_calls=float(seed_calls),
            meta_distill=distill,
            batches=batches,
            meta_initial=initial,
            meta_generation=generation,
            judge_price=_price(config.llm),
            meta_price=_price(config.reflection_llm or config.llm),
        )

    def totals(self, phases: Sequence[dict[str, Any]]) -> tuple[float, float, float | None]:
        """(prompt tokens, completion tokens, cost in USD or None) of the expected ``phases``."""
        prompt = completion = dollars = 0.0
        priced = self.judge_price is not None and self.meta_price is not None
        seed_left = self.seed_judge_calls  # the seed's calls carry its own instruction; others a grown one
        for p in phases:
            meta = {
                "initial": self.meta_initial,
                "distill": self.meta_distill,
                "cross_fit": self.meta_distill,
            }.get(p["phase"], self.meta_generation)
            seed = min(seed_left, p["judge_calls"])
            seed_left -= seed
            for calls, (pt, ct), price in (
                (seed, self.judge, self.judge_price),
                (p["judge_calls"] - seed, self.judge_offspring, self.judge_price),
                (p["meta_calls"], meta, self.meta_price),
            ):
                prompt, completion = prompt + calls * pt, completion + calls * ct
                if price is not None:
                    dollars += calls * (pt * price[0] + ct * price[1]) / 1_000_000
        return prompt, completion, round(dollars, 6) if priced else None


def _distill_tokens(
    config: RunConfig,
    metric: Metric,
    examples: Sequence[ops.Example],
    plan: _Plan,
    count: Callable[[str], int],
    rewrite: tuple[float, float],
) -> tuple[tuple[float, float], int]:
    """((prompt, completion) tokens of the distillation's average meta call, lessons calls a round):
    a lessons call on a round's shown corrections, packed into the reflection model's window as
    the stage packs them (``optimizers/_distill.py``), and the round's rewrite."""
    shown = plan.shown()
    if shown == 0:
        return (0.0, 0.0), 0
    llm = config.reflection_llm or config.llm
    window = llm.context_tokens or (
        DEFAULT_CONTEXT_TOKENS if llm.provider == "fake" else context_tokens_for(llm.model)
    )
    instruction = next(iter(metric.get_instructions().values()))
    contrast = SMALL_CONTRAST if plan.refit else CONTRAST  # agreeing samples beside them, as the stage
    items = [ops.Example(e.inputs, e.expected, e.judged, i + 1) for i, e in enumerate(examples[:shown])]
    size = sum(estimate_tokens([e.line()], None) for e in items)
    room = max(
        1,
        int(window * CONTEXT_SHARE)
        - ANSWER_TOKENS
        - TEMPLATE_TOKENS
        - 2 * estimate_tokens([instruction], None),
    )
    batches = max(1, min(plan.cfg.distill_max_calls, math.ceil(size / room)))
    recorder = _Recorder(json.dumps({"feedback": []}))
    lessons = [" ".join(["word"] * plan.model.feedback_item_words)] * plan.cfg.distill_lessons
    _drive(
        ops.lessons(
            recorder,
            instruction=instruction,
            corrections=items[: max(1, len(items) // batches)],
            passing=examples[shown : shown + contrast],
            max_lessons=plan.cfg.distill_lessons,
            temperature=plan.cfg.meta_temperature,
            sample_index=0,
        )
    )
    (request,) = recorder.requests
    call = (float(count(" ".join(m.content for m in request.messages))), float(count(json.dumps(lessons))))
    if plan.refit:  # the folds' ladders and the refit's, as the calls count them
        asks, rewrites, _ = plan.refit_distill(batches)
    else:
        taught = plan.productive_rounds()
        asks, rewrites = min(plan.cfg.distill_rounds, taught + 2) * batches, taught
    total = asks + rewrites
    mean = (
        (asks * call[0] + rewrites * rewrite[0]) / total,
        (asks * call[1] + rewrites * rewrite[1]) / total,
    )
    return mean, batches


def _counter(llm: LLMConfig) -> Callable[[str], int]:
    """Token counter of the client for ``llm``: whitespace words (simulated) or characters / 4."""
    if llm.provider == "fake":
        return count_tokens
    return lambda text: estimate_tokens([text], None)


def _price(llm: LLMConfig) -> tuple[float, float] | None:
    """USD per 1M (prompt, completion) tokens: ``llm.prices`` or the price table
    (:meth:`LLMConfig.price`), 0 for the simulated LLM, else None."""
    found = llm.price()
    if found is not None:
        return found[0].prompt, found[0].completion
    return (0.0, 0.0) if llm.provider == "fake" else None


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def _spread(dataset: SingleMetricAnnotation, limit: int) -> list[int]:
    """Up to ``limit`` usable sample positions, evenly spread."""
    usable = dataset.usable_indices()
    return usable[:: max(1, len(usable) // limit)][:limit]


def _inputs(metric: Metric, fields: dict[str, Any]) -> dict[str, Any]:
    """The metric's input fields of a sample, or all its fields when it lacks a required one."""
    try:
        return metric.prompt_inputs(fields)
    except AnnotationError:
        return dict(fields)


def _judge_tokens(
    dataset: SingleMetricAnnotation, metric: Metric, count: Callable[[str], int], limit: int = 200
) -> tuple[float, float]:
    """Mean (prompt, completion) tokens of one judge call: every prompt of the seed rendered on
    spread usable samples, with the prompt's recorded ``prompt_input`` when the sample has one
    (else the metric's input fields); completions the recorded (else the expected) output."""
    prompt_tokens, completion_tokens = [], []
    labels = dataset.labels()
    for i in _spread(dataset, limit):
        sample = dataset.samples[i]
        for name, prompt in metric.get_prompts().items():
            trace = sample.prompts.get(name)
            recorded = trace.prompt_input if trace else None
            inputs = recorded or _inputs(metric, sample.metric_input)
            output = (trace.prompt_output if trace else None) or {"verdict": labels[i]}
            prompt_tokens.append(count(" ".join(m.content for m in prompt.render(dict(inputs)))))
            completion_tokens.append(count(json.dumps(output)))
    return _mean(prompt_tokens), _mean(completion_tokens)


def _examples(dataset: SingleMetricAnnotation, metric: Metric, limit: int = 200) -> list[ops.Example]:
    """Up to ``limit`` usable samples (evenly spread) as meta calls show them."""
    labels = dataset.labels()
    first = next(iter(metric.get_prompts()))
    out = []
    for i in _spread(dataset, limit):
        sample = dataset.samples[i]
        approved = sample.expected_output(first) or {}
        expected = {"reason": approved.get("reason", ""), "verdict": labels[i]}
        inputs = _inputs(metric, sample.metric_input)
        out.append(ops.Example(inputs=inputs, expected=expected, judged=dict(expected)))
    return out


#: The meta-prompt operations one offspring of each operator calls, in equal numbers (a mutation:
#: one feedback and one rewrite call; a crossover and reverse engineering: one call per prompt).
_OPERATIONS = {
    "mutation": ("feedback", "rewrite"),
    "crossover": ("crossover",),
    "reverse_engineer": ("reverse_engineer",),
}


def _generation_mix(plan: _Plan) -> dict[str, float]:
    """Share of each meta-prompt operation among a generation's meta calls (sums to 1): each
    operator's share of the calls (:meth:`Breeder.meta_call_shares`, from the operators' own
    ``meta_calls``), split evenly over the operations it calls."""
    mix: dict[str, float] = {}
    for name, share in plan.breeder.meta_call_shares(plan.prompts).items():
        operations = _OPERATIONS[name]
        for operation in operations:
            mix[operation] = mix.get(operation, 0.0) + share / len(operations)
    return mix or {"crossover": 1.0}


def _meta_tokens(
    instruction: str,
    examples: Sequence[ops.Example],
    plan: _Plan,
    metric_name: str,
    count: Callable[[str], int],
) -> dict[str, tuple[float, float]]:
    """(prompt, completion) tokens of one call of each meta operation, rendered by the operators."""
    cfg, temp = plan.cfg, plan.cfg.meta_temperature
    # a mutation shows up to sample_size failing or not-yet-seen corrected samples, and a quarter
    # as many passing ones for contrast (operators/_mutation.py)
    failing = max(1, min(cfg.sample_size, round(plan.error_rate * plan.n_train + plan.reasons)))
    if is_out_of_bag(plan.usable, cfg):  # out of bag: a mutation learns from one of the folds
        failing = max(1, round(failing / 2))
    passing = examples[failing : failing + max(1, cfg.sample_size // 4)]
    items = [" ".join(["word"] * plan.model.feedback_item_words)] * cfg.max_feedbacks
    answer = json.dumps({"instruction": instruction})
    calls: dict[str, Callable[[_Recorder], Coroutine[Any, Any, Any]]] = {
        "reverse_engineer": lambda llm: ops.reverse_engineer(
            llm,
            metric_name=metric_name,
            examples=examples[: cfg.num_demonstrations],
            temperature=temp,
            sample_index=0,
        ),
        "feedback": lambda llm: ops.feedback(
            llm,
            instruction=instruction,
            failures=examples[:failing],
            max_feedbacks=cfg.max_feedbacks,
            temperature=temp,
            sample_index=0,
            passing=passing,
        ),
        "rewrite": lambda llm: ops.rewrite(
            llm, instruction=instruction, feedback_items=items, temperature=temp, sample_index=0
        ),
        "crossover": lambda llm: ops.crossover(
            llm, parent_a=instruction, parent_b=instruction, temperature=temp, sample_index=0
        ),
    }
    out = {}
    for op, call in calls.items():
        recorder = _Recorder(answer)
        _drive(call(recorder))
        (request,) = recorder.requests
        completion = count(json.dumps({"feedback": items})) if op == "feedback" else count(answer)
        out[op] = (float(count(" ".join(m.content for m in request.messages))), float(completion))
    return out
