"""C9's power calculation (`analysis.power`): the random-intercept fit recovers what it is given, the simulated power
is high for a sharp threshold and nil for a flat one, and the budget's repair step reads a plateau-then-jump run."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from assignadd_core.analysis import power


def simulated(a, b, sd, seeds=30, values=np.linspace(0.01, 0.63, 13), seed=1):
    rng = np.random.default_rng(seed)
    x, y, g = [], [], []
    for s in range(seeds):
        u = rng.normal(0, sd)
        for v in values:
            x.append(v), g.append(s)
            y.append(rng.random() < 1 / (1 + math.exp(-(a + b * v + u))))
    return np.array(x), np.array(y, float), np.array(g)


def test_the_random_intercept_fit_finds_a_slope_and_a_seed_spread_and_none_where_there_is_none():
    fit = power.fit_random_intercept(*simulated(-2.0, 10.0, 1.5))
    assert 5 < fit["b"] < 16 and 0.7 < fit["sd"] < 3.0
    flat = power.fit_random_intercept(*simulated(0.5, 0.0, 0.0, seed=2))
    assert abs(flat["b"]) < 2.5 and flat["sd"] < 0.6
    intercept_only = power.fit_random_intercept(np.zeros(60), np.r_[np.ones(45), np.zeros(15)], np.arange(60) % 6,
                                                slope=False)
    assert intercept_only["b"] == 0.0 and intercept_only["a"] == pytest.approx(math.log(3), abs=0.05)


def model(a, b, sd, comp_a=5.0):
    return {"composition": {"a": comp_a, "b": 0.0, "sd": 0.01}, "success": {"a": a, "b": b, "sd": sd}}


def test_power_is_high_for_a_sharp_threshold_and_nil_for_a_flat_one():
    low, high = np.linspace(0.01, 0.63, 13), np.linspace(0.68, 0.99, 7)
    sharp = power.seed_power(model(-6.0, 30.0, 0.01), low, high, seed_counts=(10,), sims=12, resamples=60)
    assert sharp["p_narrow"].iloc[0] >= 0.9 and sharp["median_width"].iloc[0] < 0.2
    flat = power.seed_power(model(0.0, 0.0, 0.5), low, high, seed_counts=(10,), sims=12, resamples=60)
    assert flat["p_narrow"].iloc[0] == 0.0  # no rise with r: no interval, never narrow enough


def test_the_simulated_data_set_has_the_sweeps_layout():
    data = power.simulate_sweep(model(-1.0, 7.0, 0.8, comp_a=-20.0), [0.1, 0.2], [0.9], n_seeds=4, high_seeds=2,
                          rng=np.random.default_rng(0))
    assert len(data) == 4 * 2 + 2 and set(data["seed"]) == {0, 1, 2, 3}
    assert (data["1var_train"] == 0).all()  # a composition log-odds of -20: no run composes


def test_the_seed_count_is_the_fewest_that_reach_the_target_and_at_least_the_minimum():
    table = pd.DataFrame({"seeds": [5, 10, 15, 20], "p_narrow": [0.3, 0.85, 0.81, 0.92]})
    assert power.choose_seeds(table) == 15  # 10 reaches 0.8 but the minimum is 15
    assert power.choose_seeds(table.assign(p_narrow=[0.3, 0.5, 0.7, 0.79])) == 20  # none reaches: the most tried
    assert power.choose_seeds(table.assign(p_narrow=[0.3, 0.5, 0.7, 0.85])) == 20


def metrics(levels, every=1000):
    steps = [1 + every * i for i in range(len(levels))]
    return pd.DataFrame({"step": steps, "2var_var_restricted_1": levels, "2var_var_restricted_2": levels})


def test_the_repair_step_is_where_the_pools_stay_up_and_a_run_still_low_is_censored():
    assert power.repair_step(metrics([0.3, 0.6, 0.62, 0.97, 0.99])) == 3001
    assert power.repair_step(metrics([0.3, 0.95, 0.6, 0.97, 0.99])) == 3001  # a dip: from where it stays
    assert math.isnan(power.repair_step(metrics([0.3, 0.6, 0.62, 0.6, 0.95])[:-1]))  # not by the end
    assert power.repair_step(metrics([0.95, 0.99])) == 1


def test_the_budget_table_counts_composed_runs_from_r_0_2_and_their_late_repairs():
    done = pd.DataFrame({"key": ["a", "b", "c", "d"], "seed": [42, 42, 43, 43], "two_var_rate": [0.1, 0.3, 0.3, 0.5],
                         "1var_train": [1.0, 1.0, 1.0, 0.2], "value": [0.5, 0.95, 0.6, 0.9], "last_step": 30000})
    logs = {"b": metrics([0.5] * 25 + [0.97] * 6), "c": metrics([0.5] * 31)}
    out = power.budget_table(done, logs.get)
    assert (out["runs"], out["succeeded"], out["with_metrics"]) == (2, 1, 2)  # a: r < 0.2; d: did not compose
    assert out["late"] == 1 and out["unrepaired"] == 1
