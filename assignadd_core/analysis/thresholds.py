"""Where an accuracy-versus-data curve (a sweep) turns on: two estimates of a data threshold.

- `crossing`: the smallest measured value from which on every measured point reaches `level`
  (points averaged over seeds first); its uncertainty is the grid step: the threshold lies
  between the last measured value below `level` (`below`) and `value`.
- `reached_earlier`: values below that bracket which already reach `level` (a dip, not a threshold).
- `logistic_fit`: least-squares fit of low + (high - low) / (1 + exp(-(x - midpoint) / width)) to
  all points (every seed), midpoint with a bootstrap interval over the runs (`bootstrap_midpoint`); only when
  there are enough distinct values and the curve actually rises within the measured range.
Missing points (NaN) are left out, never filled in.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..rules.verdicts import C9_RESAMPLES, THRESHOLD_LEVEL, composed, seed_crossing
from .sweep_records import ENDED, finished
from ..rules.stats import clopper_pearson


# A fit's numbers as the book stores and draws them: their last digits are the CPU's rounding (the linear algebra's,
# the vectorised exp's, an optimizer's stopping point moved by them), which differs between processors, so a
# threshold and its interval keep 8 significant digits and a drawn curve 6, and every CPU writes the same chapters and
# claims (tests/test_thresholds.py moves the inputs in their last bit and compares).
NUMBER_DIGITS, CURVE_DIGITS = 8, 6


def cpu_independent(values, digits: int = NUMBER_DIGITS):
    """A float, a tuple of floats or an array, to `digits` significant digits (NaN and inf as they are)."""
    if isinstance(values, tuple):
        return tuple(cpu_independent(v, digits) for v in values)
    if isinstance(values, np.ndarray):
        return np.array([float(f"{v:.{digits}g}") for v in values.ravel()]).reshape(values.shape)
    return float(f"{values:.{digits}g}")


@dataclass(frozen=True)
class Crossing:
    value: float | None  # None: the curve does not stay at or above the level up to the last point
    below: float | None  # largest measured value under the level before `value` (None: none measured)
    level: float

    def describe(self) -> str:
        """The crossing in words, with the bracket the threshold lies in (the grid step)."""
        if self.value is None:
            return f"the mean curve does not stay at or above {self.level:g} up to the last measured value"
        if self.below is None:
            return f"{self.value:.3f} (every measured point reaches {self.level:g}; threshold below the grid)"
        return f"{self.value:.3f}, threshold in ({self.below:.3f}, {self.value:.3f}]"


@dataclass(frozen=True)
class LogisticFit:
    ok: bool
    reason: str  # why there is no fit (empty when ok)
    midpoint: float = math.nan
    midpoint_se: float = math.nan
    width: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n_points: int = 0
    interval: tuple[float, float] | None = None  # 95 % bootstrap interval over the runs (see bootstrap_midpoint)

    def describe(self) -> str:
        if not self.ok:
            return f"none: {self.reason}"
        spread = (f"95 % bootstrap interval {self.interval[0]:.3f}–{self.interval[1]:.3f}" if self.interval
                  else "no bootstrap interval")
        return f"{self.midpoint:.3f} ({spread}; {self.n_points} points)"

    def __call__(self, x):
        return cpu_independent(logistic(np.asarray(x, dtype=float), self.low, self.high, self.midpoint, self.width),
                               CURVE_DIGITS)


def logistic(x, low, high, midpoint, width):
    return low + (high - low) / (1.0 + np.exp(-(x - midpoint) / width))


def _clean(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def mean_curve(x, y) -> tuple[np.ndarray, np.ndarray]:
    """Distinct measured values (sorted) and the mean accuracy over seeds at each."""
    x, y = _clean(x, y)
    values = np.unique(x)
    return values, np.array([y[x == v].mean() for v in values])


def crossing(x, y, level: float = 0.9) -> Crossing:
    values, means = mean_curve(x, y)
    if len(values) == 0 or means[-1] < level:
        return Crossing(None, None, level)
    under = np.nonzero(means < level)[0]
    if len(under) == 0:
        return Crossing(float(values[0]), None, level)
    last_under = under[-1]
    return Crossing(float(values[last_under + 1]), float(values[last_under]), level)


def logistic_fit(x, y, min_values: int = 5, min_rise: float = 0.5) -> LogisticFit:
    """Fit the rising logistic; refuse (ok=False, with the reason) on too few or too flat points."""
    from scipy.optimize import curve_fit  # here, not at the top: a slow import (scipy)

    x, y = _clean(x, y)
    values, means = mean_curve(x, y)
    if len(values) < min_values:
        return LogisticFit(False, f"only {len(values)} measured values (a fit needs {min_values})", n_points=len(x))
    if means.max() - means.min() < min_rise:
        return LogisticFit(False, f"the curve rises by less than {min_rise} within the measured range",
                           n_points=len(x))
    span = values[-1] - values[0]
    rising = np.nonzero(means >= (means.min() + means.max()) / 2)[0][0]
    start = [means.min(), means.max(), float(values[rising]), span / 20]
    bounds = ([0.0, 0.0, values[0], span / 1000], [1.0, 1.0, values[-1], span])
    try:
        params, cov = curve_fit(logistic, x, y, p0=start, bounds=bounds, maxfev=20_000)
    except (RuntimeError, ValueError) as err:
        return LogisticFit(False, f"fit did not converge ({err})", n_points=len(x))
    low, high, midpoint, width = map(float, params)
    se = float(np.sqrt(cov[2, 2])) if np.all(np.isfinite(cov)) else math.nan
    if not (values[0] < midpoint < values[-1]) or not se < span / 4:  # e.g. a dip, not a rise, drove the fit
        return LogisticFit(False, f"the fit does not pin down a midpoint (got {midpoint:.3f} ± {se:.3g})",
                           n_points=len(x))
    return LogisticFit(True, "", midpoint, se, width, low, high, len(x))


def bootstrap_midpoint(x, y, n_boot: int = 500, level: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """Percentile interval of the logistic midpoint when the runs (grid value × seed points) are resampled
    with replacement and refitted; None when fewer than half of the resamples give a fit. (The fit's own
    standard error assumes independent Gaussian noise around a logistic, which a few seeds per point do
    not show; resampling the runs asks how much the midpoint moves with them.)"""
    x, y = _clean(x, y)
    rng = np.random.default_rng(seed)
    midpoints = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(x), len(x))
        fit = logistic_fit(x[pick], y[pick])
        if fit.ok:
            midpoints.append(fit.midpoint)
    if len(midpoints) < n_boot / 2:
        return None
    tail = (1 - level) / 2
    return float(np.quantile(midpoints, tail)), float(np.quantile(midpoints, 1 - tail))


# ---------------------------------------------------------------------------- a sweep's verdict
def values_text(values) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def reached_earlier(x, y, found: Crossing) -> list[float]:
    """Measured values below the bracket whose (seed-mean) accuracy already reaches the level: the
    curve rose, dipped under the level again and only then stayed above it (not a sharp threshold)."""
    if found.below is None:
        return []
    values, means = mean_curve(x, y)
    return [float(v) for v, m in zip(values, means) if v < found.below and m >= found.level]


def verdict(complete: bool, found: Crossing, paper: float, close: float = 0.1, near: float = 0.2,
            earlier: list[float] | None = None) -> str:
    """The claim verdict for a sweep (the rule the chapter states).

    "not yet run" until every grid point has a result for at least one seed. Then the threshold is
    bracketed by the grid, (below, value]; its distance to the paper's value is 0 when the paper's
    value lies in the bracket: "reproduced" within `close`, "partly" within `near`, else "not
    reproduced". A curve that never reaches the level, or reaches it at every point (no threshold
    inside the grid), is "not reproduced". When the curve already reached the level at smaller
    values (`earlier`, see `reached_earlier`), the bracket is not a clean threshold: at most "partly".
    """
    if not complete:
        return "not yet run"
    if found.value is None or found.below is None:
        return "not reproduced"
    distance = max(0.0, found.below - paper, paper - found.value)
    result = "reproduced" if distance <= close else "partly" if distance <= near else "not reproduced"
    return "partly" if result == "reproduced" and earlier else result


def threshold_summary(status, field: str, paper: float, level: float = 0.9) -> dict:
    """Both estimates and the verdict from a `sweep.grid_status` frame (pending points are left out)."""
    done = finished(status)
    ended = status[status["status"].isin(ENDED)]  # done, or a config that cannot exist
    n_values = status[field].nunique()
    per_seed = ended.groupby("seed")[field].nunique()
    complete = bool(len(per_seed)) and int(per_seed.max()) == n_values
    found = crossing(done[field], done["value"], level)
    earlier = reached_earlier(done[field], done["value"], found)
    fit = logistic_fit(done[field], done["value"])
    if fit.ok:
        fit = dataclasses.replace(fit, interval=bootstrap_midpoint(done[field], done["value"]))
    return {"field": field, "paper": paper, "level": level, "n_values": n_values,
            "n_finished": int(per_seed.max()) if len(per_seed) else 0, "complete": complete,
            "runs_finished": len(ended), "runs_planned": len(status),
            "seeds": sorted(int(s) for s in done["seed"].unique()), "crossing": found, "fit": fit,
            "reached_earlier": earlier, "verdict": verdict(complete, found, paper, earlier=earlier)}


# The mean-curve reading is the rule before 2026-12; the verdicts now read composed runs per seed (chapter 10).
OLD_RULE = "verdict under the rule before 2026-12 (mean curve over every run)"


def summary_report(summary: dict, name: str) -> str:
    """A `threshold_summary` as the lines the chapter prints under each sweep's plot."""
    lines = [f"{name}: {summary['n_finished']} of {summary['n_values']} grid values finished;"
             f" seeds with results: {summary['seeds']}"]
    if not summary["seeds"]:
        lines.append("crossing: none yet (no grid value measured)")
    else:
        lines.append(f"crossing (first value from which every point reaches {summary['level']:g}):"
                     f" {summary['crossing'].describe()}")
    lines.append(f"logistic midpoint: {summary['fit'].describe()}")
    if summary["reached_earlier"]:
        lines.append(f"but the mean curve already reached {summary['level']:g} at"
                     f" {values_text(summary['reached_earlier'])} and dipped under it again before the bracket")
    if summary["complete"] and summary["runs_finished"] < summary["runs_planned"]:
        lines.append(f"{summary['runs_finished']} of {summary['runs_planned']} planned runs finished: the verdict"
                     f" can still change as the other seeds come in")
    lines.append(f"paper: {summary['paper']:g}; {OLD_RULE}: {summary['verdict']}")
    return "\n".join(lines)


