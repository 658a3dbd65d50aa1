"""Chapter 10's readings of the data-threshold sweeps (C8, C9), computed here so that the chapter only draws them and
glues their words: the runs each claim reads, its verdict and its claim record, and the numbers read beside a verdict
(C9's fit held against its data, the swap control, the runs whose 2-var union ends under the level).

- `load_sweeps`: the paper's two sweeps, C9's added seeds and the ablation, as planned grids and finished runs, with
  the mean-curve reading of each paper sweep (`thresholds.threshold_summary`, the rule before 2026-12).
- `read_c8`, `read_c9`: each claim's verdict under its rule (`rules.verdicts`) with the numbers behind it;
  `c8_record`, `c9_record`: what `report.claims.record_claim` stores for it.
- `c9_fit_check`: C9's logistic fit against the share of composed runs that succeed at each r, and the fit's interval
  with each seed left out (read beside the rule, never by it).
- `swap_reading`, `late_runs`, `brackets_by_seed`: the tables the chapter's prose reads.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis import reliability
from ..analysis.thresholds import (c9_runs, claim_text, composed_runs, composition_by_value, coverage_or_frequency,
                                  crossing, fit_check, leave_one_seed_out, logistic_curve, logistic_threshold,
                                  mean_curve, reached_earlier, seed_crossings, success_by_value, summary_report,
                                  threshold_summary, values_text)
from ..core.config import RunConfig, TaskConfig
from ..core.data import make_split, split_summary
from ..rules import paper, verdicts
from ..rules.study import current

__all__ = ["summary_report"]  # the sweeps' mean-curve printout, read from here by the chapter

MAIN = ("f_sweep", "r_sweep")  # the paper's two sweeps
ADDED, ABLATION = "r_sweep_power", "r_sweep_share_only"  # C9's added seeds; r scaling the 2-var share only
F_FIELD, R_FIELD = "train_fraction", "two_var_rate"
HELDOUT_POOL = "2var_add_restricted"  # held-out pairs in 2-var queries: the pool that needs 2-var addition data
VAR_POOLS = ("1var_var_restricted", "2var_var_restricted_1", "2var_var_restricted_2")  # variables in unseen positions
# the names of the per-seed readings in the claim records
C8_LABEL, C9_LABEL, C9_POOL_LABEL = ("0-var held-out exact", "2-var union exact",
                                     "held-out pairs in 2-var queries (post hoc)")


@dataclass(frozen=True)
class Sweeps:
    """Every sweep chapter 10 reads: its planned grid with each point's status (`status`) and its finished runs
    (`done`), by sweep name; `summary`: the mean-curve reading of each of MAIN (the rule before 2026-12)."""
    status: dict
    done: dict
    summary: dict
    level: float


def load_sweeps(root: Path | None = None, level: float = verdicts.THRESHOLD_LEVEL) -> Sweeps:
    """The sweeps of MAIN, ADDED and ABLATION from `root` (None: the committed runs/sweeps)."""
    from ..experiments.sweep import SWEEPS, sweep_tables  # slow import (ray)
    status, done = {}, {}
    for name in (*MAIN, ADDED, ABLATION):
        status[name], done[name] = sweep_tables(SWEEPS[name], root)
    summary = {name: threshold_summary(status[name], SWEEPS[name].swept_field, SWEEPS[name].paper_value, level)
               for name in MAIN}
    return Sweeps(status, done, summary, level)


def read_c8(sweeps: Sweeps) -> dict:
    """C8 under its rule: per seed, the crossing of its composed runs of the f sweep; the verdict, the median bracket
    and the share of runs that composed at each f."""
    done = sweeps.done["f_sweep"]
    crossings = seed_crossings(done, F_FIELD)
    return {"verdict": verdicts.c8_threshold(crossings), "crossings": crossings,
            "median": verdicts.median_bracket(crossings), "rate": composition_by_value(done, F_FIELD)}


def read_c9(sweeps: Sweeps) -> dict:
    """C9 under its rule (since 2026-12-04): the logistic fit over the composed runs of the r sweep and of its added
    seeds, the censored per-seed crossings beside it, and the same per-seed reading of held-out pairs in 2-var queries
    (post hoc; over the added seeds too once all of them are in). Also the readings before the added seeds (the r
    sweep's own seeds) and under the rule before 2026-12-02 (C8's median bracket)."""
    done, added = sweeps.done["r_sweep"], sweeps.done[ADDED]
    rows, devices = c9_runs([done, added] if len(added) else [done])
    all_in = bool(len(added)) and len(added) == len(sweeps.status[ADDED])
    grid_top = float(sweeps.status["r_sweep"][R_FIELD].max())
    fit = logistic_threshold(rows, R_FIELD)
    union = seed_crossings(rows, R_FIELD)
    pool = seed_crossings(rows if all_in else done, R_FIELD, HELDOUT_POOL)
    verdict = verdicts.c9_threshold(fit, union, grid_top=grid_top, runs_finished=len(rows),
                                    runs_planned=len(sweeps.status["r_sweep"]) + len(sweeps.status[ADDED]),
                                    devices=devices)
    own = seed_crossings(done, R_FIELD)  # the r sweep's own seeds, before the added ones
    alone_fit = logistic_threshold(done, R_FIELD)
    return {"verdict": verdict, "fit": fit, "rows": rows, "devices": devices, "all_in": all_in, "grid_top": grid_top,
            "union": union, "pool": pool, "union_median": verdicts.censored_median(union, grid_top),
            "pool_median": verdicts.median_bracket(pool), "alone_fit": alone_fit,
            "alone": verdicts.c9_threshold(alone_fit, own, grid_top=grid_top),
            "earlier": verdicts.c9_threshold_before_2026_12_02(own), "rate": composition_by_value(done, R_FIELD)}


def _common(sweeps: Sweeps, name: str, claim_symbol: str, reading: dict, per_seed: dict) -> dict:
    from ..experiments.sweep import SWEEPS  # slow import (ray)
    done, old = sweeps.done[name], sweeps.summary[name]
    return {"sweep": name, "metric": SWEEPS[name].metric, "level": sweeps.level,
            "per_seed": {label: [c.__dict__ for c in found] for label, found in per_seed.items()},
            "composition_rate": reading["rate"].to_dict(orient="records"),
            "rule_before_2026_12": {"verdict": old["verdict"], "text": claim_text(old, claim_symbol)},
            "compute_hours": round(float(done["wall_time_s"].sum()) / 3600, 2) if len(done) else 0.0}


def c8_record(sweeps: Sweeps, c8: dict) -> tuple[str, str, dict]:
    """(ours, verdict, details) of C8's claim record."""
    return c8["verdict"].text, c8["verdict"].verdict, _common(sweeps, "f_sweep", "f", c8, {C8_LABEL: c8["crossings"]})


