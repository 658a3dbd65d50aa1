"""Composition as odds: a crossed design of initializations x data orders with replicates in every cell, and what
moves the probability that a run composes.

Two analyses of one table (a row per run: init, data, replicate, mode, composed), each with the initialization and
the data order as its units, never the run:

* **Variance components** of a crossed random-effects logistic model,
  logit P(composed) = b0 + b_mode * compiled + u_init + v_data + w_cell, with u, v, w normal with SDs s_init,
  s_data, s_cell. On the latent scale a run's own chance (a logistic residual) has variance pi^2 / 3, so each
  factor's share of the variance is s^2 / (s_init^2 + s_data^2 + s_cell^2 + pi^2 / 3); the cell's share is what
  the pair decides beyond its two parts, the residual's share is what the run itself decides. Fitted by a Gibbs
  sampler with Polya-Gamma augmentation (Polson, Scott and Windle 2013; the draws from the `polyagamma` package),
  half-Cauchy(0, `SD_PRIOR_SCALE`) priors on the SDs: the intervals are posterior quantiles. (statsmodels'
  variational fit was tried first: on simulated designs its intervals were far too narrow, e.g. [0.38, 0.54] for
  a cell SD of 0 and [0.61, 1.62] for an initialization SD of 3.)
* **Permutation tests on the crossed structure**: for the initialization, the init labels are shuffled within each
  data order (so the data order's effect and each cell's replicates stay intact), the statistic being the variance
  of the per-initialization composition rates; the data order alike. For the cell: does a cell's outcome repeat
  across its replicates more than its row and column explain? Each replicate layer but the first is shuffled by
  checkerboard swaps that keep its row and column counts, the statistic being the agreement with the first layer.

`verdicts.odds_answer` turns the tests into R2's answer; the shares say how much each part weighs.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..rules.stats import clopper_pearson, mcnemar_exact, rate as count
from ..rules.verdicts import R2_MIN_REPLICATES

FACTORS = ("init", "data", "cell")
SD_PRIOR_SCALE = 2.5  # half-Cauchy scale of each SD on the logit scale (weakly informative)
FIXED_PRIOR_SD = 10.0  # the intercept's and the mode effect's normal prior
RESIDUAL_VARIANCE = math.pi ** 2 / 3  # a standard logistic's variance: a run's own chance, on the latent scale
# R2's replicates (2026-12-04): the kinds of run in a cell, in layer order, and the prior scales of the sensitivity
KINDS = ("eager", "compiled", "nudged")
PRIOR_SCALES = (0.5, 2.5, 25.0)
# The sampler's coefficients are rounded to this grid after every draw. A Gibbs chain is chaotic: the last-bit
# differences between CPUs' BLAS kernels (AVX2 against AVX-512: at most 6e-13 here) grew into different draws, and so
# into variance shares 0.02 apart. On the grid the chains stay equal (a rounding flips about once in 25,000 fits),
# and the linear predictor, a sum of 0/1 columns times grid values, is exact in any order. 2^-12 is far below the
# coefficients' posterior SDs (0.3 and up), so the posterior is unchanged.
CHAIN_GRID = 2.0 ** -12


def design_arrays(table: pd.DataFrame) -> dict:
    """The table as index arrays: init and data level of each run (0-based), its cell, compiled (0/1), composed."""
    inits = sorted(table["init"].unique())
    datas = sorted(table["data"].unique())
    i = table["init"].map({v: k for k, v in enumerate(inits)}).to_numpy()
    j = table["data"].map({v: k for k, v in enumerate(datas)}).to_numpy()
    return {"inits": inits, "datas": datas, "i": i, "j": j, "cell": i * len(datas) + j,
            "compiled": table["compiled"].astype(float).to_numpy(), "y": table["composed"].astype(float).to_numpy()}


# ---------------------------------------------------------------------------- the crossed logistic model
def fixed_design(table: pd.DataFrame, compiled: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The fixed effects' columns and names: an intercept, and either one indicator per replicate kind but the first
    (a table with a `kind` column: eager, compiled, nudged, in KINDS order) or the compiled mode (when the table
    has both modes), or nothing more."""
    n = len(table)
    if "kind" in table:
        kinds = [k for k in KINDS if k in set(table["kind"])] + sorted(set(table["kind"]) - set(KINDS))
        extra = [(table["kind"] == k).to_numpy(float) for k in kinds[1:]]
        return np.column_stack([np.ones(n), *extra]), ["intercept", *kinds[1:]]
    if len(np.unique(compiled)) > 1:
        return np.column_stack([np.ones(n), compiled]), ["intercept", "compiled"]
    return np.ones((n, 1)), ["intercept"]


