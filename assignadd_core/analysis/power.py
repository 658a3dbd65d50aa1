"""C9's power calculation (stated 2026-12-04, before the added seeds ran): how many seeds the r sweep needs for C9's
own estimator to give an interval no wider than the rule's width (the paper's threshold itself), and what the step
budget does.

* **The model of today's data.** Two random-intercept logistic models with the seed as the random effect, fitted by
  maximum likelihood (the seed's intercept integrated out by Gauss-Hermite quadrature): whether a run composes,
  logit P = c0 + z_seed; and, among composed runs, whether its 2-var union reaches THRESHOLD_LEVEL,
  logit P = a + b r + u_seed. The seed is the unit: its runs share its initialization and data order.
* **The simulation.** A data set of n seeds at the r grid's first 13 values (and, as today, two seeds at the grid's
  values above them), each seed with its own intercepts drawn from the fitted model, each run composing and
  succeeding by its probabilities; C9's estimator (`thresholds.logistic_threshold`: the Firth logistic fit with the
  seeds resampled) is applied to it, with fewer resamples than the verdict's (`SIM_RESAMPLES`, stated) to keep the
  cost at minutes. The power is the share of data sets whose interval is no wider than the rule's width.
* **The budget.** The share of composed runs at r >= 0.2 whose union succeeds, and, from the per-point metrics
  logged every 1,000 steps, the step at which each run's 2-var var-restricted pools (the positional repair the union
  waits for) first reach the level: a run still below it at the budget's end is censored, not failed.

`python -m assignadd_core power` writes the table the study profile's choice cites (runs/sweeps/c9_power.json).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..rules.verdicts import THRESHOLD_LEVEL, composed
from ..rules import paper
from ..rules.stats import Rate
from .thresholds import logistic_threshold

QUADRATURE_NODES = 30
SIM_RESAMPLES = 400  # seed resamples per simulated data set (the verdict uses C9_RESAMPLES, 2,000)
SEED_COUNTS = (5, 10, 15, 20)
TARGET_POWER, MIN_SEEDS = 0.8, 15  # the seed count chosen: the fewest (at least MIN_SEEDS) reaching TARGET_POWER
REPAIR_POOLS = ("2var_var_restricted_1", "2var_var_restricted_2")  # the pools the union's failures sit low on


def _log_marginal(beta_x: np.ndarray, y: np.ndarray, groups: np.ndarray, sd: float) -> float:
    """log of prod over groups of the integral over u ~ N(0, sd^2) of prod_i p_i^y (1-p_i)^(1-y), p = expit(eta + u)."""
    nodes, weights = np.polynomial.hermite.hermgauss(QUADRATURE_NODES)
    u = math.sqrt(2.0) * sd * nodes  # [K]
    eta = beta_x[:, None] + u[None, :]  # [n, K]
    log_p = -np.logaddexp(0.0, -eta)
    log_q = -np.logaddexp(0.0, eta)
    per_run = np.where(y[:, None] > 0, log_p, log_q)
    total = 0.0
    for g in np.unique(groups):
        s = per_run[groups == g].sum(0) + np.log(weights / math.sqrt(math.pi))
        total += float(np.logaddexp.reduce(s))
    return total


def fit_random_intercept(x, y, groups, slope: bool = True) -> dict:
    """Maximum-likelihood fit of logit P(y) = a (+ b x) + u_group, u ~ N(0, sd^2): {"a", "b" (0 without a slope),
    "sd", "loglik", "groups"}. The SD is bounded to [1e-3, 20] on the logit scale (a separated data set cannot run
    it off)."""
    from scipy.optimize import minimize  # here, not at the top: a slow import (scipy)
    x, y, groups = np.asarray(x, float), np.asarray(y, float), np.asarray(groups)

    def unpack(theta):
        a, b = theta[0], theta[1] if slope else 0.0
        return a, b, float(np.clip(math.exp(theta[-1]), 1e-3, 20.0))

    def loss(theta):
        a, b, sd = unpack(theta)
        return -_log_marginal(a + b * x, y, groups, sd)
    start = np.array([0.0, 0.0, 0.0] if slope else [0.0, 0.0])
    best = minimize(loss, start, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 4000})
    a, b, sd = unpack(best.x)
    return {"a": float(a), "b": float(b), "sd": sd, "loglik": float(-best.fun), "groups": int(len(np.unique(groups)))}


def fit_today(done: pd.DataFrame, field: str = "two_var_rate", metric: str = "value",
              level: float = THRESHOLD_LEVEL) -> dict:
    """Both models on a sweep's finished runs: {"composition": fit, "success": fit}."""
    comp = done["1var_train"].map(composed).to_numpy()
    kept = done[comp]
    return {"composition": fit_random_intercept(np.zeros(len(done)), comp, done["seed"].to_numpy(), slope=False),
            "success": fit_random_intercept(kept[field].to_numpy(float), (kept[metric] >= level).to_numpy(),
                                            kept["seed"].to_numpy())}


