"""Judges: prompts, the :class:`Metric` protocol, :class:`AspectCritic` (binary),
:class:`RubricJudge` (a score on a scale), :class:`StatementSupport` (two prompts: statements, then
their verdicts), :class:`JudgeEnsemble`."""

from typing import TYPE_CHECKING

from promptevolver._lazy import lazy_exports

if TYPE_CHECKING:
    from promptevolver.judge.aspect_critic import AspectCritic, AspectCriticOutput
    from promptevolver.judge.ensemble import EvaluationItem, JudgeEnsemble
    from promptevolver.judge.prompts import Prompt
    from promptevolver.judge.protocol import Judgement, Metric
    from promptevolver.judge.rubric import RubricJudge
    from promptevolver.judge.statements import StatementSupport

_EXPORTS = {
    "AspectCritic": "promptevolver.judge.aspect_critic",
    "AspectCriticOutput": "promptevolver.judge.aspect_critic",
    "Judgement": "promptevolver.judge.protocol",
    "Metric": "promptevolver.judge.protocol",
    "JudgeEnsemble": "promptevolver.judge.ensemble",
    "EvaluationItem": "promptevolver.judge.ensemble",
    "Prompt": "promptevolver.judge.prompts",
    "RubricJudge": "promptevolver.judge.rubric",
    "StatementSupport": "promptevolver.judge.statements",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "AspectCritic",
    "AspectCriticOutput",
    "EvaluationItem",
    "JudgeEnsemble",
    "Judgement",
    "Metric",
    "Prompt",
    "RubricJudge",
    "StatementSupport",
]
