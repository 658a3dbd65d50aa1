"""Threshold estimates on synthetic sweep curves whose threshold is known."""
import math

import numpy as np
import pytest

from assignadd_core.analysis.thresholds import (claim_text, composition_by_value, crossing, logistic, logistic_fit,
                                                mean_curve, reached_earlier, seed_crossings, summary_report,
                                                threshold_summary, verdict)

GRID = np.linspace(0.0616, 0.99, 20)


@pytest.fixture(autouse=True)
def fewer_resamples(monkeypatch):
    """threshold_summary's bootstrap with 20 resamples instead of 500 (the same function, seconds instead of
    a minute for the file); a test that passes n_boot itself still gets its own."""
    import functools

    from assignadd_core.analysis import thresholds as th
    monkeypatch.setattr(th, "bootstrap_midpoint", functools.partial(th.bootstrap_midpoint, n_boot=20))


def test_logistic_fit_recovers_a_known_midpoint_from_noisy_seeds():
    rng = np.random.default_rng(0)
    x = np.concatenate([GRID, GRID])  # two seeds
    y = np.clip(logistic(x, 0.02, 0.99, 0.31, 0.03) + rng.normal(0, 0.02, x.size), 0, 1)
    fit = logistic_fit(x, y)
    assert fit.ok, fit.reason
    assert fit.midpoint == pytest.approx(0.31, abs=0.02)
    assert 0 < fit.midpoint_se < 0.05
    assert fit.n_points == 40
    assert fit(fit.midpoint) == pytest.approx((fit.low + fit.high) / 2)


def test_crossing_is_where_the_mean_curve_stays_above_the_level():
    y = np.where(GRID < 0.25, 0.1, 0.95)
    y[GRID.searchsorted(0.5)] = 0.85  # a dip later on moves the threshold past it
    result = crossing(GRID, y, level=0.9)
    after_dip = GRID[GRID.searchsorted(0.5) + 1]
    assert result.value == pytest.approx(after_dip)
    assert result.below == pytest.approx(GRID[GRID.searchsorted(0.5)])


def test_crossing_averages_seeds_and_ignores_missing_points():
    x = np.array([0.1, 0.1, 0.2, 0.2, 0.3, 0.4])
    y = np.array([0.8, 1.0, 0.95, 0.8, np.nan, 1.0])  # means 0.9, 0.875, (missing), 1.0
    values, means = mean_curve(x, y)
    assert list(values) == [0.1, 0.2, 0.4]
    assert means == pytest.approx([0.9, 0.875, 1.0])
    assert crossing(x, y, 0.9).value == pytest.approx(0.4)
    assert crossing(x, y, 0.9).below == pytest.approx(0.2)


def test_no_crossing_when_the_last_point_is_below_the_level():
    assert crossing(GRID, np.full(20, 0.5)).value is None
    assert crossing([], []).value is None
    first = crossing(GRID, np.ones(20))
    assert first.value == pytest.approx(GRID[0]) and first.below is None


def test_fit_refuses_too_few_points_or_a_flat_curve():
    few = logistic_fit(GRID[:4], np.array([0.0, 0.1, 0.9, 1.0]))
    assert not few.ok and "4 measured values" in few.reason
    flat = logistic_fit(GRID, np.full(20, 0.97))
    assert not flat.ok and "rises by less" in flat.reason
    assert math.isnan(flat.midpoint)


def status_frame(values, seeds=(42,), status="done"):
    import pandas as pd
    rows = [{"train_fraction": x, "seed": s, "status": status if np.isfinite(v) else "pending",
             "value": v} for s in seeds for x, v in zip(GRID, values)]
    return pd.DataFrame(rows)


def test_verdict_rule_follows_the_bracket_around_the_paper_value():
    curve = np.where(GRID < 0.25, 0.05, 0.99)  # first value at or above 0.9 is GRID[4] = 0.2571
    summary = threshold_summary(status_frame(curve), "train_fraction", paper=0.25)
    assert summary["complete"] and summary["crossing"].value == pytest.approx(GRID[4])
    assert summary["verdict"] == "reproduced"
    assert summary["fit"].ok and 0.2 < summary["fit"].midpoint < 0.26
    lo, hi = summary["fit"].interval  # the bootstrap interval over the runs is attached to the fit
    assert lo <= summary["fit"].midpoint <= hi
    assert summary["field"] == "train_fraction" and summary["paper"] == 0.25 and summary["level"] == 0.9
    late = np.where(GRID < 0.6, 0.05, 0.99)  # bracket (0.55, 0.60]: 0.30 from 0.25
    assert threshold_summary(status_frame(late), "train_fraction", paper=0.25)["verdict"] == "not reproduced"
    mid = np.where(GRID < 0.45, 0.05, 0.99)  # bracket (0.40, 0.45]: 0.15 away
    assert threshold_summary(status_frame(mid), "train_fraction", paper=0.25)["verdict"] == "partly"
    everywhere = np.full(20, 0.99)  # no threshold inside the grid
    assert threshold_summary(status_frame(everywhere), "train_fraction", paper=0.25)["verdict"] == "not reproduced"


def test_verdict_waits_for_every_grid_point():
    curve = np.where(GRID < 0.25, 0.05, 0.99)
    curve[7] = np.nan  # one point not run yet
    summary = threshold_summary(status_frame(curve), "train_fraction", paper=0.25)
    assert not summary["complete"] and summary["n_finished"] == 19
    assert summary["verdict"] == "not yet run"
    assert verdict(False, crossing(GRID, np.ones(20)), 0.25) == "not yet run"


