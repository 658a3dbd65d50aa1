"""`series(run, quantity, steps)`: a named quantity (`quantities.QUANTITIES`) at a run's checkpoints, computed
once per (run, checkpoint weights, quantity version) and cached beside the run (Nanda's progress-measures table:
compute once, read everywhere).

    runs/<name>/series.csv   quantity, version, step, weights, run, column, value, check (one value per line)

`weights` fingerprints the checkpoint file the value was computed from (SHA-256 of its bytes), `run` is the
config hash and `check` a hash of the line's other fields: a value is read only for the run, the weights and
the version it was computed for. A stale line (other version, other weights, other run), a line that fails its
check (hand-edited) or one cut short (truncated file) is ignored, said in one line, and the value recomputed.
Lines are appended under a file lock, so two processes filling one cache do not corrupt it. The file can be
deleted at any time; it is rebuilt on demand.

A `pair` quantity is read between two checkpoints (the update from one to the next): its steps are (a, b) pairs,
cached under the step "a>b" and both weights' fingerprints "fa+fb", and its rows are indexed by a.

Values computed before weights were fingerprinted carry `UNFINGERPRINTED` as their weights: they are read where
the weights are not kept (as any value computed from weights no longer on disk), and `recorded` returns them
beside a fresh computation where the weights are kept.

The logged quantities (pools, measures, probe) are the trainer's metrics.csv columns: they are read from there
at eval steps (the version they were written with is in `metrics.json` beside it, version 1 when absent).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
from pathlib import Path

import pandas as pd
from filelock import FileLock

from ..core.checkpoint import CheckpointError, atomic_write_text, load_tensors
from ..core.config import ConfigError
from .quantities import QUANTITIES, Quantity, get_quantity
from ..core.run_folder import Run

FIELDS = ("quantity", "version", "step", "weights", "run", "column", "value", "check")
SERIES_FILE, LOGGED_FILE = "series.csv", "metrics.json"
FINAL = "final"  # `steps`: the final model
UNFINGERPRINTED = "unfingerprinted"  # the weights of a value computed before it was cached here (see above)


def _check(fields: list[str]) -> str:
    return hashlib.sha256("|".join(fields).encode()).hexdigest()[:12]


_FINGERPRINTS: dict[tuple, str] = {}


def fingerprint(path: Path) -> str:
    """SHA-256 (16 hex digits) of a weights file, memoised per (path, size, mtime)."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    return _FINGERPRINTS[key]


def _say(message: str) -> None:
    print(f"series: {message}", file=sys.stderr)


def _read(path: Path) -> tuple[list[list[str]], list[str]]:
    """(valid lines as fields, numbers of the lines that fail their check). A line cut short by a kill loses
    (part of) its check field, so the check catches it as it catches an edit."""
    if not path.is_file():
        return [], []
    lines = path.read_text().splitlines()
    if lines and lines[0] == ",".join(FIELDS):
        lines = lines[1:]
    valid, bad = [], []
    for number, fields in enumerate(csv.reader(lines), start=2):
        try:
            if len(fields) != len(FIELDS) or _check(fields[:-1]) != fields[-1]:
                raise ValueError
            float(fields[6])
            valid.append(fields)
        except ValueError:
            bad.append(str(number))
    return valid, bad


def read_cache(run: Run, say=_say) -> dict[tuple, float]:
    """Valid cached values {(quantity, version, step, weights, run, column): value}; bad lines are reported."""
    path = run.path / SERIES_FILE
    valid, bad = _read(path)
    if bad:
        say(f"{path}: line(s) {', '.join(bad[:5])}{' …' if len(bad) > 5 else ''} fail their check (edited or cut"
            " short); their values are recomputed, not read")
    return {tuple(fields[:6]): float(fields[6]) for fields in valid}


