"""The cost model: upper bounds on the LLM calls of each phase of a run.

The one copy of this arithmetic: the optimizer's budget checks and ``promptevolver estimate``
both read it. Bounds assume every offspring passes screening and is judged on all of train, and
every answer parses on the first try (a re-ask after a malformed answer is one more call, which
the budget counts as it happens).

With P = ``population_size``, J = judge calls per evaluation (``metric.calls_per_evaluation``),
K = prompts per candidate, O = offspring per generation (:func:`offspring_count`), M = the most
meta calls one offspring's operator makes (mutation: 2 per prompt), R = the initial offspring
(P − 1, or 0 with ``reverse_engineer: false``), F = finalists besides the seed, n_train / n_val
the samples judged per candidate (focus sets; n_val = 0 out-of-bag, where the final choice
reuses the train judgements)::

    seed       = n_train · J                        the seed's train evaluation
    initial    = (1 + R) · n_train · J + R · M       the seed and its first offspring on train
    generation = O · (M + n_train · J)               meta calls, then every child on all of train
    final      = (1 + min(F, P)) · n_val · J         seed and finalists on validation (P = 1: the seed)

The distill-first pipeline (``strategy: auto`` or ``distill``), with D = ``distill_rounds``,
C = ``distill_max_calls``, L = ladders (2 out of bag, else 1; ``cv_folds`` + 1 with a refit) and
n_eval the held-out samples a verified candidate is judged on (n_val; out of bag, n_train)::

    distill      = L · D · K · (C + 1)               lessons calls and one rewrite per prompt a round
    verify       = (1 + L · D) · n_eval · J           the seed and every rung, before racing
                 = (1 + D) · n_train · J              with a refit: the seed, and each depth of the
                                                     folds' ladders once (each rung on its own fold)
    cross_fit    = 2 · min(n_train, 32) · J           held out only: the verified and the cross-fit
                   + K · X · (C + 1)                 rung on train, X = min(3, D) rounds
    seed         = n_eval · J                        the seed's held-out evaluation
    initial      = distill + verify + cross_fit
    search_start = 2 · n_train · J                   auto, when the search runs: seed and choice on train
    generation   = O · (M + n_train · J)             auto only (distill: 0)
    final        = (1 + F) · n_val · J               auto only: the search's finalists on validation
    minimum      = seed + n_eval · J + K · (C + 1)     one round and one rung verified
"""

from __future__ import annotations

from dataclasses import dataclass

from promptevolver.config import GeneticConfig

__all__ = ["PhaseCalls", "example_candidates", "minibatch_size", "offspring_count", "phase_calls"]


@dataclass(frozen=True)
class PhaseCalls:
    """Upper bounds on LLM calls (judge and meta) of each phase; see the module docstring."""

    seed: int
    initial: int
    generation: int
    final: int
    distill: int = 0
    verify: int = 0
    cross_fit: int = 0
    search_start: int = 0
    floor: int | None = None

    def upfront(self) -> int:
        """Calls of the initial population, one generation and the final choice, at most."""
        return self.initial + self.generation + self.final

    def total(self, generations: int) -> int:
        """Calls of a whole run of ``generations`` generations, at most (re-asks after a malformed
        answer aside; the pipeline's search counted as if it ran)."""
        searched = self.search_start if self.generation else 0
        return self.initial + searched + generations * self.generation + self.final

    def minimum(self) -> int:
        """Calls any run needs: the seed's train evaluation and the final choice (the pipeline:
        the seed's held-out evaluation, one round of distillation and one rung verified)."""
        return self.floor if self.floor is not None else self.seed + self.final

    def initial_search(self) -> int:
        """Calls of the pipeline's search stage before its first generation, and that generation."""
        return self.search_start + self.generation


