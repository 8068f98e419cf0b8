"""How real OpenAI-compatible servers differ, emulated for :class:`LocalOpenAIServer` tests.

A :class:`Dialect` decides, for one request, what a given server product would answer instead of a
normal chat completion: which ``response_format`` types it takes, whether it takes ``max_tokens``
and ``max_completion_tokens``, the status code and body shape of its refusals, its
``GET /v1/models`` list, and its answers to an unknown model and a wrong API key. Each dialect's
docstring cites where its behaviour is documented or was observed.

=====================  ===========================  ==============  ============  ==========
dialect                ``response_format`` taken    token field     refusal       key
=====================  ===========================  ==============  ============  ==========
:data:`OPENAI`         text, json_object,           both            400/404       checked
                       json_schema
:data:`OPENAI_O_SERIES` the same                    max_completion  400
                                                    _tokens only
:data:`VLLM`           text, json_object,           both            400/404       optional
                       json_schema, structural_tag
:data:`OLLAMA`         json_object, json_schema     max_tokens      404           ignored
                       (others ignored)             (other ignored)
:data:`LM_STUDIO`      text, json_schema            max_tokens      400 (string   ignored
                                                                    ``error``)
:data:`LLAMA_CPP_PYTHON` text, json_object (with     max_tokens      500 / 422     optional
                       optional schema)             (other ignored)
=====================  ===========================  ==============  ============  ==========

A dialect returns a :class:`Reply` (status and JSON body) to send instead of the normal answer,
or None to let the request through. ``Reply.body`` may be any JSON value: LM Studio's refusals are
``{"error": "<text>"}``, not OpenAI's ``{"error": {"message": ...}}``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DIALECTS",
    "LLAMA_CPP_PYTHON",
    "LM_STUDIO",
    "OLLAMA",
    "OPENAI",
    "OPENAI_O_SERIES",
    "VLLM",
    "Dialect",
    "Reply",
]


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: ``status`` and a JSON-serialisable ``body``."""

    status: int
    body: Any


def openai_error(status: int, message: str, *, kind: str, param: str | None, code: Any) -> Reply:
    """An answer with OpenAI's error shape ``{"error": {message, type, param, code}}``."""
    return Reply(status, {"error": {"message": message, "type": kind, "param": param, "code": code}})


def _format_type(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format")
    return str(fmt.get("type")) if isinstance(fmt, dict) else None


class Dialect:
    """OpenAI's own chat-completions API (models such as gpt-4o-mini); base of the others.

    Documented at https://platform.openai.com/docs/api-reference/chat/create: ``response_format``
    types ``text``, ``json_object`` and ``json_schema``; both ``max_tokens`` (deprecated) and
    ``max_completion_tokens``. Error bodies: ``{"error": {"message", "type", "param", "code"}}``;
    a wrong key is 401 ``invalid_api_key`` whose message quotes the key masked ("Incorrect API
    key provided: sk-te****cdef"); an unknown model is 404 ``model_not_found``, "The model `x`
    does not exist or you do not have access to it." (as quoted in many client projects' issues).
    """

    name = "openai"
    formats: frozenset[str] = frozenset({"text", "json_object", "json_schema"})
    #: Token fields refused as unsupported parameters (with a 400).
    refused_token_fields: frozenset[str] = frozenset()
    #: Whether a wrong key is refused (False: the server ignores keys).
    checks_key = True

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        """A refusal of ``body``'s request fields, or None to answer it."""
        kind = _format_type(body)
        if kind is not None and kind not in self.formats:
            return self.refuse_format(kind)
        for field in sorted(self.refused_token_fields):
            if field in body:
                return self.refuse_token_field(field)
        return None

    def refuse_format(self, kind: str) -> Reply:
        return openai_error(
            400,
            f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', and 'json_schema'.",
            kind="invalid_request_error",
            param="response_format.type",
            code="invalid_value",
        )

    def refuse_token_field(self, field: str) -> Reply:
        return openai_error(
            400,
            f"Unsupported parameter: '{field}' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            kind="invalid_request_error",
            param=field,
            code="unsupported_parameter",
        )

    def unknown_model(self, model: str, models: Sequence[str]) -> Reply | None:
        """The answer to a request for ``model``, not among ``models``; None: served anyway."""
        return openai_error(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            kind="invalid_request_error",
            param=None,
            code="model_not_found",
        )

    def wrong_key(self, key: str) -> Reply:
        """The answer to a request with the wrong API ``key`` (Bearer token, may be empty)."""
        masked = f"{key[:5]}{'*' * max(len(key) - 9, 0)}{key[-4:]}" if len(key) > 9 else "****"
        return openai_error(
            401,
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            kind="invalid_request_error",
            param=None,
            code="invalid_api_key",
        )

    def models(self, models: Sequence[str]) -> Reply | None:
        """The answer to ``GET /v1/models``, or None when the server has no such endpoint (404)."""
        data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "system"} for m in models]
        return Reply(200, {"object": "list", "data": data})


