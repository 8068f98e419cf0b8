"""Budget: stop before spending more calls, tokens or dollars than the user allowed.

The guard works with upper bounds from the cost model (:mod:`promptevolver.optimizers.cost`):
a step runs only if the calls it may make, plus the calls reserved for the final validation,
fit in what is left. Tokens and cost are projected from the average per call observed so far.
So a run never exceeds ``max_calls``; token and cost bounds hold up to the error of that average.
"""

from __future__ import annotations

from collections.abc import Callable

from promptevolver.config.models import BudgetConfig
from promptevolver.errors import BudgetExceededError
from promptevolver.llm.base import Usage
from promptevolver.optimizers.cost import PhaseCalls

__all__ = ["BudgetGuard", "check_upfront"]


class BudgetGuard:
    """Decides whether the next step fits in the budget.

    Args:
        config: the bounds.
        usage: a function returning the run's usage so far.
    """

    def __init__(self, config: BudgetConfig, usage: Callable[[], Usage]) -> None:
        self.config = config
        self.usage = usage

    def check_upfront(self, calls: PhaseCalls) -> None:
        """Refuse a call budget that cannot pay for the initial population, one generation and
        the final validation.

        Raises:
            BudgetExceededError: with the number of calls needed.
        """
        check_upfront(self.config, calls)

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


def check_upfront(config: BudgetConfig, calls: PhaseCalls) -> None:
    """Raise when ``config.max_calls`` cannot pay for the initial population, one generation and
    the final validation (``optimize`` and ``estimate`` both call this).

    Raises:
        BudgetExceededError: naming the calls each phase needs.
    """
    limit = config.max_calls
    if limit is not None and calls.upfront() > limit:
        raise BudgetExceededError(
            f"budget.max_calls={limit} is too small: the initial population needs up to "
            f"{calls.initial} calls, one generation up to {calls.generation} and the final "
            f"validation up to {calls.final} ({calls.upfront()} in all)"
        )
