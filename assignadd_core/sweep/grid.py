"""Sweep definitions: a named grid over config fields × seeds, its points, and the paper's sweeps."""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable

import numpy as np

from ..config import ConfigError, RunConfig, resolve_key
from ..data import EXACT_NAMES, POOL_NAMES

METRICS = (*EXACT_NAMES, *POOL_NAMES)  # a sweep's success measure: an exact set or a pool (final accuracy)


@dataclass(frozen=True)
class Sweep:
    """A grid over config fields (cartesian product of `grid`) × `seeds`, on top of `base` overrides."""

    name: str
    grid: dict[str, tuple]  # dotted config key -> values (empty: the seeds are the only axis)
    metric: str  # what measures success: an exact set or a pool, read at the end of training
    base: dict[str, Any] = field(default_factory=dict)  # overrides of the paper config shared by all runs
    seeds: tuple[int, ...] = (42,)  # train.seed; the split (task.split_seed) stays fixed
    description: str = ""
    paper_value: float | None = None  # the paper's threshold, when it states one
    x_label: str = ""  # the swept value, in words (figure axis)
    metric_label: str = ""  # the metric, in words
    keep: Callable[["Point"], bool] | None = None  # a design that runs only some cells of the grid x seeds

    @property
    def swept_field(self) -> str:
        """The swept field's bare name (a one-field grid), as in the CSV and the status table."""
        if len(self.grid) != 1:
            raise ConfigError(f"sweep {self.name} has {len(self.grid)} grid fields, not one")
        return self.fields[0]

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ConfigError(f"sweep metric must be one of {METRICS}, got {self.metric!r}")
        for key in [*self.grid, *self.base]:
            resolve_key(key)  # raises on an unknown config key
        if not self.seeds:
            raise ConfigError("a sweep needs at least one seed")
        for seed in self.seeds:  # settings shared by every point must be valid (grid values may fail alone)
            RunConfig().replace(**{**self.base, "train.seed": seed})

    @property
    def fields(self) -> list[str]:
        """Grid columns by their bare name (train_fraction, ...), as in the CSV."""
        return [key.rsplit(".", 1)[-1] for key in self.grid]

    def points(self) -> list["Point"]:
        combos = itertools.product(*self.grid.values())
        points = [Point(self.name, dict(zip(self.grid, values)), seed, self.base, self.metric)
                  for values in combos for seed in self.seeds]
        return [p for p in points if self.keep is None or self.keep(p)]

    def with_seeds(self, seeds) -> "Sweep":
        return replace(self, seeds=tuple(int(s) for s in seeds))

    def subset(self, n_points: int) -> "Sweep":
        """`n_points` grid values per field, evenly spaced over the grid (ends included), renamed."""
        if all(n_points == len(values) for values in self.grid.values()):
            return self
        grid = {}
        for key, values in self.grid.items():
            if not 1 <= n_points <= len(values):
                raise ConfigError(f"points must lie in 1..{len(values)}, got {n_points}")
            index = np.unique(np.linspace(0, len(values) - 1, n_points).round().astype(int))
            grid[key] = tuple(values[i] for i in index)
        return replace(self, name=f"{self.name}-p{n_points}", grid=grid)

    def with_values(self, values) -> "Sweep":
        """Only these values of a one-field grid (each matched to the nearest grid value within 1e-3, so the
        points keep the grid's hashes and results); the name is kept: they are points of this sweep."""
        field_key, grid_values = self.swept_key, self.grid[self.swept_key]
        chosen = []
        for value in values:
            nearest = min(grid_values, key=lambda g: abs(g - float(value)))
            if abs(nearest - float(value)) > 1e-3:
                raise ConfigError(f"{self.swept_field}={value:g} is not a value of {self.name}'s grid"
                                  f" ({', '.join(f'{g:g}' for g in grid_values)})")
            chosen.append(nearest)
        return replace(self, grid={field_key: tuple(g for g in grid_values if g in chosen)})

    @property
    def swept_key(self) -> str:
        """The swept field's dotted key (a one-field grid)."""
        self.swept_field  # noqa: B018  (raises for a grid of another size)
        return next(iter(self.grid))

    def with_steps(self, steps: int) -> "Sweep":
        if self.base.get("train.steps") == steps:
            return self
        return replace(self, name=f"{self.name}-s{steps}", base={**self.base, "train.steps": int(steps)})