class OpenAIOSeries(Dialect):
    """OpenAI's reasoning models (o1, o3, gpt-5): ``max_tokens`` is refused with 400
    ``unsupported_parameter``, "Unsupported parameter: 'max_tokens' is not supported with this
    model. Use 'max_completion_tokens' instead." (quoted verbatim, with ``param`` and ``code``, in
    e.g. teilomillet/gollm#33 and griptape-ai/ComfyUI-Griptape#312)."""

    name = "openai-o-series"
    refused_token_fields = frozenset({"max_tokens"})


class VLLMDialect(Dialect):
    """vLLM's OpenAI-compatible server (``vllm serve``).

    ``response_format`` types ``text``, ``json_object``, ``json_schema`` and ``structural_tag``
    (vLLM docs, "Structured Outputs"); both token fields. An unknown model is 404
    ``NotFoundError`` "The model `x` does not exist." with ``param: "model"`` and an integer
    ``code`` (vllm/entrypoints/openai/models/serving.py, ``check_model``). With ``--api-key`` a
    wrong key gets 401 ``{"error": "Unauthorized"}`` (AuthenticationMiddleware). ``/v1/models``
    entries carry ``owned_by: "vllm"``, ``root``, ``parent``, ``max_model_len`` and
    ``permission`` (models/serving.py, ``show_available_models``).
    """

    name = "vllm"
    formats = frozenset({"text", "json_object", "json_schema", "structural_tag"})

    def refuse_format(self, kind: str) -> Reply:
        message = (
            f"1 validation error: response_format.type: Input should be 'text', 'json_object', "
            f"'json_schema' or 'structural_tag' (input: {kind!r})"
        )
        return Reply(
            400, {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
        )

    def unknown_model(self, model: str, models: Sequence[str]) -> Reply | None:
        message = f"The model `{model}` does not exist."
        return Reply(
            404, {"error": {"message": message, "type": "NotFoundError", "param": "model", "code": 404}}
        )

    def wrong_key(self, key: str) -> Reply:
        return Reply(401, {"error": "Unauthorized"})

    def models(self, models: Sequence[str]) -> Reply | None:
        data = [
            {
                "id": m,
                "object": "model",
                "created": int(time.time()),
                "owned_by": "vllm",
                "root": m,
                "parent": None,
                "max_model_len": 4096,
                "permission": [
                    {"id": "modelperm-local", "object": "model_permission", "allow_sampling": True}
                ],
            }
            for m in models
        ]
        return Reply(200, {"object": "list", "data": data})


class OllamaDialect(Dialect):
    """Ollama's OpenAI compatibility endpoint (``http://localhost:11434/v1``).

    From ollama/ollama openai/openai.go: ``response_format`` ``json_object`` becomes Ollama's
    ``format: "json"`` and ``json_schema`` its schema; any other type is ignored, not refused.
    ``max_tokens`` becomes ``num_predict``; ``max_completion_tokens`` is not a field of its request
    struct, so it is silently ignored (no cap). Keys are not checked. Errors have OpenAI's shape
    with ``type`` ``not_found_error`` for 404 (``NewError``); an unknown model is 404
    'model "x" not found, try pulling it first'. ``/v1/models``: ``owned_by`` is the namespace.
    """

    name = "ollama"
    formats = frozenset({"json_object", "json_schema"})
    checks_key = False

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        return None  # unknown response_format types and fields are ignored

    def unknown_model(self, model: str, models: Sequence[str]) -> Reply | None:
        return openai_error(
            404,
            f'model "{model}" not found, try pulling it first',
            kind="not_found_error",
            param=None,
            code=None,
        )

    def models(self, models: Sequence[str]) -> Reply | None:
        data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "library"} for m in models]
        return Reply(200, {"object": "list", "data": data})


