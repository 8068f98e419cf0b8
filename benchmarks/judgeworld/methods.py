"""How each optimizer is run against a judgeworld server: a command, and how to read its outcome.

A method builds one subprocess command (in its own virtual environment), and after it exits reads
the optimized instruction and the optimizer's own wall time from what it wrote. Methods:

* ``ours_<strategy>`` (``ours_genetic``, ``ours_auto``, ``ours_distill``): ``promptevolver optimize``
  with every optimizer setting at its default and ``optimizer.strategy: <strategy>``, from the source
  tree given as ``ours_src`` (default this checkout's ``src/``), run with the interpreter given as
  ``ours_python``, on the world's train split file, judge and prompt engineer both the judgeworld
  server (model names ``judge`` and ``engineer``), no response cache. A source tree whose config has
  no ``strategy`` key (before issue 20) knows only the genetic search: ``ours_genetic`` then writes no
  key (its defaults are the genetic search) and the other strategies are refused before any run.
* ``ours_pop3`` / ``ours_pop6``: the same with pop 3 and the default generations, pop 6 with 6
  generations (the figures of issue 14).
* ``ragas_pop3``: judgeworld's ``harness_ragas.py`` (Ragas 0.4.3 GeneticOptimizer, AspectCritic,
  trained on the train split, population 3), with ``random``/``numpy`` seeded by ``seeded.py``.
* ``gepa``: judgeworld's ``harness_dspy.py`` (dspy.GEPA; its validation set is 30 % of the train
  split, never the test split) with ``--max-metric-calls`` and ``--seed``.
* ``distill4``: judgeworld's ``harness_distill.py --rounds 4`` (a search-free baseline in the spirit
  of MLflow's MemAlign: every train correction shown to the prompt engineer, feedback + rewrite per
  round, no judge calls). It sends temperature 0 and draws nothing at random, so it is
  deterministic: one run per world (``stochastic`` False), whatever the optimizer seeds.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["METHODS", "STRATEGIES", "Context", "Method", "Outcome", "knows_strategy"]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


@dataclass(frozen=True)
class Context:
    """Paths and settings shared by every run (interpreters, judgeworld checkout, knobs)."""

    judgeworld: Path
    ours_python: str
    ragas_python: str
    dspy_python: str
    max_metric_calls: int = 800
    ours_set: tuple[str, ...] = ()
    ours_src: Path = REPO / "src"
    distill_python: str = ""
    #: Whether ours' source tree has the ``optimizer.strategy`` key (see :func:`knows_strategy`).
    ours_knows_strategy: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a finished method run produced: the instruction, the optimizer's wall time (seconds),
    and method-specific facts (client-side call counts, stop reason, ...)."""

    instruction: str
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Method:
    """One optimizer configuration: ``params`` are recorded with every run."""

    name: str
    label: str
    params: dict[str, Any]
    #: False: the method draws nothing at random (one run per world stands for every seed).
    stochastic: bool = True

    def command(self, ctx: Context, world: Any, seed: int, base_url: str, run_dir: Path) -> list[str]:
        if self.name.startswith("ours"):
            config = _write_ours_config(world, base_url, run_dir, self.ours_optimizer(ctx))
            cmd = [
                ctx.ours_python,
                "-m",
                "promptevolver.cli",
                "optimize",
                str(config),
                "--output",
                str(run_dir / "out"),
                "--seed",
                str(seed),
                "-q",
            ]
            for item in ctx.ours_set:
                cmd += ["--set", item]
            return cmd
        if self.name == "ragas_pop3":
            return [
                ctx.ragas_python,
                str(HERE / "seeded.py"),
                str(seed),
                str(ctx.judgeworld / "harness_ragas.py"),
                "--base-url",
                base_url,
                "--world",
                str(world.path),
                "--train-on",
                "train",
                "--population-size",
                str(self.params["population_size"]),
                "--out",
                str(run_dir / "result.json"),
            ]
        if self.name == "gepa":
            return [
                ctx.dspy_python,
                str(HERE / "seeded.py"),
                str(seed),
                str(ctx.judgeworld / "harness_dspy.py"),
                "--base-url",
                base_url,
                "--world",
                str(world.path),
                "--val-from",
                "train",
                "--max-metric-calls",
                str(ctx.max_metric_calls),
                "--seed",
                str(seed),
                "--out",
                str(run_dir / "result.json"),
            ]
        if self.name == "distill4":
            return [
                ctx.distill_python,
                str(ctx.judgeworld / "harness_distill.py"),
                "--base-url",
                base_url,
                "--world",
                str(world.path),
                "--rounds",
                str(self.params["rounds"]),
                "--out",
                str(run_dir / "result.json"),
            ]
        raise ValueError(f"unknown method {self.name!r}")

    def ours_optimizer(self, ctx: Context) -> dict[str, Any]:
        """The ``optimizer`` section of ours' config (``strategy`` left out where the source has none).

        Raises:
            ValueError: a strategy other than genetic asked of a source tree without strategies.
        """
        params = dict(self.params)
        strategy = params.get("strategy")
        if strategy is not None and not ctx.ours_knows_strategy:
            if strategy != "genetic":
                raise ValueError(
                    f"{self.name}: the source tree {ctx.ours_src} has no optimizer.strategy key "
                    "(only the genetic search)"
                )
            del params["strategy"]
        return params

    def recorded_params(self, ctx: Context) -> dict[str, Any]:
        """The settings this run used, as recorded beside its figures."""
        extra: dict[str, Any] = {}
        if self.name == "gepa":
            extra["max_metric_calls"] = ctx.max_metric_calls
        if self.name.startswith("ours"):
            extra["ours_src"] = str(ctx.ours_src)
            extra["ours_src_commit"] = _git_head(ctx.ours_src)
            extra["config_optimizer"] = self.ours_optimizer(ctx)
            if ctx.ours_set:
                extra["set"] = list(ctx.ours_set)
        return {**self.params, **extra}

    def env(self, ctx: Context) -> dict[str, str]:
        """Extra environment: ours runs this checkout's src/ with a dummy API key."""
        if self.name.startswith("ours"):
            return {"PYTHONPATH": str(ctx.ours_src), "OPENAI_API_KEY": "dummy"}
        return {}

    def outcome(self, run_dir: Path) -> Outcome:
        """Read the finished run's result file.

        Raises:
            FileNotFoundError / KeyError / ValueError: the run wrote no usable result.
        """
        if self.name.startswith("ours"):
            res = json.loads((run_dir / "out" / "result.json").read_text(encoding="utf-8"))
            best = res["best_instructions"]
            if len(best) != 1:
                raise ValueError(f"expected one prompt in best_instructions, got {sorted(best)}")
            usage = res.get("usage", {})
            extra = {
                "client_calls": usage.get("llm_calls"),
                "stop_reason": res.get("stop_reason"),
                "generations_run": len(res.get("history", [])),
                "seed_instruction": next(iter(res["seed_instructions"].values())),
                "internal_scores": res.get("scores"),
                "split": {k: v for k, v in (res.get("split") or {}).items() if k != "validation_positions"},
            }
            return Outcome(next(iter(best.values())), float(res["duration_s"]), extra)
        res = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
        extra = {"harness_train_samples": res.get("train_samples")}
        if self.name == "distill4":
            extra["corrections_shown"] = res.get("corrections")
        return Outcome(res["instruction_after"], float(res["wall_s"]), extra)


