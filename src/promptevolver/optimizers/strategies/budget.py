"""Budget: stop before spending more calls, tokens or dollars than the user allowed.

The guard works with upper bounds computed before each step: a step runs only if the calls it
may make, plus the calls reserved for the final validation, fit in what is left. Tokens and cost
are projected from the average per call observed so far. So a run never exceeds ``max_calls``;
token and cost bounds hold up to the error of that average.
"""

from __future__ import annotations

from collections.abc import Callable

from promptevolver.config.models import BudgetConfig
from promptevolver.errors import BudgetExceededError
from promptevolver.llm.base import Usage

__all__ = ["BudgetGuard"]


class BudgetGuard:
    """Decides whether the next step fits in the budget.

    Args:
        config: the bounds.
        usage: a function returning the run's usage so far.
    """

    def __init__(self, config: BudgetConfig, usage: Callable[[], Usage]) -> None:
        self.config = config
        self.usage = usage

    def check_upfront(self, *, initial_calls: int, generation_calls: int, final_calls: int) -> None:
        """Refuse a call budget that cannot pay for the initial population, one generation and
        the final validation.

        Raises:
            BudgetExceededError: with the number of calls needed.
        """
        needed = initial_calls + generation_calls + final_calls
        limit = self.config.max_calls
        if limit is not None and needed > limit:
            raise BudgetExceededError(
                f"budget.max_calls={limit} is too small: the initial population needs up to "
                f"{initial_calls} calls, one generation up to {generation_calls} and the final "
                f"validation up to {final_calls} ({needed} in all)"
            )

    def allows(self, calls: int, *, reserve: int) -> bool:
        """True when ``calls`` more (plus ``reserve`` held back) fit every bound."""
        used = self.usage()
        total = used.total_calls
        projected = calls + reserve
        if self.config.max_calls is not None and total + projected > self.config.max_calls:
            return False
        per_call_tokens = (used.prompt_tokens + used.completion_tokens) / total if total else 0.0
        tokens = used.prompt_tokens + used.completion_tokens
        if (
            self.config.max_tokens is not None
            and tokens + projected * per_call_tokens > self.config.max_tokens
        ):
            return False
        cost = float(getattr(used, "cost_usd", 0.0) or 0.0)
        per_call_cost = cost / total if total else 0.0
        return not (
            self.config.max_cost_usd is not None
            and cost + projected * per_call_cost > self.config.max_cost_usd
        )
