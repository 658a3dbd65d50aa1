"""The study's sweeps (`SWEEPS`) and the values they are built from (`F_GRID`, `ODDS_INITS`, ...), by name, for the
chapters: importing this module reads the study profile (it imports `designs`). The sweep machinery (`sweep`,
`definition`, `store`, ...) reads none; it finds a sweep through `named.get_sweep` or `sweep.SWEEPS`, read when
used."""
from __future__ import annotations

from .definition import METRICS, MODE_COMPILE, Point, Sweep, coarse_to_fine, evenly_spaced, point_label  # noqa: F401
from .named import get_sweep  # noqa: F401
from .designs import (C10_ADD, C10_PUSH_SHARES, C10_REMOVE, DECIDE_STEPS, F_GRID, FACTORIAL_SEEDS,  # noqa: F401
                      FLIP_PERTURBATIONS, ODDS_DATA, ODDS_INITS, PAPER_SWEEP_STEPS, POWER_SEEDS, POWER_STEPS,
                      R_ADDED_VALUES, R_GRID, SWEEPS, fresh_seeds, onset_cells)