def test_a_dip_under_the_level_makes_the_bracket_at_most_partly():
    curve = np.where(GRID < 0.25, 0.05, 0.99)
    curve[1] = 0.95  # reaches the level at 0.11 ...
    curve[3] = 0.80  # ... falls under it at 0.21, and stays above from 0.257 on
    summary = threshold_summary(status_frame(curve), "train_fraction", paper=0.25)
    assert summary["crossing"].value == pytest.approx(GRID[4]) and summary["crossing"].below == pytest.approx(GRID[3])
    assert summary["reached_earlier"] == [pytest.approx(GRID[1])]
    assert summary["verdict"] == "partly"  # the bracket alone would say "reproduced"
    assert reached_earlier(GRID, np.where(GRID < 0.25, 0.05, 0.99), crossing(GRID, np.where(GRID < 0.25, 0.05, 0.99))) == []


def test_fit_refuses_a_curve_whose_only_drop_is_a_dip():
    curve = np.full(20, 0.97)
    curve[0], curve[10] = 0.55, 0.38  # high almost everywhere, one deep dip in the middle
    fit = logistic_fit(GRID, curve)
    assert fit.ok is False and fit.n_points == 20
    assert fit.reason.startswith("the fit does not pin down a midpoint (got 0.0")


def test_the_report_states_the_bracket_the_dip_and_the_verdict():
    curve = np.where(GRID < 0.25, 0.05, 0.99)
    curve[1] = 0.95
    report = summary_report(threshold_summary(status_frame(curve), "train_fraction", paper=0.25), "f_sweep")
    assert f"threshold in ({GRID[3]:.3f}, {GRID[4]:.3f}]" in report
    assert f"already reached 0.9 at {GRID[1]:.3f}" in report
    assert report.endswith("paper: 0.25; verdict under the rule before 2026-12 (mean curve over every run): partly")
    assert "below the grid" in crossing(GRID, np.ones(20)).describe()
    assert "does not stay" in crossing(GRID, np.zeros(20)).describe()
    assert logistic_fit(GRID[:3], np.ones(3)).describe().startswith("none: only 3 measured values")


def test_a_point_exactly_at_the_level_reaches_it():
    x = np.array([0.1, 0.2, 0.3, 0.4])
    result = crossing(x, np.array([0.5, 0.9, 0.9, 1.0]), level=0.9)
    assert result.value == pytest.approx(0.2) and result.below == pytest.approx(0.1)
    last = crossing(x, np.array([0.5, 0.6, 0.7, 0.9]), level=0.9)
    assert last.value == pytest.approx(0.4) and last.below == pytest.approx(0.3)
    # an earlier point exactly at the level, then a dip: the earlier point already reached it
    dip = np.array([0.9, 0.5, 0.95, 0.95])
    assert reached_earlier(x, dip, crossing(x, dip, 0.9)) == [pytest.approx(0.1)]


def test_mean_curve_is_the_mean_over_seeds_not_the_median():
    values, means = mean_curve([0.1, 0.1, 0.1, 0.2], [0.0, 0.0, 0.9, 1.0])
    assert means == pytest.approx([0.3, 1.0])
    assert crossing([0.1, 0.1, 0.1, 0.2], [0.0, 0.0, 0.9, 1.0], 0.9).below == pytest.approx(0.1)


def test_points_with_a_missing_grid_value_are_left_out():
    values, means = mean_curve([0.1, np.nan, 0.2], [0.5, 1.0, 0.8])
    assert list(values) == [0.1, 0.2] and means == pytest.approx([0.5, 0.8])


def test_verdict_boundaries_are_inclusive():
    """Bracket (0.5, 0.75], paper 0.25: distance 0.25 (all values exact in binary)."""
    from assignadd_core.analysis.thresholds import Crossing
    found = Crossing(0.75, 0.5, 0.9)
    assert verdict(True, found, 0.25, close=0.25, near=0.5) == "reproduced"
    assert verdict(True, found, 0.25, close=0.125, near=0.25) == "partly"
    assert verdict(True, found, 0.25, close=0.0625, near=0.125) == "not reproduced"
    assert verdict(True, found, 0.625, close=0.0, near=0.0) == "reproduced"  # paper inside the bracket
    assert verdict(True, found, 0.25, close=0.25, near=0.5, earlier=[0.125]) == "partly"


def test_completeness_needs_one_seed_with_every_value():
    """Seed 42 finished every grid value (one of them failed, which counts as finished), seed 43 the
    first five, seed 44 none: complete, with results from seeds 42 and 43."""
    import pandas as pd
    curve = np.where(GRID < 0.25, 0.05, 0.99)
    partial = np.where(np.arange(20) < 5, curve, np.nan)
    frame = pd.concat([status_frame(curve, seeds=(42,)), status_frame(partial, seeds=(43,)),
                       status_frame(np.full(20, np.nan), seeds=(44,))])
    frame.loc[(frame["seed"] == 42) & (frame["train_fraction"] == GRID[10]), "status"] = "failed"
    summary = threshold_summary(frame, "train_fraction", paper=0.25)
    assert summary["complete"] and summary["n_finished"] == 20 and summary["n_values"] == 20
    assert summary["seeds"] == [42, 43]
    assert summary["verdict"] == "reproduced"
    assert summary["runs_finished"] == 25 and summary["runs_planned"] == 60
    assert claim_text(summary, "f").endswith("; seeds 42, 43 (25 of 60 planned runs finished)")
    assert "25 of 60 planned runs finished: the verdict can still change" in summary_report(summary, "f_sweep")
    every = threshold_summary(status_frame(curve, seeds=(42, 43)), "train_fraction", paper=0.25)
    assert claim_text(every, "f").endswith("; seeds 42, 43") and "planned runs" not in summary_report(every, "f_sweep")
    half = frame.copy()
    half.loc[(half["seed"] == 42) & (half["train_fraction"] > 0.5), "status"] = "pending"
    assert not threshold_summary(half, "train_fraction", paper=0.25)["complete"]


