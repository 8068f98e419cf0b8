"""A metric with two prompts: a statement extractor feeding a per-statement verifier.

:class:`StatementSupport` scores a response as the fraction of its statements that the
retrieved contexts support, as Ragas' ``Faithfulness``: the **extractor**
(``statement_generator_prompt``) breaks the response into self-contained statements; the
**verifier** (``n_l_i_statement_prompt``) gives each statement a verdict (1 = supported, 0 = not)
with a reason, in one call for all of them. The score is supported / statements, in [0, 1].
Prompt names, input fields (``question``/``answer``, ``context``/``statements``) and output
fields are Ragas', so Ragas faithfulness annotations are read as they are; both instructions are
what an optimizer rewrites (a candidate maps each prompt name to its instruction).

One evaluation makes two LLM calls (plus re-asks): a malformed answer, or a verifier answer whose
verdict count differs from the statements it was given, is re-asked, then the evaluation fails
naming the prompt. An extraction with no statement leaves the fraction undefined (Ragas gives NaN):
a failed evaluation with cause ``parse``, never a score. ``Judgement.details["outputs"]`` holds each
prompt's parsed output (see :class:`~promptevolver.judge._protocol.Judgement`), so an optimizer can
tell which prompt a disagreement comes from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from promptevolver.annotations import LabelScale, SampleAnnotation
from promptevolver.judge._asking import UnusableAnswer, output_dict
from promptevolver.judge._prompt_set import JudgeOptions, PromptSet
from promptevolver.judge._prompts import Prompt
from promptevolver.judge._protocol import OUTPUTS, Judgement, JudgeRequest

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11 on

__all__ = ["StatementSupport", "StatementVerdict", "Statements", "Verdicts"]


class Statements(BaseModel):
    """The extractor's answer: the response as self-contained statements."""

    statements: list[str] = Field(description="The generated statements")


class StatementVerdict(BaseModel):
    """The verifier's verdict on one statement."""

    statement: str = Field(description="the original statement, word-by-word")
    reason: str = Field(description="the reason of the verdict")
    verdict: Literal[0, 1] = Field(description="the verdict (0/1) of the faithfulness")


class Verdicts(BaseModel):
    """The verifier's answer: one verdict per statement, in the order given."""

    statements: list[StatementVerdict]


EXTRACTOR_SEED = (
    "Given a question and an answer, analyze the complexity of each sentence in the answer. Break down "
    "each sentence into one or more fully understandable statements. Ensure that no pronouns are used in "
    "any statement."
)
VERIFIER_SEED = (
    "Your task is to judge a series of statements against a given context. For each statement, return it "
    "word for word with a reason and verdict 1 if it meets the criterion below, 0 if it does not.\n"
    "Criteria Definition: {definition}"
)
DEFAULT_DEFINITION = "the statement can be directly inferred from the context."


