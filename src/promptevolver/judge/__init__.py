"""Judges: prompts, the :class:`Metric` protocol, :class:`AspectCritic` (binary),
:class:`RubricJudge` (a score on a scale), :class:`PairwiseJudge` (which of two responses is better:
a / b / tie, with an optional order-swap check), :class:`ClassificationJudge` (one of named
classes), :class:`StatementSupport` (two prompts: statements, then their verdicts),
:class:`JudgeEnsemble`; :func:`label_scale_of` (what labels a human can give) and
:func:`label_target_of` (where a human's label goes in an annotation sample)."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.judge._asking import UnusableAnswer as UnusableAnswer
    from promptevolver.judge._aspect_critic import AspectCritic as AspectCritic
    from promptevolver.judge._aspect_critic import AspectCriticOutput as AspectCriticOutput
    from promptevolver.judge._batch import gather_or_cancel as gather_or_cancel
    from promptevolver.judge._classification import ClassificationJudge as ClassificationJudge
    from promptevolver.judge._ensemble import EvaluationItem as EvaluationItem
    from promptevolver.judge._ensemble import JudgeEnsemble as JudgeEnsemble
    from promptevolver.judge._examples import ExampleStore as ExampleStore
    from promptevolver.judge._examples import prepare_store as prepare_store
    from promptevolver.judge._examples import sample_text as sample_text
    from promptevolver.judge._examples import static_policy as static_policy
    from promptevolver.judge._examples import static_positions as static_positions
    from promptevolver.judge._pairwise import ORDER_SWAP as ORDER_SWAP
    from promptevolver.judge._pairwise import PairwiseJudge as PairwiseJudge
    from promptevolver.judge._prompt_set import PromptSet as PromptSet
    from promptevolver.judge._prompts import ANSWER as ANSWER
    from promptevolver.judge._prompts import CROSSOVER_PARENT_A as CROSSOVER_PARENT_A
    from promptevolver.judge._prompts import CROSSOVER_PARENT_B as CROSSOVER_PARENT_B
    from promptevolver.judge._prompts import CURRENT_INSTRUCTION as CURRENT_INSTRUCTION
    from promptevolver.judge._prompts import EXAMPLES as EXAMPLES
    from promptevolver.judge._prompts import FAILING_SAMPLES as FAILING_SAMPLES
    from promptevolver.judge._prompts import FEEDBACK_TO_APPLY as FEEDBACK_TO_APPLY
    from promptevolver.judge._prompts import PASSING_SAMPLES as PASSING_SAMPLES
    from promptevolver.judge._prompts import Prompt as Prompt
    from promptevolver.judge._prompts import extract_json_object as extract_json_object
    from promptevolver.judge._prompts import rendered_examples as rendered_examples
    from promptevolver.judge._prompts import split_rendered as split_rendered
    from promptevolver.judge._protocol import Judgement as Judgement
    from promptevolver.judge._protocol import Metric as Metric
    from promptevolver.judge._protocol import label_entry as label_entry
    from promptevolver.judge._protocol import label_scale_of as label_scale_of
    from promptevolver.judge._protocol import label_target_of as label_target_of
    from promptevolver.judge._protocol import refuse_ragas_object as refuse_ragas_object
    from promptevolver.judge._rubric import RubricJudge as RubricJudge
    from promptevolver.judge._statements import StatementSupport as StatementSupport

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.judge._aspect_critic": "*",
        "promptevolver.judge._classification": ["ClassificationJudge"],
        "promptevolver.judge._pairwise": ["ORDER_SWAP", "PairwiseJudge"],
        "promptevolver.judge._protocol": [
            "Judgement",
            "Metric",
            "label_entry",
            "label_scale_of",
            "label_target_of",
            "refuse_ragas_object",
        ],
        "promptevolver.judge._ensemble": ["EvaluationItem", "JudgeEnsemble"],
        "promptevolver.judge._prompts": "*",
        "promptevolver.judge._rubric": ["RubricJudge"],
        "promptevolver.judge._statements": ["StatementSupport"],
        "promptevolver.judge._examples": [
            "ExampleStore",
            "prepare_store",
            "sample_text",
            "static_policy",
            "static_positions",
        ],
        "promptevolver.judge._asking": ["UnusableAnswer"],
        "promptevolver.judge._prompt_set": ["PromptSet"],
        "promptevolver.judge._batch": ["gather_or_cancel"],
    },
)