def test_bootstrap_midpoint_interval_contains_the_fit_and_shrinks_with_seeds():
    import numpy as np
    from assignadd_core.analysis import thresholds as th
    rng = np.random.default_rng(0)
    grid = np.linspace(0.06, 0.99, 20)

    def sample(seeds):
        x = np.repeat(grid, seeds)
        return x, np.clip(th.logistic(x, 0.05, 0.99, 0.25, 0.02) + rng.normal(0, 0.05, x.size), 0, 1)

    x2, y2 = sample(2)
    fit = th.logistic_fit(x2, y2)
    lo, hi = th.bootstrap_midpoint(x2, y2, n_boot=200)
    assert lo <= fit.midpoint <= hi and hi - lo < 0.1
    x8, y8 = sample(8)
    lo8, hi8 = th.bootstrap_midpoint(x8, y8, n_boot=200)
    assert hi8 - lo8 < hi - lo
    assert th.bootstrap_midpoint(grid, np.full(grid.size, 0.5), n_boot=20) is None  # flat: no fit to resample


def test_swap_control_crosses_each_curve_and_lists_runs_without_it():
    """A model that only looks up the swapped pair: the swap-in-training pairs are right from the start, the
    pairs whose swap is held out only from f = 0.5; a run trained before the control existed is listed."""
    import pandas as pd

    from assignadd_core.analysis.thresholds import swap_control
    f = [0.1, 0.3, 0.5, 0.7, 0.9]
    finished = pd.DataFrame({"train_fraction": f + [0.2], "seed": [42] * 6,
                             "swap_in_training": [1.0] * 5 + [math.nan],
                             "swap_heldout": [0.02, 0.03, 0.95, 0.97, 0.99, math.nan],
                             "value": [0.7, 0.72, 0.96, 0.98, 0.99, 0.5],
                             "n_swap_heldout": [900, 400, 200, 90, 10, math.nan],
                             "n_swap_in_training": [300, 800, 600, 500, 60, math.nan]})
    control = swap_control(finished, "train_fraction", level=0.9)
    assert control["table"]["train_fraction"].tolist() == f
    assert control["crossings"]["swap_in_training"].value == 0.1 and control["crossings"]["swap_in_training"].below is None
    assert (control["crossings"]["swap_heldout"].value, control["crossings"]["swap_heldout"].below) == (0.5, 0.3)
    assert (control["crossings"]["value"].value, control["crossings"]["value"].below) == (0.5, 0.3)
    assert control["missing"].to_dict("records") == [{"train_fraction": 0.2, "seed": 42}]


def test_swap_control_without_the_columns_lists_every_run():
    import pandas as pd

    from assignadd_core.analysis.thresholds import swap_control
    finished = pd.DataFrame({"train_fraction": [0.3, 0.6], "seed": [42, 43], "value": [0.5, 0.9],
                             "swap_heldout": [math.nan, math.nan], "swap_in_training": [math.nan, math.nan],
                             "n_swap_heldout": [math.nan, math.nan], "n_swap_in_training": [math.nan, math.nan]})
    control = swap_control(finished, "train_fraction")
    assert len(control["table"]) == 0 and len(control["missing"]) == 2
    assert control["crossings"]["swap_heldout"].value is None


def test_swap_control_of_a_sweep_not_run_yet_is_empty_with_its_columns():
    import pandas as pd

    from assignadd_core.analysis.thresholds import SWAP_COLUMNS, swap_control
    control = swap_control(pd.DataFrame(), "train_fraction")  # the results of a sweep with no record: no columns
    assert len(control["table"]) == 0 and {"train_fraction", "seed", *SWAP_COLUMNS} <= set(control["table"].columns)
    assert list(control["missing"].columns) == ["train_fraction", "seed"] and len(control["missing"]) == 0
    assert all(c.value is None for c in control["crossings"].values())


def test_a_sweep_not_run_yet_has_no_seed_crossings_and_no_composition_rate():
    import pandas as pd

    from assignadd_core.analysis.thresholds import composition_by_value, logistic_threshold, seed_crossings
    not_run = pd.DataFrame(columns=["train_fraction", "seed", "1var_train", "value"])  # results_frame's empty table
    assert seed_crossings(not_run, "train_fraction") == []
    assert logistic_threshold(not_run, "train_fraction") == {"threshold": None, "interval": None, "seeds": 0, "runs": 0,
                                                             "unbounded": 0}
    rates = composition_by_value(not_run, "train_fraction")
    assert rates.empty and list(rates.columns) == ["train_fraction", "composed", "runs", "rate", "low", "high"]


