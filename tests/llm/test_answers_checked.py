"""Issue 31, item 8 (answers): what a server or a model says is checked before it counts. Token
counts no request could have cost are counted locally (with one warning), a refusal is a failed
call with its words, and ``true``/``false`` is no verdict, in every output model of our judges."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from pydantic import BaseModel

from promptevolver.errors import OutputParseError, RefusalError
from promptevolver.judge._aspect_critic import AspectCriticOutput
from promptevolver.judge._prompts import Prompt
from promptevolver.judge._statements import Statements, Verdicts
from promptevolver.llm._base import ChatMessage
from promptevolver.llm.openai import _wire
from promptevolver.llm.openai._wire import parse_completion

MESSAGES = (ChatMessage("system", "Judge it."), ChatMessage("user", "Is 2 + 2 = 4 right? " * 5))


def _body(usage: Any, content: str | None = '{"reason": "ok", "verdict": 1}', **message: Any) -> bytes:
    return json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": content, **message}}], "usage": usage}
    ).encode()


@pytest.fixture(autouse=True)
def _say_again() -> None:
    _wire._SAID.clear()


@pytest.mark.parametrize("prompt_tokens", [10**15, 2**63, 1e300, 10**9])
def test_an_impossible_prompt_token_count_is_counted_locally_with_one_warning(prompt_tokens: Any) -> None:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 12}
    with pytest.warns(RuntimeWarning, match="prompt token counts beyond what the request"):
        got = parse_completion(_body(usage), where="judge call (model 'm')", messages=MESSAGES, cap=64)
    assert got.prompt_tokens == _wire._local_tokens(sum(len(m.content) for m in MESSAGES))
    assert got.completion_tokens == 12
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process
        parse_completion(_body(usage), where="judge call (model 'm')", messages=MESSAGES, cap=64)


@pytest.mark.parametrize(("cap", "completion_tokens"), [(64, 10**15), (64, 10**6), (None, 10**7)])
def test_an_impossible_completion_token_count_is_counted_locally(
    cap: int | None, completion_tokens: int
) -> None:
    usage = {"prompt_tokens": 40, "completion_tokens": completion_tokens}
    with pytest.warns(RuntimeWarning, match="completion token counts"):
        got = parse_completion(_body(usage), where="judge call", messages=MESSAGES, cap=cap)
    assert got.prompt_tokens == 40 and got.completion_tokens == _wire._local_tokens(31)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 40, "completion_tokens": 12},
        {"prompt_tokens": 900, "completion_tokens": 128},  # a schema and a template beyond the text
        {"prompt_tokens": 40, "completion_tokens": 120},  # hidden reasoning within twice the cap
    ],
)
def test_plausible_counts_are_the_servers(usage: dict[str, int]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = parse_completion(_body(usage), where="judge call", messages=MESSAGES, cap=64)
    assert (got.prompt_tokens, got.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])


def test_a_refusal_is_a_failed_call_with_the_models_words() -> None:
    body = _body({"prompt_tokens": 40, "completion_tokens": 9}, None, refusal="I can't help with that.")
    with pytest.raises(
        RefusalError, match=r"the model refused to answer \(.I can't help with that..\)"
    ) as info:
        parse_completion(body, where="judge call", messages=MESSAGES, cap=64)
    assert info.value.cause == "refused" and info.value.refusal == "I can't help with that."


def test_content_beside_an_empty_refusal_is_the_answer() -> None:
    got = parse_completion(_body({}, refusal=""), where="judge call", messages=MESSAGES, cap=64)
    assert '"verdict": 1' in got.text


# -- true is no verdict ------------------------------------------------------------------------------------

#: Every output model of our judges, a valid answer, and the path of a number in it.
OUTPUTS: list[tuple[type[BaseModel], dict[str, Any], tuple[Any, ...]]] = [
    (AspectCriticOutput, {"reason": "r", "verdict": 1}, ("verdict",)),
    (
        Verdicts,
        {"statements": [{"statement": "s", "reason": "r", "verdict": 0}]},
        ("statements", 0, "verdict"),
    ),
]


def _rubric_output() -> tuple[type[BaseModel], dict[str, Any], tuple[Any, ...]]:
    from promptevolver.judge._rubric import RubricJudge

    judge = RubricJudge(name="helpfulness", definition="How helpful?")
    prompt = next(iter(judge.get_prompts().values()))
    return prompt.output_model, {"reason": "r", "score": 3}, ("score",)


@pytest.mark.parametrize("index", [0, 1, 2])
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_where_a_number_is_asked_is_a_parse_failure(index: int, value: bool) -> None:
    model, given, path = [*OUTPUTS, _rubric_output()][index]
    answer = json.loads(json.dumps(given))  # a copy: the table stays valid
    prompt = Prompt(name="p", instruction="i", output_model=model)
    assert prompt.parse(json.dumps(answer)) is not None
    node = answer
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    with pytest.raises(OutputParseError, match=rf"output field '{'.'.join(map(str, path))}'"):
        prompt.parse(json.dumps(answer))


def test_strings_stay_strings() -> None:
    prompt = Prompt(name="p", instruction="i", output_model=Statements)
    assert prompt.parse('{"statements": ["true", "false"]}').statements == ["true", "false"]
