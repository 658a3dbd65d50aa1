"""The theory chapter's table over checkpoints (claim C10), read through `series`: per step, the projected negative
gradient G on layer 2's QK with its statistics (quantity `gradient_identity`), and the whitened contrast of the update
taken to the next listed step (quantity `qk2_update`). Both are cached beside the run, so a table over checkpoints
that are no longer kept is read from what was computed while they were.
"""
from __future__ import annotations

import pandas as pd

from .quantities import THEORY_BATCHES
from ..core.run_folder import Run
from .series import cached_steps, series


def gradient_table(run: Run, steps: list[int]) -> pd.DataFrame:
    """One row per step: `gradient_identity`'s columns, `update_white_contrast` to the next listed step and
    `update_steps`, the steps between them (NaN on the last row), and `n_batches`."""
    steps = sorted(int(s) for s in steps)
    table = series(run, "gradient_identity", steps)
    pairs = list(zip(steps, steps[1:]))
    update = series(run, "qk2_update", pairs)["update_white_contrast"] if pairs else pd.Series(dtype=float)
    table["update_white_contrast"] = update.reindex(table.index)
    table["update_steps"] = pd.Series({a: b - a for a, b in pairs}, dtype=float).reindex(table.index)
    return table.assign(n_batches=THEORY_BATCHES).reset_index()


def cached_gradient_steps(run: Run, up_to: int | None = None) -> list[int]:
    """The steps with a cached gradient (their checkpoints may not be kept), up to `up_to`."""
    return [s for s in cached_steps(run, "gradient_identity")
            if isinstance(s, int) and (up_to is None or s <= up_to)]