# ---------------------------------------------------------------------------- texts and edge cases, by hand
def hand_summary(**changes):
    from assignadd_core.analysis.thresholds import Crossing, LogisticFit
    summary = {"complete": True, "n_finished": 20, "n_values": 20, "level": 0.9, "paper": 0.25,
               "crossing": Crossing(0.3, 0.2, 0.9), "reached_earlier": [], "seeds": [42, 43], "verdict": "partly",
               "runs_finished": 40, "runs_planned": 40,
               "fit": LogisticFit(True, "", midpoint=0.25, n_points=40, interval=(0.2, 0.3125))}
    summary.update(changes)
    return summary


def test_claim_text_states_the_crossing_the_dip_the_midpoint_and_the_seeds():
    from assignadd_core.analysis.thresholds import Crossing, LogisticFit, claim_text
    assert claim_text(hand_summary(), "f") == ("crossing of 0.9: f* ≈ 0.300, threshold in (0.200, 0.300];"
                                                " logistic midpoint 0.250 (95 % bootstrap interval 0.200–0.312;"
                                                " 40 points); seeds 42, 43")
    dip = claim_text(hand_summary(reached_earlier=[0.1, 0.15], fit=LogisticFit(False, "flat")), "r")
    assert dip == ("crossing of 0.9: r* ≈ 0.300, threshold in (0.200, 0.300]; but ≥ 0.9 already at 0.100, 0.150,"
                   " then a dip; seeds 42, 43")
    never = claim_text(hand_summary(crossing=Crossing(None, None, 0.8), level=0.8, fit=LogisticFit(False, "x"),
                                    seeds=[7]), "f")
    assert never == "f: accuracy never stays ≥ 0.8; seeds 7"
    assert claim_text(hand_summary(complete=False, n_finished=3), "f") == "3 of 20 grid values run so far"


def test_logistic_fit_describe_with_and_without_an_interval():
    from assignadd_core.analysis.thresholds import LogisticFit, values_text
    assert LogisticFit(True, "", midpoint=0.25, n_points=12).describe() == "0.250 (no bootstrap interval; 12 points)"
    assert LogisticFit(True, "", midpoint=0.25, n_points=12, interval=(0.125, 0.375)).describe() == \
        "0.250 (95 % bootstrap interval 0.125–0.375; 12 points)"
    assert values_text([0.1, 0.25]) == "0.100, 0.250"


def test_verdict_when_the_paper_value_lies_above_the_bracket():
    from assignadd_core.analysis.thresholds import Crossing
    found = Crossing(0.5, 0.25, 0.9)  # bracket (0.25, 0.5]
    assert verdict(True, found, 0.75, close=0.1, near=0.2) == "not reproduced"  # 0.25 above it
    assert verdict(True, found, 0.625, close=0.1, near=0.2) == "partly"  # 0.125 above it
    assert verdict(True, found, 0.5625, close=0.1, near=0.2) == "reproduced"


def test_summary_and_report_before_any_result():
    pending = status_frame(np.full(20, np.nan))
    summary = threshold_summary(pending, "train_fraction", paper=0.25)
    assert (summary["n_finished"], summary["complete"], summary["seeds"]) == (0, False, [])
    assert summary["verdict"] == "not yet run" and summary["crossing"].value is None
    report = summary_report(summary, "f_sweep").splitlines()
    assert report == ["f_sweep: 0 of 20 grid values finished; seeds with results: []",
                      "crossing: none yet (no grid value measured)",
                      "logistic midpoint: none: only 0 measured values (a fit needs 5)",
                      "paper: 0.25; verdict under the rule before 2026-12 (mean curve over every run): not yet run"]


def test_summary_report_lines():
    report = summary_report(hand_summary(), "f_sweep").splitlines()
    assert report == ["f_sweep: 20 of 20 grid values finished; seeds with results: [42, 43]",
                      "crossing (first value from which every point reaches 0.9): 0.300, threshold in (0.200, 0.300]",
                      "logistic midpoint: 0.250 (95 % bootstrap interval 0.200–0.312; 40 points)",
                      "paper: 0.25; verdict under the rule before 2026-12 (mean curve over every run): partly"]


def test_the_level_is_passed_on():
    curve = np.where(GRID < 0.25, 0.05, np.where(GRID < 0.5, 0.6, 0.99))
    summary = threshold_summary(status_frame(curve), "train_fraction", paper=0.25, level=0.5)
    assert summary["crossing"].value == pytest.approx(GRID[4]) and summary["crossing"].level == 0.5


def test_swap_control_default_level_and_columns():
    import pandas as pd

    from assignadd_core.analysis.thresholds import SWAP_COLUMNS, swap_control
    finished = pd.DataFrame({"train_fraction": [0.5, 0.1], "seed": [42, 42], "value": [0.95, 0.6],
                             "swap_heldout": [0.92, 0.4], "swap_in_training": [0.97, 0.7],
                             "n_swap_heldout": [10, 90], "n_swap_in_training": [40, 30]})
    control = swap_control(finished, "train_fraction")
    assert list(control["table"].columns) == ["train_fraction", "seed", *SWAP_COLUMNS, "n_swap_heldout",
                                              "n_swap_in_training"]
    assert control["table"]["train_fraction"].tolist() == [0.1, 0.5]
    assert all(c.level == 0.9 and c.value == 0.5 for c in control["crossings"].values())
    assert swap_control(finished, "train_fraction", level=0.5)["crossings"]["swap_heldout"].value == 0.5
    assert swap_control(finished, "train_fraction", level=0.5)["crossings"]["swap_in_training"].value == 0.1


