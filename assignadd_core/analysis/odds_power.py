"""The power of R2's tests on the crossed design with four replicates a cell (eager, compiled and two step-0 nudges),
computed from the eager and compiled runs alone, before any nudged run is read: designs are simulated from the crossed
logistic model fitted to those runs (`odds.fit_crossed`) and each is read by R2's own tests
(`odds.permutation_tests`, the rule's numbers of shuffles).

Three scenarios, each `sims` designs of the real design's size:

* "as fitted": the posterior medians of the three SDs, of the intercept and of the compiled mode's effect (a nudged
  run behaves as an eager one);
* "no pair effect": the same with the pair's (cell's) SD at 0: the cell test should reject in about 5 % (its size);
* "over the posterior": each design from one posterior draw of all of them (the power averaged over what the eager
  and compiled runs leave open).
"""
from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from ..rules.stats import clopper_pearson
from ..rules.verdicts import ODDS_LEVEL as LEVEL  # R2's level
from . import odds

REPLICATE_KINDS = ("eager", "compiled", "nudged", "nudged")  # a cell's four runs, in R2's layer order
SCENARIOS = ("as fitted", "no pair effect", "over the posterior")


def simulate_design(intercept: float, sds: dict, compiled_effect: float, n_init: int, n_data: int,
             rng: np.random.Generator) -> np.ndarray:
    """One design's outcomes as [init, data, replicate] (0/1), from logit P = b0 + u_init + v_data + w_cell (+ the
    compiled mode's effect on the second replicate)."""
    u = rng.normal(0.0, sds["init"], n_init)
    v = rng.normal(0.0, sds["data"], n_data)
    w = rng.normal(0.0, sds["cell"], (n_init, n_data))
    kind = np.array([compiled_effect if k == "compiled" else 0.0 for k in REPLICATE_KINDS])
    latent = intercept + u[:, None, None] + v[None, :, None] + w[:, :, None] + kind[None, None, :]
    return (rng.random(latent.shape) < 1 / (1 + np.exp(-latent))).astype(float)


def _parameters(fit: dict, scenario: str, rng: np.random.Generator) -> tuple[float, dict, float]:
    if scenario == "over the posterior":
        k = int(rng.integers(len(fit["intercept"])))
        return float(fit["intercept"][k]), {f: float(fit["sd"][f][k]) for f in odds.FACTORS}, float(fit["mode"][k])
    sds = {f: float(np.median(fit["sd"][f])) for f in odds.FACTORS}
    if scenario == "no pair effect":
        sds["cell"] = 0.0
    return float(np.median(fit["intercept"])), sds, float(np.median(fit["mode"]))


def design_power(fit: dict, n_init: int, n_data: int, sims: int = 200, seed: int = 0) -> pd.DataFrame:
    """Per scenario and test (init, data, cell): how many of `sims` simulated designs the test rejects at LEVEL,
    with the exact 95 % interval of that rate."""
    if sims < 1:
        raise ValueError(f"sims must be at least 1, got {sims}")
    rng = np.random.default_rng(seed)
    rows = []
    for scenario in SCENARIOS:
        rejected = dict.fromkeys(odds.FACTORS, 0)
        for s in range(sims):
            outcomes = simulate_design(*_parameters(fit, scenario, rng), n_init, n_data, rng)
            p = {"init": odds.factor_permutation_p(outcomes, 0, seed=s),
                 "data": odds.factor_permutation_p(outcomes, 1, seed=s),
                 "cell": odds.cell_permutation_p(outcomes, seed=s)}
            for test in odds.FACTORS:
                rejected[test] += p[test] < LEVEL
        for test in odds.FACTORS:
            low, high = clopper_pearson(rejected[test], sims)
            rows.append({"scenario": scenario, "test": test, "rejected": int(rejected[test]), "sims": sims,
                         "rate": rejected[test] / sims, "low": low, "high": high})
    return pd.DataFrame(rows)


def r2_report(cells: pd.DataFrame, sims: int = 200, seed: int = 0) -> dict:
    """The whole calculation as one JSON-ready record, from the crossed design's eager and compiled runs
    (`odds.complete_cells`): the day it was computed, the fit it simulates from (posterior medians and 95 %
    intervals) and the power table."""
    fit = odds.fit_crossed(cells, seed=seed)
    n_init, n_data = cells["init"].nunique(), cells["data"].nunique()
    table = design_power(fit, n_init, n_data, sims=sims, seed=seed)
    summary = {**{f"sd_{f}": odds.interval(fit["sd"][f]) for f in odds.FACTORS},
               "intercept": odds.interval(fit["intercept"]), "compiled": odds.interval(fit["mode"])}
    return {"computed": date.today().isoformat(), "runs": int(len(cells)), "cells": int(n_init * n_data), "replicates": len(REPLICATE_KINDS),
            "fit": summary, "level": LEVEL, "sims": sims, "seed": seed, "power": table.to_dict(orient="records")}
