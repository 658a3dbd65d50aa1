"""The sweeps by name: what a sweep is (`definition`: `Sweep`, `Point`, ...) and the study's own sweeps (`designs`:
`SWEEPS`, with the values they are built from, e.g. `grid.F_GRID`, `grid.ODDS_INITS`). `designs` is imported on
first use, when it reads the study profile, so importing the sweep machinery reads none."""
from __future__ import annotations

from ...core.config import ConfigError
from .definition import (METRICS, MODE_COMPILE, Point, Sweep,  # noqa: F401  (names of a sweep)
                         coarse_to_fine, evenly_spaced, point_label)


def get_sweep(name: str) -> Sweep:
    from .designs import SWEEPS
    if name not in SWEEPS:
        raise ConfigError(f"unknown sweep {name!r}; sweeps are {', '.join(SWEEPS)}")
    return SWEEPS[name]


def __getattr__(name: str):
    """`grid.SWEEPS`, `grid.ODDS_INITS`, ...: the study's sweeps and their design values, from `designs`."""
    if not name.startswith("__"):
        import assignadd_core.experiments.sweep.designs as designs  # the module itself, not its package
        if hasattr(designs, name):
            return getattr(designs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