def bracket_text(median: dict) -> str:
    """A median bracket (`verdicts.median_bracket`) as the records print it: 'median bracket (0.062, 0.113] over 15
    seeds', or 'no crossing'."""
    if not median["n"]:
        return "no crossing"
    return f"median bracket ({median['below']:.3f}, {median['crossing']:.3f}] over {median['n']} seeds"


def c9_record(sweeps: Sweeps, c9: dict, check: dict | None = None) -> tuple[str, str, dict]:
    """(ours, verdict, details) of C9's claim record: the rule's reading, the post hoc pool beside it and, with
    `check` (`c9_fit_check`), the fit's check against its data (beside the rule, which it does not change)."""
    fit = c9["fit"]
    details = _common(sweeps, "r_sweep", "r", c9, {C9_LABEL: c9["union"], C9_POOL_LABEL: c9["pool"]})
    details["logistic_fit"] = {k: fit[k] for k in ("threshold", "interval", "seeds", "runs", "unbounded")}
    details["rule_before_2026_12_02"] = {"verdict": c9["earlier"].verdict, "text": c9["earlier"].text}
    ours = f"{c9['verdict'].text}; {C9_POOL_LABEL}: {bracket_text(c9['pool_median'])}"
    if check is not None and len(check["left_out"]):
        details["fit_check"] = {  # beside the rule: what the chapter reads of the fit against its data
            "width_limit": check["limit"],
            "width_with_each_seed_left_out": {str(int(r.left_out)): round(float(r.width), 6)
                                              for r in check["left_out"].itertuples()},
            "fitted_outside_the_observed_interval_at_r": [round(float(v), 6) for v in check["outside"][R_FIELD]],
            "low_end": [{"r": round(float(r[R_FIELD]), 6), "succeeded": int(r["succeeded"]), "runs": int(r["runs"]),
                         "fitted": round(float(r["fitted"]), 6)} for r in check["named"]]}
        wide = check["wide"]
        listed = "; ".join(f"without {int(r.left_out)}: {r.width:.3f}" for r in wide.itertuples())
        ours += (f"; beside the rule: {len(wide)} of {len(check['left_out'])} seeds left out one at a time give an"
                 f" interval wider than {check['limit']:g}" + (f" ({listed})" if listed else "")
                 + "".join(f"; at r = {r[R_FIELD]:.3f} {int(r['succeeded'])} of {int(r['runs'])} composed runs succeed,"
                           f" the fit says {r['fitted']:.2f}" for r in check["named"]))
    return ours, c9["verdict"].verdict, details