class StatementSupport(PromptSet):
    """Fraction of a response's statements supported by its contexts (see the module docstring).

    Args:
        name: the metric's name (the key of its annotations), e.g. ``faithfulness``.
        definition: when a statement counts as supported; the verifier's seed instruction embeds it.
        llm, max_reasks, temperature: the judge's client, re-asks of a malformed answer and
            sampling temperature (:class:`~promptevolver.judge._prompt_set.PromptSet`).

    Raises:
        ValueError: an empty name or definition, or ``max_reasks`` < 0.
    """

    EXTRACTOR = "statement_generator_prompt"
    VERIFIER = "n_l_i_statement_prompt"
    #: A supported fraction: a run checks that every annotation's value lies in [0, 1].
    label_scale = LabelScale("numeric", 0.0, 1.0)
    REQUIRED_FIELDS = ("user_input", "response", "retrieved_contexts")
    OPTIONAL_FIELDS = ()

    def __init__(
        self,
        *,
        name: str = "faithfulness",
        definition: str = DEFAULT_DEFINITION,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(name=name, definition=definition, **options)
        verifier = VERIFIER_SEED.format(definition=definition)
        self._prompts: dict[str, Prompt[Any]] = {
            self.EXTRACTOR: Prompt(self.EXTRACTOR, EXTRACTOR_SEED, Statements),
            self.VERIFIER: Prompt(self.VERIFIER, verifier, Verdicts),
        }

    def __repr__(self) -> str:
        return f"StatementSupport(name={self.name!r}, definition={self.definition!r})"

    def shows_examples(self) -> bool:
        """Both prompts show teaching examples (:meth:`demonstrations_for`)."""
        return True

    def demonstrations_for(
        self, prompt_name: str, examples: Sequence[SampleAnnotation]
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Teaching examples for prompt ``prompt_name``, as Ragas' per-prompt examples: per
        annotated sample, that prompt's inputs (the annotation's recorded ``prompt_input``, else
        made from the sample's fields and, for the verifier, its approved statements) and the
        human-approved output of that prompt (edited, else accepted), restricted to the prompt's
        output fields. A sample with no approved output for the prompt is left out.

        Raises:
            KeyError: ``prompt_name`` is not one of the two prompts.
            AnnotationError: an example without a recorded input misses a required field.
        """
        prompt = self._prompts[prompt_name]
        fields_out = set(prompt.output_model.model_fields)
        out = []
        for sample in examples:
            expected = sample.expected_output(prompt_name)
            if not expected:
                continue
            shown = {k: v for k, v in expected.items() if k in fields_out}
            recorded = sample.prompts.get(prompt_name)
            inputs = dict(recorded.prompt_input) if recorded is not None and recorded.prompt_input else None
            if inputs is None:
                fields = self.prompt_inputs(sample.metric_input)
                if prompt_name == self.EXTRACTOR:
                    inputs = self.extractor_inputs(fields)
                else:
                    statements = [
                        s.get("statement", "") for s in shown.get("statements", []) if isinstance(s, dict)
                    ]
                    inputs = self.verifier_inputs(fields, statements)
            out.append((inputs, shown))
        return out

    @staticmethod
    def extractor_inputs(fields: Mapping[str, Any]) -> dict[str, Any]:
        """The extractor's inputs (Ragas' names) from the metric's fields."""
        return {"question": fields["user_input"], "answer": fields["response"]}

    @staticmethod
    def verifier_inputs(fields: Mapping[str, Any], statements: Sequence[str]) -> dict[str, Any]:
        """The verifier's inputs (Ragas' names): the contexts joined by newlines, the statements."""
        contexts = fields["retrieved_contexts"]
        context = contexts if isinstance(contexts, str) else "\n".join(str(c) for c in contexts)
        return {"context": context, "statements": list(statements)}

    async def _ajudge(self, inputs: Mapping[str, Any], request: JudgeRequest) -> Judgement:
        """Extract the statements, verify them, and score the supported fraction; each prompt is
        shown the teaching examples its own way (:meth:`demonstrations_for`).

        Returns a :class:`Judgement` with ``score`` in [0, 1], a ``reason`` naming the unsupported
        statements with the verifier's reasons, and ``details``::

            {"outputs": {"statement_generator_prompt": {"statements": [...]},
                         "n_l_i_statement_prompt": {"statements": [{"statement", "reason", "verdict"}]}},
             "statements": 4, "supported": 3}

        Both calls send the request's ``sample_index`` (re-asks add their attempt number). A
        failed call or an unusable answer of either prompt is a failed :class:`Judgement` whose
        error names the prompt (:meth:`~promptevolver.judge._protocol.Judge.ajudge`).
        """
        fields = self.prompt_inputs(inputs)
        examples = request.examples or ()
        extractor = self.prompt_for(self.EXTRACTOR, request.instructions)
        shown = self.demonstrations_for(self.EXTRACTOR, examples)
        extracted = await self.ask(extractor, extractor.render(self.extractor_inputs(fields), shown), request)
        if extracted.output is None:
            return extracted.failure(f"{self.EXTRACTOR}: ")
        statements = [s for s in extracted.output.statements if s.strip()]
        outputs: dict[str, Any] = {self.EXTRACTOR: output_dict(extracted.output)}
        if not statements:
            error = f"{self.EXTRACTOR}: no statements extracted, the supported fraction is undefined"
            empty = {OUTPUTS: outputs}
            return Judgement(score=None, raw=extracted.raw, error=error, cause="parse", details=empty)
        verifier = self.prompt_for(self.VERIFIER, request.instructions)
        shown = self.demonstrations_for(self.VERIFIER, examples)
        messages = verifier.render(self.verifier_inputs(fields, statements), shown)
        verified = await self.ask(verifier, messages, request, check=_one_verdict_each(len(statements)))
        if verified.output is None:
            return verified.failure(f"{self.VERIFIER}: ")
        outputs[self.VERIFIER] = output_dict(verified.output)
        verdicts = verified.output.statements
        supported = sum(v.verdict for v in verdicts)
        details: dict[str, Any] = {OUTPUTS: outputs, "statements": len(verdicts), "supported": supported}
        return Judgement(
            score=supported / len(verdicts), reason=_reason(verdicts), raw=verified.raw, details=details
        )


def _one_verdict_each(n: int) -> Any:
    def check(output: Verdicts) -> None:
        if len(output.statements) != n:
            raise UnusableAnswer(f"expected {n} verdicts, one per statement, got {len(output.statements)}")

    return check


def _reason(verdicts: Sequence[StatementVerdict]) -> str:
    """``k of n statements supported`` and, for each unsupported one, the statement and why."""
    supported = sum(v.verdict for v in verdicts)
    unsupported = [f"{v.statement!r}: {v.reason}" for v in verdicts if not v.verdict]
    head = f"{supported} of {len(verdicts)} statements supported"
    return head + (f"; not supported: {'; '.join(unsupported)}" if unsupported else ".")
