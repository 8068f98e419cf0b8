"""Progress over LLM calls: plain lines without a terminal, a bar on one, through every phase."""

from __future__ import annotations

import re

import pytest

from promptevolver.config._models import RunConfig
from promptevolver.optimizers.events import Event
from promptevolver.runs._optimize import execute
from promptevolver.runs.progress import CallProgress

from ..rundirs import SYNTHETIC

COUNT = re.compile(r"([\d,]+) of at most ([\d,]+) LLM calls")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _call(calls: int, bound: int = 100, generation: int = 0) -> Event:
    return Event("llm_call", generation, {"operation": "judge", "calls": calls, "bound": bound})


def test_plain_lines_name_each_phase_once_then_every_interval():
    lines: list[str] = []
    clock = Clock()
    progress = CallProgress(bar=False, write=lines.append, interval_s=10, generations=2, clock=clock)
    for calls in range(1, 6):
        clock.now += 1
        progress(_call(calls))
    assert lines == ["seed and initial population: 1 of at most 100 LLM calls (1 s)"]
    clock.now = 12
    progress(_call(6))
    assert lines[-1] == "seed and initial population: 6 of at most 100 LLM calls (12 s)"
    progress(Event("generation_end", 0, {"best_train": 0.5, "mean_train": 0.25}))
    progress(Event("generation_start", 1, {}))
    progress(_call(7, generation=1))
    assert lines[-2:] == [
        "initial population done: fitness best 0.500, mean 0.250 (judged train samples); "
        "6 of at most 100 LLM calls (12 s)",
        "generation 1 of 2: 7 of at most 100 LLM calls (12 s)",
    ]
    progress(Event("generation_end", 1, {"best_train": 0.75, "mean_train": None}))
    progress(_call(8, generation=1))
    assert lines[-1].startswith("final choice on validation: 8 of at most 100")
    progress(Event("stop", 1, {"reason": "generations"}))
    assert lines[-1] == "done: 8 LLM calls (12 s)"


def test_interval_must_be_positive():
    with pytest.raises(ValueError, match="interval_s"):
        CallProgress(bar=False, write=print, interval_s=0)


def test_the_bar_counts_calls_against_the_bound_and_follows_a_raised_bound(capsys):
    progress = CallProgress(bar=True, write=print, generations=1)
    progress(_call(1, bound=10))
    progress(_call(4, bound=10))
    bar = progress._tqdm
    assert (bar.n, bar.total, bar.desc) == (4, 10, "seed and initial population")
    progress(Event("generation_start", 1, {}))
    progress(_call(12, bound=12))  # the bound never sits below the count
    assert (bar.n, bar.total, bar.desc) == (12, 12, "generation 1 of 1")
    progress(Event("stop", 1, {}))
    assert progress._tqdm is None
    assert "seed and initial population:  10%" in capsys.readouterr().err


def test_the_bar_ends_at_the_real_count_when_the_search_stops_early(capsys):
    progress = CallProgress(bar=True, write=print, generations=4)
    progress.step("loading the annotations: a.json")
    progress(_call(30, bound=598))
    bar = progress._tqdm
    progress(Event("stop", 1, {"reason": "patience"}))
    assert (bar.n, bar.total, bar.desc) == (30, 30, "done")  # not 30 of 598
    err = capsys.readouterr().err
    assert "loading the annotations: a.json" in err and "done: 100%" in err