# ---------------------------------------------------------------------------- C9's fit held against its data
def c9_fit_check(rows: pd.DataFrame, resamples: int | None = None) -> dict:
    """C9's fit beside its data (`thresholds.fit_check`: per r, the composed runs that succeed against the fit's
    probability; `thresholds.leave_one_seed_out`: the fit's interval with each seed left out), and what the chapter
    reads from them: "outside" (the rows whose fitted probability lies outside the observed share's 95 % interval),
    "misses" (one of those lies at the low end, where the fit is under 50 %), "named" (the low end's first row and the
    one where observed and fitted differ most there, by r); and "wide" (the seeds whose omission widens the interval
    past C9's limit, widest first) with that "limit" (C9's inconclusive width: the paper's r threshold, `paper.R_THRESHOLD`)."""
    limit = paper.R_THRESHOLD.value
    table = fit_check(rows, R_FIELD) if len(rows) else pd.DataFrame(
        columns=[R_FIELD, "succeeded", "runs", "share", "low", "high", "seeds", "fitted", "gap"])
    left_out = leave_one_seed_out(rows, R_FIELD, resamples=resamples) if len(rows) else pd.DataFrame(
        columns=["left_out", "threshold", "low", "high", "width"])
    found = table.dropna(subset=["fitted"])
    outside = found[(found["fitted"] < found["low"]) | (found["fitted"] > found["high"])]
    low_end = found[found["fitted"] < 0.5]  # below the fit's midpoint
    named = (low_end.loc[sorted({low_end.index[0], low_end["gap"].abs().idxmax()})] if len(low_end)
             else low_end)
    return {"table": table, "left_out": left_out, "limit": limit, "outside": outside,
            "misses": bool(len(outside[outside["fitted"] < 0.5])), "named": named.to_dict(orient="records"),
            "wide": left_out[left_out["width"] > limit].sort_values("width", ascending=False)}


def width(fit: dict) -> float:
    """The width of a `logistic_threshold` fit's interval."""
    low, high = fit["interval"]
    return high - low


def bracket_distance(median: dict, paper: float) -> float:
    """How far the paper's value lies outside a median bracket (`verdicts.median_bracket`): 0 inside it."""
    return max(0.0, median["below"] - paper, paper - median["crossing"])


def around(done: pd.DataFrame, field: str, first: int, last: int) -> list[tuple[float, pd.DataFrame]]:
    """The composed runs at each grid value from the `first`-th to the `last`-th of the sweep's grid (by index of its
    distinct values in `done`'s composed runs' grid), as (value, runs)."""
    from ..experiments.sweep.grid import F_GRID, R_GRID  # slow import (ray)
    grid = F_GRID if field == F_FIELD else R_GRID
    kept = composed_runs(done)
    return [(float(v), g) for v, g in kept.groupby(field) if grid[first] - 1e-6 <= v <= grid[last] + 1e-6]


def seeds_reach(rows: pd.DataFrame) -> dict:
    """How far up the r grid each seed's runs go: "top" (the seeds that reach the grid's last value), "grid_top" and
    "others_stop" (the largest r the other seeds have; None when every seed reaches the top)."""
    from ..experiments.sweep.grid import R_GRID  # slow import (ray)
    reach = rows.groupby("seed")[R_FIELD].max() if len(rows) else pd.Series(dtype=float)
    top = reach >= R_GRID[-1] - 1e-9
    return {"top": sorted(int(s) for s in reach[top].index), "grid_top": float(R_GRID[-1]),
            "others_stop": float(reach[~top].max()) if (~top).any() else None}


