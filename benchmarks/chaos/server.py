"""The chaos benchmark's server: the simulated judge behind seeded faults, with a server-side ledger.

:class:`ChaosServer` is a :class:`~promptevolver.testing.LocalOpenAIServer` answering like
:class:`~promptevolver.llm.SimulatedJudgeLLM` (over real HTTP), that

* fails a share ``rate`` of chat requests, each drawn from a seeded hash of (request body, how
  many times that body was seen), so a retry gets a fresh draw and a rerun the same faults. A
  fault is one of :data:`FAULT_KINDS`: ``429`` (``Retry-After: 0``), ``500``, ``html`` (status
  200 with a body that is not JSON) or ``badtext`` (a well-formed completion whose assistant text
  is cut-off JSON: an answered call the judge cannot parse);
* can be taken down (:attr:`ChaosServer.down`: every chat request answered 503) or closed
  (:meth:`ChaosServer.close`: the port refuses connections and requests on open keep-alive
  connections are dropped unanswered) and reopened on the same port (:meth:`ChaosServer.reopen`);
* can freeze (:meth:`ChaosServer.freeze`: hold every new request unanswered), so a client can be
  killed when every answer it was sent has had time to arrive;
* records every chat request in :attr:`ChaosServer.ledger` (:class:`Entry`: session, body key,
  how many times seen, kind of call, outcome, tokens as the server counted them, when the answer
  was written), which is the ground truth the benchmark compares the client's reports with.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.llm import SimulatedJudgeLLM
from promptevolver.testing import Fault, LocalOpenAIServer, simulated_handler
from promptevolver.testing._openai_server import _make_request_handler, _Server

__all__ = ["FAULT_KINDS", "HTTP_FAULTS", "ChaosServer", "Entry", "body_key", "call_kind"]

#: Injected faults, drawn with equal odds.
FAULT_KINDS = ("429", "500", "html", "badtext")
#: Faults the client sees as a failed HTTP exchange (retried by the client).
HTTP_FAULTS = frozenset({"429", "500", "html", "down", "dropped"})
#: A judge answer cut off mid-JSON (what a server that hit its token cap sends).
BAD_TEXT = '{"reason": "The response matches the reference in every'
_REASK = "Your answer could not be used"


def body_key(body: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a request body: 64 hex digits."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def call_kind(body: dict[str, Any]) -> str:
    """``judge``, ``reask`` (a judge call repeated after an unusable answer) or ``meta``."""
    messages = body.get("messages") or []
    last = str(messages[-1].get("content", "")) if messages else ""
    if last.startswith(_REASK):
        return "reask"
    return "judge" if "verdict" in json.dumps(body.get("response_format") or {}) else "meta"


def _unit(*parts: object) -> float:
    """A uniform draw in [0, 1) from a SHA-256 of ``parts``."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class Entry:
    """One chat request as the server saw it.

    Attributes:
        session: the benchmark's session number when it arrived (one CLI process = one session).
        key: :func:`body_key` of its body.
        nth: how many times this body had been seen, this one included (1 = first).
        kind: :func:`call_kind` of the body.
        outcome: ``ok``, one of :data:`FAULT_KINDS`, ``down`` (answered 503: the server was down)
            ``dropped`` (connection closed unanswered: the server was closed), ``held``
            (held while frozen, then dropped unanswered), ``torn`` (a body without messages: the
            client died while sending it; answered 500) or ``handler_error`` (the simulated judge
            failed on it; answered 500).
        prompt_tokens, completion_tokens: tokens of an answered request, as reported to the client.
        arrived_at: ``time.monotonic()`` when it arrived.
        sent_at: ``time.monotonic()`` when its answer was produced (None: no completion produced).
    """

    session: int
    key: str
    nth: int
    kind: str
    outcome: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    arrived_at: float = 0.0
    sent_at: float | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def answered(self) -> bool:
        """A well-formed completion was sent (a call the client counts as answered)."""
        return self.outcome in ("ok", "badtext")


