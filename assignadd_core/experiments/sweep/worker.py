"""One sweep point, or a stack of points of one shape: train it into its scratch folder and return its record
(plain data in and out, so it runs alike in this process, in a process-pool worker or as a Ray task)."""
from __future__ import annotations

import math
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ...core.config import ConfigError, RunConfig
from ..threads import set_threads
from .store import CONTROLS
from ...analysis.controls import swap_heldout_accuracy
from ...core.run_folder import Run
from ..training import train
from ..stacked import train_stacked
from ...core.data import make_split

RECORDED = ("device", "device_name", "threads", "omp_wait_policy", "bf16_used", "compiled", "compile", "stacked",
            "python", "torch", "transformer_lens", "git_commit")  # copied from the run's final.json into its line


def run_point(task: dict) -> dict:
    """Train one point into its scratch folder (resuming if it was interrupted) and return its record.

    `task`: {"key", "overrides", "work_dir", "device", "threads", and optionally "compile" and "metrics_dir"
    (where the finished run's metrics table is copied, as <key>.csv)}; plain data, so it travels to
    process-pool workers and Ray tasks alike. Never raises: failures come back as records.
    """
    tic = time.perf_counter()
    config, record = _checked(task)
    if config is None:
        return _stamp(record, tic)
    try:
        set_threads(task.get("threads"))
        work = Path(task["work_dir"]) / task["key"]
        run = Run(work)
        if not (run.is_complete() and run.exists() and run.config == config):
            run = train(config, work, device=task.get("device", "cpu"), progress=False, keep_checkpoints="none",
                        compile=task.get("compile", "auto"))
        _record_done(task, run, record)
    except Exception as err:  # noqa: BLE001  (an environment problem: reported and retried next time)
        record.update(status="error", reason=_portable(f"{type(err).__name__}: {err}", task))
    return _stamp(record, tic)


def _portable(reason: str, task: dict) -> str:
    """A reason as committed in the results: the scratch folder (an absolute path of the machine that ran the
    point) named `<scratch>`."""
    return reason.replace(str(task["work_dir"]), "<scratch>")


def run_stack(tasks: list[dict]) -> list[dict]:
    """Train several points of one shape stacked in this process (`stacked.train_stacked`); their records, in
    order, are those run_point gives (plus `stacked`). Points whose config cannot exist are recorded "failed"
    first. If the stack fails, each point is trained alone by run_point, from what the stack saved."""
    tic = time.perf_counter()
    checked = [_checked(task) for task in tasks]
    ready = [i for i, (config, _) in enumerate(checked) if config is not None]
    if len(ready) < 2:  # nothing to stack
        return [run_point(task) for task in tasks]
    try:
        set_threads(tasks[0].get("threads"))
        folders = [Path(tasks[i]["work_dir"]) / tasks[i]["key"] for i in ready]
        first = tasks[0]
        runs = train_stacked([checked[i][0] for i in ready], folders, device=first.get("device", "cpu"),
                             progress=first.get("progress", False), keep_checkpoints="none",
                             compile=first.get("compile", "auto"), state_every_s=first.get("state_every_s", 0.0),
                             data_workers=first.get("data_workers", 0))
        for i, run in zip(ready, runs):
            _record_done(tasks[i], run, checked[i][1])
    except Exception as err:  # noqa: BLE001
        if str(tasks[0].get("device", "cpu")).startswith("cuda"):  # alone, hundreds of runs would take hours
            print(f"warning: a stack of {len(ready)} points failed ({type(err).__name__}: {err}); recorded as"
                  " errors, retried by the next `sweep run`", file=sys.stderr)
            for i in ready:
                checked[i][1].update(status="error", reason=_portable(f"{type(err).__name__}: {err}", tasks[i]))
            return [_stamp(record, tic) for _, record in checked]
        print(f"warning: a stack of {len(ready)} points failed ({type(err).__name__}: {err}); training them one"
              " by one", file=sys.stderr)
        return [run_point(task) for task in tasks]
    return [_stamp(record, tic) for _, record in checked]


def _checked(task: dict) -> tuple[RunConfig | None, dict]:
    """(config, record in progress); config None and the record "failed" when the config cannot exist: only
    that is a result (decided before training)."""
    record = {"key": task["key"], "status": "error", "reason": None}
    try:
        config = RunConfig().replace(**task["overrides"])
        record["config"] = config.to_dict()
        make_split(config.task)
    except ConfigError as err:
        record.update(status="failed", reason=str(err))
        return None, record
    return config, record


def _record_done(task: dict, run, record: dict) -> None:
    final = run.final()
    if task.get("metrics_dir"):
        Path(task["metrics_dir"]).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run.metrics_path, Path(task["metrics_dir"]) / f"{task['key']}.csv")
    shutil.rmtree(run.resume_dir, ignore_errors=True)  # optimizer state: only needed while unfinished
    record.update(status="done", last_step=final["last_step"], step_budget=final.get("step_budget"),
                  stopped_early=final.get("stopped_early"), exact=final["exact"], pools=final["pools"],
                  controls=run_controls(run), wall_time_s=final["wall_time_s"],
                  **{k: final.get(k) for k in RECORDED})
    if "steer_started_after" in final:  # a triggered steering: the eval step its window followed (None: never)
        record["steer_started_after"] = final["steer_started_after"]


def run_controls(run) -> dict:
    """The controls of a finished run, from its final model; None where the held-out set has no such pair."""
    out = swap_heldout_accuracy(run.load_model())
    return {name: None if math.isnan(out[name]) else out[name] for name in CONTROLS}


def _stamp(record: dict, tic: float) -> dict:
    record["run_time_s"] = round(time.perf_counter() - tic, 1)
    record["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return record


def run_job(job: dict | list[dict]) -> list[dict]:
    """What an executor runs: one point (a task) or a stack of points (a list of tasks); a list of records."""
    return run_stack(job) if isinstance(job, list) else [run_point(job)]
