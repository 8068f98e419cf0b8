"""The run's frozen context beside its mutable state (optimizers/_run.py): no context field can be
reassigned, through the context or through the run; each field the run exposes is the context's
own object, typed as the context declares it; and no strategy (stop conditions included) or
operator takes the run or the context whole."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer
from promptevolver.config._models import GeneticConfig
from promptevolver.optimizers import _run as run_module
from promptevolver.optimizers._run import RunContext, SearchRun
from promptevolver.optimizers._state import SearchState
from promptevolver.optimizers.events import EventBus
from promptevolver.optimizers.operators._breeder import Breeder, default_operators
from promptevolver.optimizers.operators._reverse_engineer import ReverseEngineering
from promptevolver.optimizers.strategies._stopping import DEFAULT_STOP_CONDITIONS, SearchView

from ..helpers import make_dataset, rule_llm

OPTIMIZERS = Path(run_module.__file__).parent
FIELDS = [f.name for f in dataclasses.fields(RunContext) if not f.name.startswith("_")]
PROPERTIES = [name for name, value in vars(RunContext).items() if isinstance(value, property)]


def _run(*, callbacks: bool = False) -> SearchRun:
    dataset = make_dataset(24, 8)
    config = GeneticConfig(strategy="genetic", random_seed=5, population_size=3, generations=1)
    return SearchRun(
        metric=AspectCritic(name="toy", definition="Is the response correct?"),
        llm=rule_llm(dataset, lambda _, i: i % 2),
        reflection_llm=rule_llm(dataset, lambda _, i: i % 2),
        dataset=dataset,
        loss=BinaryMetricLoss(),
        config=config,
        events=EventBus([lambda _: None] if callbacks else []),
        breeder=Breeder(default_operators(config), ReverseEngineering()),
    )


@pytest.mark.parametrize("name", FIELDS)
def test_no_context_field_can_be_reassigned(name):
    run = _run()
    before = getattr(run.context, name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(run.context, name, None)
    assert getattr(run.context, name) is before
    assert not hasattr(run, name)  # one home: the context's fields are read as run.context.<name>


def test_the_run_holds_a_context_a_state_the_step_tally_and_the_final_choice_only():
    run = _run()
    assert isinstance(run.context, RunContext) and isinstance(run.state, SearchState)
    with pytest.raises(AttributeError):  # no new attribute beside them (``__slots__``)
        run.population = []  # type: ignore[attr-defined]
    # Nor the context (FrozenInstanceError; TypeError on Pythons whose frozen slots dataclasses
    # trip on their own ``super()`` for a name that is not a field, as CPython 3.10 and 3.11 do).
    with pytest.raises((AttributeError, TypeError)):
        run.context.population = []  # type: ignore[attr-defined]
    assert not hasattr(run.context, "population")
    assert set(SearchRun.__slots__) == {"context", "state", "tally", "replayed"}


def test_the_state_stays_the_mutable_part_a_resume_may_replace():
    run = _run()
    context = run.context
    run.state = SearchState(rng=run.state.rng, best_so_far=0.5)
    assert run.state.best_so_far == 0.5 and run.context is context


def test_the_contexts_derived_values():
    run = _run(callbacks=True)
    assert run.context.train == run.context.train_focus.positions
    assert run.context.sample_facts is run.context.sample_facts  # computed once
    assert run.context.fingerprint() == run.context.fingerprint()
    assert run.context.evaluator.llm is run.context.llm  # judging goes through the stacked clients
    assert type(run.context.llm).__name__ == "_Announced"  # callbacks: the announcer outermost


def test_two_runs_of_one_seed_build_equal_contexts():
    one, two = _run(), _run()
    for name in ("split", "train_focus", "validation_focus", "evidence", "folds", "labels"):
        assert getattr(one.context, name) == getattr(two.context, name), name
    assert one.state.rng.integers(1 << 30) == two.state.rng.integers(1 << 30)  # the same draws left


class _Recording:
    """A user's stop condition that keeps what it was handed (and stops after generation 1)."""

    reason = "recorded"

    def __init__(self) -> None:
        self.seen: list[object] = []

    def should_stop(self, search: SearchView) -> bool:
        self.seen.append(search)
        return search.state.generation >= 1


