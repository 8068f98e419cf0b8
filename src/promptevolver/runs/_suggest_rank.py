"""Ranking a pool of traces by how much a human label would teach (pure functions, no LLM).

Three signals per trace, each in [0, 1]:

* **disagreement** (query by committee: Seung, Opper and Sompolinsky, "Query by committee", COLT
  1992): the committee is the run's chosen instructions, its finalists, its seed and its Pareto
  front. It is the mean of the committee's normalised vote entropy (binary verdicts) and the
  share of the other members that disagree with the chosen instructions (a numeric score
  "disagrees" by ``|a - b| / scale``). High where the instructions the run could not tell apart
  read the trace differently.
* **instability**: the share of the chosen judge's other answers on the trace (re-asks at a
  temperature above 0; the individual judges of an ensemble) that differ from its verdict
  (self-consistency, as in SelfCheckGPT, Manakul et al. 2023). High where its verdict is a
  coin flip.
* **novelty**: 1 − the largest TF-IDF cosine similarity of the trace to an already annotated
  sample (scikit-learn's ``TfidfVectorizer`` over the trace's text fields).

A trace's **informativeness** is ``0.4 disagreement + 0.45 instability + 0.15 novelty``
(:data:`WEIGHTS`); missing signals (a trace the budget left unjudged) count 0. Instability weighs
most because it is the one signal that points at the chosen judge's own mistakes: where the
committee disagrees but the chosen judge answers the same every time, it is usually the chosen
instructions that name a criterion the others lack (in a first measurement on judgeworld w400s1,
seed 0, the chosen judge was wrong on 1 of 10 such traces and on 6 of 8 unstable ones;
``benchmarks/judgeworld/suggest.py``). The batch is then
picked greedily by maximal marginal relevance (Carbonell and Goldstein, SIGIR 1998): each pick
maximises ``(1 - diversity) · informativeness - diversity · (largest cosine similarity to a
trace picked before)``, so near-duplicates do not fill a batch. Each pick's value is its
``score``: non-increasing down the list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["WEIGHTS", "Signals", "TraceVotes", "informativeness", "pick", "signals_of", "similarities", "why"]

#: Weight of each signal in a trace's informativeness (they sum to 1).
WEIGHTS: Mapping[str, float] = {"disagreement": 0.4, "instability": 0.45, "novelty": 0.15}


@dataclass(frozen=True)
class TraceVotes:
    """What the judge calls said about one trace.

    Attributes:
        verdicts: one per committee member, in committee order (member 0 is the chosen
            instructions); None where the member was not judged (budget) or its evaluation failed.
        others: the chosen judge's other answers (re-asks, ensemble judges); failures left out.
    """

    verdicts: tuple[float | None, ...]
    others: tuple[float, ...] = ()


@dataclass(frozen=True)
class Signals:
    """A trace's signals, each in [0, 1], None when not measured (no verdict to compare)."""

    disagreement: float | None
    instability: float | None
    novelty: float


def signals_of(votes: TraceVotes, novelty: float, *, binary: bool, scale: float = 1.0) -> Signals:
    """The signals of one trace (see the module docstring); ``scale``: the score range of a
    numeric metric (highest − lowest, > 0)."""
    chosen = votes.verdicts[0] if votes.verdicts else None
    measured = [v for v in votes.verdicts if v is not None]
    disagreement = None
    if chosen is not None and len(measured) >= 2:
        against = [_distance(chosen, v, binary, scale) for v in measured[1:]]
        entropy = _vote_entropy(measured) if binary else float(np.std(measured) / (scale / 2))
        disagreement = min(1.0, 0.5 * min(1.0, entropy) + 0.5 * float(np.mean(against)))
    instability = None
    if chosen is not None and votes.others:
        instability = float(np.mean([_distance(chosen, v, binary, scale) for v in votes.others]))
    return Signals(disagreement, instability, novelty)


def _distance(a: float, b: float, binary: bool, scale: float) -> float:
    return float(a != b) if binary else min(1.0, abs(a - b) / scale)


def _vote_entropy(verdicts: Sequence[float]) -> float:
    """Binary entropy (bits, in [0, 1]) of the share of verdicts equal to 1."""
    p = sum(v == 1 for v in verdicts) / len(verdicts)
    return 0.0 if p in (0.0, 1.0) else float(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)))


def informativeness(signals: Signals) -> float:
    """The weighted sum of the signals (:data:`WEIGHTS`), in [0, 1]; unmeasured ones count 0."""
    return (
        WEIGHTS["disagreement"] * (signals.disagreement or 0.0)
        + WEIGHTS["instability"] * (signals.instability or 0.0)
        + WEIGHTS["novelty"] * signals.novelty
    )