def offspring_count(config: GeneticConfig, n_train: int) -> int:
    """Offspring planned per generation for ``n_train`` train samples: ``offspring_per_generation``,
    or automatically ``population_size`` × (``n_train`` // 100, clamped to 1..3)."""
    if config.offspring_per_generation is not None:
        return config.offspring_per_generation
    return config.population_size * min(3, max(1, n_train // 100))


def minibatch_size(config: GeneticConfig, n_train: int) -> int:
    """Screening minibatch size for ``n_train`` train samples: ``minibatch_size`` capped at a
    quarter of train (at least 2); 0 when screening is off (turned off, or it would be all of train)."""
    size = min(config.minibatch_size, max(2, n_train // 4))
    return size if config.minibatch_size > 0 and size < n_train else 0


def phase_calls(
    config: GeneticConfig,
    *,
    n_train: int,
    n_val: int,
    prompts: int,
    calls_per_evaluation: int,
    meta_calls_per_offspring: int,
    ladders: int = 1,
    refit: bool = False,
) -> PhaseCalls:
    """Upper bounds of each phase's calls for a run of ``config`` (see the module docstring).

    Args:
        n_train, n_val: split sizes (caps applied), in samples (n_val 0: out of bag).
        prompts: prompts per candidate (K).
        calls_per_evaluation: judge calls per evaluation of one sample (J).
        meta_calls_per_offspring: the most meta calls one offspring's operator makes (M).
        ladders: the distillation stage's ladders (2 out of bag, else 1; ``cv_folds`` + 1 with
            a refit).
        refit: the recipe is cross-validated and refit (small data, ``optimizers/_refit.py``).
    """
    if config.strategy != "genetic":
        return _pipeline_calls(
            config, n_train, n_val, prompts, calls_per_evaluation, meta_calls_per_offspring, ladders, refit
        )
    pop, judge = config.population_size, calls_per_evaluation
    extra = pop - 1 if config.reverse_engineer else 0
    initial = (1 + extra) * n_train * judge + extra * max(prompts, meta_calls_per_offspring)
    generation = offspring_count(config, n_train) * (meta_calls_per_offspring + n_train * judge)
    finalists = 1 if pop == 1 else 1 + min(config.finalists, pop)
    return PhaseCalls(
        seed=n_train * judge, initial=initial, generation=generation, final=finalists * n_val * judge
    )


def example_candidates(config: GeneticConfig) -> int:
    """Candidates with teaching examples the verification stage judges besides the others: 2
    under policy ``auto`` (static and retrieval; ``strategy: examples`` too), 1 under one
    policy, 0 under ``none``."""
    policy = config.examples.policy
    if policy == "none":
        return 0
    return 2 if policy == "auto" else 1


def _pipeline_calls(
    config: GeneticConfig,
    n_train: int,
    n_val: int,
    prompts: int,
    judge: int,
    meta: int,
    ladders: int,
    refit: bool = False,
) -> PhaseCalls:
    """The distill-first pipeline's bounds (see the module docstring)."""
    n_eval = n_val or n_train
    per_round = prompts * (config.distill_max_calls + 1)
    distilling = config.strategy != "examples"
    distill = ladders * config.distill_rounds * per_round if distilling else 0
    judged = 1 if refit else ladders  # with a refit each depth is judged once, over the folds
    rungs = judged * config.distill_rounds if distilling else 0
    verify = (1 + rungs + example_candidates(config)) * n_eval * judge
    auto = config.strategy == "auto" and config.generations > 0 and config.population_size > 1
    generation = offspring_count(config, n_train) * (meta + n_train * judge) if auto else 0
    final = (1 + config.finalists) * n_val * judge if auto else 0
    crossing = distilling and config.cross_fit and n_val > 0
    cross_fit = 2 * min(n_train, 32) * judge + prompts * min(3, config.distill_rounds) * (
        config.distill_max_calls + 1
    )
    cross_fit = cross_fit if crossing else 0
    return PhaseCalls(
        seed=n_eval * judge,
        initial=distill + verify + cross_fit,
        generation=generation,
        final=final,
        distill=distill,
        verify=verify,
        cross_fit=cross_fit,
        search_start=2 * n_train * judge if auto else 0,
        floor=2 * n_eval * judge + per_round,
    )