def _write(run: Run, rows: list[list[str]]) -> None:
    """Append `rows` (under the lock); a file with bad lines is rewritten without them first."""
    path = run.path / SERIES_FILE
    valid, bad = _read(path)
    lines = [[*row, _check(row)] for row in rows]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if bad or not path.is_file():
        writer.writerows([list(FIELDS), *valid, *lines])
        atomic_write_text(path, buffer.getvalue())
        return
    writer.writerows(lines)
    with open(path, "a") as handle:
        handle.write(buffer.getvalue())
        handle.flush()
        os.fsync(handle.fileno())


def _weights_path(run: Run, step) -> Path:
    if step == FINAL:
        if not run.model_path.is_file():
            raise CheckpointError(f"{run.path}: no final model (unfinished run?)")
        return run.model_path
    path = run.checkpoint_path(int(step))
    if not path.is_file():
        raise CheckpointError(f"{run.path}: no checkpoint at step {step} (checkpoints: {run.checkpoint_steps()[:8]}…);"
                              " the quantity cannot be computed there")
    return path


def _recorded_key(cache: dict, q: Quantity, step: str, config_hash: str, run: Run) -> tuple:
    """The cache key of a value computed from weights that are not on disk any more (a run whose checkpoints
    were not kept): its run, quantity version and step must match, and only one set of weights may have been
    recorded for them; otherwise it cannot be read (nor recomputed)."""
    found = {k[:5] for k in cache if k[0] == q.name and k[1] == str(q.version) and k[2] == step
             and k[4] == config_hash}
    fingerprinted = {k for k in found if k[3] != UNFINGERPRINTED}
    found = fingerprinted or found  # a value from weights whose fingerprint is known comes first
    if len(found) != 1:
        raise CheckpointError(f"{run.path}: no weights at step {step} and {len(found)} recorded value sets of"
                              f" {q.name} v{q.version} there; it can be computed only where the weights are kept")
    return found.pop()


def logged_versions(run: Run) -> dict[str, int]:
    path = run.path / LOGGED_FILE
    written = json.loads(path.read_text()).get("versions", {}) if path.is_file() else {}
    return {name: int(written.get(name, 1)) for name, q in QUANTITIES.items() if q.logged}


def _from_metrics(run: Run, q: Quantity, steps) -> pd.DataFrame | None:
    """The quantity's metrics.csv columns at `steps` (None: every row), when written with its current version."""
    if not q.logged or logged_versions(run).get(q.name) != q.version or not run.metrics_path.is_file():
        return None
    table = run.metrics().set_index("step")[list(q.columns_for(run.config))]
    if steps is None:
        return table
    wanted = [run.config.train.steps if s == FINAL else int(s) for s in steps]
    return table.loc[wanted] if set(wanted) <= set(table.index) else None


def _step_key(step) -> str:
    return f"{step[0]}>{step[1]}" if isinstance(step, tuple) else str(step)


def _parse_step_key(key: str):
    """The inverse of `_step_key`: a (from, to) pair, FINAL or a step (an `across` key "s@other": s)."""
    key = key.split("@")[0]
    if ">" in key:
        return tuple(int(x) for x in key.split(">"))
    return FINAL if key == FINAL else int(key)


def _weights_key(run: Run, step) -> str:
    if isinstance(step, tuple):
        return "+".join(fingerprint(_weights_path(run, s)) for s in step)
    return fingerprint(_weights_path(run, step))


def _compute(run: Run, q: Quantity, step) -> dict[str, float]:
    def load(s):
        return run.load_model(None if s == FINAL else int(s)).eval()

    def at(s):
        return run.config.train.steps if s == FINAL else int(s)
    if q.pair:
        return q.compute(load(step[0]), load(step[1]), at(step[0]), at(step[1]))
    return q.compute(load(step), at(step))


def _wanted(q: Quantity, steps) -> list:
    if q.across:
        raise ValueError(f"{q.name} is read between two runs: use across(run, other, {q.name!r}, steps)")
    if not q.pair:
        return [FINAL] if steps == FINAL else steps
    if steps is None or steps == FINAL or not all(isinstance(s, tuple) and len(s) == 2 for s in steps):
        raise ValueError(f"{q.name} is read between two checkpoints: steps must be a list of (from, to) pairs")
    return [(int(a), int(b)) for a, b in steps]


