"""A deterministic simulated LLM: a judge that a better instruction really improves.

:class:`SimulatedJudgeLLM` is the default LLM of a run (``llm: {provider: fake}``). It is built
from an annotation set, its *world*, and answers two kinds of calls:

**Judge calls** (a prompt rendered by :class:`promptevolver.judge.prompts.Prompt`). The sample is found
by its input fields. When the original judge (``prompt_output.verdict``) agreed with the human,
that verdict is returned. When it disagreed, the sample has *correction terms*: the ``top_terms``
most salient words of the human's correction — the edited reason, or, for a rejected sample with
no edit, its input text — ranked by TF-IDF (``sklearn.feature_extraction.text.TfidfVectorizer``,
English stop words plus :data:`JUDGE_STOP_WORDS`, crude suffix stemming, fitted on every
sample's correction text). If the
instruction contains at least ``min(min_matches, len(terms))`` of them, the instruction
*addresses* the correction and the human label is returned; otherwise the original verdict. Then
small noise: the verdict flips with probability ``noise`` (+0.002 per instruction word beyond
``free_words``, capped at 0.5, a stand-in for long prompts diluting attention). The noise draw is a
hash of (seed, instruction, sample, sample_index), so answers do not depend on call order.

**Meta calls** (the operators' meta-prompts, recognised by their section headings). The fake
writes instructions only from what the prompt shows: the reasons (or, without one, the input
text) of the examples or failing samples in it, the feedback items, the parents. It never reads
labels of its world for them. Its instructions are a task line plus ``Check in particular:
<terms>.`` lines; crossover merges the parents' term lists (at most ``max_terms``).

Limits: words stand in for meaning (a synonym does not address a correction); a sample unknown to
the world gets a hash-drawn verdict; token counts are whitespace words.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from promptevolver.annotations import SingleMetricAnnotation
from promptevolver.judge import prompts as ops
from promptevolver.judge.prompts import split_rendered
from promptevolver.llm.base import BaseLLMClient, Completion, LLMRequest
from promptevolver.llm.fake import count_tokens
from promptevolver.llm.pricing import Price

__all__ = ["JUDGE_STOP_WORDS", "SimulatedJudgeLLM", "sample_key"]

#: Words any judge instruction or reason naturally contains; never correction terms.
JUDGE_STOP_WORDS = frozenset(
    (
        "response responses answer answers question user input output reference verdict reason judge "
        "provided provides provide correct correctly accurate accurately information criteria criterion "
        "evaluate instruction assistant does doesn"
    ).split()
)
_STOP_SET = frozenset(ENGLISH_STOP_WORDS | JUDGE_STOP_WORDS)
_TOKEN = r"(?u)\b[a-zA-Z][a-zA-Z]{2,}\b"
TASK_LINE = (
    "Judge whether the response meets the criterion for the given input; verdict 1 if it does, 0 if not."
)


def sample_key(inputs: dict[str, Any]) -> str:
    """Identity of a sample from its judge-visible input fields (None and empty values ignored)."""
    shown = {k: v for k, v in inputs.items() if v not in (None, "", [])}
    return hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class _Truth:
    original: int
    label: int
    original_reason: str
    corrected_reason: str
    terms: tuple[str, ...]


def stem(word: str) -> str:
    """A crude suffix stripper so that ``wrongly``/``wrong`` and ``mentions``/``mentioned`` meet.

    Applied to a fixed point, so ``stem(stem(w)) == stem(w)`` (terms survive being written out).
    """
    while True:
        for suffix in ("ingly", "edly", "ing", "ly", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                word = word[: -len(suffix)]
                break
        else:
            return word


def analyze(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed words of ``text``, in order."""
    return [stem(w) for w in (m.lower() for m in re.findall(_TOKEN, text)) if w not in _STOP_SET]


def _vectorizer() -> TfidfVectorizer:
    return TfidfVectorizer(analyzer=analyze)


def top_terms(texts: Sequence[str], k: int, exclude: frozenset[str] = frozenset()) -> list[list[str]]:
    """The ``k`` highest TF-IDF words of each text, fitted on ``texts`` (ties alphabetical)."""
    if not any(re.search(_TOKEN, t) for t in texts):
        return [[] for _ in texts]
    vec = _vectorizer()
    try:
        matrix = vec.fit_transform(texts)
    except ValueError:  # only stop words
        return [[] for _ in texts]
    vocab = vec.get_feature_names_out()
    out = []
    for row in matrix:
        pairs = sorted(((-w, vocab[j]) for j, w in zip(row.indices, row.data) if vocab[j] not in exclude))
        out.append([term for _, term in pairs[:k]])
    return out


