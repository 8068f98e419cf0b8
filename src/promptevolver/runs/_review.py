"""``promptevolver review FILE``: a local page where people label what the judge got wrong.

:class:`ReviewServer` serves one :class:`~promptevolver.runs._review_queue.ReviewQueue` with the
standard library's ``ThreadingHTTPServer`` (no web framework: the page is one HTML file of plain
JavaScript, ``_review_page.html``, and the API is five routes), on 127.0.0.1 only:

* ``GET /`` the page; ``GET /api/status`` progress, agreement so far, the labels a human can give,
  where to resume; ``GET /api/items`` every item; ``GET /api/items/{id}`` one;
* ``POST /api/items/{id}/label`` ``{"verdict", "reason", "annotator"}`` writes one label into the
  file at once (atomically) and answers ``{"item", "status"}``;
* ``POST /api/session`` ``{"page", "take_over"}``: a page asks to be the one that writes.

The API is documented in docs/review.md. Who gets in:

* every request presents the server's random token (:func:`secrets.token_urlsafe`, 32 bytes), as
  the ``token`` query parameter or the ``X-Review-Token`` header, and a ``Host`` of
  ``127.0.0.1:PORT`` or ``localhost:PORT`` (a page of another site that renames itself to
  127.0.0.1 by DNS is refused);
* a write (POST) is refused when it comes from another origin: an ``Origin`` header other than
  the server's, a ``Sec-Fetch-Site`` other than ``same-origin``, or a body that is not
  ``application/json`` (a cross-site form cannot send one without a preflight, which is refused);
* the page's own script and style are the only ones a browser runs there (a Content-Security-Policy
  with their hashes); it writes every text of a sample with ``textContent``, never as HTML;
* the token never reaches a log (no request is logged) nor another site (``Referrer-Policy:
  no-referrer``).

**Two pages, one file.** One process serves a file (the caller holds
:func:`promptevolver.rundir.locked_file`: a second ``review`` of the same file is refused). Within
it, one page writes: the first page to ask (``POST /api/session``) or to label; any other page is
read-only (its label requests are answered 409) until it takes over, which makes the first one
read-only in turn. A request that names no page (a script using the API) writes only while no page
holds the file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import secrets
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from promptevolver.runs._review_queue import ReviewError, ReviewQueue

__all__ = ["ReviewServer", "page_html", "review", "serve"]

#: Largest request body accepted (bytes): a label with its longest reason fits many times over.
MAX_BODY = 1_000_000

_ITEM = re.compile(r"^/api/items/([A-Za-z0-9-]{1,40})$")
_LABEL = re.compile(r"^/api/items/([A-Za-z0-9-]{1,40})/label$")


def page_html() -> str:
    """The page (``_review_page.html`` beside this module, shipped as package data)."""
    return resources.files("promptevolver.runs").joinpath("_review_page.html").read_text(encoding="utf-8")


def _csp(page: str) -> str:
    """The page's Content-Security-Policy: its inline script and style by their sha256, nothing
    else (no other script, no frame, no form target, requests to this server only)."""

    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.S)
        return " ".join(
            f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks
        )

    return (
        f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


class ReviewServer(ThreadingHTTPServer):
    """The review page and its API for ``queue`` on ``127.0.0.1:port`` (0: any free port).

    Attributes:
        queue: what is reviewed. token: what every request presents. url: the page's address,
            token included (what ``review`` prints first).
    """

    daemon_threads = True

    def __init__(self, queue: ReviewQueue, *, port: int = 0, token: str | None = None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.queue = queue
        self.token = token or secrets.token_urlsafe(32)
        self.page = page_html()
        self.csp = _csp(self.page)
        self.writer: str | None = None
        self.writer_lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    def claim(self, page: str, *, take_over: bool) -> bool:
        """Make ``page`` the writer if no page is, or if it takes over; whether it is now."""
        with self.writer_lock:
            if self.writer is None or take_over:
                self.writer = page
            return self.writer == page

    def may_write(self, page: str | None) -> bool:
        """Whether a label request naming ``page`` (None: none) may write; a page that asks while
        no page writes becomes the writer."""
        with self.writer_lock:
            if page is None:
                return self.writer is None
            if self.writer is None:
                self.writer = page
            return self.writer == page


class _Handler(BaseHTTPRequestHandler):
    server: ReviewServer
    server_version = "promptevolver-review"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        """Nothing: a request line holds the token."""

    # --- the routes ------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 (the base's name)
        path = self._admitted(write=False)
        if path is None:
            return
        queue = self.server.queue
        try:
            if path == "/":
                self._send(200, self.server.page.encode(), "text/html; charset=utf-8", csp=self.server.csp)
            elif path == "/api/status":
                self._json(200, self._status())
            elif path == "/api/items":
                self._json(200, {"items": [item.to_dict() for item in queue.items]})
            elif match := _ITEM.match(path):
                self._json(200, queue.item(match.group(1)).to_dict())
            else:
                self._json(404, {"error": f"no such page or API route: {path}"})
        except ReviewError as exc:
            self._json(exc.status, {"error": str(exc)})

    def do_POST(self) -> None:  # noqa: N802 (the base's name)
        path = self._admitted(write=True)
        if path is None:
            return
        body = self._body()
        if body is None:
            return
        try:
            if match := _LABEL.match(path):
                self._label(match.group(1), body)
            elif path == "/api/session":
                self._session(body)
            else:
                self._json(404, {"error": f"no such API route: POST {path}"})
        except ReviewError as exc:
            self._json(exc.status, {"error": str(exc)})
        except OSError as exc:
            self._json(500, {"error": f"the label was not written: {exc.strerror or exc}"})

    def _refuse_method(self) -> None:
        self._json(405, {"error": f"{self.command} is not served here (GET and POST only)"})

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815 (the base's names)

    def _label(self, item_id: str, body: Any) -> None:
        page = self.headers.get("X-Review-Page")
        if not self.server.may_write(page):
            self._json(
                409,
                {
                    "error": "another page is labelling this file; this one is read-only "
                    "(take over to write here)",
                    "read_only": True,
                },
            )
            return
        item = self.server.queue.label(item_id, body)
        self._json(200, {"item": item.to_dict(), "status": self._status()})

    def _session(self, body: Any) -> None:
        page = body.get("page") if isinstance(body, dict) else None
        if not isinstance(page, str) or not 8 <= len(page) <= 100:
            raise ReviewError('a session names its page: {"page": "<8 to 100 characters>"}')
        writer = self.server.claim(page, take_over=bool(body.get("take_over")))
        self._json(200, {"writer": writer})

    def _status(self) -> dict[str, Any]:
        status = self.server.queue.status()
        status["writer_claimed"] = self.server.writer is not None
        return status

    # --- who gets in -----------------------------------------------------------------------------

    def _admitted(self, *, write: bool) -> str | None:
        """The request's path when it may go on; else answers it (403, 415) and returns None."""
        parts = urlsplit(self.path)
        if self.headers.get("Host", "") not in self.server.hosts():
            self._json(403, {"error": "refused: the Host is not this server (127.0.0.1 or localhost)"})
            return None
        given = self.headers.get("X-Review-Token") or (parse_qs(parts.query).get("token") or [""])[0]
        if not secrets.compare_digest(given.encode(), self.server.token.encode()):
            self._json(403, {"error": "refused: open the URL promptevolver review printed (its token)"})
            return None
        if write:
            origin = self.headers.get("Origin")
            site = self.headers.get("Sec-Fetch-Site")
            if (origin is not None and origin not in {f"http://{h}" for h in self.server.hosts()}) or (
                site is not None and site != "same-origin"
            ):
                self._json(403, {"error": "refused: a write from another origin"})
                return None
            if self.headers.get_content_type() != "application/json":
                self._json(415, {"error": "a write is a JSON body (Content-Type: application/json)"})
                return None
        return unquote(parts.path)

    def _body(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self._json(413, {"error": f"the body must be at most {MAX_BODY} bytes, with a Content-Length"})
            return None
        try:
            return json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            self._json(400, {"error": "the body is not JSON"})
            return None

    # --- answers ---------------------------------------------------------------------------------

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False).encode()
        self._send(status, body, "application/json; charset=utf-8")

    def _send(self, status: int, body: bytes, kind: str, *, csp: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy", csp or "default-src 'none'; frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(body)


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite number as null (JSON has none; a browser refuses them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def serve(
    queue: ReviewQueue,
    *,
    port: int,
    open_browser: bool,
    say: Callable[[str], None],
    ready: Callable[[ReviewServer], None] | None = None,
) -> None:
    """Serve ``queue`` until interrupted: print the URL first (stdout), then a line on what is
    served (``say``); ``open_browser`` opens the page in the default browser.

    Raises:
        OSError: the port is taken (or not allowed).
    """
    server = ReviewServer(queue, port=port)
    print(server.url, flush=True)
    labelled = sum(item.label is not None for item in queue.items)
    say(
        f"reviewing {len(queue.items)} items of metric {queue.document.metric!r} ({labelled} labelled); "
        f"each label is written to {queue.path} as it is given; Ctrl-C stops"
    )
    if open_browser:
        import webbrowser

        webbrowser.open(server.url)
    if ready is not None:
        ready(server)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


def review(
    file: str | Path,
    *,
    pool: str | Path | None = None,
    run: str | Path | None = None,
    metric_name: str | None = None,
    port: int = 0,
    open_browser: bool = False,
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    say: Callable[[str], None] = lambda line: None,
    ready: Callable[[ReviewServer], None] | None = None,
) -> int:
    """``promptevolver review``: hold the file's lock, build the queue
    (:func:`~promptevolver.runs._review_queue.build_queue`), serve it until Ctrl-C; 0.

    Raises:
        RunDirError: another process reviews (or writes) the file; AnnotationError, ConfigError,
        LLMUnusableError: from the file, the pool or the run; OSError: the port is taken.
    """
    from promptevolver import rundir
    from promptevolver.runs._review_queue import build_queue

    with rundir.locked_file(file, use="reviewed"):
        queue = build_queue(file, pool=pool, run=run, metric_name=metric_name, edit=edit, log=say)
        try:
            serve(queue, port=port, open_browser=open_browser, say=say, ready=ready)
        except KeyboardInterrupt:
            labelled = sum(item.label is not None for item in queue.items)
            say(f"stopped; {labelled} of {len(queue.items)} items labelled in {queue.path}")
    return 0