def claim_text(summary: dict, symbol: str) -> str:
    """What the claims table shows as 'ours' for a threshold claim (f or r)."""
    s = summary
    if not s["complete"]:
        return f"{s['n_finished']} of {s['n_values']} grid values run so far"
    c, fit = s["crossing"], s["fit"]
    text = (f"{symbol}: accuracy never stays ≥ {s['level']:g}" if c.value is None
            else f"crossing of {s['level']:g}: {symbol}* ≈ {c.describe()}")
    if s["reached_earlier"]:
        text += f"; but ≥ {s['level']:g} already at {values_text(s['reached_earlier'])}, then a dip"
    if fit.ok:
        text += f"; logistic midpoint {fit.describe()}"
    text += f"; seeds {', '.join(map(str, s['seeds']))}"
    if s["runs_finished"] < s["runs_planned"]:  # a verdict before every planned seed is in can still move
        text += f" ({s['runs_finished']} of {s['runs_planned']} planned runs finished)"
    return text


SWAP_COLUMNS = ("value", "swap_heldout", "swap_in_training")  # all held-out pairs; swap held out; swap trained


def swap_control(finished, field: str, level: float = 0.9) -> dict:
    """The f sweep's commutativity control: {"table": one row per run that carries it, "crossings": the
    crossing of each of SWAP_COLUMNS over those runs, "missing": runs without it}.

    About 70 % of the held-out pairs at f = 0.7 have their swapped pair (n2, n1) in training, so a model
    could answer them by looking the swap up. If the threshold came from that, the pairs whose swap is held
    out too would cross much later than the held-out set as a whole (or never)."""
    has = finished["swap_heldout"].notna() if "swap_heldout" in finished else np.zeros(len(finished), dtype=bool)
    table = finished[has].reindex(columns=[field, "seed", *SWAP_COLUMNS, "n_swap_heldout", "n_swap_in_training"])
    table = table.sort_values([field, "seed"]).reset_index(drop=True)
    crossings = {column: crossing(table[field], table[column], level) for column in SWAP_COLUMNS}
    missing = finished[~has].reindex(columns=[field, "seed"]).reset_index(drop=True)  # a sweep not run: no columns
    return {"table": table, "crossings": crossings, "missing": missing}


