"""C10's causal tests read from their runs (`steer`). The test of 2026-12-03 (sweeps c10_remove and c10_add): per
seed, when the twin and the steered runs compose, in the form `verdicts.c10_causal` reads. The test at copying onset
(2026-12-04, sweeps c10_onset and c10_onset_push): per cell and arm, the window after the trigger (measures 3 and 5
there) and the time to compose, in the form `verdicts.c10_onset` reads.

Inputs are a sweep's results frame (one row per run: seed, the steering fields, final pools) and its runs' metrics
tables (every 100 steps), as for the composition study.
"""
from __future__ import annotations

import pandas as pd

from ..rules.verdicts import LEARNED_LEVEL, _composed_later
from .sweep_records import finished
from ..rules.stats import sign_test_greater

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
    for record in finished(records).to_dict("records"):
        rows.append({"seed": int(record["seed"]), "arm": arm(record), "key": record["key"],
                     "first_composed": first_composed(metrics.get(record["key"])),
                     "ended_composed": bool(record["1var_train"] >= LEARNED_LEVEL), "last_step": int(record["last_step"])})
    table = pd.DataFrame(rows, columns=["seed", "arm", "key", "first_composed", "ended_composed", "last_step"])
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


# ---------------------------------------------------------------------------- C10 at copying onset
# Sweeps c10_onset and c10_onset_push (`verdicts.c10_onset`): every arm records the eval step after which its window
# starts (`steer_started_after`, the trigger), steers (or, the twin, only waits) `steer_window` steps, and stops once
# composition holds after the window.
def onset_arm(record: dict) -> tuple[str, float]:
    """(arm, share) of an onset run: "twin" (direction none), "removal" and "sham" (the identity direction and the
    wrong pairs at share 0), "push" and "push_sham" (the same at a share above 0)."""
    direction, share = record.get("steer_direction"), record.get("steer_share")
    share = 0.0 if share is None or pd.isna(share) else float(share)
    if direction == "none":
        return "twin", 0.0
    if direction == "wrong_pairs":
        return ("push_sham" if share > 0 else "sham"), share
    return ("push" if share > 0 else "removal"), share


def time_to_compose(metrics: pd.DataFrame, hold: int) -> int | None:
    """The first eval step from which 1-var train ≥ LEARNED_LEVEL holds for `hold` evaluations in a row (the early
    stop's streak); None when it never does within the run (censored at its budget)."""
    composed = (metrics.sort_values("step")["1var_train"] >= LEARNED_LEVEL).tolist()
    steps = metrics.sort_values("step")["step"].tolist()
    for i in range(len(steps) - hold + 1):
        if all(composed[i:i + hold]):
            return int(steps[i])
    return None


def onset_reading(metrics: pd.DataFrame, started_after: int | None, window: int, hold: int) -> dict:
    """One run at copying onset: its trigger, the eval rows of its window (the steps after the trigger, `window` of
    them), the highest and the mean measure 3 there, the mean measure 5 there, its time to compose, and whether it
    ends composed (its last `hold` rows) after the window."""
    m = metrics.sort_values("step")
    composed_at = time_to_compose(m, hold)
    if started_after is None:
        inside = m.iloc[0:0]
        end = None
    else:
        end = int(started_after) + int(window)
        inside = m[(m["step"] > started_after) & (m["step"] <= end)]
    tail = m.tail(hold)
    held = bool(len(tail) == hold and (tail["1var_train"] >= LEARNED_LEVEL).all()
                and (end is None or int(m["step"].iloc[-1]) > end))
    nan = float("nan")
    return {"trigger": None if started_after is None else int(started_after), "window_rows": int(len(inside)),
            "window_first": int(inside["step"].min()) if len(inside) else None,
            "window_last": int(inside["step"].max()) if len(inside) else None,
            "m3_max": float(inside["m3_l2_var_identity_qk"].max()) if len(inside) else nan,
            "m3_min": float(inside["m3_l2_var_identity_qk"].min()) if len(inside) else nan,
            "m3_mean": float(inside["m3_l2_var_identity_qk"].mean()) if len(inside) else nan,
            "m5_mean": float(inside["m5_l1_value_prev_token"].mean()) if len(inside) else nan,
            "composed_at": composed_at, "held": held, "last_step": int(m["step"].iloc[-1])}