def fit_check_table(check: dict) -> pd.DataFrame:
    """C9's fit check as the chapter shows it: per r, the composed runs that succeed ('0 of 10'), the observed share
    with its 95 % interval and the fit's probability."""
    t = check["table"]
    return pd.DataFrame({"r": t[R_FIELD].map(lambda v: f"{v:.3f}"),
                         "composed runs that succeed": [f"{int(k)} of {int(n)}" for k, n in zip(t["succeeded"],
                                                                                                 t["runs"])],
                         "observed (95 % interval)": [f"{s:.2f} ({lo:.2f}–{hi:.2f})" for s, lo, hi in
                                                      zip(t["share"], t["low"], t["high"])],
                         "fitted": t["fitted"].map(lambda v: "–" if v != v else f"{v:.2f}")}).set_index("r")


# ---------------------------------------------------------------------------- what the prose reads
def brackets_by_seed(crossings) -> dict[str, list[int]]:
    """The seeds of each bracket of per-seed crossings, '(0.257, 0.306]' -> [42, 43, 45, 46] ('(–, 0.113]' where every
    composed run reaches the level, 'no crossing' where the runs do not stay at it), in the brackets' order."""
    groups: dict[str, list[int]] = {}
    for c in crossings:
        key = "no crossing" if c.value is None else f"({'–' if c.below is None else f'{c.below:.3f}'}, {c.value:.3f}]"
        groups.setdefault(key, []).append(c.seed)
    return dict(sorted(groups.items()))


def crossings_table(readings: dict) -> pd.DataFrame:
    """One row per seed: its composed runs and its bracket under each reading ({name: per-seed crossings})."""
    columns = {}
    for name, crossings in readings.items():
        for c in crossings:
            columns.setdefault("composed runs", {}).setdefault(c.seed, c.runs)
            columns.setdefault(name, {})[c.seed] = ("no crossing" if c.value is None else
                                                    f"({'–' if c.below is None else f'{c.below:.3f}'}, {c.value:.3f}]")
    return pd.DataFrame(columns).rename_axis("seed")


def late_runs(rows: pd.DataFrame, level: float = verdicts.THRESHOLD_LEVEL) -> pd.DataFrame:
    """The composed runs whose 2-var union ends under the level, with the lowest of their var-restricted pools
    (variables in unseen positions: a repair not finished) and their held-out pairs in 2-var queries."""
    kept = composed_runs(rows)
    late = kept[kept["value"] < level].sort_values(["seed", R_FIELD])
    return pd.DataFrame({"seed": late["seed"].astype(int), "r": late[R_FIELD], "2-var union": late["value"],
                         "lowest var-restricted pool": late[list(VAR_POOLS)].min(axis=1),
                         "held-out pairs in 2-var queries": late[HELDOUT_POOL]}).reset_index(drop=True)


def swap_reading(done: pd.DataFrame, level: float = verdicts.THRESHOLD_LEVEL) -> dict:
    """The f sweep's commutativity control read as C8 is, on the composed runs that carry it: "all" and "neither", the
    median bracket over seeds of the held-out set as a whole and of the held-out pairs whose swap is held out too
    (pairs seen in neither order); "by_f", per f the seeds and each score's span over them (`all_*`, `neither_*`,
    `trained_*`: the pairs whose swap was trained) with the pairs counted; "lookup_only", the largest f at which every
    run answers the pairs whose swap it trained on (>= 0.99) and none of the others (<= 0.01), None if none;
    "near_paper": (f, share), the grid value nearest the paper's f with the share of its held-out pairs whose swap is
    trained (None without runs)."""
    carry = done[done["swap_heldout"].notna()] if "swap_heldout" in done else done.iloc[:0]
    read = {name: verdicts.median_bracket(seed_crossings(carry, F_FIELD, column, level))
            for name, column in (("all", "value"), ("neither", "swap_heldout"))}
    kept = composed_runs(carry)
    if not len(kept):
        return {**read, "by_f": None, "lookup_only": None, "near_paper": None}
    by_f = kept.groupby(F_FIELD).agg(seeds=("seed", "nunique"), all_low=("value", "min"), all_high=("value", "max"),
                                     neither_low=("swap_heldout", "min"), neither_high=("swap_heldout", "max"),
                                     trained_low=("swap_in_training", "min"),
                                     trained_high=("swap_in_training", "max"),
                                     n_neither=("n_swap_heldout", "first"),
                                     n_trained=("n_swap_in_training", "first")).reset_index()
    lookup = by_f[(by_f["trained_low"] >= 0.99) & (by_f["neither_high"] <= 0.01)]
    near = by_f.loc[(by_f[F_FIELD] - RunConfig().task.train_fraction).abs().idxmin()]
    return {**read, "by_f": by_f, "lookup_only": float(lookup[F_FIELD].max()) if len(lookup) else None,
            "near_paper": (float(near[F_FIELD]), float(near["n_trained"] / (near["n_trained"] + near["n_neither"])))}