def simulate_sweep(model: dict, low_values, high_values, n_seeds: int, high_seeds: int, rng: np.random.Generator,
             field: str = "two_var_rate") -> pd.DataFrame:
    """One data set as a sweep's finished runs (seed, field, 1var_train, value): `n_seeds` seeds at `low_values`,
    the first `high_seeds` of them also at `high_values`; `value` is 1.0 for a success, 0.0 otherwise."""
    comp, succ = model["composition"], model["success"]
    rows = []
    for seed in range(n_seeds):
        z, u = rng.normal(0, comp["sd"]), rng.normal(0, succ["sd"])
        values = [*low_values, *(high_values if seed < high_seeds else ())]
        for r in values:
            composes = rng.random() < 1 / (1 + math.exp(-(comp["a"] + z)))
            succeeds = rng.random() < 1 / (1 + math.exp(-(succ["a"] + succ["b"] * r + u)))
            rows.append({"seed": seed, field: float(r), "1var_train": 1.0 if composes else 0.0,
                         "value": 1.0 if succeeds else 0.0})
    return pd.DataFrame(rows)


def seed_power(model: dict, low_values, high_values, seed_counts=SEED_COUNTS, high_seeds: int = 2, sims: int = 200,
          resamples: int = SIM_RESAMPLES, width: float | None = None, seed: int = 0) -> pd.DataFrame:
    """Per seed count: the share of simulated data sets whose C9 interval is no wider than `width` (with its exact
    95 % interval over the simulations), and the median width (`width` None: C9's, the paper's threshold itself).
    Resampling inside uses `resamples`."""
    width = paper.R_THRESHOLD.value if width is None else width
    rng = np.random.default_rng(seed)
    rows = []
    for n in seed_counts:
        widths = []
        for _ in range(sims):
            data = simulate_sweep(model, low_values, high_values, n, min(high_seeds, n), rng)
            with np.errstate(invalid="ignore"):  # resamples off the grid (+-inf) make an infinite interval
                fit = logistic_threshold(data, "two_var_rate", metric="value", level=0.5, resamples=resamples,
                                         seed=int(rng.integers(2 ** 31)))
            widths.append(math.inf if fit["interval"] is None or fit["seeds"] < 3
                          else fit["interval"][1] - fit["interval"][0])
        widths = np.asarray(widths)
        narrow = Rate(int((widths <= width).sum()), sims)
        rows.append({"seeds": n, "runs_per_seed_low": len(low_values), "p_narrow": narrow.value,
                     "low": narrow.low, "high": narrow.high, "median_width": float(np.median(widths)),
                     "sims": sims, "resamples": resamples})
    return pd.DataFrame(rows)