def series(run: Run, quantity: str, steps=None, say=_say) -> pd.DataFrame:
    """The quantity at `steps` of `run`: one row per step (the final model's row is indexed by the run's last
    step), one column per value. `steps`: None (a logged quantity: every metrics row; another: every checkpoint
    and the final model), "final", or a list of steps and/or "final"; for a `pair` quantity, a list of (from, to)
    step pairs, the rows indexed by `from`."""
    q = get_quantity(quantity)
    run = run if isinstance(run, Run) else Run(run)
    columns = q.columns_for(run.config)
    wanted = _wanted(q, steps)
    logged = _from_metrics(run, q, wanted)
    if logged is not None:
        return logged
    if q.in_final and wanted == [FINAL] and run.final_path.is_file() and q.in_final in run.final():
        values = run.final()[q.in_final]  # the trainer's own end-of-training evaluation
        return pd.DataFrame([{c: float(values[c]) for c in columns}],
                            index=pd.Index([run.config.train.steps], name="step"), columns=list(columns))
    if wanted is None:
        wanted = [*run.checkpoint_steps(), *([FINAL] if run.model_path.is_file() else [])]
    cache = read_cache(run, say)
    keys = {s: _key(run, q, _step_key(s), lambda s=s: _weights_key(run, s), cache) for s in wanted}
    values = _fill(run, q, keys, lambda s: _compute(run, q, s), columns, cache, say)
    return _frame(run, wanted, [values[s] for s in wanted], columns)


def _key(run: Run, q: Quantity, step_key: str, weights_key, cache: dict) -> tuple:
    """The cache key of a value: of the weights on disk, or (weights not kept, e.g. not committed) the one
    recorded for them."""
    try:
        return q.name, str(q.version), step_key, weights_key(), run.config.hash()
    except CheckpointError:
        return _recorded_key(cache, q, step_key, run.config.hash(), run)


def _fill(run: Run, q: Quantity, keys: dict, compute, columns, cache: dict, say) -> dict:
    """{step: the values of its key's columns}, computing (`compute(step)`) and appending to the run's cache those
    missing, under the run's series lock."""
    missing = [s for s, key in keys.items() if any((*key, c) not in cache for c in columns)]
    if missing:
        stale = [s for s in missing if any(k[0] == q.name and k[2] == keys[s][2] and k[:5] != keys[s]
                                           and k[3] != UNFINGERPRINTED for k in cache)]
        if stale:
            say(f"{run.path}: cached {q.name} at step(s) {', '.join(keys[s][2] for s in stale)} were computed for"
                f" other weights, another version or another run; recomputing")
        with FileLock(str(run.path / ".series.lock")):
            cache.update(read_cache(run, lambda message: None))  # another process may have filled them meanwhile
            rows = []
            for step in missing:
                key = keys[step]
                if all((*key, c) in cache for c in columns):
                    continue
                values = compute(step)
                for column in columns:
                    value = float(values[column])
                    cache[(*key, column)] = value
                    rows.append([*key, column, repr(value)])
            if rows:
                _write(run, rows)
    return {s: {c: cache[(*key, c)] for c in columns} for s, key in keys.items()}


def across(run: Run, other: Run, quantity: str, steps=None, say=_say) -> pd.DataFrame:
    """An `across` quantity between `run`'s weights and `other`'s at the same steps (None: every checkpoint step
    both runs kept), one row per step. Cached in `run`'s series under the step "s@<other's folder name>" and both
    fingerprints, so a run compared with several others keeps one value per other run."""
    q = get_quantity(quantity)
    if not q.across:
        raise ValueError(f"{q.name} is a quantity of one run; read it with series()")
    run, other = (r if isinstance(r, Run) else Run(r) for r in (run, other))
    if run.config.model != other.config.model or run.config.task != other.config.task:
        raise ConfigError(f"{run.path} and {other.path} are runs of different tasks or shapes: their weights do not"
                          " compare")
    if steps is None:
        steps = sorted(set(run.checkpoint_steps()) & set(other.checkpoint_steps()))
    steps = [int(s) for s in steps]
    columns = q.columns_for(run.config)
    cache = read_cache(run, say)

    def step_key(s):
        return f"{s}@{other.path.name}"
    keys = {s: _key(run, q, step_key(s), lambda s=s: "+".join(fingerprint(_weights_path(r, s)) for r in (run, other)),
                    cache) for s in steps}
    values = _fill(run, q, keys, lambda s: q.compute(load_tensors(_weights_path(run, s)),
                                                    load_tensors(_weights_path(other, s))), columns, cache, say)
    return _frame(run, steps, [values[s] for s in steps], columns)