def words(text: str) -> set[str]:
    """The stemmed content-word set of ``text``, as the simulation tokenises it."""
    return set(analyze(text))


class SimulatedJudgeLLM(BaseLLMClient):
    """Deterministic simulated judge and instruction writer over an annotation world.

    Args:
        dataset: the world: annotated samples with their original and human verdicts.
        random_seed: seed of the noise hash.
        prompt_name: the judge prompt whose ``prompt_output`` is the original verdict.
        noise: base probability in [0, 0.5] that a verdict flips.
        top_terms: correction terms kept per disagreeing sample.
        min_matches: terms an instruction must contain to address a correction.
        free_words: instruction length (words) beyond which noise grows.
        max_terms: cap on the terms in an instruction the fake writes.
        malformed_rate: probability in [0, 1] that a judge answer is cut-off JSON (fault injection).
        max_concurrency, price: see :class:`~promptevolver.llm.base.BaseLLMClient` (a price
            makes the simulation report what the same tokens would cost, in USD).
    """

    provider = "simulated"

    def __init__(
        self,
        *,
        dataset: SingleMetricAnnotation,
        random_seed: int,
        prompt_name: str = "single_turn_aspect_critic_prompt",
        noise: float = 0.02,
        top_terms: int = 8,
        min_matches: int = 2,
        free_words: int = 120,
        max_terms: int = 16,
        malformed_rate: float = 0.0,
        max_concurrency: int = 64,
        price: Price | None = None,
    ) -> None:
        if not 0.0 <= noise <= 0.5:
            raise ValueError(f"noise must be in [0, 0.5], got {noise}")
        if not 0.0 <= malformed_rate <= 1.0:
            raise ValueError(f"malformed_rate must be in [0, 1], got {malformed_rate}")
        if top_terms < 1 or min_matches < 1:
            raise ValueError("top_terms and min_matches must be >= 1")
        super().__init__(max_attempts=1, retry_initial_s=0.0, max_concurrency=max_concurrency, price=price)
        self.random_seed = random_seed
        self.prompt_name = prompt_name
        self.noise = noise
        self.top_terms = top_terms
        self.min_matches = min_matches
        self.free_words = free_words
        self.max_terms = max_terms
        self.malformed_rate = malformed_rate
        self.world = self._build_world(dataset)

    def __repr__(self) -> str:
        return (
            f"SimulatedJudgeLLM(samples={len(self.world)}, random_seed={self.random_seed}, "
            f"noise={self.noise})"
        )

    # --- the world ---------------------------------------------------------------------------
    def _build_world(self, dataset: SingleMetricAnnotation) -> dict[str, _Truth]:
        labels = dataset.labels()
        rows = []
        for sample, label in zip(dataset.samples, labels):
            prompt = sample.prompts.get(self.prompt_name)
            output = (prompt.prompt_output if prompt else None) or {}
            original = int(output.get("verdict", sample.metric_output))
            edited = (prompt.edited_output if prompt else None) or {}
            correction = edited.get("reason") or " ".join(
                str(v) for k, v in sorted(sample.metric_input.items()) if isinstance(v, str)
            )
            rows.append((sample, label, original, str(output.get("reason", "")), str(correction)))
        terms = top_terms([r[4] for r in rows], self.top_terms)
        world = {}
        for (sample, label, original, reason, correction), t in zip(rows, terms):
            human = original if label is None else int(round(label))
            world[sample_key(sample.metric_input)] = _Truth(original, human, reason, correction, tuple(t))
        return world

    def addresses(self, instruction: str, truth: _Truth) -> bool:
        """True when ``instruction`` contains enough of the sample's correction terms."""
        need = min(self.min_matches, len(truth.terms))
        return need > 0 and len(words(instruction) & set(truth.terms)) >= need

    def noise_rate(self, instruction: str) -> float:
        extra = max(0, len(instruction.split()) - self.free_words) * 0.002
        return min(0.5, self.noise + extra)

    def cache_identity(self) -> dict[str, Any]:
        """Provider kind plus every setting and the world the answers depend on."""
        names = ("random_seed", "prompt_name", "noise", "top_terms", "min_matches", "free_words")
        settings = {name: getattr(self, name) for name in (*names, "max_terms", "malformed_rate")}
        world = sorted((key, vars(truth)) for key, truth in self.world.items())
        digest = hashlib.sha256(json.dumps([settings, world], sort_keys=True).encode()).hexdigest()
        return {"provider": self.provider, "model": f"simulated-judge-{digest[:16]}"}

    # --- dispatch ----------------------------------------------------------------------------
    async def _send(self, request: LLMRequest) -> Completion:
        text = self.answer(request)
        prompt_text = " ".join(m.content for m in request.messages)
        return Completion(
            text=text, prompt_tokens=count_tokens(prompt_text), completion_tokens=count_tokens(text)
        )

    def answer(self, request: LLMRequest) -> str:
        """The simulated answer to ``request``: a pure function, no usage counted, never raises
        for an unrecognised prompt (it answers a JSON error object instead)."""
        rendered = split_rendered(request.messages)
        if rendered is not None:
            return self._judge(*rendered, request.sample_index)
        user = request.messages[-1].content
        writers: list[tuple[str, Callable[[str], str]]] = [
            (ops.FAILING_SAMPLES, self._feedback),
            (ops.FEEDBACK_TO_APPLY, self._rewrite),
            (ops.CROSSOVER_PARENT_A, self._crossover),
            (ops.EXAMPLES, self._reverse_engineer),
        ]
        for heading, writer in writers:
            if heading + "\n" in user:
                return writer(user)
        return json.dumps({"error": "the simulated LLM does not recognise this prompt"})

    # --- judge -------------------------------------------------------------------------------
    def _judge(self, instruction: str, inputs: dict[str, Any], sample_index: int) -> str:
        key = sample_key(inputs)
        truth = self.world.get(key)
        if _unit(self.random_seed, "malformed", instruction, key, sample_index) < self.malformed_rate:
            return '{"reason": "The response is'
        if truth is None:
            verdict = int(_unit(self.random_seed, "unknown", instruction, key) < 0.5)
            return json.dumps({"reason": "No basis to judge this input.", "verdict": verdict})
        addressed = truth.original != truth.label and self.addresses(instruction, truth)
        verdict = truth.label if addressed else truth.original
        reason = truth.corrected_reason if addressed else truth.original_reason
        if _unit(self.random_seed, "noise", instruction, key, sample_index) < self.noise_rate(instruction):
            verdict = 1 - verdict
        return json.dumps({"reason": reason, "verdict": verdict})

    # --- meta: writing instructions from what is shown -----------------------------------------
    def _shown(self, body: str | None) -> list[str]:
        texts = []
        for line in (body or "").splitlines():
            if not line.startswith("{"):
                continue
            item = json.loads(line)
            reason = (item.get("expected_output") or {}).get("reason")
            inputs = item.get("input") or {}
            texts.append(reason or " ".join(str(v) for k, v in sorted(inputs.items()) if isinstance(v, str)))
        return texts

    def _instruction(self, terms: Sequence[str], body: str = TASK_LINE) -> str:
        kept = list(dict.fromkeys(terms))[: self.max_terms]
        return body + (f"\nCheck in particular: {', '.join(kept)}." if kept else "")

    def _reverse_engineer(self, user: str) -> str:
        per_example = top_terms(self._shown(ops.section(user, ops.EXAMPLES)), 3)
        merged = [t for rank in range(3) for terms in per_example for t in terms[rank : rank + 1]]
        return json.dumps({"instruction": self._instruction(merged)})

    def _feedback(self, user: str) -> str:
        current = words(ops.section(user, ops.CURRENT_INSTRUCTION) or "")
        per_sample = top_terms(
            self._shown(ops.section(user, ops.FAILING_SAMPLES)), 4, exclude=frozenset(current)
        )
        items = [f"Make the judge check: {', '.join(t)}." for t in per_sample if t]
        return json.dumps({"feedback": items})

    def _rewrite(self, user: str) -> str:
        body, terms = split_terms(ops.section(user, ops.CURRENT_INSTRUCTION) or "")
        items = ops.section(user, ops.FEEDBACK_TO_APPLY) or ""
        added = [
            t.strip(" .")
            for line in items.splitlines()
            if ":" in line
            for t in line.split(":", 1)[1].split(",")
        ]
        return json.dumps({"instruction": self._instruction(terms + [t for t in added if t], body)})

    def _crossover(self, user: str) -> str:
        body, a = split_terms(ops.section(user, ops.CROSSOVER_PARENT_A) or "")
        _, b = split_terms(ops.section(user, ops.CROSSOVER_PARENT_B) or "")
        interleaved = [t for pair in zip(a, b) for t in pair] + a[len(b) :] + b[len(a) :]
        return json.dumps({"instruction": self._instruction(interleaved, body)})


def split_terms(instruction: str) -> tuple[str, list[str]]:
    """(body, terms) of an instruction: its ``Check ...:`` term lists and every other line."""
    body: list[str] = []
    terms: list[str] = []
    for line in instruction.splitlines():
        if line.lower().startswith(("check", "also check")) and ":" in line:
            terms.extend(t.strip(" .") for t in line.split(":", 1)[1].split(","))
        else:
            body.append(line)
    return "\n".join(body).strip() or TASK_LINE, [t for t in terms if t]