# ---------------------------------------------------------------------------- the protocol's numbers
def protocol_facts() -> dict:
    """The split's numbers the chapter's method states, at the paper's task: the modulus, both grids, the held-out
    pairs at the smallest and largest f, the variable labels a 2-var row can carry, the 2-var share of the training
    mix with every row kept and at the r grid's first value, and the training pairs any 2-var query covers there and
    at its fifth value."""
    from ..experiments.sweep.grid import F_GRID, R_GRID  # slow import (ray)
    task = RunConfig().task

    def at(**change) -> dict:
        return split_summary(TaskConfig(**{**task.__dict__, **change}))
    every, low, mid = at(two_var_rate=1.0), at(two_var_rate=R_GRID[0]), at(two_var_rate=R_GRID[4])
    return {"modulus": task.modulus, "f_grid": list(F_GRID), "r_grid": list(R_GRID),
            "heldout_at_low_f": at(train_fraction=F_GRID[0])["heldout_pairs"],
            "heldout_at_high_f": at(train_fraction=F_GRID[-1])["heldout_pairs"],
            "labels": every["two_var_rows"] // every["train_pairs"], "mix_every_row": every["mix"]["2var"],
            "mix_low": low["mix"]["2var"], "train_pairs": low["train_pairs"], "covered_low": low["two_var_pairs_covered"],
            "r_mid": R_GRID[4], "covered_mid": mid["two_var_pairs_covered"]}


def covered_share(r: float) -> float:
    """The share of the paper's training pairs that appear in some 2-var query when r keeps the 2-var rows."""
    task = RunConfig().task
    found = split_summary(TaskConfig(**{**task.__dict__, "two_var_rate": r}))
    return found["two_var_pairs_covered"] / found["train_pairs"]


def r_figure_lines(sweeps: Sweeps) -> dict:
    """The thin lines the r figure draws beside the accuracy ({name: (x, y)}): the share of training pairs in some 2-var
    query on this split and its expectation 1 - (1 - r)^labels, and the ablation's mean accuracy where it has runs."""
    from ..experiments.sweep import SWEEPS  # slow import (ray)
    rates = sorted(sweeps.status["r_sweep"][R_FIELD].unique())
    tasks = [RunConfig().replace(**p.overrides).task for p in SWEEPS["r_sweep"].with_seeds([42]).points()]
    labels = protocol_facts()["labels"]
    lines = {"share of training pairs in 2-var queries (this split)":
             (rates, [make_split(t).two_var_pairs_covered / t.n_train_pairs for t in tasks]),
             f"1 − (1 − r)^{labels} (expected coverage)": (rates, [1 - (1 - r) ** labels for r in rates])}
    ablation = sweeps.done[ABLATION]
    if len(ablation):  # the same metric when r only scales the 2-var share (every pair covered)
        lines["ablation: r scales the share only (mean over seeds)"] = mean_curve(ablation[R_FIELD], ablation["value"])
    return lines


