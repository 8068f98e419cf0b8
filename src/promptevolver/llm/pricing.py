"""What an LLM call costs: a model's price per million tokens.

Providers bill prompt (input) and completion (output) tokens at separate rates, quoted in US
dollars per one million tokens (the unit of OpenAI's and most providers' price pages). A client
given a :class:`Price` adds each answered call's cost to ``usage.cost_usd``; cache hits and failed
attempts cost nothing here (a provider may still bill a failed attempt's prompt — we cannot see
that, so budgets on cost are as good as the provider's usage report).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["TOKENS_PER_PRICE_UNIT", "Price", "price_for"]

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
