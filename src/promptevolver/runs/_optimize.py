"""Running a config: build everything it names, optimize, and fill the run directory.

The run directory's files (their names, atomic writes and readers) belong to
:mod:`promptevolver.rundir`; this module writes config.yaml and result.json through it, and the
exports (:mod:`promptevolver.runs._export`: best instructions, samples.jsonl) and the report
(:mod:`promptevolver.report`) at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from promptevolver.config import (
    RunConfig,
    build_loss,
    build_run_parts,
    check_dataset_found,
    load_dataset,
    resolve_prompt,
)
from promptevolver.errors import CheckpointError, ConfigError, PromptEvolverError
from promptevolver.judge import AspectCritic
from promptevolver.llm import LLMClient, preflight
from promptevolver.optimizers import GeneticOptimizer, OptimizationResult
from promptevolver.optimizers.events import Callback, Event
from promptevolver.report import load_run, write_report
from promptevolver.rundir import (
    CONFIG_FILE,
    REPORT_HTML,
    REPORT_MD,
    RESULT_FILE,
    SAMPLES_FILE,
    check_unlocked,
    clear_run,
    locked,
    read_result,
    write_atomic,
)
from promptevolver.runs._export import write_exports, write_samples
from promptevolver.runs._resume import check_run_dir, check_same_search, record_judgement, resume_point

if TYPE_CHECKING:
    from promptevolver.integrations.mlflow import MlflowTracker

__all__ = ["CONFIG_FILE", "RESULT_FILE", "execute", "write_config", "write_result"]

#: The MLflow run's description when the simulated LLM answered (``mlflow.note.content``).
SIMULATED_RUN_NOTE = (
    "Dry run on the simulated LLM (llm.provider fake): no language model was called; these figures "
    "say how the pipeline ran on the annotations, not how a real judge agrees with the humans."
)


def write_config(directory: str | Path, config: RunConfig) -> Path:
    """Write ``config`` as DIR/config.yaml atomically (directory created if needed); return its path.

    Raises:
        OSError: the file cannot be written (an existing one is left intact).
    """
    text = yaml.safe_dump(config.dump(relative_to=Path(directory)), sort_keys=False)
    return write_atomic(Path(directory) / CONFIG_FILE, text)


def write_result(directory: str | Path, result: OptimizationResult) -> Path:
    """Write DIR/result.json atomically (with its ``format_version``); return its path.

    Raises:
        OSError: the file cannot be written (an existing one is left intact).
    """
    path = Path(directory) / RESULT_FILE
    result.to_json(path)
    return path


def execute(
    config: RunConfig,
    run_dir: str | Path,
    *,
    resume: bool = False,
    force: bool = False,
    progress: bool = False,
    callbacks: Sequence[Callback] = (),
    source: str | Path | None = None,
    log: Callable[[str], None] = lambda _: None,
    step: Callable[[str], None] = lambda _: None,
) -> OptimizationResult:
    """Build everything ``config`` names, optimize, and write the run directory.

    Checks the LLM servers first (the preflight: reachable, key accepted, model served), before
    anything is written: a run that cannot start leaves no trace, and a resume's directory is left
    as it was. A run that stops later but before its first answered call (bad data, a budget
    refused) in a new folder leaves none either (:func:`promptevolver.rundir.locked` removes it
    again); a resume that does puts its config.yaml back as it was.

    Writes config.yaml first (with the judge's ``prompt_name`` matched to the annotation file's
    prompt keys, :func:`~promptevolver.config._build.resolve_prompt`; ``log`` gets a line naming
    it unless it is the judge's usual name), a checkpoint after every generation, and at the end
    result.json, the exports and the report. ``callbacks`` receive the optimizer's events.

    One process at a time writes a run directory (:func:`promptevolver.rundir.locked`: a second
    one is refused naming the holder). A run directory is never clobbered
    (:mod:`promptevolver.runs._resume`): a new run refuses one
    holding an interrupted or finished run unless ``force`` (then its run files are removed
    first); ``resume`` needs a checkpoint and a config that keeps the search the same, and
    ``log`` receives a line saying where it resumes and which calls it will not repeat.

    Args:
        source: where ``config`` was read from, for messages (default: DIR/config.yaml).
        step: receives a line before each step that makes no LLM call and may take long (loading
            the annotations, building the simulated LLM, writing the report), e.g.
            :meth:`CallProgress.step <promptevolver.runs.progress.CallProgress.step>`.

    Raises:
        PromptEvolverError: bad data, config, budget or checkpoint (see :mod:`promptevolver.errors`);
            RunDirError when ``run_dir`` holds a run this call would lose, or another process is
            writing it.
        KeyboardInterrupt: the run was interrupted; the last checkpoint stays valid.
    """
    directory = Path(run_dir)
    check_unlocked(directory)  # another process writing it: say so, not what its files hold
    check_run_dir(directory, resume=resume, force=force)
    if isinstance(config.dataset, Path):  # before a resume says what it keeps
        check_dataset_found(config.dataset, source or directory / CONFIG_FILE)
    if resume:
        check_same_search(directory, config, source=source or directory / CONFIG_FILE)
        settings = config.effective_optimizer()
        log(resume_point(directory).describe(settings.generations, settings.patience))
    opt_config = config.effective_optimizer()
    step(f"loading the annotations: {_dataset_name(config)}")
    dataset = load_dataset(config)
    match = resolve_prompt(config, dataset)
    if match.rename not in (None, AspectCritic.PROMPT_NAME) or match.how == "absent":
        log(match.describe())  # the usual case is named in the outcome ("best instruction for ...")
    config = config.model_copy(update={"prompt_name": match.rename})  # config.yaml records it
    metric, llm, reflection = build_run_parts(
        config, dataset, random_seed=opt_config.random_seed, prompt_name=match.rename, step=step
    )
    tracking = _tracking_uri(config)  # a bad tracking config fails before any LLM call
    asyncio.run(check_servers(llm, reflection))  # the server, key and model, before anything is written
    with locked(directory):  # nothing is written into the directory before this
        check_run_dir(directory, resume=resume, force=force)  # again: another process may have written
        if force and not resume:
            clear_run(directory)
        previous = (directory / CONFIG_FILE).read_text(encoding="utf-8") if resume else None
        write_config(directory, config)
        record_judgement(directory, config)
        tracker = None if tracking is None else _tracker(config, directory, tracking[0])
        answered: list[Event] = []  # the first answered call, if any

        def note_answer(event: Event) -> None:
            if event.kind == "llm_call" and not answered:
                answered.append(event)

        optimizer = GeneticOptimizer(
            metric=metric,
            llm=llm,
            reflection_llm=reflection,
            progress=progress,
            callbacks=[note_answer, *callbacks, *([tracker] if tracker is not None else [])],
        )
        try:
            result = optimizer.optimize(
                dataset, build_loss(config.loss), opt_config, run_dir=directory, resume=resume
            )
            step(f"writing result.json, the exports and the report to {directory}")
            write_result(directory, result)
            write_exports(directory, result.chosen_judge(), config.metric)
            # gathered once: the verdicts of seed and best; a missing one re-judged by the run's own
            # simulated LLM (its world is not built again)
            facts = load_run(directory, dataset=dataset, llm=llm)
            write_report(directory, facts=facts)
            write_samples(directory, facts)
        except BaseException as exc:
            if tracker is not None:
                interrupted = isinstance(exc, KeyboardInterrupt)  # Ctrl-C waits 2 s at most
                tracker.finish(
                    status="KILLED" if interrupted else "FAILED", timeout_s=2.0 if interrupted else None
                )
            stopped_before = isinstance(exc, CheckpointError) or (
                isinstance(exc, PromptEvolverError) and not answered
            )
            if previous is not None and stopped_before:  # a resume that did not start: as it was
                write_atomic(directory / CONFIG_FILE, previous)
            if not isinstance(exc, CheckpointError):
                raise
            raise CheckpointError(
                f"{exc} (config: {source or directory / CONFIG_FILE}; dataset: {_dataset_name(config)})"
            ) from exc
    if tracker is not None:
        _finish_tracking(tracker, directory)
    return result


async def check_servers(*clients: LLMClient | None) -> None:
    """Each client's preflight check (:func:`promptevolver.llm.preflight`; the optimizer's own
    is then a no-op), then their connections of this event loop closed: what a run (or a job)
    checks before it writes anything.

    Raises:
        PermanentLLMError: a server is unreachable, refuses the key or lacks the model (one line).
    """
    try:
        await preflight(*clients)
    finally:
        for client in {id(c): c for c in clients if c is not None}.values():
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()


def _tracking_uri(config: RunConfig) -> tuple[str | None] | None:
    """``(tracking URI,)`` of ``tracking.mlflow`` (None inside: MLflow's default), checked before
    the run starts; None without tracking.

    Raises:
        ConfigError: MLflow is not installed, or the URI names an unset environment variable.
    """
    import importlib.util

    settings = config.tracking.mlflow
    if settings is None:
        return None
    if importlib.util.find_spec("mlflow") is None:
        raise ConfigError('tracking.mlflow needs MLflow: pip install "promptevolver[mlflow]"')
    return (settings.resolved_uri(),)


def _tracker(config: RunConfig, directory: Path, uri: str | None) -> MlflowTracker:
    """The run's MLflow tracker (``tracking.mlflow``), its MLflow run started on its own thread."""
    from promptevolver.integrations.mlflow import MlflowTracker

    settings = config.tracking.mlflow
    assert settings is not None
    return MlflowTracker(
        tracking_uri=uri,
        experiment=settings.experiment,
        run_name=settings.run_name or f"{config.metric.name} ({directory.resolve().name})",
        params=config.dump(relative_to=directory),
        tags={"promptevolver.metric": config.metric.name, "promptevolver.run_dir": str(directory.resolve())},
        timeout_s=settings.timeout_s,
    )


def _finish_tracking(tracker: MlflowTracker, directory: Path) -> None:
    """The final figures (read from result.json, their one record), tags and files of the run."""
    from promptevolver.integrations.mlflow import run_figures

    result = read_result(directory)
    simulated = bool(result.get("simulated_llm"))
    tags = {"promptevolver.simulated_llm": str(simulated).lower()}
    if simulated:
        tags["mlflow.note.content"] = SIMULATED_RUN_NOTE
    files = [directory / name for name in (RESULT_FILE, REPORT_HTML, REPORT_MD, SAMPLES_FILE)]
    tracker.finish(figures=run_figures(result), tags=tags, artifacts=[f for f in files if f.is_file()])


def _dataset_name(config: RunConfig) -> str:
    return (
        str(config.dataset)
        if isinstance(config.dataset, Path)
        else "synthetic " + str(config.dataset.synthetic.model_dump())
    )
