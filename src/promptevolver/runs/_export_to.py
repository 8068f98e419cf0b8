"""``promptevolver export RUN --to mlflow|promptfoo|deepeval|json``: the judge a run chose, its
instruction AND its teaching examples, taken to where judges run.

Every target reads the one record of the chosen judge (:func:`promptevolver.rundir.read_chosen_judge`:
instructions, examples, the figures it was chosen on, the model it was verified on, whether the
simulated LLM judged) and the run's config (the judge's kind and input fields):

* ``mlflow`` — registers each instruction as a new version of a prompt in MLflow's prompt registry
  (the template is the instruction as is; the commit message names the run and its figures; tags
  say the metric, the example policy and where the examples are) and logs an MLflow run: the
  config as params, the run's figures as metrics (:func:`promptevolver.integrations.mlflow.run_figures`:
  the seed's and the chosen judge's, calls, tokens, cost), and as files ``result.json``, the report,
  ``samples.jsonl`` and ``chosen_judge.json`` (the ``json`` export: the examples travel with the
  prompt version, which links to that run).
* ``promptfoo`` — a ``promptfooconfig.yaml`` fragment: an ``llm-rubric`` assertion whose rubric is
  the instruction, the judge's other inputs as ``{{variables}}`` (the graded output is the
  ``response``) and its teaching examples; the grading provider is the model it was verified on.
* ``deepeval`` — a Python module defining a ``GEval`` metric: the instruction and its examples as
  ``criteria``, the judge's fields as ``evaluation_params``, the verified model, ``strict_mode``
  for a 0/1 judge.
* ``json`` — the chosen judge's record (``best_instructions.json``'s) with the examples shown as
  the judge shows them (``shown_examples``: inputs and the human's answer) and the run's name.

A judge whose examples are retrieved per input (policy ``retrieval``) cannot be one static rubric:
``promptfoo`` and ``deepeval`` refuse it, naming the targets that carry its pool. A run on the
simulated LLM exports all the same, and every target says it is a dry run on the simulated LLM.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from promptevolver.annotations import SampleAnnotation
from promptevolver.config import RunConfig, build_judge, load_dataset
from promptevolver.errors import PromptEvolverError
from promptevolver.evaluation import loss_label
from promptevolver.rundir import (
    DRY_RUN_NOTE,
    REPORT_HTML,
    REPORT_MD,
    RESULT_FILE,
    SAMPLES_FILE,
    ChosenJudge,
    read_chosen_judge,
    read_config,
    read_result,
    write_atomic,
)

__all__ = ["TARGETS", "Export", "export_run"]

Target = Literal["mlflow", "promptfoo", "deepeval", "json"]
#: The targets of ``promptevolver export --to``.
TARGETS: tuple[Target, ...] = ("mlflow", "promptfoo", "deepeval", "json")
#: The ``json`` export's name among an MLflow run's files.
CHOSEN_JUDGE_ARTIFACT = "chosen_judge.json"
#: What every target says of a judge the simulated LLM chose.
_DRY_RUN = "DRY RUN: " + DRY_RUN_NOTE.removeprefix("dry run: ")
#: Our field names → DeepEval's test-case params.
_DEEPEVAL_PARAMS = {
    "user_input": "INPUT",
    "response": "ACTUAL_OUTPUT",
    "reference": "EXPECTED_OUTPUT",
    "retrieved_contexts": "RETRIEVAL_CONTEXT",
    "reference_contexts": "CONTEXT",
}


@dataclass(frozen=True)
class Export:
    """What ``export`` made: the lines to print and, for a file target, the file's text."""

    lines: list[str]
    text: str | None = None


@dataclass(frozen=True)
class _Judge:
    """The chosen judge as every target needs it."""

    run: Path
    chosen: ChosenJudge
    config: RunConfig
    fields: tuple[str, ...]
    label: str
    shown: list[tuple[dict[str, Any], dict[str, Any]]]

    @property
    def name(self) -> str:
        return self.chosen.metric or self.config.metric.name

    @property
    def instruction(self) -> str:
        """The one instruction (targets of one prompt)."""
        if len(self.chosen.instructions) != 1:
            raise PromptEvolverError(
                f"{self.run}: the judge has {len(self.chosen.instructions)} prompts "
                f"({', '.join(self.chosen.instructions)}); promptfoo and DeepEval take one rubric: "
                "export --to json or --to mlflow"
            )
        return next(iter(self.chosen.instructions.values()))

    def figures_line(self) -> str:
        """``accuracy: chosen train 0.944, validation 0.944 (seed 0.833, 0.900)``, n/a where not
        measured; on small data ``accuracy: chosen cross-validated 0.889 over 2 folds, ...``."""
        f = self.chosen.figures
        if not f:
            return "figures: n/a (the run's record holds none)"
        name = loss_label(f.get("loss") or {})
        seed = f.get("seed") or {}
        if f.get("validation") is None and isinstance(f.get("cross_validated"), int | float):
            # small data: nothing held out; the recipe's figure over its folds, refit on them all
            return (
                f"{name}: chosen cross-validated {_n(f['cross_validated'])} over {f.get('folds') or 'n/a'} "
                f"folds, refit on every correction (seed {_n(seed.get('cross_validated'))})"
            )
        return (
            f"{name}: chosen train {_n(f.get('train'))}, validation {_n(f.get('validation'))} "
            f"(seed {_n(seed.get('train'))}, {_n(seed.get('validation'))})"
        )

    def model_line(self) -> str:
        if self.chosen.dry_run:
            return "verified on the simulated LLM (a dry run: no model was called)"
        model = self.chosen.model or {}
        if not model:
            return "verified on: n/a (not recorded)"
        return f"verified on {model.get('provider')} {model.get('model') or ''}".rstrip()