def test_logistic_fit_recovers_every_parameter_of_a_clean_curve():
    fit = logistic_fit(GRID, logistic(GRID, 0.1, 0.9, 0.5, 0.1))
    assert fit.ok and fit.reason == "" and fit.n_points == 20
    assert (fit.low, fit.high, fit.midpoint, fit.width) == pytest.approx((0.1, 0.9, 0.5, 0.1), abs=1e-6)
    # a midpoint between the last two grid values is inside the measured range
    edge = logistic_fit(GRID, logistic(GRID, 0.05, 0.99, 0.97, 0.01))
    assert GRID[-2] < 0.97 < GRID[-1] and edge.ok and edge.midpoint == pytest.approx(0.97, abs=1e-6)


def test_logistic_fit_levels_stay_within_0_and_1():
    """A curve still rising at the end of the grid (clipped at 1): the fitted high level is an accuracy."""
    fit = logistic_fit(GRID, np.clip(logistic(GRID, 0.0, 2.0, 0.9, 0.15), 0, 1))
    assert fit.ok and 0.0 <= fit.low and fit.high <= 1.0


def test_logistic_fit_limits_are_inclusive_and_refusals_are_false_with_the_point_count():
    five = np.linspace(0.1, 0.9, 5)
    assert logistic_fit(five, logistic(five, 0.0, 1.0, 0.5, 0.1)).ok  # five values are enough
    six = np.linspace(0.1, 0.9, 6)  # rises by exactly 0.5 (0.25 -> 0.75, exact in binary)
    assert logistic_fit(six, np.array([0.25, 0.25, 0.25, 0.75, 0.75, 0.75])).ok
    few = logistic_fit(np.repeat(GRID[:4], 2), np.repeat([0.0, 0.1, 0.9, 1.0], 2))
    assert few.ok is False and few.n_points == 8 and few.reason == "only 4 measured values (a fit needs 5)"
    flat = logistic_fit(GRID, np.full(20, 0.97))
    assert flat.ok is False and flat.n_points == 20
    assert flat.reason == "the curve rises by less than 0.5 within the measured range"


def test_bootstrap_midpoint_is_seeded_and_a_zero_level_interval_is_one_point():
    from assignadd_core.analysis.thresholds import bootstrap_midpoint
    rng = np.random.default_rng(0)
    x = np.repeat(GRID, 2)
    y = np.clip(logistic(x, 0.05, 0.99, 0.25, 0.02) + rng.normal(0, 0.05, x.size), 0, 1)
    first = bootstrap_midpoint(x, y, n_boot=20)
    assert first == bootstrap_midpoint(x, y, n_boot=20) and first[0] < first[1]
    lo, hi = bootstrap_midpoint(x, y, n_boot=20, level=0.0)  # the median resampled midpoint
    assert lo == hi and first[0] <= lo <= first[1]


def test_a_midpoint_between_the_first_two_grid_values_is_inside_the_range():
    fit = logistic_fit(GRID, logistic(GRID, 0.05, 0.99, 0.08, 0.005))
    assert fit.ok and GRID[0] < fit.midpoint < GRID[1]


def test_a_fit_that_fails_is_refused_with_the_error(monkeypatch):
    import scipy.optimize

    def fail(*args, **kwargs):
        raise RuntimeError("Optimal parameters not found")

    monkeypatch.setattr(scipy.optimize, "curve_fit", fail)
    fit = logistic_fit(GRID, logistic(GRID, 0.1, 0.9, 0.5, 0.1))
    assert (fit.ok, fit.reason, fit.n_points) == (False, "fit did not converge (Optimal parameters not found)", 20)


def test_missing_points_given_as_none_are_left_out():
    values, means = mean_curve([0.1, 0.2, None, 0.3], [0.5, None, 0.8, 1.0])
    assert list(values) == [0.1, 0.3] and means == pytest.approx([0.5, 1.0])


def test_swap_control_of_records_that_never_had_the_columns():
    """Sweep files written before the control existed have no swap columns at all: every run is listed."""
    import pandas as pd

    from assignadd_core.analysis.thresholds import swap_control
    finished = pd.DataFrame({"train_fraction": [0.3, 0.6], "seed": [42, 43], "value": [0.5, 0.9]})
    control = swap_control(finished, "train_fraction")
    assert len(control["table"]) == 0 and control["missing"]["seed"].tolist() == [42, 43]


def test_coverage_or_frequency_reads_the_crossing_of_each_sweep_on_the_runs_that_learned_variables():
    """A pool that needs coverage: with every pair covered it is right from the smallest r, with rows kept
    only from r = 0.3; a run that never learned variable assignment (1var_train 0.6) and a seed only one
    sweep has are left out of both curves."""
    import pandas as pd

    from assignadd_core.analysis.thresholds import coverage_or_frequency
    r = [0.01, 0.1, 0.3, 0.6]
    rows = pd.DataFrame({"two_var_rate": r + [0.6, 0.1], "seed": [42] * 5 + [43],
                         "1var_train": [1.0, 1.0, 1.0, 0.6, 1.0, 1.0], "pool": [0.3, 0.7, 0.95, 0.4, 0.97, 0.99]})
    share = pd.DataFrame({"two_var_rate": r, "seed": [42] * 4, "1var_train": [1.0] * 4,
                          "pool": [0.92, 0.95, 0.96, 0.97]})
    result = coverage_or_frequency(rows, share, "two_var_rate", "pool")
    assert result["seeds"] == [42] and result["answer"] == "coverage"
    assert (result["rows"].value, result["rows"].below) == (0.3, 0.1) and result["share"].below is None
    table = result["table"].set_index("two_var_rate")
    assert table.loc[0.6, "rows"] == 0.97  # the unlearned seed-42 run at 0.6 is dropped, seed 43 is not shared
    assert table.loc[0.01, "share - rows"] == pytest.approx(0.62)


