"""When does a run compose? The composition study's numbers: rates with intervals, the factorial of initialization
and data order, the step of composition, an early predictor, and the verdict-free answer of R2 (`verdicts.RULES`).

Inputs are the study's sweeps (`sweep.SWEEPS`: composition_seeds, composition_factorial, composition_bf16): one
record per run (its config: seed = data order, init_seed) and one metrics table per run (every 100 steps).
"""
from __future__ import annotations

from dataclasses import dataclass
import itertools

import numpy as np
import pandas as pd

from ..rules.stats import Rate, fisher, mcnemar_exact, rate as count  # noqa: F401  (the chapters read them here)
from ..rules.verdicts import composed
from .phases import detect_phases
from .sweep_records import finished
from ..core.data import TrainStream

FISHER_LEVEL = 0.05


def study_table(records: pd.DataFrame, metrics: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per finished run: key, data (train.seed), init (the weights' seed), composed, composition and jump
    steps (`phases.detect_phases`), and the final 1-var train accuracy. `records`: a sweep's results frame;
    `metrics`: config hash -> metrics table (missing: steps left empty). A sweep not run yet: no rows, the same columns."""
    columns = ["key", "data", "init", "one_var_train", "composed", "composition", "jump"]
    extra = [c for c in REPLICATE_FIELDS if c in records]  # a design with replicates: the mode, the perturbation
    rows = []
    done = finished(records)  # no records: no columns either
    for record in done.to_dict("records"):
        init = record.get("init_seed")
        init = int(record["seed"]) if init is None or pd.isna(init) else int(init)
        table = metrics.get(record["key"])
        found = detect_phases(table) if table is not None else {}
        rows.append({"key": record["key"], "data": int(record["seed"]), "init": init,
                     "one_var_train": float(record["1var_train"]), "composed": composed(float(record["1var_train"])),
                     "composition": found.get("composition"), "jump": found.get("jump"),
                     **{c: record[c] for c in extra}})
    return pd.DataFrame(rows, columns=columns + extra)


# Columns a study's records may carry beyond its cell: how the run was computed, its perturbation, its length.
REPLICATE_FIELDS = ("mode", "compiled", "jitter", "jitter_step", "grad_noise", "perturb_seed", "last_step", "step_budget",
                    "wall_time_s")


def outcome_changes(near: pd.DataFrame, paper: pd.DataFrame, by_step: int | None = None) -> dict:
    """The seeds run both under another setting (`near`) and at the paper's configuration (`paper`), two study
    tables: each setting's count, how many seeds' outcomes move each way (a paired comparison), the exact
    McNemar test of those moves (`p`; `moves`: "raises the rate", "lowers the rate" or "no change shown" at
    `FISHER_LEVEL`), and, with `by_step`, the near runs that composed by that step (`near_by_step`)."""
    mine = near.set_index("data").reindex(columns=["composed", "composition"]).rename(columns={"composed": "near"})
    both = mine.join(paper.set_index("data")["composed"].rename("paper"), how="inner")
    both["near"], both["paper"] = both["near"].astype(bool), both["paper"].astype(bool)
    up, down = int((both["near"] & ~both["paper"]).sum()), int((~both["near"] & both["paper"]).sum())
    p = mcnemar_exact(up, down)
    out = {"near": count(both["near"]), "paper": count(both["paper"]), "stuck_to_composed": up,
           "composed_to_stuck": down, "p": p,
           "moves": "no change shown" if p >= FISHER_LEVEL else "raises the rate" if up > down else "lowers the rate"}
    if by_step is not None:
        steps = pd.to_numeric(both["composition"], errors="coerce")
        out["near_by_step"] = count(both["near"] & (steps <= by_step))
    return out


def factorial_blocks(table: pd.DataFrame, composers, failers) -> pd.DataFrame:
    """Counts per block: rows = initialization group, columns = data-order group."""
    groups = {"composers": set(composers), "failers": set(failers)}
    out = {}
    for init_name, inits in groups.items():
        for data_name, datas in groups.items():
            cells = table[table["init"].isin(inits) & table["data"].isin(datas)]
            out[(f"{init_name}' initialization", f"{data_name}' data order")] = count(cells["composed"])
    return pd.Series(out).unstack()


def factorial_answer(table: pd.DataFrame, composers, failers) -> dict:
    """R2's factorial rule: Fisher's exact test by initialization group and by data-order group."""
    by_init = {g: count(table[table["init"].isin(s)]["composed"]) for g, s in (("composers", composers),
                                                                               ("failers", failers))}
    by_data = {g: count(table[table["data"].isin(s)]["composed"]) for g, s in (("composers", composers),
                                                                               ("failers", failers))}
    p_init, p_data = fisher(by_init["composers"], by_init["failers"]), fisher(by_data["composers"], by_data["failers"])
    init_effect = p_init < FISHER_LEVEL and by_init["composers"].successes / max(by_init["composers"].trials, 1) > \
        by_init["failers"].successes / max(by_init["failers"].trials, 1)
    data_effect = p_data < FISHER_LEVEL and by_data["composers"].successes / max(by_data["composers"].trials, 1) > \
        by_data["failers"].successes / max(by_data["failers"].trials, 1)
    answer = ("both the initialization and the data order" if init_effect and data_effect else
              "the initialization" if init_effect else "the data order" if data_effect else
              "neither alone (their combination, or chance)")
    return {"by_init": by_init, "by_data": by_data, "p_init": p_init, "p_data": p_data, "answer": answer}


def ecdf(values) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and the share of runs at or below each."""
    x = np.sort(np.asarray([v for v in values if v is not None and not pd.isna(v)], dtype=float))
    return x, np.arange(1, len(x) + 1) / max(len(x), 1)


# ---------------------------------------------------------------------------- an early predictor
def auc(scores, labels) -> float:
    """Area under the ROC curve: the chance that a positive scores above a negative (ties count half)."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    pos, neg = scores[labels], scores[~labels]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def roc_curve(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    """(false-positive rate, true-positive rate) at every threshold, from (0, 0) to (1, 1)."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    thresholds = np.unique(scores)[::-1]
    fpr = [0.0] + [float((scores[~labels] >= t).mean()) for t in thresholds]
    tpr = [0.0] + [float((scores[labels] >= t).mean()) for t in thresholds]
    return np.array(fpr), np.array(tpr)


def feature_table(metrics: dict[str, pd.DataFrame], columns, steps) -> pd.DataFrame:
    """Rows: runs (config hash); columns: (quantity, step) -> the logged value at that eval step."""
    data = {}
    for key, table in metrics.items():
        by_step = table.set_index("step")
        data[key] = {(c, s): float(by_step.loc[s, c]) if s in by_step.index else np.nan for c in columns for s in steps}
    frame = pd.DataFrame.from_dict(data, orient="index")
    frame.columns = pd.MultiIndex.from_tuples(frame.columns, names=["quantity", "step"])
    return frame


def early_predictor(features: pd.DataFrame, labels: pd.Series, fit_rows, test_rows, level: float = 0.9) -> dict:
    """For each (quantity, step), the direction and AUC on the fitting half, then the AUC of the same direction
    on the held-out half. Returns {"table": per feature, "best": the feature chosen on the fitting half (highest
    AUC, earliest step on ties), "per_step": the feature chosen at each step, "earliest": the earliest step from
    which the feature chosen at every later step keeps a held-out AUC of at least `level`}."""
    rows = []
    for column in features.columns:
        fit_auc = auc(features.loc[fit_rows, column], labels[fit_rows])
        sign = 1.0 if np.isnan(fit_auc) or fit_auc >= 0.5 else -1.0
        rows.append({"quantity": column[0], "step": column[1], "sign": sign,
                     "fit_auc": max(fit_auc, 1 - fit_auc) if not np.isnan(fit_auc) else np.nan,
                     "test_auc": auc(sign * features.loc[test_rows, column], labels[test_rows])})
    table = pd.DataFrame(rows)
    ranked = table.dropna(subset=["fit_auc"]).sort_values(["fit_auc", "step"], ascending=[False, True])
    best = ranked.iloc[0].to_dict() if len(ranked) else None
    per_step = ranked.groupby("step").head(1).sort_values("step").reset_index(drop=True)  # chosen at each step
    holds = (per_step["test_auc"] >= level)[::-1].cummin()[::-1]  # from this step on, every later one too
    earliest = per_step[holds].iloc[0].to_dict() if bool(holds.any()) else None
    return {"table": table, "best": best, "per_step": per_step, "earliest": earliest}


# ---------------------------------------------------------------------------- the old factorial, re-read (2026-12-02)
def factorial_by_initialization(table: pd.DataFrame, composers, failers) -> dict:
    """The factorial with the initialization as the unit and without the diagonal (a seed's own run, which set its
    'composer' or 'failer' label): each initialization's rate over the other data orders, each group's count, an
    exact Mann-Whitney test of the per-initialization rates (4 against 4) and the exact permutation test of the
    group labels (every way to call 4 of the 8 initializations 'composers'; statistic: the difference of the
    groups' mean rates; two-sided)."""

    from scipy.stats import mannwhitneyu  # here, not at the top: a slow import (scipy)
    off = table[table["init"] != table["data"]]
    per_init = off.groupby("init")["composed"].agg(["sum", "count"])
    per_init["rate"] = per_init["sum"] / per_init["count"]
    groups = {"composers": [i for i in composers if i in per_init.index],
              "failers": [i for i in failers if i in per_init.index]}
    counts = {g: Rate(int(per_init.loc[ids, "sum"].sum()), int(per_init.loc[ids, "count"].sum()))
              for g, ids in groups.items()}
    a, b = per_init.loc[groups["composers"], "rate"], per_init.loc[groups["failers"], "rate"]
    mann_whitney = float(mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue) if len(a) and len(b) \
        else float("nan")
    rates, inits = per_init["rate"].to_dict(), list(per_init.index)
    observed = a.mean() - b.mean()
    diffs = []
    for chosen in itertools.combinations(inits, len(a)):
        rest = [i for i in inits if i not in chosen]
        diffs.append(np.mean([rates[i] for i in chosen]) - np.mean([rates[i] for i in rest]))
    permutation = float(np.mean(np.abs(diffs) >= abs(observed) - 1e-12))
    return {"per_init": per_init, "counts": counts, "mann_whitney_p": mann_whitney, "permutation_p": permutation,
            "fisher_p_withdrawn": fisher(counts["composers"], counts["failers"])}


# ---------------------------------------------------------------------------- the early predictor on new seeds
def predictor_on_new_seeds(train: pd.DataFrame, train_labels: pd.Series, test: pd.DataFrame, test_labels: pd.Series,
                           test_groups: pd.Series, n_boot: int = 2000, seed: int = 0) -> dict:
    """The feature (quantity, step) and direction chosen on the training runs alone (highest AUC, earliest step on
    ties), scored once on runs of seeds it never saw: the test AUC and a 95 % bootstrap interval that resamples
    `test_groups` (the initializations: runs of one initialization are not independent). Also the AUC of the
    feature chosen at each step, on the test runs (descriptive: nothing is chosen on them)."""
    rows = []
    for column in train.columns:
        fit = auc(train[column], train_labels)
        if np.isnan(fit):
            continue
        sign = 1.0 if fit >= 0.5 else -1.0
        rows.append({"quantity": column[0], "step": column[1], "sign": sign, "train_auc": max(fit, 1 - fit),
                     "test_auc": auc(sign * test[column], test_labels)})
    table = pd.DataFrame(rows).sort_values(["train_auc", "step"], ascending=[False, True])
    best = table.iloc[0].to_dict()
    column = (best["quantity"], best["step"])
    scores, labels = best["sign"] * test[column], test_labels.astype(bool)
    rng = np.random.default_rng(seed)
    groups = test_groups.unique()
    boots = []
    for _ in range(n_boot):
        chosen = rng.choice(groups, size=len(groups), replace=True)
        index = np.concatenate([np.flatnonzero(test_groups.to_numpy() == g) for g in chosen])
        value = auc(scores.to_numpy()[index], labels.to_numpy()[index])
        if not np.isnan(value):
            boots.append(value)
    low, high = (np.quantile(boots, [0.025, 0.975]) if boots else (np.nan, np.nan))
    per_step = table.groupby("step").head(1).sort_values("step").reset_index(drop=True)
    return {"best": best, "test_auc": best["test_auc"], "interval": (float(low), float(high)), "table": table,
            "per_step": per_step}


def stream_overlap(task_a, task_b, seed: int, steps=range(1, 201), batch_size: int = 512) -> dict:
    """How much two training streams of one data seed under two task settings (e.g. f = 0.648 and 0.7) share, over
    `steps`: the share of sequences with the same layout (which positions hold a number, a variable or another
    token) and the share of tokens that are equal. Two data orders drawn apart share neither beyond chance."""
    a, b = TrainStream(task_a, batch_size, seed), TrainStream(task_b, batch_size, seed)
    n = task_a.modulus

    def kind(tokens):  # 0: a number, 1: a variable, 2: another token (PAD, +, =)
        return np.where(tokens < n, 0, np.where(tokens >= n + 3, 1, 2))

    layouts, tokens = [], []
    for step in steps:
        ta, tb = (s.batch(step)[0].numpy() for s in (a, b))
        layouts.append((kind(ta) == kind(tb)).all(axis=1).mean())
        tokens.append((ta == tb).mean())
    return {"same_layout": float(np.mean(layouts)), "same_tokens": float(np.mean(tokens))}
