"""Where eager and compiled training part, and why (chapter 4): one seed of the paper's configuration trained in
several numerical modes, each a run folder under runs/modes/seed<S>/<mode>/ with the same config and hash.

* `eager` and `compiled` (fp32, the whole step compiled): the two trajectories side by side;
* `fp64`: eager in double precision, the reference for exact arithmetic;
* `compiled_attention`, `compiled_mlp`, `compiled_unembed`: one stage of the fused step compiled alone
  (`training.STAGES`), the bisection: the outcome follows the stage whose compiled form makes the difference.

Every mode trains at one thread (as the sweeps do) for the composition study's decide_steps, evaluated every 100, with no early stop
(the trajectories are compared step by step); checkpoints stay local, metrics, final results and the measurements
below are committed:

* `distances.csv`: per eval step, the relative weight distance ||w_a - w_b|| / ||w_b|| between modes (quantity
  `weight_distance`, cached in the first mode's run);
* `step_differences.csv`: at a few checkpoints of the eager run, the gradient of the compiled step minus the eager
  one at the same weights and batch, for several successive batches: its size relative to the gradient, its cosine
  with the gradient, and the cosine between successive differences (near 1: a bias; near 0: rounding) (quantity
  `compiled_step_difference`, cached in the eager run).

Both are read through `series`, so they are cached in the runs that hold the checkpoints (on a fresh clone, the
replays: those caches are not committed, these two tables are).

A fresh clone has the runs but not their checkpoints: `measure` first replays the first replay_steps steps of the
eager, compiled and fp64 runs with every checkpoint kept (under replay/, not committed; the learning rate is
constant, so these are the full runs' steps) and reports how far each replay's logged loss is from its run's.

    python -m assignadd_core modes run [--seed 58] [--only MODE ...]
    python -m assignadd_core modes measure [--seed 58]
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pandas as pd

from ..core.config import ConfigError, RunConfig
from ..analysis.quantities import DIFFERENCE_BATCHES, DIFFERENCE_VALUES
from ..core.run_folder import DEFAULT_ROOT, Run
from ..analysis.series import across, series
from ..rules.study import current
from .threads import set_threads
from .training import train
from ..core.checkpoint import atomic_write_text
from ..analysis.phases import detect_phases
from ..rules.verdicts import composed

MODES = {"eager": ("off", "fp32"), "compiled": ("on", "fp32"), "fp64": ("off", "fp64"),
         "compiled_attention": ("attention", "fp32"), "compiled_mlp": ("mlp", "fp32"),
         "compiled_unembed": ("unembed", "fp32")}
REPLAY_MODES = ("eager", "compiled", "fp64")  # the modes the measurements compare


class Plan(NamedTuple):
    seed: int  # eager fails and compiled composes, on two CPUs
    steps: int  # each mode's run: the composition study's decide_steps
    difference_steps: tuple[int, ...]  # eager checkpoints where the compiled step's difference is read
    replay_steps: int  # the modes part before it


def study_plan() -> Plan:
    """The mode study's seed and steps, from the study profile (runs.mode_seed, composition, modes)."""
    study = current()
    return Plan(study["runs"]["mode_seed"], study["composition"]["decide_steps"],
                tuple(study["modes"]["difference_steps"]), study["modes"]["replay_steps"])


def _seed(seed: int | None) -> int:
    """A mode study's seed: the study profile's unless one is named."""
    return study_plan().seed if seed is None else seed


def study_root(seed: int | None = None, root: Path | None = None) -> Path:
    return Path(root or DEFAULT_ROOT) / "modes" / f"seed{_seed(seed)}"


def study_config(seed: int | None = None) -> RunConfig:
    return RunConfig().replace(seed=_seed(seed), steps=study_plan().steps)


def run_modes(seed: int | None = None, only=None, root: Path | None = None, progress: bool = True) -> list[Run]:
    """Train (or resume) each mode's run; finished ones are left as they are."""
    names = list(only or MODES)
    unknown = [n for n in names if n not in MODES]
    if unknown:
        raise ConfigError(f"unknown mode(s) {', '.join(unknown)}; modes are {', '.join(MODES)}")
    set_threads(1)
    runs = []
    for name in names:
        compile, precision = MODES[name]
        run = Run(study_root(seed, root) / name)
        if not _finished(run):
            run = train(study_config(seed), run.path, progress=progress, keep_checkpoints="all", compile=compile,
                        precision=precision)
        runs.append(run)
    return runs


def _finished(run: Run) -> bool:
    """A mode's results are committed (final.json) even where its model file, not committed, is absent."""
    return run.final_path.is_file()


def _with_checkpoints(base: Path, mode: str) -> Run:
    """The mode's run if it kept its checkpoints (the machine that trained it), else its replay."""
    run = Run(base / mode)
    return run if run.checkpoint_steps() else Run(base / "replay" / mode)