class LMStudioDialect(Dialect):
    """LM Studio's local server (``http://localhost:1234/v1``).

    ``response_format`` only ``json_schema`` or ``text``: ``json_object`` gets 400 with a *string*
    error, ``{"error": "'response_format.type' must be 'json_schema' or 'text'"}``
    (lmstudio-ai/lmstudio-bug-tracker#189 and #307; "must be 'json_schema'" before 0.3.7).
    Keys are not checked by default. With several models loaded an unknown model is 404
    ``model_not_found`` listing "Your models:" (letta-ai/letta#1876, gitbutlerapp/gitbutler#8706);
    with one model loaded the name is ignored and that model answers (lmstudio-bug-tracker#619).
    ``max_tokens`` caps the answer (-1: no cap). ``/v1/models`` entries: ``owned_by:
    "organization_owner"``.
    """

    name = "lm-studio"
    formats = frozenset({"text", "json_schema"})
    checks_key = False

    def refuse_format(self, kind: str) -> Reply:
        return Reply(400, {"error": "'response_format.type' must be 'json_schema' or 'text'"})

    def unknown_model(self, model: str, models: Sequence[str]) -> Reply | None:
        if len(models) <= 1:
            return None
        listed = "\n".join(models)
        return openai_error(
            404,
            f'Model "{model}" not found. Please specify a valid model.\n\nYour models:\n\n{listed}',
            kind="invalid_request_error",
            param="model",
            code="model_not_found",
        )

    def models(self, models: Sequence[str]) -> Reply | None:
        data = [{"id": m, "object": "model", "owned_by": "organization_owner"} for m in models]
        return Reply(200, {"data": data, "object": "list"})


class LlamaCppPythonDialect(Dialect):
    """llama-cpp-python's server (``python -m llama_cpp.server``), version 0.3.36.

    Observed against the real server serving SmolLM2-135M-Instruct (see the project's notes on
    llama findings; the issue "Real LLM servers"): ``response_format`` ``json_object`` (with an
    optional ``schema``: grammar-constrained output) and ``text``; ``json_schema`` is refused with
    HTTP 500 whose body quotes the pydantic error naming ``response_format.type``. Any model name is
    served by the loaded model; ``max_completion_tokens`` is ignored (llama-cpp-python#1907).
    With ``--api_key`` a wrong key is 401 ``{"detail": "Invalid API key"}`` (FastAPI's
    ``HTTPException`` shape). ``/v1/models`` lists the model path or alias, ``owned_by: "me"``.
    """

    name = "llama-cpp-python"
    formats = frozenset({"text", "json_object"})

    def refuse(self, body: dict[str, Any]) -> Reply | None:
        kind = _format_type(body)
        if kind is not None and kind not in self.formats:
            return self.refuse_format(kind)
        return None  # max_completion_tokens and other unknown fields are ignored

    def refuse_format(self, kind: str) -> Reply:
        # Verbatim from the real server (0.3.36) but for the file path in the traceback line.
        message = (
            "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            f"'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}', "
            "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", "
            "line 376, in create_chat_completion\n    POST /v1/chat/completions"
        )
        return openai_error(500, message, kind="internal_server_error", param=None, code=None)

    def unknown_model(self, model: str, models: Sequence[str]) -> Reply | None:
        return None

    def wrong_key(self, key: str) -> Reply:
        return Reply(401, {"detail": "Invalid API key"})

    def models(self, models: Sequence[str]) -> Reply | None:
        data = [{"id": m, "object": "model", "owned_by": "me", "permissions": []} for m in models]
        return Reply(200, {"object": "list", "data": data})


OPENAI = Dialect()
OPENAI_O_SERIES = OpenAIOSeries()
VLLM = VLLMDialect()
OLLAMA = OllamaDialect()
LM_STUDIO = LMStudioDialect()
LLAMA_CPP_PYTHON = LlamaCppPythonDialect()
#: Every dialect, by name.
DIALECTS: dict[str, Dialect] = {
    d.name: d for d in (OPENAI, OPENAI_O_SERIES, VLLM, OLLAMA, LM_STUDIO, LLAMA_CPP_PYTHON)
}
