"""The drivers of a sweep, the only writers of its results file (each under the sweep's lock): `run_sweep`
runs the unfinished points and records them; `annotate` adds the controls to done points recorded
without them."""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from tqdm.auto import tqdm
import torch

from ...analysis.sweep_records import ENDED, is_finished
from ...core.config import COMPILE_CHOICES, ConfigError, RunConfig
from ...core.run_folder import Run
from .executors import EXECUTORS, _local, _ray, check_ray_address
from .definition import Sweep
from .store import (append_record, driver_lock, latest_records, metric_value, metrics_dir, results_path, scratch_dir,
                    write_csv)
from .worker import run_controls
from ...core.model import AssignAddTransformer
from ..stacked import stack_key
from ...core.trainer import DeviceError

FINISHED = ENDED  # a point recorded so is skipped (`sweep_records`)
# On a GPU a sweep's points of one shape train as one stack: as many as half the free memory holds (`gpu_stack_size`),
# up to this many runs.
MAX_GPU_STACK = 256
GPU_STATE_EVERY_S = 300.0  # a GPU stack saves its runs' resume state at most this often (hundreds of runs)


def run_sweep(sweep: Sweep, results_dir: Path | None = None, executor: str = "local", workers: int | None = None,
              threads: int | None = 1, device: str = "cpu", address: str | None = None,
              gpus_per_run: float | None = None, progress: bool = True, work_dir: Path | None = None,
              compile: str = "auto", stack: int | None = None) -> dict:
    """Run every unfinished point of `sweep`; returns counts {"done", "failed", "error", "skipped"}.

    `stack` > 1 trains up to that many points of one shape together in one worker (`stacked`), in run
    order; their records and metrics are those of points trained alone. None: 1 on a CPU; on a GPU (local executor)
    up to MAX_GPU_STACK points in one stack, trained in this process. Raises BusyError at once when another
    driver runs this sweep."""
    gpu_here = device.startswith("cuda") and executor == "local"
    if stack is not None and (not isinstance(stack, int) or stack < 1):
        raise ConfigError(f"stack must be an integer >= 1, got {stack!r}")
    if compile not in COMPILE_CHOICES:
        raise ConfigError(f"compile must be one of {', '.join(COMPILE_CHOICES)}, got {compile!r}")
    if executor not in EXECUTORS:
        raise ConfigError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if threads is not None and threads < 1:
        raise ConfigError(f"threads must be >= 1, got {threads}")
    if device != "cpu" and not device.startswith("cuda"):
        raise ConfigError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device.startswith("cuda") and not (executor == "ray" and address):  # a remote cluster has its own GPUs

        if not torch.cuda.is_available():
            raise DeviceError(f"--device {device}: torch sees no CUDA GPU on this machine; nothing was run")
    if executor == "ray" and address:
        check_ray_address(address)  # a dead address fails here in seconds, before anything is recorded
    if stack is None:
        stack = gpu_stack_size(sweep, device) if gpu_here else 1
    if workers is None:  # one process drives a GPU; on a CPU as many as the cores hold
        workers = 1 if gpu_here else max(1, (os.cpu_count() or 1) // (threads or 1))
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    with driver_lock(sweep, results_dir):  # what is left to run is read under the lock
        return _drive(sweep, results_dir, executor, workers, threads, device, address, gpus_per_run, progress, work_dir,
                      compile, stack)


def _drive(sweep: Sweep, results_dir: Path | None, executor: str, workers: int, threads: int | None, device: str,
           address: str | None, gpus_per_run: float | None, progress: bool, work_dir: Path | None,
           compile: str, stack: int) -> dict:
    path = results_path(sweep, results_dir)
    work = scratch_dir(results_dir, work_dir)
    latest = latest_records(path)
    points = {p.key: p for p in sweep.run_order()}
    todo = [p for k, p in points.items() if latest.get(k, {}).get("status") not in FINISHED]
    counts = {"done": 0, "failed": 0, "error": 0, "skipped": len(points) - len(todo)}
    gpu = device.startswith("cuda")
    tasks = [{"key": p.key, "overrides": p.overrides, "work_dir": str(work.resolve()), "device": device,
              "threads": threads, "compile": p.compile or compile,
              "metrics_dir": str(metrics_dir(sweep, results_dir).resolve()),
              **({"state_every_s": GPU_STATE_EVERY_S, "data_workers": gpu_data_workers(),
                  "progress": progress and workers == 1} if gpu else {})}
             for p in todo]
    if not tasks:
        write_csv(sweep, results_dir)
        return counts

    bar = tqdm(total=len(tasks), desc=sweep.name, unit="run", disable=not progress, dynamic_ncols=True)
    running = workers * stack  # points at a time
    bar.set_postfix_str(f"{len(points) - len(todo)} already finished; {min(running, len(tasks))} running")
    jobs = stack_jobs(tasks, stack)
    if executor == "local":
        results = _local(jobs, workers, threads)
    else:
        gpus = gpus_per_run if gpus_per_run is not None else (1.0 if device.startswith("cuda") else 0.0)
        results = _ray(jobs, threads, address, gpus)
    try:
        for record in results:
            point = points[record["key"]]
            record.update(sweep=sweep.name, params=point.params, seed=point.seed, metric=sweep.metric,
                          perturbation=point.perturbation, mode=point.mode,
                          params_bare={k.rsplit(".", 1)[-1]: v for k, v in point.params.items()},
                          value=metric_value(record, sweep.metric))
            append_record(path, record)
            write_csv(sweep, results_dir)
            counts[record["status"]] += 1
            value = f"{record['value']:.3f}" if record.get("value") is not None else "-"
            bar.write(f"[{record['status']}] {sweep.name} {point.label()}: {sweep.metric} {value},"
                      f" {record.get('run_time_s', 0):.0f} s" + (f" ({record['reason']})" if record["reason"] else ""))
            bar.update(1)
            left = len(tasks) - bar.n
            bar.set_postfix_str(f"done {counts['done']} failed {counts['failed']} error {counts['error']};"
                                f" running {min(running, left)}")
    finally:
        bar.close()
    return counts


def gpu_stack_size(sweep: Sweep, device: str) -> int:
    """How many runs of the sweep's shape share a GPU stack: half the device's free memory over one run's need (its
    weights, gradient and two AdamW moments, 16 bytes a parameter, plus its training activations, about 40 bytes per
    sequence position pair of a batch), at most MAX_GPU_STACK (the evaluation runs at most RUNS_PER_PASS at a time)."""

    config = RunConfig()
    for point in sweep.points():  # the first point whose config can exist (a grid may hold some that cannot)
        try:
            config = RunConfig().replace(**point.overrides)
            break
        except ConfigError:
            continue
    params = sum(p.numel() for p in AssignAddTransformer(config).parameters())
    per_run = 16 * params + 40 * config.train.batch_size * config.task.seq_len ** 2 * config.model.n_layers
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return max(1, min(MAX_GPU_STACK, int(free // 2 // per_run)))


def gpu_data_workers() -> int:
    """Processes that build a GPU stack's batches ahead: the host's cores but two (the driver and the system)."""
    return max(0, (os.cpu_count() or 1) - 2)


def stack_jobs(tasks: list[dict], stack: int) -> list:
    """The tasks as jobs: lists of up to `stack` tasks that can share a stack (`stacked.stack_key`), filled in
    run order; a task alone (a config that cannot be built, the last of its shape) stays a plain task."""
    if stack == 1:
        return tasks
    jobs, filling = [], {}
    for task in tasks:
        try:
            config = RunConfig().replace(**task["overrides"])
        except ConfigError:
            jobs.append(task)  # recorded "failed" by its worker
            continue
        key = stack_key(config)
        filling.setdefault(key, []).append(task)
        if len(filling[key]) == stack:
            jobs.append(filling.pop(key))
    return jobs + [group if len(group) > 1 else group[0] for group in filling.values()]


def annotate(sweep: Sweep, results_dir: Path | None = None, work_dir: Path | None = None) -> dict[str, list[dict]]:
    """Append the controls to every done point recorded without them, computed from the final model still in
    its scratch folder. Returns the records {"annotated": [...], "no_weights": [...]} (the latter: scratch
    folder gone, cannot be annotated without training the point again)."""
    path, work = results_path(sweep, results_dir), scratch_dir(results_dir, work_dir)
    out = {"annotated": [], "no_weights": []}
    with driver_lock(sweep, results_dir):  # the driver is the only writer of the results file
        for key, record in latest_records(path).items():
            if not is_finished(record) or "controls" in record:
                continue
            run = Run(work / key)
            if not run.is_complete():
                out["no_weights"].append(record)
                continue
            record = {**record, "controls": run_controls(run),
                      "annotated_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            append_record(path, record)
            out["annotated"].append(record)
        if out["annotated"]:
            write_csv(sweep, results_dir)
    return out
