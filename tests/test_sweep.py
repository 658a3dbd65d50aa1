"""Sweep runner: grids, results files, resume, and both executors on a tiny grid."""
import json

import pandas as pd
import pytest

from assignadd_core import trainer
from assignadd_core.cli import main
from assignadd_core.config import ConfigError
from assignadd_core.data import POOL_NAMES
from assignadd_core.sweep import (SWEEPS, Sweep, coarse_to_fine, grid_status, read_records, results_frame, results_path,
                                  run_sweep)
from assignadd_core.sweep.store import finished_metrics
from tiny import TINY

# 0.05 of 49 pairs is 2 pairs: numbers are left out of training, so that point must fail, not crash.
TINY_GRID = {"task.train_fraction": (0.05, 0.6, 0.9)}


def tiny_sweep(seeds=(1,), grid=TINY_GRID):
    return Sweep("tiny", grid, metric="0var_heldout", base=TINY, seeds=seeds)


def test_paper_sweeps_follow_the_spec():
    f, r = SWEEPS["f_sweep"], SWEEPS["r_sweep"]
    fs, rs = f.grid["task.train_fraction"], r.grid["task.two_var_rate"]
    assert len(fs) == len(rs) == 20
    assert (fs[0], fs[-1], rs[0], rs[-1]) == (0.0616, 0.99, 0.01, 0.99)
    steps = {round(b - a, 6) for a, b in zip(fs, fs[1:])}
    assert max(steps) - min(steps) < 1e-5  # evenly spaced
    assert f.base == {"task.two_var_rate": 1.0, "train.steps": 30_000, "train.eval_every": 1000}
    assert r.base == {"task.train_fraction": 0.7, "train.steps": 30_000, "train.eval_every": 1000}
    assert f.metric == "0var_heldout" and r.metric == "2var_union"
    assert f.seeds == r.seeds == (42, 43, 44, 45, 46)
    # seeds 42 and 43 over the whole grid, the added seeds only where the thresholds are decided
    for sweep, grid, decided in ((f, fs, fs[2:7]), (r, rs, rs[:13])):  # r: up to 0.629 for C9 (2026-12-02)
        field_ = next(iter(sweep.grid))
        by_seed = {s: sorted(p.params[field_] for p in sweep.points() if p.seed == s) for s in sweep.seeds}
        assert by_seed[42] == by_seed[43] == sorted(grid)
        assert by_seed[44] == by_seed[45] == by_seed[46] == sorted(decided)
    assert (fs[2], fs[6], rs[5]) == (0.159326, 0.354779, 0.267895)
    assert len(f.points()) == 55 and len(r.points()) == 58 + 3 * 7  # seeds 44-46 on the r grid to 0.629
    point = f.points()[0]
    assert point.overrides["train.seed"] == 42 and point.params == {"task.train_fraction": 0.0616}


def test_runs_go_coarse_to_fine_so_a_partial_sweep_covers_the_range():
    order = coarse_to_fine(20)
    assert sorted(order) == list(range(20))
    assert order[:5] == [0, 19, 10, 5, 14]
    assert coarse_to_fine(1) == [0] and coarse_to_fine(3) == [0, 2, 1]


def test_eval_cadence_does_not_change_training(tmp_path):
    """Why the sweeps may log every 1,000 steps: evaluation leaves the trained model unchanged."""
    from assignadd_core.config import RunConfig
    often = RunConfig().replace(**{**TINY, "eval_every": 10})
    rarely = often.replace(eval_every=1000)
    a, b = (trainer.train(c, tmp_path / str(c.train.eval_every), progress=False).final() for c in (often, rarely))
    assert a["pools"] == b["pools"] and a["exact"] == b["exact"]


def test_points_keys_subsets_and_validation(tmp_path):
    sweep = SWEEPS["r_sweep"].with_seeds([42, 43])
    keys = [p.key for p in sweep.points()]
    assert len(keys) == 40 and len(set(keys)) == 40
    small = SWEEPS["r_sweep"].subset(5)
    values = small.grid["task.two_var_rate"]
    assert small.name == "r_sweep-p5" and len(values) == 5 and (values[0], values[-1]) == (0.01, 0.99)
    assert set(values) <= set(SWEEPS["r_sweep"].grid["task.two_var_rate"])  # comparable with the full grid
    assert small.with_steps(300).base["train.steps"] == 300
    assert SWEEPS["r_sweep"].subset(20) is SWEEPS["r_sweep"] is SWEEPS["r_sweep"].with_steps(30_000)
    with pytest.raises(ConfigError, match="unknown config key"):
        Sweep("bad", {"task.nonsense": (1,)}, metric="0var_heldout")
    with pytest.raises(ConfigError, match="metric"):
        Sweep("bad", TINY_GRID, metric="accuracy")
    with pytest.raises(ConfigError, match="steps must be"):  # shared settings are checked once, up front
        Sweep("bad", TINY_GRID, metric="0var_heldout", base={"train.steps": 0})
    status = grid_status(SWEEPS["f_sweep"], results_dir=tmp_path)
    assert len(status) == 55 and set(status["status"]) == {"pending"} and status["value"].isna().all()


