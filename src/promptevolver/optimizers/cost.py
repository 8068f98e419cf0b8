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
"""

from __future__ import annotations

from dataclasses import dataclass

from promptevolver.config.models import GeneticConfig

__all__ = ["PhaseCalls", "minibatch_size", "offspring_count", "phase_calls"]


@dataclass(frozen=True)
class PhaseCalls:
    """Upper bounds on LLM calls (judge and meta) of each phase; see the module docstring."""

    seed: int
    initial: int
    generation: int
    final: int

    def upfront(self) -> int:
        """Calls of the initial population, one generation and the final choice, at most."""
        return self.initial + self.generation + self.final

    def total(self, generations: int) -> int:
        """Calls of a whole run of ``generations`` generations, at most (re-asks after a malformed
        answer aside)."""
        return self.initial + generations * self.generation + self.final

    def minimum(self) -> int:
        """Calls any run needs: the seed's train evaluation and the final choice."""
        return self.seed + self.final


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
) -> PhaseCalls:
    """Upper bounds of each phase's calls for a run of ``config`` (see the module docstring).

    Args:
        n_train, n_val: split sizes (caps applied), in samples.
        prompts: prompts per candidate (K).
        calls_per_evaluation: judge calls per evaluation of one sample (J).
        meta_calls_per_offspring: the most meta calls one offspring's operator makes (M).
    """
    pop, judge = config.population_size, calls_per_evaluation
    extra = pop - 1 if config.reverse_engineer else 0
    initial = (1 + extra) * n_train * judge + extra * max(prompts, meta_calls_per_offspring)
    generation = offspring_count(config, n_train) * (meta_calls_per_offspring + n_train * judge)
    finalists = 1 if pop == 1 else 1 + min(config.finalists, pop)
    return PhaseCalls(
        seed=n_train * judge, initial=initial, generation=generation, final=finalists * n_val * judge
    )