def _n(value: Any) -> str:
    return "n/a" if not isinstance(value, int | float) else f"{value:.3f}"


def _judge(run_dir: Path) -> _Judge:
    chosen = read_chosen_judge(run_dir)
    config = read_config(run_dir)
    judge: Any = build_judge(config.metric, prompt_name=config.prompt_name)
    label = str(getattr(judge, "LABEL_FIELD", "verdict"))
    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []
    if chosen.has_examples and len(chosen.instructions) == 1 and hasattr(judge, "demonstrations"):
        store = chosen.examples.get("store") or {}
        samples = [SampleAnnotation.model_validate(s) for s in store.get("samples", [])]
        picked = (
            [samples[i] for i in store.get("static", [])] if chosen.example_policy == "static" else samples
        )
        shown = judge.demonstrations(picked)
    return _Judge(run_dir, chosen, config, _fields(judge, config, shown), label, shown)


def _fields(
    judge: Any, config: RunConfig, shown: list[tuple[dict[str, Any], dict[str, Any]]]
) -> tuple[str, ...]:
    """The input fields the judge shows: its required ones, then the optional ones its samples
    hold (read off the examples, else the run's annotations; required only when neither is there)."""
    required = tuple(getattr(judge, "REQUIRED_FIELDS", ("user_input", "response")))
    optional = tuple(getattr(judge, "OPTIONAL_FIELDS", ()))
    present: set[str] = {k for inputs, _ in shown for k in inputs}
    if not present:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # unusable samples: the run warned of them already
                dataset = load_dataset(config)
            present = {
                k
                for sample in dataset.samples
                for k, v in sample.metric_input.items()
                if v not in (None, "", [])
            }
        except (PromptEvolverError, OSError):
            present = set()
    return required + tuple(f for f in optional if f in present)


# --- text shared by the rubric targets -------------------------------------------------------------


def _examples_text(j: _Judge) -> str:
    """The teaching examples as a rubric shows them: each one's inputs and the human's answer."""
    if not j.shown:
        return ""
    blocks = []
    for number, (inputs, output) in enumerate(j.shown, start=1):
        lines = [f"Example {number}"]
        lines += [f"  {k}: {_one_line(v)}" for k, v in inputs.items() if v is not None]
        lines += [f"  {k}: {_one_line(v)}" for k, v in output.items()]
        blocks.append("\n".join(lines))
    return "Examples of the humans' answers (the judge was verified showing these):\n\n" + "\n\n".join(blocks)


