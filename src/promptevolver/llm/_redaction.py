"""Secrets out of text: redact URLs (userinfo, query values) and API keys before showing them.

A ``base_url`` may carry a secret: ``https://user:pass@proxy/v1`` or, as Azure-style proxies use,
``https://proxy/v1?api-key=SECRET``. Anything that puts a URL into a message, a ``repr``, a log
line, a checkpoint or a report passes it through :func:`redact_url` first; free text that may
quote URLs or keys (a server's error message) goes through :func:`redact_text`::

    >>> redact_url("https://bob:hunter2@proxy.example/v1?api-key=abc&v=2")
    'https://***@proxy.example/v1?api-key=***&v=***'

Only the host, port, path and query *names* survive: enough to tell servers apart, nothing to log in
with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

__all__ = ["MASK", "redact_text", "redact_url"]

#: What replaces a secret.
MASK = "***"
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>`]*[^\s\"'<>`.,;:)\]]")
#: OpenAI-style keys (``sk-...``, ``sk-proj-...``), also when a server quotes them masked.
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}")
#: HTTP credentials as a server may echo an ``Authorization`` header: ``Bearer <token>``,
#: ``Basic <base64 of user:password>`` (RFC 7617).
_AUTH_SCHEME = re.compile(r"\b(Bearer|Basic)(\s+)[A-Za-z0-9+/=._~\-]+", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and every query value replaced by ``***`` (names kept).

    A string that is not a URL with a scheme and host is returned unchanged; a URL that cannot be
    parsed (e.g. a bad port) is replaced by ``***`` entirely rather than risk showing it.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return MASK
    if not parts.scheme or not parts.netloc:
        return url
    netloc = (host or "") if ":" not in (host or "") else f"[{host}]"
    if port is not None:
        netloc += f":{port}"
    if "@" in parts.netloc:
        netloc = f"{MASK}@{netloc}"
    query = "&".join(_redact_pair(pair) for pair in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))


def _redact_pair(pair: str) -> str:
    name, equals, _value = pair.partition("=")
    return f"{name}={MASK}" if equals else MASK  # a bare token (``?SECRET``) may be the secret


#: A given secret at least this long is masked wherever it appears; a shorter one (a local server's
#: placeholder key such as ``x`` or ``any``) only where it stands as a token of its own, so that the
#: words around it survive ("max_tokens", "many"): no issued key is that short.
WHOLE_TOKEN_BELOW = 8


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each of ``secrets`` (non-empty strings; one shorter than
    :data:`WHOLE_TOKEN_BELOW` characters where it stands alone, not inside a word), key-like tokens
    (``sk-...``), HTTP credentials (``Bearer ...``, ``Basic ...``) and the secret parts of every
    URL in it replaced by ``***``."""
    for secret in secrets:
        if len(secret) >= WHOLE_TOKEN_BELOW:
            text = text.replace(secret, MASK)
        elif secret:
            text = re.sub(rf"(?<![A-Za-z0-9_\-]){re.escape(secret)}(?![A-Za-z0-9_\-])", MASK, text)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    return _KEY_LIKE.sub(MASK, text)
