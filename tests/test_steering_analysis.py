"""Reading C10's causal test from its runs (`analysis.steering`): each run's arm, its first composed step, and the
per-seed inputs of `verdicts.c10_causal`."""
from __future__ import annotations

import numpy as np
import pytest
import pandas as pd

from assignadd_core.rules import verdicts
from assignadd_core.analysis import steering


def records(rows):
    return pd.DataFrame([{"status": "done", "last_step": 12000, **r} for r in rows])


def curve(values, every=100):
    return pd.DataFrame({"step": [1 + every * i for i in range(len(values))], "1var_train": values})


def test_arms_steps_and_the_rules_inputs():
    frame = records([
        {"key": "a", "seed": 42, "steer_to": np.nan, "steer_sham": np.nan, "1var_train": 0.99},
        {"key": "b", "seed": 42, "steer_to": 6000.0, "steer_sham": np.nan, "1var_train": 0.45},
        {"key": "c", "seed": 43, "steer_to": np.nan, "steer_sham": np.nan, "1var_train": 0.55},
        {"key": "d", "seed": 43, "steer_to": 8000.0, "steer_sham": np.nan, "1var_train": 0.97},
        {"key": "e", "seed": 43, "steer_to": 8000.0, "steer_sham": True, "1var_train": 0.56},
        {"key": "f", "seed": 44, "steer_to": np.nan, "steer_sham": np.nan, "1var_train": 0.99}])
    metrics = {"a": curve([0.2, 0.5, 0.95, 0.99]), "b": curve([0.2, 0.3, 0.4, 0.45]), "c": curve([0.5, 0.55]),
               "d": curve([0.5, 0.92, 0.97]), "e": curve([0.5, 0.56]), "f": curve([0.3, 0.91])}
    table = steering.arms_table(frame, metrics)
    assert table["arm"].tolist() == ["twin", "steered", "twin", "steered", "sham", "twin"]
    assert table["first_composed"].iloc[0] == 201 and pd.isna(table["first_composed"].iloc[1])
    removal = steering.removal_inputs(table, (42, 44, 49))
    assert removal == [{"seed": 42, "twin_at": 201, "removed_at": None}, {"seed": 44, "twin_at": 101}]
    assert steering.addition_inputs(table, (43, 45)) == [
        {"seed": 43, "twin": False, "steered": True, "sham": False},
        {"seed": 45, "twin": None, "steered": None, "sham": None}]
    # an unfinished arm leaves the verdict unread: seed 44's removal has not run, seed 45 has nothing yet
    assert verdicts.c10_causal(removal, steering.addition_inputs(table, (43, 45))).verdict == verdicts.INCONCLUSIVE


# ---------------------------------------------------------------------------- C10 at copying onset
def onset_metrics(one_var, m3, m5, every=100):
    n = len(one_var)
    return pd.DataFrame({"step": [1 + every * i for i in range(n)], "1var_train": one_var,
                         "m3_l2_var_identity_qk": m3, "m5_l1_value_prev_token": m5})


def test_time_to_compose_needs_the_stop_streak():
    m = curve([0.2, 0.95, 0.3, 0.92, 0.93, 0.95, 0.99])
    assert steering.time_to_compose(m, 3) == 301  # 101 composed once, then fell back
    assert steering.time_to_compose(m, 5) is None  # never held for 5: censored
    assert steering.time_to_compose(m.iloc[::-1], 1) == 101  # rows in any order


def test_onset_reading_reads_the_window_after_the_trigger():
    # trigger at 201; a window of 300 steps (202-501) holds the eval rows 301, 401, 501 (601 is past it)
    m = onset_metrics(one_var=[0.1, 0.2, 0.3, 0.4, 0.9, 0.95, 0.97], m3=[0.0, 0.1, 0.2, 0.6, 0.4, 0.3, 0.9],
                      m5=[0.5, 0.9, 0.96, 0.97, 0.98, 0.99, 1.0])
    r = steering.onset_reading(m, 201, 300, hold=2)
    assert (r["window_first"], r["window_last"], r["window_rows"]) == (301, 501, 3)
    assert r["m3_max"] == 0.6 and r["m3_mean"] == pytest.approx(1.3 / 3) and r["m5_mean"] == pytest.approx(0.98)
    assert (r["trigger"], r["composed_at"], r["held"], r["last_step"]) == (201, 401, True, 601)
    # composed only inside the window and fallen back after it: not held
    fell = m.assign(**{"1var_train": [0.1, 0.2, 0.95, 0.95, 0.95, 0.5, 0.5]})
    assert not steering.onset_reading(fell, 201, 300, hold=2)["held"]
    # never triggered: no window, nothing read in it
    never = steering.onset_reading(m, None, 300, hold=2)
    assert never["trigger"] is None and never["window_rows"] == 0 and np.isnan(never["m3_max"])


