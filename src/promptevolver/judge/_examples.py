"""Teaching examples: which annotated samples a judge is shown beside the input it judges.

A judge prompt may carry *examples* (demonstrations): other annotated samples, each shown with
the human's verdict and reason before the judged input (:meth:`Prompt.render
<promptevolver.judge._prompts.Prompt.render>`). An :class:`ExampleStore` holds the pool they are
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
demos, crossover mixes its parents' sets (``optimizers/operators/_demos.py``); plain ``static`` is
the store's own set.

**Similarity.** Retrieval compares TF-IDF vectors by default. A store given an *embedder*
(:class:`Embedder`: ``optimizer.examples.similarity: embeddings``, an OpenAI-compatible
``/embeddings`` endpoint through :class:`~promptevolver.llm.openai.OpenAIEmbeddings`, cached)
compares embeddings instead (cosine of the vectors); the static set is chosen by TF-IDF of the
human reasons either way. The store records which similarity it uses (:meth:`ExampleStore.to_dict`,
``similarity``), and a store read back (:meth:`ExampleStore.from_dict`) retrieves the same way:
an embeddings store embeds each new input it is asked about (and its pool, unless the cache file
holds it), so it needs the endpoint and the key named in its record. :meth:`ExampleStore.prepare`
embeds what a step will ask about in one go, from async code, before any judge call.

Both policies follow judgeworld's ``harness_fewshot.py`` (``most_corrected`` and
``retrieval_policy``), whose figures the benchmarks compare with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from promptevolver.annotations import SampleAnnotation
from promptevolver.errors import LLMError, PermanentLLMError

__all__ = [
    "POLICIES",
    "Embedder",
    "ExampleStore",
    "Policy",
    "prepare_store",
    "sample_text",
    "static_policy",
    "static_positions",
]

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


def _compared(metric_input: Mapping[str, Any]) -> str:
    return " ".join(sample_text(metric_input).split())


@runtime_checkable
class Embedder(Protocol):
    """What retrieval by embeddings needs (:class:`~promptevolver.llm.openai.OpenAIEmbeddings`).

    Attributes:
        settings: what a result records to rebuild it (model, ``base_url`` redacted or with
            ``${NAME}`` placeholders, ``api_key_env``...; never a key).
    """

    @property
    def settings(self) -> Mapping[str, Any]: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, shape ``(len(texts), dim)`` (blocking; cached by the
        implementation). Raises :class:`~promptevolver.errors.LLMError` when it cannot."""
        ...


#: An embedder, or how to build one on first use (a store read from result.json builds its
#: client only when it retrieves: a report or a static store never needs the key).
EmbedderSource = Embedder | Callable[[], Embedder]


#: Rows of the similarity matrix computed at a time (:func:`_support`): memory stays linear in
#: the corrections (a 6,000-correction run held a 288 MB dense matrix, most of its peak).
_SUPPORT_ROWS = 128


