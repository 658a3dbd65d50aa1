"""The sweep figure draws what was measured and nothing else."""
import numpy as np
import pandas as pd

from assignadd_core.analysis.thresholds import crossing
from assignadd_core.report.plots import sweep_figure

GRID = np.linspace(0.0616, 0.99, 5)


def frame(per_seed: dict) -> pd.DataFrame:
    return pd.DataFrame([{"train_fraction": x, "seed": seed, "status": "done" if np.isfinite(v) else "pending",
                          "value": v, "reason": ""} for seed, values in per_seed.items()
                         for x, v in zip(GRID, values)])


def traces(fig) -> dict:
    return {trace.name: trace for trace in fig.data}


def test_missing_points_break_the_line_and_are_marked():
    status = frame({42: [0.1, np.nan, 0.95, 0.97, 0.99]})
    fig = sweep_figure(status, "train_fraction", "t", "f", "acc", paper_value=0.25, level=0.9,
                       crossing=crossing(status["train_fraction"], status["value"]))
    line = traces(fig)["seed 42"]
    assert np.isnan(line.y[1]) and not line.connectgaps
    assert list(traces(fig)["not run yet"].x) == [GRID[1]]
    assert "mean over seeds" not in traces(fig)  # one seed: its line is the curve


def test_several_seeds_add_the_mean_curve_the_crossing_reads():
    status = frame({42: [0.1, 0.2, 0.95, 0.97, 0.99], 43: [0.1, 0.6, 0.85, np.nan, 0.99]})
    mean = traces(sweep_figure(status, "train_fraction", "t", "f", "acc"))["mean over seeds"]
    assert np.allclose(mean.y, [0.1, 0.4, 0.9, 0.97, 0.99])  # a missing seed is left out, not counted as 0


def test_the_fit_and_the_crossing_are_named_short_enough_to_share_a_legend_row():
    from assignadd_core.analysis.thresholds import logistic_fit
    x = np.repeat(GRID, 2)
    y = np.where(x >= GRID[2], 0.97, 0.1)
    status = frame({42: list(y[::2]), 43: list(y[1::2])})
    fit = logistic_fit(status["train_fraction"], status["value"])
    found = crossing(status["train_fraction"], status["value"])
    names = list(traces(sweep_figure(status, "train_fraction", "t", "f", "acc", paper_value=0.25, crossing=found,
                                     fit=fit)))
    assert f"logistic fit, midpoint {fit.midpoint:.3f}" in names and all(len(n) <= 50 for n in names)
    assert f"mean curve crosses, {found.value:.3f} (rule before 2026-12)" in names