def test_onset_cells_gather_each_cell_s_arms():
    def arm(key, init, data, direction, share=0.0, started=201):
        return {"key": key, "init_seed": init, "seed": data, "steer_direction": direction, "steer_share": share,
                "steer_window": 300, "steer_started_after": started, "1var_train": 0.9}
    frame = records([arm("t", 1, 2, "none"), arm("r", 1, 2, "identity"), arm("s", 1, 2, "wrong_pairs"),
                     arm("p1", 3, 4, "identity", 1.0), arm("q1", 3, 4, "wrong_pairs", 1.0),
                     arm("p4", 3, 4, "identity", 4.0, started=np.nan), arm("t2", 3, 4, "none")])
    assert [steering.onset_arm(r)[0] for r in frame.to_dict("records")] == [
        "twin", "removal", "sham", "push", "push_sham", "push", "twin"]
    m = onset_metrics(one_var=[0.1, 0.2, 0.95, 0.95, 0.95], m3=[0.0, 0.1, 0.6, 0.7, 0.8], m5=[0.5, 1, 1, 1, 1])
    metrics = {key: m for key in frame["key"]}
    need = steering.onset_cells(frame, metrics, [(1, 2), (5, 6)], hold=2)
    assert need[0]["cell"] == "1/2" and need[0]["twin"]["trigger"] == 201 and need[0]["removal"]["m3_max"] == 0.8
    assert need[1] == {"cell": "5/6", "twin": None, "removal": None, "sham": None}  # not run yet
    push = steering.onset_cells(frame, metrics, [(3, 4)], hold=2, shares=(1.0, 4.0))[0]
    assert push["push"][1.0]["composed_at"] == 201 and push["push"][4.0]["trigger"] is None  # never triggered
    assert push["sham"] == {1.0: push["sham"][1.0], 4.0: None} and push["twin"] is not None


def test_hold_cells_take_the_twin_from_the_onset_sweep_and_the_arms_from_the_hold_sweep():
    import pandas as pd

    from assignadd_core.analysis.steering import hold_cells
    steps = list(range(1, 1002, 100))

    def metrics(m3):
        return pd.DataFrame({"step": steps, "1var_train": [0.95] * len(steps), "m3_l2_var_identity_qk": m3,
                             "m5_l1_value_prev_token": [1.0] * len(steps)})

    def record(key, direction):
        return {"key": key, "status": "done", "steer_direction": direction, "steer_share": 0.0, "steer_window": 500,
                "steer_started_after": 101, "init_seed": 1, "seed": 2}
    onset = pd.DataFrame([record("t", "none"), record("r", "identity"), record("s", "wrong_pairs")])
    held = pd.DataFrame([record("hr", "identity"), record("hs", "wrong_pairs")])
    readings = {"t": metrics([0.9] * 11), "r": metrics([0.8] * 11), "s": metrics([0.7] * 11),
                "hr": metrics([0.1] * 11), "hs": metrics([0.6] * 11)}
    cell, = hold_cells(onset, held, readings, [(1, 2)], hold=2)
    assert (cell["twin"]["m3_max"], cell["removal"]["m3_max"], cell["sham"]["m3_max"]) == (0.9, 0.1, 0.6)


def _cell(cell, removal, twin, sham):
    return {"cell": cell, "removal": {"composed_at": removal}, "twin": {"composed_at": twin},
            "sham": {"composed_at": sham}}


def test_by_initialization_counts_each_initialization_once():
    # nine cells from four initializations, every removal later: 9 of 9 cells, but 4 of 4 units (p = 1/16)
    cells = [_cell(f"{init}/{data}", None, 3000, 3100) for init, data in
             [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1), (4, 2)]]
    read = steering.by_initialization(cells, 0.05)
    assert read["initializations"] == 4 and read["cells"] == {"1": 3, "2": 2, "3": 2, "4": 2}
    assert read["twin"] == {"later": 4, "earlier": 0, "tied": 0, "p": pytest.approx(1 / 16)}
    assert read["floor_p"] == pytest.approx(1 / 16) and read["reading"] == "not shown"
    # five initializations all later pass; a split initialization is a tie and left out
    five = cells + [_cell("5/1", 9000, 3000, 3000)]
    assert steering.by_initialization(five, 0.05)["reading"] == "shown"
    split = cells + [_cell("5/1", 9000, 3000, 3000), _cell("5/2", 2000, 3000, 3000)]
    read = steering.by_initialization(split, 0.05)
    assert read["twin"]["tied"] == 1 and read["twin"]["p"] == pytest.approx(1 / 16)


def test_by_initialization_can_read_earlier():
    cells = [_cell(f"{i}/1", 1000, 3000, 3000) for i in range(6)]  # the removal composed earlier everywhere
    read = steering.by_initialization(cells, 0.05)
    assert read["twin"]["earlier"] == 6 and read["twin"]["p"] == 1.0 and read["reading"] == "not shown"
