"""What an OpenAI-compatible server accepts, learnt from its answers once per client.

OpenAI-compatible servers differ in two request fields that matter here:

* **structured output** (``response_format``). The ladder of :data:`LADDER`, tried in order by
  ``structured_output="auto"``:

  ==============  ===================================================================  =========
  mode            ``response_format`` sent                                             servers
  ==============  ===================================================================  =========
  ``json_schema`` ``{"type": "json_schema", "json_schema": {"name", "schema"}}``       OpenAI,
                                                                                       vLLM,
                                                                                       Ollama,
                                                                                       LM Studio
  ``json_object`` ``{"type": "json_object", "schema": {...}}`` (the schema is used     llama.cpp,
                  by llama.cpp and vLLM for grammar-constrained decoding; others       vLLM
                  ignore it and return some JSON object)
  ``prompt``      none: the prompt alone asks for the JSON (every request carries the  any
                  schema in its system message, see :mod:`promptevolver.judge._prompts`)
  ==============  ===================================================================  =========

  A server that refuses a mode says so with a 400, 422 or (llama-cpp-python) 500 whose body names
  ``response_format``, ``json_schema`` or ``json_object`` (:func:`rejects_response_format`); the
  client then steps down the ladder and re-sends at once, without spending a retry.
* **the completion-token cap**: ``max_tokens``, or ``max_completion_tokens`` for OpenAI's
  reasoning models, which answer 400 "Unsupported parameter: 'max_tokens' ... Use
  'max_completion_tokens' instead" (:func:`rejects_token_param`). The client switches once.

:class:`Negotiation` holds what was learnt; its :meth:`~Negotiation.to_dict` is what a run
records as ``usage.structured_output``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

from promptevolver.llm._wrapper import found_in_stack

__all__ = [
    "LADDER",
    "Mode",
    "Negotiation",
    "StructuredOutput",
    "TokenParam",
    "negotiation_of",
    "rejects_response_format",
    "rejects_token_param",
    "response_format",
    "structured_output_mode",
]

#: A structured-output mode a request is sent in.
Mode = Literal["json_schema", "json_object", "prompt"]
#: The setting: a fixed :data:`Mode`, or ``auto`` (negotiate down :data:`LADDER`).
StructuredOutput = Literal["auto", "json_schema", "json_object", "prompt"]
#: The request field that caps completion tokens.
TokenParam = Literal["max_tokens", "max_completion_tokens"]
#: Modes in the order ``auto`` tries them.
LADDER: tuple[Mode, ...] = get_args(Mode)
#: Name of the schema in a ``json_schema`` response format.
SCHEMA_NAME = "output"
#: Statuses with which servers refuse a request field they do not support.
_REFUSAL_STATUSES = frozenset({400, 422, 500})
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "response format")
_UNSUPPORTED_WORDS = ("unsupported", "not supported", "unrecognized", "not permitted", "unknown", "extra")


def response_format(mode: Mode, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The ``response_format`` request field for ``mode`` and a JSON ``schema`` (None: send none)."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def rejects_response_format(status: int, body: str) -> bool:
    """Whether an error answer (``status``, body text) refuses the request's ``response_format``."""
    text = body.lower()
    return status in _REFUSAL_STATUSES and any(word in text for word in _FORMAT_WORDS)


def rejects_token_param(status: int, body: str, sent: TokenParam) -> bool:
    """Whether an error answer refuses the token-cap field ``sent`` as a parameter (not its value).

    True when the body names ``sent`` together with the other field's name (OpenAI: "Use
    'max_completion_tokens' instead") or with words of an unknown-field error ("unsupported",
    "extra inputs are not permitted", ...). A value problem ("max_tokens must be at least 1", a
    context-length overflow) is not a refusal of the field.
    """
    if status not in (400, 422):
        return False
    text = body.lower()
    other = "max_tokens" if sent == "max_completion_tokens" else "max_completion_tokens"
    return sent in text and (other in text or any(word in text for word in _UNSUPPORTED_WORDS))


@dataclass
class Negotiation:
    """What one client learnt about its server: the structured-output mode and token field.

    Attributes:
        requested: the setting (``auto`` or a fixed mode).
        mode: the mode requests are sent in now (``auto`` starts at ``json_schema``).
        confirmed: True once a request sent in ``mode`` was answered.
        token_param: the field that carries the completion-token cap.
        rejections: one line per refusal that changed the state, oldest first, e.g.
            ``"json_schema refused (500)"`` (no server text: it may quote secrets).
        token_param_switched: True once the token field was switched (it switches only once).
    """

    requested: StructuredOutput = "auto"
    mode: Mode = "json_schema"
    confirmed: bool = False
    token_param: TokenParam = "max_tokens"
    rejections: list[str] = field(default_factory=list)
    token_param_switched: bool = False

    @classmethod
    def start(cls, requested: StructuredOutput) -> Negotiation:
        """A fresh negotiation for the setting ``requested``.

        Raises:
            ValueError: ``requested`` is not one of ``auto``, ``json_schema``, ``json_object``,
                ``prompt``.
        """
        if requested not in get_args(StructuredOutput):
            known = ", ".join(get_args(StructuredOutput))
            raise ValueError(f"structured_output must be one of {known}; got {requested!r}")
        mode: Mode = LADDER[0] if requested == "auto" else requested
        return cls(requested=requested, mode=mode)

    def step_down(self, sent: Mode, status: int) -> bool:
        """Record that the server refused ``sent``; True when the caller should re-send.

        Re-send when the mode has changed since the request was sent (a concurrent request
        stepped down already) or when ``auto`` can step down now; False when the refused mode is
        fixed by the setting or is the last of the ladder.
        """
        if sent != self.mode:
            return True
        if self.requested != "auto" or sent == LADDER[-1]:
            return False
        self.rejections.append(f"{sent} refused ({status})")
        self.mode = LADDER[LADDER.index(sent) + 1]
        self.confirmed = False
        return True

    def switch_token_param(self, sent: TokenParam, status: int) -> bool:
        """Record that the server refused the field ``sent``; True when the caller should re-send."""
        if sent != self.token_param:
            return True
        if self.token_param_switched:
            return False
        self.rejections.append(f"{sent} refused ({status})")
        self.token_param = "max_completion_tokens" if sent == "max_tokens" else "max_tokens"
        self.token_param_switched = True
        return True

    def confirm(self, sent: Mode) -> None:
        """Record an answer to a request sent in ``sent``."""
        if sent == self.mode:
            self.confirmed = True

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``requested``, ``mode``, ``confirmed``, ``token_param``, ``rejections`` (every
        field in order but ``token_param_switched``)."""
        data = asdict(self)
        del data["token_param_switched"]
        return data


def negotiation_of(client: Any) -> Negotiation | None:
    """The :class:`Negotiation` of ``client`` (unwrapping a ``CachedLLM``'s ``inner``), or None for a
    client that does not negotiate (simulated, scripted). ``negotiation_of(llm).to_dict()`` is what
    a run records as ``usage.structured_output``."""
    return found_in_stack(client, "negotiation", Negotiation)


def structured_output_mode(client: Any) -> str | None:
    """The structured-output mode ``client`` ended in (see :func:`negotiation_of`), or None."""
    negotiation = negotiation_of(client)
    return None if negotiation is None else negotiation.mode
