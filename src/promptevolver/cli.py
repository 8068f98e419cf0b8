"""Command line: ``promptevolver optimize CONFIG --output DIR``.

Exit codes: 0 success, 1 failure (bad data, config or LLM), 2 usage error. Errors go to stderr
as one line; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from promptevolver import __version__
from promptevolver.bench import run_benchmarks, to_markdown
from promptevolver.config import RunConfig, load_run_config
from promptevolver.errors import PromptEvolverError
from promptevolver.optimizers.result import OptimizationResult
from promptevolver.runs import CONFIG_FILE, RESULT_FILE, execute

__all__ = ["main"]

EXAMPLES = """examples:
  promptevolver optimize configs/answer_correctness.yaml --output runs/answer_correctness
  promptevolver optimize configs/helpfulness.yaml --output runs/helpfulness --seed 7
  promptevolver optimize --resume runs/answer_correctness     # after Ctrl-C
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="promptevolver",
        description="Genetic optimization of LLM-judge instructions from human annotations.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"promptevolver {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    opt = sub.add_parser(
        "optimize",
        help="optimize a judge's instructions from a YAML config",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    opt.add_argument("config", type=Path, nargs="?", help="YAML run config (see configs/)")
    opt.add_argument("--output", "-o", type=Path, help="run directory (result.json, checkpoint.json, ...)")
    opt.add_argument("--resume", type=Path, metavar="DIR", help="continue the interrupted run in DIR")
    opt.add_argument("--seed", type=int, default=None, help="override the config's random_seed")
    opt.add_argument("--quiet", "-q", action="store_true", help="print only the result line")
    opt.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    bench = sub.add_parser(
        "bench",
        help="run configs over their seeds and summarise (summary.json, summary.md)",
        epilog="examples:\n  promptevolver bench configs/*.yaml --output benchmarks/results/latest\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.add_argument("configs", type=Path, nargs="+", help="YAML run configs")
    bench.add_argument("--output", "-o", type=Path, required=True, help="directory for runs and the summary")
    bench.add_argument("--quiet", "-q", action="store_true", help="print only the summary table")
    bench.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    return parser


def _bench(args: argparse.Namespace) -> int:
    log = (lambda _: None) if args.quiet else (lambda line: print(line, file=sys.stderr))
    summary = run_benchmarks(args.configs, args.output, log=log)
    print(to_markdown(summary))
    return 0


def _run_config(args: argparse.Namespace) -> tuple[RunConfig, Path]:
    if args.resume is not None:
        config = load_run_config(args.config or args.resume / CONFIG_FILE)
        return config, args.resume
    if args.config is None or args.output is None:
        raise UsageError("optimize needs CONFIG and --output DIR, or --resume DIR")
    config = load_run_config(args.config)
    if args.seed is not None:
        config = config.model_copy(update={"random_seed": args.seed})
    return config, args.output


def _optimize(args: argparse.Namespace) -> int:
    config, run_dir = _run_config(args)
    progress = not args.quiet and sys.stderr.isatty()
    try:
        result = execute(config, run_dir, resume=args.resume is not None, progress=progress)
    except KeyboardInterrupt:
        print(
            f"promptevolver: interrupted; the last checkpoint and best_so_far.json are in {run_dir}; "
            f"continue with: promptevolver optimize --resume {run_dir}",
            file=sys.stderr,
        )
        return 130
    _report(result, Path(run_dir) / RESULT_FILE, quiet=args.quiet)
    return 0


def _report(result: OptimizationResult, path: Path, *, quiet: bool) -> None:
    s, calls = result.scores, result.usage["llm_calls"]
    name = result.loss.get("metric", result.loss["name"])
    line = (
        f"{result.metric}: {name} seed train {s['seed']['train']:.3f} "
        f"validation {s['seed']['validation']:.3f} | "
        f"best train {s['best']['train']:.3f} validation {s['best']['validation']:.3f} | "
        f"LLM calls: {calls['judge']} judge + {calls['meta']} meta = {calls['judge'] + calls['meta']}"
    )
    print(line)
    if quiet:
        return
    chosen = "the seed" if not result.improved else f"candidate {result.best_id}"
    print(f"stop reason: {result.stop_reason}; chosen: {chosen}")
    print(f"result written to {path}")
    for prompt, text in result.best_instructions.items():
        print(f"\nbest instruction for {prompt}:\n{text}")


class UsageError(Exception):
    """A command line that parses but does not make sense (exit code 2)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``promptevolver`` console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _bench(args) if args.command == "bench" else _optimize(args)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"promptevolver: error: {exc}", file=sys.stderr)
        return 2
    except PromptEvolverError as exc:
        if args.debug:
            raise
        print(f"promptevolver: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("promptevolver: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
