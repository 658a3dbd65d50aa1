"""C10's causal test read from its runs (sweeps c10_remove and c10_add, `steer`): per seed, when the twin and the
steered runs compose, in the form `verdicts.c10_causal` reads.

Inputs are a sweep's results frame (one row per run: seed, the steering fields, final pools) and its runs' metrics
tables (every 100 steps), as for the composition study.
"""
from __future__ import annotations

import pandas as pd

from ..verdicts import LEARNED_LEVEL

ARMS = ("twin", "steered", "sham")


def arm(record: dict) -> str:
    """Which arm a run is: its unsteered twin, the identity component steered, or the sham."""
    steer_to = record.get("steer_to")
    if steer_to is None or pd.isna(steer_to) or not steer_to:
        return "twin"
    sham = record.get("steer_sham")
    return "sham" if sham is not None and not pd.isna(sham) and bool(sham) else "steered"


def first_composed(metrics: pd.DataFrame | None) -> int | None:
    """The first eval step with 1-var train ≥ LEARNED_LEVEL (None: never)."""
    if metrics is None:
        return None
    hits = metrics.loc[metrics["1var_train"] >= LEARNED_LEVEL, "step"]
    return int(hits.min()) if len(hits) else None


def arms_table(records: pd.DataFrame, metrics: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per finished run: seed, arm, first composed step, whether it ended composed, steps trained."""
    rows = []
    for record in records[records["status"] == "done"].to_dict("records"):
        rows.append({"seed": int(record["seed"]), "arm": arm(record), "key": record["key"],
                     "first_composed": first_composed(metrics.get(record["key"])),
                     "ended_composed": bool(record["1var_train"] >= LEARNED_LEVEL), "steps": int(record["steps"])})
    table = pd.DataFrame(rows, columns=["seed", "arm", "key", "first_composed", "ended_composed", "steps"])
    return table.astype({"first_composed": "Int64"})  # a step or <NA> (never), not a float


def removal_inputs(table: pd.DataFrame, seeds) -> list[dict]:
    """Per seed of the removal arm: `twin_at` and, once its removed run has finished, `removed_at`."""
    out = []
    for seed in seeds:
        mine = table[table["seed"] == seed].set_index("arm")
        if "twin" not in mine.index:
            continue
        row = {"seed": seed, "twin_at": _step(mine.loc["twin", "first_composed"])}
        if "steered" in mine.index:
            row["removed_at"] = _step(mine.loc["steered", "first_composed"])
        out.append(row)
    return out


def addition_inputs(table: pd.DataFrame, seeds) -> list[dict]:
    """Per seed of the sufficiency arm: whether its twin, steered run and sham ended composed (None: not run)."""
    out = []
    for seed in seeds:
        mine = table[table["seed"] == seed].set_index("arm")
        out.append({"seed": seed, **{a: bool(mine.loc[a, "ended_composed"]) if a in mine.index else None
                                     for a in ARMS}})
    return out


def _step(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def inside_window(metrics: pd.DataFrame, first: int, last: int) -> dict:
    """What a run did in the steering window [first, last] (its twin read over the same steps): the lowest 1-var
    train accuracy, the highest measure 3 (the identity pattern), and measures 5 (layer 1 copies) and 6 (layer 2
    reads the operand values) at the window's last eval step."""
    inside = metrics[(metrics["step"] >= first) & (metrics["step"] <= last)]
    if inside.empty:
        return {"lowest 1-var train": None, "highest measure 3": None, "measure 5 at the end": None,
                "measure 6 at the end": None}
    end = inside.iloc[-1]
    return {"lowest 1-var train": float(inside["1var_train"].min()),
            "highest measure 3": float(inside["m3_l2_var_identity_qk"].max()),
            "measure 5 at the end": float(end["m5_l1_value_prev_token"]),
            "measure 6 at the end": float(end["m6_l2_eq_to_values"])}