def coverage_or_frequency(rows, share, field: str, pool: str, level: float = 0.9) -> dict:
    """Does a 2-var pool's threshold in r come from which pairs 2-var queries cover, or from how often
    2-var queries come? Compares the paper's r sweep (`rows`: r keeps 2-var rows, so it sets both) with
    the ablation (`share`: r scales the 2-var share only, every pair covered), on the seeds both have and
    the runs that learned variable assignment (`verdicts.composed`; the others fail every 2-var pool
    whatever r). Returns {"table": per value, both means and their difference, "rows"/"share": the
    crossings, "seeds", "answer"}. The answer: "coverage" when the pool reaches the level at a smaller
    r with every pair covered, "frequency" when both cross at the same r, "neither" when the ablation
    crosses later, "undecided" when a curve never stays at the level."""
    seeds = sorted(set(rows["seed"]) & set(share["seed"]))
    kept = {name: composed_runs(frame[frame["seed"].isin(seeds)])
            for name, frame in (("rows", rows), ("share", share))}
    means = {name: pd.Series(*reversed(mean_curve(frame[field], frame[pool]))) for name, frame in kept.items()}
    table = pd.DataFrame({field: sorted(set(means["rows"].index) | set(means["share"].index))})
    for name in ("rows", "share"):
        table[name] = table[field].map(means[name])
    table["share - rows"] = table["share"] - table["rows"]
    found = {name: crossing(frame[field], frame[pool], level) for name, frame in kept.items()}
    r_rows, r_share = found["rows"].value, found["share"].value
    answer = ("undecided" if r_rows is None or r_share is None else "coverage" if r_share < r_rows
              else "frequency" if r_share == r_rows else "neither")
    return {"table": table, "rows": found["rows"], "share": found["share"], "seeds": seeds, "answer": answer}