@pytest.mark.parametrize("share_pool, answer", [([0.3, 0.7, 0.95, 0.97], "frequency"),
                                                ([0.3, 0.7, 0.85, 0.97], "neither"),
                                                ([0.3, 0.7, 0.95, 0.5], "undecided")])
def test_coverage_or_frequency_answers(share_pool, answer):
    import pandas as pd

    from assignadd_core.analysis.thresholds import coverage_or_frequency
    r = [0.01, 0.1, 0.3, 0.6]
    rows = pd.DataFrame({"two_var_rate": r, "seed": [42] * 4, "1var_train": [1.0] * 4, "pool": [0.3, 0.7, 0.95, 0.97]})
    share = rows.assign(pool=share_pool)
    assert coverage_or_frequency(rows, share, "two_var_rate", "pool")["answer"] == answer


def test_coverage_or_frequency_keeps_runs_at_the_level_lists_every_value_and_uses_the_level_given():
    """1var_train exactly at the level counts as learned; a value only one sweep measured stays in the table
    (with a gap for the other); the crossings use the level passed, not 0.9."""
    import pandas as pd

    from assignadd_core.analysis.thresholds import coverage_or_frequency
    rows = pd.DataFrame({"two_var_rate": [0.01, 0.1, 0.3], "seed": [42] * 3, "1var_train": [0.95, 0.95, 0.95],
                         "pool": [0.5, 0.93, 0.97]})
    share = pd.DataFrame({"two_var_rate": [0.01, 0.1, 0.3, 0.8], "seed": [42] * 4,
                          "1var_train": [0.95, 0.95, 0.95, 0.95], "pool": [0.5, 0.96, 0.97, 0.98]})
    result = coverage_or_frequency(rows, share, "two_var_rate", "pool", level=0.95)
    assert result["table"]["two_var_rate"].tolist() == [0.01, 0.1, 0.3, 0.8]
    assert math.isnan(result["table"].set_index("two_var_rate").loc[0.8, "rows"])
    assert result["rows"].value == 0.3 and result["share"].value == 0.1 and result["answer"] == "coverage"
    assert coverage_or_frequency(rows, share, "two_var_rate", "pool")["answer"] == "frequency"  # at 0.9: both 0.1
    at_level = rows.assign(**{"1var_train": [0.9, 0.9, 0.9]})
    assert len(coverage_or_frequency(at_level, share, "two_var_rate", "pool")["table"].dropna()) == 3


def test_composition_by_value_and_seed_crossings_read_composed_runs_only():
    import pandas as pd
    done = pd.DataFrame({"r": [0.1, 0.1, 0.2, 0.2, 0.3, 0.3], "seed": [1, 2, 1, 2, 1, 2],
                         "1var_train": [0.99, 0.55, 0.99, 0.99, 0.99, 0.99],
                         "value": [0.5, 0.42, 0.95, 0.93, 0.97, 0.96]})
    rates = composition_by_value(done, "r")
    assert rates["composed"].tolist() == [1, 2, 2] and rates["runs"].tolist() == [2, 2, 2]
    assert rates.loc[0, "low"] < 0.5 < rates.loc[0, "high"]
    crossings = {c.seed: c for c in seed_crossings(done, "r")}
    assert (crossings[1].value, crossings[1].below, crossings[1].runs) == (0.2, 0.1, 3)
    assert (crossings[2].value, crossings[2].below, crossings[2].runs) == (0.2, None, 2)  # its r = 0.1 run never composed


# ---------------------------------------------------------------------------- C9's rule (2026-12-02)
def _sweep_runs(thresholds, noise=0.0, seed=0):
    """Composed runs of one seed per threshold, on the r grid: success (value 1) above the seed's threshold."""
    import numpy as np
    import pandas as pd
    from assignadd_core.experiments.sweep.grid import R_GRID
    rng = np.random.default_rng(seed)
    rows = []
    for s, t in enumerate(thresholds):
        for r in R_GRID[:13]:
            ok = (r >= t) if noise == 0 else rng.random() < 0.5
            rows.append({"seed": 100 + s, "two_var_rate": r, "1var_train": 1.0, "value": 1.0 if ok else 0.5})
    return pd.DataFrame(rows)