@dataclass(frozen=True)
class Point:
    sweep: str
    params: dict[str, Any]  # grid values of this run
    seed: int
    base: dict[str, Any]
    metric: str

    @property
    def overrides(self) -> dict[str, Any]:
        return {**self.base, **self.params, "train.seed": self.seed}

    @property
    def key(self) -> str:
        """The config hash; for a config that cannot even be built, a hash of its overrides."""
        try:
            return RunConfig().replace(**self.overrides).hash()
        except ConfigError:
            text = json.dumps(self.overrides, sort_keys=True)
            return "invalid-" + hashlib.sha256(text.encode()).hexdigest()[:12]

    def label(self) -> str:
        return point_label(self.params, self.seed)


def point_label(params: dict[str, Any], seed: int) -> str:
    """'train_fraction=0.6, seed 42': a point in words (also from a record's params and seed)."""
    values = [f"{k.rsplit('.', 1)[-1]}={v:g}" if isinstance(v, float) else f"{k.rsplit('.', 1)[-1]}={v}"
              for k, v in params.items()]
    return ", ".join([*values, f"seed {seed}"])


def coarse_to_fine(n: int) -> list[int]:
    """0..n-1 ordered ends first, then midpoints, then quarter points, ...: a sweep stopped early still
    covers its whole range evenly."""
    order, depth = [], 0
    while len(order) < n:
        for j in range(2 ** depth + 1):
            index = round(j * (n - 1) / 2 ** depth)
            if index not in order:
                order.append(index)
        depth += 1
    return order


def evenly_spaced(lo: float, hi: float, n: int) -> tuple[float, ...]:
    # rounded so configs, hashes and tables show the same short numbers
    return tuple(round(float(v), 6) for v in np.linspace(lo, hi, n))


PAPER_SWEEP_STEPS = 30_000  # the paper's sweep runs (book/protocol.md, "Training")
# Long enough to decide whether a run of the paper's configuration composes: of the ten 40,000-step seeds,
# every one that learned variable assignment passed 0.9 on 1-var train by step 5,701 (42: 2,701 ... 49:
# 5,701), and none of the five that had not by 40,000 did so by 120,000. 12,000 steps is twice the latest.
DECIDE_STEPS = 12_000
COMPOSITION_BASE = {"train.steps": DECIDE_STEPS}  # eval every 100 steps, as the main runs: the jump's step
NEAR_PAPER_SEEDS = tuple(range(42, 58))
NEAR_PAPER_STEPS = 24_000
FACTORIAL_SEEDS = (42, 44, 49, 50, 43, 45, 46, 47)  # four seeds that composed at 40,000 steps, four that did not


def balanced_half(point: "Point") -> bool:
    """Half of the 8 x 8 cells, 8 in each 4 x 4 block (composer or failer initialization x composer or failer
    data): the cells whose initialization and data positions in FACTORIAL_SEEDS sum to an even number. Every
    initialization meets four data orders and every data order four initializations; the diagonal (a seed's own
    run) is in."""
    return (FACTORIAL_SEEDS.index(point.params["train.init_seed"]) + FACTORIAL_SEEDS.index(point.seed)) % 2 == 0


# The thresholds' verdicts need at least three seeds; seeds 44-46 were added at the grid values around the
# thresholds (the f grid's 3rd-7th values, 0.159-0.355; the r grid's first six, 0.01-0.268), not over the whole grid.
ADDED_SEEDS = (44, 45, 46)
F_GRID = evenly_spaced(0.0616, 0.99, 20)
R_GRID = evenly_spaced(0.01, 0.99, 20)


def added_seeds_where_decided(key: str, values: tuple, point: "Point") -> bool:
    """The main seeds (42, 43) at every grid value; the added seeds only at `values` of the field `key`."""
    return point.seed not in ADDED_SEEDS or point.params[key] in values


