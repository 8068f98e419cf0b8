"""Budget: never spend more calls, tokens or dollars than the user allowed.

Three layers, from coarse to exact:

* :func:`check_upfront` refuses, before any call, a call budget that cannot pay for the seed's
  evaluation and the final choice (the cost model, :mod:`promptevolver.optimizers._cost`);
  :func:`check_prices` refuses a cost bound without prices; :func:`reserve_upfront` refuses a
  token or cost budget that cannot pay for them either (each judge call estimated from the seed's
  prompt on a train sample) and holds them back before the first call: meta calls (reverse
  engineering, feedback) can never eat the seed's evaluation. From then on the run never stops
  without a result: a budget reached at any point (even during the seed's evaluation, when the
  estimate was low) ends the search with the best so far, ``stop_reason: budget``;
* :class:`BudgetMeter` decides before each step whether it may start (:meth:`BudgetMeter.allows`:
  when the budget has room beyond the final choice's reserve, not the step's upper bound, which
  stopped a budget of what a run needs at 30 % of it; tokens and cost at the average call so
  far), checks every request as it is sent, against what was spent and what is in flight, and
  holds back the final choice's reserve: the bound holds for the whole run, exceeded by at most
  the estimation error of the requests in flight when it is reached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from promptevolver.annotations import SampleAnnotation
from promptevolver.config import BudgetConfig
from promptevolver.errors import BudgetExceededError, ConfigError, NotSentError
from promptevolver.judge import Metric
from promptevolver.llm import (
    JUDGE_OPERATION,
    ClientWrapper,
    Completion,
    LLMClient,
    LLMRequest,
    Usage,
    estimate_tokens,
    found_in_stack,
)
from promptevolver.llm.pricing import Price
from promptevolver.optimizers._cost import PhaseCalls

if TYPE_CHECKING:
    from promptevolver.optimizers._candidates import Candidate

__all__ = [
    "BudgetView",
    "BudgetMeter",
    "BudgetSpentError",
    "Spend",
    "check_prices",
    "check_upfront",
    "after_seed",
    "calibrate_reserve",
    "judge_call_spend",
    "price_of",
    "reserve_upfront",
]


def check_upfront(config: BudgetConfig, calls: PhaseCalls) -> None:
    """Raise when ``config.max_calls`` cannot pay for the calls every run makes: the seed's train
    evaluation and the final choice (``optimize`` and ``estimate`` both call this). A budget
    between that and :meth:`PhaseCalls.upfront` runs and stops on ``budget`` with the best so far.

    Raises:
        BudgetExceededError: naming the calls each phase needs.
    """
    limit = config.max_calls
    if limit is not None and calls.minimum() > limit:
        raise BudgetExceededError(
            f"budget.max_calls={limit} is too small: the seed's train evaluation needs "
            f"{calls.seed} calls and the final validation up to {calls.final} ({calls.minimum()} "
            f"in all; the initial population and one generation need up to {calls.upfront()})"
        )


class BudgetSpentError(NotSentError):
    """A request the budget cannot pay for was not sent (cause ``budget``)."""

    @property
    def cause(self) -> str:
        return "budget"


class BudgetMeter:
    """Checks every request against the budget before it is sent (wraps the run's clients).

    A request is sent only if the run's usage so far, plus the estimated cost of the requests in
    flight, plus this request's estimate, leaves the ``reserve`` (what the final choice needs)
    untouched; otherwise it raises :class:`BudgetSpentError` without a call and :attr:`spent`
    turns True, so the search stops with the best so far. :meth:`release_reserve` before the
    final choice lets it use the reserve. Estimates per request: calls 1; tokens ⌈characters/4⌉
    of the messages plus ``max_tokens`` when set, or else the largest completion seen for that
    operation (256 before any); cost from the client's price. So a bound is exceeded by at most
    the estimation error of the requests in flight when it is reached.

    Args:
        config: the bounds.
        usage: a function returning the run's usage so far.
    """

    def __init__(self, config: BudgetConfig, usage: Callable[[], Usage]) -> None:
        self.config = config
        self.usage = usage
        self.reserve = Spend()
        #: While True (the seed's evaluation), judge requests may use :attr:`reserve`: it holds
        #: their spend; meta requests may not.
        self.seed_phase = False
        self.spent = False
        #: The bound that refused a request (``max_tokens=N``...), once one did.
        self.refused_by: str | None = None
        self._in_flight = Spend()
        self._largest_completion: dict[str, int] = {}

    @property
    def active(self) -> bool:
        c = self.config
        return c.max_calls is not None or c.max_tokens is not None or c.max_cost_usd is not None

    def allows(self, calls: int, *, reserve: int) -> bool:
        """True when one more step (at most ``calls`` calls) can start: the budget has room for a
        call beyond ``reserve`` (calls held back for the final choice), in calls, and in tokens
        and cost at the average call so far. The step is not projected at its upper bound (a
        generation's bound is often ten times what it spends, and a budget of what a run needs
        stopped it at 30 %): the :class:`BudgetMeter` cuts the step where the budget ends, and
        the search stops there with the best so far (a candidate whose evaluation was cut short
        ranks after those measured well enough)."""
        used = self.usage()
        total = used.total_calls
        projected = min(calls, 1) + reserve
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

    def calibrate_reserve(self, final_calls: int, judge_calls: int, judge_spend: Spend) -> None:
        """Size the reserve from what ``judge_calls`` judge calls actually cost (``judge_spend``):
        ``final_calls`` such calls, plus a fifth for the spread between calls."""
        if judge_calls > 0:
            per_call = 1.2 / judge_calls
            self.reserve = Spend(
                final_calls,
                int(final_calls * judge_spend.tokens * per_call),
                final_calls * judge_spend.cost_usd * per_call,
            )

    def release_reserve(self) -> None:
        """Let the next requests (the final choice) use the reserve."""
        self.reserve = Spend()

    def wrap(self, client: LLMClient) -> LLMClient:
        """``client`` behind this meter (a no-op wrapper when the budget has no bound)."""
        return _Metered(client, self, price_of(client)) if self.active else client

    def estimate(self, request: LLMRequest, price: Price | None) -> Spend:
        """The spend to book for ``request`` before it is sent."""
        completion = request.max_tokens or self._largest_completion.get(request.operation, 256)
        prompt = estimate_tokens((m.content for m in request.messages), None)
        cost = 0.0 if price is None else price.cost_usd(prompt_tokens=prompt, completion_tokens=completion)
        return Spend(calls=1, tokens=prompt + completion, cost_usd=cost)

    def book(self, spend: Spend, operation: str) -> None:
        """Book ``spend`` for a request about to be sent.

        Raises:
            BudgetSpentError: it does not fit (nothing booked; :attr:`spent` becomes True).
        """
        used = self.usage()
        held = Spend() if self.seed_phase and operation == JUDGE_OPERATION else self.reserve
        total = Spend(used.total_calls, used.total_tokens, used.cost_usd) + self._in_flight + spend + held
        over = total.over(self.config)
        if over:
            self.spent, self.refused_by = True, over
            raise BudgetSpentError(f"budget.{over} is spent (the request for {operation} was not sent)")
        self._in_flight = self._in_flight + spend

    def settle(self, spend: Spend, operation: str, completion: Completion | None) -> None:
        """The request booked with ``spend`` is done (``completion`` None: it failed)."""
        self._in_flight = self._in_flight - spend
        if completion is not None:
            largest = self._largest_completion.get(operation, 0)
            self._largest_completion[operation] = max(largest, completion.completion_tokens)


@dataclass(frozen=True)
class Spend:
    """An amount of budget: LLM calls, tokens (prompt + completion) and US dollars."""

    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.calls + other.calls, self.tokens + other.tokens, self.cost_usd + other.cost_usd)

    def __sub__(self, other: Spend) -> Spend:
        return Spend(self.calls - other.calls, self.tokens - other.tokens, self.cost_usd - other.cost_usd)

    def over(self, config: BudgetConfig) -> str | None:
        """The first bound of ``config`` this amount exceeds (``max_calls=N``...), or None."""
        if config.max_calls is not None and self.calls > config.max_calls:
            return f"max_calls={config.max_calls}"
        if config.max_tokens is not None and self.tokens > config.max_tokens:
            return f"max_tokens={config.max_tokens}"
        if config.max_cost_usd is not None and self.cost_usd > config.max_cost_usd:
            return f"max_cost_usd={config.max_cost_usd:g}"
        return None


class _Metered(ClientWrapper):
    def __init__(self, inner: LLMClient, meter: BudgetMeter, price: Price | None) -> None:
        super().__init__(inner)
        self.meter = meter
        self.price = price

    async def complete(self, request: LLMRequest) -> Completion:
        spend = self.meter.estimate(request, self.price)
        self.meter.book(spend, request.operation)
        completion = None
        try:
            completion = await self.inner.complete(request)
            return completion
        finally:
            self.meter.settle(spend, request.operation, completion)


def price_of(client: Any) -> Price | None:
    """The price of ``client`` or of the client it wraps (None: unpriced)."""
    return found_in_stack(client, "price", Price)


def check_prices(config: BudgetConfig, clients: Sequence[LLMClient]) -> None:
    """Refuse a cost bound that cannot be enforced: every client must have a price.

    Raises:
        ConfigError: ``max_cost_usd`` is set and a client has no price.
    """
    if config.max_cost_usd is None:
        return
    for client in clients:
        if price_of(client) is None:
            raise ConfigError(
                f"budget.max_cost_usd={config.max_cost_usd:g} needs a price for every LLM, but "
                f"{type(client).__name__} has none: set llm.prices (USD per 1M tokens) for its model"
            )


# --- the run's budget checks (sized from what its calls cost) ---------------------------------------


@dataclass(frozen=True)
class BudgetView:
    """What the run's budget checks read, and the meter they set (built by
    :func:`~promptevolver.optimizers._views.budget_view`).

    Attributes:
        config: the budget; meter: the run's :class:`BudgetMeter` (its reserve is set here).
        calls: the cost model's upper bounds on each phase's calls.
        usage: the run's usage so far.
        judged_final: judge calls of the final choice made already (the seed's validation
            evaluation, when it was judged with the seed).
        metric: the judge; sample: the first train sample (a judge call's estimate renders the
            judge's prompts on it; None when train is empty).
        price: the judge client's price (None: none known).
    """

    config: BudgetConfig
    meter: BudgetMeter
    calls: PhaseCalls
    usage: Callable[[], Usage]
    judged_final: int
    metric: Metric
    sample: SampleAnnotation | None
    price: Price | None


def calibrate_reserve(view: BudgetView) -> Spend:
    """Hold back the final choice's share of the budget, sized from the judge calls so far
    (their average tokens and cost); returns what the judge calls so far cost."""
    used = view.usage()
    judge = Spend(
        used.judge_calls,
        used.prompt_tokens_by_operation.get("judge", 0) + used.completion_tokens_by_operation.get("judge", 0),
        used.cost_usd_by_operation.get("judge", 0.0),
    )
    remaining = view.calls.final - view.judged_final
    view.meter.calibrate_reserve(max(0, remaining), used.judge_calls, judge)
    return judge


#: How far the up-front estimate of a judge call's tokens may be above the provider's count (a
#: tokenizer counts fewer tokens than ⌈characters / 4⌉ on some text): a token or cost budget is
#: refused before any call only when it cannot pay for the seed's evaluation and the final choice
#: even at ``1 / ESTIMATE_SLACK`` of the estimate.
ESTIMATE_SLACK = 2.0
#: The most of a token or cost bound held back up front (the estimate may be high; the reserve is
#: re-sized from measured calls after the seed's evaluation).
MAX_UPFRONT_SHARE = 0.9


def reserve_upfront(view: BudgetView) -> None:
    """Before the first call: refuse a budget that cannot pay for the seed's evaluation and the
    final choice (``view.calls.minimum()`` judge calls, each estimated from its prompt,
    :func:`judge_call_spend` without completion tokens), and hold them back from every other
    request until the seed is evaluated (:attr:`BudgetMeter.seed_phase`): at most
    :data:`MAX_UPFRONT_SHARE` of a token or cost bound.

    Raises:
        BudgetExceededError: the budget cannot pay even at ``1 / ESTIMATE_SLACK`` of the estimate
            (naming the bound, the calls and their estimated tokens and cost).
    """
    if not view.meter.active:
        return
    per_call = judge_call_spend(view, completion_tokens=0)
    n = view.calls.minimum()
    need = Spend(n, n * per_call.tokens, n * per_call.cost_usd)
    surely = Spend(n, int(need.tokens / ESTIMATE_SLACK), need.cost_usd / ESTIMATE_SLACK)
    over = surely.over(view.config)
    if over:
        raise BudgetExceededError(
            f"budget.{over} cannot pay for the seed's evaluation and the final choice: {view.calls.seed} "
            f"+ {view.calls.final} judge calls of about {per_call.tokens} prompt tokens "
            f"(${per_call.cost_usd:.6f}) each, about {need.tokens} tokens (${need.cost_usd:.6f}) in all"
        )
    config = view.config
    tokens = (
        need.tokens
        if config.max_tokens is None
        else min(need.tokens, int(MAX_UPFRONT_SHARE * config.max_tokens))
    )
    cost = (
        need.cost_usd
        if config.max_cost_usd is None
        else min(need.cost_usd, MAX_UPFRONT_SHARE * config.max_cost_usd)
    )
    view.meter.reserve, view.meter.seed_phase = Spend(n, tokens, cost), True


def after_seed(view: BudgetView, seed: Candidate) -> None:
    """Hold back the final choice's share, sized from the seed's evaluation. When the budget
    cannot pay for it (the up-front estimate was low) or refused part of the seed's evaluation,
    the search stops here on ``budget`` (the meter is marked spent): the final choice gets what is
    left, and the run still ends with a result."""
    view.meter.seed_phase = False
    calibrate_reserve(view)
    assert seed.train is not None
    used = view.usage()
    spent = Spend(used.total_calls, used.total_tokens, used.cost_usd)
    over = (spent + view.meter.reserve).over(view.config)
    if over:
        view.meter.spent, view.meter.refused_by = True, view.meter.refused_by or over


def judge_call_spend(view: BudgetView, *, completion_tokens: int = 256) -> Spend:
    """Estimated spend of one judge call: the seed's prompts rendered on the first train sample
    (⌈characters / 4⌉ tokens) and ``completion_tokens`` of answer."""
    if view.sample is None:
        raise IndexError("no train sample to estimate a judge call on")
    inputs = view.metric.prompt_inputs(view.sample.metric_input)
    chars = sum(len(m.content) for p in view.metric.get_prompts().values() for m in p.render(inputs))
    prompt = -(-chars // 4)
    price = view.price
    cost = 0.0 if price is None else price.cost_usd(prompt_tokens=prompt, completion_tokens=completion_tokens)
    return Spend(calls=1, tokens=prompt + completion_tokens, cost_usd=cost)