def fit_crossed(table: pd.DataFrame, draws: int = 4000, burn: int = 1000, seed: int = 0,
                prior_scale: float = SD_PRIOR_SCALE) -> dict:
    """Posterior draws of the crossed model (module docstring), half-Cauchy(0, `prior_scale`) priors on the SDs.
    Returns {"sd": {factor: draws}, "share": {factor and "run": draws}, "mode": draws of b_mode, "intercept": draws,
    "init_effects": draws x inits, "fixed": draws x fixed effects, "fixed_names", "fixed_mean": the fixed part's
    mean over the runs, per draw}. A design with one mode only has no mode term (its draws are zeros); a table with
    a `kind` column has one fixed effect per replicate kind (eager the reference) and its "mode" is the compiled
    kind's."""
    from polyagamma import random_polyagamma  # here, not at the top: a slow import (polyagamma)

    rng = np.random.default_rng(seed)
    a = design_arrays(table)
    n, n_i, n_j = len(a["y"]), len(a["inits"]), len(a["datas"])
    fixed, fixed_names = fixed_design(table, a["compiled"])
    has_mode = "compiled" in fixed_names
    mode_column = fixed_names.index("compiled") if has_mode else None
    blocks = {"init": (a["i"], n_i), "data": (a["j"], n_j), "cell": (a["cell"], n_i * n_j)}
    columns = [fixed] + [np.eye(size)[index] for index, size in blocks.values()]
    design = np.hstack(columns)
    offsets, start = {}, fixed.shape[1]
    for name, (_, size) in blocks.items():
        offsets[name], start = slice(start, start + size), start + size
    kappa = a["y"] - 0.5
    theta = np.zeros(design.shape[1])
    variance = {name: 1.0 for name in blocks}
    aux = {name: 1.0 for name in blocks}  # the half-Cauchy's inverse-gamma mixing variable
    kept = {"sd": {f: [] for f in blocks}, "mode": [], "intercept": [], "init_effects": [], "fixed": []}
    for t in range(burn + draws):
        omega = random_polyagamma(1, design @ theta, random_state=rng)
        prior = np.full(design.shape[1], 1 / FIXED_PRIOR_SD ** 2)
        for name in blocks:
            prior[offsets[name]] = 1 / variance[name]
        precision = design.T @ (design * omega[:, None]) + np.diag(prior)
        chol = np.linalg.cholesky(precision)
        mean = np.linalg.solve(chol.T, np.linalg.solve(chol, design.T @ kappa))
        theta = mean + np.linalg.solve(chol.T, rng.standard_normal(len(theta)))
        theta = np.round(theta / CHAIN_GRID) * CHAIN_GRID  # the same chain on any CPU (CHAIN_GRID)
        for name, (_, size) in blocks.items():  # half-Cauchy by its inverse-gamma mixture (Makalic and Schmidt)
            effects = theta[offsets[name]]
            variance[name] = 1 / rng.gamma((size + 1) / 2, 1 / (1 / aux[name] + effects @ effects / 2))
            aux[name] = 1 / rng.gamma(1.0, 1 / (1 / prior_scale ** 2 + 1 / variance[name]))
        if t >= burn:
            for name in blocks:
                kept["sd"][name].append(math.sqrt(variance[name]))
            kept["intercept"].append(theta[0])
            kept["mode"].append(theta[mode_column] if has_mode else 0.0)
            kept["init_effects"].append(theta[offsets["init"]].copy())
            kept["fixed"].append(theta[: fixed.shape[1]].copy())
    sd = {name: np.asarray(values) for name, values in kept["sd"].items()}
    total = sum(s ** 2 for s in sd.values()) + RESIDUAL_VARIANCE
    share = {**{name: s ** 2 / total for name, s in sd.items()}, "run": RESIDUAL_VARIANCE / total}
    fixed_draws = np.asarray(kept["fixed"])
    return {"sd": sd, "share": share, "mode": np.asarray(kept["mode"]), "intercept": np.asarray(kept["intercept"]),
            "init_effects": np.asarray(kept["init_effects"]), "inits": a["inits"], "has_mode": has_mode,
            "fixed": fixed_draws, "fixed_names": fixed_names, "fixed_mean": fixed_draws @ fixed.mean(0),
            "prior_scale": prior_scale}


