"""Judges: prompts, the :class:`Metric` protocol, :class:`AspectCritic` (binary),
:class:`RubricJudge` (a score on a scale), :class:`StatementSupport` (two prompts: statements, then
their verdicts), :class:`JudgeEnsemble`."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_package

if TYPE_CHECKING:
    from promptevolver.judge.aspect_critic import AspectCritic as AspectCritic
    from promptevolver.judge.aspect_critic import AspectCriticOutput as AspectCriticOutput
    from promptevolver.judge.ensemble import EvaluationItem as EvaluationItem
    from promptevolver.judge.ensemble import JudgeEnsemble as JudgeEnsemble
    from promptevolver.judge.prompts import Prompt as Prompt
    from promptevolver.judge.protocol import Judgement as Judgement
    from promptevolver.judge.protocol import Metric as Metric
    from promptevolver.judge.rubric import RubricJudge as RubricJudge
    from promptevolver.judge.statements import StatementSupport as StatementSupport

__getattr__, __all__ = lazy_package(
    __name__,
    {
        "promptevolver.judge.aspect_critic": ["AspectCritic", "AspectCriticOutput"],
        "promptevolver.judge.protocol": ["Judgement", "Metric"],
        "promptevolver.judge.ensemble": ["JudgeEnsemble", "EvaluationItem"],
        "promptevolver.judge.prompts": ["Prompt"],
        "promptevolver.judge.rubric": ["RubricJudge"],
        "promptevolver.judge.statements": ["StatementSupport"],
    },
)
