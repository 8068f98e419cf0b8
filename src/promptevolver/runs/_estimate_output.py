"""``promptevolver estimate`` on the terminal: an :class:`~promptevolver.runs._estimate.Estimate` in words.

:func:`estimate_lines` says the expected calls, tokens and cost (and, unless quiet, the split, the
expected generations and the upper bound); :func:`cost_text` says where each price came from, or
which model has none.
"""

from __future__ import annotations

from pathlib import Path

from promptevolver.config import RunConfig
from promptevolver.optimizers import Regime
from promptevolver.runs._estimate import Estimate

__all__ = ["cost_text", "estimate_lines"]


def estimate_lines(
    e: Estimate, config: RunConfig, *, source: Path, quiet: bool = False, verbose: bool = False
) -> list[str]:
    """The lines ``estimate`` prints for ``e``, the estimate of ``config`` (read from ``source``):
    one line when ``quiet``; with ``verbose``, the expected calls of each phase too."""
    line = (
        f"expected LLM calls: {e.total_calls:,} ({e.judge_calls:,} judge + {e.meta_calls:,} meta); "
        f"tokens: {e.prompt_tokens + e.completion_tokens:,}; cost: {cost_text(e.cost_usd, config)}"
    )
    if quiet:
        return [line]
    gens = config.effective_optimizer().generations
    lines = [
        f"estimate for {source} (no LLM called)",
        f"  split: {_split(e)}",
        f"  the recorded judge disagrees with the humans on {_share(e.recorded_disagreement)} of the "
        f"{e.recorded_scored:,} usable samples with a recorded verdict (promptevolver agreement); the "
        f"judged train samples take those first: ~{e.seed_error_rate * e.train:.1f} of {e.train:,}",
        f"  expected generations: {e.generations} of {gens} (early stopping model)",
        f"  {line}",
        f"  prompt tokens {e.prompt_tokens:,}, completion tokens {e.completion_tokens:,}",
        f"  at most {e.max_calls:,} calls (every generation run, every offspring judged on all of train)",
    ]
    if e.embedding_calls:
        plural = "s" if e.embedding_calls != 1 else ""
        lines.append(
            f"  embeddings endpoint: at most {e.embedding_calls:,} request{plural} before the first "
            "judge call (0 with a warm cache; not LLM calls, outside the budget)"
        )
    if verbose:
        lines += [
            f"    {p['phase']:>13}: {p['judge_calls']:>9,.1f} judge, {p['meta_calls']:>6,.1f} meta"
            for p in e.phases
        ]
    return lines


def cost_text(cost: float | None, config: RunConfig) -> str:
    """``cost`` (USD) with the source of each price; ``unknown (...)`` naming the unpriced models
    and how to price them when ``cost`` is None."""
    llms = [config.llm] + ([config.reflection_llm] if config.reflection_llm is not None else [])
    if cost is None:
        unpriced = config.unpriced_models()
        return (
            f"unknown (no price for {', '.join(map(repr, unpriced))} in llm.prices or the price table: set "
            "llm.prices, USD per 1M tokens, e.g. llm.prices: {MODEL: {prompt: 0.15, completion: 0.6}})"
        )
    if all(llm.provider == "fake" for llm in llms) and cost == 0:
        return f"${cost:,.4f} (simulated LLM)"
    sources = []
    for llm in llms:
        found = llm.price()
        if found is not None:
            price, source = found
            sources.append(
                f"{llm.priced_model}: {_usd(price.prompt)} prompt, {_usd(price.completion)} completion "
                f"per 1M tokens, from the {source}"
            )
    return f"${cost:,.4f}" + (f" ({'; '.join(sources)})" if sources else "")


def _usd(amount: float) -> str:
    """USD with 2 decimals when that is exact, else every significant digit."""
    return f"${amount:.2f}" if round(amount, 2) == amount else f"${amount:g}"


def _split(e: Estimate) -> str:
    """The split in words: out of bag (small data), or each part and the samples judged in it."""
    if e.regime is Regime.OUT_OF_BAG:
        judged = f", each candidate judged on {e.train:,} of them" if e.train < e.usable else ""
        return (
            f"{e.usable} usable annotations, small data: all used to learn and to choose "
            f"(out-of-bag{judged}), no validation calls"
        )
    train = f"{e.train_part:,} train" + (f" (judged on {e.train:,})" if e.train < e.train_part else "")
    val = f"{e.validation_part:,} validation" + (
        f" (judged on {e.validation:,})" if e.validation < e.validation_part else ""
    )
    return f"{train}, {val}"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"