def test_c9_fit_reproduces_discriminates_and_says_inconclusive():
    from assignadd_core.rules import verdicts
    from assignadd_core.analysis.thresholds import logistic_threshold
    near = logistic_threshold(_sweep_runs([0.17, 0.19, 0.21, 0.22, 0.2]), "two_var_rate", resamples=300)
    assert 0.15 < near["threshold"] < 0.25 and near["seeds"] == 5
    assert verdicts.c9_threshold(near, [], 0.629).verdict == verdicts.REPRODUCED
    far = logistic_threshold(_sweep_runs([0.5, 0.52, 0.55, 0.48, 0.5]), "two_var_rate", resamples=300)
    assert verdicts.c9_threshold(far, [], 0.629).verdict == verdicts.NOT_REPRODUCED  # the rule can fail
    spread = logistic_threshold(_sweep_runs([0.05, 0.6, 0.1, 0.55, 0.3]), "two_var_rate", resamples=300)
    assert verdicts.c9_threshold(spread, [], 0.629).verdict == verdicts.INCONCLUSIVE  # seeds disagree: too wide
    null = logistic_threshold(_sweep_runs([0] * 5, noise=1.0), "two_var_rate", resamples=300)
    assert verdicts.c9_threshold(null, [], 0.629).verdict == verdicts.INCONCLUSIVE
    few = logistic_threshold(_sweep_runs([0.2, 0.2]), "two_var_rate", resamples=100)
    assert verdicts.c9_threshold(few, [], 0.629).verdict == verdicts.INCONCLUSIVE  # fewer than 3 seeds


def test_firths_fit_of_separated_runs_stays_at_the_gap_however_many_runs():
    """A clean threshold between 0.19 and 0.22 (separated data): the midpoint lies in the gap for 13 or 130 runs a
    value (before 2026-12-04 an unhalved Newton step could leave it at a meaningless point, e.g. -0.72)."""
    from assignadd_core.analysis.thresholds import firth_logistic
    x = np.repeat(np.linspace(0.01, 0.63, 13), 10)
    for runs in (x[::10], x):
        intercept, slope = firth_logistic(runs, runs > 0.2)
        assert slope > 0 and 0.16 < -intercept / slope < 0.22
    intercept, slope = firth_logistic(x, np.resize([True, False], len(x)))  # no relation: a flat fit
    assert abs(slope) < 1.0


def test_c9_waits_for_every_planned_run_and_names_the_devices():
    import pandas as pd

    from assignadd_core.rules import verdicts
    from assignadd_core.analysis.thresholds import c9_runs, logistic_threshold
    old = _sweep_runs([0.17, 0.19, 0.21, 0.22, 0.2]).assign(status="done", device="cpu")
    new = _sweep_runs([0.15, 0.25, 0.19]).assign(status="done", device="cuda", seed=lambda d: d["seed"] + 10)
    pending = new.iloc[:2].assign(status="pending")
    runs, devices = c9_runs([old, pd.concat([new, pending])])
    assert len(runs) == len(old) + len(new) and devices == {"cpu": [100, 101, 102, 103, 104],
                                                            "cuda": [110, 111, 112]}
    fit = logistic_threshold(runs, "two_var_rate", resamples=300)
    assert fit["seeds"] == 8
    read = verdicts.c9_threshold(fit, [], 0.629, runs_finished=len(runs), runs_planned=len(runs), devices=devices)
    assert read.verdict == verdicts.REPRODUCED
    assert "devices differ: cpu for seeds 100-104; cuda for seeds 110-112" in read.text
    one_device = verdicts.c9_threshold(fit, [], 0.629, runs_finished=len(runs), runs_planned=len(runs),
                                       devices={"cpu": devices["cpu"] + devices["cuda"]})
    assert "every run on cpu (seeds 100, 101, 102, 103, 104, 110, 111, 112)" in one_device.text
    assert "differ" not in one_device.text
    waiting = verdicts.c9_threshold(fit, [], 0.629, runs_finished=len(runs), runs_planned=len(runs) + 2)
    assert waiting.verdict == verdicts.NOT_YET_RUN and "of" in waiting.text


def test_censored_crossings_count_above_the_grid():
    from assignadd_core.rules.verdicts import SeedCrossing, censored_median
    cross = [SeedCrossing(1, 0.1, None, 5), SeedCrossing(2, None, None, 5), SeedCrossing(3, 0.3, 0.25, 5)]
    assert censored_median(cross, 0.629)["crossing"] == 0.3  # the censored seed sorts above, not dropped
    cross[0] = SeedCrossing(1, None, None, 5)
    out = censored_median(cross, 0.629)
    assert out["crossing"] is None and out["censored"] == 2 and "above the grid" in out["text"]


def test_c9_figure_draws_what_the_fit_reads():
    import numpy as np

    from assignadd_core.analysis.thresholds import logistic_curve, logistic_threshold, success_by_value
    from assignadd_core.report.plots import threshold_fit_figure
    runs = _sweep_runs([0.17, 0.19, 0.21, 0.22, 0.2])
    runs.loc[0, "1var_train"] = 0.3  # a run that never composed is not read
    table = success_by_value(runs, "two_var_rate")
    assert len(table) == 13 and table["runs"].sum() == len(runs) - 1 and table.loc[0, "runs"] == 4
    assert table["share"].iloc[0] == 0 and table["share"].iloc[-1] == 1
    assert (table["low"] <= table["share"]).all() and (table["share"] <= table["high"]).all()
    fit = logistic_threshold(runs, "two_var_rate", resamples=200)
    # the curve crosses 50 % at the fit's midpoint, and rises
    assert abs(logistic_curve(runs, "two_var_rate", [fit["threshold"]])[0] - 0.5) < 1e-6
    curve = logistic_curve(runs, "two_var_rate", table["two_var_rate"])
    assert np.all(np.diff(curve) >= 0) and curve[0] < 0.01 and curve[-1] > 0.99  # rises (kept to 6 digits: 1 at the top)
    assert np.isnan(logistic_curve(runs.assign(value=1.0), "two_var_rate", [0.2])).all()  # nothing to fit
    figure = threshold_fit_figure(table, "two_var_rate", table["two_var_rate"], curve, fit["threshold"],
                                  fit["interval"], title="t", x_label="r", paper_value=0.2)
    assert list(figure.data[0].x) == list(table["two_var_rate"]) and len(figure.data[1].y) == 13
    names = " ".join(trace.name for trace in figure.data)
    assert "midpoint" in names and "95 % interval" in names and "paper" in names
    open_ended = threshold_fit_figure(table, "two_var_rate", table["two_var_rate"], curve, fit["threshold"],
                                      (float("-inf"), 0.3), title="t", x_label="r")
    assert "95 % interval below the grid to 0.300" in " ".join(trace.name for trace in open_ended.data)


