"""The outcome of an optimization: a read-only dict prompt name → best instruction (Ragas'
return value), plus its evidence as attributes."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promptevolver.optimizers._candidates import Candidate
    from promptevolver.optimizers._run import RunContext, SearchRun

from promptevolver.annotations import SampleAnnotation
from promptevolver.judge import ExampleStore, static_positions
from promptevolver.llm import found_in_stack, is_simulated
from promptevolver.optimizers import _reporting as reporting
from promptevolver.optimizers._records import Stages
from promptevolver.rundir import ChosenJudge, write_result

__all__ = ["SIMULATED_NOTE", "OptimizationResult", "judge_model_of", "seed_kept_whole"]

#: In result.json's ``notes`` when the simulated LLM answered (``simulated_llm``).
SIMULATED_NOTE = (
    "simulated LLM: no language model was called (llm.provider fake, the default of a config "
    "without llm:); the scores show the search on these annotations, not a real judge's agreement"
)


def _read_only(self: OptimizationResult, *args: Any, **kwargs: Any) -> Any:
    raise TypeError(
        "an OptimizationResult is read-only (its scores and lineage describe these instructions): "
        "dict(result) is a copy to change"
    )


def _rebuild(cls: type[OptimizationResult], values: dict[str, Any]) -> OptimizationResult:
    return cls(**values)


@dataclass(frozen=True)
class OptimizationResult(dict[str, str]):
    """Best instructions and how they were found.

    The result *is* a ``dict`` of prompt name → best instruction, as Ragas' ``optimize`` returns:
    ``json.dump(result, f)``, ``isinstance(result, dict)`` and ``result == {...}`` work. It is
    read-only (changing it raises TypeError; ``dict(result)`` is a copy to change), and equal
    to another result when every field but the timings is equal.

    Attributes:
        metric: the metric's name.
        seed_instructions / best_instructions: prompt name → instruction.
        loss: the loss's description (name, options, ``higher_is_better``).
        scores: ``{"seed": {"train", "validation"}, "best": {...}}`` loss values, None where
            nothing was measured (every evaluation failed).
        history: one entry per generation (``generation``, ``best_train``, ``mean_train``,
            ``population``, ``offspring``, ``judge_calls``, ``meta_calls`` so far, and ``waves``:
            the generation's longest chain of calls that waited for one another — wall time is
            about waves × latency per call).
        usage: LLM calls by kind and operation, tokens, cache hits, retries, failures.
        lineage: every candidate created (id, generation, operator, parents, scores: ``train``
            its fitness on the judged train samples, ``validation`` the whole-part estimate).
        best_id: id of the chosen candidate in ``lineage`` (0 = the seed).
        stop_reason: ``generations``, ``perfect_train``, ``patience``, ``exhausted``, ``budget`` or
            ``population_size_1``.
        split: sizes of train and validation and how they were made.
        operator_stats: rejected operator outputs by reason, duplicates skipped.
        final_choice: how the result was chosen (the rule, each finalist's difference from the
            seed on validation and the probability it is better, the choice and why).
        stages: per stage of the pipeline (``distill``, ``verify``, ``search``): ``judge_calls``,
            ``meta_calls``, ``prompt_tokens``, ``completion_tokens``, ``seconds`` and what it
            produced (candidate ids; the distillation's stop per ladder, the verification's
            ``saved_judge_calls`` by racing; the search's ``ran`` and ``why``); empty under
            ``strategy: genetic``.
        lessons: the distillation stage's lessons: ``text``, ``evidence`` (corrections it
            explains), ``explains`` (their positions), ``first_round``, ``applied_round``,
            ``sample_fact``.
        racing: the verification's race (rule, looks, dropped candidates, ``saved_judge_calls``).
        stage_seconds: wall-clock seconds of each stage (kept apart from ``stages``, like
            ``duration_s``, so that the same seed gives the same result but for timings).
        examples: the chosen candidate's teaching examples: ``policy`` (``none``, ``static``,
            ``retrieval``), ``key`` (the policy with its settings, as memo keys hold it) and,
            unless ``none``, the ``store`` (:meth:`ExampleStore.to_dict
            <promptevolver.judge._examples.ExampleStore.to_dict>`: ``k``, ``min_similarity``, the
            train ``positions`` of the pool, the ``static`` set, the pool samples).
        config, random_seed, duration_s (seconds, wall clock).
        simulated_llm: True when the judge or the meta calls were answered by the simulated LLM
            (:func:`~promptevolver.llm._base.is_simulated`), not a model.
        notes: what a reader of the figures must know (:data:`SIMULATED_NOTE` when simulated).
        judge_model: the judge client the result was verified on: ``provider`` (``simulated``,
            ``openai``, ``scripted``, ``custom``...) and ``model`` (None when it has no name);
            empty in results written before it was recorded.
    """

    metric: str
    seed_instructions: dict[str, str]
    best_instructions: dict[str, str]
    loss: dict[str, Any]
    scores: dict[str, dict[str, float | None]]
    history: list[dict[str, Any]]
    usage: dict[str, Any]
    lineage: list[dict[str, Any]]
    best_id: int
    stop_reason: str
    split: dict[str, Any]
    operator_stats: dict[str, Any]
    config: dict[str, Any]
    random_seed: int
    duration_s: float = field(compare=False)
    final_choice: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, Any] = field(default_factory=dict)
    lessons: list[dict[str, Any]] = field(default_factory=list)
    racing: dict[str, Any] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict, compare=False)
    simulated_llm: bool = False
    notes: list[str] = field(default_factory=list)
    examples: dict[str, Any] = field(default_factory=lambda: {"policy": "none", "key": "none"})
    judge_model: dict[str, Any] = field(default_factory=dict)

    @property
    def example_policy(self) -> str:
        """The chosen judge's example policy: ``none``, ``static`` or ``retrieval``."""
        return str(self.examples.get("policy", "none"))

    def example_store(self) -> ExampleStore | None:
        """The pool the chosen judge's examples come from (None under policy ``none``)."""
        store = self.examples.get("store")
        if self.example_policy == "none" or not store:
            return None
        return _store(store)

    def examples_for(self, metric_input: Mapping[str, Any]) -> list[SampleAnnotation]:
        """The annotated train samples the chosen judge is shown with ``metric_input``, in prompt
        order (the most similar last); empty under policy ``none``. Pass them to the judge's
        ``ajudge(..., examples=...)`` (``promptevolver evaluate`` does)."""
        store = self.example_store()
        return [] if store is None else store.examples_for(self.example_policy, metric_input)

    def __post_init__(self) -> None:
        dict.update(self, self.best_instructions)

    def chosen_judge(self) -> ChosenJudge:
        """The chosen judge as one record (:class:`~promptevolver.rundir.ChosenJudge`): its
        instructions and teaching examples, the figures it was chosen on, the model, whether the
        simulated LLM judged. Every export is written from it."""
        return ChosenJudge.from_result(self.to_dict())

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __ne__(self, other: object) -> bool:  # dict's own would compare the instructions only
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled and copied by its fields (a dict subclass's default sets items one by one)."""
        return (_rebuild, (type(self), {f.name: getattr(self, f.name) for f in fields(self)}))

    @property
    def held_out(self) -> dict[str, Any]:
        """The honest figure of the seed and of the chosen candidate, from ``scores``, and what it
        is: ``{"kind": "validation" | "cross-validated", "seed": float | None, "best": float |
        None}`` — the held-out validation samples (out of bag: those the chosen candidate never
        learned from), or, for a refit on small data, the recipe's cross-validated figure (each
        sample judged by a candidate that never learned from it). None where not measured
        (``n/a``: a cross-fit rung has no held-out figure)."""
        seed, best = self.scores.get("seed", {}), self.scores.get("best", {})
        if "cross_validated" in best:
            return {
                "kind": "cross-validated",
                "seed": seed.get("cross_validated"),
                "best": best["cross_validated"],
            }
        return {"kind": "validation", "seed": seed.get("validation"), "best": best.get("validation")}

    @property
    def stage_records(self) -> Stages:
        """The typed records of :attr:`stages` (:class:`~promptevolver.optimizers.Stages`): what
        readers of a result read, never the JSON's keys."""
        return Stages.from_dict(self.stages)

    @property
    def strategy(self) -> str:
        """The config's ``strategy`` (``auto``, ``distill`` or ``genetic``)."""
        return str(self.config.get("strategy", "genetic"))

    @property
    def produced_by(self) -> str:
        """Which stage produced the chosen candidate: ``seed`` (nothing beat it), ``distill`` (a
        verified rung of the ladder), ``examples`` (teaching examples added to the verified
        instruction), ``cross_fit`` (the verified candidate with lessons from the held-out
        corrections, checked on the learning samples) or ``search`` (the genetic search)."""
        operator = next((c["operator"] for c in self.lineage if c["id"] == self.best_id), "seed")
        known = {"seed", "distill", "examples", "cross_fit"}
        return operator if operator in known else "search"

    @property
    def improved(self) -> bool:
        """True when the chosen candidate is not the seed."""
        return self.best_id != 0

    def to_dict(self) -> dict[str, Any]:
        """The result.json contract (plus lineage, split, stop reason), as the README documents."""
        return {
            "metric": self.metric,
            "simulated_llm": self.simulated_llm,
            "notes": self.notes,
            "judge_model": self.judge_model,
            "seed_instructions": self.seed_instructions,
            "best_instructions": self.best_instructions,
            "best_id": self.best_id,
            "loss": self.loss,
            "scores": self.scores,
            "history": self.history,
            "usage": self.usage,
            "stop_reason": self.stop_reason,
            "split": self.split,
            "operator_stats": self.operator_stats,
            "final_choice": self.final_choice,
            "strategy": self.strategy,
            "produced_by": self.produced_by,
            "stages": self.stages,
            "lessons": self.lessons,
            "racing": self.racing,
            "examples": self.examples,
            "lineage": self.lineage,
            "config": self.config,
            "random_seed": self.random_seed,
            "duration_s": round(self.duration_s, 3),
            "stage_seconds": self.stage_seconds,
        }

    def to_json(self, path: str | Path) -> None:
        """Write result.json at ``path`` atomically, with its ``format_version``
        (:func:`promptevolver.rundir.write_result`: UTF-8, 2-space indent).

        Raises:
            OSError: the file cannot be written (an existing one is left intact).
        """
        write_result(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OptimizationResult:
        """The result from its :meth:`to_dict` form (a parsed result.json): the derived keys
        (``strategy``, ``produced_by``) and ``format_version`` are recomputed, not read.

        Raises:
            TypeError: a required field is missing.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def from_run(cls, run: SearchRun, best: Candidate) -> OptimizationResult:
        """The result of a finished ``run`` whose final choice is ``best``."""
        seed, state, ctx = run.state.seed, run.state, run.context
        return cls(
            metric=ctx.metric.name,
            seed_instructions=dict(seed.instructions),
            best_instructions=dict(best.instructions),
            loss=ctx.loss.describe(),
            scores=(
                reporting.out_of_bag_estimates(ctx, seed, best)
                if not ctx.split.regime.held_out
                else {name: reporting.estimates(ctx, c) for name, c in (("seed", seed), ("best", best))}
            ),
            history=state.history,
            usage=run.usage().to_dict(),
            lineage=[reporting.lineage_entry(ctx, c) for c in state.candidates],
            best_id=best.id,
            stop_reason=state.stop_reason or "",
            split=reporting.split_report(ctx, best),
            final_choice=state.final_choice,
            operator_stats={
                "rejected": dict(sorted(state.rejections.items())),
                "duplicates": state.duplicates,
                "screened_out": sum(c.screened_out for c in state.candidates),
            },
            config=ctx.config.model_dump(),
            random_seed=ctx.config.random_seed,
            **_simulated(ctx),
            duration_s=run.elapsed(),
            stages=state.stages.to_dict(seconds=False),
            lessons=state.lessons,
            racing=state.race,
            stage_seconds=state.stages.seconds(),
            examples=_examples_block(ctx, best),
        )


def _simulated(ctx: RunContext) -> dict[str, Any]:
    simulated = is_simulated(ctx.llm) or is_simulated(ctx.reflection_llm)
    return {
        "simulated_llm": simulated,
        "notes": [SIMULATED_NOTE] if simulated else [],
        "judge_model": judge_model_of(ctx.llm),
    }


def seed_kept_whole(split: Mapping[str, Any], best_id: int) -> bool:
    """Whether a result (its ``split`` block and ``best_id``) is the seed kept on small data: it
    learned from no annotation, so every usable one is its held-out part (out of bag, as many
    validation samples as train). The summary line and the report show one figure then."""
    from promptevolver.optimizers._split import Regime

    return (
        Regime.of(split.get("regime")) is Regime.OUT_OF_BAG
        and best_id == 0
        and bool(split.get("train"))
        and split.get("validation") == split.get("train")
    )


def judge_model_of(client: object) -> dict[str, Any]:
    """``provider`` and ``model`` of the client under ``client``'s wrappers (the first layer
    that names them); what a chosen judge records as the model it was verified on. The simulated
    LLM also records its ``random_seed``: its answers are its seed's (``evaluate`` of the chosen
    judge asks the same simulator)."""
    provider = found_in_stack(client, "provider", str)
    found: dict[str, Any] = {"provider": provider or "custom", "model": found_in_stack(client, "model", str)}
    if provider == "simulated" and (seed := found_in_stack(client, "random_seed", int)) is not None:
        found["random_seed"] = seed
    return found


def _examples_block(ctx: RunContext, best: Candidate) -> dict[str, Any]:
    """The result's examples: the chosen policy over a store of every annotated sample of the
    run. The held-out samples join the pool once the choice is made (as a model is refit on all
    its data after model selection): the validation figures were measured with the train pool
    (``pool_during_the_run``), which never held a sample it was judged on."""
    if best.examples == "none" or ctx.examples is None:
        return {"policy": "none", "key": "none"}
    usable = [p for p, y in enumerate(ctx.labels) if y is not None]
    store = ctx.examples.extended([ctx.dataset.samples[p] for p in usable], usable)
    own = static_positions(best.examples)  # a static set the search evolved: the store's set
    if own is not None:
        store = store.with_static(own)
    return {
        "policy": "static" if own is not None else best.examples,
        "key": ctx.examples.key(best.examples),
        "pool_during_the_run": len(ctx.examples),
        "store": store.to_dict(),
    }


@functools.lru_cache(maxsize=8)
def _store_cached(text: str) -> ExampleStore:
    return ExampleStore.from_dict(json.loads(text))


def _store(data: Mapping[str, Any]) -> ExampleStore:
    """The store of a result (built once per distinct store: a TF-IDF fit)."""
    return _store_cached(json.dumps(data, sort_keys=True))
