"""The results store of a sweep: its JSONL file (one line per finished run, append-only, the latest line
per config hash wins), the merged CSV, the scratch folders and the driver's lock."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ...analysis.sweep_records import finished
from ...core.checkpoint import atomic_write_text
from ...core.data import EXACT_NAMES, POOL_NAMES
from ...core.locks import exclusive
from ...core.run_folder import DEFAULT_ROOT, upgraded
from .definition import Sweep

# C2 on every point: held-out pairs whose swap (n2, n1) is held out too, and those whose swap is trained on
CONTROLS = ("swap_heldout", "swap_in_training", "n_swap_heldout", "n_swap_in_training")


def sweeps_dir(results_dir: Path | None = None) -> Path:
    return Path(results_dir) if results_dir is not None else DEFAULT_ROOT / "sweeps"


def scratch_dir(results_dir: Path | None = None, work_dir: Path | None = None) -> Path:
    """The scratch run folders: `work_dir` when given, else <results_dir>/scratch."""
    return Path(work_dir) if work_dir is not None else sweeps_dir(results_dir) / "scratch"


def results_path(sweep: Sweep, results_dir: Path | None = None) -> Path:
    return sweeps_dir(results_dir) / f"{sweep.name}.jsonl"


def metrics_dir(sweep: Sweep, results_dir: Path | None = None) -> Path:
    """<results_dir>/<sweep>/: each finished point's metrics table, `<config hash>.csv` (committed, small)."""
    return sweeps_dir(results_dir) / sweep.name


def metric_value(record: dict, metric: str) -> float | None:
    """The record's final value of `metric`: an exact set, else a pool."""
    return record.get("exact", {}).get(metric, record.get("pools", {}).get(metric))


def driver_lock(sweep: Sweep, results_dir: Path | None = None):
    """Context manager: this process is the sweep's only driver, or BusyError names the one that is."""
    return exclusive(sweeps_dir(results_dir) / f".{sweep.name}.lock", f"sweep {sweep.name} ({results_path(sweep, results_dir)})")


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
        latest[record["key"]] = upgraded(record)
    return latest


def append_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _control(record: dict, name: str) -> float:
    """A control of the record; NaN when it was recorded before the controls or has no such pair."""
    value = record.get("controls", {}).get(name)
    return float("nan") if value is None else value


REPLICATE_COLUMNS = ("mode", "jitter", "jitter_step", "grad_noise", "perturb_seed")


def replicate_columns(record: dict) -> dict:
    """A replicate's mode and perturbation (defaults where it has none), for records of sweeps that have them;
    {} for the others, whose tables keep their columns."""
    if not record.get("perturbation") and record.get("mode") is None:
        return {}
    defaults = {"jitter": 0.0, "jitter_step": 0, "grad_noise": 0.0, "perturb_seed": 0}
    given = {k.rsplit(".", 1)[-1]: v for k, v in (record.get("perturbation") or {}).items()}
    return {"mode": record.get("mode"), **defaults, **given}


RUN_COLUMNS = ("wall_time_s", "run_time_s", "device", "device_name", "threads", "compiled", "bf16_used", "torch",
               "git_commit", "finished_at", "reason")  # how and where a run was computed


def flat_row(record: dict) -> dict:
    row = {"key": record["key"], "status": record["status"], "seed": record["seed"], **record["params_bare"],
           **replicate_columns(record), "last_step": record.get("last_step"), "step_budget": record.get("step_budget"),
           "metric": record["metric"], "value": record.get("value")}
    if row["step_budget"] is None:  # a run that never stopped early (or was recorded before early stops)
        del row["step_budget"]
    for name in EXACT_NAMES:
        row[f"exact_{name}"] = record.get("exact", {}).get(name)
    for name in POOL_NAMES:
        row[name] = record.get("pools", {}).get(name)
    for name in CONTROLS:
        row[name] = _control(record, name)
    for name in RUN_COLUMNS:
        row[name] = record.get(name)
    if "steer_started_after" in record:  # a triggered steering's start (sweeps without one keep their columns)
        row["steer_started_after"] = record["steer_started_after"]
    return row


def results_frame(sweep: Sweep, results_dir: Path | None = None) -> pd.DataFrame:
    """One row per config hash (its latest line), sorted by grid values and seed. A sweep with no record yet: no
    rows, a record's columns (a reader of a sweep not run reads an empty table, not a missing column)."""
    rows = [flat_row(r) for r in latest_records(results_path(sweep, results_dir)).values()]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["key", "status", "seed", *sweep.fields, "last_step", "metric", "value",
                                     *(f"exact_{name}" for name in EXACT_NAMES), *POOL_NAMES, *CONTROLS, *RUN_COLUMNS])
    order = [*sweep.fields, "seed", *(c for c in REPLICATE_COLUMNS[1:] + ("mode",) if c in frame)]
    return frame.sort_values(order, kind="stable").reset_index(drop=True)


def finished_metrics(sweep: Sweep, records: pd.DataFrame | None = None,
                     results_dir: Path | None = None) -> dict[str, pd.DataFrame]:
    """The metrics table of each finished ("done") point of `sweep`, by key (`records`: its `results_frame`, read
    here when not given); a running point's table is still being written, a failed one's may be missing."""
    records = results_frame(sweep, results_dir) if records is None else records
    folder = metrics_dir(sweep, results_dir)
    done = finished(records)["key"]
    return {key: pd.read_csv(folder / f"{key}.csv") for key in done if (folder / f"{key}.csv").is_file()}


def write_csv(sweep: Sweep, results_dir: Path | None = None) -> Path:
    path = results_path(sweep, results_dir).with_suffix(".csv")
    atomic_write_text(path, results_frame(sweep, results_dir).to_csv(index=False))
    return path


def sweep_tables(sweep: Sweep, results_dir: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(grid status, finished runs) for the sweep's seeds and every seed present in its results."""
    results = results_frame(sweep, results_dir)
    seeds = sorted({*sweep.seeds, *(int(s) for s in (results["seed"] if len(results) else []))})
    done = finished(results)
    return grid_status(sweep.with_seeds(seeds), results_dir), done


def grid_status(sweep: Sweep, results_dir: Path | None = None) -> pd.DataFrame:
    """Every planned point × seed with its status ("pending" where no result exists yet), value and
    swap control."""
    latest = latest_records(results_path(sweep, results_dir))
    rows = []
    for point in sweep.points():
        record = latest.get(point.key, {})
        rows.append({**{k.rsplit(".", 1)[-1]: v for k, v in point.params.items()}, "seed": point.seed,
                     **replicate_columns({"perturbation": point.perturbation, "mode": point.mode}),
                     "key": point.key, "status": record.get("status", "pending"), "value": record.get("value"),
                     **{name: _control(record, name) for name in CONTROLS[:2]},
                     "wall_time_s": record.get("wall_time_s"), "reason": record.get("reason")})
    frame = pd.DataFrame(rows)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
    return frame