def onset_cells(records: pd.DataFrame, metrics: dict[str, pd.DataFrame], cells, hold: int,
                shares=None) -> list[dict]:
    """Per planned cell (init, data), its arms' readings in the form `verdicts.c10_onset` reads: {"cell", "twin",
    "removal", "sham"} for the necessity sweep; with the push `shares`, {"cell", "twin", "push": {share: reading},
    "sham": {share: reading}} for the sufficiency sweep. An arm that has not finished yet reads None."""
    done = finished(records).to_dict("records")
    by_cell: dict[tuple, dict] = {}
    for record in done:
        if record["key"] not in metrics:
            continue
        arm, share = onset_arm(record)
        started = record.get("steer_started_after")
        started = None if started is None or pd.isna(started) else int(started)
        reading = onset_reading(metrics[record["key"]], started, int(record["steer_window"]), hold)
        slot = by_cell.setdefault((int(record["init_seed"]), int(record["seed"])), {})
        slot[(arm, share) if arm in ("push", "push_sham") else arm] = reading
    out = []
    for init, data in cells:
        slot, cell = by_cell.get((int(init), int(data)), {}), f"{init}/{data}"
        if shares is None:
            out.append({"cell": cell, **{arm: slot.get(arm) for arm in ("twin", "removal", "sham")}})
        else:
            out.append({"cell": cell, "twin": slot.get("twin"),
                        "push": {float(s): slot.get(("push", float(s))) for s in shares},
                        "sham": {float(s): slot.get(("push_sham", float(s))) for s in shares}})
    return out


def hold_cells(onset: pd.DataFrame, held: pd.DataFrame, metrics: dict[str, pd.DataFrame], cells,
               hold: int) -> list[dict]:
    """C10's necessity as read since the hold (`RULES["C10"]`): per cell, the twin of the onset sweep (`onset`'s
    records) with the removal and the sham of the hold sweep (`held`'s records), in `onset_cells`' form."""
    twins = onset[onset["steer_direction"] == "none"] if len(onset) else onset
    return onset_cells(pd.concat([twins, held], ignore_index=True), metrics, cells, hold)


def by_initialization(entered: list[dict], level: float) -> dict:
    """C10's necessity with the initialization as the unit (a reading added on 2026-12-05 after the runs, beside the
    locked rule, whose unit is the cell): the cells that passed their checks (`verdicts.c10_necessity`'s "cells"),
    grouped by their initialization; an initialization counts as later when the removal composed later than the arm in
    more of its cells than earlier, earlier for the reverse, and is left out on a tie. Against the twin and against the
    sham, an exact one-sided sign test over the initializations: "shown" if both give p < `level`."""

    groups: dict[str, list[dict]] = {}
    for c in entered:
        groups.setdefault(str(c["cell"]).split("/")[0], []).append(c)
    out = {"initializations": len(groups), "cells": {init: len(cs) for init, cs in groups.items()}}
    for arm in ("twin", "sham"):
        votes = [sum(_composed_later(c["removal"]["composed_at"], c[arm]["composed_at"]) for c in cs)
                 for cs in groups.values()]
        later, earlier = sum(v > 0 for v in votes), sum(v < 0 for v in votes)
        out[arm] = {"later": later, "earlier": earlier, "tied": len(votes) - later - earlier,
                    "p": sign_test_greater(later, earlier)}
    out["floor_p"] = sign_test_greater(len(groups), 0)  # the smallest p this many initializations can give
    out["reading"] = "shown" if all(out[arm]["p"] < level for arm in ("twin", "sham")) else "not shown"
    return out


def clamp_cells(push: pd.DataFrame, clamped: pd.DataFrame, metrics: dict[str, pd.DataFrame], cells, hold: int,
                margin: float) -> list[dict]:
    """C10's sufficiency by the clamp (since 2026-12-06): per cell, the twin of the push sweep (`push`'s records)
    with the clamp and its wrong-pairs sham of the clamp sweep (`clamped`'s records, at `margin`): {"cell", "twin",
    "clamp", "sham"}, in `onset_reading`'s form (None: not finished)."""
    twins = push[push["steer_direction"] == "none"] if len(push) else push
    read = onset_cells(pd.concat([twins, clamped], ignore_index=True), metrics, cells, hold, shares=(margin,))
    return [{"cell": c["cell"], "twin": c["twin"], "clamp": c["push"][float(margin)], "sham": c["sham"][float(margin)]}
            for c in read]