def _one_line(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _refuse_retrieval(j: _Judge, target: str) -> None:
    if j.chosen.example_policy == "retrieval":
        store = j.chosen.examples.get("store") or {}
        raise PromptEvolverError(
            f"{j.run}: the chosen judge retrieves its {store.get('k', '?')} teaching examples per input "
            f"from a pool of {len(store.get('samples', []))} (example policy retrieval), which {target} "
            "cannot do; export --to json or --to mlflow carries its pool, or optimize with "
            "optimizer.examples.policy: static"
        )


def _header(j: _Judge, comment: str) -> str:
    lines = [
        f"The {j.name} judge chosen by promptevolver run {j.run} ({j.figures_line()}; {j.model_line()}).",
    ]
    if j.chosen.dry_run:
        lines.append(f"{_DRY_RUN}.")
    return "\n".join(f"{comment} {line}" if comment else line for line in lines)


# --- promptfoo -------------------------------------------------------------------------------------


def promptfoo_text(j: _Judge) -> str:
    """A ``promptfooconfig.yaml`` fragment: ``defaultTest.assert`` with the judge as ``llm-rubric``."""
    _refuse_retrieval(j, "promptfoo's llm-rubric")
    inputs = [f for f in j.fields if f != "response"]
    parts = [j.instruction.strip()]
    if inputs:
        parts.append(
            "The output to grade is the response. Its inputs:\n"
            + "\n".join(f"{f}: {{{{{f}}}}}" for f in inputs)
        )
    if examples := _examples_text(j):
        parts.append(examples)
    parts.append(_pass_rule(j))
    assertion: dict[str, Any] = {"type": "llm-rubric", "value": _Block("\n\n".join(parts) + "\n")}
    provider = _promptfoo_provider(j)
    if provider is not None:
        assertion["provider"] = provider
    body = yaml.dump(
        {"defaultTest": {"assert": [assertion]}}, Dumper=_Dumper, sort_keys=False, allow_unicode=True
    )
    return _header(j, "#") + "\n" + body


class _Block(str):
    """A string YAML writes as a literal block (``|``), line for line as the judge reads it."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _Block, lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", str(text), style="|")
)


def _pass_rule(j: _Judge) -> str:
    scale = j.config.metric.score_range
    if j.label == "verdict":
        return "Pass when the verdict would be 1, fail when it would be 0; the score is the verdict (1 or 0)."
    low, high = scale or (1, 5)
    return (
        f"Score the output on the judge's scale {low:g} to {high:g}, then report "
        f"(score - {low:g}) / {high - low:g}."
    )


def _promptfoo_provider(j: _Judge) -> str | None:
    model = j.chosen.model or {}
    if j.chosen.dry_run or not model.get("model"):
        return None
    return f"openai:chat:{model['model']}"


# --- DeepEval --------------------------------------------------------------------------------------


def deepeval_text(j: _Judge) -> str:
    """A Python module defining the judge as a DeepEval ``GEval`` metric."""
    _refuse_retrieval(j, "DeepEval's GEval")
    criteria = "\n\n".join(p for p in (j.instruction.strip(), _examples_text(j)) if p)
    params = [_DEEPEVAL_PARAMS[f] for f in j.fields if f in _DEEPEVAL_PARAMS] or ["INPUT", "ACTUAL_OUTPUT"]
    model = j.chosen.model or {}
    arguments = [
        f"    name={j.name!r},",
        f"    criteria={criteria!r},",
        "    evaluation_params=[" + ", ".join(f"Params.{p}" for p in params) + "],",
    ]
    if not j.chosen.dry_run and model.get("model"):
        arguments.append(f"    model={model['model']!r},")
    if j.label == "verdict":
        arguments.append("    strict_mode=True,  # a 0/1 judge: GEval's score is 1 or 0")
    lines = [
        '"""' + _header(j, "").replace('"""', "'''"),
        "",
        "Its criteria are the chosen instruction as is, then the teaching examples it was verified with.",
        '"""',
        "",
        "from deepeval.metrics import GEval",
        "",
        "try:  # DeepEval's name for the test case's fields",
        "    from deepeval.test_case import SingleTurnParams as Params",
        "except ImportError:",
        "    from deepeval.test_case import LLMTestCaseParams as Params",
        "",
        f"{_identifier(j.name)} = GEval(",
        *arguments,
        ")",
        "",
    ]
    return "\n".join(lines)


def _identifier(name: str) -> str:
    text = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "judge"
    return f"judge_{text}" if text[0].isdigit() else text


# --- JSON ------------------------------------------------------------------------------------------


def json_value(j: _Judge) -> dict[str, Any]:
    """The chosen judge's record with its examples as shown and the run's name."""
    record = j.chosen.to_dict()
    record["run"] = str(j.run)
    record["verified_on"] = j.model_line()
    record["shown_examples"] = [{"inputs": i, "output": o} for i, o in j.shown]
    if j.chosen.example_policy == "retrieval":
        record["shown_examples_note"] = (
            f"retrieval: per input, the {j.chosen.examples.get('store', {}).get('k')} most similar of these"
        )
    return record


# --- MLflow ----------------------------------------------------------------------------------------


