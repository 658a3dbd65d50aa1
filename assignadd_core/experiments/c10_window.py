"""C10's premise window read as first specified, at matched steps (chapter 9).

The theory speaks of a state: layer 1 copies variables (measure 5 ≥ C10_COPY) and `=` reads the operands
(measure 4 ≥ C10_EQ) while the identity pattern has not formed (measure 3 < C10_IDENTITY_LOW). Its first rule read,
inside that window, the whitened contrast (`controls.whitened_contrast`) of two directions of layer 2's QK:
the negative gradient of the training loss and the AdamW update actually taken (W_QK2 at the next checkpoint
minus here). Here each seed of the dense study is trained again to the study's `read_to` steps with a checkpoint every 100, on
this machine; a composing seed is read at its own window checkpoints, and each stuck seed (the control) at the
same steps, the union of the composing seeds' windows: the controls are read while the composing seeds are in
their window, not after they are stuck. Per seed, the mean of each contrast over its steps; over seeds, a
t-interval and an exact sign test (five and three values: no bootstrap).

    python -m assignadd_core c10-window run        # train the seeds (resumable), then read them
    python -m assignadd_core c10-window read       # read the trained seeds again

The table (one row per seed and step read) is committed as runs/theory/c10_window.csv; the runs keep their
metrics, not their checkpoints.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..rules import verdicts
from ..analysis.steering import first_composed
from ..core.config import RunConfig
from ..core.run_folder import DEFAULT_ROOT, Run
from ..rules.stats import mcnemar_exact, t_interval
from ..rules.study import current
from .threads import set_threads
from .training import train
from ..analysis.gradient_table import gradient_table
from ..core.checkpoint import atomic_write_text

class Window(NamedTuple):
    composing: tuple[int, ...]  # seeds that composed
    stuck: tuple[int, ...]  # seeds that did not
    read_to: int  # the steps each seed is trained and read to


def study_window() -> Window:
    """This reading's seeds and length, from the study profile (c10.window)."""
    window = current()["c10"]["window"]
    return Window(tuple(window["composing"]), tuple(window["stuck"]), int(window["read_to"]))


def study_root(root: Path | None = None) -> Path:
    return Path(root or DEFAULT_ROOT) / "theory" / "window"


def table_path(root: Path | None = None) -> Path:
    return Path(root or DEFAULT_ROOT) / "theory" / "c10_window.csv"


def study_config(seed: int, steps: int | None = None) -> RunConfig:
    return RunConfig().replace(seed=seed, steps=steps or study_window().read_to)


def train_seeds(seeds=None, root: Path | None = None, progress: bool = True, steps: int | None = None) -> dict[int, Run]:
    """Train (or resume) each seed (default: the study's) with every checkpoint kept, to `steps` (default: the study's
    `read_to`); finished runs are left as they are."""
    set_threads(1)
    runs = {}
    for seed in seeds or (*study_window().composing, *study_window().stuck):
        run = Run(study_root(root) / f"seed{seed}")
        if not run.final_path.is_file():
            run = train(study_config(seed, steps), run.path, progress=progress, keep_checkpoints="all", compile="off")
        runs[seed] = run
    return runs


WINDOWS = ("premise", "copying", "state")
OWN_STEPS = ("state",)  # windows in which every seed, stuck ones too, is read at its own steps (matched in state)


def window_steps(metrics: pd.DataFrame, window: str = "premise") -> list[int]:
    """The checkpoints before the run composes (1-var train ≥ the composed level) in the `window`: "premise" (layer 1
    copies, `=` reads the operands, measure 3 low: the claim's first rule), "copying" (layer 1 copies: the
    window the rule before 2026-12-03 averaged over) or "state" (layer 1 copies and measure 3 is low: the premise's
    state without the `=` condition, where a stuck seed is read at its own steps, 2026-12-04)."""
    m = metrics.sort_values("step").set_index("step")
    end = first_composed(metrics)
    end = int(m.index.max()) + 1 if end is None else end
    inside = (m["m5_l1_value_prev_token"] >= verdicts.C10_COPY) & (m.index < end)
    if window in ("premise", "state"):
        inside &= m["m3_l2_var_identity_qk"] < verdicts.C10_IDENTITY_LOW
    if window == "premise":
        inside &= m["m4_l1_eq_to_operands"] >= verdicts.C10_EQ
    elif window not in WINDOWS:
        raise ValueError(f"window must be one of {WINDOWS}, got {window!r}")
    return [int(s) for s in m.index[inside]]