def replay(seed: int | None = None, until: int | None = None, modes=REPLAY_MODES, root: Path | None = None,
           progress: bool = True) -> dict[str, float]:
    """Retrain the first `until` steps (default: the plan's replay_steps) of each mode whose run kept no checkpoints, keeping every
    checkpoint; returns each replayed mode's largest |loss difference| from its committed run over those steps (0.0:
    the same run)."""
    until = until or study_plan().replay_steps
    set_threads(1)
    base, differences = study_root(seed, root), {}
    for name in modes:
        run = Run(base / name)
        if run.checkpoint_steps() or not _finished(run):
            continue
        compile, precision = MODES[name]
        again = Run(base / "replay" / name)
        if not again.is_complete():
            again = train(study_config(seed).replace(steps=until), again.path, progress=progress,
                          keep_checkpoints="all", compile=compile, precision=precision)
        both = run.metrics().set_index("step")["loss"].to_frame("run").join(
            again.metrics().set_index("step")["loss"].rename("replay"), how="inner")
        differences[name] = float((both["run"] - both["replay"]).abs().max())
    return differences


def weight_distances(seed: int | None = None, pairs=(("compiled", "eager"), ("eager", "fp64"), ("compiled", "fp64")),
                     root: Path | None = None) -> pd.DataFrame:
    """Per checkpoint step both runs kept: the relative weight distance of each pair of modes (`weight_distance`,
    read through `series.across`, cached in the first mode's run)."""
    base, columns = study_root(seed, root), []
    for a, b in pairs:
        run_a, run_b = _with_checkpoints(base, a), _with_checkpoints(base, b)
        if run_a.checkpoint_dir.is_dir() and run_b.checkpoint_dir.is_dir():
            columns.append(across(run_a, run_b, "weight_distance")["relative_distance"].rename(f"{a}_vs_{b}"))
    return pd.concat(columns, axis=1).reset_index() if columns else pd.DataFrame()


def step_differences(seed: int | None = None, steps=None, root: Path | None = None) -> pd.DataFrame:
    """At the eager run's checkpoints `steps` (default: the plan's difference_steps; those it kept): compiled minus eager
    gradient of the loss at the same weights and batch, on DIFFERENCE_BATCHES successive batches
    (`compiled_step_difference`, read through `series` at one thread); one row per checkpoint and batch step:
    relative size, cosine with the gradient, cosine with the previous batch's difference."""
    set_threads(1)
    eager = _with_checkpoints(study_root(seed, root), "eager")
    kept = [s for s in (steps or study_plan().difference_steps) if eager.checkpoint_path(s).is_file()]
    if not kept:
        return pd.DataFrame()
    table = series(eager, "compiled_step_difference", kept)
    return pd.DataFrame([{"checkpoint": step, "batch_step": step + b,
                          **{name: row[f"{name}_{b}"] for name in DIFFERENCE_VALUES}}
                         for step, row in table.iterrows() for b in range(1, DIFFERENCE_BATCHES + 1)])


def measure(seed: int | None = None, root: Path | None = None, progress: bool = True) -> dict[str, Path]:
    """Write distances.csv and step_differences.csv beside the modes' runs (replaying checkpoints where missing;
    replay.csv: each replay's largest loss difference from its run)."""
    seed = _seed(seed)
    base = study_root(seed, root)
    replayed = replay(seed, root=root, progress=progress)
    if replayed:
        atomic_write_text(base / "replay.csv", pd.DataFrame(
            [{"mode": m, "steps": study_plan().replay_steps, "largest_loss_difference": d} for m, d in replayed.items()]
        ).to_csv(index=False, float_format="%.6g"))
    out = {"distances": base / "distances.csv", "step_differences": base / "step_differences.csv"}
    tables = {"distances": weight_distances(seed, root=root), "step_differences": step_differences(seed, root=root)}
    for name, table in tables.items():
        if table.empty:
            raise ConfigError(f"seed {seed}: nothing to measure for {name} (train the modes first: modes run)")
        atomic_write_text(out[name], table.to_csv(index=False, float_format="%.6g"))
    return out


def outcomes(seed: int | None = None, root: Path | None = None) -> pd.DataFrame:
    """One row per finished mode: composed, the composition step, final 1-var train, wall time."""
    rows = []
    for name, (compile, precision) in MODES.items():
        run = Run(study_root(seed, root) / name)
        if not _finished(run):
            continue
        final = run.final()
        one_var = final["pools"]["1var_train"]
        rows.append({"mode": name, "compile": compile, "precision": precision, "composed": composed(one_var),
                     "composition": detect_phases(run.metrics()).get("composition"), "one_var_train": one_var,
                     "wall_time_s": final["wall_time_s"]})
    return pd.DataFrame(rows)