def _mlflow(j: _Judge, *, tracking_uri: str | None, prompt_name: str, experiment: str) -> list[str]:
    from promptevolver.integrations.mlflow import log_judge, run_figures, shown_uri

    result = read_result(j.run)
    names = (
        {prompt_name: next(iter(j.chosen.instructions))}
        if len(j.chosen.instructions) == 1
        else {f"{prompt_name}.{p}": p for p in j.chosen.instructions}
    )
    message = f"promptevolver run {j.run.resolve().name} ({j.name}): {j.figures_line()}; {j.model_line()}"
    if j.chosen.dry_run:
        message += " - DRY RUN on the simulated LLM, not a judge to ship"
    files = [j.run / n for n in (RESULT_FILE, REPORT_MD, REPORT_HTML, SAMPLES_FILE) if (j.run / n).is_file()]
    usage = result.get("usage") or {}
    cost = (
        "none: the simulated LLM answered (no model was called)"
        if j.chosen.dry_run
        else f"{usage['cost_usd']:.6f} USD"
        if usage.get("cost_usd")
        else "n/a: no prices (llm.prices) for the model"
    )
    logged = log_judge(
        tracking_uri=tracking_uri,
        experiment=experiment,
        run_name=f"{j.name} ({j.run.resolve().name})",
        prompts={name: j.chosen.instructions[p] for name, p in names.items()},
        commit_message=message,
        prompt_tags={
            "promptevolver.metric": j.name,
            "promptevolver.run": str(j.run.resolve()),
            "promptevolver.simulated_llm": str(bool(j.chosen.dry_run)).lower(),
            "promptevolver.example_policy": j.chosen.example_policy,
            "promptevolver.examples": str(len(j.shown)),
        },
        params=j.config.dump(relative_to=j.run),
        metrics=run_figures(result),
        run_tags={
            "promptevolver.metric": j.name,
            "promptevolver.simulated_llm": str(bool(j.chosen.dry_run)).lower(),
            "promptevolver.cost": cost,
            **({"mlflow.note.content": f"{_DRY_RUN}."} if j.chosen.dry_run else {}),
        },
        files=files,
        texts={CHOSEN_JUDGE_ARTIFACT: json.dumps(json_value(j), ensure_ascii=False, indent=2)},
    )
    lines = [
        f"registered {', '.join(f'prompts:/{n}/{v}' for n, v in logged.versions.items())} and logged run "
        f"{logged.run_id} (experiment {experiment!r}) at {shown_uri(tracking_uri)}"
    ]
    lines.append(
        f"{j.figures_line()}; {j.model_line()}; examples: {j.chosen.example_policy} ({len(j.shown)})"
    )
    if j.chosen.dry_run:
        lines.append(_DRY_RUN)
    return lines


# --- the command -----------------------------------------------------------------------------------


def export_run(
    run_dir: str | Path,
    *,
    to: Target,
    output: str | Path | None = None,
    force: bool = False,
    tracking_uri: str | None = None,
    prompt_name: str | None = None,
    experiment: str = "promptevolver",
) -> Export:
    """Export the judge ``run_dir`` chose to ``to`` (see the module docstring). A file target's
    text goes to ``output`` (atomically; an existing file only with ``force``) or, without one,
    into :attr:`Export.text` for the caller to print.

    Raises:
        ConfigError, RunDirError: not a finished run directory.
        PromptEvolverError: a target that cannot take this judge (examples retrieved per input;
            several prompts), or ``output`` exists.
        TrackingError: the MLflow server cannot be reached or refuses.
        ImportError: ``mlflow`` without MLflow installed.
    """
    run = Path(run_dir)
    j = _judge(run)
    if to == "mlflow":
        return Export(
            _mlflow(j, tracking_uri=tracking_uri, prompt_name=prompt_name or j.name, experiment=experiment)
        )
    if to == "promptfoo":
        text = promptfoo_text(j)
    elif to == "deepeval":
        text = deepeval_text(j)
    else:
        text = json.dumps(json_value(j), ensure_ascii=False, indent=2) + "\n"
    notes = [f"{j.figures_line()}; {j.model_line()}; examples: {j.chosen.example_policy} ({len(j.shown)})"]
    if j.chosen.dry_run:
        notes.append(_DRY_RUN)
    if output is None:
        return Export(notes, text)
    path = Path(output)
    if path.exists() and not force:
        raise PromptEvolverError(f"--output {path} exists; pass --force to replace it")
    write_atomic(path, text)
    return Export([f"wrote the {j.name} judge for {to} to {path}", *notes])


def run_export(args: Any) -> Export:
    """``promptevolver export``'s work from its parsed arguments.

    Raises:
        ValueError: options of another target (a usage error).
    """
    if args.to != "mlflow":
        given = [o for o, v in (("--tracking-uri", args.tracking_uri), ("--prompt-name", args.prompt_name),
                                ("--experiment", args.experiment)) if v]  # fmt: skip
        if given:
            raise ValueError(f"{', '.join(given)}: for --to mlflow only")
    elif args.output is not None:
        raise ValueError("--output: --to mlflow writes no file (it registers the prompt and logs a run)")
    try:
        return _export_command(args)
    except ImportError as exc:  # MLflow is not installed: one line naming the extra
        raise PromptEvolverError(str(exc)) from exc


def _export_command(args: Any) -> Export:
    return export_run(
        args.run_dir,
        to=args.to,
        output=args.output,
        force=args.force,
        tracking_uri=args.tracking_uri,
        prompt_name=args.prompt_name,
        experiment=args.experiment or "promptevolver",
    )