def contrasts(run: Run, steps: list[int]) -> pd.DataFrame:
    """Per step: the whitened contrast of the negative gradient and of the update to the next checkpoint (through
    `series`, so a seed read once is read again from its cache)."""
    kept = set(run.checkpoint_steps())
    reads = sorted({s for s in steps if s in kept} | {s + run.config.train.eval_every for s in steps
                                                      if s + run.config.train.eval_every in kept})
    table = gradient_table(run, reads)
    table = table[table["step"].isin(steps)]
    return table[["step", "grad_white_contrast", "update_white_contrast", "update_steps"]].reset_index(drop=True)


def read(runs: dict[int, Run], window: str = "premise") -> pd.DataFrame:
    """The window table: composing seeds at their own window checkpoints, stuck seeds at the union of those (matched
    in steps), or, in the `OWN_STEPS` windows, at their own (matched in state)."""
    composes = {seed: run for seed, run in runs.items() if first_composed(run.metrics()) is not None}
    own = {seed: window_steps(run.metrics(), window) for seed, run in runs.items()}
    matched = sorted({s for seed in composes for s in own[seed]})
    rows = []
    for seed, run in runs.items():
        group = "composing" if seed in composes else "stuck"
        steps = own[seed] if seed in composes or window in OWN_STEPS else matched
        if not steps:
            rows.append(pd.DataFrame({"seed": [seed], "group": [group], "step": [np.nan]}))
            continue
        rows.append(contrasts(run, steps).assign(seed=seed, group=group))
    table = pd.concat(rows, ignore_index=True).assign(window=window)
    return table[["window", "seed", "group", "step", "grad_white_contrast", "update_white_contrast", "update_steps"]]


def write_table(table: pd.DataFrame, root: Path | None = None) -> Path:
    path = table_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, table.to_csv(index=False, float_format="%.6g"))
    return path


def per_seed(table: pd.DataFrame) -> pd.DataFrame:
    """One row per window and seed: its group, how many steps were read, and the mean of each contrast over them."""
    table = table if "window" in table else table.assign(window="premise")
    grouped = table.groupby(["window", "seed", "group"], sort=False)
    out = grouped.agg(steps=("step", "count"), first=("step", "min"), last=("step", "max"),
                      gradient=("grad_white_contrast", "mean"), update=("update_white_contrast", "mean"))
    return out.reset_index()


def matched_state(table: pd.DataFrame, metrics: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """Every seed read at its own steps in the "state" window (layer 1 copies, measure 3 low, before composing; from
    `metrics`, each seed's metrics table) out of a window table already made: a contrast depends on the seed and the
    step, not on the window a row was read for. One row per seed, as `per_seed`: its group, the steps read (those
    of its own the table holds), the steps it has in that state ("wanted"), and the mean of each contrast over the
    steps read (NaN where the table holds none of them)."""
    known = table.dropna(subset=["step"]).drop_duplicates(["seed", "step"])
    rows = []
    for seed, m in metrics.items():
        wanted = window_steps(m, "state")
        mine = known[(known["seed"] == seed) & known["step"].isin(wanted)]
        group = table.loc[table["seed"] == seed, "group"]
        rows.append({"window": "state", "seed": seed, "group": group.iloc[0] if len(group) else None,
                     "steps": len(mine), "wanted": len(wanted), "first": mine["step"].min(), "last": mine["step"].max(),
                     "gradient": mine["grad_white_contrast"].mean(), "update": mine["update_white_contrast"].mean()})
    return pd.DataFrame(rows)


def study_metrics(root: Path | None = None) -> dict[int, pd.DataFrame]:
    """The window study's seeds' metrics tables (committed without their checkpoints)."""
    window = study_window()
    return {seed: Run(study_root(root) / f"seed{seed}").metrics() for seed in (*window.composing, *window.stuck)}


def over_seeds(values) -> dict:
    """Mean, 95 % t-interval (`stats.t_interval`) and the exact two-sided sign test (how many of n are above 0:
    `stats.mcnemar_exact`, the same binomial test) of per-seed values."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=np.float64)
    mean, low, high = t_interval(v)
    above = int((v > 0).sum())
    return {"n": int(v.size), "mean": mean, "low": low, "high": high, "above": above,
            "sign_p": mcnemar_exact(above, int(v.size) - above)}


def read_table(path: str | Path = "") -> pd.DataFrame | None:
    """The window readings the chapter shows: per window and seed (`per_seed`) with the matched-state reading
    appended (`matched_state`); None where the table is not here."""
    path = Path(path) if path else table_path()
    if not path.is_file():
        return None
    window = pd.read_csv(path)
    shown = pd.concat([per_seed(window), matched_state(window, study_metrics())], ignore_index=True)
    names = {"steps": "checkpoints read", "wanted": "its steps in that state", "first": "from step", "last": "to step",
             "gradient": "negative gradient", "update": "AdamW update"}
    return shown.rename(columns=names).set_index(["window", "seed"]).round(3)