# ---------------------------------------------------------------------------- composition apart from data (C8, C9)
def _share_by_value(runs, field: str, hit, counts: tuple[str, str], extra=None):
    """Per grid value of `runs`: how many rows `hit` (a bool Series) marks, of how many, with the Clopper–Pearson
    interval; `counts` names the two count columns ("k", "share"), `extra(group)` adds columns."""

    k_name, share_name = counts
    rows = []
    for value, group in runs.groupby(field):
        k, n = int(hit.loc[group.index].sum()), len(group)
        low, high = clopper_pearson(k, n)
        rows.append({field: float(value), k_name: k, "runs": n, share_name: k / n, "low": low, "high": high,
                     **(extra(group) if extra else {})})
    columns = [field, k_name, "runs", share_name, "low", "high", *(extra(runs.iloc[:0]) if extra else {})]
    return pd.DataFrame(rows, columns=columns)


def composition_by_value(done, field: str):
    """Per grid value: how many of its finished runs composed (`verdicts.composed` of the final 1-var train
    accuracy), of how many, with the Clopper–Pearson interval."""
    return _share_by_value(done, field, done["1var_train"].map(composed).astype(bool), ("composed", "rate"))


def composed_runs(done):
    """The finished runs that learned variable assignment (`verdicts.composed` of the final 1-var train accuracy).
    The mask is made bool: on a sweep not run yet an empty object mask would select columns, not rows."""
    return done[done["1var_train"].map(composed).astype(bool)]


