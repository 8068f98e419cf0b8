"""Pseudo-word texts for the rubric and statements generators: a seeded vocabulary of made-up
words, texts drawn from it, and rare words (one per index) that name one-off details."""

from __future__ import annotations

import numpy as np

__all__ = ["rare_word", "text", "vocabulary"]

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "shu", "dra", "qui", "bel", "tor", "gan")


def vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct made-up words of 2–3 syllables, sorted."""
    words: set[str] = set()
    while len(words) < size:
        parts = rng.choice(len(_SYLLABLES), size=int(rng.integers(2, 4)))
        words.add("".join(_SYLLABLES[i] for i in parts))
    return sorted(words)


def rare_word(k: int) -> str:
    """The k-th rare word: k written in base len(_SYLLABLES) with five syllables, plus "x"."""
    base, parts = len(_SYLLABLES), []
    for _ in range(5):
        k, digit = divmod(k, base)
        parts.append(_SYLLABLES[digit])
    return "".join(parts) + "x"


def text(rng: np.random.Generator, vocab: list[str], n: int) -> str:
    """``n`` words drawn from ``vocab``."""
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), size=n))