def _frame(run: Run, wanted: list, data: list[dict], columns) -> pd.DataFrame:
    def index(s):
        s = s[0] if isinstance(s, tuple) else s
        return run.config.train.steps if s == FINAL else int(s)
    return pd.DataFrame(data, index=pd.Index([index(s) for s in wanted], name="step"), columns=list(columns))


def cached_steps(run: Run, quantity: str, unfingerprinted: bool = False, current: bool = True) -> list:
    """The steps (pairs, for a pair quantity) at which the quantity's current version has cached values for this
    run, whether or not their weights are still kept (only those recorded as `UNFINGERPRINTED`, if asked).
    `current=False` counts values of any version and any config too: a reading that must fail loudly, not skip a
    step, when its values were computed for something else (`series` then says why it cannot read them)."""
    q = get_quantity(quantity)
    found = {k[2] for k in read_cache(run, lambda message: None)
             if k[0] == q.name and (not current or (k[1] == str(q.version) and k[4] == run.config.hash()))
             and (not unfingerprinted or k[3] == UNFINGERPRINTED)}
    return sorted({_parse_step_key(key) for key in found}, key=lambda s: (s == FINAL, s))


def recorded(run: Run, quantity: str, steps, say=_say) -> pd.DataFrame:
    """The values of `steps` computed before fingerprints were kept (`UNFINGERPRINTED`), whatever weights are on
    disk now: what a fresh computation at kept weights is compared with."""
    q = get_quantity(quantity)
    columns = q.columns_for(run.config)
    wanted = _wanted(q, steps)
    cache = read_cache(run, say)
    keys = {s: (q.name, str(q.version), _step_key(s), UNFINGERPRINTED, run.config.hash()) for s in wanted}
    absent = [_step_key(s) for s, key in keys.items() if any((*key, c) not in cache for c in columns)]
    if absent:
        raise CheckpointError(f"{run.path}: no value of {q.name} v{q.version} recorded without fingerprint at"
                              f" step(s) {', '.join(absent)}")
    return _frame(run, wanted, [{c: cache[(*keys[s], c)] for c in columns} for s in wanted], columns)


def record_unfingerprinted(run: Run, quantity: str, table: pd.DataFrame) -> int:
    """Write values computed elsewhere before this cache kept fingerprints (one row per step; for a pair quantity
    a `to` column gives each row's second step) as `UNFINGERPRINTED` lines; the number of lines written."""
    q = get_quantity(quantity)
    columns = q.columns_for(run.config)
    rows = []
    for step, row in table.iterrows():
        key = (int(step), int(row["to"])) if q.pair else int(step)
        rows += [[q.name, str(q.version), _step_key(key), UNFINGERPRINTED, run.config.hash(), c, repr(float(row[c]))]
                 for c in columns]
    with FileLock(str(run.path / ".series.lock")):
        _write(run, rows)
    return len(rows)


def final_values(run: Run, quantity: str, say=_say) -> dict[str, float]:
    """The quantity of the run's final model, as a dict."""
    return series(run, quantity, FINAL, say).iloc[0].to_dict()


def seed_table(runs: dict[str, Run], quantity: str, say=_say) -> pd.DataFrame:
    """One row per run: the quantity of its final model (the per-seed tables of the claims)."""
    rows = {name: final_values(run, quantity, say) for name, run in runs.items()}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("run")
