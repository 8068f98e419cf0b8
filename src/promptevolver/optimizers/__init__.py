"""Optimizers of judge instructions: the genetic search and its parts.

:class:`GeneticOptimizer` runs a strategy's stages (:data:`STRATEGIES`: ``auto``, ``distill``,
``examples``, ``genetic``) and returns an :class:`OptimizationResult`.

Extension points:

* :class:`Stage` (a Protocol, one method): ``async run(view: StageView) -> StageRecord | None``;
  a stage works on a :class:`StageView` (the run's fixed context and its state, with judging,
  steps, a checkpoint and the generation loop) and returns its typed, frozen record (or None
  when it had nothing to do: a resumed run). Ours: :class:`Seed`, :class:`Distill`,
  :class:`Verify`, :class:`Examples`, :class:`CrossFit`, :class:`Search`,
  :class:`InitialPopulation`, :class:`Generations`, :class:`FinalChoice` (the last of a list: it
  returns the :class:`FinalChoiceRecord`). Compose a list (:func:`strategy` gives a named
  strategy's) and pass ``GeneticOptimizer(stages=...)``.
* operators and parent selection: :mod:`promptevolver.optimizers.operators` (``Operator``);
  stop conditions and the decision rule: :mod:`promptevolver.optimizers.strategies`
  (``StopCondition``, ``ParentSelector``, ``PairedRule``).

Records: each stage's (:class:`Stages`, :class:`DistillRecord`, :class:`VerifyRecord`,
:class:`ExamplesRecord`, :class:`CrossFitRecord`, :class:`SearchRecord`; their JSON is
``result.json``'s ``stages``); :class:`Regime`, where the honest figure comes from.
:func:`classify` says what each annotation tells of the recorded judge (:class:`Evidence`: a
verdict correction, a reason correction or agreement), the one classification the run and
``estimate`` both read. The other names here serve the command line and ``estimate`` (the cost
model, the split's sizes, the distillation's constants, the checkpoint's readers).
"""

from promptevolver.optimizers._base import Optimizer
from promptevolver.optimizers._checkpoint import RESUMABLE_CHANGES as RESUMABLE_CHANGES
from promptevolver.optimizers._checkpoint import load as load_checkpoint
from promptevolver.optimizers._checkpoint import load_judgements as load_judgements
from promptevolver.optimizers._cost import PhaseCalls as PhaseCalls
from promptevolver.optimizers._cost import example_candidates as example_candidates
from promptevolver.optimizers._cost import minibatch_size as minibatch_size
from promptevolver.optimizers._cost import offspring_count as offspring_count
from promptevolver.optimizers._cost import phase_calls as phase_calls
from promptevolver.optimizers._distill import ANSWER_TOKENS as ANSWER_TOKENS
from promptevolver.optimizers._distill import BARREN_ROUNDS as BARREN_ROUNDS
from promptevolver.optimizers._distill import CONTEXT_SHARE as CONTEXT_SHARE
from promptevolver.optimizers._distill import CONTRAST as CONTRAST
from promptevolver.optimizers._distill import SMALL_BARREN_ROUNDS as SMALL_BARREN_ROUNDS
from promptevolver.optimizers._distill import SMALL_CONTRAST as SMALL_CONTRAST
from promptevolver.optimizers._distill import TEMPLATE_TOKENS as TEMPLATE_TOKENS
from promptevolver.optimizers._evidence import Evidence as Evidence
from promptevolver.optimizers._evidence import classify as classify
from promptevolver.optimizers._evidence import evidence_prompt as evidence_prompt
from promptevolver.optimizers._focus import VERDICT_SHARE as VERDICT_SHARE
from promptevolver.optimizers._genetic import GeneticOptimizer
from promptevolver.optimizers._records import *  # noqa: F403 - the records are this package's API
from promptevolver.optimizers._records import __all__ as _records_all
from promptevolver.optimizers._refit import SEED_FRESH_MIN as SEED_FRESH_MIN
from promptevolver.optimizers._result import SIMULATED_NOTE as SIMULATED_NOTE
from promptevolver.optimizers._result import OptimizationResult
from promptevolver.optimizers._result import seed_kept_whole as seed_kept_whole
from promptevolver.optimizers._split import MIN_USABLE_SAMPLES as MIN_USABLE_SAMPLES
from promptevolver.optimizers._split import Regime
from promptevolver.optimizers._split import check_inputs as check_inputs
from promptevolver.optimizers._split import is_out_of_bag as is_out_of_bag
from promptevolver.optimizers._split import refits as refits
from promptevolver.optimizers._split import split_sizes as split_sizes
from promptevolver.optimizers._split import validation_count as validation_count
from promptevolver.optimizers._stages import *  # noqa: F403 - the stages are this package's API
from promptevolver.optimizers._stages import __all__ as _stages_all
from promptevolver.optimizers._views import StageView

__all__ = [
    *_records_all,
    *_stages_all,
    "ANSWER_TOKENS",
    "BARREN_ROUNDS",
    "CONTEXT_SHARE",
    "CONTRAST",
    "MIN_USABLE_SAMPLES",
    "RESUMABLE_CHANGES",
    "SEED_FRESH_MIN",
    "SIMULATED_NOTE",
    "SMALL_BARREN_ROUNDS",
    "SMALL_CONTRAST",
    "TEMPLATE_TOKENS",
    "VERDICT_SHARE",
    "GeneticOptimizer",
    "OptimizationResult",
    "Optimizer",
    "Evidence",
    "PhaseCalls",
    "Regime",
    "StageView",
    "check_inputs",
    "classify",
    "evidence_prompt",
    "example_candidates",
    "is_out_of_bag",
    "load_checkpoint",
    "load_judgements",
    "minibatch_size",
    "offspring_count",
    "phase_calls",
    "refits",
    "seed_kept_whole",
    "split_sizes",
    "validation_count",
]
