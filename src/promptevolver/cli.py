"""Command line: ``promptevolver optimize | evaluate | estimate | report | bench | suggest | review |
import | export``.

Conventions (every command):

* exit codes: 0 success, 1 failure (bad data, config, LLM, budget, files), 2 usage error,
  130 interrupted;
* errors go to stderr as one line, ``promptevolver: error: ...``; ``--debug`` shows the traceback;
* ``--quiet`` prints only the essential line, ``--verbose`` adds detail (per-generation lines,
  phases, INFO logs); progress bars appear only when stderr is a terminal;
* ``--set KEY.PATH=VALUE`` overrides a config value (repeatable; the value is read as YAML; an
  unknown key is a usage error naming it), e.g. ``--set optimizer.generations=5``;
* ``promptevolver --version`` prints the version.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

# Commands import what they need when they run: `--help` loads no pydantic, YAML, numpy,
# scikit-learn, matplotlib or openai (benchmarks/results/startup.md has the figures).
from promptevolver import __version__, rundir
from promptevolver.errors import LLMUnusableError, PromptEvolverError

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from promptevolver.config import ManyConfig, RunConfig

__all__ = ["main"]

_Config = TypeVar("_Config", bound="RunConfig | ManyConfig")

_EXAMPLES = {
    "optimize": """examples:
  promptevolver optimize configs/answer_correctness.yaml --output runs/ac
  promptevolver optimize configs/helpfulness.yaml -o runs/help --seed 7 --set optimizer.generations=6
  promptevolver optimize --resume runs/ac                    # after Ctrl-C
  promptevolver optimize --resume runs/ac --set optimizer.generations=8 --set optimizer.patience=4
                                                       # extend a finished run
  promptevolver optimize configs/answer_correctness.yaml -o runs/ac --force   # start runs/ac over

DIR is never overwritten silently: a run there, interrupted or finished, needs --resume or --force.

writes DIR/result.json, DIR/report.html (open it in a browser), DIR/report.md,
DIR/best_instructions.json and DIR/apply_best.py""",
    "evaluate": """examples:
  promptevolver evaluate configs/answer_correctness.yaml --instructions runs/ac/result.json
  promptevolver evaluate configs/answer_correctness.yaml -i runs/ac/best_instructions.json --json
  promptevolver evaluate configs/answer_correctness.yaml -i runs/ac/result.json --split validation

  promptevolver evaluate configs/answer_correctness.yaml -i runs/ac --fail-under 0.85   # judge gate (CI)

--instructions takes a run directory, a result.json (its best_instructions) or a JSON object
prompt name -> instruction. Instructions from a run are scored on that run's validation samples
(its train samples were learned from); --split all scores every usable sample.
--fail-under X exits 1 with a one-line reason when the agreement (--figure) is below X or an
evaluation failed (--max-failed allows a share); the confidence interval is printed beside it.""",
    "estimate": """examples:
  promptevolver estimate configs/synthetic_200.yaml
  promptevolver estimate configs/helpfulness.yaml --json
  promptevolver estimate configs/answer_correctness.yaml --set optimizer.population_size=10

no LLM is called; see promptevolver.runs._estimate for the model behind the figures.""",
    "agreement": """examples:
  promptevolver agreement benchmarks/data/pandalm_pairwise.json          # a / b / tie, 3 annotators
  promptevolver agreement benchmarks/data/llmbar_pairwise.json --json    # every disagreement
  promptevolver agreement configs/answer_correctness.yaml                 # the config's judge and file
  promptevolver agreement labels.json --classes positive,negative,neutral --split-items drop

No LLM is called: the verdicts the file records (metric_output) are compared with the human
labels (target, the annotators' majority, or the accepted / flipped verdict). A file's scale is
read off it (pairwise when its samples hold response_a and response_b); --scale or --classes
name it. Annotators: a sample's annotator_labels ({name: label}); the pairwise verdict recorded
with the responses swapped: metric_output_swapped.""",
    "report": """examples:
  promptevolver report runs/ac          # rewrites runs/ac/report.md, report.html and plots/""",
    "bench": """examples:
  promptevolver bench configs/answer_correctness.yaml configs/helpfulness.yaml -o bench/latest""",
    "examples": """examples:
  promptevolver examples runs/ac --add more_annotations.json      # add to the run's example store
  promptevolver examples runs/ac --remove 12,40                    # forget two (dataset positions)
  promptevolver examples runs/ac --add new.json --set llm.base_url=http://localhost:8000/v1

Changes the example store of a finished run whose judge shows teaching examples (policy static
or retrieval) and re-verifies on the run's validation samples, before and after, without a search
(0 meta calls). result.json then holds the new store and, in examples.updates, what changed and
the held-out figures. --remove takes positions from result.json's examples.store.positions.
See docs/examples.md.""",
    "suggest": """examples:
  promptevolver suggest runs/ac --pool traces.jsonl -n 20 --out to_annotate.jsonl
  promptevolver suggest runs/ac --pool export.json -n 10 --max-calls 300
  promptevolver suggest runs/ac --pool traces.jsonl -n 20 --set llm.base_url=http://localhost:8000/v1

--pool: JSONL of metric inputs (user_input, response, reference, ...; one trace a line), or a Ragas
annotation file (its labels are ignored). Writes one JSON line per suggested trace, best first
(metric_input, score, why, verdicts, ...) to --out or stdout; a summary line (traces judged, judge
calls, the LLM used) goes to stderr. See docs/suggest.md.""",
    "review": """examples:
  promptevolver review annotations.json                       # label or correct the judge's verdicts
  promptevolver review labels.json --pool to_annotate.jsonl   # suggest's output: its order and why
  promptevolver review labels.json --run runs/ac --pool traces.jsonl   # ranked by suggest first
  promptevolver review annotations.json --run runs/ac --port 8765 --open

Prints the page's URL (127.0.0.1, with its token) as the first line on stdout; open it in a
browser. Each label is written into FILE (Ragas' annotation format) the moment it is given; FILE is
created on the first label when --pool is given. One review per file at a time. See docs/review.md.""",
    "import": """examples:
  promptevolver import csv labels.csv --output annotations.json
  promptevolver import jsonl labels.jsonl -o annotations.json --column human_verdict=label --kind binary
  promptevolver import mlflow --tracking-uri http://127.0.0.1:5000 --experiment my-app \\
      --assessment correctness --output annotations.json --field user_input=question

csv/jsonl: one judged sample a row, columns named after the judge's inputs (user_input, response,
reference, ...) plus judge_verdict (or judge_score), judge_reason, human_verdict (or human_score),
human_reason, annotator. mlflow: every trace carrying an LLM judge's and a human's Feedback of the
--assessment name. Writes a Ragas annotation file (metric: --metric, default the file's stem or
the assessment name) that optimize, evaluate and estimate read. See docs/import-csv.md,
docs/import-mlflow.md.""",
    "export": """examples:
  promptevolver export runs/ac --to mlflow --tracking-uri http://127.0.0.1:5000 --prompt-name ac-judge
  promptevolver export runs/ac --to promptfoo -o promptfoo-judge.yaml
  promptevolver export runs/ac --to deepeval -o ac_judge.py
  promptevolver export runs/ac --to json

The judge the run chose, its instruction AND its teaching examples. mlflow: a new version of prompt
NAME in the prompt registry (its template the instruction as is) and an MLflow run with the run's
config, figures, cost and files; promptfoo: an llm-rubric assertion; deepeval: a GEval metric;
json: instruction, examples, figures, the model it was verified on. Without -o the text goes to
stdout. See docs/export-mlflow.md, docs/export-promptfoo.md, docs/export-deepeval.md.""",
}


