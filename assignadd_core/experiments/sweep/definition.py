"""What a sweep is: a named grid over config fields × seeds (`Sweep`), its points and their run order. The study's own
sweeps are in `designs`; `named` finds them by name."""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ...core.config import ConfigError, RunConfig, resolve_key
from ...core.data import EXACT_NAMES, POOL_NAMES

METRICS = (*EXACT_NAMES, *POOL_NAMES)  # a sweep's success measure: an exact set or a pool (final accuracy)
# A training mode of a point: how its steps are computed (never a setting of the run: same config and hash).
MODE_COMPILE = {"eager": "off", "compiled": "on"}


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
    # Replicates of every cell: perturbation overrides (an intervention's settings; {} is the unperturbed run) crossed
    # with the cells, and training modes (MODE_COMPILE; empty: the mode the driver is given) crossed with those.
    perturbations: tuple[dict, ...] = ({},)
    modes: tuple[str, ...] = ()
    run_first: Callable[["Point"], Any] | None = None  # a design's own run order (sort key), before the default

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
        for mode in self.modes:
            if mode not in MODE_COMPILE:
                raise ConfigError(f"sweep {self.name}: mode must be one of {', '.join(MODE_COMPILE)}, got {mode!r}")
        for perturbation in self.perturbations:
            bad = sorted(key for key in perturbation if resolve_key(key)[0] != "interventions")
            if bad:
                raise ConfigError(f"sweep {self.name}: a perturbation may set only an intervention's settings"
                                  f" (config.interventions), got {', '.join(bad)}")
        for seed in self.seeds:  # settings shared by every point must be valid (grid values may fail alone)
            RunConfig().replace(**{**self.base, "train.seed": seed})

    @property
    def fields(self) -> list[str]:
        """Grid columns by their bare name (train_fraction, ...), as in the CSV."""
        return [key.rsplit(".", 1)[-1] for key in self.grid]

    def points(self) -> list["Point"]:
        """Every planned point: grid values (in grid order) x seeds x replicates x modes."""
        return [p for _, _, p in self._indexed_points()]

    def run_order(self) -> list["Point"]:
        """The points in the order they are run: seed by seed (in the order given), each over the grid coarse to
        fine (a sweep stopped early still covers its range evenly), each cell's replicates and modes together."""
        n_combos = max((c for c, _, _ in self._indexed_points()), default=-1) + 1
        rank = {combo: r for r, combo in enumerate(coarse_to_fine(n_combos))}
        ordered = sorted(self._indexed_points(), key=lambda item: (item[1], rank[item[0]]))  # stable within a cell
        points = [p for _, _, p in ordered]
        return points if self.run_first is None else sorted(points, key=self.run_first)

    def _indexed_points(self) -> list[tuple[int, int, "Point"]]:
        """(grid combination index, seed index, point) of every kept point."""
        out = []
        for c, values in enumerate(itertools.product(*self.grid.values())):
            for s, seed in enumerate(self.seeds):
                for perturbation in self.perturbations:
                    for mode in self.modes or (None,):
                        point = Point(self.name, dict(zip(self.grid, values)), seed, self.base, self.metric,
                                      dict(perturbation), mode)
                        if self.keep is None or self.keep(point):
                            out.append((c, s, point))
        return out

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
    perturbation: dict[str, Any] = field(default_factory=dict)  # a replicate's nudge or noise ({}: none)
    mode: str | None = None  # "eager" or "compiled" (None: as the driver is told)

    @property
    def overrides(self) -> dict[str, Any]:
        return {**self.base, **self.params, **self.perturbation, "train.seed": self.seed}

    @property
    def key(self) -> str:
        """The config hash (with the mode after a dash, when the point has one: two modes share a config);
        for a config that cannot even be built, a hash of its overrides."""
        try:
            key = RunConfig().replace(**self.overrides).hash()
        except ConfigError:
            text = json.dumps(self.overrides, sort_keys=True)
            key = "invalid-" + hashlib.sha256(text.encode()).hexdigest()[:12]
        return key if self.mode is None else f"{key}-{self.mode}"

    @property
    def compile(self) -> str | None:
        """The trainer's compile setting this point's mode asks for (None: no mode of its own)."""
        return None if self.mode is None else MODE_COMPILE[self.mode]

    def label(self) -> str:
        return point_label({**self.params, **self.perturbation}, self.seed, self.mode)


def point_label(params: dict[str, Any], seed: int, mode: str | None = None) -> str:
    """'train_fraction=0.6, seed 42': a point in words (also from a record's params and seed)."""
    values = [f"{k.rsplit('.', 1)[-1]}={v:g}" if isinstance(v, float) else f"{k.rsplit('.', 1)[-1]}={v}"
              for k, v in params.items()]
    return ", ".join([*values, f"seed {seed}", *([mode] if mode else [])])


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

