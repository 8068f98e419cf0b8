"""Side by side: Ragas 0.4.3's own GeneticOptimizer vs promptevolver's, in one simulated world.

Run with the Ragas venv (``pip install -e ".[bench]"``)::

    /work/ragas-venv/bin/python -m benchmarks.sidebyside.ragas            # bundled files
    /work/ragas-venv/bin/python -m benchmarks.sidebyside.ragas --data synthetic.json --seeds 0 1

For every annotation file, population size and seed:

1. **ours**: ``GeneticOptimizer`` with ``SimulatedJudgeLLM(dataset=<full file>, random_seed=seed)``
   and config ``{population_size: P, random_seed: seed}`` (defaults otherwise). Its stratified split
   (``validation_fraction`` 0.3) gives the validation positions; train = the other usable samples.
2. **Ragas**: its ``GeneticOptimizer`` + ``AspectCritic`` driven by
   :class:`benchmarks.sidebyside.ragas_adapter.SimulatedRagasLLM` over the same world (same file,
   same seed), trained on a
   ``SingleMetricAnnotation`` of the train samples only, config ``{population_size: P,
   num_demonstrations: 3, sample_size: 12}``. ``random`` and ``numpy.random`` are seeded with the
   run seed; ``nest_asyncio`` is applied to a fresh event loop first (see the defects below).
3. **Scoring** (identical for both): our ``Evaluator`` with our ``AspectCritic`` and a fresh
   ``SimulatedJudgeLLM(dataset=<full file>, random_seed=seed)``, ``BinaryMetricLoss(accuracy)``,
   on the validation positions, for each side's seed instruction and returned instruction.
   Scoring calls are not counted for either side.

Writes ``<output-dir>/<name>.json`` (every run) and ``<name>.md`` (mean ± std over seeds).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import glob
import importlib.metadata as md
import io
import json
import logging
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ["RAGAS_DO_NOT_TRACK"] = "true"
os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np  # noqa: E402

from promptevolver import AspectCritic, BinaryMetricLoss, GeneticOptimizer, SingleMetricAnnotation  # noqa: E402
from promptevolver.evaluation._evaluator import Evaluator, score  # noqa: E402
from promptevolver.llm import SimulatedJudgeLLM  # noqa: E402
from promptevolver.simulation._simulated_llm import sample_key  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BENCH = HERE.parent
PROMPT = "single_turn_aspect_critic_prompt"
DEFINITIONS = {
    "answer_correctness": (
        "Given the user_input, reference and response. Is the response correct compared with the reference"
    ),
    "helpfulness": "Is the response helpful to the user, addressing what they asked for?",
}
RAGAS_CONFIG = {"num_demonstrations": 3, "sample_size": 12}
PACKAGES = (
    "ragas",
    "langchain-community",
    "langchain-core",
    "nest_asyncio",
    "promptevolver",
    "numpy",
    "scikit-learn",
    "pydantic",
    "datasets",
)

#: Known Ragas 0.4.3 defects (PEERS.md and this benchmark): what each does, what we do about it.
DEFECTS: list[dict[str, str]] = [
    {
        "id": "empty-deque",
        "defect": "Called from a plain script, optimize() crashes with `IndexError: pop from an empty "
        "deque`: its Executor applies nest_asyncio only when a loop is already running.",
        "workaround": "Before every optimize(): a fresh event loop, set as current, with "
        "nest_asyncio.apply(loop). Probed without it: see below.",
    },
    {
        "id": "global-random",
        "defect": "Sampling (stratified_batches, sample) uses Python's global `random` (and numpy's "
        "global RNG is seeded by nobody): runs are not repeatable by default.",
        "workaround": "random.seed(seed) and numpy.random.seed(seed) before every optimize().",
    },
    {
        "id": "seed-not-finalist",
        "defect": "The returned candidate is chosen among the crossover offspring only; the seed (and the "
        "mutants) are never in the final comparison, and the choice is made on the data it learned from.",
        "workaround": "None (it is the algorithm); we score the seed and the returned instruction on the "
        "same held-out validation samples and count runs where Ragas' result is worse than its seed.",
    },
    {
        "id": "feedback-shared-metric",
        "defect": "In the feedback phase all candidates are judged concurrently through ONE metric "
        "object whose instruction is overwritten by each: the feedback of every candidate is computed on "
        "verdicts of whichever instruction was set last (see the findings for which one).",
        "workaround": "None (left as is: it is what Ragas does). Visible in the judge calls the adapter "
        "receives during that phase.",
    },
    {
        "id": "crossover-partner",
        "defect": "hamming_distance fills only the upper triangle and argmin picks the zero: candidate i>0 "
        "is crossed with candidate 0 and candidate 0 with itself.",
        "workaround": "None (left as is).",
    },
    {
        "id": "metric-mutated",
        "defect": "After optimize() the metric holds the last instruction it evaluated, not the seed nor "
        "the result.",
        "workaround": "The seed instruction is read from a fresh AspectCritic; the result from the "
        "returned dict.",
    },
    {
        "id": "loss-args",
        "defect": '`ragas.losses.BinaryMetricLoss(metric="accuracy")` raises `TypeError: BinaryMetricLoss() '
        "takes no arguments` (`metric` is a plain class attribute, no __init__): the F1 variant cannot be "
        "chosen by argument.",
        "workaround": "`BinaryMetricLoss()` (accuracy is the default); F1 would need a subclass.",
    },
    {
        "id": "short-population",
        "defect": "Reverse engineering takes batches[:P-1] of floor(n_accepted / num_demonstrations) "
        "stratified batches: on a small train split there are fewer batches than P-1, so the population "
        "is silently smaller than population_size.",
        "workaround": "None; the actual population is recorded per run (`runs[].ragas.population`).",
    },
]


# --- helpers -----------------------------------------------------------------------------------
def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine() -> dict[str, Any]:
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        nproc = str(os.cpu_count())
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True, text=True
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", False
    return {
        "nproc": nproc,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "git_commit": commit + ("+dirty-src" if dirty else ""),
    }


_LOOP: list[asyncio.AbstractEventLoop] = []


def fresh_loop() -> asyncio.AbstractEventLoop:
    """Workaround for `empty-deque`: a new current loop with nest_asyncio applied.

    The previous one is closed. The new loop stays current afterwards: once nest_asyncio is
    applied, ``asyncio.run`` (our optimizer's entry point) runs on the current loop.
    """
    import nest_asyncio

    while _LOOP:
        _LOOP.pop().close()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    nest_asyncio.apply(loop)
    _LOOP.append(loop)
    return loop


def run_coro(coro: Any) -> Any:
    """Run a coroutine whether or not nest_asyncio has patched the current loop."""
    try:
        loop = asyncio.get_event_loop()
    except RuntimeError:
        loop = None
    if loop is None or loop.is_closed():
        return asyncio.run(coro)
    return loop.run_until_complete(coro)


def ragas_train_set(dataset: SingleMetricAnnotation, positions: list[int]) -> Any:
    from ragas.dataset_schema import SampleAnnotation
    from ragas.dataset_schema import SingleMetricAnnotation as RagasAnnotation

    samples = []
    for i in positions:
        raw = dataset.samples[i].model_dump(mode="json")
        samples.append(SampleAnnotation(**raw))
    return RagasAnnotation(name=dataset.name, samples=samples)


class Scorer:
    """Our Evaluator + a fresh SimulatedJudgeLLM over the full file: identical scoring for both."""

    def __init__(self, dataset: SingleMetricAnnotation, name: str, definition: str, seed: int) -> None:
        self.dataset = dataset
        self.labels = dataset.labels()
        self.loss = BinaryMetricLoss(metric="accuracy")
        self.llm = SimulatedJudgeLLM(dataset=dataset, random_seed=seed)
        self.evaluator = Evaluator(
            metric=AspectCritic(name=name, definition=definition),
            llm=self.llm,
            dataset=dataset,
            max_concurrency=16,
        )

    def __call__(self, instruction: str, positions: list[int]) -> float:
        judgements = run_coro(self.evaluator.evaluate({PROMPT: instruction}, positions))
        return float(score(self.loss, judgements, positions, self.labels).value)


# --- one run of each -----------------------------------------------------------------------------
def run_ours(
    dataset: SingleMetricAnnotation, name: str, definition: str, pop: int, seed: int
) -> dict[str, Any]:
    fake = SimulatedJudgeLLM(dataset=dataset, random_seed=seed)
    optimizer = GeneticOptimizer(metric=AspectCritic(name=name, definition=definition), llm=fake)
    start = time.perf_counter()
    result = optimizer.optimize(
        dataset=dataset,
        loss=BinaryMetricLoss(metric="accuracy"),
        # small_data 0: always the held-out split (never out-of-bag), so that both sides learn
        # from the same train samples and are scored on the same validation samples
        config={"population_size": pop, "random_seed": seed, "small_data": 0},
    )
    wall = time.perf_counter() - start
    usage = result.usage
    return {
        "seed_instruction": result.seed_instructions[PROMPT],
        "best_instruction": result.best_instructions[PROMPT],
        "reported_scores": result.scores,
        "validation_positions": list(result.split["validation_positions"]),
        "judge_calls": usage["llm_calls"]["judge"],
        "meta_calls": usage["llm_calls"]["meta"],
        "calls_by_operation": usage["calls_by_operation"],
        "tokens": usage["prompt_tokens"] + usage["completion_tokens"],
        "generations": len(result.history),
        "stop_reason": result.stop_reason,
        "wall_s": wall,
    }


def run_ragas(
    dataset: SingleMetricAnnotation,
    name: str,
    definition: str,
    pop: int,
    seed: int,
    train: list[int],
    *,
    workaround: bool = True,
    keep_traces: int = 0,
    latency_s: float = 0.0,
) -> dict[str, Any]:
    from ragas.losses import BinaryMetricLoss as RagasBinaryLoss
    from ragas.metrics._aspect_critic import AspectCritic as RagasAspectCritic
    from ragas.optimizers import GeneticOptimizer as RagasGenetic

    from benchmarks.sidebyside.ragas_adapter import SimulatedRagasLLM

    llm = SimulatedRagasLLM(
        SimulatedJudgeLLM(dataset=dataset, random_seed=seed),
        metric_name=name,
        keep_traces=keep_traces,
        latency_s=latency_s,
    )
    metric = RagasAspectCritic(name=name, definition=definition, llm=llm)
    seed_instruction = RagasAspectCritic(name=name, definition=definition).single_turn_prompt.instruction
    optimizer = RagasGenetic(metric=metric, llm=llm)
    train_set = ragas_train_set(dataset, train)
    random.seed(seed)
    np.random.seed(seed)
    if workaround:
        fresh_loop()
    out: dict[str, Any] = {"seed_instruction": seed_instruction, "error": None}
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            best = optimizer.optimize(
                dataset=train_set,
                loss=RagasBinaryLoss(),  # accuracy; see defect `loss-args`
                config={"population_size": pop, **RAGAS_CONFIG},
            )
        out["best_instruction"] = best[PROMPT]
    except Exception as exc:  # a Ragas defect: recorded, never hidden
        out["best_instruction"] = None
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc(limit=-4)
    out["wall_s"] = time.perf_counter() - start
    usage = llm.usage()
    out.update(
        judge_calls=llm.judge_calls,
        meta_calls=llm.meta_calls,
        calls_by_operation=usage["calls_by_operation"],
        tokens=usage["prompt_tokens"] + usage["completion_tokens"],
        population=llm.calls["reverse_engineer"] + 1,
        train_size=len(train),
        metric_instruction_after=metric.single_turn_prompt.instruction,
    )
    if keep_traces:
        out["traces"] = llm.traces
    out["feedback_phase"] = feedback_phase(llm.log, out["population"], len(train), seed_instruction)
    out["_verdicts"] = llm.verdicts
    return out


def feedback_phase(log: list[tuple[str, str]], population: int, n_train: int, seed: str) -> dict[str, Any]:
    """Judge calls of Ragas' feedback phase and the distinct instructions they judged with.

    The phase's judge calls are all judge calls but the crossover and fitness evaluations
    (population x train size each); they come first.
    """
    judged = [instruction for op, instruction in log if op == "judge"]
    n = max(0, len(judged) - 2 * population * n_train)
    distinct = set(judged[:n])
    return {
        "judge_calls": n,
        "candidates": population,
        "distinct_instructions": len(distinct),
        "only_the_seed": distinct == {seed.strip()},
    }


def run_pair(src: Source, pop: int, seed: int, keep: int) -> dict[str, Any]:
    dataset, name, definition = src.dataset, src.name, src.definition
    ours = run_ours(dataset, name, definition, pop, seed)
    validation = ours.pop("validation_positions")
    held_out = set(validation)
    train = [i for i in dataset.usable_indices() if i not in held_out]
    ragas = run_ragas(dataset, name, definition, pop, seed, train, keep_traces=keep)
    scorer = Scorer(dataset, name, definition, seed)
    for side in (ours, ragas):
        for which in ("seed", "best"):
            instruction = side[f"{which}_instruction"]
            side[f"{which}_validation"] = None if instruction is None else scorer(instruction, validation)
            side[f"{which}_train"] = None if instruction is None else scorer(instruction, train)
    ragas["judge_agreement"] = judge_agreement(ragas.pop("_verdicts"), scorer, dataset, train)
    reported = ours["reported_scores"]
    ours["rescored_matches_reported"] = (
        abs(reported["best"]["validation"] - ours["best_validation"]) < 1e-12
        and abs(reported["seed"]["validation"] - ours["seed_validation"]) < 1e-12
    )
    return {
        "file": src.label,
        "metric": name,
        "population": pop,
        "seed": seed,
        "train_size": len(train),  # train = usable positions not in validation
        "validation_positions": validation,
        "ours": ours,
        "ragas": ragas,
    }


def judge_agreement(
    verdicts: dict[tuple[str, str], int | None],
    scorer: Scorer,
    dataset: SingleMetricAnnotation,
    positions: list[int],
) -> dict[str, int]:
    """Compare every verdict the adapter gave Ragas with our Evaluator's on the same pair.

    For each (instruction, train sample) Ragas had judged, judge it with our scorer and count
    the pairs whose verdicts are equal: the two paths into the simulated judge must agree.
    """
    metric = scorer.evaluator.metric
    keys = {sample_key(metric.prompt_inputs(dataset.samples[p].metric_input)): p for p in positions}
    by_instruction: dict[str, list[tuple[int, int | None]]] = {}
    for (instruction, key), verdict in verdicts.items():
        if key in keys:
            by_instruction.setdefault(instruction, []).append((keys[key], verdict))
    compared = equal = 0
    for instruction, pairs in by_instruction.items():
        judged = run_coro(scorer.evaluator.evaluate({PROMPT: instruction}, [p for p, _ in pairs]))
        for p, verdict in pairs:
            score_p = judged[p].score
            compared += 1
            equal += score_p is not None and verdict == int(score_p)
    return {"pairs_compared": compared, "pairs_equal": equal}


# --- probe of the empty-deque defect ------------------------------------------------------------
def probe(args: argparse.Namespace, paths: list[Path]) -> Any:
    """Ragas runs WITHOUT the nest_asyncio workaround, in a child process (apply() is global)."""
    cmd = [sys.executable, "-m", "benchmarks.sidebyside.ragas", "--probe-child", "--no-probe"]
    for path in paths:
        cmd += ["--data", str(path)]
    cmd += ["--populations", *map(str, args.populations), "--seeds", *map(str, args.seeds)]
    if args.metric_name:
        cmd += ["--metric-name", args.metric_name]
    if args.definition:
        cmd += ["--definition", args.definition]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT), timeout=600)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": f"probe failed: rc={done.returncode} {done.stderr[-500:]}"}


def probe_child(args: argparse.Namespace, paths: list[Path]) -> None:
    """Every (file, population, seed) on all usable samples, no workaround, 0 and 1 ms latency."""
    attempts: list[dict[str, Any]] = []
    for path in paths:
        dataset = SingleMetricAnnotation.from_json(path, metric_name=args.metric_name)
        definition = args.definition or DEFINITIONS.get(dataset.name) or DEFINITIONS["answer_correctness"]
        for pop in args.populations:
            for seed in args.seeds:
                for latency in (0.0, 0.001):
                    out = run_ragas(
                        dataset,
                        dataset.name,
                        definition,
                        pop,
                        seed,
                        dataset.usable_indices(),
                        workaround=False,
                        latency_s=latency,
                    )
                    attempts.append(
                        {
                            "file": path.name,
                            "population": pop,
                            "seed": seed,
                            "latency_s": latency,
                            "error": out["error"],
                        }
                    )
    errors = sorted({a["error"] for a in attempts if a["error"]})
    failed = sum(a["error"] is not None for a in attempts)
    print(json.dumps({"runs": len(attempts), "failed": failed, "errors": errors, "attempts": attempts}))


# --- summary -----------------------------------------------------------------------------------
def mean_std(values: list[float | None]) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "—"
    if len(vals) == 1:
        return f"{vals[0]:.3f}"
    return f"{statistics.fmean(vals):.3f} ± {statistics.stdev(vals):.3f}"


def mean_std_int(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.0f}"
    return f"{statistics.fmean(values):.1f} ± {statistics.stdev(values):.1f}"


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault((r["file"], r["population"]), []).append(r)
    rows = []
    for (file, pop), rs in groups.items():
        for method, key in (("promptevolver", "ours"), ("ragas 0.4.3", "ragas")):
            sides = [r[key] for r in rs]
            ok = [s for s in sides if s.get("error") is None]
            rows.append(
                {
                    "file": file,
                    "method": method,
                    "population": pop,
                    "seeds": [r["seed"] for r in rs],
                    "failed_runs": len(sides) - len(ok),
                    "seed_validation": [s["seed_validation"] for s in ok],
                    "best_validation": [s["best_validation"] for s in ok],
                    "best_train": [s["best_train"] for s in ok],
                    "judge_calls": [s["judge_calls"] for s in sides],
                    "meta_calls": [s["meta_calls"] for s in sides],
                    "total_calls": [s["judge_calls"] + s["meta_calls"] for s in sides],
                    "tokens": [s["tokens"] for s in sides],
                    "wall_s": [s["wall_s"] for s in sides],
                    "worse_than_seed": sum(
                        s["best_validation"] < s["seed_validation"]
                        for s in ok
                        if s["best_validation"] is not None
                    ),
                    "better_than_seed": sum(
                        s["best_validation"] > s["seed_validation"]
                        for s in ok
                        if s["best_validation"] is not None
                    ),
                    "population_actual": sorted({s.get("population", pop) for s in sides}),
                }
            )
    return rows


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by = {(r["file"], r["population"], r["method"]): r for r in rows}
    out = []
    for (file, pop, method), r in by.items():
        if method != "promptevolver":
            continue
        theirs = by[(file, pop, "ragas 0.4.3")]
        m = statistics.fmean

        def ratio(key: str, ours: dict[str, Any] = r, theirs: dict[str, Any] = theirs) -> float | None:
            denominator = statistics.fmean(theirs[key])
            return statistics.fmean(ours[key]) / denominator if denominator else None

        out.append(
            {
                "file": file,
                "population": pop,
                "judge_ratio": ratio("judge_calls"),
                "total_ratio": ratio("total_calls"),
                "meta_ratio": ratio("meta_calls"),
                "tokens_ratio": ratio("tokens"),
                "best_validation_diff": (m(r["best_validation"]) - m(theirs["best_validation"]))
                if r["best_validation"] and theirs["best_validation"]
                else None,
            }
        )
    return out


def _ratio_cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _short(label: str) -> str:
    return label.split(" (")[0].rsplit("/", 1)[-1]


def findings(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Facts measured across all runs (each one checkable in ``runs``)."""
    ragas = [r["ragas"] for r in runs]
    ok = [x for x in ragas if x["error"] is None]
    with_phase = [x for x in ragas if x["feedback_phase"]["judge_calls"]]
    by_file: dict[str, dict[str, int]] = {}
    for r in runs:
        entry = by_file.setdefault(_short(r["file"]), {"runs": 0, "with_feedback_calls": 0})
        entry["runs"] += 1
        entry["with_feedback_calls"] += bool(r["ragas"]["calls_by_operation"].get("feedback"))
    return {
        "judge_pairs_compared": sum(x["judge_agreement"]["pairs_compared"] for x in ragas),
        "judge_pairs_equal": sum(x["judge_agreement"]["pairs_equal"] for x in ragas),
        "feedback_phase_runs": len(with_phase),
        "feedback_phase_single_instruction": sum(
            x["feedback_phase"]["distinct_instructions"] == 1 and x["feedback_phase"]["candidates"] > 1
            for x in with_phase
        ),
        "feedback_phase_only_seed": sum(x["feedback_phase"]["only_the_seed"] for x in with_phase),
        "ragas_feedback_calls_by_file": by_file,
        "ragas_worse_than_seed": sum(x["best_validation"] < x["seed_validation"] for x in ok),
        "ragas_better_than_seed": sum(x["best_validation"] > x["seed_validation"] for x in ok),
        "ours_worse_than_seed": sum(
            r["ours"]["best_validation"] < r["ours"]["seed_validation"] for r in runs
        ),
        "ours_better_than_seed": sum(
            r["ours"]["best_validation"] > r["ours"]["seed_validation"] for r in runs
        ),
        "ragas_short_population": sum(x["population"] < r["population"] for x, r in zip(ragas, runs)),
        "ours_rescored_matches_reported": sum(r["ours"]["rescored_matches_reported"] for r in runs),
        "runs": len(runs),
        "ragas_failed": len(ragas) - len(ok),
    }


#: What each side saw, and where the translation is not one-to-one.
FAITHFULNESS: list[str] = [
    "Judge calls: the adapter cuts Ragas' rendered judge prompt at its output-format signature (the "
    "instruction, byte for byte) and reads the input JSON (user_input, response, reference, contexts), "
    "renders them with our `Prompt.render` and asks `SimulatedJudgeLLM.answer` - the path our Evaluator "
    "takes (split_rendered -> _judge(instruction, inputs, sample_index=0)). Same world, correction rule and "
    "noise hash; the answer JSON {reason, verdict} is what Ragas' AspectCriticOutput parses. Checked per "
    "run: every (instruction, train sample) Ragas judged was re-judged by our Evaluator (see findings).",
    "Meta calls: the evidence a Ragas meta-prompt shows is re-rendered by OUR operator functions "
    "(promptevolver.optimizers.operators._meta_prompts) through an in-memory tap, so the fake reads "
    "our section "
    "headings: reverse_engineer <- Ragas' (input, expected output) pairs (edited_output else "
    "prompt_output, accepted samples only, as Ragas chose them); feedback <- Ragas' instruction plus "
    "each (input, output, expected_output) it shows (output -> judge_output); rewrite <- instruction + "
    "Ragas' feedback list; crossover <- parent_1 -> A, parent_2 -> B. Ragas' inputs are text "
    "(`\\nkey:\\n\\tvalue`), parsed back into fields.",
    "Not carried over: the wording of Ragas' meta-instructions and the crossover prompt's few-shot "
    "(sentiment) example; the fake writes only from evidence, so wording cannot help or hurt either side "
    "(a real LLM would react to it). Our reverse-engineering prompt names the metric; Ragas' does not "
    "(the fake ignores the name).",
    "Feedback items are cut to 3, as Ragas' prompt asks ('give maximum 3 concrete feedbacks') and as our "
    "operator does with max_feedbacks=3; the fake writes one item per failing sample shown.",
    "Concurrency: the adapter awaits asyncio.sleep(0) before answering, as a real client awaits I/O, so "
    "Ragas' concurrent tasks interleave; no clock is involved, so runs are repeatable (checked: two "
    "full runs gave identical instructions, scores and calls).",
    "Tokens are whitespace words of the prompts each side actually sent (Ragas' include its JSON-schema "
    "boilerplate and few-shot example) and of the answers.",
    "Each side is scored with its own seed instruction; Ragas' seed says 'criterial' where ours says "
    "'criteria', so their noise draws differ and the seed columns can differ by a noise flip.",
]


def markdown(report: dict[str, Any]) -> str:
    rows, env, facts = report["summary"], report["environment"], report["findings"]
    seeds = "; ".join(f"{_short(k)}: {v}" for k, v in report["seeds"].items())
    lines = [
        "# Side by side: promptevolver vs Ragas 0.4.3 GeneticOptimizer (same simulated world)",
        "",
        f"- date: {report['date']}",
        f"- machine: nproc {env['nproc']}, {env['platform']}, Python {env['python']}, "
        f"promptevolver @ {env['git_commit']}",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in report["packages"].items()),
        f"- seeds per (file, population): {seeds}; values are mean ± std (sample std, ddof=1) over seeds",
        f"- command: `{report['command']}` (Ragas venv)",
        f"- total benchmark time: {report['total_s']:.1f} s",
        "",
        "Both sides run in the same `SimulatedJudgeLLM` world (built from the full file, seeded with the run",
        "seed), train on the same train split (our stratified split, validation_fraction 0.3; Ragas gets a",
        "SingleMetricAnnotation of the train samples only) and are scored identically: our `Evaluator` +",
        "`SimulatedJudgeLLM(dataset=full file, random_seed=seed)` + `BinaryMetricLoss(accuracy)` on the same",
        "validation positions. Calls and tokens are those each optimizer made (scoring calls uncounted).",
        "Ours: `population_size=P, random_seed=seed, small_data=0` (always the held-out split), "
        "defaults otherwise (generations 4, patience 2, ...).",
        f"Ragas: `population_size=P`, {RAGAS_CONFIG}; one generation by design.",
        "",
        "| file | method | pop | seed validation | best validation | judge calls | meta calls | total calls "
        "| tokens | wall time (s) | best < seed / > seed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        failed = f" ({r['failed_runs']} failed)" if r["failed_runs"] else ""
        pop = f"{r['population']}"
        if r["method"].startswith("ragas") and r["population_actual"] != [r["population"]]:
            pop += f" (actual {'/'.join(map(str, r['population_actual']))})"
        lines.append(
            f"| {_short(r['file'])} | {r['method']}{failed} | {pop} | {mean_std(r['seed_validation'])} | "
            f"{mean_std(r['best_validation'])} | {mean_std_int(r['judge_calls'])} | "
            f"{mean_std_int(r['meta_calls'])} | {mean_std_int(r['total_calls'])} | "
            f"{mean_std_int(r['tokens'])} | {mean_std(r['wall_s'])} | "
            f"{r['worse_than_seed']} / {r['better_than_seed']} of {len(r['best_validation'])} |"
        )
    lines += [
        "",
        "## Ratios (ours / Ragas, of the means over seeds)",
        "",
        "| file | pop | judge calls | meta calls | total calls | tokens | best validation (ours − Ragas) |",
        "|---|---|---|---|---|---|---|",
    ]
    for q in report["ratios"]:
        diff = "—" if q["best_validation_diff"] is None else f"{q['best_validation_diff']:+.3f}"
        cells = [_ratio_cell(q[k]) for k in ("judge_ratio", "meta_ratio", "total_ratio", "tokens_ratio")]
        lines.append(f"| {_short(q['file'])} | {q['population']} | {' | '.join(cells)} | {diff} |")
    fb = ", ".join(
        f"{name} {v['with_feedback_calls']} of {v['runs']}"
        for name, v in facts["ragas_feedback_calls_by_file"].items()
    )
    lines += [
        "",
        "## Findings (measured in these runs)",
        "",
        f"- Judge path agreement: {facts['judge_pairs_equal']} of {facts['judge_pairs_compared']} "
        "(instruction, train sample) verdicts the adapter gave Ragas equal our Evaluator's on the same pair.",
        f"- Ours re-scored by the shared scorer equals its own result.json scores in "
        f"{facts['ours_rescored_matches_reported']} of {facts['runs']} runs.",
        f"- Result vs its own seed on validation: Ragas worse in {facts['ragas_worse_than_seed']}, better in "
        f"{facts['ragas_better_than_seed']} of {facts['runs'] - facts['ragas_failed']} runs; ours worse in "
        f"{facts['ours_worse_than_seed']}, better in {facts['ours_better_than_seed']} of {facts['runs']}.",
        f"- Ragas feedback phase: in {facts['feedback_phase_single_instruction']} of "
        f"{facts['feedback_phase_runs']} runs all candidates were judged with ONE instruction, the seed's "
        f"(appended last) in {facts['feedback_phase_only_seed']} (defect `feedback-shared-metric`); "
        "in those, every candidate's feedback is computed on the seed's verdicts.",
        f"- Runs where Ragas made any feedback call: {fb}. Ragas computes feedback on accepted samples "
        "only; where every disagreement is a rejected sample (annotated_data.json) its feedback sees "
        "only noise flips, and rejected samples reach it only in the crossover/fitness judging.",
        f"- Ragas population smaller than requested in {facts['ragas_short_population']} of {facts['runs']} "
        "runs (defect `short-population`; shown as 'actual' in the table).",
        "",
        "## How faithful the adapter is (what each side saw)",
        "",
    ]
    lines += [f"- {n}" for n in report["faithfulness"]]
    lines += ["", "## Ragas defects and workarounds", ""]
    for d in DEFECTS:
        lines.append(f"- **{d['id']}**: {d['defect']} *Workaround*: {d['workaround']}")
    probe_result = report.get("probe")
    if probe_result is not None:
        lines.append(
            "- Probe of `empty-deque`: every bundled (file, population, seed) on all usable samples, WITHOUT "
            f"the workaround, at 0 and 1 ms simulated latency: {probe_result.get('failed')} of "
            f"{probe_result.get('runs')} runs failed"
            + (f" {probe_result['errors']}" if probe_result.get("errors") else "")
            + (f" (probe error: {probe_result['error']})" if "error" in probe_result else "")
            + (
                " — not reproduced with this adapter, Python and nest_asyncio; PEERS.md saw the crash with "
                "its own fake, so the workaround stays."
                if probe_result.get("runs") and not probe_result.get("failed")
                else ""
            )
        )
    errors = [
        (r["file"], r["population"], r["seed"], r["ragas"]["error"])
        for r in report["runs"]
        if r["ragas"]["error"]
    ]
    lines.append(f"- Ragas runs that failed despite the workarounds: {len(errors)}")
    lines += [f"  - {_short(f)} pop {p} seed {s}: {e}" for f, p, s, e in errors]
    if report["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def progress_line(path: Path, pop: int, seed: int, run: dict[str, Any]) -> str:
    def side(label: str, s: dict[str, Any]) -> str:
        seed_v, best_v = s["seed_validation"], s["best_validation"]
        scores = "failed" if best_v is None else f"{seed_v:.3f}->{best_v:.3f}"
        return f"{label} {scores} ({s['judge_calls']}+{s['meta_calls']} calls, {s['wall_s']:.2f}s)"

    error = run["ragas"]["error"]
    tail = f" ERROR {error}" if error else ""
    sides = f"{side('ours', run['ours'])} | {side('ragas', run['ragas'])}"
    return f"{path.name} pop {pop} seed {seed}: {sides}{tail}"


# --- main --------------------------------------------------------------------------------------
@dataclass
class Source:
    """One annotation file of the benchmark and the seeds it is run with."""

    label: str
    path: Path
    dataset: SingleMetricAnnotation
    name: str
    definition: str
    seeds: list[int]


def load(path: Path, label: str, args: argparse.Namespace, seeds: list[int]) -> Source:
    dataset = SingleMetricAnnotation.from_json(path, metric_name=args.metric_name)
    definition = args.definition or DEFINITIONS.get(dataset.name) or DEFINITIONS["answer_correctness"]
    return Source(label, path, dataset, dataset.name, definition, seeds)


def synthetic_sources(args: argparse.Namespace, notes: list[str]) -> list[Source]:
    if not args.synthetic:
        return []
    try:
        from promptevolver.simulation.synthetic import SyntheticSpec, generate
    except ImportError:
        notes.append(
            f"--synthetic {args.synthetic}: promptevolver.simulation.synthetic is not available; not run."
        )
        return []
    out = []
    folder = Path(tempfile.mkdtemp(prefix="ragas_side_by_side_"))
    for n in args.synthetic:
        path = folder / f"synthetic_{n}.json"
        generate(SyntheticSpec(n_samples=n, random_seed=args.synthetic_data_seed)).to_json(path)
        label = (
            f"synthetic_{n} (promptevolver.simulation.synthetic, n_samples={n}, "
            f"random_seed={args.synthetic_data_seed})"
        )
        out.append(load(path, label, args, args.synthetic_seeds or args.seeds))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", action="append", type=Path, help="annotation file (repeatable)")
    parser.add_argument("--metric-name", help="metric of the file (default: its only metric)")
    parser.add_argument("--definition", help="AspectCritic definition (default: by metric name)")
    parser.add_argument("--populations", type=int, nargs="+", default=[3, 6])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--synthetic",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="also run on a generated promptevolver.simulation.synthetic set of N samples (repeatable)",
    )
    parser.add_argument("--synthetic-seeds", type=int, nargs="+", help="run seeds there (default: --seeds)")
    parser.add_argument("--synthetic-data-seed", type=int, default=0, help="SyntheticSpec.random_seed")
    parser.add_argument("--output-dir", type=Path, default=BENCH / "results")
    parser.add_argument("--name", default="ragas_side_by_side")
    parser.add_argument("--no-probe", action="store_true", help="skip the empty-deque probe")
    parser.add_argument("--note", action="append", default=[], help="extra note for the report")
    parser.add_argument("--probe-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)

    paths = args.data or sorted(Path(p) for p in glob.glob(str(BENCH / "data" / "*.json")))
    if args.probe_child:
        probe_child(args, paths)
        return 0

    started = time.perf_counter()
    notes: list[str] = list(args.note)
    sources = [load(p, _label(p), args, args.seeds) for p in paths] + synthetic_sources(args, notes)
    if args.synthetic and args.synthetic_seeds and args.synthetic_seeds != args.seeds:
        notes.append(
            f"Synthetic sets run with seeds {args.synthetic_seeds} only (not {args.seeds}) to keep the whole "
            "benchmark well under 10 minutes: a Ragas run there makes ~9k-18k judge calls."
        )
    notes.append(
        "Wall times are single measurements on a shared 2-core machine (other jobs may run): compare "
        "them within a row group, not across reports. Both sides call an in-process fake, so wall time "
        "is engine overhead, not LLM latency."
    )
    probe_result = None
    if not args.no_probe:
        probe_result = probe(args, paths)
        shown = {k: v for k, v in probe_result.items() if k != "attempts"}
        print(f"probe without the nest_asyncio workaround: {shown}", flush=True)
    runs: list[dict[str, Any]] = []
    for src in sources:
        for pop in args.populations:
            for seed in src.seeds:
                keep = 1 if (pop == args.populations[0] and seed == src.seeds[0]) else 0
                run = run_pair(src, pop, seed, keep)
                runs.append(run)
                print(progress_line(src.path, pop, seed, run), flush=True)
    summary = summarize(runs)
    report = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "environment": machine(),
        "packages": package_versions(),
        "command": " ".join(["python", *sys.argv]),
        "seeds": {src.label: src.seeds for src in sources},
        "populations": args.populations,
        "ragas_config": RAGAS_CONFIG,
        "defects": DEFECTS,
        "probe": probe_result,
        "summary": summary,
        "ratios": ratios(summary),
        "findings": findings(runs),
        "faithfulness": FAITHFULNESS,
        "notes": notes,
        "runs": runs,
    }
    report["total_s"] = time.perf_counter() - started
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / f"{args.name}.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    )
    (args.output_dir / f"{args.name}.md").write_text(markdown(report))
    print(markdown(report))
    return 0


def _label(path: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    raise SystemExit(main())
