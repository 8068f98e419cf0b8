"""The report's plots (report/_plots.py): PNGs from a run's history, with gaps for what was not measured."""

from __future__ import annotations

import warnings

from promptevolver.report._plots import calls_png, fitness_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HISTORY = [
    {"generation": 0, "best_train": 0.5, "mean_train": 0.4, "judge_calls": 20, "meta_calls": 2},
    {"generation": 1, "best_train": 0.7, "mean_train": 0.5, "judge_calls": 40, "meta_calls": 6},
]


def test_plots_are_pngs():
    scores = {"seed": {"train": 0.5, "validation": 0.5}, "best": {"train": 0.7, "validation": 0.6}}
    assert fitness_png(HISTORY, metric="accuracy", higher_is_better=True, scores=scores).startswith(PNG_MAGIC)
    assert calls_png(HISTORY, judge_total=50, meta_total=6).startswith(PNG_MAGIC)


def test_unmeasured_values_are_gaps_not_errors_or_zeros():
    history = [{**h, "best_train": None, "mean_train": None} for h in HISTORY]
    nothing = {"seed": {"train": None, "validation": None}, "best": {"train": None, "validation": None}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even matplotlib's "no artists with labels" warning
        png = fitness_png(history, metric="accuracy", higher_is_better=True, scores=nothing)
    assert png.startswith(PNG_MAGIC)
    partial = [HISTORY[0], {**HISTORY[1], "best_train": None}]
    some = {"seed": {"train": 0.5, "validation": None}, "best": {"train": None, "validation": 0.6}}
    assert fitness_png(partial, metric="accuracy", higher_is_better=True, scores=some).startswith(PNG_MAGIC)


def test_a_plot_drawn_for_a_simulated_run_says_so_in_its_corner(monkeypatch):
    """A plot shown alone (a newcomer opened plots/*.png) must say the simulated LLM answered, as
    every figure of the report does: drawn inside ``noted``, each carries the line."""
    from matplotlib.figure import Figure

    from promptevolver.report import _plots

    said: list[str] = []
    text = Figure.text

    def spy(self, x, y, s, *args, **kwargs):
        said.append(s)
        return text(self, x, y, s, *args, **kwargs)

    monkeypatch.setattr(Figure, "text", spy)
    matrices = [("Optimized (best)", [[4, 1], [1, 12]])]
    plain = _plots.confusion_png(matrices)
    assert said == []
    with _plots.noted("simulated LLM: a dry run, not a model"):
        marked = _plots.confusion_png(matrices)
        _plots.stage_cost_png([("distill", 0, 7, 9093)])
    assert said == ["simulated LLM: a dry run, not a model"] * 2 and marked != plain
    _plots.confusion_png(matrices)  # outside: nothing again
    assert len(said) == 2