def test_local_pool_runs_records_failures_skips_finished_and_extends(tmp_path):
    sweep = tiny_sweep()
    not_run = results_frame(sweep, tmp_path)  # no record yet: no rows, but a reader finds every column it reads
    counts = run_sweep(sweep, results_dir=tmp_path, workers=2, threads=1, progress=False)
    assert counts == {"done": 2, "failed": 1, "error": 0, "skipped": 0}
    records = {r["params"]["task.train_fraction"]: r for r in read_records(results_path(sweep, tmp_path))}
    assert records[0.05]["status"] == "failed" and "out of every training pair" in records[0.05]["reason"]
    for fraction in (0.6, 0.9):
        record = records[fraction]
        assert record["status"] == "done" and record["config"]["task"]["train_fraction"] == fraction
        assert 0 <= record["value"] <= 1 and record["value"] == record["exact"]["0var_heldout"]
        assert set(record["pools"]) == set(POOL_NAMES)
        assert record["device"] == "cpu" and record["threads"] == 1 and record["wall_time_s"] > 0 and record["torch"]
        assert not (tmp_path / "scratch" / record["key"] / "resume").exists()  # optimizer state dropped
        assert record["compiled"] is False and record["compile"] == "auto"  # the mode is recorded
        kept = pd.read_csv(tmp_path / "tiny" / f"{record['key']}.csv")  # the metrics table is kept (committed)
        assert kept["step"].tolist() == [1, 11, 21, 30] and set(POOL_NAMES) <= set(kept.columns)
    frame = results_frame(sweep, tmp_path)
    assert list(frame["train_fraction"]) == [0.05, 0.6, 0.9]
    assert not_run.empty and set(not_run.columns) == set(frame.columns)
    metrics = finished_metrics(sweep, results_dir=tmp_path)  # the done points' tables, by key; the failed one has none
    assert set(metrics) == {records[f]["key"] for f in (0.6, 0.9)} and all(len(m) == 4 for m in metrics.values())
    assert (tmp_path / "tiny.csv").read_text().count("\n") == 4

    before = results_path(sweep, tmp_path).read_text()
    assert run_sweep(sweep, results_dir=tmp_path, workers=2, progress=False)["skipped"] == 3
    assert results_path(sweep, tmp_path).read_text() == before  # nothing rerun

    more = run_sweep(tiny_sweep(seeds=(1, 2)), results_dir=tmp_path, workers=1, progress=False)
    assert more == {"done": 2, "failed": 1, "error": 0, "skipped": 3}
    new = read_records(results_path(sweep, tmp_path))[3:]
    assert [r["params"]["task.train_fraction"] for r in new] == [0.05, 0.9, 0.6]  # ends first, then the middle
    assert {r["seed"] for r in new} == {2}
    status = grid_status(tiny_sweep(seeds=(1, 2)), tmp_path)
    assert "pending" not in set(status["status"]) and len(status) == 6


def test_a_run_killed_mid_way_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    sweep = tiny_sweep(grid={"task.train_fraction": (0.6,)})
    clean = run_sweep(sweep, results_dir=tmp_path / "clean", workers=1, progress=False)
    assert clean["done"] == 1

    real_step, calls = trainer.train_step, []

    def killed_at_25(*args, **kwargs):
        calls.append(1)
        if len(calls) == 25:
            raise KeyboardInterrupt
        return real_step(*args, **kwargs)

    monkeypatch.setattr(trainer, "train_step", killed_at_25)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, results_dir=tmp_path / "killed", workers=1, progress=False)
    key = sweep.points()[0].key
    state = json.loads((tmp_path / "killed" / "scratch" / key / "resume" / "state.json").read_text())
    assert state["step"] == 21 and not results_path(sweep, tmp_path / "killed").exists()

    monkeypatch.setattr(trainer, "train_step", real_step)
    assert run_sweep(sweep, results_dir=tmp_path / "killed", workers=1, progress=False)["done"] == 1
    resumed = read_records(results_path(sweep, tmp_path / "killed"))[0]
    uninterrupted = read_records(results_path(sweep, tmp_path / "clean"))[0]
    assert resumed["pools"] == uninterrupted["pools"] and resumed["exact"] == uninterrupted["exact"]


