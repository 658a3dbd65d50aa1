"""C10's premise window at matched steps (`c10_window`): which checkpoints form the window, that stuck seeds are
read at the composing seeds' steps, and the intervals over seeds."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assignadd_core.experiments import c10_window


def metrics(m5, m4, m3, one_var, start=1, every=100):
    steps = [start + every * i for i in range(len(m5))]
    return pd.DataFrame({"step": steps, "m5_l1_value_prev_token": m5, "m4_l1_eq_to_operands": m4,
                         "m3_l2_var_identity_qk": m3, "1var_train": one_var})


def test_the_window_is_copying_and_reading_before_the_identity_pattern_and_before_composition():
    m = metrics(m5=[0.2, 0.96, 0.97, 0.99, 0.99, 0.99], m4=[0.95] * 6, m3=[0.1, 0.1, 0.2, 0.4, 0.3, 0.9],
                one_var=[0.1, 0.2, 0.3, 0.5, 0.95, 0.99])
    assert c10_window.window_steps(m) == [101, 201, 301]  # step 401 is composed although measure 3 is low
    low_eq = m.assign(m4_l1_eq_to_operands=[0.95, 0.95, 0.5, 0.95, 0.95, 0.95])
    assert c10_window.window_steps(low_eq) == [101, 301]
    assert c10_window.window_steps(m.assign(m5_l1_value_prev_token=0.5)) == []
    assert c10_window.window_steps(low_eq, "copying") == [101, 201, 301]  # copying, before composition
    with pytest.raises(ValueError, match="window must be one of"):
        c10_window.window_steps(m, "late")


def test_stuck_seeds_are_read_at_the_union_of_the_composing_seeds_windows(tiny_run, tmp_path):
    import shutil
    copy = type(tiny_run)(shutil.copytree(tiny_run.path, tmp_path / "tiny"))  # the reading caches into the run
    steps = copy.checkpoint_steps()
    composing = metrics(m5=[0.99] * 3, m4=[0.95] * 3, m3=[0.1] * 3, one_var=[0.2, 0.3, 0.95], every=10)
    stuck = metrics(m5=[0.99] * 3, m4=[0.2] * 3, m3=[0.1] * 3, one_var=[0.2] * 3, every=10)

    class Fake(type(tiny_run)):  # the tiny run's checkpoints with made-up metrics
        def __init__(self, m):
            super().__init__(copy.path)
            self.m = m

        def metrics(self):
            return self.m

    table = c10_window.read({1: Fake(composing), 2: Fake(stuck)})
    assert steps[:2] == [1, 11]
    assert table.groupby("seed")["step"].apply(list).to_dict() == {1: [1, 11], 2: [1, 11]}
    assert set(table["group"]) == {"composing", "stuck"}
    assert np.isfinite(table["grad_white_contrast"]).all() and np.isfinite(table["update_white_contrast"]).all()
    seeds = c10_window.per_seed(table)
    assert seeds["steps"].tolist() == [2, 2] and set(seeds["window"]) == {"premise"}
    own = c10_window.read({1: Fake(composing), 2: Fake(stuck)}, window="state")  # matched in state
    assert own.groupby("seed")["step"].apply(list).to_dict() == {1: [1, 11], 2: [1, 11, 21]}


def test_the_state_window_is_copying_with_measure_3_low_before_composition():
    m = metrics(m5=[0.2, 0.96, 0.97, 0.99, 0.99, 0.99], m4=[0.1] * 6, m3=[0.1, 0.1, 0.6, 0.4, 0.3, 0.9],
                one_var=[0.1, 0.2, 0.3, 0.5, 0.95, 0.99])
    assert c10_window.window_steps(m, "state") == [101, 301]  # `=` need not read the operands; 201's measure 3 is high
    assert c10_window.window_steps(m, "copying") == [101, 201, 301]


def test_matched_state_reads_each_seed_at_its_own_copying_steps_from_a_table():
    """A table made at matched steps (the stuck seed at the composing seed's steps 101-301) read again at each seed's
    own state steps: the stuck seed copies only from step 301, so of its own steps 301-501 the table holds 301."""
    table = pd.DataFrame({"window": "copying", "seed": [1, 1, 1, 2, 2, 2], "group": ["composing"] * 3 + ["stuck"] * 3,
                          "step": [101, 201, 301] * 2, "grad_white_contrast": [0.1, 0.2, 0.9, -0.5, -0.4, 0.3],
                          "update_white_contrast": [0.0, 0.2, 0.4, 0.1, 0.1, 0.5], "update_steps": 100})
    table = pd.concat([table, table.assign(window="premise")])  # the same seed and step in two windows: one reading
    runs = {1: metrics(m5=[0.99] * 5, m4=[0.9] * 5, m3=[0.1, 0.1, 0.1, 0.1, 0.9], one_var=[0.1, 0.1, 0.1, 0.1, 0.95]),
            2: metrics(m5=[0.5, 0.5, 0.5, 0.99, 0.99, 0.99], m4=[0.9] * 6, m3=[0.1] * 6, one_var=[0.1] * 6)}
    out = c10_window.matched_state(table, runs).set_index("seed")
    assert out.loc[1, ["steps", "wanted", "first", "last"]].tolist() == [3, 4, 101, 301]  # 1 not in the table
    assert out.loc[1, "gradient"] == pytest.approx(0.4) and out.loc[1, "update"] == pytest.approx(0.2)
    assert out.loc[2, ["group", "steps", "wanted", "first"]].tolist() == ["stuck", 1, 3, 301]
    assert out.loc[2, "gradient"] == pytest.approx(0.3) and out.loc[2, "update"] == pytest.approx(0.5)
    none = c10_window.matched_state(table[table["step"] < 301], runs).set_index("seed")
    assert none.loc[2, "steps"] == 0 and np.isnan(none.loc[2, "gradient"])  # the table holds none of its steps


def test_over_seeds_gives_a_t_interval_and_the_exact_sign_test():
    out = c10_window.over_seeds([0.1, 0.2, 0.3, 0.4, 0.5])
    assert out["mean"] == pytest.approx(0.3) and out["above"] == 5 and out["sign_p"] == pytest.approx(0.0625)
    assert out["low"] == pytest.approx(0.3 - 2.776445 * np.std([0.1, 0.2, 0.3, 0.4, 0.5], ddof=1) / np.sqrt(5), 1e-5)
    mixed = c10_window.over_seeds([0.1, -0.2, float("nan")])
    assert mixed["n"] == 2 and mixed["above"] == 1 and mixed["sign_p"] == 1.0 and mixed["low"] < 0 < mixed["high"]
    assert c10_window.over_seeds([])["n"] == 0