def power_reading(path: Path) -> dict | None:
    """C9's power calculation as `python -m assignadd_core power` wrote it (None where it has not run): the seeds it
    was computed from, its simulations and resamples, the width it reads, one row per seed count ("power"), the seed
    count chosen and the step budget's numbers."""

    path = Path(path)
    if not path.is_file():
        return None
    found = json.loads(path.read_text())
    budget = found["budget"]
    from_key = next(k for k in budget if k.startswith("composed_runs_from_r_"))  # the r the budget is read from
    sweeps = current()["sweeps"]
    return {"from_seeds": sorted({*sweeps["seeds"], *sweeps["added_seeds"]}), "sims": found["sims"],
            "resamples": found["resamples"], "width": found["width"], "power": found["power"],
            "chosen": found["chosen_seeds"], "composed": budget[from_key],
            "from_r": float(from_key.removeprefix("composed_runs_from_r_")), "succeeded": budget["succeeded"],
            "with_metrics": budget["with_metrics"], "repaired": budget["repair_steps"],
            "last_third": budget["repaired_in_last_third"], "not_repaired": budget["not_repaired_by_the_end"]}


# ---------------------------------------------------------------------------- the folded tables
def levels_table(sweeps: Sweeps, levels=(0.5, 0.8, 0.9, 0.95, 0.98)) -> pd.DataFrame:
    """The crossing of each paper sweep's seed-mean curve over every finished run at a few levels (descriptive: the
    verdicts read the rules' level on composed runs, per seed)."""
    rows = []
    for name, field in zip(MAIN, (F_FIELD, R_FIELD)):
        done = sweeps.done[name]
        rows += [{"sweep": name, "level": f"{level:.2f}", "crossing": crossing(done[field], done["value"], level)
                  .describe() if len(done) else "no finished run"} for level in levels]
    return pd.DataFrame(rows).set_index(["sweep", "level"])


def all_points(sweeps: Sweeps, name: str) -> pd.DataFrame:
    """A paper sweep's metric at each grid value (rows) for each seed (columns), '—' where a run has no result."""
    field = F_FIELD if name == "f_sweep" else R_FIELD
    table = sweeps.status[name].pivot(index=field, columns="seed", values="value")
    table.columns = [f"seed {c}" for c in table.columns]
    table.index = [f"{v:.4f}" for v in table.index]
    return table.round(3).fillna("—")


def failed_points(sweeps: Sweeps) -> pd.DataFrame:
    """The planned points of the paper sweeps whose configuration cannot exist, with the reason."""
    rows = [{"sweep": name, "value": row[F_FIELD if name == "f_sweep" else R_FIELD], "seed": row["seed"],
             "reason": row["reason"]} for name in MAIN for _, row in sweeps.status[name].iterrows()
            if row["status"] == "failed"]
    return pd.DataFrame(rows, columns=["sweep", "value", "seed", "reason"])


POOLS = {"f_sweep": ["0var_train", "0var_add_restricted", "1var_add_restricted", "2var_add_restricted"],
         "r_sweep": ["2var_train", "2var_add_restricted", "2var_var_restricted_1", "2var_var_restricted_2",
                     "1var_var_restricted"]}


def pools_table(sweeps: Sweeps, name: str) -> pd.DataFrame:
    """Every finished run of a paper sweep with its metric and the pools that tell its generalizations apart."""
    from ..experiments.sweep import SWEEPS  # slow import (ray)
    field = F_FIELD if name == "f_sweep" else R_FIELD
    done = sweeps.done[name]
    table = done.set_index(field)[["seed", "value", *POOLS[name]]].rename(columns={"value": SWEEPS[name].metric})
    table.index = [f"{v:.4f}" for v in table.index]
    return table.round(3)


def unlearned_table(sweeps: Sweeps) -> pd.DataFrame:
    """Per sweep (the paper's two and the ablation), the runs that did not learn variable assignment and the crossing
    of the seed-mean curve without them (post hoc, with the values that reached the level earlier)."""
    rows = []
    for name in (*MAIN, ABLATION):
        done = sweeps.done[name]
        if not len(done):
            continue
        field = F_FIELD if name == "f_sweep" else R_FIELD
        kept = composed_runs(done)
        found = crossing(kept[field], kept["value"], sweeps.level)
        early = reached_earlier(kept[field], kept["value"], found)
        unlearned = done[~done.index.isin(kept.index)]
        rows.append({"sweep": name, "runs": len(done), "did not learn": len(unlearned),
                     "those runs (value, seed, 1-var train, metric)": "; ".join(
                         f"{r[field]:.3f}, {int(r['seed'])}, {r['1var_train']:.3f}, {r['value']:.3f}"
                         for _, r in unlearned.iterrows()) or "–",
                     "crossing without them": found.describe() + (f"; reached the level earlier at"
                                                                   f" {values_text(early)}" if early else "")})
    return pd.DataFrame(rows).set_index("sweep") if rows else pd.DataFrame()