# Only the final numbers count in a sweep, and evaluating never changes training (the data stream is
# a function of seed and step), so pools and measures are logged every 1,000 steps instead of 100:
# the same results for ~15 % less compute.
SWEEP_EVAL_EVERY = 1000
SWEEPS = {
    "f_sweep": Sweep(
        "f_sweep", {"task.train_fraction": F_GRID}, metric="0var_heldout",
        base={"task.two_var_rate": 1.0, "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        seeds=(42, 43, *ADDED_SEEDS), keep=partial(added_seeds_where_decided, "task.train_fraction", F_GRID[2:7]),
        description="training fraction f of the addition pairs (C8); metric: 0-var held-out exact",
        paper_value=0.25, x_label="training fraction f", metric_label="0-var held-out exact accuracy"),
    "r_sweep": Sweep(
        "r_sweep", {"task.two_var_rate": R_GRID}, metric="2var_union",
        base={"task.train_fraction": 0.7, "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        seeds=(42, 43, *ADDED_SEEDS), keep=partial(added_seeds_where_decided, "task.two_var_rate", R_GRID[:6]),
        description="2-var rate r: 2-var rows kept, as the paper defines it (C9); metric: 2-var union exact",
        paper_value=0.2, x_label="2-var rate r (2-var rows kept)", metric_label="2-var union exact accuracy"),
    "r_sweep_share_only": Sweep(
        "r_sweep_share_only", {"task.two_var_rate": R_GRID}, metric="2var_union",
        base={"task.train_fraction": 0.7, "task.two_var_rule": "ablation_share_only",
              "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        description="ablation, not the paper's: r scales only the 2-var share, every pair stays in 2-var queries;"
                    " metric: 2-var union exact",
        x_label="2-var rate r (share only)", metric_label="2-var union exact accuracy"),
    # The composition study: does a run of the paper's configuration learn variable assignment?
    "composition_seeds": Sweep(
        "composition_seeds", {}, metric="1var_train", base=COMPOSITION_BASE, seeds=tuple(range(42, 74)),
        description="the paper's configuration, 32 seeds, 12,000 steps: the share of runs that compose",
        metric_label="1-var train accuracy"),
    "composition_factorial": Sweep(
        "composition_factorial", {"train.init_seed": FACTORIAL_SEEDS}, metric="1var_train", base=COMPOSITION_BASE,
        seeds=FACTORIAL_SEEDS, x_label="initialization seed", metric_label="1-var train accuracy", keep=balanced_half,
        description="initialization x data order: seeds' initial weights trained on other seeds' streams"
                    " (train.seed sets the data order), a balanced half of the 8 x 8 cells (32), 12,000 steps"),
    # Which setting moves the rate (chapter 4)? The same 16 seeds at the f and r values next to the paper's
    # (grid neighbours of f = 0.7 and r = 1), long enough for late composition (f-sweep runs composed up to step
    # 20,001), beside those seeds at the paper's configuration in composition_seeds.
    "composition_near_f": Sweep(
        "composition_near_f", {"task.train_fraction": (F_GRID[12], F_GRID[14])}, metric="1var_train",
        base={"task.two_var_rate": 1.0, "train.steps": NEAR_PAPER_STEPS}, seeds=NEAR_PAPER_SEEDS,
        x_label="training fraction f", metric_label="1-var train accuracy",
        description="seeds 42-57 at the f values next to the paper's 0.7 (r = 1), 24,000 steps: does f move the rate?"),
    "composition_near_r": Sweep(
        "composition_near_r", {"task.two_var_rate": (R_GRID[18],)}, metric="1var_train",
        base={"task.train_fraction": 0.7, "train.steps": NEAR_PAPER_STEPS}, seeds=NEAR_PAPER_SEEDS,
        x_label="2-var rate r", metric_label="1-var train accuracy",
        description="seeds 42-57 at the r value next to the paper's 1 (f = 0.7), 24,000 steps: does r move the rate?"),
    "composition_bf16": Sweep(
        "composition_bf16", {}, metric="1var_train", base={**COMPOSITION_BASE, "train.bf16": True},
        seeds=tuple(range(42, 52)), metric_label="1-var train accuracy",
        description="the ten main seeds again with bf16 autocast (the authors' precision), 12,000 steps"),
}


def get_sweep(name: str) -> Sweep:
    if name not in SWEEPS:
        raise ConfigError(f"unknown sweep {name!r}; sweeps are {', '.join(SWEEPS)}")
    return SWEEPS[name]