def seed_crossings(done, field: str, metric: str = "value", level: float | None = None) -> list:
    """One `verdicts.SeedCrossing` per seed, read on that seed's composed runs only."""
    level = THRESHOLD_LEVEL if level is None else level
    kept = composed_runs(done)
    return [seed_crossing(int(seed), runs[field], runs[metric], level) for seed, runs in kept.groupby("seed")]


# ---------------------------------------------------------------------------- C9: a fit the grid's extent cannot move
def firth_logistic(x, y, iterations: int = 100) -> np.ndarray:
    """(intercept, slope) of a logistic regression of 0/1 `y` on `x` by Firth's penalized likelihood, finite even
    when the data separate perfectly (a clean threshold does). Each Newton step is halved until the penalized
    log-likelihood does not fall (as logistf does): without it a separated data set could step into the region where
    every fitted probability is 0 or 1, the information vanishes and the fit stops there at a meaningless point."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    design = np.column_stack([np.ones_like(x), x])

    def penalized(beta):  # log-likelihood + log det(information) / 2, and the pieces of the step
        eta = np.clip(design @ beta, -30, 30)
        p = 1 / (1 + np.exp(-eta))
        w = p * (1 - p)
        information = design.T @ (design * w[:, None])
        sign, logdet = np.linalg.slogdet(information)
        loglik = float(np.sum(y * eta - np.logaddexp(0.0, eta)))
        return (loglik + 0.5 * logdet if sign > 0 else -np.inf), p, w, information
    beta = np.zeros(2)
    value, p, w, information = penalized(beta)
    for _ in range(iterations):
        inverse = np.linalg.pinv(information)
        hat = np.einsum("ij,jk,ik->i", design * np.sqrt(w)[:, None], inverse, design * np.sqrt(w)[:, None])
        step = np.clip(inverse @ (design.T @ (y - p + hat * (0.5 - p))), -5, 5)
        for _ in range(30):  # halve the step until the penalized likelihood does not fall
            trial = penalized(beta + step)
            if trial[0] >= value - 1e-12:
                break
            step = step / 2
        beta = beta + step
        value, p, w, information = trial
        if np.abs(step).max() < 1e-8:
            break
    return beta


def _midpoint(x, y) -> float:
    """Where the fitted success crosses 50 %: -inf when every run succeeds (below the grid), +inf when none does
    or success does not rise with x (above it, or nowhere)."""
    y = np.asarray(y, dtype=bool)
    if y.all() or not y.any():
        return -math.inf if y.all() else math.inf
    intercept, slope = firth_logistic(x, y)
    return float(-intercept / slope) if slope > 0 else math.inf


def logistic_threshold(done, field: str, metric: str = "value", level: float | None = None,
                       resamples: int | None = None, seed: int = 0) -> dict:
    """C9's estimator: the value of `field` at which a logistic fit of success (`metric` >= `level`) over the
    composed runs of every seed reaches 50 %, and its 95 % interval from resampling the seeds with replacement
    (each resample refitted; one whose runs all succeed or all fail has its midpoint off the grid, at -inf or
    +inf). Returns {"threshold" (None without a rise), "interval", "seeds", "runs", "unbounded"}."""
    level = THRESHOLD_LEVEL if level is None else level
    resamples = C9_RESAMPLES if resamples is None else resamples
    kept = composed_runs(done)
    seeds = sorted(int(s) for s in kept["seed"].unique())
    by_seed = {s: (kept[kept["seed"] == s][field].to_numpy(float), (kept[kept["seed"] == s][metric] >= level)
                   .to_numpy()) for s in seeds}
    out = {"threshold": None, "interval": None, "seeds": len(seeds), "runs": len(kept), "unbounded": 0}
    if not seeds:
        return out
    threshold = _midpoint(kept[field].to_numpy(float), (kept[metric] >= level).to_numpy())
    if not math.isfinite(threshold):
        return out
    out["threshold"] = cpu_independent(threshold)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        chosen = rng.choice(seeds, size=len(seeds), replace=True)
        draws.append(_midpoint(np.concatenate([by_seed[s][0] for s in chosen]),
                               np.concatenate([by_seed[s][1] for s in chosen])))
    draws = np.asarray(draws)
    out["unbounded"] = int((~np.isfinite(draws)).sum())  # resamples whose midpoint lies off the grid
    low, high = np.quantile(draws, [0.025, 0.975])
    out["interval"] = cpu_independent((float(low), float(high)))
    return out


def success_by_value(done, field: str, metric: str = "value", level: float | None = None):
    """What C9's fit reads, per grid value: of the composed runs, how many reach `level` on `metric`, with the
    Clopper-Pearson interval (runs of one seed are not independent: the interval describes, the fit's resamples
    decide)."""
    level = THRESHOLD_LEVEL if level is None else level
    kept = composed_runs(done)
    return _share_by_value(kept, field, kept[metric] >= level, ("succeeded", "share"),
                           extra=lambda group: {"seeds": int(group["seed"].nunique())})


def logistic_curve(done, field: str, x, metric: str = "value", level: float | None = None) -> np.ndarray:
    """The success probability of C9's logistic fit (Firth, over the composed runs of every seed) at each `x`; NaN
    where every run succeeds or none does (no curve to draw)."""
    level = THRESHOLD_LEVEL if level is None else level
    kept = composed_runs(done)
    success = (kept[metric] >= level).to_numpy()
    x = np.asarray(x, dtype=float)
    if not len(kept) or success.all() or not success.any():
        return np.full(x.shape, np.nan)
    intercept, slope = firth_logistic(kept[field].to_numpy(float), success)
    return cpu_independent(1 / (1 + np.exp(-(intercept + slope * x))), CURVE_DIGITS)


def c9_runs(frames) -> tuple:
    """C9's runs since 2026-12-04: the finished runs of the r sweep (every seed up to r = 0.629, seeds 42 and 43 on
    the whole grid, as before) and of its added seeds (`r_sweep_power`, the first 13 values) as one frame (the seed
    is the unit; the power calculation simulated this layout), and {device: seeds} of those runs. `frames`: sweep
    results frames (`sweep.results_frame`, or the results CSVs), each with a `device` column."""
    rows = pd.concat([finished(frame) for frame in frames], ignore_index=True)
    devices = {str(device): sorted(int(s) for s in group["seed"].unique()) for device, group in rows.groupby("device")}
    return rows, devices


def fit_check(done, field: str, metric: str = "value", level: float | None = None):
    """C9's fit held against its data, per grid value: the composed runs, how many succeed (observed share) and the
    logistic fit's success probability there (`logistic_curve`), and observed minus fitted. Read beside the verdict,
    not by it."""
    table = success_by_value(done, field, metric, level)
    fitted = logistic_curve(done, field, table[field].to_numpy(float), metric, level)
    return table.assign(fitted=fitted, gap=table["share"] - fitted)


def leave_one_seed_out(done, field: str, metric: str = "value", level: float | None = None,
                       resamples: int | None = None):
    """C9's estimator with each seed left out in turn (`logistic_threshold` on the others): one row per seed left
    out, with the fit's value, its interval and the interval's width. How much one seed moves the reading."""
    import pandas as pd
    seeds = sorted(int(s) for s in composed_runs(done)["seed"].unique())
    rows = []
    for seed in seeds:
        fit = logistic_threshold(done[done["seed"] != seed], field, metric, level, resamples)
        low, high = fit["interval"] if fit["interval"] else (np.nan, np.nan)
        rows.append({"left_out": seed, "threshold": fit["threshold"], "low": low, "high": high, "width": high - low})
    return pd.DataFrame(rows)