def pool_crossings(sweeps: Sweeps, levels=(0.9, 0.95)) -> pd.DataFrame:
    """Post hoc: the crossing of the seed-mean curve of each r-sweep pool over the runs that learned variable
    assignment, at each level, with how many smaller values already reached it."""
    kept = composed_runs(sweeps.done["r_sweep"])
    rows = []
    for pool in POOLS["r_sweep"]:
        row = {"pool": pool}
        for level in levels:
            found = crossing(kept[R_FIELD], kept[pool], level)
            early = reached_earlier(kept[R_FIELD], kept[pool], found)
            row[f"level {level:g}"] = found.describe() + (f" (already at {len(early)} smaller values)" if early else "")
        rows.append(row)
    return pd.DataFrame(rows).set_index("pool") if len(kept) else pd.DataFrame()


def compute_table(sweeps: Sweeps) -> pd.DataFrame:
    """What the paper sweeps' finished runs cost: runs, hours of training, minutes per run (median), and where."""
    rows = []
    for name in MAIN:
        done = sweeps.done[name]
        if not len(done):
            continue
        where = ", ".join(sorted({f"{d}, {int(t)} thread{'s' if int(t) > 1 else ''}"
                                  for d, t in zip(done["device"], done["threads"])}))
        names = sorted({n for d, n in zip(done["device"], done["device_name"]) if n and n != d})
        rows.append({"sweep": name, "runs": len(done), "hours of training": round(done["wall_time_s"].sum() / 3600, 1),
                     "minutes per run (median)": round(done["wall_time_s"].median() / 60),
                     "on": where + (f" ({', '.join(names)})" if names else "")})  # early runs named no processor
    return pd.DataFrame(rows).set_index("sweep") if rows else pd.DataFrame()


