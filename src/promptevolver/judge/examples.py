"""Teaching examples: which annotated samples a judge is shown beside the input it judges.

A judge prompt may carry *examples* (demonstrations): other annotated samples, each shown with
the human's verdict and reason before the judged input (:meth:`Prompt.render
<promptevolver.judge.prompts.Prompt.render>`). An :class:`ExampleStore` holds the pool they are
drawn from (the annotated train samples of a run: never a sample the run holds out) and a policy:

* ``none``: no example;
* ``static``: one fixed set for every input, the *most corrected*: the train corrections (samples
  whose human verdict differs from the recorded one) grouped by TF-IDF similarity of their human
  reason (their text when there is none), one medoid of each of the ``k`` largest groups;
* ``retrieval``: per input, the ``k`` pool samples most similar to it by TF-IDF cosine of
  ``user_input`` + ``response`` (scikit-learn's ``TfidfVectorizer``, sublinear tf), at least
  ``min_similarity``, never the judged sample itself (same text), the most similar shown last,
  closest to the judged input (as Ragas' ``SimpleLLMMetric.align`` retrieves k = 3 examples).

A candidate of the search carries its own static set as the policy ``static:12,40,7`` (dataset
positions of pool samples, prompt order; :func:`static_policy`): mutation swaps, adds or drops
demos, crossover mixes its parents' sets (``optimizers/operators/demos.py``); plain ``static`` is
the store's own set.

Both policies follow judgeworld's ``harness_fewshot.py`` (``most_corrected`` and
``retrieval_policy``), whose figures the benchmarks compare with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from promptevolver.annotations.models import SampleAnnotation

__all__ = ["POLICIES", "ExampleStore", "Policy", "sample_text", "static_policy", "static_positions"]

Policy = Literal["none", "static", "retrieval"]
#: The policies a candidate may carry (``auto`` is a choice among them, not a policy).
POLICIES: tuple[Policy, ...] = ("none", "static", "retrieval")

#: Two corrections whose reasons are at least this similar (TF-IDF cosine) are one group.
GROUP_SIMILARITY = 0.5


#: The prefix of a policy that carries its own static set (:func:`static_policy`).
STATIC_PREFIX = "static:"


def static_policy(positions: Sequence[int]) -> str:
    """The policy of a candidate carrying its own static set: ``static:12,40,7`` (dataset
    positions of pool samples, in prompt order; ``static:`` for an empty set)."""
    return STATIC_PREFIX + ",".join(str(int(p)) for p in positions)


def static_positions(policy: str) -> list[int] | None:
    """The dataset positions of a :func:`static_policy` (None for another policy)."""
    if not policy.startswith(STATIC_PREFIX):
        return None
    rest = policy[len(STATIC_PREFIX) :]
    return [int(p) for p in rest.split(",")] if rest else []


def sample_text(metric_input: Mapping[str, Any]) -> str:
    """The text retrieval compares: ``user_input`` and ``response``, one line each."""
    return f"{metric_input.get('user_input') or ''}\n{metric_input.get('response') or ''}"


class ExampleStore:
    """The pool of annotated samples examples are drawn from, and the two policies over it.

    Args:
        samples: the pool, annotated samples with a human label (their order is the store's).
        positions: each pool sample's position in the run's dataset (for reports), same length.
        k: examples per input (≥ 1).
        min_similarity: retrieval shows only samples at least this similar (cosine in [0, 1]).
        binary: whether labels are 0/1 verdicts.
        prompt_name: the judge prompt whose edited output holds the human's reason.
        corrections: pool indices of the verdict corrections (the human's label differs from
            the recorded verdict; a run passes its evidence's); None: the rejected samples.
        static: pool indices of the static set (as :meth:`to_dict` saved it); None: computed
            from the corrections.

    Raises:
        ValueError: ``k`` < 1, ``min_similarity`` outside [0, 1], or lengths that differ.
    """

    def __init__(
        self,
        samples: Sequence[SampleAnnotation],
        positions: Sequence[int],
        *,
        k: int = 3,
        min_similarity: float = 0.0,
        binary: bool = True,
        prompt_name: str | None = None,
        corrections: Sequence[int] | None = None,
        static: Sequence[int] | None = None,
    ) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if not 0.0 <= min_similarity <= 1.0:
            raise ValueError(f"min_similarity must be in [0, 1], got {min_similarity}")
        if len(samples) != len(positions):
            raise ValueError("samples and positions differ in length")
        self.samples = list(samples)
        self.positions = [int(p) for p in positions]
        self.k, self.min_similarity, self.binary, self.prompt_name = k, min_similarity, binary, prompt_name
        self._texts = [" ".join(sample_text(s.metric_input).split()) for s in self.samples]
        self._vectorizer: TfidfVectorizer | None = None
        self._matrix: Any = None
        if any(t.strip() for t in self._texts):
            self._vectorizer = TfidfVectorizer(sublinear_tf=True)
            self._matrix = self._vectorizer.fit_transform(self._texts)
        if corrections is None:
            corrections = [i for i, s in enumerate(self.samples) if not s.is_accepted]
        self.static = [int(i) for i in static] if static is not None else self._most_corrected(corrections)

    def __len__(self) -> int:
        return len(self.samples)

    def extended(self, samples: Sequence[SampleAnnotation], positions: Sequence[int]) -> ExampleStore:
        """A store whose pool also holds ``samples`` (at dataset ``positions``; those already in
        the pool are skipped), with the same settings and static set (the new samples come
        after the pool, so the static indices keep their meaning)."""
        have = set(self.positions)
        new = [(s, int(p)) for s, p in zip(samples, positions) if int(p) not in have]
        return ExampleStore(
            [*self.samples, *(s for s, _ in new)],
            [*self.positions, *(p for _, p in new)],
            k=self.k,
            min_similarity=self.min_similarity,
            binary=self.binary,
            prompt_name=self.prompt_name,
            static=self.static,
        )

    def with_static(self, positions: Sequence[int]) -> ExampleStore:
        """This store with the static set at dataset ``positions`` (prompt order). Raises
        ValueError for a position not in the pool."""
        indices = self.indices_for(static_policy(positions), {})
        return ExampleStore(
            self.samples,
            self.positions,
            k=self.k,
            min_similarity=self.min_similarity,
            binary=self.binary,
            prompt_name=self.prompt_name,
            static=indices,
        )

    def key(self, policy: str) -> str:
        """The policy with its settings, e.g. ``retrieval k=3 min_similarity=0`` (memo keys)."""
        if policy == "none":
            return "none"
        if policy == "static" or policy.startswith(STATIC_PREFIX):
            return f"static {self.positions_for(policy, {})}"
        return f"{policy} k={self.k} min_similarity={self.min_similarity:g}"

    def indices_for(self, policy: str, metric_input: Mapping[str, Any], *, k: int | None = None) -> list[int]:
        """Indices into the pool of the examples shown with ``metric_input``, in prompt order
        (the most similar last); retrieval shows ``k`` (default the store's). Raises ValueError
        for an unknown policy."""
        if policy == "none" or not self.samples:
            return []
        if policy == "static":
            return list(self.static)
        own = static_positions(policy)
        if own is not None:
            index = {p: i for i, p in enumerate(self.positions)}
            missing = [p for p in own if p not in index]
            if missing:
                raise ValueError(f"static set {policy!r}: positions {missing} are not in the pool")
            return [index[p] for p in own]
        if policy != "retrieval":
            raise ValueError(f"unknown example policy {policy!r}; policies: {list(POLICIES)}")
        if self._vectorizer is None:
            return []
        text = " ".join(sample_text(metric_input).split())
        query = self._vectorizer.transform([text])
        sims = np.asarray((self._matrix @ query.T).todense()).ravel()
        order = np.argsort(-sims, kind="stable")
        picked = [int(i) for i in order if self._texts[i] != text and sims[i] >= self.min_similarity][
            : self.k if k is None else k
        ]
        return picked[::-1]

    def positions_for(self, policy: str, metric_input: Mapping[str, Any]) -> list[int]:
        """Dataset positions of the examples shown with ``metric_input`` (prompt order)."""
        return [self.positions[i] for i in self.indices_for(policy, metric_input)]

    def examples_for(
        self, policy: str, metric_input: Mapping[str, Any], *, k: int | None = None
    ) -> list[SampleAnnotation]:
        """The annotated samples shown with ``metric_input`` (prompt order; empty under none;
        ``k`` as in :meth:`indices_for`)."""
        return [self.samples[i] for i in self.indices_for(policy, metric_input, k=k)]

    def _most_corrected(self, corrections: Sequence[int]) -> list[int]:
        """One medoid of each of the ``k`` largest groups of corrections (module docstring)."""
        corrections = sorted(set(corrections))
        if not corrections:
            return []
        texts = [self._reason(self.samples[i]) or self._texts[i] for i in corrections]
        if not any(t.strip() for t in texts):
            return corrections[: self.k]
        matrix = TfidfVectorizer(sublinear_tf=True).fit_transform(texts)
        sims = np.asarray((matrix @ matrix.T).todense())
        left = set(range(len(corrections)))
        out: list[int] = []
        while left and len(out) < self.k:
            ids = sorted(left)
            sub = sims[np.ix_(ids, ids)]
            support = (sub >= GROUP_SIMILARITY).sum(axis=1) + sub.mean(axis=1) * 1e-3
            j = ids[int(np.argmax(support))]
            out.append(corrections[j])
            left -= {ids[t] for t in np.nonzero(sims[j, ids] >= GROUP_SIMILARITY)[0]} | {j}
        return out

    def _reason(self, sample: SampleAnnotation) -> str:
        names = [self.prompt_name] if self.prompt_name else list(sample.prompts)
        for name in names:
            if name is None:
                continue
            expected = sample.expected_output(name) or {}
            reason = expected.get("reason")
            if isinstance(reason, str) and reason.strip():
                return reason
        return ""

    # --- result.json ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The store as result.json holds it: settings, the pool's dataset ``positions``, the
        ``static`` set (indices into the pool) and the pool ``samples`` themselves (so a
        finished run judges without its dataset)."""
        return {
            "k": self.k,
            "min_similarity": self.min_similarity,
            "binary": self.binary,
            "prompt_name": self.prompt_name,
            "positions": list(self.positions),
            "static": list(self.static),
            "samples": [s.model_dump(mode="json") for s in self.samples],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExampleStore:
        """The store :meth:`to_dict` wrote. Raises pydantic's ValidationError for a bad sample."""
        samples = [SampleAnnotation.model_validate(s) for s in data["samples"]]
        return cls(
            samples,
            data["positions"],
            k=int(data["k"]),
            min_similarity=float(data["min_similarity"]),
            binary=bool(data.get("binary", True)),
            prompt_name=data.get("prompt_name"),
            static=data["static"],
        )
