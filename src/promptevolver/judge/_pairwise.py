"""A pairwise judge: which of two responses to one input is better (a / b / tie, or "is a better").

:class:`PairwiseJudge` shows the input (``user_input``, optional ``reference`` and contexts) and
two responses, ``response_a`` and ``response_b``, and answers ``{"reason": ..., "verdict": "a"}``.
The annotations hold the verdict as a number (the label space of
:data:`~promptevolver.annotations._labels.PAIRWISE`): 1 = a better, 0 = b better, 0.5 = a tie —
the preference for a, as paired comparisons score a win, a loss and a draw. Without ties
(``ties=False``) it answers only ``a`` or ``b``: a binary metric, "is response a better" (1 / 0),
optimized with accuracy or F1 like an aspect critic; with ties it is nominal (three classes),
optimized with :class:`~promptevolver.evaluation._losses.ClassificationLoss`.

**Order swap** (``order_swap=True``): LLM judges prefer a position (LLMBar's ChatGPT named the same
winner in both orders on 58.9 % of its pairs). Each evaluation then asks twice, a first and then b
first (two calls), maps the second verdict back to a / b, and records both in
``Judgement.details["order_swap"]`` (``a_first``, ``b_first``, ``consistent``). The verdict is the
one both orders give; when they differ it is a tie (with ties: the usual reading of an
inconsistent pair), or the a-first verdict without ties.
:func:`~promptevolver.evaluation._agreement.order_swap_bias` gives position consistency and
first-position preference from those details.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from promptevolver.annotations import PAIRWISE, PAIRWISE_BINARY
from promptevolver.errors import AnnotationError
from promptevolver.judge._classification import NamedLabelJudge, named_output_model
from promptevolver.judge._prompt_set import JudgeOptions, pick_inputs
from promptevolver.judge._prompts import Prompt
from promptevolver.judge._protocol import Judgement, JudgeRequest

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11 on

__all__ = ["ORDER_SWAP", "PairwiseJudge", "swapped"]

#: Key of ``Judgement.details`` holding both orders' verdicts of an order-swapped evaluation.
ORDER_SWAP = "order_swap"

SEED_TEMPLATE = (
    "Compare two responses to the same input, response_a and response_b, and decide which is "
    "better.\nCriteria Definition: {definition}\n{choice}"
)
WITH_TIES = (
    "Answer 'a' when response_a is better, 'b' when response_b is better, 'tie' when they are equally good."
)
WITHOUT_TIES = "Answer 'a' when response_a is better, else 'b'."


def swapped(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` with ``response_a`` and ``response_b`` exchanged (other fields as they are)."""
    out = dict(inputs)
    out["response_a"], out["response_b"] = inputs["response_b"], inputs["response_a"]
    return out


class PairwiseJudge(NamedLabelJudge):
    """A judge of which of two responses is better (see the module docstring).

    Args:
        name: the metric's name (the key of its annotations).
        definition: what "better" means, in plain words; the seed instruction embeds it.
        ties: answer a / b / tie (a nominal metric) or only a / b (binary: is a better).
        order_swap: judge both orders (two calls an evaluation; see the module docstring).
        prompt_name: the name of the judge's prompt (default :attr:`PROMPT_NAME`): the key under
            which the annotation file keeps its traces.
        llm, max_reasks, temperature: see :class:`~promptevolver.judge._prompt_set.PromptSet`.

    Raises:
        ValueError: an empty name, definition or prompt name, or ``max_reasks`` < 0.
    """

    PROMPT_NAME = "pairwise_comparison_prompt"
    REQUIRED_FIELDS = ("user_input", "response_a", "response_b")
    OPTIONAL_FIELDS = ("reference", "retrieved_contexts", "reference_contexts")

    def __init__(
        self,
        *,
        name: str,
        definition: str,
        ties: bool = True,
        order_swap: bool = False,
        prompt_name: str = PROMPT_NAME,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(name=name, definition=definition, **options)
        if not prompt_name.strip():
            raise ValueError("prompt_name must not be empty")
        self.ties, self.order_swap = ties, order_swap
        self.label_scale = PAIRWISE if ties else PAIRWISE_BINARY
        names = ("a", "b", "tie") if ties else ("a", "b")
        about = "The better response: " + ("a, b or tie" if ties else "a or b")
        model = named_output_model(self.LABEL_FIELD, names, about)
        seed = SEED_TEMPLATE.format(definition=definition, choice=WITH_TIES if ties else WITHOUT_TIES)
        self._prompts: dict[str, Prompt[Any]] = {prompt_name: Prompt(prompt_name, seed, model)}

    def __repr__(self) -> str:
        return f"PairwiseJudge(name={self.name!r}, ties={self.ties}, order_swap={self.order_swap})"

    def prompt_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """``user_input``, both responses and the present optional fields. A response may be
        empty (a model that answered nothing loses to one that answered), but must be there.

        Raises:
            AnnotationError: ``user_input`` missing or empty, or a response missing (names
                ``metric_input.<field>``).
        """
        for field in ("response_a", "response_b"):
            if inputs.get(field) is None:
                raise AnnotationError(f"{self.name} needs {field!r}", field=f"metric_input.{field}")
        shown = pick_inputs(self.name, inputs, ("user_input",), self.OPTIONAL_FIELDS)
        return {
            "user_input": shown.pop("user_input"),
            "response_a": inputs["response_a"],
            "response_b": inputs["response_b"],
            **shown,
        }

    @property
    def calls_per_evaluation(self) -> int:
        """Two with ``order_swap`` (both orders), else one."""
        return 2 if self.order_swap else 1

    async def _ajudge(self, inputs: Mapping[str, Any], request: JudgeRequest) -> Judgement:
        if not self.order_swap:
            return await super()._ajudge(inputs, request)
        first = await super()._ajudge(inputs, request)
        if first.failed:
            return first
        second = await super()._ajudge(swapped(inputs), request)
        if second.failed:
            return second
        assert first.score is not None and second.score is not None
        back = 1.0 - second.score  # b shown first: its "a" is our b (a tie stays 0.5)
        consistent = back == first.score
        score = first.score if consistent or not self.ties else 0.5
        details = {
            ORDER_SWAP: {
                "a_first": self.shown_label(first.score),
                "b_first": self.shown_label(back),
                "consistent": consistent,
            }
        }
        reason = first.reason if consistent else f"{first.reason} (the other order: {second.reason})"
        return Judgement(score=score, reason=reason, raw=first.raw, details=details)
