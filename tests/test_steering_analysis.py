"""Reading C10's causal test from its runs (`analysis.steering`): each run's arm, its first composed step, and the
per-seed inputs of `verdicts.c10_causal`."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assignadd_core import verdicts
from assignadd_core.analysis import steering


def records(rows):
    return pd.DataFrame([{"status": "done", "steps": 12000, **r} for r in rows])


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
