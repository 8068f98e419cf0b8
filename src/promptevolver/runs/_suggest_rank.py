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

**The chance the chosen judge is wrong** (:class:`ErrorModel`): the three signals say where a
label could teach; which of them point at the chosen judge's *mistakes* depends on the judge and
the LLM (a committee member that disagrees is right about as often as the chosen one in one run,
and nearly never in another), so suggest asks the run's own annotations. On a calibration set of
annotated samples (the run's held-out ones first) it asks the chosen and the runner-up
instructions and re-asks the chosen one, as for the pool; a naive Bayes model of "the chosen
verdict is wrong" over two features (the chosen verdict, and how its re-asks and the runner-up
vote against it: :func:`features_of`) then gives each pool trace its ``error`` probability. Each
feature's bin starts from a prior rate (the overall one; at least a coin flip where its re-asks
are split; the others' accuracy where it is outvoted: :func:`_prior_rate`) that the calibration
samples in the bin move: the calibration set is often the samples the run chose its instructions
on, where their mistakes are rarer than on new traces, so a few samples must not overrule what
the votes say. Without a calibration set (no labelled sample could be judged within the budget)
the trace's error is unknown and the fixed weights below decide.

A trace's **informativeness** is ``0.85 error + 0.15 novelty`` when its error is estimated
(:data:`ERROR_WEIGHT`), else ``0.4 disagreement + 0.45 instability + 0.15 novelty``
(:data:`WEIGHTS`); missing signals (a trace the budget left unjudged) count 0. Before the model
(the first release of suggest), instability weighed most because it is the signal that pointed at
the chosen judge's own mistakes in a first measurement (judgeworld w400s1, seed 0: wrong on 1 of
10 traces where only the committee disagreed, on 6 of 8 unstable ones;
``benchmarks/judgeworld/suggest.py``); the model learns such ratios per run instead
(``benchmarks/judgeworld/suggest_errors.py``). The batch is then
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

__all__ = [
    "ERROR_WEIGHT",
    "WEIGHTS",
    "ErrorModel",
    "Signals",
    "TraceVotes",
    "differs",
    "features_of",
    "informativeness",
    "pick",
    "signals_of",
    "similarities",
    "why",
]

#: Weight of each signal in a trace's informativeness when its error is not estimated (they sum to 1).
WEIGHTS: Mapping[str, float] = {"disagreement": 0.4, "instability": 0.45, "novelty": 0.15}
#: Weight of the estimated error in a trace's informativeness (novelty has the rest).
ERROR_WEIGHT = 0.85


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
    """A trace's signals, each in [0, 1], None when not measured (no verdict to compare);
    ``error``: the estimated probability that the chosen verdict is wrong (:class:`ErrorModel`),
    None without a model."""

    disagreement: float | None
    instability: float | None
    novelty: float
    error: float | None = None


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


def differs(a: float, b: float, *, binary: bool, scale: float = 1.0) -> bool:
    """Whether two verdicts differ: unequal verdicts, or scores further apart than a tenth of
    the scale (``scale``: its range; a rubric's levels one apart on a 1–5 scale differ)."""
    return _distance(a, b, binary, scale) > _TOLERANCE


def _distance(a: float, b: float, binary: bool, scale: float) -> float:
    return float(a != b) if binary else min(1.0, abs(a - b) / scale)


def _vote_entropy(verdicts: Sequence[float]) -> float:
    """Binary entropy (bits, in [0, 1]) of the share of verdicts equal to 1."""
    p = sum(v == 1 for v in verdicts) / len(verdicts)
    return 0.0 if p in (0.0, 1.0) else float(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)))


def informativeness(signals: Signals) -> float:
    """The weighted sum of the signals, in [0, 1] (see the module docstring): the estimated
    error and novelty (:data:`ERROR_WEIGHT`), else :data:`WEIGHTS`; unmeasured ones count 0."""
    if signals.error is not None:
        return ERROR_WEIGHT * signals.error + (1.0 - ERROR_WEIGHT) * signals.novelty
    return (
        WEIGHTS["disagreement"] * (signals.disagreement or 0.0)
        + WEIGHTS["instability"] * (signals.instability or 0.0)
        + WEIGHTS["novelty"] * signals.novelty
    )