def test_stop_conditions_are_handed_a_view_of_the_run_never_the_run():
    dataset = make_dataset(24, 8)
    recording = _Recording()
    optimizer = GeneticOptimizer(
        metric=AspectCritic(name="toy", definition="Is the response correct?"),
        llm=rule_llm(dataset, lambda _, i: i % 2),
        stop_conditions=[recording, *DEFAULT_STOP_CONDITIONS],
    )
    config = {"strategy": "genetic", "random_seed": 5, "population_size": 3, "generations": 3}
    result = optimizer.optimize(dataset=dataset, loss=BinaryMetricLoss(), config=config)
    assert result.stop_reason == "recorded" and len(recording.seen) == 2
    for search in recording.seen:
        assert type(search) is SearchView  # frozen: a condition cannot swap the run's state or config
        assert not hasattr(search, "context") and not hasattr(search, "split")
        assert search.next_generation_fits() and search.config.generations == 3


# --- who takes the run whole -----------------------------------------------------------------------


def _takers(path: Path) -> dict[str, set[str]]:
    """Function name → the whole-run types (SearchRun, RunContext) among its parameters' annotations."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            types = {ast.unparse(a.annotation) for a in args if a.annotation is not None}
            found = {t for t in ("SearchRun", "RunContext") if any(t in u for u in types)}
            if found:
                out[node.name] = found
    return out


@pytest.mark.parametrize("package", ["strategies", "operators"])
def test_no_strategy_or_operator_takes_the_run_or_the_context_whole(package):
    for path in sorted((OPTIMIZERS / package).rglob("*.py")):
        assert not _takers(path), f"{path.name}: {_takers(path)}"
        source = path.read_text(encoding="utf-8")
        assert "optimizers._run import" not in source, f"{path.name} imports the run"


#: The only functions that take the whole run: each changes or reads the state, the step's tally
#: or the run's totals, or builds a view of the run. The pipeline's stages (_stages.py, their work
#: in _phases.py and _refit.py) and the generation loop work on a StageView.
WHOLE_RUN = {
    "_adoption.py": {"adopt"},  # the state and the step's failure tally
    "_checkpoint.py": {"save", "restore"},  # the state (restore replaces it) and the usage so far
    "_history.py": {"record_generation"},  # the state's history and the usage so far
    "_result.py": {"from_run"},  # the state, the final choice, the usage and elapsed time
    "_views.py": {"screening_view", "budget_view", "search_view", "stage_view"},  # views of the run
    "_run.py": {"__init__"},  # the announcer
    "_genetic.py": {"_check_budget"},  # the budget's checks before the first call
}


def test_only_these_functions_take_the_whole_run():
    takers = {}
    for path in sorted(OPTIMIZERS.parent.rglob("*.py")):  # the whole package
        takes_run = {name for name, kinds in _takers(path).items() if "SearchRun" in kinds}
        assert takes_run == WHOLE_RUN.get(path.name, set()), path.name
        takers.update({f"{path.name}::{name}": path for name in takes_run})
    assert len(takers) <= 12  # issue 32: 34 before the stages became objects over a view


def test_the_helpers_that_read_only_the_fixed_part_take_the_context():
    from promptevolver.optimizers import _phases as phases
    from promptevolver.optimizers import _reporting as reporting
    from promptevolver.optimizers import _result as result
    from promptevolver.optimizers import _views as views

    for fn in (
        reporting.estimates,
        reporting.out_of_bag_estimates,
        reporting.lineage_entry,
        reporting.split_report,
        result._simulated,
        result._examples_block,
        views.breeding_view,
        views.distill_view,
        views.meta_context,
        views.judge_outputs,
        run_module.prepare_examples,
        phases.example_policies,
        phases._cross_fit_skip,
        phases._still_wrong,
        phases._held_out_fixes,
    ):
        first = next(iter(inspect.signature(fn).parameters.values()))
        assert first.annotation == "RunContext", f"{fn.__qualname__} takes {first.annotation}"


def _one_shot_fingerprint(run: SearchRun) -> str:
    """A checkpoint's fingerprint as it was first computed: sha256 of one sorted-key json.dumps."""
    import hashlib
    import json

    payload = json.dumps(
        [run.context.dataset.model_dump(mode="json"), run.context.loss.describe()], sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()


@pytest.mark.parametrize("text", ["plain", '日本語の回答 ✓ \u2028 "quoted" \\ back', "x" * 5000])
def test_the_fingerprint_is_the_one_shot_json_digest_so_older_checkpoints_still_resume(text):
    """The fingerprint is hashed as it is encoded (no second copy of the annotations in memory);
    its digest is that of the whole text at once, for any text a sample can hold."""
    run = _run()
    samples = run.context.dataset.samples
    samples[0].metric_input["response"] = text  # a field of every kind: text, numbers, None, NaN
    samples[1].metric_input["score"] = 0.1 + 0.2
    samples[2].metric_input["nothing"] = None
    samples[3].metric_output = float("nan")
    assert run.context.fingerprint() == _one_shot_fingerprint(run)