def interval(draws, level: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high) of posterior draws: the central `level` interval."""
    tail = (1 - level) / 2
    low, median, high = np.quantile(np.asarray(draws), [tail, 0.5, 1 - tail])
    return float(median), float(low), float(high)


def init_probabilities(fit: dict, seed: int = 0) -> pd.DataFrame:
    """Each initialization's probability of composing on a new data order (eager), its median and 95 % interval:
    the posterior of logistic(b0 + u_init + v + w), v and w drawn from their fitted normals."""
    rng = np.random.default_rng(seed)
    spread = np.sqrt(fit["sd"]["data"] ** 2 + fit["sd"]["cell"] ** 2)
    rows = []
    for k, init in enumerate(fit["inits"]):
        latent = fit["intercept"] + fit["init_effects"][:, k]
        noise = rng.standard_normal((len(latent), 64)) * spread[:, None]
        probability = (1 / (1 + np.exp(-(latent[:, None] + noise)))).mean(axis=1)
        median, low, high = interval(probability)
        rows.append({"init": init, "probability": median, "low": low, "high": high})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- permutation tests
def cell_array(table: pd.DataFrame) -> np.ndarray:
    """Outcomes as [init, data, replicate] (replicates in table order within each cell; every cell needs as many)."""
    a = design_arrays(table)
    counts = np.bincount(a["cell"], minlength=len(a["inits"]) * len(a["datas"]))
    if counts.min() != counts.max() or counts.min() == 0:
        raise ValueError(f"every cell needs the same number of replicates; got {counts.min()} to {counts.max()}")
    out = np.zeros((len(a["inits"]), len(a["datas"]), counts[0]))
    filled = np.zeros_like(counts)
    for i, j, c, y in zip(a["i"], a["j"], a["cell"], a["y"]):
        out[i, j, filled[c]] = y
        filled[c] += 1
    return out


def factor_permutation_p(outcomes: np.ndarray, axis: int, n: int = 10_000, seed: int = 0) -> float:
    """Does the factor on `axis` (0: initialization, 1: data order) move the composition rate? Its levels' labels
    are shuffled within each level of the other factor, cells whole; statistic: the variance of its levels' rates.
    One-sided p with the observed table counted among the permutations."""
    rng = np.random.default_rng(seed)
    means = outcomes.mean(axis=2) if axis == 0 else outcomes.mean(axis=2).T  # [factor level, other level]
    observed = means.mean(axis=1).var()
    order = rng.random((n, *means.shape)).argsort(axis=1)  # an independent shuffle of each column
    shuffled = np.take_along_axis(np.broadcast_to(means, (n, *means.shape)), order, axis=1)
    null = shuffled.mean(axis=2).var(axis=1)
    return float((1 + np.sum(null >= observed - 1e-12)) / (n + 1))


def _swap_chain(layer: list[list[int]], rng: np.random.Generator, swaps: int) -> list[list[int]]:
    """`swaps` checkerboard swap attempts on a 0/1 matrix (lists, for speed): each keeps every row and column
    count."""
    m = [row[:] for row in layer]
    rows, cols = len(m), len(m[0])
    picks = zip(*(rng.integers(size, size=swaps).tolist() for size in (rows, rows, cols, cols)))
    for r1, r2, c1, c2 in picks:
        if m[r1][c1] == m[r2][c2] != m[r1][c2] == m[r2][c1]:
            m[r1][c1], m[r2][c2], m[r1][c2], m[r2][c1] = m[r1][c2], m[r2][c1], m[r1][c1], m[r2][c2]
    return m


def cell_permutation_p(outcomes: np.ndarray, n: int = 2000, swaps: int = 200, seed: int = 0) -> float:
    """Does a cell decide beyond its initialization and data order? Statistic: how often two replicates of a cell
    agree, over every pair of replicate layers (with two replicates: the second against the first); null: each
    replicate layer but the first shuffled by swaps that keep its row and column counts (a chain of `swaps`
    attempts between draws, from a burned-in start). One-sided p. With more than two replicates this is the test
    of the pair against a run's own chance: under the null a cell's replicates agree only as often as their rows
    and columns make them."""
    rng = np.random.default_rng(seed)
    first = outcomes[:, :, 0]
    others = [outcomes[:, :, r].astype(int).tolist() for r in range(1, outcomes.shape[2])]
    if not others:
        raise ValueError("the cell test needs at least two replicates per cell")

    def agreement(layers) -> float:
        stack = [first, *(np.asarray(layer) for layer in layers)]
        return float(np.mean([np.mean(stack[i] == stack[j]) for i in range(len(stack))
                              for j in range(i + 1, len(stack))]))

    observed = agreement(others)
    chains = [_swap_chain(layer, rng, 20 * swaps) for layer in others]
    null = []
    for _ in range(n):
        chains = [_swap_chain(layer, rng, swaps) for layer in chains]
        null.append(agreement(chains))
    return float((1 + np.sum(np.asarray(null) >= observed - 1e-12)) / (n + 1))


def permutation_tests(table: pd.DataFrame, seed: int = 0) -> dict[str, float]:
    outcomes = cell_array(table)
    return {"init": factor_permutation_p(outcomes, 0, seed=seed), "data": factor_permutation_p(outcomes, 1, seed=seed),
            "cell": cell_permutation_p(outcomes, seed=seed)}


# ---------------------------------------------------------------------------- flips between replicates
def flip_rate(reference: pd.Series, replicate: pd.Series) -> dict:
    """How often a replicate's outcome differs from its cell's reference run (aligned by index): the count, the
    rate and its exact 95 % interval (runs as the unit: say so where cells repeat)."""
    both = pd.concat([reference.rename("ref"), replicate.rename("rep")], axis=1).dropna()
    flips = int((both["ref"].astype(bool) != both["rep"].astype(bool)).sum())
    low, high = clopper_pearson(flips, len(both))
    return {"flips": flips, "runs": len(both), "rate": flips / len(both) if len(both) else float("nan"),
            "low": low, "high": high}


# ---------------------------------------------------------------------------- the design's own tables
def complete_cells(table: pd.DataFrame, modes=("eager", "compiled")) -> pd.DataFrame:
    """The runs of the cells that have every mode finished (the analyses need whole cells), with `compiled` 0/1
    from the mode the run asked for (`mode`), in a fixed order (init, data, mode)."""
    both = table[table["mode"].isin(modes)]
    counts = both.groupby(["init", "data"])["mode"].nunique()
    whole = counts[counts == len(modes)].index
    out = both.set_index(["init", "data"]).loc[whole].reset_index()
    out["compiled"] = (out["mode"] == "compiled").astype(int)
    return out.sort_values(["init", "data", "compiled"]).reset_index(drop=True)


def mode_comparison(table: pd.DataFrame) -> dict:
    """Eager against compiled on the same cells: each mode's count, the cells whose outcome differs each way, the
    exact McNemar p (does one mode compose more often?) and the between-mode flip rate with its exact interval."""
    pairs = complete_cells(table).pivot_table(index=["init", "data"], columns="mode", values="composed",
                                              aggfunc="first")
    eager, compiled = pairs["eager"].astype(bool), pairs["compiled"].astype(bool)
    only_compiled, only_eager = int((compiled & ~eager).sum()), int((eager & ~compiled).sum())
    return {"cells": len(pairs), "eager": count(eager), "compiled": count(compiled),
            "only_compiled": only_compiled, "only_eager": only_eager, "p": mcnemar_exact(only_compiled, only_eager),
            "flips": flip_rate(eager, compiled)}


def perturbation_label(row) -> str:
    """A perturbation in words: 'nudge 1e-04 at step 0', 'gradient noise 1e-07', 'none'."""
    if row.get("grad_noise", 0) and row["grad_noise"] > 0:
        return f"gradient noise {row['grad_noise']:.0e} every step"
    if row.get("jitter", 0) and row["jitter"] > 0:
        return f"nudge {row['jitter']:.0e} at step {int(row['jitter_step']):,}"
    return "none"


def flips_by_cell(perturbed: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Per perturbation setting and (init, data) cell: how many of the cell's perturbed runs differ from the cell's
    own eager unperturbed run (`reference`: the design's table); cells without a reference run are left out."""
    eager = reference[reference["mode"] == "eager"].set_index(["init", "data"])["composed"].astype(bool)
    labelled = perturbed.assign(setting=[perturbation_label(r) for r in perturbed.to_dict("records")])
    labelled = labelled[pd.MultiIndex.from_frame(labelled[["init", "data"]]).isin(eager.index)]
    ref = eager.reindex(pd.MultiIndex.from_frame(labelled[["init", "data"]])).to_numpy(bool)
    labelled = labelled.assign(flipped=(labelled["composed"].to_numpy(bool) != ref).astype(int))
    kind = np.where(labelled["setting"].str.startswith("gradient"), "gradient noise", "nudge")
    size = np.where(kind == "nudge", labelled["jitter"].astype(float), labelled["grad_noise"].astype(float))
    labelled = labelled.assign(kind=kind, size=size)
    return (labelled.groupby(["setting", "init", "data"], sort=False)
            .agg(kind=("kind", "first"), size=("size", "first"), step=("jitter_step", "first"),
                 flips=("flipped", "sum"), runs=("flipped", "size")).reset_index())


