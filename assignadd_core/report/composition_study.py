"""The readings of the composition chapter (*When composition fails*), one function per section: each reads the
study's sweeps and runs and returns the numbers and tables the chapter shows and writes its sentences from.

* `load`: the studies' tables (the crossed design, its nudged replicates, the perturbations, the earlier studies).
* `design`: R2's tests on the crossed design and on its replicated cells, the crossed logistic model and its prior
  sensitivity, each initialization's probability on a new data order.
* `flips`: how often a perturbation flips a run's outcome, and basin or chaos by R2's rule.
* `modes`: the mode seed trained in six numerical modes (outcomes, weight distances, the compiled step's gradient).
* `rates`, `sweeps`, `near`, `factorial`, `bf16`: how often a run composes, and the earlier studies read again.
* `predictor`, `rescue`: how early the outcome shows, and what an intervention on a stuck run does.
* `r2_record`: the text and details of R2's claim record.

The chapter keeps its prose in Markdown; these functions keep the computation where a forker finds and tests it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd

from ..analysis import composition as comp, odds
from ..analysis.phases import detect_phases
from ..core.config import RunConfig, TaskConfig
from ..core.data import POOL_NAMES
from ..core.run_folder import DEFAULT_ROOT, Run, run_path
from ..measure.measures import MEASURE_NAMES
from ..rules import verdicts
from .names import ARM_LABELS

PART_NAMES = {"init": "initialization", "data": "data order", "cell": "the pair", "run": "a run's own chance"}
SMALL_NUDGE, LARGE_NUDGE = "nudge 1e-07 at step 0", "nudge 1e-02 at step 0"  # basin or chaos reads these two
MODE_WORDS = {"eager": "eager", "compiled": "compiled", "fp64": "fp64", "compiled_attention": "the attention compiled",
              "compiled_mlp": "the MLP compiled", "compiled_unembed": "the unembedding and loss compiled"}


# ---------------------------------------------------------------------------- the studies' tables
def study(name: str) -> tuple[pd.DataFrame, dict]:
    """A sweep's study table (`composition.study_table`) and its runs' metrics; no rows when it has not run."""
    from ..experiments.sweep import SWEEPS, results_frame  # slow import (the sweep driver loads ray)
    from ..experiments.sweep.store import finished_metrics  # slow import (the sweep driver loads ray)
    records = results_frame(SWEEPS[name])
    if records.empty:
        return comp.study_table(records, {}), {}
    metrics = finished_metrics(SWEEPS[name], records)
    return comp.study_table(records, metrics), metrics


def finished(name: str, table: pd.DataFrame) -> str:
    """'composition_odds: 128 of 128 runs finished'."""
    from ..experiments.sweep import SWEEPS  # slow import (the sweep driver loads ray)
    return f"{name}: {len(table)} of {len(SWEEPS[name].points())} runs finished"


def load(design: str, replicates: str, flips: str, sweeps: Mapping[str, str]) -> dict:
    """The crossed design (`design`, with its runs' metrics), its nudged replicates, the perturbations and the earlier
    studies ({label: table}, with their metrics in `logged`), and one line per sweep on how many runs finished."""
    out = {"names": {"design": design, "replicates": replicates, "flips": flips}}
    out["design"], out["design_metrics"] = study(design)
    out["nudged"], out["flipped"] = study(replicates)[0], study(flips)[0]
    out["tables"], out["logged"] = {}, {}
    for label, name in sweeps.items():
        out["tables"][label], out["logged"][label] = study(name)
    out["finished"] = [finished(n, t) for n, t in [(design, out["design"]), (replicates, out["nudged"]),
                                                   (flips, out["flipped"]), *((sweeps[k], t) for k, t in
                                                                              out["tables"].items())]]
    return out


# ---------------------------------------------------------------------------- initialization, data order or chance
def design(S: Mapping, prior_sensitivity: bool = True) -> dict:
    """R2 on the crossed design: its whole cells (`cells`: eager and compiled), the permutation tests on them
    (`p_values`, `answer`; None under 16 whole cells), each initialization's and data order's counts, the cells with
    every replicate (`replicated`, `n_replicated`) and R2's verdict by its rule (`r2`, `replicated_p`); the crossed
    logistic model (`fit`) with its shares (`shares`, `observed`: part -> (median, low, high)), the mode effect, the
    prior sensitivity (`by_scale`, `prior_shift`: the most a share moves under the other prior scales) and each
    initialization's probability on a new data order."""
    table, nudged = S["design"], S["nudged"]
    cells = odds.complete_cells(table) if len(table) else table
    whole = cells[["init", "data"]].drop_duplicates().shape[0] if len(cells) else 0
    out = {"cells": cells, "whole": whole, "answer": None, "p_values": None, "fit": None, "shares": {}, "observed": {},
           "fitted_on": "no fit", "mode_effect": (float("nan"),) * 3, "sensitivity": None, "other_scales": [],
           "per_init": pd.DataFrame(columns=["init", "sum", "count", "rate"]),
           "per_data": pd.DataFrame(columns=["data", "sum", "count"])}
    if whole >= 16:
        out["p_values"] = odds.permutation_tests(cells)
        out["answer"] = verdicts.odds_answer(out["p_values"])
        out["per_init"] = (cells.groupby("init")["composed"].agg(["sum", "count", "mean"])
                           .rename(columns={"mean": "rate"}).reset_index())
        out["per_data"] = cells.groupby("data")["composed"].agg(["sum", "count"]).reset_index()
    replicated = odds.replicated_cells(table, nudged) if len(table) and len(nudged) else table.iloc[:0]
    n_replicated = replicated[["init", "data"]].drop_duplicates().shape[0] if len(replicated) else 0
    out.update(replicated=replicated, n_replicated=n_replicated,
               replicated_p=odds.permutation_tests(replicated) if n_replicated else None)
    out["r2"] = (verdicts.r2_replicated(out["replicated_p"], n_replicated, verdicts.R2_MIN_REPLICATES) if n_replicated
                 else verdicts.r2_replicated({}, whole, cells["mode"].nunique() if len(cells) else 0))
    fit_table = replicated if n_replicated else cells
    if out["answer"] is None:
        return out
    fit = out["fit"] = odds.fit_crossed(fit_table)
    shares = odds.shares_table(fit)
    out.update(fit_table=fit_table, shares_table=shares,
               shares={PART_NAMES[r.part]: (r.latent, r.latent_low, r.latent_high) for r in shares.itertuples()},
               observed={PART_NAMES[r.part]: (r.observed, r.observed_low, r.observed_high) for r in shares.itertuples()},
               fitted_on=(f"the replicated design ({len(fit_table)} runs in {n_replicated} cells)" if n_replicated
                          else f"the eager and compiled runs ({len(fit_table)} runs in {whole} cells)"),
               mode_effect=odds.interval(fit["mode"]),
               probabilities=odds.init_probabilities(fit),
               fitted_rates=fit_table.groupby("init")["composed"].agg(["sum", "count", "mean"])
               .rename(columns={"mean": "rate"}).reset_index())
    if prior_sensitivity:
        out.update(_sensitivity(fit_table, shares))
    return out


def _sensitivity(fit_table: pd.DataFrame, shares: pd.DataFrame) -> dict:
    """The shares under every prior scale of the SDs (the main fit serves its own scale), as a table (scale and part
    by prior scale), and the most any share moves from the main scale's."""
    other = [s for s in odds.PRIOR_SCALES if s != odds.SD_PRIOR_SCALE]
    table = pd.concat([odds.prior_sensitivity(fit_table, scales=other),
                       shares.assign(prior_scale=odds.SD_PRIOR_SCALE)], ignore_index=True)
    table["part"] = table["part"].map(PART_NAMES)
    at = table.set_index(["prior_scale", "part"])[["latent", "observed"]]
    shift = max((at.loc[s] - at.loc[odds.SD_PRIOR_SCALE]).abs().to_numpy().max() for s in other)
    by_scale = pd.concat([table.assign(scale=scale, share=[f"{m:.2f} ({lo:.2f}–{hi:.2f})" for m, lo, hi in
                                                          table[[scale, f"{scale}_low", f"{scale}_high"]].to_numpy()])
                          for scale in ("latent", "observed")])
    by_scale = (by_scale.pivot(index=["scale", "part"], columns="prior_scale", values="share")
                .reindex([(s, p) for s in ("latent", "observed") for p in PART_NAMES.values()])
                .rename_axis(columns="prior scale of the SDs"))
    return {"other_scales": other, "by_scale": by_scale, "prior_shift": float(shift), "sensitivity": table}


def initializations(D: Mapping, level: float = 0.75) -> dict:
    """The initializations that compose on at least `level` of their runs (`high`) and those below (`low`), each
    low one's data orders where it composed in both modes and in one, and the data orders on which every low one
    composed at least once (`rescuers`)."""
    counts, cells = D["per_init"].set_index("init"), D["cells"]
    low = list(counts.index[counts["rate"] < level])
    where = {}
    for init in low:
        mine = cells[cells["init"] == init].groupby("data")["composed"].sum()
        where[init] = {"both": [d for d, n in mine.items() if n == 2], "once": [d for d, n in mine.items() if n == 1]}
    datas = sorted(cells["data"].unique())
    rescuers = [d for d in datas if low and all(cells[(cells["init"] == i) & (cells["data"] == d)]["composed"].any()
                                                for i in low)]
    return {"counts": counts, "high": list(counts.index[counts["rate"] >= level]), "low": low, "where": where,
            "rescuers": rescuers, "rarely": bool(low) and bool((counts.loc[low, "rate"] <= 0.25).all())}


def r2_power(path=None) -> dict | None:
    """R2's power calculation (`python -m assignadd_core power r2`: `sweeps/r2_power.json` in the runs folder, or
    `path`), with its rows by (scenario, test); None when it has not been computed."""
    path = path or DEFAULT_ROOT / "sweeps" / "r2_power.json"
    if not path.is_file():
        return None
    found = json.loads(path.read_text())
    found["rows"] = {(r["scenario"], r["test"]): r for r in found["power"]}
    return found


# ---------------------------------------------------------------------------- perturbations and the modes
def flips(S: Mapping, cells: pd.DataFrame, planned: int) -> dict:
    """Each perturbation's flip rate against its cell's own eager run (`rows`, `shown`: the table as the chapter
    prints it), and basin or chaos by R2's rule once the smallest and the largest nudge at step 0 have all `planned`
    runs (`basin`, None before), with how many cells differ at all between the two sizes (`differ`)."""
    flipped = S["flipped"]
    rows = odds.flip_table(flipped, cells) if len(flipped) and len(cells) else pd.DataFrame()
    out = {"rows": rows, "basin": None, "differ": 0, "shown": None}
    if not len(rows):
        return out
    out["shown"] = rows.assign(
        flipped=[f"{a} of {b}" for a, b in zip(rows["flips"], rows["runs"])],
        interval_runs=[f"{lo:.0%}–{hi:.0%}" for lo, hi in zip(rows["low"], rows["high"])],
        interval_cells=[f"{lo:.0%}–{hi:.0%}" for lo, hi in zip(rows["cell_low"], rows["cell_high"])],
        cells_flipped=[f"{a} of {b}" for a, b in zip(rows["cells_with_a_flip"], rows["cells"])],
    )[["setting", "flipped", "interval_runs", "interval_cells", "cells_flipped"]].set_index("setting")
    at = rows.set_index("setting")
    if SMALL_NUDGE in at.index and LARGE_NUDGE in at.index and \
            min(at.loc[SMALL_NUDGE, "runs"], at.loc[LARGE_NUDGE, "runs"]) == planned:
        small, large = odds.paired_cells(odds.flips_by_cell(flipped, cells), SMALL_NUDGE, LARGE_NUDGE)
        out["basin"] = verdicts.basin_or_chaos(small, large)
        out["differ"] = sum(fl / nl != fs / ns for (fs, ns), (fl, nl) in zip(small, large))
    return out


def modes(mode_seed: int) -> dict:
    """The mode seed in its numerical modes: each mode's outcome (`runs`), the modes whose every logged loss equals
    eager's (`loss_equal`), the relative weight distances between modes (`distances`), the compiled step's gradient
    against eager's at eager's checkpoints (`differences`: medians per checkpoint) and the replays (`replay`)."""
    from ..experiments import mode_study  # a slow import (the training stack)
    base = mode_study.study_root(mode_seed)
    runs = mode_study.outcomes(mode_seed)
    out = {"runs": runs, "base": base, "loss_equal": [], "differences": None, "replay": None,
           "distances": pd.read_csv(base / "distances.csv") if (base / "distances.csv").is_file()
           else pd.DataFrame(columns=["step"])}
    if len(runs):
        eager = mode_study.Run(base / "eager").metrics()["loss"]
        out["loss_equal"] = [m for m in runs["mode"] if m != "eager"
                             and mode_study.Run(base / m).metrics()["loss"].equals(eager)]
        out["metrics"] = {m: mode_study.Run(base / m).metrics() for m in runs["mode"]}
    if (base / "step_differences.csv").is_file():
        d = pd.read_csv(base / "step_differences.csv")
        out["differences"] = d.groupby("checkpoint").agg(relative_size=("relative_size", "median"),
                                                         cosine_with_gradient=("cosine_with_gradient", "median"),
                                                         cosine_with_previous=("cosine_with_previous", "median"))
    if (base / "replay.csv").is_file():
        out["replay"] = pd.read_csv(base / "replay.csv")
    return out


def mode_table(M: Mapping) -> pd.DataFrame:
    """The modes' outcomes as the chapter shows them: one row per mode (its words), its precision, composed or
    stuck, the step it composed and 1-var train at the end."""
    runs = M["runs"]
    shown = runs.assign(composed=runs["composed"].map({True: "composed", False: "stuck"}),
                        composition=[f"{int(s):,}" if pd.notna(s) else "—" for s in runs["composition"]],
                        mode=runs["mode"].map(lambda m: MODE_WORDS.get(m, m)))
    return (shown[["mode", "precision", "composed", "composition", "one_var_train"]]
            .rename(columns={"one_var_train": "1-var train at the end"}).set_index("mode").round(3))


def distance_at(distances: pd.DataFrame, column: str, step: int) -> float:
    """The relative weight distance in `column` at the last measured step at or before `step`."""
    series = distances.set_index("step")[column].dropna()
    return float(series[series.index <= step].iloc[-1])


def distance_table(distances: pd.DataFrame) -> pd.DataFrame:
    """Each pair of modes' relative weight distance at its first step, at step 1,001 and at its last step."""
    rows = {}
    for column in [c for c in distances.columns if c != "step"]:
        series = distances.set_index("step")[column].dropna()
        rows[column.replace("_vs_", " vs ")] = {f"step {series.index[0]:,}": f"{series.iloc[0]:.1e}",
                                                "step 1,001": f"{distance_at(distances, column, 1001):.1e}",
                                                f"step {series.index[-1]:,}": f"{series.iloc[-1]:.1e}"}
    return pd.DataFrame(rows).T.rename_axis("relative weight distance")


# ---------------------------------------------------------------------------- rates and the earlier studies
def rates(S: Mapping, cells: pd.DataFrame, main_runs) -> dict:
    """The paper's configuration's rate over the study's seeds (compiled), the crossed design's per mode, and the
    main runs (their full steps) against their re-runs among those seeds: (seed, main composed, re-run composed)."""
    seeds = S["tables"]["seeds"]
    main = {int(name[4:]): Run(run_path(name)) for name in main_runs if Run(run_path(name)).is_complete()}
    at = seeds.set_index("data")["composed"] if len(seeds) else pd.Series(dtype=bool)
    same = [(s, verdicts.composed(r.final()["pools"]["1var_train"]), bool(at.loc[s])) for s, r in main.items()
            if s in at.index]
    steps = seeds["composition"].dropna() if len(seeds) else []
    return {"seeds": seeds, "rate": comp.count(seeds["composed"]), "main": main, "same": same,
            "earliest": int(min(steps)) if len(steps) else None,
            "design": {m: comp.count(g["composed"]) for m, g in cells.groupby("mode")} if len(cells) else {}}


def sweeps(S: Mapping) -> dict:
    """The f and r sweeps by seed (the unit: their runs come from a few seeds): a table of each seed's outcome at the
    paper's configuration and its sweep runs, each seed's share of composed sweep runs (`per_seed`), how many runs each
    seed has (`counts`), and the withdrawn Fisher test that took the runs as independent (`withdrawn_p`)."""
    seeds = S["tables"]["seeds"]
    swept = {name: study(name)[0] for name in ("f_sweep", "r_sweep")}
    runs = pd.concat(swept.values())
    rows = []
    for seed in sorted(set(runs["data"])):
        at_paper = seeds.set_index("data")["composed"].get(seed)
        row = {"seed": seed, "paper's configuration": "—" if at_paper is None else ("composed" if at_paper else "stuck")}
        for name, t in swept.items():
            mine = t[t["data"] == seed]
            steps = mine.loc[mine["composed"], "composition"].dropna()
            row[f"{name}: composed"] = f"{int(mine['composed'].sum())} of {len(mine)}" if len(mine) else "—"
            row[f"{name}: composed at"] = f"{int(steps.min()):,}–{int(steps.max()):,}" if len(steps) else "—"
        rows.append(row)
    at_paper = seeds.set_index("data")["composed"] if len(seeds) else pd.Series(dtype=bool)
    per_seed = runs.groupby("data")["composed"].mean() if len(runs) else pd.Series(dtype=float)
    f_sweep = swept["f_sweep"]
    stuck = [s for s in per_seed.index if s in at_paper.index and not bool(at_paper[s])]
    return {"table": pd.DataFrame(rows).set_index("seed") if rows else None, "per_seed": per_seed, "runs": runs,
            "counts": runs.groupby("data").size() if len(runs) else pd.Series(dtype=int),
            "withdrawn_p": comp.fisher(comp.count(seeds["composed"]), comp.count(runs["composed"])) if len(runs)
            else float("nan"),
            "stuck_at_paper": {s: (int(g["composed"].sum()), len(g)) for s in stuck
                               for g in [f_sweep[f_sweep["data"] == s]] if len(g)}}


def near(S: Mapping, near_sweeps, by_step: int) -> dict:
    """The same seeds at f and r next to the paper's: per value ('f = 0.648') the outcome changes against the paper's
    configuration (`composition.outcome_changes`), for the sweeps whose every run has finished."""
    from ..experiments.sweep import SWEEPS, results_frame  # slow import (the sweep driver loads ray)
    seeds, changes, waiting = S["tables"]["seeds"], {}, []
    for name in near_sweeps:
        sweep, table = SWEEPS[name], study(name)[0]
        if len(table) < len(sweep.points()):
            waiting.append(f"{finished(name, table)}; read when all are ({sweep.description})")
            continue
        values = results_frame(sweep).set_index("key")[sweep.swept_field]
        for value, group in table.assign(value=table["key"].map(values)).groupby("value"):
            changes[f"{sweep.x_label.split()[-1]} = {value:.3g}"] = comp.outcome_changes(group, seeds, by_step=by_step)
    return {"changes": changes, "waiting": waiting}


def near_table(changes: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per neighbouring value: composed there and at the paper's configuration (the same seeds), the moves
    each way and McNemar's test on them."""
    return pd.DataFrame({label: {"composed here": c["near"].describe(), "by the budget": c["near_by_step"].successes,
                                 "at the paper's": c["paper"].describe(), "stuck to composed": c["stuck_to_composed"],
                                 "composed to stuck": c["composed_to_stuck"], "McNemar p": f"{c['p']:.2g}",
                                 "reading": c["moves"]} for label, c in changes.items()}).T


def stream_overlaps(seed: int = 42, steps=range(1, 21)) -> pd.DataFrame:
    """How much of a seed's training stream at a neighbouring f and r is the paper's stream: the share of sequences
    with the same layout and of positions with the same token, over the first `steps`."""
    from ..experiments.sweep.grid import F_GRID, R_GRID  # slow import (the sweep driver loads ray)
    paper = RunConfig().task
    rows = {}
    for field, symbol, value in [("train_fraction", "f", F_GRID[12]), ("two_var_rate", "r", R_GRID[18])]:
        task = TaskConfig(**{**paper.__dict__, field: value})
        shared = comp.stream_overlap(task, paper, seed=seed, steps=steps)
        rows[f"{symbol} = {value:.3g}"] = {"same layout": f"{shared['same_layout']:.0%}",
                                           "same token": f"{shared['same_tokens']:.0%}"}
    return pd.DataFrame(rows).T.rename_axis(f"seed {seed}, steps {steps[0]}–{steps[-1]}")


def factorial(S: Mapping) -> dict | None:
    """The old factorial with the initialization as the unit (its diagonal left out), and its withdrawn reading;
    None when it has not run."""
    from ..experiments.sweep.grid import FACTORIAL_SEEDS  # slow import (the sweep driver loads ray)
    table = S["tables"]["factorial"]
    if not len(table):
        return None
    composers, failers = FACTORIAL_SEEDS[:4], FACTORIAL_SEEDS[4:]
    return {"table": table, "by_init": comp.factorial_by_initialization(table, composers, failers),
            "old": comp.factorial_answer(table, composers, failers), "composers": composers, "failers": failers}


def bf16(S: Mapping) -> dict | None:
    """The main seeds in bf16 beside the same seeds in fp32 (both compiled): each seed's two outcomes (`both`) and
    how many differ; None when it has not run."""
    half, seeds = S["tables"]["bf16"], S["tables"]["seeds"]
    if not len(half):
        return None
    both = half.set_index("data")[["composed"]].join(seeds.set_index("data")[["composed"]], lsuffix=" (bf16)",
                                                     rsuffix=" (fp32)", how="inner")
    return {"both": both, "rate": comp.count(half["composed"]), "runs": len(half),
            "differ": int((both["composed (bf16)"] != both["composed (fp32)"]).sum())}


# ---------------------------------------------------------------------------- how early, and rescue
def predictor(S: Mapping, early_steps=range(101, 2002, 100)) -> dict | None:
    """The early predictor chosen on the paper's configuration's seeds alone and scored once on the crossed design's
    runs (seeds it never saw); None without enough finished runs of both outcomes."""
    seeds, design_ = S["tables"]["seeds"], S["design"]
    train = seeds[seeds["key"].isin(S["logged"]["seeds"])].set_index("key")
    test = design_[design_["key"].isin(S["design_metrics"])].set_index("key")
    if not (len(train) >= 8 and train["composed"].nunique() == 2 and len(test) and test["composed"].nunique() == 2):
        return None
    candidates, steps = ["loss", *POOL_NAMES, *MEASURE_NAMES[:-1]], list(early_steps)
    train_features = comp.feature_table({k: S["logged"]["seeds"][k] for k in train.index}, candidates, steps)
    test_features = comp.feature_table({k: S["design_metrics"][k] for k in test.index}, candidates, steps)
    found = comp.predictor_on_new_seeds(train_features, train["composed"], test_features, test["composed"],
                                        test["init"])
    return {**found, "train": train, "test": test, "test_features": test_features, "last_step": steps[-1]}


def rescue(source_name: str, train_missing: bool) -> dict:
    """The rescue arms branched from a stuck run's final state: each arm's metrics after the branch (`arms`), its last
    1-var train accuracy (`table`) and the arms that composed (`rescued`); `branch` is None when the stuck run is not
    here."""
    from ..experiments import rescue as arms_of  # a slow import (the training stack)
    source = Run(run_path(source_name))
    branch = source.config.train.steps if source.config_path.is_file() else None
    arms, missing = {}, []
    for arm in arms_of.ARMS if branch is not None else []:
        stages = arms_of.rescue(arm, source, root=DEFAULT_ROOT / "rescue", train_missing=train_missing)
        if stages is None:
            missing.append(arm)
            continue
        arms[arm] = pd.concat([s.metrics() for s in stages]).drop_duplicates("step", keep="last")
    last = {ARM_LABELS.get(arm, arm): m.iloc[-1] for arm, m in arms.items()}
    table = pd.DataFrame({"1-var train": {a: round(float(r["1var_train"]), 3) for a, r in last.items()},
                          "at step": {a: f"{int(r['step']):,}" for a, r in last.items()},
                          "outcome": {a: "composed" if verdicts.composed(r["1var_train"]) else "still stuck"
                                      for a, r in last.items()}}).rename_axis("arm")
    return {"branch": branch, "arms": arms, "missing": missing, "table": table,
            "rescued": [a for a, m in arms.items() if verdicts.composed(m.iloc[-1]["1var_train"])],
            "steps": [int(m["step"].max()) - branch for m in arms.values()] if branch else []}


def saving(S: Mapping) -> dict:
    """What stopping once composition held saved on the crossed design (`odds.early_stop_saving`); zeros before it
    has run."""
    if not len(S["design"]):
        return {"stopped": 0, "runs": 0, "steps_share": 0.0, "cpu_h": 0.0, "cpu_h_without": 0.0}
    return odds.early_stop_saving(S["design"])


# ---------------------------------------------------------------------------- R2's record
def r2_record(S: Mapping, D: Mapping, modes_: Mapping | None, F: Mapping, R: Mapping, fact: Mapping | None,
              pred: Mapping | None, arms: Mapping) -> tuple[str, dict]:
    """R2's claim record: its text (the rule's verdict, then what the chapter's other readings show beside it) and
    its details."""
    from ..experiments.sweep import SWEEPS  # slow import (the sweep driver loads ray)
    names, flipped, nudged = S["names"], S["flipped"], S["nudged"]
    answer, fit, basin, r2 = D["answer"], D["fit"], F["basin"], D["r2"]
    parts = []
    if answer is not None:
        parts.append(f"crossed design ({D['whole']} cells, eager and compiled): " + "; ".join(
            f"{verdicts.shown_words(answer['p'][k] < verdicts.ODDS_LEVEL, 'an effect of ' + verdicts.ODDS_PARTS[k])}"
            f" (p = {answer['p'][k]:.2g})" for k in ("init", "data", "cell")))
    if fit is not None:
        parts.append(f"variance shares, fitted on {D['fitted_on']}, latent: "
                     + ", ".join(f"{k} {m:.2f} ({lo:.2f}–{hi:.2f})" for k, (m, lo, hi) in D["shares"].items())
                     + "; observed: " + ", ".join(f"{k} {m:.2f} ({lo:.2f}–{hi:.2f})"
                                                  for k, (m, lo, hi) in D["observed"].items()))
    if modes_ is not None:
        parts.append(f"mode: eager {modes_['eager'].describe()}, compiled {modes_['compiled'].describe()}, McNemar p ="
                     f" {modes_['p']:.2g}, disagree on {modes_['flips']['flips']} of {modes_['flips']['runs']} cells")
    if basin is not None:
        parts.append(f"perturbations ({len(flipped)} of {len(SWEEPS[names['flips']].points())} runs): {basin['reading']}"
                     f" (cells as the unit, sign-flip p = {basin['p']:.2g}; the first rule, Fisher on runs:"
                     f" {basin['by_runs']['reading']}, p = {basin['by_runs']['p']:.2g})")
    parts.append(f"rate at the paper's configuration (compiled) {R['rate'].describe()}")
    if fact is not None:
        by_init = fact["by_init"]
        parts.append(f"old factorial by initialization without the diagonal {by_init['counts']['composers'].describe()}"
                     f" against {by_init['counts']['failers'].describe()} (permutation p = {by_init['permutation_p']:.2g})")
    if pred is not None:
        parts.append(f"predictor chosen on the 32 seeds, on new seeds: AUC {pred['test_auc']:.2f}"
                     f" ({pred['interval'][0]:.2f}–{pred['interval'][1]:.2f})")
    if arms["arms"]:
        parts.append(f"rescued by {', '.join(arms['rescued']) if arms['rescued'] else 'none'} of {len(arms['arms'])} arms")
    text = f"{r2.text}; {finished(names['replicates'], nudged)}; beside it: " + "; ".join(parts)
    details = {"rule": {"verdict": r2.verdict, "text": r2.text, "replicated_cells": D["n_replicated"],
                        "nudged_runs": len(nudged)},
               "design": {"cells": D["whole"], "answer": answer and answer["answer"], "p": answer and answer["p"]},
               "shares": fit is not None and {"fitted_on": D["fitted_on"],
                                              "latent": {k: list(v) for k, v in D["shares"].items()},
                                              "observed": {k: list(v) for k, v in D["observed"].items()}},
               "mode": modes_ and {"eager": [modes_["eager"].successes, modes_["eager"].trials],
                                   "compiled": [modes_["compiled"].successes, modes_["compiled"].trials],
                                   "p": modes_["p"], "disagree": modes_["flips"]["flips"]},
               "flips": {"runs": len(flipped), "basin_or_chaos": basin},
               "rate": [R["rate"].successes, R["rate"].trials],
               "predictor_new_seeds": pred and {"auc": pred["test_auc"], "interval": list(pred["interval"])},
               "rescued": arms["rescued"]}
    return text, details


# ---------------------------------------------------------------------------- the design, as the chapter states it
def main_outcomes(main_runs, continued_steps: int) -> dict:
    """The main runs (each of the paper's main-run steps): which composed and at what step (`composed`), which did
    not (`stuck`), and of those the continuations to `continued_steps` that are here (`continued`) and composed
    (`late`)."""
    main = {int(name[4:]): Run(run_path(name)) for name in main_runs if Run(run_path(name)).is_complete()}
    outcome = {s: verdicts.composed(r.final()["pools"]["1var_train"]) for s, r in main.items()}
    stuck = [s for s, c in outcome.items() if not c]
    later = {s: Run(run_path(f"seed{s}_to{continued_steps}")) for s in stuck}
    continued = [s for s, r in later.items() if r.is_complete()]
    return {"main": main, "stuck": stuck, "continued": continued,
            "late": [s for s in continued if verdicts.composed(later[s].final()["pools"]["1var_train"])],
            "composed": {s: detect_phases(r.metrics())["composition"] for s, r in main.items() if outcome[s]},
            "steps": max((r.config.train.steps for r in main.values()), default=0)}


def perturbation_kinds() -> dict:
    """The perturbation study's settings (`sweep.grid.FLIP_PERTURBATIONS`) by kind: nudges at step 0 [(size, seeds)],
    later nudges [(size, step, seeds)] and gradient noise [(size, seeds)]."""
    from ..experiments.sweep.grid import FLIP_PERTURBATIONS  # slow import (the sweep driver loads ray)
    kinds: dict[tuple, set] = {}
    for perturbation in FLIP_PERTURBATIONS:
        p = {k.removeprefix("train."): v for k, v in perturbation.items()}
        key = ("noise", p["grad_noise"], 0) if "grad_noise" in p else ("nudge", p["jitter"], p.get("jitter_step", 0))
        kinds.setdefault(key, set()).add(p["perturb_seed"])
    return {"at_0": [(size, len(s)) for (kind, size, step), s in kinds.items() if kind == "nudge" and step == 0],
            "later": [(size, step, len(s)) for (kind, size, step), s in kinds.items() if kind == "nudge" and step],
            "noise": [(size, len(s)) for (kind, size, step), s in kinds.items() if kind == "noise"]}


def where_trained(name: str) -> tuple[list[str], list[str]]:
    """Where a sweep's finished runs trained: the devices ('CPU', 'a GPU') and the modes ('compiled', 'eager')."""
    from ..experiments.sweep import SWEEPS, results_frame  # slow import (the sweep driver loads ray)
    records = results_frame(SWEEPS[name])
    if records.empty:
        return [], []
    return (sorted({"CPU" if d == "cpu" else "a GPU" for d in records["device"].dropna()}),
            sorted({"compiled" if bool(c) else "eager" for c in records["compiled"].dropna()}))


def prior_move(sensitivity: pd.DataFrame, decimals: int = 2) -> dict:
    """The largest move of a share, as the table prints it (rounded to `decimals`), from the main prior scale of the
    SDs to another: its part, scale ('latent' or 'observed'), the other prior scale, the two values and the move."""
    at = sensitivity.set_index(["prior_scale", "part"])[["latent", "observed"]].round(decimals)
    main = at.loc[odds.SD_PRIOR_SCALE]
    best = None
    for scale in (s for s in at.index.get_level_values(0).unique() if s != odds.SD_PRIOR_SCALE):
        for part in main.index:
            for kind in ("latent", "observed"):
                move = round(abs(at.loc[(scale, part), kind] - main.loc[part, kind]), decimals)
                if best is None or move > best["move"]:
                    best = {"part": part, "scale": kind, "prior_scale": scale, "from": float(main.loc[part, kind]),
                            "to": float(at.loc[(scale, part), kind]), "move": float(move)}
    return best


def planned(name: str) -> int:
    """How many runs a sweep states (finished or not)."""
    from ..experiments.sweep import SWEEPS  # slow import (the sweep driver loads ray)
    return len(SWEEPS[name].points())


def arm_settings() -> pd.DataFrame:
    """What each rescue arm changes (`experiments.rescue.ARMS`), by its display name: its stages in words (the
    command line's arm names are in `rescue --help`)."""
    from ..experiments.rescue import ARMS  # a slow import (the training stack)
    setting = {"two_var_rate": "2-var rate r", "lr": "learning rate", "data_seed": "data order seed"}

    def stage(changes, steps, edit):
        what = ", ".join(f"{setting.get(k.split('.')[-1], k.split('.')[-1])} = {v:g}" for k, v in changes.items())
        return f"{what or (edit and edit.replace('_', ' ')) or 'the source settings'} for {steps:,} steps"
    return pd.DataFrame({"what it changes": {ARM_LABELS.get(arm, arm): "; then ".join(stage(*s) for s in stages)
                                             for arm, stages in ARMS.items()}}).rename_axis("arm")