class ChaosServer(LocalOpenAIServer):
    """See the module docstring.

    Args:
        dataset: the annotations the simulated judge knows.
        rate: share of chat requests that get a fault, in [0, 1].
        seed: seed of the fault draws.
        judge_seed: the simulated judge's ``random_seed`` (the simulated world, fixed across runs).
    """

    def __init__(
        self, dataset: SingleMetricAnnotation, *, rate: float = 0.0, seed: int = 0, judge_seed: int = 42
    ):
        super().__init__(
            simulated_handler(SimulatedJudgeLLM(dataset=dataset, random_seed=judge_seed)), models=["sim"]
        )
        self.rate = rate
        self.seed = seed
        self.down = False
        self.dropping = False
        self.session = 0
        self.ledger: list[Entry] = []
        self._seen: Counter[str] = Counter()
        self._gate = threading.Event()
        self._gate.set()
        self._local = threading.local()
        self._fixed_port: int | None = None

    # -- lifecycle: reopen on the same port --------------------------------------------------------

    def start(self) -> ChaosServer:
        """Serve from a daemon thread, on the port of the last start if there was one."""
        if self._fixed_port is None:
            super().start()
            self._fixed_port = self.port
            return self
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", self._fixed_port), _make_request_handler(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening; drop every request still arriving on an open connection."""
        self.dropping = True
        self.stop()

    def reopen(self) -> None:
        """Listen again on the same port and answer normally."""
        self.dropping = False
        self.start()

    # -- freezing ----------------------------------------------------------------------------------

    def freeze(self) -> None:
        """Hold every new chat request until :meth:`thaw`, then drop it unanswered (outcome
        ``held``): the client it came from is meant to be dead by then."""
        self._gate.clear()

    def thaw(self) -> None:
        self._gate.set()

    def last_answer_at(self) -> float:
        """``time.monotonic()`` of the latest answer produced (0.0 before any)."""
        with self._lock:
            times = [e.sent_at for e in self.ledger[-64:] if e.sent_at is not None]
        return max(times, default=0.0)

    # -- the hooks of LocalOpenAIServer ------------------------------------------------------------

    def _record(self, body: dict[str, Any], authorization: str | None) -> Fault | None:
        held = not self._gate.is_set()
        self._gate.wait()
        key = body_key(body)
        with self._lock:
            self._seen[key] += 1
            nth = self._seen[key]
            outcome = self._outcome(body, key, nth, held)
            entry = Entry(self.session, key, nth, call_kind(body), outcome, arrived_at=time.monotonic())
            self.ledger.append(entry)
        self._local.entry = entry
        return _FAULTS[outcome]

    def _outcome(self, body: dict[str, Any], key: str, nth: int, held: bool) -> str:
        if held:
            return "held"
        if not body.get("messages"):
            return "torn"
        if self.dropping:
            return "dropped"
        return "down" if self.down else self._draw(key, nth)

    def _draw(self, key: str, nth: int) -> str:
        if self.rate <= 0 or _unit(self.seed, key, nth, "fault?") >= self.rate:
            return "ok"
        return FAULT_KINDS[int(_unit(self.seed, key, nth, "kind") * len(FAULT_KINDS))]

    def _completion(self, body: dict[str, Any], text: str | None = None) -> dict[str, Any]:
        entry: Entry | None = getattr(self._local, "entry", None)
        try:
            completion = super()._completion(body, text)
        except Exception:
            if entry is not None and entry.outcome == "ok":
                entry.outcome = "handler_error"
            raise
        if entry is not None:
            entry.prompt_tokens = int(completion["usage"]["prompt_tokens"])
            entry.completion_tokens = int(completion["usage"]["completion_tokens"])
            entry.sent_at = time.monotonic()
        return completion


_FAULTS: dict[str, Fault | None] = {
    "ok": None,
    "429": Fault.rate_limit(retry_after=0),
    "500": Fault.server_error(500),
    "html": Fault.malformed_body("text/html"),
    "badtext": Fault.answer(BAD_TEXT),
    "down": Fault.server_error(503),
    "dropped": Fault.drop_connection(),
    "held": Fault.drop_connection(),
    "torn": None,  # the handler cannot answer it: a 500
}