def _write_ours_config(world: Any, base_url: str, run_dir: Path, params: dict[str, Any]) -> Path:
    """A promptevolver run config (JSON is valid YAML) for ``world``'s train split."""
    llm = {
        "provider": "openai",
        "model": "judge",
        "base_url": base_url,
        "api_key_env": "OPENAI_API_KEY",
        "cache": None,
    }
    config = {
        "dataset": str(world.train),
        "metric_name": world.metric,
        "metric": {"type": "aspect_critic", "name": world.metric, "definition": world.default_definition},
        "llm": llm,
        "reflection_llm": {**llm, "model": "engineer"},
        "loss": {"type": "binary", "metric": "accuracy"},
        "optimizer": dict(params),
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "config.yaml"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def _git_head(src: Path) -> str | None:
    """The commit checked out where ``src`` lives (None outside git), plus ``+dirty`` if it has edits."""
    try:
        head = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--", "."], capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def knows_strategy(ours_python: str, ours_src: Path) -> bool:
    """Whether the promptevolver under ``ours_src`` has an ``optimizer.strategy`` config key.

    Asked of the code itself (``RunConfig``'s optimizer model), so it needs no version table; the
    package imported must be the one under ``ours_src`` (not an installed copy).

    Raises:
        RuntimeError: the interpreter could not import promptevolver from ``ours_src``.
    """
    probe = (
        "import promptevolver\n"
        "from promptevolver.config import RunConfig\n"  # the face: trees before and after issue 22
        "opt = RunConfig.model_fields['optimizer'].annotation\n"
        "print(promptevolver.__file__)\n"
        "print('strategy' in getattr(opt, 'model_fields', {}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ours_src)}
    proc = subprocess.run([ours_python, "-c", probe], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"cannot import promptevolver from {ours_src} with {ours_python}: {tail}")
    where, knows = proc.stdout.strip().splitlines()[-2:]
    if not Path(where).resolve().is_relative_to(Path(ours_src).resolve()):
        raise RuntimeError(
            f"cannot import promptevolver from {ours_src} with {ours_python}: it imports {where} instead"
        )
    return knows == "True"


def _methods(items: Sequence[Method]) -> dict[str, Method]:
    return {m.name: m for m in items}


#: ours' strategies (issue 20): ``genetic`` is the search of every release before it.
STRATEGIES = ("genetic", "auto", "distill")


METHODS: dict[str, Method] = _methods(
    [
        Method("ours_pop3", "ours pop 3", {"population_size": 3}),
        Method("ours_pop6", "ours pop 6, 6 gens", {"population_size": 6, "generations": 6}),
        Method("ragas_pop3", "Ragas pop 3", {"population_size": 3}),
        Method("gepa", "GEPA", {"val_from": "train"}),
        Method("distill4", "distill, 4 rounds", {"rounds": 4}, stochastic=False),
        *(Method(f"ours_{s}", f"ours {s}", {"strategy": s}) for s in STRATEGIES),
    ]
)