def test_a_real_run_reports_every_phase_and_never_counts_past_the_bound(tmp_path):
    lines: list[str] = []
    progress = CallProgress(bar=False, write=lines.append, interval_s=1e-9, generations=2)
    result = execute(
        RunConfig.model_validate(SYNTHETIC), tmp_path / "run", callbacks=[progress], step=progress.step
    )
    # the steps before the search are timed on its first line, the step after it has its own
    assert lines[0].startswith("seed and initial population: ")
    before = r"; before it: loading the annotations \d+ s, building the simulated LLM \d+ s$"
    assert re.search(before, lines[0])
    assert lines[-1].startswith(f"writing result.json, the exports and the report to {tmp_path / 'run'} (")
    lines = lines[:-1]
    phases = {line.split(":")[0] for line in lines}
    assert {"seed and initial population", "generation 1 of 2", "final choice on validation"} <= phases
    counts = [tuple(int(x.replace(",", "")) for x in m.groups()) for m in map(COUNT.search, lines) if m]
    assert counts and all(calls <= bound for calls, bound in counts)
    assert [c for c, _ in counts] == sorted(c for c, _ in counts)
    total = result.usage["llm_calls"]["judge"] + result.usage["llm_calls"]["meta"]
    assert lines[-1].startswith(f"done: {total} LLM calls")


@pytest.mark.parametrize("rungs", [0, 1, 2])
def test_the_distillation_line_counts_its_rungs_in_words_that_agree(rungs):
    lines: list[str] = []
    progress = CallProgress(bar=False, write=lines.append, generations=2, clock=Clock())
    progress(Event("stage_end", 0, {"stage": "distill", "candidates": list(range(1, rungs + 1))}))
    expected = {0: "0 rungs", 1: "1 rung of", 2: "2 rungs"}[rungs]
    assert lines[-1].startswith(f"distillation done: {expected}")


def test_the_steps_before_the_first_call_end_when_the_first_stage_begins_not_at_its_answer():
    """A slow server's first answer is no part of the step before it: "loading the annotations"
    ends when the first stage begins (a newcomer's llama.cpp run read "loading the annotations
    50 s" where loading took a second and the first judge call 49)."""
    now = [0.0]
    lines: list[str] = []
    progress = CallProgress(bar=False, write=lines.append, clock=lambda: now[0])
    progress.step("loading the annotations: a.json")
    now[0] = 1.0
    progress(Event("stage_start", 0, {"stage": "distill"}))
    now[0] = 50.0  # the first answer
    progress(_call(1, bound=10))
    assert lines[0].endswith("; before it: loading the annotations 1 s"), lines


def test_the_first_phase_says_it_started_before_its_first_answer():
    """A slow model's first answer can take minutes: in plain lines the first phase says at once
    that it started and waits (a newcomer's SmolLM2 run printed nothing for 161 s); the first
    answer then adds no second line for the same phase, and later phases are as before."""
    now = [0.0]
    lines: list[str] = []
    progress = CallProgress(bar=False, write=lines.append, clock=lambda: now[0], interval_s=3600)
    progress.step("loading the annotations: a.json")
    now[0] = 1.0
    progress(Event("stage_start", 0, {"stage": "distill"}))
    assert lines == [
        "distillation (meta calls only): started, waiting for the first answer; "
        "0 LLM calls (1 s); before it: loading the annotations 1 s"  # no bound said yet: none shown
    ]
    now[0] = 161.0
    progress(_call(1, bound=10))
    assert len(lines) == 1
    progress(Event("stage_end", 0, {"stage": "distill", "candidates": [1]}))
    progress(_call(2, bound=10))
    assert lines[-1].startswith("verification on held-out samples: 2 of at most 10")


@pytest.mark.parametrize(
    ("expected", "bound", "shown"),
    [
        (None, 0, "0 LLM calls"),
        (37, 0, "0 of ~37 expected LLM calls"),
        (37, 768, "0 of ~37 expected, at most 768 LLM calls"),
        (None, 768, "0 of at most 768 LLM calls"),
    ],
)
def test_the_count_says_only_what_is_known(expected, bound, shown):
    """Before the run's first call event the bound is unknown: the count never says "at most 0" (a
    newcomer saw "0 of ~37 expected, at most 0 LLM calls" and later "at most 768")."""
    progress = CallProgress(bar=False, write=lambda _: None, clock=lambda: 0.0, interval_s=3600)
    progress.expected, progress.bound = expected, bound
    assert progress._count() == f"{shown} (0 s)"
