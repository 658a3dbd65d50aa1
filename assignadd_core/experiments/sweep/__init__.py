"""Sweeps: a named grid over config fields × seeds, run locally (process pool) or on Ray.

    runs/sweeps/<sweep>.jsonl    one JSON line per finished run (config, hash, exact sets, pools, controls,
                                 wall time, device, versions); the source of truth, append-only: a
                                 later line for the same hash (e.g. from `annotate`) replaces an earlier one
    runs/sweeps/<sweep>.csv      the merged table (latest line per config hash), rewritten after every run
    runs/sweeps/scratch/<hash>/  scratch run folders (not committed): a killed run resumes from its
                                 last eval step through the trainer's resume state
    runs/sweeps/.<sweep>.lock    held by the sweep's driver (and .lock.json: who that is; not committed)

A run whose config hash already has a "done" or "failed" line is skipped, so re-running a sweep
resumes it, and adding seeds or points runs only the new ones. "failed" means the config itself
cannot exist (building its RunConfig or its split raises `ConfigError`, e.g. a split that leaves a
number out of training): rerunning cannot help. Anything that goes wrong while training (a device
that is missing, a killed worker, a lost Ray node, a run held by another process) is an "error",
retried on the next invocation. Settings shared by every point (device, threads, workers) are
checked up front, so a wrong one stops the sweep before anything is recorded.
Every done line carries the controls of its final model (`controls`: the 0-var held-out accuracy on the
pairs whose swap (n2, n1) is held out too, and on those whose swap is trained on; None without such
pairs); `annotate` adds them to lines recorded before, while the scratch folder still holds the model.
One driver per sweep at a time: the driver holds the sweep's lock and is the only writer of the
JSONL file; a second driver stops at once, naming the first.
Several single-thread workers sharing the cores wait passively (OMP_WAIT_POLICY=PASSIVE, unless
set): a spinning OpenMP runtime steals the other workers' time. Nothing else changes the policy.

    python -m assignadd_core sweep list
    python -m assignadd_core sweep run f_sweep --workers 2 --threads 1      # local process pool
    python -m assignadd_core sweep run r_sweep --executor ray [--address auto] [--device cuda]
    python -m assignadd_core sweep run f_sweep --seeds 42 43                # adds seed 43
    python -m assignadd_core sweep status f_sweep
    python -m assignadd_core sweep annotate f_sweep                         # controls for older lines

One job per module: `definition` (what a sweep is), `designs` (the study's sweeps, read from its profile when
imported), `named` (the study's sweeps by name, `get_sweep`; `SWEEPS` here: designs imported when a sweep is first
used), `grid` (the study's sweeps and their values, for the chapters), `store` (results files), `worker` (one point), `executors` (process
pool, Ray), `driver` (run_sweep, annotate), `commands` (the `sweep` command).
"""
from ...rules.study import StudyMapping
from ..threads import set_threads
from .commands import cmd_annotate, cmd_list, cmd_run, cmd_status, register_cli
from .definition import Point, Sweep, coarse_to_fine, evenly_spaced, point_label
from .driver import FINISHED, annotate, run_sweep
from .executors import EXECUTORS, _local, passive_wait
from .named import get_sweep, study_sweeps
from .store import (CONTROLS, append_record, driver_lock, flat_row, grid_status, latest_records, read_records,
                    results_frame, results_path, scratch_dir, sweep_tables, sweeps_dir, write_csv)
from .worker import RECORDED, run_controls, run_point

SWEEPS = StudyMapping(study_sweeps)  # the study's sweeps by name, read from its profile when first used

__all__ = ["CONTROLS", "EXECUTORS", "FINISHED", "RECORDED", "SWEEPS",
           "Point", "Sweep", "annotate", "append_record", "cmd_annotate", "cmd_list", "cmd_run", "cmd_status",
           "coarse_to_fine", "driver_lock", "evenly_spaced", "flat_row", "get_sweep", "grid_status",
           "latest_records", "passive_wait", "point_label", "read_records", "register_cli", "results_frame",
           "results_path", "run_controls", "run_point", "run_sweep", "scratch_dir", "set_threads", "sweep_tables",
           "sweeps_dir", "write_csv"]