def cluster_interval(flips, runs, n: int = 10_000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the pooled rate sum(flips) / sum(runs) when the cells, not the runs, are resampled
    (the replicates of a cell are not independent of each other)."""
    flips, runs = np.asarray(flips, float), np.asarray(runs, float)
    if len(runs) == 0 or runs.sum() == 0:
        return float("nan"), float("nan")
    pick = np.random.default_rng(seed).integers(0, len(runs), size=(n, len(runs)))
    rates = flips[pick].sum(1) / np.maximum(runs[pick].sum(1), 1)
    tail = (1 - level) / 2
    return float(np.quantile(rates, tail)), float(np.quantile(rates, 1 - tail))


def flip_table(perturbed: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Per perturbation setting: how often its runs' outcomes differ from their cell's own eager unperturbed run,
    with two intervals: exact with the run as the unit (`low`, `high`) and with the cell as the unit
    (`cell_low`, `cell_high`, `cluster_interval`), and the number of cells with a flip."""
    rows = []
    for setting, group in flips_by_cell(perturbed, reference).groupby("setting", sort=False):
        flips, runs = int(group["flips"].sum()), int(group["runs"].sum())
        low, high = clopper_pearson(flips, runs)
        cell_low, cell_high = cluster_interval(group["flips"], group["runs"])
        rows.append({"setting": setting, "kind": group["kind"].iloc[0], "size": float(group["size"].iloc[0]),
                     "step": int(group["step"].iloc[0]), "flips": flips, "runs": runs,
                     "rate": flips / runs if runs else float("nan"), "low": low, "high": high,
                     "cell_low": cell_low, "cell_high": cell_high, "cells": len(group),
                     "cells_with_a_flip": int((group["flips"] > 0).sum())})
    return pd.DataFrame(rows)


def paired_cells(by_cell: pd.DataFrame, small: str, large: str) -> tuple[list, list]:
    """The (flips, runs) of two settings on the cells both have, in one cell order: `verdicts.basin_or_chaos`'s
    input."""
    a = by_cell[by_cell["setting"] == small].set_index(["init", "data"])
    b = by_cell[by_cell["setting"] == large].set_index(["init", "data"])
    both = a.index.intersection(b.index)
    return ([(int(a.loc[c, "flips"]), int(a.loc[c, "runs"])) for c in both],
            [(int(b.loc[c, "flips"]), int(b.loc[c, "runs"])) for c in both])


def early_stop_saving(table: pd.DataFrame) -> dict:
    """What stopping once composition held saved: steps trained against the budget, and CPU time against the
    time the same runs would have taken to their budget at each run's own measured seconds per step."""
    steps, budget = table["last_step"].astype(float), table["step_budget"].astype(float)
    per_step = table["wall_time_s"].astype(float) / steps
    return {"runs": len(table), "stopped": int((steps < budget).sum()), "steps_share": float(steps.sum() / budget.sum()),
            "cpu_h": float(table["wall_time_s"].sum() / 3600), "cpu_h_without": float((per_step * budget).sum() / 3600)}


# ---------------------------------------------------------------------------- R2 with replicates (2026-12-04)
def replicated_cells(design: pd.DataFrame, nudged: pd.DataFrame, replicates: int | None = None) -> pd.DataFrame:
    """The crossed design's runs with its nudged replicates: one row per run with `kind` (eager, compiled, nudged)
    and `compiled` 0/1 (as the run asked or, for a nudged run, as its record says), only the cells that have all
    `replicates` runs (R2_MIN_REPLICATES: eager, compiled and both nudges), in a fixed layer order (eager,
    compiled, nudge 1, nudge 2): `cell_array`'s and `fit_crossed`'s input."""
    replicates = R2_MIN_REPLICATES if replicates is None else replicates
    modes = design[design["mode"].isin(("eager", "compiled"))].assign(kind=lambda d: d["mode"], layer=0)
    modes["layer"] = (modes["kind"] == "compiled").astype(int)
    modes["compiled"] = modes["layer"]
    extra = nudged.assign(kind="nudged")
    extra["layer"] = 1 + extra["perturb_seed"].astype(int)
    recorded = pd.to_numeric(extra["compiled"], errors="coerce") if "compiled" in extra else pd.Series(0, extra.index)
    extra["compiled"] = recorded.fillna(0).astype(int)
    both = pd.concat([modes, extra], ignore_index=True)
    layers = both.groupby(["init", "data"])["layer"].nunique()
    whole = layers[layers == replicates].index
    out = both.set_index(["init", "data"]).loc[whole].reset_index() if len(whole) else both.iloc[:0]
    return out.sort_values(["init", "data", "layer"]).reset_index(drop=True)


def _expit(x):
    return 1 / (1 + np.exp(-np.clip(x, -500, 500)))  # a huge SD's draws must not overflow


def observed_shares(sd_init, sd_data, sd_cell, eta, nodes: int = 40) -> dict[str, np.ndarray]:
    """The variance of a run's outcome (0/1) split on the observed (probability) scale, per posterior draw.
    With p = expit(eta + u + v + w) the cell's probability, Var(Y) = E[p(1 - p)] + Var(p): the first term is a run's
    own chance (the Bernoulli variance within a cell), the second the cell probabilities' spread, split by the
    Hoeffding (functional ANOVA) decomposition of p over the independent u, v, w: the initialization's part
    Var(E[p | u]), the data order's Var(E[p | v]), and the rest, the pair's (the cell effect w and the
    initialization x data interaction the link makes on this scale). Each as a share of Var(Y); expectations by
    Gauss-Hermite quadrature. Returns {"init", "data", "cell", "run"}: arrays over the draws."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    z, weight = math.sqrt(2.0) * x, w / math.sqrt(math.pi)  # standard normal nodes and weights
    sd_init, sd_data, sd_cell, eta = (np.asarray(v, float)[:, None] for v in (sd_init, sd_data, sd_cell, eta))
    total_sd = np.sqrt(sd_init ** 2 + sd_data ** 2 + sd_cell ** 2)
    p = _expit(eta + total_sd * z)  # [draws, nodes]
    m1, m2 = p @ weight, (p ** 2) @ weight
    var_p, chance = m2 - m1 ** 2, m1 - m2

    def main_effect(sd_own, sd_rest):  # Var over the factor's effect of E[p | effect]
        inner = _expit(eta[:, :, None] + sd_own[:, :, None] * z[None, :, None] + sd_rest[:, :, None] * z[None, None, :])
        given = inner @ weight  # [draws, nodes]: E[p | u at each node]
        return (given ** 2) @ weight - (given @ weight) ** 2
    init = main_effect(sd_init, np.sqrt(sd_data ** 2 + sd_cell ** 2))
    data = main_effect(sd_data, np.sqrt(sd_init ** 2 + sd_cell ** 2))
    total = m1 * (1 - m1)
    return {"init": init / total, "data": data / total, "cell": np.clip(var_p - init - data, 0, None) / total,
            "run": chance / total}


def shares_table(fit: dict) -> pd.DataFrame:
    """Each part's share of the variance on the latent scale (the model's, a run's own chance pi^2 / 3) and on the
    observed scale (`observed_shares`, at the fixed part's mean over the runs), posterior medians and 95 %
    intervals: one row per part."""
    observed = observed_shares(fit["sd"]["init"], fit["sd"]["data"], fit["sd"]["cell"], fit["fixed_mean"])
    rows = []
    for part in ("init", "data", "cell", "run"):
        latent, seen = interval(fit["share"][part]), interval(observed[part])
        rows.append({"part": part, "latent": latent[0], "latent_low": latent[1], "latent_high": latent[2],
                     "observed": seen[0], "observed_low": seen[1], "observed_high": seen[2]})
    return pd.DataFrame(rows)


def prior_sensitivity(table: pd.DataFrame, scales=PRIOR_SCALES, draws: int = 2000, burn: int = 500,
                      seed: int = 0) -> pd.DataFrame:
    """`shares_table` under each half-Cauchy scale of the SDs' prior: one row per (scale, part). Fewer draws than
    the main fit (2,000 after 500), so three fits cost about as much as one."""
    return pd.concat([shares_table(fit_crossed(table, draws=draws, burn=burn, seed=seed, prior_scale=scale))
                      .assign(prior_scale=scale) for scale in scales], ignore_index=True)
