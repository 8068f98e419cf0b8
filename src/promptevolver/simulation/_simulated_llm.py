"""A deterministic simulated LLM: a judge that a better instruction really improves.

:class:`SimulatedJudgeLLM` is the default LLM of a run (``llm: {provider: fake}``). It is built
from an annotation set alone, its *world*: hidden **criteria** mined from the human corrections
(:mod:`promptevolver.simulation._criteria`: phrases of edited reasons, or of a rejected sample's
response; *generic* ones shared by several corrections, *specific* ones of one sample). It answers
two kinds of calls, both pure functions of the request:

**Judge calls** (a prompt rendered by :class:`promptevolver.judge._prompts.Prompt`). The sample is
found by its input fields. The clean verdict is the human label when the instruction *names* a
criterion the sample carries (a trigger phrase occurs in it, after light normalisation: case,
punctuation, plural ``s``, ``-ly``), else the original judge's verdict. The reason is the human's
edited reason when a criterion is named and one exists, else the original reason. Then the
verdict flips with probability ``p = min(0.5, noise + length + cram + repetition)``:

* length: ``length_penalty`` per instruction word beyond ``free_words``;
* cram: ``cram_penalty`` per criterion named beyond ``max_criteria`` (naming everything is not free);
* repetition: ``repetition_penalty`` when an instruction of 40+ words has under 35 % distinct words.

The draw is a hash of (seed, whitespace-normalised instruction, sample, ``sample_index``), so
answers do not depend on call order. A sample unknown to the world gets a hash-drawn verdict.

**Meta calls** (the operators' meta-prompts) are answered by the simulated prompt engineer,
:class:`~promptevolver.simulation._engineer.SimulatedEngineer`, over the same world: it writes only
from what the prompt shows (see :mod:`promptevolver.simulation._engineer`).

**Teaching examples** (other annotated samples shown with a verdict before the judged input,
:meth:`Prompt.render <promptevolver.judge._prompts.Prompt.render>`'s ``examples``; judgeworld's
rule, its README's "Demonstrations"): an example *teaches* a generic criterion of the judged
sample it carries too when it is shown with its human verdict, and *mis-teaches* it when shown with
the opposite one. With k = sum over the judged sample's criteria of max(0, teaching -
mis-teaching), a sample whose criteria the instruction does not name gets the human verdict with
probability ``1 - (1 - p_demo)^k`` (else the instruction-only rule): one example is a weaker lever
than naming the criterion (``p_demo`` 0.6; three teaching examples give 0.94). Every distinct
example beyond ``demo_free`` (4) adds ``demo_penalty`` (0.01) to the flip probability (a diluted
context); only the last ``demo_cap`` (16) examples count. The draw is keyed by the instruction and
the sample, not by the examples, so a sample taught by k examples is taught by k + 1 too. A prompt
without examples is answered exactly as before.

Limits: phrases stand for meaning (a paraphrase names nothing, a negated mention still names);
token counts are whitespace words.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import warnings
from typing import Any

from promptevolver.annotations import PAIRWISE, PAIRWISE_BINARY, LabelScale, SingleMetricAnnotation
from promptevolver.errors import ContextLengthExceededError
from promptevolver.judge import rendered_examples, split_rendered
from promptevolver.llm import BaseLLMClient, Completion, LLMRequest, count_tokens
from promptevolver.llm.pricing import Price
from promptevolver.simulation import _phrases as ph
from promptevolver.simulation import _writer as writer
from promptevolver.simulation._criteria import Criterion, Truth, World, mine_world, sample_key
from promptevolver.simulation._draws import unit
from promptevolver.simulation._engineer import SimulatedEngineer, sections

__all__ = [
    "KNOWN_SHARE",
    "NOISE_REASON",
    "SimulatedJudgeLLM",
    "SimulationCoverageWarning",
    "sample_key",
    "sections",
]

#: The reason a judge answer carries when its verdict is a noise flip.
NOISE_REASON = "Judged on the overall impression of the response."
#: Below this share of known samples among those judged, the simulated LLM warns.
KNOWN_SHARE = 0.9


class SimulationCoverageWarning(UserWarning):
    """The simulated LLM judges samples its world does not know (it answers them at random)."""


def pairwise_scale(dataset: SingleMetricAnnotation) -> LabelScale | None:
    """The label scale of a pairwise dataset (every sample holds ``response_a`` and
    ``response_b``): a / b when its labels are binary, a / b / tie otherwise; None for another
    dataset (0/1 verdicts or scores)."""
    if not dataset.samples or not all(
        "response_a" in s.metric_input and "response_b" in s.metric_input for s in dataset.samples
    ):
        return None
    return PAIRWISE_BINARY if dataset.is_binary else PAIRWISE


class SimulatedJudgeLLM(BaseLLMClient):
    """Deterministic simulated judge and prompt engineer over an annotation world.

    Args:
        dataset: the world: annotated samples with their original and human verdicts.
        random_seed: seed of every hash draw (noise, discovery).
        prompt_name: the judge prompt whose ``prompt_output`` is the original verdict.
        noise: base probability in [0, 0.5] that a verdict flips.
        top_terms, min_matches: accepted for compatibility with older callers; unused (criteria
            are mined phrases now, see the module docstring).
        free_words: instruction length (words) beyond which noise grows.
        max_terms: most criterion lines the engineer writes into one instruction.
        malformed_rate: probability in [0, 1] that a judge answer is cut-off JSON (fault injection).
        p_discover: probability in [0, 1] that one shown sample teaches a criterion it carries.
        max_criteria: criteria an instruction may name before the cram penalty starts.
        length_penalty: flip probability added per word beyond ``free_words``.
        cram_penalty: flip probability added per criterion named beyond ``max_criteria``.
        repetition_penalty: flip probability added to a repetitive instruction.
        max_concurrency, price: see :class:`~promptevolver.llm._base.BaseLLMClient` (a price
            makes the simulation report what the same tokens would cost, in USD).
        p_demo: probability in [0, 1] that one teaching example teaches the judged sample its
            human verdict (see the module docstring).
        demo_free, demo_penalty, demo_cap: examples shown before the dilution starts (≥ 0), flip
            probability added per distinct example beyond them (≥ 0), most examples that count
            (≥ 1; the closest to the judged input).
        context_tokens: the simulated context window in tokens (None: no limit): a longer prompt
            is refused with :class:`~promptevolver.errors.ContextLengthExceededError`, as an
            OpenAI server answers ``context_length_exceeded``.
        scale: the metric's labels (:class:`~promptevolver.annotations.LabelScale`): named classes
            (a pairwise a / b / tie, a classification) are judged as classes, answered by name
            when the request's schema asks for names; None: a pairwise dataset's
            (:func:`pairwise_scale`), else 0/1 verdicts.

    Samples are recognised by the fields the judge shows (a judge that shows fewer fields than the
    annotations hold still finds its samples), and a pairwise sample with its responses swapped
    as that sample, its verdict mirrored. When fewer than :data:`KNOWN_SHARE` of the samples it
    has judged are known (from 20 on), it warns once: it answers the others with coin flips.

    Raises:
        ValueError: a probability or count out of range.
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
        free_words: int = 200,
        max_terms: int = 16,
        malformed_rate: float = 0.0,
        p_discover: float = 0.7,
        max_criteria: int = 12,
        length_penalty: float = 0.002,
        cram_penalty: float = 0.04,
        repetition_penalty: float = 0.15,
        max_concurrency: int = 64,
        price: Price | None = None,
        context_tokens: int | None = None,
        p_demo: float = 0.6,
        demo_free: int = 4,
        demo_penalty: float = 0.01,
        demo_cap: int = 16,
        scale: LabelScale | None = None,
    ) -> None:
        if not 0.0 <= p_demo <= 1.0 or demo_free < 0 or demo_penalty < 0 or demo_cap < 1:
            raise ValueError("p_demo must be in [0, 1], demo_free and demo_penalty >= 0, demo_cap >= 1")
        self.p_demo, self.demo_free, self.demo_penalty, self.demo_cap = (
            p_demo,
            demo_free,
            demo_penalty,
            demo_cap,
        )
        for name, value in (("noise", noise), ("malformed_rate", malformed_rate), ("p_discover", p_discover)):
            if not 0.0 <= value <= (0.5 if name == "noise" else 1.0):
                raise ValueError(f"{name} out of range, got {value}")
        if top_terms < 1 or min_matches < 1 or max_terms < 1 or max_criteria < 1:
            raise ValueError("top_terms, min_matches, max_terms and max_criteria must be >= 1")
        if min(free_words, length_penalty, cram_penalty, repetition_penalty) < 0:
            raise ValueError("free_words and the penalties must be >= 0")
        super().__init__(max_attempts=1, retry_initial_s=0.0, max_concurrency=max_concurrency, price=price)
        if context_tokens is not None and context_tokens < 1:
            raise ValueError(f"context_tokens must be >= 1, got {context_tokens}")
        self.context_tokens = context_tokens
        self.random_seed = random_seed
        self.prompt_name = prompt_name
        self.noise = noise
        self.top_terms = top_terms
        self.min_matches = min_matches
        self.free_words = free_words
        self.max_terms = max_terms
        self.malformed_rate = malformed_rate
        self.p_discover = p_discover
        self.max_criteria = max_criteria
        self.length_penalty = length_penalty
        self.cram_penalty = cram_penalty
        self.repetition_penalty = repetition_penalty
        self.metric_name = dataset.name
        self.scale = scale = scale if scale is not None else pairwise_scale(dataset)
        self.world: World = mine_world(dataset, prompt_name=prompt_name, scale=scale)
        self._coverage = writer.Coverage(self.world)
        self.named = functools.lru_cache(maxsize=4096)(self._coverage.named)
        self._inputs = [(sample_key(s.metric_input), s.metric_input) for s in dataset.samples]
        self._views: dict[frozenset[str], dict[str, str]] = {}
        self.judged: dict[str, bool] = {}  # shown sample key -> known to the world
        self._warned = False

    def __repr__(self) -> str:
        return (
            f"SimulatedJudgeLLM(samples={len(self.world.samples)}, criteria={len(self.world.criteria)}, "
            f"random_seed={self.random_seed}, noise={self.noise})"
        )

    # --- the world ---------------------------------------------------------------------------
    def truth(self, inputs: dict[str, Any]) -> Truth | None:
        """What the world knows of the sample with these input fields, or None: found by every
        field, else by the fields shown (a judge may show fewer than the annotations hold)."""
        key = sample_key(inputs)
        found = self.world.samples.get(key)
        if found is not None:
            return found
        view = self._view(frozenset(k for k, v in inputs.items() if v not in (None, "", [])))
        known = view.get(key)
        return None if known is None else self.world.samples.get(known)

    def _view(self, fields: frozenset[str]) -> dict[str, str]:
        """Key of the samples' ``fields`` alone -> the sample's key (built once per field set)."""
        view = self._views.get(fields)
        if view is None:
            view = {}
            for key, inputs in self._inputs:
                view.setdefault(sample_key({k: v for k, v in inputs.items() if k in fields}), key)
            self._views[fields] = view
        return view

    def _recognise(self, inputs: dict[str, Any]) -> tuple[Truth | None, bool]:
        """(the sample's truth, whether its responses were shown swapped); (None, False) unknown."""
        truth = self.truth(inputs)
        if truth is None and "response_a" in inputs and "response_b" in inputs:
            mirrored = {**inputs, "response_a": inputs["response_b"], "response_b": inputs["response_a"]}
            truth = self.truth(mirrored)
            if truth is not None:
                return truth, True
        return truth, False

    def _count(self, key: str, known: bool, inputs: dict[str, Any]) -> None:
        """Record a judged sample; warn once when under :data:`KNOWN_SHARE` of them are known."""
        self.judged.setdefault(key, known)
        n = len(self.judged)
        share = sum(self.judged.values()) / n
        if self._warned or n < min(20, len(self.world.samples)) or share >= KNOWN_SHARE:
            return
        self._warned = True
        fields = sorted({k for _, i in self._inputs for k in i})
        why = (
            f"they are not among the {len(self.world.samples)} annotations it was built from"
            if set(inputs) <= set(fields)
            else f"the judge shows the fields {sorted(inputs)}; the annotations hold {fields}"
        )
        warnings.warn(
            f"the simulated LLM knows only {sum(self.judged.values())} of the {n} samples it has judged "
            f"({share:.0%}; it needs {KNOWN_SHARE:.0%}): it answers the others with coin flips, so "
            f"figures on them measure nothing ({why})",
            SimulationCoverageWarning,
            stacklevel=2,
        )

    def known_share(self) -> float | None:
        """The share of the distinct samples judged so far that the world knows (None: none)."""
        return None if not self.judged else sum(self.judged.values()) / len(self.judged)

    def _classes(self) -> int:
        return len(self.world.labels) or 2

    def _mirror(self, code: int) -> int:
        """The verdict code of a pairwise verdict seen with its responses swapped (a <-> b)."""
        if not self.world.labels or self.scale is None:
            return 1 - code
        space = self.scale.label_space() or ()
        value = 1.0 - space[code].value
        return next((k for k, c in enumerate(space) if c.value == value), code)

    def _shown(self, code: int, schema: dict[str, Any] | None) -> tuple[str, Any]:
        """(the answer's label field, the verdict as the request's schema asks: a name when it
        lists names, else the number)."""
        properties = (schema or {}).get("properties") or {}
        field = next((k for k in properties if k != "reason"), "verdict")
        enum = properties.get(field, {}).get("enum") or []
        if enum and all(isinstance(e, str) for e in enum):
            if self.world.labels:
                return field, self.world.labels[code]
            names = {c.value: c.name for c in (self.scale.label_space() if self.scale else None) or ()}
            return field, names.get(float(code), str(code))
        return field, code

    def applies(self, instruction: str, truth: Truth) -> bool:
        """True when ``instruction`` names a criterion the sample carries."""
        return bool(self.named(instruction) & set(truth.criteria))

    def noise_rate(self, instruction: str) -> float:
        """Flip probability of a verdict under ``instruction`` (base noise plus penalties, ≤ 0.5)."""
        words = len(instruction.split())
        p = self.noise + max(0, words - self.free_words) * self.length_penalty
        p += max(0, len(self.named(instruction)) - self.max_criteria) * self.cram_penalty
        tokens = ph.key_sequence(instruction)
        if len(tokens) >= 40 and len(set(tokens)) < 0.35 * len(tokens):
            p += self.repetition_penalty
        return min(0.5, p)

    def sentence(self, criterion: Criterion) -> str:
        """The sentence the engineer writes for ``criterion`` (also its feedback item)."""
        world = self.world
        return writer.feedback_item(
            criterion, has_reference=world.has_reference, scored=world.scored, labels=world.labels
        )

    def cache_identity(self) -> dict[str, Any]:
        """Provider kind plus every setting and the world the answers depend on."""
        names = (
            "random_seed",
            "prompt_name",
            "noise",
            "free_words",
            "max_terms",
            "malformed_rate",
            "p_discover",
            "max_criteria",
            "length_penalty",
            "cram_penalty",
            "repetition_penalty",
        )
        settings = {name: getattr(self, name) for name in names}
        demos = {"p_demo": 0.6, "demo_free": 4, "demo_penalty": 0.01, "demo_cap": 16}
        # named only when changed, so the identity (and caches) of default settings stay as before
        settings.update({name: getattr(self, name) for name, v in demos.items() if getattr(self, name) != v})
        world: list[Any] = [
            sorted((k, dataclasses.asdict(t)) for k, t in self.world.samples.items()),
            sorted((k, dataclasses.asdict(c)) for k, c in self.world.criteria.items()),
        ]
        if self.world.labels:  # named classes answer otherwise; 0/1 identities stay as they were
            world.append(list(self.world.labels))
        digest = hashlib.sha256(json.dumps([settings, world], sort_keys=True).encode()).hexdigest()
        return {"provider": self.provider, "model": f"simulated-judge-{digest[:16]}"}

    # --- dispatch ----------------------------------------------------------------------------
    async def _send(self, request: LLMRequest) -> Completion:
        prompt_text = " ".join(m.content for m in request.messages)
        prompt_tokens = count_tokens(prompt_text)
        if (
            self.context_tokens is not None
            and prompt_tokens + (request.max_tokens or 0) > self.context_tokens
        ):
            raise ContextLengthExceededError(
                f"this model's maximum context length is {self.context_tokens} tokens; the request "
                f"has {prompt_tokens} prompt tokens (context_length_exceeded)",
                status=400,
            )
        text = self.answer(request)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=count_tokens(text))

    def answer(self, request: LLMRequest) -> str:
        """The simulated answer to ``request``: a pure function, no usage counted, never raises
        for an unrecognised prompt (it answers a JSON error object instead)."""
        rendered = split_rendered(request.messages)
        if rendered is not None:
            examples = rendered_examples(request.messages)
            return self._judge(*rendered, request.sample_index, examples, request.json_schema)
        return self.engineer().answer(request.messages[-1].content)

    def engineer(self) -> SimulatedEngineer:
        """The prompt engineer answering meta calls, over the current world and settings."""
        return SimulatedEngineer(
            world=self.world,
            coverage=self._coverage,
            named=self.named,
            random_seed=self.random_seed,
            p_discover=self.p_discover,
            max_terms=self.max_terms,
            metric_name=self.metric_name,
        )

    # --- judge -------------------------------------------------------------------------------
    def demo_effect(
        self, key: str, truth: Truth, examples: list[tuple[dict[str, Any], dict[str, Any]]]
    ) -> tuple[int, int]:
        """(k, distinct examples) of teaching examples for the judged sample ``key`` (module
        docstring): k = sum over its generic criteria of max(0, teaching - mis-teaching)."""
        teaching: dict[str, int] = {}
        seen: set[str] = set()
        for shown_inputs, output in examples[-self.demo_cap :]:
            other = sample_key(shown_inputs)
            if other == key or other in seen:
                continue
            seen.add(other)
            demo = self.truth(shown_inputs)
            verdict = output.get("verdict", output.get("score", output.get("label")))
            if isinstance(verdict, str) and verdict in self.world.labels:  # a named class: its code
                verdict = self.world.labels.index(verdict)
            if demo is None or verdict not in range(self._classes()):
                continue
            for cid in set(demo.criteria) & set(truth.criteria):
                if self.world.criteria[cid].kind == "generic":
                    teaching[cid] = teaching.get(cid, 0) + (1 if verdict == demo.label else -1)
        return sum(max(0, n) for n in teaching.values()), len(seen)

    def _judge(
        self,
        instruction: str,
        inputs: dict[str, Any],
        sample_index: int,
        examples: list[tuple[dict[str, Any], dict[str, Any]]] | None = None,
        schema: dict[str, Any] | None = None,
    ) -> str:
        key = sample_key(inputs)
        truth, mirrored = self._recognise(inputs)
        self._count(key, truth is not None, inputs)
        normalized = " ".join(instruction.split())
        if unit(self.random_seed, "malformed", normalized, key, sample_index) < self.malformed_rate:
            return '{"reason": "The response is'
        if truth is None:
            verdict = int(unit(self.random_seed, "unknown", normalized, key) * self._classes())
            field, shown_verdict = self._shown(verdict, schema)
            return json.dumps({"reason": "No basis to judge this input.", field: shown_verdict})
        verdict, reason = self._verdict(instruction, key, truth, sample_index, examples)
        field, shown_verdict = self._shown(self._mirror(verdict) if mirrored else verdict, schema)
        return json.dumps({"reason": reason, field: shown_verdict})

    def _verdict(
        self,
        instruction: str,
        key: str,
        truth: Truth,
        sample_index: int,
        examples: list[tuple[dict[str, Any], dict[str, Any]]] | None,
    ) -> tuple[int, str]:
        """The verdict code and reason for a known sample (see the module docstring)."""
        normalized = " ".join(instruction.split())
        k, shown = self.demo_effect(key, truth, examples) if examples else (0, 0)
        p_flip = min(0.5, self.noise_rate(instruction) + max(0, shown - self.demo_free) * self.demo_penalty)
        if self.applies(instruction, truth):
            verdict, reason = truth.label, truth.edited_reason or self._applied_reason(instruction, truth)
        elif k and unit(self.random_seed, "demo", normalized, key, sample_index) < 1 - (1 - self.p_demo) ** k:
            verdict, reason = truth.label, truth.edited_reason or truth.original_reason
        else:
            verdict, reason = truth.original, truth.original_reason
        draw = unit(self.random_seed, "noise", normalized, key, sample_index)
        if draw < p_flip:  # 0/1: the other verdict; k classes: one of the others, from the same draw
            other = 1 + int(draw / p_flip * (self._classes() - 1)) if self.world.labels else 1
            verdict, reason = (verdict + other) % self._classes(), NOISE_REASON
        return verdict, reason

    def _applied_reason(self, instruction: str, truth: Truth) -> str:
        cid = sorted(self.named(instruction) & set(truth.criteria))[0]
        crit = self.world.criteria[cid]
        return f"Verdict {truth.label}: {writer.clause(crit, has_reference=self.world.has_reference)}."