def _support(matrix: Any, ids: Sequence[int]) -> np.ndarray:
    """For each row ``i`` of ``ids``: how many of ``ids`` are at least :data:`GROUP_SIMILARITY`
    similar to it (cosine of the TF-IDF rows of ``matrix``), plus 1e-3 × its mean similarity to
    them (a tie-break), computed :data:`_SUPPORT_ROWS` rows at a time; each row's figures are the
    ones the whole ``ids × ids`` matrix gives."""
    sub = matrix[ids]
    out = np.empty(len(ids))
    for start in range(0, len(ids), _SUPPORT_ROWS):
        block = np.asarray((sub[start : start + _SUPPORT_ROWS] @ sub.T).todense())
        out[start : start + len(block)] = (block >= GROUP_SIMILARITY).sum(axis=1) + block.mean(axis=1) * 1e-3
    return out


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix, dtype=np.float64), where=norms > 0)


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
        embedder: retrieval by embeddings (an :class:`Embedder`, or a function that builds one
            on first use); None: TF-IDF.
        fallback: why a store asked to use embeddings uses TF-IDF (the user asked for that
            fallback: ``on_failure: tfidf``), recorded in :meth:`to_dict`; None otherwise.

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
        embedder: EmbedderSource | None = None,
        fallback: Mapping[str, Any] | None = None,
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
        self._texts = [_compared(s.metric_input) for s in self.samples]
        self._embedder_source = embedder
        self._embedder: Embedder | None = embedder if isinstance(embedder, Embedder) else None
        self._pool_vectors: np.ndarray | None = None
        self.fallback = None if fallback is None else dict(fallback)
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
            **self.similarity_arguments(),
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
            **self.similarity_arguments(),
        )

    # --- similarity -----------------------------------------------------------------------------
    @property
    def similarity(self) -> Literal["tfidf", "embeddings"]:
        """What retrieval compares: ``tfidf`` or ``embeddings``."""
        return "tfidf" if self._embedder_source is None else "embeddings"

    def similarity_arguments(self) -> dict[str, Any]:
        """The similarity of this store, for a store made from it (the embedder is shared: what
        it embedded stays embedded)."""
        return {"embedder": self._embedder or self._embedder_source, "fallback": self.fallback}

    def embedder(self) -> Embedder | None:
        """The embedder (built now from the store's record if it was read from one); None under
        TF-IDF. Raises ConfigError when the record's key variable is unset."""
        if self._embedder is None and self._embedder_source is not None:
            assert not isinstance(self._embedder_source, Embedder)
            self._embedder = self._embedder_source()
        return self._embedder

    def use_tfidf(self, cause: str) -> None:
        """Retrieve by TF-IDF from now on, because embeddings failed with ``cause`` (only when
        the user asked for that fallback); :meth:`to_dict` records it."""
        record = self.similarity_record()
        self.fallback = {"from": record, "cause": cause}
        self._embedder_source = self._embedder = None

    def similarity_record(self) -> dict[str, Any]:
        """``{"kind": "tfidf"}`` or ``{"kind": "embeddings", **settings}`` (no secret), with
        ``fallback`` when embeddings were given up for TF-IDF."""
        if self._embedder_source is None:
            return {"kind": "tfidf", **({"fallback": self.fallback} if self.fallback else {})}
        if self._embedder is not None:
            return {"kind": "embeddings", **dict(self._embedder.settings)}
        return {"kind": "embeddings", **dict(getattr(self._embedder_source, "settings", {}))}

    def embedding_usage(self) -> dict[str, Any] | None:
        """The embedder's counters (calls, texts, tokens, cache hits, retries, failures; its
        ``usage.to_dict()``) when this store retrieves by embeddings and the embedder counts;
        else None."""
        usage = getattr(self._embedder, "usage", None)
        return usage.to_dict() if usage is not None and hasattr(usage, "to_dict") else None

    async def prepare(self, metric_inputs: Sequence[Mapping[str, Any]] = ()) -> None:
        """Embed the pool and ``metric_inputs`` now, in a worker thread (a no-op under TF-IDF):
        a step that will retrieve for these inputs makes its embedding calls here, before any
        judge call, and a dead endpoint fails here. Raises LLMError (after retries)."""
        embedder = self.embedder()
        if embedder is None:
            return
        texts = [*self._texts, *(_compared(m) for m in metric_inputs)]
        try:
            await asyncio.to_thread(embedder.embed, texts)
        except asyncio.CancelledError:  # interrupted: the worker thread's requests stop too
            cancel = getattr(embedder, "cancel", None)
            if cancel is not None:
                cancel()
            raise

    def _similarities(self, text: str) -> np.ndarray | None:
        """Cosine of ``text`` with each pool sample (None: nothing to compare)."""
        embedder = self.embedder()
        if embedder is None:
            if self._vectorizer is None:
                return None
            query = self._vectorizer.transform([text])
            return np.asarray((self._matrix @ query.T).todense()).ravel()
        if self._pool_vectors is None:
            self._pool_vectors = _unit(np.asarray(embedder.embed(self._texts), dtype=np.float64))
        query = _unit(np.asarray(embedder.embed([text]), dtype=np.float64))[0]
        if query.shape[0] != self._pool_vectors.shape[1]:
            raise ValueError(f"embeddings of {query.shape[0]} and {self._pool_vectors.shape[1]} dimensions")
        return np.asarray(self._pool_vectors @ query)

    def key(self, policy: str) -> str:
        """The policy with its settings, e.g. ``retrieval k=3 min_similarity=0`` (memo keys)."""
        if policy == "none":
            return "none"
        if policy == "static" or policy.startswith(STATIC_PREFIX):
            return f"static {self.positions_for(policy, {})}"
        model = self.similarity_record().get("model")
        similarity = "" if self.similarity == "tfidf" else f" embeddings={model}"
        return f"{policy} k={self.k} min_similarity={self.min_similarity:g}{similarity}"

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
        text = _compared(metric_input)
        sims = self._similarities(text)
        if sims is None:
            return []
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
        matrix = TfidfVectorizer(sublinear_tf=True).fit_transform(texts).tocsr()
        left = set(range(len(corrections)))
        out: list[int] = []
        while left and len(out) < self.k:
            ids = sorted(left)
            support = _support(matrix, ids)
            j = ids[int(np.argmax(support))]
            out.append(corrections[j])
            row = np.asarray((matrix[j] @ matrix[ids].T).todense()).ravel()
            left -= {ids[t] for t in np.nonzero(row >= GROUP_SIMILARITY)[0]} | {j}
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
            "similarity": self.similarity_record(),
            "samples": [s.model_dump(mode="json") for s in self.samples],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, embedder: Embedder | None = None) -> ExampleStore:
        """The store :meth:`to_dict` wrote, retrieving by the similarity it records (no
        ``similarity``: TF-IDF, as stores written before it). An embeddings store builds its client from the
        record on first retrieval (:func:`promptevolver.config._models.embedder_from_record`),
        unless ``embedder`` is given. Raises pydantic's ValidationError for a bad sample."""
        samples = [SampleAnnotation.model_validate(s) for s in data["samples"]]
        record = dict(data.get("similarity") or {"kind": "tfidf"})
        source: EmbedderSource | None = None
        if record.get("kind") == "embeddings":
            source = embedder if embedder is not None else _builder(record)
        return cls(
            samples,
            data["positions"],
            k=int(data["k"]),
            min_similarity=float(data["min_similarity"]),
            binary=bool(data.get("binary", True)),
            prompt_name=data.get("prompt_name"),
            static=data["static"],
            embedder=source,
            fallback=record.get("fallback"),
        )


async def prepare_store(store: ExampleStore, metric_inputs: Sequence[Mapping[str, Any]]) -> None:
    """:meth:`ExampleStore.prepare` for a finished run's store (``evaluate``, ``examples``): an
    embeddings store embeds its pool and ``metric_inputs`` before any judge call; an endpoint that
    cannot stops with one line. The run's similarity is never swapped for another: the judge was
    verified with it.

    Raises:
        PermanentLLMError: the endpoint failed (after retries), naming the model, the redacted
            URL and the cause. ConfigError: the key's environment variable is unset.
    """
    try:
        await store.prepare(metric_inputs)
    except LLMError as exc:
        raise PermanentLLMError(
            "the run's example store retrieves by embeddings and its endpoint cannot embed the "
            f"samples ({exc})"
        ) from None


def _builder(record: Mapping[str, Any]) -> Callable[[], Embedder]:
    """A function building the embedder a store's ``similarity`` record names."""

    def build() -> Embedder:
        from promptevolver.config import embedder_from_record  # settings become a client there

        return embedder_from_record(record)

    build.settings = {k: v for k, v in record.items() if k != "kind"}  # type: ignore[attr-defined]
    return build
