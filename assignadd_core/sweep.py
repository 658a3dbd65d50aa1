"""Sweeps: a named grid over config fields × seeds, run locally (process pool) or on Ray.

    runs/sweeps/<sweep>.jsonl    one JSON line per finished run (config, hash, exact sets, pools,
                                 wall time, device, versions); the source of truth, append-only
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
One driver per sweep at a time: the driver holds the sweep's lock and is the only writer of the
JSONL file; a second driver stops at once, naming the first.
Several single-thread workers sharing the cores wait passively (OMP_WAIT_POLICY=PASSIVE, unless
set): a spinning OpenMP runtime steals the other workers' time. Nothing else changes the policy.

    python -m assignadd_core sweep list
    python -m assignadd_core sweep run f_sweep --workers 2 --threads 1      # local process pool
    python -m assignadd_core sweep run r_sweep --executor ray [--address auto] [--device cuda]
    python -m assignadd_core sweep run f_sweep --seeds 42 43                # adds seed 43
    python -m assignadd_core sweep status f_sweep
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from .checkpoint import atomic_write_text
from .config import ConfigError, RunConfig, resolve_key
from .data import EXACT_NAMES, POOL_NAMES
from .locks import BusyError, exclusive
from .runs import DEFAULT_ROOT

FINISHED = ("done", "failed")
EXECUTORS = ("local", "ray")


# ---------------------------------------------------------------------------- grids
@dataclass(frozen=True)
class Sweep:
    """A grid over config fields (cartesian product of `grid`) × `seeds`, on top of `base` overrides."""

    name: str
    grid: dict[str, tuple]  # dotted config key -> values
    metric: str  # the exact set that measures success (an EXACT_NAMES entry)
    base: dict[str, Any] = field(default_factory=dict)  # overrides of the paper config shared by all runs
    seeds: tuple[int, ...] = (42,)  # train.seed; the split (task.split_seed) stays fixed
    description: str = ""
    paper_value: float | None = None  # the paper's threshold, when it states one
    x_label: str = ""  # the swept value, in words (figure axis)
    metric_label: str = ""  # the metric, in words

    @property
    def swept_field(self) -> str:
        """The swept field's bare name (a one-field grid), as in the CSV and the status table."""
        return self.fields[0]

    def __post_init__(self) -> None:
        if self.metric not in EXACT_NAMES:
            raise ConfigError(f"sweep metric must be one of {EXACT_NAMES}, got {self.metric!r}")
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
        return [Point(self.name, dict(zip(self.grid, values)), seed, self.base, self.metric)
                for values in combos for seed in self.seeds]

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
        values = ", ".join(f"{k.rsplit('.', 1)[-1]}={v:g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in self.params.items())
        return f"{values}, seed {self.seed}"


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
# Only the final numbers count in a sweep, and evaluating never changes training (the data stream is
# a function of seed and step), so pools and measures are logged every 1,000 steps instead of 100:
# the same results for ~15 % less compute.
SWEEP_EVAL_EVERY = 1000
SWEEPS = {
    "f_sweep": Sweep(
        "f_sweep", {"task.train_fraction": evenly_spaced(0.0616, 0.99, 20)}, metric="0var_heldout",
        base={"task.two_var_rate": 1.0, "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        seeds=(42, 43), description="training fraction f of the addition pairs (C8); metric: 0-var held-out exact",
        paper_value=0.25, x_label="training fraction f", metric_label="0-var held-out exact accuracy"),
    "r_sweep": Sweep(
        "r_sweep", {"task.two_var_rate": evenly_spaced(0.01, 0.99, 20)}, metric="2var_union",
        base={"task.train_fraction": 0.7, "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        seeds=(42, 43), description="2-var rate r: 2-var rows kept, as the paper defines it (C9); metric: 2-var union exact",
        paper_value=0.2, x_label="2-var rate r (2-var rows kept)", metric_label="2-var union exact accuracy"),
    "r_sweep_share_only": Sweep(
        "r_sweep_share_only", {"task.two_var_rate": evenly_spaced(0.01, 0.99, 20)}, metric="2var_union",
        base={"task.train_fraction": 0.7, "task.two_var_rule": "ablation_share_only",
              "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        description="ablation, not the paper's: r scales only the 2-var share, every pair stays in 2-var queries;"
                    " metric: 2-var union exact",
        x_label="2-var rate r (share only)", metric_label="2-var union exact accuracy"),
}


def get_sweep(name: str) -> Sweep:
    if name not in SWEEPS:
        raise ConfigError(f"unknown sweep {name!r}; sweeps are {', '.join(SWEEPS)}")
    return SWEEPS[name]


# ---------------------------------------------------------------------------- results files
def sweeps_dir(root: Path | None = None) -> Path:
    return Path(root) if root is not None else DEFAULT_ROOT / "sweeps"


def results_path(sweep: Sweep, root: Path | None = None) -> Path:
    return sweeps_dir(root) / f"{sweep.name}.jsonl"


def driver_lock(sweep: Sweep, root: Path | None = None):
    """Context manager: this process is the sweep's only driver, or BusyError names the one that is."""
    return exclusive(sweeps_dir(root) / f".{sweep.name}.lock", f"sweep {sweep.name} ({results_path(sweep, root)})")


def read_records(path: Path) -> list[dict]:
    """All JSON lines; a line cut short by a kill (the last one) is ignored."""
    if not Path(path).is_file():
        return []
    records = []
    for line in Path(path).read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def latest_records(path: Path) -> dict[str, dict]:
    latest: dict[str, dict] = {}
    for record in read_records(path):
        latest[record["key"]] = record
    return latest


def append_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def flat_row(record: dict) -> dict:
    row = {"key": record["key"], "status": record["status"], "seed": record["seed"], **record["params_bare"],
           "steps": record.get("steps"), "metric": record["metric"], "value": record.get("value")}
    for name in EXACT_NAMES:
        row[f"exact_{name}"] = record.get("exact", {}).get(name)
    for name in POOL_NAMES:
        row[name] = record.get("pools", {}).get(name)
    for name in ("wall_time_s", "run_time_s", "device", "device_name", "threads", "torch", "git_commit",
                 "finished_at", "reason"):
        row[name] = record.get(name)
    return row


def results_frame(sweep: Sweep, root: Path | None = None) -> pd.DataFrame:
    """One row per config hash (its latest line), sorted by grid values and seed."""
    rows = [flat_row(r) for r in latest_records(results_path(sweep, root)).values()]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values([*sweep.fields, "seed"], kind="stable").reset_index(drop=True)


def write_csv(sweep: Sweep, root: Path | None = None) -> Path:
    path = results_path(sweep, root).with_suffix(".csv")
    atomic_write_text(path, results_frame(sweep, root).to_csv(index=False))
    return path


def sweep_tables(sweep: Sweep, root: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(grid status, finished runs) for the sweep's seeds and every seed present in its results."""
    results = results_frame(sweep, root)
    seeds = sorted({*sweep.seeds, *(int(s) for s in (results["seed"] if len(results) else []))})
    done = results[results["status"] == "done"] if len(results) else results
    return grid_status(sweep.with_seeds(seeds), root), done


def grid_status(sweep: Sweep, root: Path | None = None) -> pd.DataFrame:
    """Every planned point × seed with its status ("pending" where no result exists yet) and value."""
    latest = latest_records(results_path(sweep, root))
    rows = []
    for point in sweep.points():
        record = latest.get(point.key, {})
        rows.append({**{k.rsplit(".", 1)[-1]: v for k, v in point.params.items()}, "seed": point.seed,
                     "key": point.key, "status": record.get("status", "pending"), "value": record.get("value"),
                     "wall_time_s": record.get("wall_time_s"), "reason": record.get("reason")})
    frame = pd.DataFrame(rows)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
    return frame


# ---------------------------------------------------------------------------- one run
def set_threads(threads: int | None) -> None:
    import torch
    if threads:
        torch.set_num_threads(int(threads))


def _init_worker(threads: int | None) -> None:
    set_threads(threads)


def passive_wait(threads: int | None, workers: int) -> bool:
    """Several single-thread workers share the cores: the one case where a passive OpenMP wait helps."""
    return threads == 1 and workers > 1 and "OMP_WAIT_POLICY" not in os.environ


RECORDED = ("device", "device_name", "threads", "omp_wait_policy", "bf16_used", "python", "torch",
            "transformer_lens", "git_commit")  # copied from the run's final.json into its line


def run_point(task: dict) -> dict:
    """Train one point into its scratch folder (resuming if it was interrupted) and return its record.

    `task`: {"key", "overrides", "work_dir", "device", "threads"}; plain data, so it travels to
    process-pool workers and Ray tasks alike. Never raises: failures come back as records.
    """
    tic = time.perf_counter()
    record = {"key": task["key"], "status": "error", "reason": None}
    try:  # only a config that cannot exist is a result ("failed"); decided before training
        from .data import make_split
        config = RunConfig().replace(**task["overrides"])
        record["config"] = config.to_dict()
        make_split(config.task)
    except ConfigError as err:
        record.update(status="failed", reason=str(err))
        return _stamp(record, tic)
    try:
        set_threads(task.get("threads"))
        from .runs import Run
        from .trainer import train
        work = Path(task["work_dir"]) / task["key"]
        run = Run(work)
        if not (run.is_complete() and run.exists() and run.config == config):
            run = train(config, work, device=task.get("device", "cpu"), progress=False, keep_checkpoints="none")
        final = run.final()
        shutil.rmtree(run.resume_dir, ignore_errors=True)  # optimizer state: only needed while unfinished
        record.update(status="done", steps=final["steps"], exact=final["exact"], pools=final["pools"],
                      wall_time_s=final["wall_time_s"], **{k: final.get(k) for k in RECORDED})
    except Exception as err:  # noqa: BLE001  (an environment problem: reported and retried next time)
        record.update(status="error", reason=f"{type(err).__name__}: {err}")
    return _stamp(record, tic)


def _stamp(record: dict, tic: float) -> dict:
    record["run_time_s"] = round(time.perf_counter() - tic, 1)
    record["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return record


def _lost(task: dict, err: BaseException) -> dict:
    """The record of a point whose worker died (killed, out of memory, a lost node): retried next time."""
    return {"key": task["key"], "status": "error", "reason": f"worker lost: {type(err).__name__}: {err}"}


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for the processes started inside the block, then restore them."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ---------------------------------------------------------------------------- executors
def _local(tasks: list[dict], workers: int, threads: int | None, work=None) -> Iterator[dict]:
    work = work or run_point  # (another function only in tests)
    if workers == 1:  # in this process: no start-up cost, and easy to debug
        _init_worker(threads)
        for task in tasks:
            yield work(task)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    # OpenMP reads its wait policy when torch loads, so it is set for the spawned workers only
    policy = {"OMP_WAIT_POLICY": "PASSIVE"} if passive_wait(threads, workers) else {}
    with _environment(**policy):
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker, initargs=(threads,))
        try:
            futures = {pool.submit(work, task): task for task in tasks}
            for future in as_completed(futures):
                try:
                    yield future.result()
                except Exception as err:  # noqa: BLE001  (a worker died, e.g. BrokenProcessPool)
                    yield _lost(futures[future], err)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _ray(tasks: list[dict], threads: int | None, address: str | None, gpus_per_run: float) -> Iterator[dict]:
    import ray
    started = not ray.is_initialized()
    if started:  # a local instance, or the cluster at `address` (e.g. "auto" or "ray://host:10001")
        # single-thread tasks share each node's cores: the one case for a passive OpenMP wait
        env = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")} if threads == 1 else {}
        ray.init(address=address, runtime_env={"env_vars": env}, include_dashboard=False, logging_level="warning")
    try:
        remote = ray.remote(run_point).options(num_cpus=threads or 1, num_gpus=gpus_per_run, max_retries=1)
        pending = {remote.remote(task): task for task in tasks}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                task = pending.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as err:  # noqa: BLE001  (a worker or node died: report, retry next time)
                    yield _lost(task, err)
    finally:
        for ref in list(pending):
            ray.cancel(ref)
        if started:
            ray.shutdown()


# ---------------------------------------------------------------------------- the driver
def run_sweep(sweep: Sweep, root: Path | None = None, executor: str = "local", workers: int | None = None,
              threads: int | None = 1, device: str = "cpu", address: str | None = None,
              gpus_per_run: float | None = None, progress: bool = True, work_dir: Path | None = None) -> dict:
    """Run every unfinished point of `sweep`; returns counts {"done", "failed", "error", "skipped"}.

    Raises BusyError at once when another driver runs this sweep."""
    if executor not in EXECUTORS:
        raise ConfigError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if threads is not None and threads < 1:
        raise ConfigError(f"threads must be >= 1, got {threads}")
    if device != "cpu" and not device.startswith("cuda"):
        raise ConfigError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device.startswith("cuda") and not (executor == "ray" and address):  # a remote cluster has its own GPUs
        import torch

        from .trainer import DeviceError
        if not torch.cuda.is_available():
            raise DeviceError(f"--device {device}: torch sees no CUDA GPU on this machine; nothing was run")
    if workers is None:
        workers = max(1, (os.cpu_count() or 1) // (threads or 1))
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    with driver_lock(sweep, root):  # what is left to run is read under the lock
        return _drive(sweep, root, executor, workers, threads, device, address, gpus_per_run, progress, work_dir)


def _drive(sweep: Sweep, root: Path | None, executor: str, workers: int, threads: int | None, device: str,
           address: str | None, gpus_per_run: float | None, progress: bool, work_dir: Path | None) -> dict:
    path = results_path(sweep, root)
    work = Path(work_dir) if work_dir is not None else sweeps_dir(root) / "scratch"
    latest = latest_records(path)
    # Run order: seed by seed (in the order given), each over the grid coarse to fine.
    ordered, n_seeds = sweep.points(), len(sweep.seeds)  # grid combination i // n_seeds, seed i % n_seeds
    rank = {combo: r for r, combo in enumerate(coarse_to_fine(len(ordered) // n_seeds))}
    run_order = sorted(range(len(ordered)), key=lambda i: (i % n_seeds, rank[i // n_seeds]))
    points = {ordered[i].key: ordered[i] for i in run_order}
    todo = [p for k, p in points.items() if latest.get(k, {}).get("status") not in FINISHED]
    counts = {"done": 0, "failed": 0, "error": 0, "skipped": len(points) - len(todo)}
    tasks = [{"key": p.key, "overrides": p.overrides, "work_dir": str(work.resolve()), "device": device,
              "threads": threads} for p in todo]
    if not tasks:
        write_csv(sweep, root)
        return counts

    from tqdm.auto import tqdm
    bar = tqdm(total=len(tasks), desc=sweep.name, unit="run", disable=not progress, dynamic_ncols=True)
    bar.set_postfix_str(f"{len(points) - len(todo)} already finished; {min(workers, len(tasks))} running")
    if executor == "local":
        results = _local(tasks, workers, threads)
    else:
        gpus = gpus_per_run if gpus_per_run is not None else (1.0 if device.startswith("cuda") else 0.0)
        results = _ray(tasks, threads, address, gpus)
    try:
        for record in results:
            point = points[record["key"]]
            record.update(sweep=sweep.name, params=point.params, seed=point.seed, metric=sweep.metric,
                          params_bare={k.rsplit(".", 1)[-1]: v for k, v in point.params.items()},
                          value=record.get("exact", {}).get(sweep.metric))
            append_record(path, record)
            write_csv(sweep, root)
            counts[record["status"]] += 1
            value = f"{record['value']:.3f}" if record.get("value") is not None else "-"
            bar.write(f"[{record['status']}] {sweep.name} {point.label()}: {sweep.metric} {value},"
                      f" {record.get('run_time_s', 0):.0f} s" + (f" ({record['reason']})" if record["reason"] else ""))
            bar.update(1)
            left = len(tasks) - bar.n
            bar.set_postfix_str(f"done {counts['done']} failed {counts['failed']} error {counts['error']};"
                                f" running {min(workers, left)}")
    finally:
        bar.close()
    return counts


# ---------------------------------------------------------------------------- command line
def _resolve(args: argparse.Namespace) -> Sweep:
    sweep = get_sweep(args.sweep)
    if getattr(args, "seeds", None) is not None:
        sweep = sweep.with_seeds(args.seeds)
    if getattr(args, "points", None) is not None:
        sweep = sweep.subset(args.points)
    if getattr(args, "steps", None) is not None:
        sweep = sweep.with_steps(args.steps)
    return sweep


def cmd_run(args: argparse.Namespace) -> int:
    sweep = _resolve(args)
    counts = run_sweep(sweep, root=args.root, executor=args.executor, workers=args.workers, threads=args.threads,
                       device=args.device, address=args.address, gpus_per_run=args.gpus_per_run,
                       progress=not args.no_progress, work_dir=args.work_dir)
    print(f"{sweep.name}: {counts['done']} done, {counts['failed']} failed, {counts['error']} errors,"
          f" {counts['skipped']} already finished; results in {results_path(sweep, args.root)}")
    return 1 if counts["error"] else 0


def cmd_status(args: argparse.Namespace) -> int:
    sweep = _resolve(args)
    status = grid_status(sweep, args.root)
    if results_path(sweep, args.root).is_file():
        try:
            with driver_lock(sweep, args.root):
                write_csv(sweep, args.root)
        except BusyError:
            pass  # a running driver rewrites it after every run
    with pd.option_context("display.max_rows", None, "display.width", 200):
        print(status.drop(columns=["key"]).to_string(index=False))
    counts = status["status"].value_counts().to_dict()
    print(f"{sweep.name}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for name, sweep in SWEEPS.items():
        values = next(iter(sweep.grid.values()))
        print(f"{name}: {len(values)} values {values[0]:g}..{values[-1]:g} × seeds {list(sweep.seeds)};"
              f" {sweep.description}; base {sweep.base}")
    return 0


def register_cli(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="run or inspect a data-threshold sweep (f_sweep, r_sweep)",
                                   description="Sweeps over config fields × seeds; finished runs are skipped.")
    sub = parser.add_subparsers(dest="sweep_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("sweep", help=f"one of {', '.join(SWEEPS)}")
        p.add_argument("--seeds", type=int, nargs="+", help="train seeds (default: the sweep's own, 42 and 43); finished ones are skipped")
        p.add_argument("--points", type=int, help="only this many grid values, evenly spaced (a smaller sweep,"
                                                  " stored under its own name)")
        p.add_argument("--steps", type=int, help="training steps per run (default the paper's 30,000; another"
                                                 " value is stored under its own name)")
        p.add_argument("--root", type=Path, default=None, help="results folder (default runs/sweeps)")

    run = sub.add_parser("run", help="run the unfinished points of a sweep")
    common(run)
    run.add_argument("--executor", choices=EXECUTORS, default="local")
    run.add_argument("--workers", type=int, default=None, help="local: parallel runs (default cores // threads)")
    run.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    run.add_argument("--device", default="cpu", help="cpu or cuda")
    run.add_argument("--address", default=None, help="ray: address of an existing cluster (default: a local one);"
                                                     " its nodes need this package installed")
    run.add_argument("--work-dir", type=Path, default=None,
                     help="scratch run folders (default <root>/scratch); on a cluster, a shared folder lets any node"
                          " resume an interrupted run")
    run.add_argument("--gpus-per-run", type=float, default=None, help="ray: GPUs per run (default 1 with cuda)")
    run.add_argument("--no-progress", action="store_true")
    run.set_defaults(func=cmd_run)

    status = sub.add_parser("status", help="every point of a sweep with its status; rewrites the merged CSV")
    common(status)
    status.set_defaults(func=cmd_status)

    lst = sub.add_parser("list", help="the defined sweeps")
    lst.set_defaults(func=cmd_list)