#: A trace's features for the error model: feature name → bin (None: not measured).
Features = Mapping[str, str | None]


def features_of(votes: TraceVotes, *, binary: bool, scale: float = 1.0) -> dict[str, str | None]:
    """The error model's features of one trace: ``verdict`` (the chosen verdict; a score is
    binned as below or above the middle of its scale unless it is a whole number) and ``votes``,
    how the chosen judge's other answers (its re-asks) and the runner-up instructions stand
    against its verdict: ``agreed`` (none differs), ``runner-up only`` (only the runner-up
    differs), ``re-asks split`` (some re-asks differ, but not most of the other answers) or
    ``outvoted`` (more than half of them differ); None without another answer. All None when the
    chosen instructions gave no verdict."""
    chosen = votes.verdicts[0] if votes.verdicts else None
    if chosen is None:
        return {"verdict": None, "votes": None}
    verdict = (
        f"{chosen:g}" if binary or float(chosen).is_integer() else ("high" if chosen > scale / 2 else "low")
    )
    second = votes.verdicts[1] if len(votes.verdicts) > 1 else None
    own = [differs(chosen, v, binary=binary, scale=scale) for v in votes.others]
    runner = [] if second is None else [differs(chosen, second, binary=binary, scale=scale)]
    answers = own + runner
    if not answers:
        stand = None
    elif sum(answers) * 2 > len(answers):
        stand = "outvoted"
    elif any(own):
        stand = "re-asks split"
    else:
        stand = "runner-up only" if any(runner) else "agreed"
    return {"verdict": verdict, "votes": stand}


#: Two numbers differ when they are further apart than this share of the scale (a verdict: 0 or 1).
_TOLERANCE = 0.1
#: How many calibration samples' worth of weight the overall error rate has in each bin's rate.
PRIOR_STRENGTH = 2.0


def _prior_rate(name: str, value: str, base: float) -> float:
    """The error rate a bin is shrunk towards: the overall rate ``base``, except where the votes
    say the chosen verdict is doubtful. Answers of about equal accuracy that disagree with it make
    it at best a coin flip (``re-asks split``, self-consistency: SelfCheckGPT, Manakul et al.
    2023), and when more than half of them disagree it is wrong about as often as each of them
    is right (``outvoted``: the majority of independent answers is right more often than one)."""
    if name != "votes":
        return base
    if value == "outvoted":
        return max(1.0 - base, 0.5)
    if value == "re-asks split":
        return max(base, 0.5)
    return base


def _logit(p: float) -> float:
    return float(np.log(p / (1.0 - p)))