def choose_seeds(table: pd.DataFrame, target: float = TARGET_POWER, minimum: int = MIN_SEEDS) -> int:
    """The fewest seeds (at least `minimum`) whose simulated probability of a narrow enough interval reaches `target`;
    the largest count tried when none does."""
    reaching = table[(table["p_narrow"] >= target) & (table["seeds"] >= minimum)]
    return int(reaching["seeds"].min()) if len(reaching) else int(table["seeds"].max())


# ---------------------------------------------------------------------------- the step budget
def repair_step(metrics: pd.DataFrame, level: float = THRESHOLD_LEVEL, pools=REPAIR_POOLS) -> float:
    """The first logged step from which the mean of the 2-var var-restricted pools stays at or above `level` to the
    end of the run (NaN: not by the run's end, censored at its last step)."""
    mean = metrics[list(pools)].mean(axis=1).to_numpy()
    steps = metrics["step"].to_numpy()
    below = np.nonzero(mean < level)[0]
    if len(below) == 0:
        return float(steps[0])
    return float(steps[below[-1] + 1]) if below[-1] + 1 < len(steps) else math.nan


def budget_table(done: pd.DataFrame, metrics_of, field: str = "two_var_rate", from_value: float = 0.2,
                 metric: str = "value", level: float = THRESHOLD_LEVEL) -> dict:
    """Among composed runs at `field` >= `from_value`: how many succeed at the end ({"succeeded", "runs"}), and per
    run with per-point metrics (`metrics_of(key)`: a DataFrame or None) its repair step (`repair_step`) and its
    pools' level in the last 5,000 logged steps: {"table": one row per such run, "late": runs repaired in the last
    third of the budget, "unrepaired": runs not repaired by the end}."""
    kept = done[done["1var_train"].map(composed) & (done[field] >= from_value - 1e-9)]
    rows = []
    for _, run in kept.iterrows():
        metrics = metrics_of(run["key"])
        step = math.nan if metrics is None else repair_step(metrics, level)
        last = None if metrics is None else int(metrics["step"].iloc[-1])
        rows.append({"key": run["key"], "seed": int(run["seed"]), field: float(run[field]),
                     "succeeded": bool(run[metric] >= level), "has_metrics": metrics is not None,
                     "repair_step": step, "last_step": last})
    table = pd.DataFrame(rows)
    with_metrics = table[table["has_metrics"]] if len(table) else table
    budget = float(done["last_step"].max()) if "last_step" in done else math.nan
    late = int((with_metrics["repair_step"] > budget * 2 / 3).sum()) if len(with_metrics) else 0
    unrepaired = int(with_metrics["repair_step"].isna().sum()) if len(with_metrics) else 0
    return {"succeeded": int(table["succeeded"].sum()) if len(table) else 0, "runs": len(table), "table": table,
            "with_metrics": len(with_metrics), "late": late, "unrepaired": unrepaired, "budget": budget}


def c9_report(done: pd.DataFrame, metrics_of, low_values, high_values, sims: int = 200, seed: int = 0) -> dict:
    """The whole calculation as one JSON-ready record: the two fits, the power table, the chosen seed count and the
    budget numbers."""
    model = fit_today(done)
    table = seed_power(model, low_values, high_values, sims=sims, seed=seed)
    budget = budget_table(done, metrics_of)
    repaired = budget["table"]["repair_step"].dropna() if budget["runs"] else pd.Series(dtype=float)
    return {"model": model, "threshold_at_mean_seed": -model["success"]["a"] / model["success"]["b"],
            "power": table.to_dict(orient="records"), "chosen_seeds": choose_seeds(table),
            "width": paper.R_THRESHOLD.value, "sims": sims, "resamples": SIM_RESAMPLES, "seed": seed,
            "budget": {"composed_runs_from_r_0.2": budget["runs"], "succeeded": budget["succeeded"],
                       "with_metrics": budget["with_metrics"], "repaired_in_last_third": budget["late"],
                       "not_repaired_by_the_end": budget["unrepaired"], "budget_steps": budget["budget"],
                       "repair_steps": sorted(float(s) for s in repaired)}}
