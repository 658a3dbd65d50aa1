"""`python -m assignadd_core sweep run|status|annotate|list`."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ...core.config import COMPILE_CHOICES
from ...core.locks import BusyError
from ..threads import set_threads
from .driver import MAX_GPU_STACK, annotate, run_sweep
from .executors import EXECUTORS, ClusterError
from .definition import Sweep, point_label
from .named import get_sweep, study_sweeps
from .store import CONTROLS, driver_lock, grid_status, results_path, write_csv


def _resolve(args: argparse.Namespace) -> Sweep:
    sweep = get_sweep(args.sweep)
    if getattr(args, "seeds", None) is not None:
        sweep = sweep.with_seeds(args.seeds)
    if getattr(args, "values", None) is not None:  # chosen grid values first, then --points of those
        sweep = sweep.with_values(args.values)
    if getattr(args, "points", None) is not None:
        sweep = sweep.subset(args.points)
    if getattr(args, "steps", None) is not None:
        sweep = sweep.with_steps(args.steps)
    return sweep


def cmd_run(args: argparse.Namespace) -> int:
    sweep = _resolve(args)
    try:
        counts = run_sweep(sweep, results_dir=args.results_dir, executor=args.executor, workers=args.workers,
                           threads=args.threads, device=args.device, address=args.address,
                           gpus_per_run=args.gpus_per_run,
                           progress=not args.no_progress, work_dir=args.work_dir, compile=args.compile,
                           stack=args.stack)
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{sweep.name}: {counts['done']} done, {counts['failed']} failed, {counts['error']} errors,"
          f" {counts['skipped']} already finished; results in {results_path(sweep, args.results_dir)}")
    return 1 if counts["error"] else 0


def cmd_status(args: argparse.Namespace) -> int:
    sweep = _resolve(args)
    status = grid_status(sweep, args.results_dir)
    if results_path(sweep, args.results_dir).is_file():
        try:
            with driver_lock(sweep, args.results_dir):
                write_csv(sweep, args.results_dir)
        except BusyError:
            pass  # a running driver rewrites it after every run
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(status.drop(columns=["key", *CONTROLS[:2]]).to_string(index=False))  # the table as before
    counts = status["status"].value_counts().to_dict()
    print(f"{sweep.name}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0


def cmd_annotate(args: argparse.Namespace) -> int:
    sweep = _resolve(args)
    set_threads(args.threads)
    out = annotate(sweep, args.results_dir, args.work_dir)
    print(f"{sweep.name}: {len(out['annotated'])} done points annotated with the controls"
          f" ({', '.join(CONTROLS[:2])}); {len(out['no_weights'])} lack their final model (scratch folder gone)")
    for record in out["no_weights"]:
        print(f"  not annotated: {point_label(record['params'], record['seed'])} ({record['key']})")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for name, sweep in study_sweeps().items():
        grid = "; ".join(f"{k}: {len(v)} values {v[0]:g}..{v[-1]:g}" for k, v in sweep.grid.items()) or "no grid"
        print(f"{name}: {grid} × seeds {list(sweep.seeds)}; {sweep.description}; base {sweep.base}")
    return 0


def register_cli(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="run or inspect a data-threshold sweep (f_sweep, r_sweep)",
                                   description="Sweeps over config fields × seeds; finished runs are skipped.")
    sub = parser.add_subparsers(dest="sweep_command", required=True)

    def common(p: argparse.ArgumentParser, seeds: bool = True) -> None:
        p.add_argument("sweep", help=f"one of {', '.join(study_sweeps())}")
        if seeds:
            p.add_argument("--seeds", type=int, nargs="+",
                           help="train seeds (default: the sweep's own, 42 and 43); finished ones are skipped")
        p.add_argument("--points", type=int, help="only this many grid values, evenly spaced (a smaller sweep,"
                                                  " stored under its own name)")
        p.add_argument("--values", type=float, nargs="+",
                       help="only these grid values (each must be one of the grid's, within 1e-3); same sweep and"
                            " results file")
        p.add_argument("--steps", type=int, help="training steps per run (default the sweep's own; another"
                                                 " value is stored under its own name)")
        p.add_argument("--results-dir", type=Path, default=None, help="results folder (default runs/sweeps)")

    run = sub.add_parser("run", help="run the unfinished points of a sweep")
    common(run)
    run.add_argument("--executor", choices=EXECUTORS, default="local")
    run.add_argument("--workers", type=int, default=None, help="local: parallel runs (default cores // threads)")
    run.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    run.add_argument("--device", default="cpu", help="cpu or cuda")
    run.add_argument("--address", default=None, help="ray: address of an existing cluster (default: a local one);"
                                                     " its nodes need this package installed")
    run.add_argument("--work-dir", type=Path, default=None,
                     help="scratch run folders (default <results_dir>/scratch); on a cluster, a shared folder lets any node"
                          " resume an interrupted run")
    run.add_argument("--gpus-per-run", type=float, default=None, help="ray: GPUs per run (default 1 with cuda)")
    run.add_argument("--compile", choices=COMPILE_CHOICES, default="auto",
                     help="torch.compile each run's training step ('auto', default: at one thread on a CPU, where it"
                          " is faster); results are recorded with the mode")
    run.add_argument("--stack", type=int, default=None, metavar="K",
                     help="train up to K points of one shape together in each worker, their weights stacked (default:"
                          " 1 on a CPU, where a stack trains no faster per run; on a GPU as many as half its free memory"
                          f" holds, up to {MAX_GPU_STACK}; README, Performance);"
                          " records and metrics are those of points trained alone")
    run.add_argument("--no-progress", action="store_true")
    run.set_defaults(func=cmd_run)

    status = sub.add_parser("status", help="every point of a sweep with its status; rewrites the merged CSV")
    common(status)
    status.set_defaults(func=cmd_status)

    note = sub.add_parser("annotate", help="add the controls (swap_heldout, swap_in_training) to done points"
                                           " recorded without them, from the final models in the scratch folders")
    common(note, seeds=False)  # every done point of the results file, whatever its seed
    note.add_argument("--work-dir", type=Path, default=None, help="scratch run folders (default <results_dir>/scratch)")
    note.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    note.set_defaults(func=cmd_annotate)

    lst = sub.add_parser("list", help="the defined sweeps")
    lst.set_defaults(func=cmd_list)