@dataclass(frozen=True)
class ErrorModel:
    """The probability that the chosen verdict is wrong, from a trace's :func:`features_of`:
    naive Bayes in odds form (:meth:`fit`). The odds of the overall error rate are moved by each
    feature's bin: by the odds of the error rate of the calibration samples in that bin, shrunk
    by :data:`PRIOR_STRENGTH` samples towards the bin's prior rate (:func:`_prior_rate`). A bin
    seen rarely moves its prior little; with no calibration sample the priors alone decide.

    Attributes:
        wrong, right: calibration samples the chosen judge got wrong and right.
        counts: feature → bin → (wrong count, right count).
        prior: the overall error rate before any calibration sample (the run's own figure).
    """

    wrong: int
    right: int
    counts: Mapping[str, Mapping[str, tuple[int, int]]]
    prior: float = 0.25

    @classmethod
    def fit(cls, rows: Sequence[tuple[Features, bool]], *, prior: float = 0.25) -> ErrorModel:
        """The model of ``(features, chosen verdict wrong)`` rows (rows without a chosen verdict
        are left out; none: the priors alone), ``prior`` the overall error rate before them,
        in (0, 1).

        Raises:
            ValueError: ``prior`` outside (0, 1).
        """
        if not 0.0 < prior < 1.0:
            raise ValueError(f"prior must be in (0, 1), got {prior}")
        measured = [(f, w) for f, w in rows if f.get("verdict") is not None]
        counts: dict[str, dict[str, list[int]]] = {}
        for features, wrong in measured:
            for name, value in features.items():
                if value is not None:
                    cell = counts.setdefault(name, {}).setdefault(value, [0, 0])
                    cell[0 if wrong else 1] += 1
        errors = sum(1 for _, w in measured if w)
        frozen = {n: {b: (c[0], c[1]) for b, c in cells.items()} for n, cells in counts.items()}
        return cls(errors, len(measured) - errors, frozen, prior)

    def probability(self, features: Features) -> float | None:
        """P(the chosen verdict is wrong | the measured features), in (0, 1); None when the
        trace has no chosen verdict."""
        if features.get("verdict") is None:
            return None
        logit = _logit(self._base())
        for name, value in features.items():
            if value is not None:
                logit += self._log_ratio(name, value)
        return float(1.0 / (1.0 + np.exp(-logit)))

    def _base(self) -> float:
        """The overall error rate: the calibration samples' and :attr:`prior`, the latter worth
        :data:`PRIOR_STRENGTH` samples."""
        return (self.wrong + PRIOR_STRENGTH * self.prior) / (self.wrong + self.right + PRIOR_STRENGTH)

    def _log_ratio(self, name: str, value: str) -> float:
        """How much the bin moves the odds of a mistake: the error rate of the calibration samples
        in the bin, shrunk by :data:`PRIOR_STRENGTH` samples towards its prior rate
        (:func:`_prior_rate`), against the overall rate (a log odds ratio)."""
        w, r = self.counts.get(name, {}).get(value, (0, 0))
        base = self._base()
        target = _prior_rate(name, value, base)
        rate = (w + PRIOR_STRENGTH * target) / (w + r + PRIOR_STRENGTH)
        return _logit(rate) - _logit(base)

    def evidence(self, features: Features) -> str | None:
        """The feature that points most towards a mistake, in words, with what the calibration
        samples like it say, e.g. ``its re-asks were split (annotated samples like it: wrong 5
        times in 7)``; None if none points towards a mistake."""
        best: tuple[float, str] | None = None
        for name, value in features.items():
            if value is None:
                continue
            ratio = self._log_ratio(name, value)
            if ratio > 0 and (best is None or ratio > best[0]):
                w, r = self.counts.get(name, {}).get(value, (0, 0))
                seen = (
                    f"annotated samples like it: wrong {w} times in {w + r}"
                    if w + r
                    else "no annotated sample like it"
                )
                best = (ratio, f"{_feature_words(name, value)} ({seen})")
        return None if best is None else best[1]


def _feature_words(name: str, value: str) -> str:
    if name == "votes":
        return {
            "agreed": "its re-asks and the runner-up agreed",
            "runner-up only": "only the runner-up disagreed",
            "re-asks split": "its re-asks were split",
            "outvoted": "its re-asks and the runner-up outvoted it",
        }[value]
    return f"it said {value}"


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
    evidence: str | None = None,
) -> str:
    """A human-readable reason, the estimated error first, then the signals, e.g. ``the chosen
    judge is wrong here with probability 0.71 (estimated): its re-asks and the runner-up outvoted
    it (annotated samples like it: wrong 3 times in 4); the two best instructions disagree: the
    chosen (candidate 7) says 0, candidate 4 (finalist) says 1; ...``.

    Args:
        labels: the committee members' names, in committee order.
        nearest: (annotated sample index, cosine) of the most similar annotated sample, if any.
        duplicate: the index of an annotated sample with the same text, if any.
        fmt: formats a verdict (default: ``0``/``1`` for whole numbers, else 2 decimals).
        evidence: what the calibration says of the trace's strongest feature
            (:meth:`ErrorModel.evidence`), said beside its estimated error.
    """
    show = fmt or _fmt
    parts: list[str] = []
    v = votes.verdicts
    if signals.error is not None:
        said = f"the chosen judge is wrong here with probability {signals.error:.2f} (estimated)"
        parts.append(f"{said}{': ' + evidence if evidence else ''}")
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
        if len(parts) == (signals.error is not None):
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