def test_a_fits_stored_numbers_are_the_same_whatever_the_cpus_last_bits():
    """What a chapter stores and draws of a fit (C9's threshold and interval, its success curve, the older rule's
    logistic curve) is kept to a few significant digits: recomputed on inputs moved in their last bit (as another CPU's
    linear algebra or vectorised exp rounds), the raw fit moves in its last digits, the stored numbers do not."""
    from assignadd_core.analysis import thresholds as th
    runs = _sweep_runs([0.17, 0.19, 0.21, 0.22, 0.2, 0.18, 0.25], noise=0.0).assign(
        value=lambda d: np.where(np.random.default_rng(3).random(len(d)) < 0.1, 1.5 - d["value"], d["value"]))
    moved = runs.assign(two_var_rate=np.nextafter(runs["two_var_rate"].to_numpy(), 1.0))
    raw = [th._midpoint(d["two_var_rate"].to_numpy(), (d["value"] >= 0.9).to_numpy()) for d in (runs, moved)]
    assert raw[0] != raw[1] and abs(raw[0] - raw[1]) < 1e-12  # the raw fit moved in its last bits
    a, b = (th.logistic_threshold(d, "two_var_rate", resamples=200) for d in (runs, moved))
    assert a == b and a["threshold"] is not None and a["interval"][0] < a["threshold"] < a["interval"][1]
    xs = np.linspace(0.01, 0.63, 101)
    assert np.array_equal(th.logistic_curve(runs, "two_var_rate", xs), th.logistic_curve(moved, "two_var_rate", xs))
    x = np.repeat(GRID, 3)
    y = logistic(x, 0.05, 0.97, 0.35, 0.04) + np.random.default_rng(4).normal(0, 0.03, len(x))
    fits = [logistic_fit(x, y), logistic_fit(np.nextafter(x, 1.0), y)]
    assert fits[0].ok and fits[0].midpoint != fits[1].midpoint  # the raw fit moved in its last bits
    assert np.array_equal(fits[0](GRID), fits[1](GRID))
    assert th.cpu_independent(0.25506253642614135) == th.cpu_independent(0.2550625364261414) == 0.25506254
    assert th.cpu_independent((math.inf, math.nan))[0] == math.inf and math.isnan(th.cpu_independent(math.nan))


def test_c9_figure_draws_the_fit_with_each_seed_left_out_below_it():
    import pandas as pd

    from assignadd_core.report.palette import VERDICT_COLORS
    from assignadd_core.report.plots import threshold_fit_figure
    table = pd.DataFrame({"two_var_rate": [0.1, 0.2, 0.3], "share": [0.1, 0.5, 0.9], "low": [0.0, 0.2, 0.6],
                          "high": [0.4, 0.8, 1.0], "succeeded": [1, 5, 9], "runs": [10, 10, 10], "seeds": [5, 5, 5]})
    left_out = pd.DataFrame({"left_out": [43, 42, 44], "threshold": [0.2, 0.21, 0.19], "low": [0.1, 0.12, 0.05],
                             "high": [0.3, 0.29, 0.31]}).assign(width=lambda t: t["high"] - t["low"])
    figure = threshold_fit_figure(table, "two_var_rate", [0.1, 0.3], [0.1, 0.9], 0.2, (0.11, 0.3), title="t",
                                  x_label="r", paper_value=0.2, left_out=left_out, limit=0.2)
    names = [trace.name for trace in figure.data]
    assert "one seed left out, width ≤ 0.2" in names and "wider than 0.2" in names
    wide = next(t for t in figure.data if t.name == "wider than 0.2")
    assert wide.line.color == VERDICT_COLORS["inconclusive"] and set(wide.y) - {None} == {"without 44"}  # 0.26 > 0.2
    assert list(figure.layout.yaxis2.tickvals) == ["without 44", "without 43", "without 42"]  # every seed named
    assert sum(s.type == "rect" for s in figure.layout.shapes) == 2  # the full fit's interval shades both panels
    narrow = threshold_fit_figure(table, "two_var_rate", [0.1, 0.3], [0.1, 0.9], 0.2, (0.11, 0.3), title="t",
                                  x_label="r", left_out=left_out.iloc[:2], limit=0.2)
    assert "wider than 0.2" not in [trace.name for trace in narrow.data]
    alone = threshold_fit_figure(table, "two_var_rate", [0.1, 0.3], [0.1, 0.9], 0.2, (0.11, 0.3), title="t",
                                 x_label="r")
    assert "yaxis2" not in alone.layout and alone.layout.height == 460  # without the check: one panel, as before