def similarities(pool_texts: Sequence[str], annotated_texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """TF-IDF cosine similarities: pool × pool, shape ``(n, n)``, and pool × annotated, shape
    ``(n, m)`` (``m`` may be 0), in [0, 1]. The vocabulary and IDF come from both sets (English
    stop words removed, words and word pairs, sublinear term frequency)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [*pool_texts, *annotated_texts]
    vectorizer = TfidfVectorizer(stop_words="english", ngram_range=(1, 2), sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # no word at all (empty or stop words only): nothing is similar
        n = len(pool_texts)
        return np.eye(n), np.zeros((n, len(annotated_texts)))
    pool, annotated = matrix[: len(pool_texts)], matrix[len(pool_texts) :]
    within = np.asarray((pool @ pool.T).todense())
    against = (
        np.asarray((pool @ annotated.T).todense()) if annotated_texts else np.zeros((len(pool_texts), 0))
    )
    return np.clip(within, 0.0, 1.0), np.clip(against, 0.0, 1.0)


def pick(values: Sequence[float], within: np.ndarray, n: int, *, diversity: float) -> list[tuple[int, float]]:
    """Greedy maximal marginal relevance: up to ``n`` (trace index, score) pairs, best first.

    Args:
        values: informativeness per trace, shape ``(k,)``.
        within: cosine similarities between the traces, shape ``(k, k)``.
        diversity: weight in [0, 1] of dissimilarity to the traces picked before (0: pure ranking).

    Ties go to the earlier trace (file order).
    """
    u = np.asarray(values, dtype=np.float64)
    nearest = np.zeros(len(u))
    left = np.ones(len(u), dtype=bool)
    picked: list[tuple[int, float]] = []
    while len(picked) < n and left.any():
        gain = np.where(left, (1 - diversity) * u - diversity * nearest, -np.inf)
        i = int(np.argmax(gain))
        picked.append((i, float(gain[i])))
        left[i] = False
        nearest = np.maximum(nearest, within[i])
    return picked


def why(
    votes: TraceVotes,
    signals: Signals,
    labels: Sequence[str],
    *,
    nearest: tuple[int, float] | None,
    duplicate: int | None = None,
    fmt: Any = None,
) -> str:
    """A human-readable reason, strongest signal first, e.g. ``the two best instructions
    disagree: the chosen (candidate 7) says 0, candidate 4 (finalist) says 1``.

    Args:
        labels: the committee members' names, in committee order.
        nearest: (annotated sample index, cosine) of the most similar annotated sample, if any.
        duplicate: the index of an annotated sample with the same text, if any.
        fmt: formats a verdict (default: ``0``/``1`` for whole numbers, else 2 decimals).
    """
    show = fmt or _fmt
    parts: list[str] = []
    v = votes.verdicts
    if not v or v[0] is None:
        parts.append("not judged (the --max-calls budget was spent, or the evaluation failed)")
    else:
        if len(v) > 1 and v[1] is not None and v[1] != v[0]:
            said = f"{labels[0]} says {show(v[0])}, {labels[1]} says {show(v[1])}"
            parts.append(f"the two best instructions disagree: {said}")
        if signals.disagreement and sum(x is not None for x in v) >= 3:
            parts.append(_split(v, labels, show))
        if signals.instability:
            others = ", ".join(show(x) for x in votes.others)
            parts.append(f"the chosen judge is unstable: it says {show(v[0])}, asked again {others}")
        if not parts:
            parts.append(f"every instruction asked agrees ({show(v[0])})")
    parts.append(_novelty(nearest) if duplicate is None else f"already annotated (sample {duplicate})")
    return "; ".join(parts)


def _split(verdicts: Sequence[float | None], labels: Sequence[str], show: Any) -> str:
    groups: dict[str, list[str]] = {}
    for verdict, label in zip(verdicts, labels):
        if verdict is not None:
            groups.setdefault(show(verdict), []).append(label)
    sizes = "-".join(str(len(g)) for g in sorted(groups.values(), key=len, reverse=True))
    said = "; ".join(
        f"{', '.join(names)} {'says' if len(names) == 1 else 'say'} {value}"
        for value, names in sorted(groups.items())
    )
    return f"the committee splits {sizes} ({said})"


def _novelty(nearest: tuple[int, float] | None) -> str:
    if nearest is None:
        return "no annotated sample to compare with"
    index, cosine = nearest
    return f"closest annotated sample: {index} (TF-IDF cosine {cosine:.2f})"


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"
