"""Events of a run, for users' logging and monitoring.

A callback is any ``Callable[[Event], None]`` passed as ``GeneticOptimizer(callbacks=[...])`` or,
for one run, as ``optimize(..., callbacks=[...])`` (Ragas' keyword; called after the optimizer's own).
Callbacks run synchronously in the optimizer's event loop, in the order given; an exception in a
callback propagates (a broken logger should be noticed, not ignored).

Kinds and their ``data``:

* ``generation_start`` — ``population`` (ids)
* ``operator_call`` — ``operator``, ``parents`` (ids), ``accepted`` (bool), ``rejected`` (reason or None)
* ``candidate_evaluated`` — ``candidate`` (id), ``split`` (``minibatch``/``train``/``validation``),
  ``score``, ``failures``
* ``generation_end`` — ``best_train``, ``mean_train``, ``judge_calls``, ``meta_calls``
* ``llm_call`` — ``operation``, ``calls`` (LLM calls of the run so far, resumed part included),
  ``bound`` (the cost model's upper bound on the run's calls, never below ``calls``),
  ``prompt_tokens``, ``completion_tokens`` and ``cost_usd`` (USD; 0.0 without prices) of the run
  so far; only emitted when there is a callback
* ``stage_start`` — ``stage`` (``distill``, ``verify``, ``examples``, ``cross_fit``) — the distill-first
  pipeline (``strategy: auto``/``distill``); ``phase``, when the stage says what it does in words
  (small data: ``verify`` cross-validates on the folds instead of judging held-out samples)
* ``stage_end`` — ``stage``, ``candidates`` (the distilled rungs' ids) or ``chosen`` (the verified
  choice's id, after ``verify``), and ``figures``: the stage's record as ``result.json``'s
  ``stages`` holds it (``judge_calls``, ``meta_calls``, ``prompt_tokens``, ``completion_tokens``,
  ``seconds``, ...)
* ``stop`` — ``reason``
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Callback", "Event", "EventBus", "check_callbacks"]


@dataclass(frozen=True)
class Event:
    """Something that happened: ``kind`` (see module docstring), the ``generation`` it happened
    in (0 = initial population) and kind-specific ``data``."""

    kind: str
    generation: int
    data: dict[str, Any] = field(default_factory=dict)


Callback = Callable[[Event], None]


def check_callbacks(callbacks: Sequence[Callback]) -> list[Callback]:
    """``callbacks`` as a list, each a callable taking an
    :class:`~promptevolver.optimizers.events.Event`.

    Raises:
        TypeError: ``callbacks`` is not a sequence of callables (e.g. a LangChain callback
            manager or handler, which Ragas takes here): names what to pass instead.
    """
    if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Sequence):
        raise TypeError(
            f"callbacks must be a list of functions taking an Event, got {type(callbacks).__name__}"
            " (LangChain callback handlers are not supported: wrap one in a function)"
        )
    for index, callback in enumerate(callbacks):
        if not callable(callback):
            raise TypeError(
                f"callbacks[{index}] is a {type(callback).__name__}, not a function taking an Event"
                " (see promptevolver.optimizers.events; LangChain handlers: wrap one in a function)"
            )
    return list(callbacks)


class EventBus:
    """Delivers events to callbacks in order."""

    def __init__(self, callbacks: Sequence[Callback] = ()) -> None:
        self.callbacks = list(callbacks)

    def emit(self, kind: str, generation: int, **data: Any) -> None:
        if not self.callbacks:
            return
        event = Event(kind, generation, data)
        for callback in self.callbacks:
            callback(event)
