"""The negotiation rules on their own: which refusals count, the ladder, remembered state."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptevolver.errors import OutputParseError
from promptevolver.judge._aspect_critic import AspectCriticOutput
from promptevolver.judge._prompts import Prompt
from promptevolver.llm import CachedLLM, ScriptedLLM
from promptevolver.llm.openai import OpenAIClient
from promptevolver.llm.openai._errors import server_message
from promptevolver.llm.openai._negotiation import (
    Negotiation,
    negotiation_of,
    rejects_response_format,
    rejects_token_param,
    response_format,
    structured_output_mode,
)

SCHEMA = {"type": "object"}
OPENAI_MAX_TOKENS = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)


@pytest.mark.parametrize(
    ("status", "body", "refused"),
    [
        (500, "Input should be 'text' or 'json_object' loc ('body', 'response_format', 'type')", True),
        (400, "{\"error\":\"'response_format.type' must be 'json_schema' or 'text'\"}", True),
        (422, "json_schema is not supported", True),
        (500, "CUDA out of memory", False),
        (503, "response_format busy", False),  # not a refusal status
        (400, "Invalid value for 'temperature'", False),
    ],
)
def test_rejects_response_format(status: int, body: str, refused: bool) -> None:
    assert rejects_response_format(status, body) is refused


@pytest.mark.parametrize(
    ("status", "body", "sent", "refused"),
    [
        (400, OPENAI_MAX_TOKENS, "max_tokens", True),
        (
            400,
            "[{'type': 'extra_forbidden', 'loc': ('body', 'max_completion_tokens'), "
            "'msg': 'Extra inputs are not permitted'}]",
            "max_completion_tokens",
            True,
        ),
        (400, "max_tokens must be at least 1, got 0", "max_tokens", False),  # the value, not the field
        (
            400,
            "This model's maximum context length is 4096 tokens. However, you requested 5034 tokens",
            "max_tokens",
            False,
        ),
        (500, OPENAI_MAX_TOKENS, "max_tokens", False),
    ],
)
def test_rejects_token_param(status: int, body: str, sent: str, refused: bool) -> None:
    assert rejects_token_param(status, body, sent) is refused  # type: ignore[arg-type]


def test_response_format_per_mode() -> None:
    assert response_format("json_schema", SCHEMA) == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA},
    }
    assert response_format("json_object", SCHEMA) == {"type": "json_object", "schema": SCHEMA}
    assert response_format("prompt", SCHEMA) is None


def test_auto_steps_down_the_ladder_once_per_mode() -> None:
    n = Negotiation.start("auto")
    assert (n.mode, n.confirmed) == ("json_schema", False)
    assert n.step_down("json_schema", 500) and n.mode == "json_object"
    assert (
        n.step_down("json_schema", 500) and n.mode == "json_object"
    )  # a late refusal of a mode already left
    n.confirm("json_schema")  # a late answer in a mode already left confirms nothing
    assert not n.confirmed
    assert n.step_down("json_object", 400) and n.mode == "prompt"
    assert not n.step_down("prompt", 400)  # nothing left
    n.confirm("prompt")
    assert n.to_dict() == {
        "requested": "auto",
        "mode": "prompt",
        "confirmed": True,
        "token_param": "max_tokens",
        "rejections": ["json_schema refused (500)", "json_object refused (400)"],
    }


def test_a_fixed_mode_never_steps_down() -> None:
    n = Negotiation.start("json_object")
    assert not n.step_down("json_object", 500) and n.mode == "json_object"


def test_the_token_field_switches_once() -> None:
    n = Negotiation.start("auto")
    assert n.switch_token_param("max_tokens", 400) and n.token_param == "max_completion_tokens"
    assert n.switch_token_param("max_tokens", 400)  # sent before the switch: re-send
    assert not n.switch_token_param("max_completion_tokens", 400)  # both refused: give up


def test_unknown_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="structured_output must be one of auto, json_schema"):
        Negotiation.start("yaml")  # type: ignore[arg-type]


def test_the_former_boolean_switch_maps_to_auto_and_prompt() -> None:
    on = OpenAIClient(model="m", api_key="k", structured_output=True)
    off = OpenAIClient(model="m", api_key="k", structured_output=False)
    assert (on.negotiation.requested, off.negotiation.requested) == ("auto", "prompt")


def test_structured_output_mode_unwraps_a_cache(tmp_path: Path) -> None:
    client = OpenAIClient(model="m", api_key="k", structured_output="json_object")
    cached = CachedLLM(inner=client, path=tmp_path / "c.sqlite")
    assert structured_output_mode(cached) == "json_object"
    assert negotiation_of(cached) is client.negotiation
    assert structured_output_mode(ScriptedLLM(["x"])) is None and negotiation_of(ScriptedLLM(["x"])) is None


def test_token_caps_are_validated_and_part_of_the_cache_identity() -> None:
    with pytest.raises(ValueError, match="judge_max_tokens must be >= 1"):
        OpenAIClient(model="m", api_key="k", judge_max_tokens=0)
    a = OpenAIClient(model="m", api_key="k").cache_identity()
    b = OpenAIClient(model="m", api_key="k", judge_max_tokens=64).cache_identity()
    assert a != b and a["judge_max_tokens"] == 256 and a["meta_max_tokens"] == 1024


# --- recovering the verdict from small models' answers ------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        # the schema echoed first, then the answer (small models do this in prompt-only mode)
        ('Schema: {"type": "object", "properties": {}}\nAnswer: {"reason": "same fact", "verdict": 1}', 1),
        ('{"verdict": "yes"} sorry, I mean {"reason": "differs", "verdict": 0}', 0),
        ("{'reason': 'ok', 'verdict': 1} and {'reason': 'other', 'verdict': 0}", 1),  # the first valid wins
    ],
)
def test_a_verdict_is_recovered_from_a_later_object(text: str, verdict: int) -> None:
    assert Prompt("p", "x", AspectCriticOutput).parse(text).verdict == verdict


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "object"} {"answer": "yes"}',  # objects, none a verdict
        "The response is correct, verdict 1.",  # prose is never a verdict
        '{"reason": "cut off", "verdict": 1',
    ],
)
def test_anything_else_is_a_failed_evaluation(text: str) -> None:
    with pytest.raises(OutputParseError):
        Prompt("p", "x", AspectCriticOutput).parse(text)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"error": {"message": "Incorrect API key", "type": "invalid_request_error"}}', "Incorrect API key"),
        (
            "{\"error\": \"'response_format.type' must be 'json_schema'\"}",
            "'response_format.type' must be 'json_schema'",
        ),
        ('{"detail": "Invalid API key"}', "Invalid API key"),
        ("<html>\n  Bad   Gateway</html>", "Bad Gateway"),  # a proxy's page: its words, no tags
        (
            "<!DOCTYPE html><html><head><title>502</title><style>p{}</style></head>"
            "<body><h1>Bad Gateway</h1><script>x()</script><p>nginx</p></body></html>",
            "Bad Gateway nginx",
        ),
        ("<p>not a page</p>", "<p>not a page</p>"),  # text that merely holds markup is shown as is
        ("x" * 400, "x" * 297 + "..."),
    ],
)
def test_server_message_reads_every_error_shape(body: str, message: str) -> None:
    assert server_message(body) == message
