"""Optimize a Ragas metric object through its prompts, and write the result back into it.

Ragas users hold ``ragas.metrics`` objects; this module optimizes one directly::

    from ragas.metrics import AspectCritic
    from promptevolver.integrations.ragas import optimize_ragas_metric

    critic = AspectCritic(name="answer_correctness", definition="Is the response correct?")
    result = optimize_ragas_metric(critic, annotations, llm=llm)   # best instructions applied

:class:`RagasMetric` is the adapter: it is a :class:`~promptevolver.judge._protocol.Metric` whose
one prompt is the Ragas metric's single-turn prompt — its name (``single_turn_aspect_critic_prompt``,
``single_turn_simple_criteria_prompt``), instruction and output model (``reason`` with ``verdict``
or ``score``) — so Ragas annotation exports match it as they are. :meth:`RagasMetric.apply` (or
:func:`write_back`) writes instructions into the Ragas object with ``set_prompts`` in one call;
the object is never changed during the search.

Supported: ``AspectCritic`` (binary, 0/1 verdicts; default loss accuracy) and
``SimpleCriteriaScore`` (a score; default loss MSE), the versions of ``ragas==0.4.3`` (the extra
``promptevolver[ragas]`` pins it). What differs from Ragas scoring the same prompt: judge calls
are rendered by promptevolver (the instruction, the JSON schema of the output model, the input
fields as JSON) through promptevolver's LLM clients (cache, budget, retries), and with one call per
sample (Ragas' ``strictness`` > 1 votes over several; wrap the adapter in a
:class:`~promptevolver.judge._ensemble.JudgeEnsemble` for that).

**Teaching examples round-trip** (``docs/examples.md``). The Ragas prompt's own few-shot examples
are the seed's demonstrations: a candidate without examples (policy ``none``) is judged with what
Ragas would show (the prompt's ``examples``, or what a ``FewShotPydanticPrompt``'s example store
retrieves for the input), rendered as promptevolver's teaching examples; a candidate with
examples shows its own instead (they replace the prompt's, never add to them). Writing a result
back (:func:`write_back`, :meth:`RagasMetric.apply`, ``optimize_ragas_metric(apply=True)``):

* policy ``none``: the instruction only; the prompt's own examples stay (the chosen judge was
  verified with them);
* ``static``: the static set becomes the prompt's ``examples`` ((input model, output model)
  pairs: the sample's fields, the human's label and reason, ``""`` when the human gave none);
* ``retrieval``: the prompt becomes a Ragas ``FewShotPydanticPrompt`` whose ``example_store`` is
  a :class:`RetrievalExamples` over the run's store, so Ragas' own scoring retrieves per input
  exactly what promptevolver's judge was verified with (TF-IDF, ``k``, ``min_similarity``, never
  the judged sample itself). Such a prompt lives in memory: Ragas' ``save_prompts`` cannot
  write its store (save the run directory instead and write it back again).

Ragas is imported when an adapter is made, never when this module is; ``RAGAS_DO_NOT_TRACK`` is
set to ``true`` first unless the environment already sets it (Ragas' analytics stay off).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from promptevolver.annotations import LabelScale, PromptAnnotation, SampleAnnotation, SingleMetricAnnotation
from promptevolver.config import GeneticConfig
from promptevolver.errors import AnnotationError
from promptevolver.evaluation import BinaryMetricLoss, Loss, MSELoss
from promptevolver.judge import ExampleStore, Prompt, PromptSet, UnusableAnswer
from promptevolver.llm import LLMClient
from promptevolver.optimizers import GeneticOptimizer, OptimizationResult
from promptevolver.rundir import as_instructions, load_examples

__all__ = [
    "INSTALL_HINT",
    "RAGAS_VERSION",
    "RagasMetric",
    "RetrievalExamples",
    "optimize_ragas_metric",
    "write_back",
]

#: The Ragas version this integration is tested with (the extra pins it).
RAGAS_VERSION = "0.4.3"
INSTALL_HINT = f'pip install "promptevolver[ragas]"  (ragas=={RAGAS_VERSION})'
_FIELDS = ("user_input", "response", "retrieved_contexts", "reference_contexts", "reference")


def import_ragas() -> ModuleType:
    """``ragas.metrics``, imported now (analytics off unless the environment says otherwise).

    Raises:
        ImportError: Ragas is not installed (the message says how to install it).
    """
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import ragas.metrics as metrics
    except ImportError as exc:
        raise ImportError(f"the Ragas integration needs Ragas: {INSTALL_HINT}") from exc
    return metrics


def _kind(metric: Any) -> str:
    """``binary`` for a Ragas AspectCritic, ``score`` for a SimpleCriteriaScore.

    Raises:
        TypeError: another object.
    """
    metrics = import_ragas()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        critic, criteria = metrics.AspectCritic, metrics.SimpleCriteriaScore
    if isinstance(metric, critic):
        return "binary"
    if isinstance(metric, criteria):
        return "score"
    supported = "ragas.metrics.AspectCritic and SimpleCriteriaScore"
    raise TypeError(f"RagasMetric supports {supported}, got {type(metric).__name__}")


class RagasMetric(PromptSet):
    """A Ragas ``AspectCritic`` or ``SimpleCriteriaScore`` as a promptevolver metric.

    Args:
        metric: the Ragas metric object (read now; changed only by :meth:`apply`).
        prompt: the Ragas prompt to optimize (default: the single-turn one).
        score_range: for a SimpleCriteriaScore, the (lowest, highest) score an answer may give
            (None: any integer); an answer outside is re-asked, then a failed evaluation.
        llm: default client for :meth:`ajudge`.
        max_reasks: times a malformed answer is re-asked (≥ 0).
        temperature: sampling temperature of judge calls.

    Raises:
        ImportError: Ragas is not installed.
        TypeError: ``metric`` is neither an AspectCritic nor a SimpleCriteriaScore.
        KeyError: ``prompt`` is not one of the metric's prompts.
    """

    def __init__(
        self,
        metric: Any,
        *,
        prompt: str | None = None,
        score_range: tuple[float, float] | None = None,
        llm: LLMClient | None = None,
        max_reasks: int = 1,
        temperature: float = 0.0,
    ) -> None:
        self.kind = _kind(metric)
        prompts = metric.get_prompts()
        name = prompt or next((n for n in prompts if n.startswith("single_turn_")), "")
        if name not in prompts:
            raise KeyError(f"unknown prompt {prompt!r}; the Ragas metric has {sorted(prompts)}")
        if max_reasks < 0:
            raise ValueError(f"max_reasks must be >= 0, got {max_reasks}")
        source = prompts[name]
        self.LABEL_FIELD = "verdict" if self.kind == "binary" else "score"
        #: The Ragas prompt as the metric holds it (its examples are the seed's demonstrations).
        self.ragas_prompt = source
        self.ragas_metric = metric
        self.name = str(metric.name)
        self.score_range = score_range
        self.llm = llm
        self.max_reasks = max_reasks
        self.temperature = temperature
        self._prompts: dict[str, Prompt[Any]] = {name: Prompt(name, source.instruction, source.output_model)}

    def __repr__(self) -> str:
        kind = type(self.ragas_metric).__name__
        return f"RagasMetric({kind}(name={self.name!r}), prompt={self.prompt_name!r})"

    @property
    def label_scale(self) -> LabelScale:
        """Binary for an AspectCritic; scores (in ``score_range`` when given) for a SimpleCriteriaScore."""
        if self.kind == "binary":
            return LabelScale("binary")
        return LabelScale("numeric", *self.score_range) if self.score_range else LabelScale("numeric")

    def default_loss(self) -> Loss:
        """Accuracy for an AspectCritic, mean squared error for a SimpleCriteriaScore."""
        return BinaryMetricLoss() if self.kind == "binary" else MSELoss()

    def prompt_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The single-turn fields Ragas' prompt takes (``user_input``, ``response``,
        ``retrieved_contexts``, ``reference_contexts``, ``reference``) that the sample has.

        Raises:
            AnnotationError: the sample has none of them.
        """
        shown = {k: inputs[k] for k in _FIELDS if inputs.get(k) not in (None, "", [])}
        if not shown:
            raise AnnotationError(f"{self.name} needs one of {list(_FIELDS)}", field="metric_input")
        return shown

    def check_answer(self, output: Any) -> None:
        """A verdict other than 0 or 1, or a score outside ``score_range``, is unusable."""
        if self.kind == "binary":
            if output.verdict not in (0, 1):
                raise UnusableAnswer(f"verdict must be 0 or 1, got {output.verdict!r}")
        elif self.score_range is not None and not self.score_range[0] <= output.score <= self.score_range[1]:
            low, high = self.score_range
            raise UnusableAnswer(f"score must be in [{low:g}, {high:g}], got {output.score!r}")

    def shown_examples(
        self, shown: Mapping[str, Any], examples: Sequence[SampleAnnotation] | None
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """``examples`` in place of the Ragas prompt's own (an empty list: none); None: the
        prompt's own for the input ``shown`` (:meth:`own_demonstrations`)."""
        return self.own_demonstrations(shown) if examples is None else self.demonstrations(examples)

    def apply(self, instructions: Mapping[str, str] | str | os.PathLike[str]) -> Any:
        """Write ``instructions`` (e.g. an :class:`OptimizationResult`, or a run directory or
        result.json path) into the Ragas metric and into this adapter; return the Ragas metric.
        Raises as :func:`write_back` (nothing is changed then)."""
        metric = write_back(self.ragas_metric, instructions)
        self.set_instructions(as_instructions(instructions))
        self.ragas_prompt = metric.get_prompts()[self.prompt_name]
        return metric

    def own_demonstrations(self, shown: Mapping[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The Ragas prompt's own few-shot examples for the input ``shown`` (the fields
        :meth:`prompt_inputs` picked), as :meth:`Prompt.render` takes them: the prompt's
        ``examples``, or what its ``example_store`` retrieves (a ``FewShotPydanticPrompt``,
        ``top_k_for_examples`` of them); the label first, then the reason."""
        source = self.ragas_prompt
        store = getattr(source, "example_store", None)
        if store is None:
            pairs = list(source.examples)
        else:
            query = source.input_model(**shown)
            pairs = list(store.get_examples(query, getattr(source, "top_k_for_examples", 3)))
        out = []
        for given, answer in pairs:
            output = answer.model_dump()
            ordered = {self.LABEL_FIELD: output.pop(self.LABEL_FIELD), **output}
            out.append((self.prompt_inputs(given.model_dump()), ordered))
        return out

    def ragas_examples(self, samples: Sequence[SampleAnnotation]) -> list[tuple[Any, Any]]:
        """``samples`` as the Ragas prompt's few-shot examples: (input model, output model) pairs
        (the sample's fields; the human's label and reason, ``""`` when the human gave none).

        Raises:
            AnnotationError: a sample has no human label or none of the prompt's fields.
            pydantic.ValidationError: a label the output model refuses (a score that is not an
                integer).
        """
        source = self.ragas_prompt
        pairs = []
        for shown, output in self.demonstrations(samples):
            answer = source.output_model(**{"reason": "", **output})
            pairs.append((source.input_model(**shown), answer))
        return pairs


class RetrievalExamples:
    """A Ragas example store (the interface of ``ragas.prompt.few_shot_pydantic_prompt.
    ExampleStore``: ``get_examples``, ``add_example``) over a promptevolver
    :class:`~promptevolver.judge._examples.ExampleStore`'s retrieval policy: what a Ragas
    ``FewShotPydanticPrompt`` written back by :func:`write_back` retrieves per input.

    Args:
        store: the run's example store (``result.json``'s ``examples.store``).
        judge: the adapter of the Ragas metric (turns samples into Ragas' models).
    """

    def __init__(self, store: ExampleStore, judge: RagasMetric) -> None:
        self.store = store
        self.judge = judge

    def __repr__(self) -> str:
        return f"RetrievalExamples(n_examples={len(self.store)}, k={self.store.k})"

    def get_examples(self, data: Any, top_k: int | None = None) -> list[tuple[Any, Any]]:
        """The ``top_k`` (default the store's ``k``) pool samples most similar to the Ragas input
        model ``data``, as (input model, output model) pairs, the most similar last."""
        metric_input = data.model_dump(exclude_none=True)
        return self.judge.ragas_examples(self.store.examples_for("retrieval", metric_input, k=top_k))

    def add_example(self, input: Any, output: Any) -> None:
        """Add a Ragas (input model, output model) pair to the pool (an accepted sample whose
        label is the output's ``verdict`` or ``score``). Raises AttributeError for an output
        without the label field."""
        label = float(getattr(output, self.judge.LABEL_FIELD))
        fields = input.model_dump(exclude_none=True)
        answer = PromptAnnotation(prompt_input=fields, prompt_output=output.model_dump(), is_accepted=True)
        sample = SampleAnnotation(
            metric_input=fields,
            metric_output=label,
            prompts={self.judge.prompt_name: answer},
            is_accepted=True,
        )
        self.store = self.store.extended([sample], [max(self.store.positions, default=-1) + 1])


def _examples_block(instructions: Any) -> Mapping[str, Any] | None:
    """The examples block that comes with ``instructions``: an OptimizationResult's, a run's
    (path); None for a plain mapping (the prompt's examples are left as they are)."""
    if isinstance(instructions, OptimizationResult):
        return instructions.examples
    if isinstance(instructions, str | os.PathLike):
        return load_examples(os.fspath(instructions))
    return None


def _prompt_with_examples(metric: Any, name: str, block: Mapping[str, Any]) -> Any:
    """The Ragas prompt ``name`` carrying the examples of ``block`` (module docstring); the
    metric's own prompt object for policy ``none``. Raises ValueError for an unknown policy."""
    prompt = metric.get_prompts()[name]
    policy = block.get("policy", "none")
    if policy == "none":
        return prompt
    if policy not in ("static", "retrieval"):
        raise ValueError(f"unknown example policy {policy!r}; policies: none, static, retrieval")
    store = ExampleStore.from_dict(block["store"])
    judge = RagasMetric(metric, prompt=name)
    if policy == "static":
        prompt.examples = judge.ragas_examples(store.examples_for("static", {}))
        return prompt
    from ragas.prompt.few_shot_pydantic_prompt import FewShotPydanticPrompt

    few_shot: Any = FewShotPydanticPrompt(
        example_store=RetrievalExamples(store, judge),  # type: ignore[arg-type, unused-ignore]
        top_k_for_examples=store.k,
        threshold_for_examples=store.min_similarity,
    )
    few_shot.name, few_shot.language = prompt.name, prompt.language
    few_shot.input_model, few_shot.output_model = prompt.input_model, prompt.output_model
    few_shot.instruction = prompt.instruction
    return few_shot


def write_back(
    metric: Any,
    instructions: Mapping[str, str] | str | os.PathLike[str],
    *,
    examples: Mapping[str, Any] | None = None,
) -> Any:
    """Set each named prompt's instruction, and the chosen teaching examples, on the Ragas
    ``metric`` (``set_prompts``, one call); return ``metric``.

    Args:
        metric: the Ragas metric object.
        instructions: prompt name → instruction (an :class:`OptimizationResult` is one), or the
            path of a run directory, its result.json or a best_instructions.json
            (:func:`promptevolver.rundir.as_instructions`).
        examples: a result's ``examples`` block (``policy``, ``store``); default: the result's
            or run's own (a plain mapping of instructions: the prompts' examples stay as they
            are). Policy ``static`` sets the prompt's ``examples``, ``retrieval`` makes it a
            ``FewShotPydanticPrompt`` over :class:`RetrievalExamples` (module docstring).

    Raises:
        TypeError: ``instructions`` is neither a mapping nor a path.
        ConfigError: the path holds no readable instructions (the message names the file).
        KeyError: a prompt name the metric does not have (nothing is changed then).
        ValueError: examples for several prompts, or an unknown example policy (nothing is
            changed then).
    """
    chosen = as_instructions(instructions)
    block = examples if examples is not None else _examples_block(instructions)
    prompts = metric.get_prompts()
    unknown = sorted(set(chosen) - set(prompts))
    if unknown:
        raise KeyError(f"unknown prompt(s) {unknown}; the Ragas metric has {sorted(prompts)}")
    if block and block.get("policy", "none") != "none":
        if len(chosen) != 1:
            names = sorted(chosen)
            raise ValueError(f"teaching examples are written to one prompt; the instructions name {names}")
        name = next(iter(chosen))
        prompts[name] = _prompt_with_examples(metric, name, block)
    for name, text in chosen.items():
        prompts[name].instruction = text
    metric.set_prompts(**{name: prompts[name] for name in chosen})
    return metric


def optimize_ragas_metric(
    metric: Any,
    dataset: SingleMetricAnnotation,
    *,
    llm: LLMClient,
    loss: Loss | None = None,
    config: Mapping[str, Any] | GeneticConfig | None = None,
    reflection_llm: LLMClient | None = None,
    run_dir: str | None = None,
    apply: bool = True,
    **adapter: Any,
) -> OptimizationResult:
    """Optimize a Ragas ``AspectCritic`` or ``SimpleCriteriaScore`` on ``dataset`` and, with
    ``apply``, write the best instructions into it.

    Args:
        metric: the Ragas metric object.
        dataset: its annotations (Ragas' format; the prompt names match the metric's).
        llm: client for judge calls; reflection_llm: for meta calls (default ``llm``).
        loss: default :meth:`RagasMetric.default_loss`.
        config: the optimizer's options (:class:`~promptevolver.config._models.GeneticConfig`).
        run_dir: directory for the checkpoint (None: none).
        apply: write the best instructions and teaching examples into ``metric`` (never worse
            than its own on the validation samples: the seed, with the metric's own examples,
            is among the finalists; see :func:`write_back`).
        adapter: other :class:`RagasMetric` arguments (``prompt``, ``score_range``...).

    Raises:
        ImportError, TypeError, KeyError: as :class:`RagasMetric`; and whatever
            :meth:`GeneticOptimizer.optimize <promptevolver.optimizers._genetic.GeneticOptimizer.optimize>`
            raises (nothing is applied then).
    """
    judge = RagasMetric(metric, **adapter)
    optimizer = GeneticOptimizer(metric=judge, llm=llm, reflection_llm=reflection_llm)
    result = optimizer.optimize(dataset, loss or judge.default_loss(), config, run_dir=run_dir)
    if apply:
        judge.apply(result)
    return result