def test_ray_executor_matches_the_local_one(tmp_path):
    ray = pytest.importorskip("ray")
    sweep = tiny_sweep(grid={"task.train_fraction": (0.05, 0.9)})
    run_sweep(sweep, results_dir=tmp_path / "local", workers=1, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    try:
        counts = run_sweep(sweep, results_dir=tmp_path / "ray", executor="ray", threads=1, progress=False)
    finally:
        ray.shutdown()
    assert counts == {"done": 1, "failed": 1, "error": 0, "skipped": 0}
    on_ray, local = (results_frame(sweep, tmp_path / name).set_index("key") for name in ("ray", "local"))
    assert on_ray.loc[local.index, "status"].tolist() == local["status"].tolist()
    done = local.index[local["status"] == "done"]
    assert on_ray.loc[done, POOL_NAMES].equals(local.loc[done, POOL_NAMES])  # same config hash, same numbers


def test_cli_lists_and_reports_status(tmp_path, capsys):
    assert main(["sweep", "list"]) == 0
    out = capsys.readouterr().out
    assert "f_sweep: task.train_fraction: 20 values 0.0616..0.99" in out
    assert "r_sweep: task.two_var_rate: 20 values 0.01..0.99" in out
    assert "composition_seeds: no grid × seeds [42, 43," in out
    assert main(["sweep", "status", "r_sweep", "--seeds", "42", "43", "--results-dir", str(tmp_path)]) == 0
    assert "r_sweep: 40 pending" in capsys.readouterr().out
    assert main(["sweep", "run", "g_sweep", "--results-dir", str(tmp_path)]) == 2
    assert "unknown sweep" in capsys.readouterr().err
    for bad, message in ((["--steps", "0"], "steps must be"), (["--steps", "-5"], "steps must be"),
                         (["--points", "0"], "points must lie"), (["--workers", "0"], "workers must be"),
                         (["--values", "0.2"], "not a value of r_sweep's grid")):
        # refused before any run starts (a 0 used to fall back to the default; -5 used to fail every point)
        assert main(["sweep", "run", "r_sweep", "--results-dir", str(tmp_path), *bad]) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse's own one-line refusal
        main(["sweep", "run", "r_sweep", "--results-dir", str(tmp_path), "--compile", "maybe"])
    assert "invalid choice: 'maybe'" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.jsonl"))


def test_replicates_and_modes_are_points_of_their_cell(tmp_path):
    """A sweep may cross each cell with perturbation replicates and training modes: one point each, the mode in
    its key (two modes share one config and hash), the mode's compile setting given to the trainer, and both
    recorded in the line and the table."""
    replicates = ({}, {"train.jitter": 1e-3, "train.perturb_seed": 1})
    sweep = Sweep("reps", {}, metric="1var_train", base=TINY, seeds=(1,), perturbations=replicates,
                  modes=("eager", "compiled"))
    points = sweep.points()
    assert len(points) == 4 and len({p.key for p in points}) == 4
    eager, compiled = points[0], points[1]
    assert eager.key.rsplit("-", 1) == [compiled.key.rsplit("-", 1)[0], "eager"] and compiled.key.endswith("-compiled")
    assert (eager.compile, compiled.compile) == ("off", "on")
    assert points[2].overrides["train.jitter"] == 1e-3 and "jitter=0.001" in points[2].label()
    counts = run_sweep(sweep, results_dir=tmp_path, workers=1, threads=1, progress=False)
    assert counts["done"] == 4
    records = {r["key"]: r for r in read_records(results_path(sweep, tmp_path))}
    assert records[eager.key]["mode"] == "eager" and records[eager.key]["compile"] == "off"
    assert records[compiled.key]["compile"] == "on"
    frame = results_frame(sweep, tmp_path)
    assert set(frame["mode"]) == {"eager", "compiled"} and sorted(frame["jitter"]) == [0, 0, 1e-3, 1e-3]
    with pytest.raises(ConfigError, match="mode must be one of"):
        Sweep("bad", {}, metric="1var_train", modes=("fast",))
    with pytest.raises(ConfigError, match="a perturbation may set only"):
        Sweep("bad", {}, metric="1var_train", perturbations=({"train.lr": 1.0},))


def test_run_order_is_seed_by_seed_coarse_to_fine_with_a_kept_subset():
    sweep = Sweep("order", {"task.train_fraction": (0.5, 0.6, 0.7, 0.8, 0.9)}, metric="0var_heldout", base=TINY,
                  seeds=(1, 2), keep=lambda p: not (p.seed == 2 and p.params["task.train_fraction"] == 0.9))
    order = [(p.seed, p.params["task.train_fraction"]) for p in sweep.run_order()]
    assert order == [(1, 0.5), (1, 0.9), (1, 0.7), (1, 0.6), (1, 0.8), (2, 0.5), (2, 0.7), (2, 0.6), (2, 0.8)]
    assert sorted(map(id, sweep.run_order())) != [] and len(sweep.points()) == 9
