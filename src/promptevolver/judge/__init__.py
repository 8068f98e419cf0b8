"""Judges: prompts, the :class:`Metric` protocol, :class:`AspectCritic` (binary),
:class:`RubricJudge` (a score on a scale), :class:`PairwiseJudge` (which of two responses is better:
a / b / tie, with an optional order-swap check), :class:`ClassificationJudge` (one of named
classes), :class:`StatementSupport` (two prompts: statements, then their verdicts),
:class:`JudgeEnsemble`; :func:`label_scale_of` (what labels a human can give)."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.judge._aspect_critic import AspectCritic as AspectCritic
    from promptevolver.judge._aspect_critic import AspectCriticOutput as AspectCriticOutput
    from promptevolver.judge._classification import ClassificationJudge as ClassificationJudge
    from promptevolver.judge._ensemble import EvaluationItem as EvaluationItem
    from promptevolver.judge._ensemble import JudgeEnsemble as JudgeEnsemble
    from promptevolver.judge._pairwise import PairwiseJudge as PairwiseJudge
    from promptevolver.judge._prompts import Prompt as Prompt
    from promptevolver.judge._protocol import Judgement as Judgement
    from promptevolver.judge._protocol import Metric as Metric
    from promptevolver.judge._protocol import label_scale_of as label_scale_of
    from promptevolver.judge._rubric import RubricJudge as RubricJudge
    from promptevolver.judge._statements import StatementSupport as StatementSupport

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.judge._aspect_critic": ["AspectCritic", "AspectCriticOutput"],
        "promptevolver.judge._classification": ["ClassificationJudge"],
        "promptevolver.judge._pairwise": ["PairwiseJudge"],
        "promptevolver.judge._protocol": ["Judgement", "Metric", "label_scale_of"],
        "promptevolver.judge._ensemble": ["JudgeEnsemble", "EvaluationItem"],
        "promptevolver.judge._prompts": ["Prompt"],
        "promptevolver.judge._rubric": ["RubricJudge"],
        "promptevolver.judge._statements": ["StatementSupport"],
    },
)
