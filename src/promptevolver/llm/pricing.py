"""What an LLM call costs: a model's price per million tokens.

Providers bill prompt (input) and completion (output) tokens at separate rates, quoted in US
dollars per one million tokens (the unit of OpenAI's and most providers' price pages). A client
given a :class:`Price` adds each answered call's cost to ``usage.cost_usd``; cache hits and failed
attempts cost nothing here (a provider may still bill a failed attempt's prompt — we cannot see
that, so budgets on cost are as good as the provider's usage report).

:data:`PRICE_TABLE` holds the list prices of common models (standard tier, no batch or cached-input
discount) as of :data:`PRICE_TABLE_DATE`, from the sources in :data:`PRICE_TABLE_SOURCES`. A
config's ``llm.prices`` overrides it (prices change; check them before trusting a cost budget).
Names match exactly: a dated snapshot such as ``gpt-4o-2024-05-13`` may be priced differently
from its alias, so it is not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "PRICE_TABLE",
    "PRICE_TABLE_DATE",
    "PRICE_TABLE_SOURCES",
    "TOKENS_PER_PRICE_UNIT",
    "Price",
    "price_for",
    "table_price",
]

#: Prices are quoted per this many tokens.
TOKENS_PER_PRICE_UNIT = 1_000_000


@dataclass(frozen=True)
class Price:
    """A model's price.

    Attributes:
        prompt: USD per 1M prompt (input) tokens, ≥ 0.
        completion: USD per 1M completion (output) tokens, ≥ 0.

    Raises:
        ValueError: a negative or non-finite rate.
    """

    prompt: float
    completion: float

    def __post_init__(self) -> None:
        for name in ("prompt", "completion"):
            value = getattr(self, name)
            if not 0.0 <= value < float("inf"):
                raise ValueError(f"Price.{name} must be a finite USD amount >= 0, got {value}")

    def cost_usd(self, *, prompt_tokens: int, completion_tokens: int) -> float:
        """The cost in USD of a call that used these tokens."""
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / TOKENS_PER_PRICE_UNIT


def price_for(model: str, table: Mapping[str, Price]) -> Price | None:
    """The price of ``model`` in ``table``; None when the table is empty (cost not tracked).

    Raises:
        KeyError: the table is not empty but has no entry for ``model`` (the message lists the
            priced models), so that a misspelt model name never silently costs 0.
    """
    if not table:
        return None
    if model not in table:
        raise KeyError(f"no price for model {model!r}; priced models: {sorted(table)}")
    return table[model]


#: When :data:`PRICE_TABLE` was checked (year-month).
PRICE_TABLE_DATE = "2026-06"
#: Where its figures come from (the providers' pricing pages, standard tier).
PRICE_TABLE_SOURCES = (
    "OpenAI: https://platform.openai.com/docs/pricing (as reproduced by deploybase.ai, March 2026, "
    "and tokenmath.io, checked 2026-06-21)",
    "Anthropic: https://docs.anthropic.com/en/docs/about-claude/pricing (base input and output tokens)",
)

#: Model name → list price in USD per 1M tokens (see the module docstring).
PRICE_TABLE: Mapping[str, Price] = {
    # OpenAI
    "gpt-5": Price(prompt=1.25, completion=10.00),
    "gpt-5-mini": Price(prompt=0.25, completion=2.00),
    "gpt-5-nano": Price(prompt=0.05, completion=0.40),
    "gpt-4.1": Price(prompt=2.00, completion=8.00),
    "gpt-4.1-mini": Price(prompt=0.40, completion=1.60),
    "gpt-4.1-nano": Price(prompt=0.10, completion=0.40),
    "gpt-4o": Price(prompt=2.50, completion=10.00),
    "gpt-4o-mini": Price(prompt=0.15, completion=0.60),
    "o3": Price(prompt=2.00, completion=8.00),
    "o3-mini": Price(prompt=1.10, completion=4.40),
    "o4-mini": Price(prompt=1.10, completion=4.40),
    "gpt-3.5-turbo": Price(prompt=0.50, completion=1.50),
    # Anthropic (through an OpenAI-compatible endpoint or gateway that keeps the model ids)
    "claude-opus-4-1-20250805": Price(prompt=15.00, completion=75.00),
    "claude-opus-4-20250514": Price(prompt=15.00, completion=75.00),
    "claude-sonnet-4-20250514": Price(prompt=3.00, completion=15.00),
    "claude-3-7-sonnet-20250219": Price(prompt=3.00, completion=15.00),
    "claude-3-5-haiku-20241022": Price(prompt=0.80, completion=4.00),
    "claude-3-haiku-20240307": Price(prompt=0.25, completion=1.25),
}


def table_price(model: str | None) -> Price | None:
    """The list price of ``model`` in :data:`PRICE_TABLE` (exact name); None when not listed."""
    return None if model is None else PRICE_TABLE.get(model)
