"""Words and phrases as the simulated LLM reads them: light normalisation, clauses, n-grams.

A *phrase* is a run of whole words inside one clause (no punctuation inside). Two phrases are
the same when their *keys* are: each word lower-cased, a possessive ``'s`` dropped, then a light
suffix rule (``-ly`` after at least four letters, then a plural ``-s`` after at least three, not
``-ss``/``-us``/``-is``). So "Wrongly mentions" and "wrong mention" share a key, and
"factually" and "factual" do; "mention" and "mentioned" do not. Matching is exact on keys: a
phrase occurs in a text when its key sequence is a contiguous run of the text's key sequence.

Limits: English only; no stemming beyond the rule above, no synonyms.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

__all__ = [
    "CLOSED_CLASS",
    "Key",
    "candidates",
    "clauses",
    "contains",
    "key_sequence",
    "normalize_word",
    "proper_case",
]

Key = tuple[str, ...]

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CASED_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_CLAUSE_BREAK = re.compile(r"[.,;:!?()\[\]{}\"“”‘’`*]+|\s[-–—]+\s|\n")

#: Grammar words that never start or end a criterion phrase: scikit-learn's English stop words
#: plus negated auxiliaries (a closed class of the language, not a list of criteria).
CLOSED_CLASS = frozenset(
    ENGLISH_STOP_WORDS
    | frozenset(
        "don't doesn't didn't isn't aren't wasn't weren't can't cannot won't wouldn't shouldn't "
        "couldn't hasn't haven't hadn't it's that's there's they're we're you're i'm i've let's does".split()
    )
)


def normalize_word(word: str) -> str:
    """The key of one lower-case word (see the module docstring for the rule)."""
    if word in CLOSED_CLASS:
        return word
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) >= 6 and word.endswith("ly"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word


def clauses(text: str) -> Iterator[list[str]]:
    """The lower-case words of ``text``, clause by clause (punctuation and dashes split clauses)."""
    for part in _CLAUSE_BREAK.split(text.lower().replace("’", "'")):
        words = _WORD.findall(part)
        if words:
            yield words


def key_sequence(text: str) -> Key:
    """Every word key of ``text`` in order, clause breaks ignored (what a phrase is matched in)."""
    return tuple(normalize_word(w) for clause in clauses(text) for w in clause)


def contains(sequence: Sequence[str], key: Key) -> bool:
    """True when ``key`` is a contiguous run of ``sequence``."""
    n = len(key)
    if n == 0:
        return False
    first = key[0]
    return any(
        sequence[i] == first and tuple(sequence[i : i + n]) == key for i in range(len(sequence) - n + 1)
    )


def candidates(text: str, *, stop: frozenset[str], max_words: int = 4) -> dict[Key, list[tuple[str, ...]]]:
    """Candidate criterion phrases of ``text``: key -> the occurrences' word windows.

    A candidate has 1..``max_words`` words inside one clause, starts and ends with a word outside
    ``stop`` (inner grammar words are kept: "simplified and accurate representation"), has no
    digit and at least one word of four or more letters outside ``stop``. Each occurrence is
    recorded as ``(previous word, *words, next word, the word after)`` ("" past the clause) so
    that a writer can tell a noun from a verb phrase by its neighbours; the phrase's own words keep
    their case (see :func:`proper_case`), the neighbours are lower-case.
    """
    out: dict[Key, list[tuple[str, ...]]] = {}
    for part in _CLAUSE_BREAK.split(text.replace("’", "'")):
        cased = _CASED_WORD.findall(part)
        if not cased:
            continue
        words = [w.lower() for w in cased]
        keys = [normalize_word(w) for w in words]
        for n in range(1, max_words + 1):
            for i in range(len(words) - n + 1):
                span = cased[i : i + n]
                if _edge_stop(span[0], keys[i], stop) or _edge_stop(span[-1], keys[i + n - 1], stop):
                    continue
                if any(any(ch.isdigit() for ch in w) for w in span):
                    continue
                if not any(len(w) >= 4 and k not in stop for w, k in zip(span, keys[i : i + n])):
                    continue
                before = words[i - 1] if i > 0 else ""
                after = [*words[i + n : i + n + 2], "", ""][:2]
                out.setdefault(tuple(keys[i : i + n]), []).append((before, *span, *after))
    return out


def proper_case(words: Sequence[str], texts: Sequence[str]) -> tuple[str, ...]:
    """``words`` with a capitalised first word lower-cased unless some text of ``texts`` has it
    capitalised mid-sentence (a name): "Different wording" -> "different wording", "Sweden" stays."""
    first = words[0]
    if not first[:1].isupper() or first.isupper() and len(first) > 1:
        return tuple(words)
    pattern = re.compile(rf"(\S)\s+{re.escape(first)}\b")
    if any(m.group(1) not in '.!?:"“' for text in texts for m in pattern.finditer(text)):
        return tuple(words)
    return (first.lower(), *words[1:])


def _edge_stop(word: str, key: str, stop: frozenset[str]) -> bool:
    return word.lower() in stop or key in stop
