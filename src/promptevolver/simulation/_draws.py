"""Deterministic hash draws of the simulation: the same parts give the same number, in any order of
calls and in any process."""

from __future__ import annotations

import hashlib

__all__ = ["unit"]


def unit(*parts: object) -> float:
    """A number in [0, 1) drawn from ``parts``: the first 8 bytes of the sha256 of their ``str``
    joined by ``\\x1f``, over 2**64. Equal parts give equal draws; ``unit(x) < p`` holds with
    probability ``p`` over varied parts."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