def power_tables(power: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """C9's power calculation (`power_reading`) as two tables: per seed count the share of simulated data sets whose
    interval is no wider than the limit, with its 95 % interval, and which count was chosen; and the step budget."""
    rows = pd.DataFrame([{"seeds": r["seeds"], f"interval no wider than {power['width']:g}":
                          f"{100 * r['p_narrow']:.0f} % ({100 * r['low']:.0f}–{100 * r['high']:.0f} %)",
                          "chosen": "yes" if r["seeds"] == power["chosen"] else ""} for r in power["power"]])
    repaired = power["repaired"]
    budget = pd.DataFrame([{f"composed runs at r ≥ {power['from_r']:g}": power["composed"],
                            "they succeed": power["succeeded"], "with per-point metrics": power["with_metrics"],
                            "var-restricted pools at the level for good": len(repaired),
                            "at steps": f"{min(repaired):,.0f}–{max(repaired):,.0f}" if repaired else "–",
                            "in the budget's last third": power["last_third"],
                            "not by the end": power["not_repaired"]}])
    return rows.set_index("seeds"), budget.set_index(budget.columns[0])


def rerun_smaller_grid(points: int, steps: int, seeds: list[int], workers: int, device: str,
                       level: float = verdicts.THRESHOLD_LEVEL):
    """Train a smaller grid of each paper sweep on this machine (`points` values, `steps` steps, `seeds`) into a scratch
    folder (finished runs are reused), and yield (the smaller sweep, its grid status, its mean-curve summary)."""
    from ..experiments.sweep import SWEEPS, run_sweep, sweep_tables, sweeps_dir  # slow import (ray)
    scratch = sweeps_dir() / "scratch" / "rerun"
    for name in MAIN:
        sweep = SWEEPS[name]
        small = sweep.subset(points).with_steps(steps).with_seeds(seeds)
        run_sweep(small, results_dir=scratch, workers=workers, device=device)
        status, _ = sweep_tables(small, scratch)
        yield small, status, threshold_summary(status, sweep.swept_field, sweep.paper_value, level)


def status_counts(sweeps: Sweeps) -> pd.DataFrame:
    """How many planned runs of each sweep are in each status (done, pending, failed, error)."""
    return pd.DataFrame({name: status["status"].value_counts() for name, status in sweeps.status.items()}).T \
        .fillna(0).astype(int).rename_axis("sweep")


def fit_curve(rows: pd.DataFrame, points: int = 200) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """What C9's figure draws: per r the composed runs that succeed (`thresholds.success_by_value`), and the logistic
    fit's curve (`thresholds.logistic_curve`) over `points` values of r from the first grid value to the last."""
    table = success_by_value(rows, R_FIELD)
    if not len(table):
        return table, np.array([]), np.array([])
    x = np.linspace(table[R_FIELD].min(), table[R_FIELD].max(), points)
    return table, x, logistic_curve(rows, R_FIELD, x)


def ablation_contrast(sweeps: Sweeps) -> dict | None:
    """The ablation read by its rule (`thresholds.coverage_or_frequency` on held-out pairs in 2-var queries), with its
    table as the chapter shows it, the two sweeps' values at the first r ("first_share", "first_rows") and their
    differences above it ("diffs"); None without the ablation's runs."""
    if not len(sweeps.done[ABLATION]):
        return None
    found = coverage_or_frequency(sweeps.done["r_sweep"], sweeps.done[ABLATION], R_FIELD, HELDOUT_POOL, sweeps.level)
    table = found["table"]
    return {**found, "first_share": float(table["share"].iloc[0]), "first_rows": float(table["rows"].iloc[0]),
            "diffs": [float(v) for v in table["share - rows"].iloc[1:].dropna()],
            "table": fixed(table.rename(columns={"rows": "rows kept (paper)", "share": "share only"})
                           .set_index(R_FIELD))}


def uncomposed_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """The runs that did not learn variable assignment, by seed: r, 1-var train and the 2-var union at the end."""
    runs = rows[~rows.index.isin(composed_runs(rows).index)].sort_values(["seed", R_FIELD])
    return fixed(runs[["seed", R_FIELD, "1var_train", "value"]].rename(columns={"value": "2var_union"})
                 .astype({"seed": int}).set_index("seed"))


def fixed(frame: pd.DataFrame, decimals: int = 3) -> pd.DataFrame:
    """A table's numbers as the prose prints them (`f"{v:.3f}"`, '—' where missing), so that a table and a sentence
    never round one value two ways (numpy's rounding and Python's formatting differ at a trailing 5)."""
    return frame.apply(lambda column: column.map(lambda v: "—" if v != v else f"{v:.{decimals}f}")
                       if column.dtype.kind == "f" else column)


# ---------------------------------------------------------------------------- chapter 3 reads the f and r sweeps by seed
SYMBOL = {"train_fraction": "f", "two_var_rate": "r"}  # a swept value by its symbol, as the data chapter writes it


def sweep_outcomes(at_paper: dict[int, bool]) -> dict:
    """The f and r sweeps' finished runs read by seed (`at_paper`: each seed's outcome at the paper's settings): the
    rate of runs that learned variable assignment, and per seed its runs that composed and the settings where it did
    not (`by_seed`: seed -> {'composed', 'runs', 'failed': ['f = 0.501', ...], 'won': [...], 'at_paper'})."""
    from ..experiments.sweep import SWEEPS, results_frame  # slow import (ray)
    runs = pd.concat([results_frame(SWEEPS[name]).assign(sweep=name) for name in ("f_sweep", "r_sweep")],
                     ignore_index=True)
    done = runs[runs["status"] == "done"] if len(runs) else runs
    learned = done["1var_train"].map(verdicts.composed) if len(done) else pd.Series(dtype=bool)
    by_seed = {}
    for seed, group in (done.assign(learned=learned).groupby("seed") if len(done) else []):
        setting = lambda r: f"{SYMBOL[SWEEPS[r.sweep].swept_field]} = {getattr(r, SWEEPS[r.sweep].swept_field):.3f}"  # noqa
        by_seed[int(seed)] = {"composed": int(group["learned"].sum()), "runs": len(group),
                              "failed": [setting(r) for r in group[~group["learned"]].itertuples()],
                              "won": [setting(r) for r in group[group["learned"]].itertuples()],
                              "at_paper": at_paper.get(int(seed))}
    return {"rate": reliability.composition_rate(int(learned.sum()), len(done)), "runs": len(done), "by_seed": by_seed}