class UsageError(Exception):
    """A command line that parses but does not make sense (exit code 2)."""


def _share(*, below_one: bool = False) -> Callable[[str], float]:
    """An argparse type: a number in [0, 1] (``[0, 1)``), else a usage error (``85`` names 0.85)."""

    def parse(text: str) -> float:
        from promptevolver.runs import check_threshold

        try:
            return check_threshold(float(text), name="", below_one=below_one)
        except ValueError as exc:  # not a number, or a ConfigError of the range
            said = str(exc) if isinstance(exc, PromptEvolverError) else f"{text!r} is not a number"
            raise argparse.ArgumentTypeError(said) from None

    return parse


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    talk = common.add_mutually_exclusive_group()
    talk.add_argument("--quiet", "-q", action="store_true", help="print only the essential line")
    talk.add_argument("--verbose", "-v", action="store_true", help="print more detail")
    common.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    return common


def _overridable() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. optimizer.generations=5 (YAML value; repeatable)",
    )
    return parent


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="promptevolver",
        description="Genetic optimization of LLM-judge instructions from human annotations.",
        epilog="run 'promptevolver COMMAND --help' for a command's options and examples",
    )
    parser.add_argument("--version", action="version", version=f"promptevolver {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common, overridable = _common(), _overridable()

    def command(name: str, help_text: str, *extra: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parents: list[Any] = [*extra, common]
        return sub.add_parser(
            name,
            help=help_text,
            description=help_text[0].upper() + help_text[1:] + ".",
            epilog=_EXAMPLES[name],
            parents=parents,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    opt = command("optimize", "optimize a judge's instructions from a YAML config", overridable)
    opt.add_argument("config", type=Path, nargs="?", help="YAML run config (see configs/)")
    opt.add_argument("--output", "-o", type=Path, metavar="DIR", help="run directory to write")
    opt.add_argument("--resume", type=Path, metavar="DIR", help="continue the interrupted run in DIR")
    opt.add_argument("--seed", type=_seed, default=None, help="override the config's random_seed")
    opt.add_argument(
        "--force",
        action="store_true",
        help="start afresh in DIR even if it holds a run (its run files are removed)",
    )

    ev = command("evaluate", "score given instructions on a config's annotations", overridable)
    ev.add_argument("config", type=Path, help="YAML run config (annotations, judge, LLM)")
    ev.add_argument(
        "--instructions", "-i", type=Path, required=True, metavar="FILE", help="instructions JSON"
    )
    ev.add_argument(
        "--split",
        choices=("all", "validation"),
        default=None,
        help="samples to score (default: a run's validation samples, found by content, when the "
        "instructions come from a run, else all usable samples); a run of another metric or "
        "annotation file has no validation samples here: --split all scores every usable sample",
    )
    ev.add_argument("--run", type=Path, metavar="DIR", help="run whose validation split to use")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument(
        "--samples-out",
        type=Path,
        metavar="FILE",
        help="write one JSON line per scored sample (its input, the human's label and reason, the "
        "judge's verdict and reason, or the failure) to FILE",
    )
    ev.add_argument(
        "--fail-under",
        type=_share(),
        metavar="X",
        help="judge gate: exit 1 when the agreement figure (in [0, 1]) is below X (or when "
        "evaluations failed)",
    )
    ev.add_argument(
        "--figure",
        choices=("accuracy", "f1", "cohen_kappa", "within_one", "exact", "weighted_kappa"),
        default=None,
        help="agreement figure of --fail-under and of the confidence interval (default: accuracy for "
        "a binary metric, within_one for ordinal scores)",
    )
    ev.add_argument(
        "--max-failed",
        type=_share(below_one=True),
        default=0.0,
        metavar="RATE",
        help="share of failed evaluations the gate tolerates (default 0)",
    )

    est = command(
        "estimate", "expected LLM calls, tokens and cost of a config, without calling an LLM", overridable
    )
    est.add_argument("config", type=Path, help="YAML run config")
    est.add_argument("--json", action="store_true", help="print one JSON object")

    agr = command(
        "agreement", "measure the judge an annotation file records against its humans, with no LLM call"
    )
    agr.add_argument("source", type=Path, metavar="FILE_OR_CONFIG", help="annotation file or YAML run config")
    agr.add_argument("--metric", metavar="NAME", help="the metric of a file holding several")
    agr.add_argument(
        "--scale",
        choices=("auto", "binary", "numeric", "pairwise", "pairwise_binary"),
        default="auto",
        help="the labels of a file (default: read off it; pairwise: a / b / tie; "
        "pairwise_binary: is a better)",
    )
    agr.add_argument(
        "--classes",
        metavar="NAMES",
        help="a classification's class names, comma-separated (value i: the i-th)",
    )
    agr.add_argument(
        "--split-items",
        choices=("keep", "drop", "weight"),
        default="keep",
        help="items the annotators did not label alike: kept (default), dropped, or weighted by the "
        "share of annotators behind the label",
    )
    agr.add_argument(
        "--seed", type=_seed, default=None, help="seed of the bootstrap intervals (0, as the report's)"
    )
    agr.add_argument("--json", action="store_true", help="print one JSON object (every disagreement)")

    rep = command("report", "regenerate a run directory's report (report.md, report.html) and samples.jsonl")
    rep.add_argument("run_dir", type=Path, metavar="DIR", help="run directory (with result.json)")

    bench = command(
        "bench", "run configs over their seeds and summarise (summary.json, summary.md)", overridable
    )
    bench.add_argument("configs", type=Path, nargs="+", help="YAML run configs")
    bench.add_argument(
        "--output", "-o", type=Path, required=True, metavar="DIR", help="directory for runs and the summary"
    )
    bench.add_argument("--force", action="store_true", help="run afresh where DIR already holds runs")

    mem = command(
        "examples",
        "add annotations to a finished run's example store, or remove some, and re-verify",
        overridable,
    )
    mem.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished run directory")
    mem.add_argument("--add", type=Path, metavar="FILE", help="annotations of the run's metric to add")
    mem.add_argument(
        "--remove",
        type=_positions,
        default=[],
        metavar="IDS",
        help="comma-separated dataset positions of store samples to forget (examples.store.positions)",
    )
    mem.add_argument("--json", action="store_true", help="print the update record as one JSON object")

    sug = command(
        "suggest", "rank unlabelled traces by how much a human label would teach a run's judge", overridable
    )
    sug.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished run directory")
    sug.add_argument("--pool", type=Path, required=True, metavar="FILE", help="traces to choose from")
    sug.add_argument("-n", type=_positive, required=True, metavar="N", help="traces to suggest")
    sug.add_argument("--out", type=Path, metavar="FILE", help="write the JSON lines here (default: stdout)")
    sug.add_argument(
        "--max-calls", type=_count, default=None, metavar="M", help="LLM calls allowed (default: no bound)"
    )
    sug.add_argument(
        "--reasks",
        type=_count,
        default=2,
        metavar="K",
        help="extra answers of the chosen judge per trace (2)",
    )
    sug.add_argument(
        "--calibration",
        type=_count,
        default=60,
        metavar="C",
        help="annotated samples judged to learn which votes point at the judge's mistakes (60; 0: none)",
    )
    rev = command("review", "label what the judge got wrong on a local page (127.0.0.1 only)", overridable)
    rev.add_argument("file", type=Path, metavar="FILE", help="the annotation file the labels go into")
    rev.add_argument("--pool", type=Path, metavar="POOL", help="traces to label (JSONL, or suggest's output)")
    rev.add_argument("--run", type=Path, metavar="RUN", help="a finished run: its chosen judge's verdicts")
    rev.add_argument("--metric", metavar="NAME", help="the metric of a file holding several")
    rev.add_argument(
        "--port", type=_count, default=0, metavar="N", help="port on 127.0.0.1 (0: any free one)"
    )
    rev.add_argument("--open", action="store_true", help="open the page in the default browser")
    imp = command("import", "write a Ragas annotation file from labels kept in CSV, JSONL or MLflow")
    imp.add_argument("source", choices=("csv", "jsonl", "mlflow"), help="where the labels are")
    imp.add_argument("file", type=Path, nargs="?", metavar="FILE", help="the CSV or JSONL file")
    imp.add_argument(
        "--output", "-o", type=Path, required=True, metavar="FILE", help="annotation file to write"
    )
    imp.add_argument("--metric", metavar="NAME", help="the metric's name in the file written")
    imp.add_argument(
        "--kind", choices=("binary", "numeric"), help="verdicts or scores (default: read off the values)"
    )
    imp.add_argument(
        "--prompt-name", metavar="NAME", help="the prompt's key in the file (default: the judge's)"
    )
    imp.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="TARGET=SOURCE",
        help="csv/jsonl: read TARGET from column SOURCE",
    )
    imp.add_argument(
        "--tracking-uri", metavar="URI", help="mlflow: the tracking server (default: MLFLOW_TRACKING_URI)"
    )
    imp.add_argument("--experiment", metavar="NAME", help="mlflow: the experiment holding the traces")
    imp.add_argument("--assessment", metavar="NAME", help="mlflow: the feedback's name (the judge's)")
    imp.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="TARGET=SOURCE",
        help="mlflow: the judge's input TARGET from the trace's SOURCE",
    )
    imp.add_argument(
        "--max-traces", type=_positive, metavar="N", help="mlflow: search at most N traces (default: all)"
    )
    imp.add_argument("--force", action="store_true", help="replace --output if it exists")

    exp = command("export", "take the judge a run chose to MLflow, promptfoo, DeepEval or JSON")
    exp.add_argument("run_dir", type=Path, metavar="RUN", help="a finished run directory")
    exp.add_argument("--to", required=True, choices=("mlflow", "promptfoo", "deepeval", "json"))
    exp.add_argument("--output", "-o", type=Path, metavar="FILE", help="file to write (default: stdout)")
    exp.add_argument("--force", action="store_true", help="replace --output if it exists")
    exp.add_argument(
        "--tracking-uri", metavar="URI", help="mlflow: the server (default: MLFLOW_TRACKING_URI)"
    )
    exp.add_argument(
        "--prompt-name", metavar="NAME", help="mlflow: the registry's prompt (default: the metric)"
    )
    exp.add_argument(
        "--experiment", metavar="NAME", help="mlflow: the run's experiment (default: promptevolver)"
    )
    return parser


# --- helpers ---------------------------------------------------------------------------------------


def _seed(text: str) -> int:
    """``--seed``: a whole number >= 0 (numpy's random generators refuse negative seeds)."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return int(text)


def _count(text: str) -> int:
    """A whole number >= 0."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def _positive(text: str) -> int:
    """A whole number >= 1."""
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _positions(text: str) -> list[int]:
    """``--remove``: comma-separated whole numbers >= 0."""
    return [_count(part) for part in text.split(",") if part.strip()]


def _directory(path: Path, option: str) -> Path:
    """``path`` unless it, or the nearest existing folder on its way, is a file (a usage error)."""
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == path else f"{existing} "
        raise UsageError(f"{option} {path}: {where}is a file, not a directory")
    return path


def _say(args: argparse.Namespace, line: str, *, verbose_only: bool = False) -> None:
    """Print ``line`` to stderr unless quiet (or, for ``verbose_only``, unless verbose)."""
    if not args.quiet and (args.verbose or not verbose_only):
        print(line, file=sys.stderr)


def _edit(args: argparse.Namespace) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The ``--set`` overrides as an edit of the raw config mapping (None without any)."""
    from promptevolver.config import apply_overrides

    overrides = list(getattr(args, "overrides", []))
    return (lambda raw: apply_overrides(raw, overrides)) if overrides else None


def _with_seed(config: _Config, args: argparse.Namespace) -> _Config:
    seed = getattr(args, "seed", None)
    if seed is None:
        return config
    return config.model_copy(update={"random_seed": seed})  # type: ignore[return-value]


def _load_config(path: Path, args: argparse.Namespace) -> RunConfig:
    from promptevolver.config import load_run_config

    return _with_seed(load_run_config(path, edit=_edit(args)), args)


def _is_job(config: RunConfig | ManyConfig) -> TypeIs[ManyConfig]:
    from promptevolver.config import ManyConfig

    return isinstance(config, ManyConfig)


def _load_any_config(path: Path, args: argparse.Namespace) -> RunConfig | ManyConfig:
    """One metric's config, or a job's (``metrics:``): estimate and evaluate take both."""
    from promptevolver.config import load_config

    return _with_seed(load_config(path, edit=_edit(args)), args)


# --- optimize --------------------------------------------------------------------------------------


def _run_config(args: argparse.Namespace) -> tuple[RunConfig | ManyConfig, Path, str]:
    """The config (one metric, or several: a job), the run directory, and where the config came
    from (for messages)."""
    from promptevolver.config import load_config

    sets = "".join(f" --set {o}" for o in getattr(args, "overrides", []))
    if args.force and args.resume is not None:
        raise UsageError("--force starts a run afresh; it does not go with --resume")
    if args.resume is not None:
        run_dir = _directory(args.resume, "--resume")
        rundir.check_links(run_dir)  # before its config.yaml is read through a link
        path = args.config if args.config is not None else run_dir / rundir.CONFIG_FILE
        if args.config is None and not path.is_file():
            rundir.read_config(run_dir)  # says the directory is not a run directory
        return _with_seed(load_config(path, edit=_edit(args)), args), run_dir, f"{path}{sets}"
    if args.config is None or args.output is None:
        raise UsageError("optimize needs CONFIG and --output DIR, or --resume DIR")
    config = _with_seed(load_config(args.config, edit=_edit(args)), args)
    return config, _directory(args.output, "--output"), f"{args.config}{sets}"


def _run_options(args: argparse.Namespace, source: str) -> dict[str, Any]:
    """What ``optimize``'s flags ask of a run (one metric's or a job's): resume, force, where the
    config came from (for messages) and where log lines go."""
    return {
        "resume": args.resume is not None,
        "force": args.force,
        "source": source,
        "log": lambda line: _say(args, line),
    }


def _optimize(args: argparse.Namespace) -> int:
    config, run_dir, source = _run_config(args)  # a bad config fails before the heavy imports below
    from promptevolver.config import ManyConfig

    if isinstance(config, ManyConfig):
        return _optimize_many(args, config, run_dir, source)
    from promptevolver.runs import execute

    progress = _progress(args, config)
    try:
        result = execute(
            config,
            run_dir,
            callbacks=[] if args.quiet else [progress],
            step=(lambda _: None) if args.quiet else progress.step,
            **_run_options(args, source),
        )
    except KeyboardInterrupt:
        _stopping()
        progress.close()
        _say_stopped(_interrupted(Path(run_dir)))
        return 130
    except LLMUnusableError as exc:
        progress.close()
        if args.debug:
            raise
        print(
            f"promptevolver: error: {_one_line(exc)}; fix the cause, then continue with: "
            f"promptevolver optimize --resume {run_dir}",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        progress.close()
        if args.debug or exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(f"promptevolver: error: {_disk_full(exc, Path(run_dir))}", file=sys.stderr)
        return 1
    finally:
        progress.close()
    _print_outcome(result, Path(run_dir), quiet=args.quiet)
    return 0


def _optimize_many(args: argparse.Namespace, config: ManyConfig, run_dir: Path, source: str) -> int:
    """A job of several metrics (docs/many-metrics.md): exit 0 when every metric finished, 1 when
    any failed (each failed metric and its reason in the table and in DIR/result.json)."""
    from promptevolver.runs.many import execute_many, summary_lines

    progress: list[Any] = []

    def callbacks(name: str) -> list[Any]:
        if args.quiet:
            return []
        progress.append(_progress(args, config, prefix=f"{name}: ", bar=False))
        return [progress[-1]]

    try:
        many = execute_many(
            config,
            run_dir,
            callbacks=callbacks,
            step=(lambda _: None) if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True)),
            **_run_options(args, source),
        )
    except KeyboardInterrupt:
        _say_stopped(
            f"promptevolver: interrupted; each metric's last checkpoint is in {run_dir}/<metric>; "
            f"continue with: promptevolver optimize --resume {run_dir}"
        )
        return 130
    except OSError as exc:  # the job's own files (its result.json, index.html)
        if args.debug or exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(f"promptevolver: error: {_disk_full(exc, Path(run_dir), job=True)}", file=sys.stderr)
        return 1
    finally:
        for p in progress:
            p.close()
    print("\n".join(summary_lines(many)))
    print(f"index: {run_dir / rundir.INDEX_HTML}; each metric's files in {run_dir}/<metric>/")
    if many.failed:
        reasons = "; ".join(f"{name}: {why}" for name, why in many.failed.items())
        print(
            f"promptevolver: error: {len(many.failed)} of {len(many.outcomes)} metrics failed ({reasons}); "
            f"fix the cause, then continue with: promptevolver optimize --resume {run_dir}",
            file=sys.stderr,
        )
        return 1
    return 0


def _disk_full(exc: OSError, run_dir: Path, *, job: bool = False) -> str:
    """The line for a full disk (or quota): which file, and whether the run (or ``job``) can be
    resumed."""
    where = f"writing {exc.filename}" if exc.filename else f"writing into {run_dir}"
    said = f"{exc.strerror or 'no space left on device'} while {where}"
    if job:
        return (
            f"{said}; each metric's files written before are intact. Free some space, then continue with: "
            f"promptevolver optimize --resume {run_dir}"
        )
    if (run_dir / rundir.CHECKPOINT_FILE).is_file():
        return (
            f"{said}; every file written before is intact. Free some space, then continue with: "
            f"promptevolver optimize --resume {run_dir}"
        )
    return f"{said}, before the run's first checkpoint; free some space and start it again"


def _interrupted(run_dir: Path) -> str:
    """The line after Ctrl-C: how to continue, or that there is nothing to continue from."""
    if (run_dir / rundir.CHECKPOINT_FILE).is_file():
        kept = [n for n in (rundir.CHECKPOINT_FILE, rundir.BEST_SO_FAR_FILE) if (run_dir / n).is_file()]
        return (
            f"promptevolver: interrupted; {' and '.join(kept)} {'are' if len(kept) > 1 else 'is'} in "
            f"{run_dir}; continue with: promptevolver optimize --resume {run_dir}"
        )
    return f"promptevolver: interrupted before the run's first checkpoint in {run_dir}: nothing to resume"


def _progress(
    args: argparse.Namespace, config: RunConfig | ManyConfig, *, prefix: str = "", bar: bool = True
) -> Any:
    """A :class:`~promptevolver.runs.progress.CallProgress` on stderr: a bar on a terminal (unless
    not ``bar``), plain lines (each starting with ``prefix``) otherwise; its total the calls the
    cost model expects of the run (a job's metric: of that metric's run), not their bound."""
    from promptevolver.runs.progress import CallProgress

    return CallProgress(
        bar=bar and sys.stderr.isatty(),
        write=lambda line: print(prefix + line, file=sys.stderr, flush=True),
        generations=config.effective_optimizer().generations,
        verbose=args.verbose,
        label=prefix.rstrip(": "),
        expected=None if args.quiet else _expected_calls(config, prefix.rstrip(": ")),
    )


def _expected_calls(config: RunConfig | ManyConfig, metric: str) -> int | None:
    """The calls ``estimate`` expects of the run (of ``metric``'s in a job); None when it cannot
    say (the run itself then reports why)."""
    from promptevolver.runs import estimate

    one = config.for_metric(metric, None) if _is_job(config) and metric in config.metrics else config
    if _is_job(one):
        return None
    try:
        return estimate(one).total_calls
    except (PromptEvolverError, ValueError, OSError):
        return None


def _print_outcome(result: Any, run_dir: Path, *, quiet: bool) -> None:
    from promptevolver.runs import outcome_lines

    print("\n".join(outcome_lines(result, run_dir, quiet=quiet)))


# --- evaluate --------------------------------------------------------------------------------------


def _evaluate(args: argparse.Namespace) -> int:
    import asyncio

    config = _load_any_config(args.config, args)  # a bad config fails before the heavy imports below
    if _is_job(config):
        return _evaluate_job(args, config)
    import numpy as np

    from promptevolver.config import load_dataset
    from promptevolver.runs import (
        SIMULATED_EVALUATE,
        chosen_positions,
        default_figure,
        interval_of,
        run_of,
        score_instructions,
        scorecard_json,
        scorecard_lines,
        scorecard_rows,
    )

    chosen = rundir.read_chosen_judge(args.instructions)  # instructions AND examples: one record
    instructions = dict(chosen.instructions)
    if args.samples_out is not None:
        rundir.check_writable(args.samples_out)  # before any call is spent on what it would hold
    run_dir = run_of(args.instructions, args.run)
    if args.split == "validation" and run_dir is None:
        raise UsageError("--split validation needs the run directory: pass --run DIR")
    dataset = load_dataset(config)
    try:  # by content; another metric or file: an error
        positions, notes = chosen_positions(
            config,
            dataset,
            source=args.instructions,
            instructions=instructions,
            run=args.run,
            split=args.split,
        )
    except ValueError as exc:  # the validation split of a run refit on every annotation
        if isinstance(exc, PromptEvolverError):
            raise
        said = str(exc).replace("the validation split", "--split validation")
        raise UsageError(said.replace("the split all", "--split all")) from exc
    for note in notes:
        warnings.warn(note, stacklevel=1)
    card = asyncio.run(score_instructions(config, chosen, positions=positions, dataset=dataset))
    if args.samples_out is not None:
        rows = scorecard_rows(
            dataset,
            card.judged,
            card.positions,
            split=card.split,
            prompt_name=card.prompt_name,
            simulated=config.llm.provider == "fake",
        )
        _say(args, f"samples written to {rundir.write_jsonl(args.samples_out, rows)}")
    a, rng = card.agreement, np.random.default_rng(config.effective_optimizer().random_seed)
    gate = None
    if args.fail_under is not None:
        gate = card.gate(
            threshold=args.fail_under, figure=args.figure, max_failure_rate=args.max_failed, rng=rng
        )
    figure = args.figure or default_figure(a)
    if gate is not None:
        interval = gate.interval
    else:
        interval = None if figure is None else interval_of(a, figure, card.pairs, rng=rng)
    if args.json:
        print(scorecard_json(card, interval, gate))
    else:
        lines = scorecard_lines(
            card, interval, instructions=args.instructions, run_dir=run_dir, quiet=args.quiet
        )
        print("\n".join(lines))
    if gate is not None:
        print(f"promptevolver: {gate.reason}", file=sys.stderr)
        return 0 if gate.passed else 1
    if (failed := _nothing_measured(card)) is not None:  # the scorecard says n/a, the exit says so
        print(f"promptevolver: error: {failed}", file=sys.stderr)
        return 1
    if card.simulated_llm and not args.quiet:
        print(f"promptevolver: note: {SIMULATED_EVALUATE}", file=sys.stderr)
    return 0


def _evaluate_job(args: argparse.Namespace, config: ManyConfig) -> int:
    """``evaluate`` of a job (docs/many-metrics.md): every metric's chosen judge in the job's run
    directory, each gated; exit 1 when one fails."""
    from promptevolver.runs import SIMULATED_EVALUATE, scorecard_lines
    from promptevolver.runs.many import evaluate_job

    job = evaluate_job(
        config,
        args.instructions,
        split=args.split,
        threshold=args.fail_under,
        figure=args.figure,
        max_failure_rate=args.max_failed,
    )
    if args.json:
        print(json.dumps(job.to_dict()))
    else:
        for name, card in job.cards.items():
            folder = Path(args.instructions) / name
            run_dir = folder if card.split == "validation" else None
            lines = scorecard_lines(
                card, job.intervals.get(name), instructions=folder, run_dir=run_dir, quiet=args.quiet
            )
            print("\n".join(lines))
    if job.gates:
        print(f"promptevolver: {job.reason()}", file=sys.stderr)
        return 0 if job.passed else 1
    failed = {n: said for n, c in job.cards.items() if (said := _nothing_measured(c)) is not None}
    for name, said in failed.items():
        print(f"promptevolver: error: {name}: {said}", file=sys.stderr)
    if failed:
        return 1
    if job.simulated_llm and not args.quiet:
        print(f"promptevolver: note: {SIMULATED_EVALUATE}", file=sys.stderr)
    return 0


def _nothing_measured(card: Any) -> str | None:
    """Why a scorecard measured nothing (every evaluation of its samples failed), else None."""
    if not card.positions or card.pairs:
        return None
    causes = sorted({j.cause or "llm" for j in card.judged.values() if j.failed}) or ["unknown"]
    return (
        f"every one of the {len(card.positions)} evaluations failed (cause {', '.join(causes)}): "
        "nothing was measured"
    )


# --- estimate --------------------------------------------------------------------------------------


def _estimate(args: argparse.Namespace) -> int:
    config = _load_any_config(args.config, args)  # a bad config fails before the heavy imports below
    if _is_job(config):
        from promptevolver.runs.many import estimate_job, job_estimate_lines

        found = estimate_job(config)
        if args.json:
            print(json.dumps({"kind": "metrics", "metrics": {n: e.to_dict() for n, e in found.items()}}))
        else:
            print("\n".join(job_estimate_lines(found, config, source=args.config, quiet=args.quiet)))
        return 0
    from promptevolver.runs import estimate, estimate_lines

    e = estimate(config)
    if args.json:
        print(json.dumps(e.to_dict()))
        return 0
    print("\n".join(estimate_lines(e, config, source=args.config, quiet=args.quiet, verbose=args.verbose)))
    return 0


# --- agreement -------------------------------------------------------------------------------------


def _agreement(args: argparse.Namespace) -> int:
    from promptevolver.evaluation import recorded_agreement
    from promptevolver.runs import load_recorded

    classes = [c.strip() for c in args.classes.split(",")] if args.classes else None
    if classes is not None and (len(classes) < 2 or not all(classes)):
        raise UsageError(f"--classes {args.classes!r}: give at least two names, comma-separated")
    dataset, scale = load_recorded(
        args.source, metric_name=args.metric, scale_name=args.scale, classes=classes
    )
    seed = {} if args.seed is None else {"random_seed": args.seed}  # the default: the report's too
    found = recorded_agreement(dataset, scale, split_items=args.split_items, **seed)
    if args.json:
        print(json.dumps(found.to_dict()))
    else:
        lines = found.lines()
        print("\n".join(lines[:3] if args.quiet else lines))
    return 0


# --- report and bench ------------------------------------------------------------------------------


def _report(args: argparse.Namespace) -> int:
    from promptevolver.report import load_run, write_report
    from promptevolver.runs import write_samples
    from promptevolver.runs.many import is_job_dir, report_job

    if is_job_dir(args.run_dir):  # a job: every metric's report, then its index
        paths = report_job(args.run_dir)
        print(paths[0])
        _say(args, "also wrote " + ", ".join(str(p) for p in paths[1:]))
        return 0

    rundir.check_links(args.run_dir)  # before anything of it is read through a link
    rundir.read_result(args.run_dir)  # a run directory: the lock creates nothing elsewhere
    with rundir.locked(args.run_dir):  # one writer at a time: refused while a run writes it
        facts = load_run(args.run_dir, rebuild=True)  # refused rather than emptied of its samples
        paths = write_report(args.run_dir, facts=facts)
        paths.append(write_samples(args.run_dir, facts))
    print(paths[1])
    _say(args, "also wrote " + ", ".join(str(p) for p in [paths[0], *paths[2:]]))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from promptevolver.runs import run_benchmarks, to_markdown

    def progress(label: str, config: RunConfig) -> list[Any]:
        if args.quiet:
            return []
        return [_progress(args, config, prefix=f"{label}: ")]

    summary = run_benchmarks(
        args.configs,
        _directory(args.output, "--output"),
        log=lambda line: _say(args, line),
        edit=_edit(args),
        force=args.force,
        callbacks=progress,
    )
    print(to_markdown(summary))
    return 0


# --- suggest ---------------------------------------------------------------------------------------


def _suggest(args: argparse.Namespace) -> int:
    from promptevolver.runs.many import is_job_dir, suggest_job
    from promptevolver.runs.suggest import suggest

    if args.out is not None:
        rundir.check_writable(args.out)  # before any call is spent on what it would hold
    if is_job_dir(args.run_dir):  # a job: every metric's suggestions, best first, each with its metric
        rows, summaries = suggest_job(
            args.run_dir, args.pool, n=args.n, max_calls=args.max_calls, reasks=args.reasks, edit=_edit(args)
        )
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        if args.out is not None:
            rundir.write_atomic(args.out, text)
        else:
            sys.stdout.write(text)
        for line in summaries if not args.quiet else ():
            print(f"promptevolver: {line}", file=sys.stderr)
        return 0

    found = suggest(
        args.run_dir,
        args.pool,
        n=args.n,
        max_calls=args.max_calls,
        reasks=args.reasks,
        calibration=args.calibration,
        edit=_edit(args),
    )
    lines = [json.dumps(s.to_dict(), ensure_ascii=False) for s in found.suggestions]
    text = "".join(line + "\n" for line in lines)
    if args.out is not None:
        rundir.write_atomic(args.out, text)
    else:
        sys.stdout.write(text)
    if not args.quiet:
        print(f"promptevolver: {found.summary()}", file=sys.stderr)
    return 0


def _review(args: argparse.Namespace) -> int:
    from promptevolver.runs import review

    return review(
        args.file,
        pool=args.pool,
        run=args.run,
        metric_name=args.metric,
        port=args.port,
        open_browser=args.open,
        edit=_edit(args),
        say=lambda line: _say(args, f"promptevolver: {line}"),
    )


def _examples(args: argparse.Namespace) -> int:
    import asyncio

    from promptevolver.runs.memory import update_examples

    if args.add is None and not args.remove:
        raise UsageError("examples needs --add FILE, --remove IDS, or both")
    config = rundir.read_config(args.run_dir, edit=_edit(args))
    record = asyncio.run(update_examples(args.run_dir, add=args.add, remove=args.remove, config=config))
    if args.json:
        print(json.dumps(record))
        return 0
    if not record["changed"]:
        print(
            f"examples ({record['policy']}): nothing changed: the {record['already_in_the_pool']} samples "
            f"given are already in the pool; 0 judge calls; {rundir.result_path(args.run_dir)} left as it was"
        )
        return 0
    held = record["held_out"]
    figure = held["figure"] or "agreement"

    def value(side: str) -> str:
        got = held[side].get(held["figure"]) if held["figure"] else None
        return "n/a" if got is None else f"{got:.3f}"

    print(
        f"examples ({record['policy']}): +{record['added']} added, -{len(record['removed'])} removed, "
        f"pool {record['pool_before']} -> {record['pool_after']}; held-out {figure} on {held['n']} samples "
        f"{value('before')} -> {value('after')}; {record['judge_calls']} judge calls, 0 meta calls; "
        f"written to {rundir.result_path(args.run_dir)}"
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    from promptevolver.runs import run_import

    try:
        lines = run_import(args)
    except ValueError as exc:  # a malformed TARGET=SOURCE or a source's missing option
        if isinstance(exc, PromptEvolverError):
            raise
        raise UsageError(str(exc)) from exc
    print(lines[0])
    for line in lines[1:]:
        _say(args, line)
    return 0


def _export(args: argparse.Namespace) -> int:
    from promptevolver.runs import run_export

    try:
        done = run_export(args)
    except ValueError as exc:  # options of another target
        if isinstance(exc, PromptEvolverError):
            raise
        raise UsageError(str(exc)) from exc
    if done.text is not None:
        sys.stdout.write(done.text)
        for line in done.lines:
            _say(args, line)
        return 0
    print(done.lines[0])
    for line in done.lines[1:]:
        _say(args, line)
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "optimize": _optimize,
    "evaluate": _evaluate,
    "estimate": _estimate,
    "agreement": _agreement,
    "report": _report,
    "bench": _bench,
    "suggest": _suggest,
    "examples": _examples,
    "review": _review,
    "import": _import,
    "export": _export,
}


@contextmanager
def _console(args: argparse.Namespace) -> Iterator[None]:
    """Warnings as one stderr line each (none when quiet); INFO logs when verbose."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("promptevolver: %(message)s"))
    logger = logging.getLogger("promptevolver")
    level = logger.level
    with warnings.catch_warnings():
        if args.quiet:
            warnings.simplefilter("ignore")
        warnings.showwarning = lambda message, category, *_a, **_k: print(
            f"promptevolver: warning: {message}", file=sys.stderr
        )
        if args.verbose:
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)


class _ReaderMayLeave:
    """stdout for a reader that may stop reading (``promptevolver evaluate ... | head -1``): once
    the pipe is broken the rest of stdout is dropped (its descriptor points at /dev/null, so the
    interpreter's last flush is quiet too), and the command finishes with its own exit code, a
    gate's included, instead of ``[Errno 32] Broken pipe``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self._gone = True
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _is_usage_error(exc: BaseException) -> bool:
    """A command line that parses but makes no sense (exit code 2): a :class:`UsageError` or a
    malformed ``--set`` (the overrides module, and pydantic with it, is imported only here)."""
    if isinstance(exc, UsageError):
        return True
    from promptevolver.config import OverrideError

    return isinstance(exc, OverrideError)


def _one_line(exc: BaseException) -> str:
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``promptevolver`` console script; returns the exit code.

    An interrupt (Ctrl-C) at any point gives exit 130 and one ``interrupted`` line; run as the
    program (``argv`` None), one arriving after the command has finished (its files written, its
    outcome printed) is ignored rather than ending the process by the signal. SIGTERM, run as the
    program, does the same with exit 143 and a line naming it.

    Raises:
        SystemExit: from argparse, for ``--help``/``--version`` (0) and malformed command lines (2).
    """
    as_program = argv is None and threading.current_thread() is threading.main_thread()
    _TERMINATED.clear()
    _INTERRUPTED.clear()
    _SAID.clear()
    _AS_PROGRAM[:] = [as_program]
    if as_program:
        signal.signal(signal.SIGTERM, _terminate)
        logging.getLogger("asyncio").addFilter(_ABANDONED_TASKS)
    if argv is None and not isinstance(sys.stdout, _ReaderMayLeave):
        sys.stdout = _ReaderMayLeave(sys.stdout)
    try:
        code = _main(argv)
    except KeyboardInterrupt:  # between the command's own handlers, e.g. while restoring the console
        _say_stopped("promptevolver: interrupted")
        code = 130
    finally:
        if as_program:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the exit code is decided
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _TERMINATED and code == 130:
        return 128 + signal.SIGTERM
    return code


#: The SIGTERM this process received (see :func:`_terminate`).
_TERMINATED: list[int] = []
#: Set when an interrupt reached the command (:func:`_stopping`); :data:`_SAID` once its line is out.
_INTERRUPTED: list[bool] = []
_SAID: list[bool] = []
#: Whether :func:`main` runs as the program (the console script): only then it handles signals.
_AS_PROGRAM: list[bool] = []


def _stopping() -> None:
    """The command is stopping after an interrupt (Ctrl-C, SIGTERM): the first thing each handler
    of ``KeyboardInterrupt`` does. Run as the program, a further Ctrl-C is ignored from here on:
    what is left is saying the line and exiting 130."""
    _INTERRUPTED.append(True)
    if _AS_PROGRAM and _AS_PROGRAM[0]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _say_stopped(line: str) -> None:
    """The one line of an interrupted command on stderr (once: a second Ctrl-C that reached the
    command while it said the first adds none); after SIGTERM it says so."""
    _stopping()
    if _SAID:
        return
    _SAID.append(True)
    if _TERMINATED:
        line = line.replace("promptevolver: interrupted", "promptevolver: stopped by SIGTERM", 1)
    print(line, file=sys.stderr)


class _AbandonedTasks(logging.Filter):
    """Drops asyncio's reports on the tasks a second Ctrl-C abandoned.

    The first Ctrl-C cancels the running ``asyncio.run`` (its tasks stop at their next await,
    files written so far are whole); a second one while that is in progress raises
    ``KeyboardInterrupt`` inside whichever task runs, which ends ``asyncio.run`` before it has
    cancelled the others. asyncio then reports each such task as it is collected ("Task was
    destroyed but it is pending!", "Task exception was never retrieved" with a traceback of the
    KeyboardInterrupt), after the command's one line. Nothing is lost (the run stops where the
    first Ctrl-C stopped it) and the line says how to continue, so once the command is
    interrupted asyncio's records are dropped, as is any record carrying a KeyboardInterrupt."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _INTERRUPTED:
            return False
        return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


_ABANDONED_TASKS = _AbandonedTasks()


def _terminate(signum: int, _frame: Any) -> None:
    """SIGTERM (a ``kill``, a CI runner's cancel, a container stopping) stops the command as Ctrl-C
    does: the interrupted step's files are left as they were, one line says how to continue, and
    the exit code is 143 (128 + 15, as a process ended by the signal). A second SIGTERM ends the
    process at once."""
    _TERMINATED.append(signum)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if callable(signal.getsignal(signal.SIGINT)):  # Python's or asyncio.run's: stop exactly as Ctrl-C
        signal.raise_signal(signal.SIGINT)  # (asyncio cancels the run's tasks, then raises)
        return
    raise KeyboardInterrupt  # SIGINT ignored (a background job): stop here


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    with _console(args):
        try:
            return _COMMANDS[args.command](args)
        except (UsageError, PromptEvolverError, OSError) as exc:
            if _is_usage_error(exc):
                print(f"promptevolver {args.command}: error: {_one_line(exc)} (see --help)", file=sys.stderr)
                return 2
            if args.debug:
                raise
            print(f"promptevolver: error: {_one_line(exc)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            _say_stopped("promptevolver: interrupted")
            return 130
        except Exception as exc:
            if args.debug:
                raise
            print(
                f"promptevolver: internal error: {type(exc).__name__}: {_one_line(exc)} "
                "(rerun with --debug for the traceback)",
                file=sys.stderr,
            )
            return 1


if __name__ == "__main__":
    sys.exit(main())
