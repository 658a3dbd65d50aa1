"""Which outcomes of a sweep point are results: only a config that cannot exist is "failed" (kept);
a missing device or another environment problem is an "error", retried on the next invocation."""
from __future__ import annotations

import os

import pytest
import torch

from assignadd_core.core import trainer
from assignadd_core.experiments.sweep import worker
from assignadd_core.cli import main
from assignadd_core.experiments.sweep import Sweep, _local, read_records, results_path, run_point, run_sweep
from assignadd_core.core.trainer import DeviceError
from tiny import TINY

pytestmark = pytest.mark.usefixtures("single_thread")
# 0.05 of 49 pairs leaves numbers out of training: a config that cannot exist
GRID = {"task.train_fraction": (0.05, 0.9)}


def tiny_sweep() -> Sweep:
    return Sweep("tiny", GRID, metric="0var_heldout", base=TINY, seeds=(1,))


def test_cuda_without_a_gpu_is_refused_up_front(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DeviceError, match="no CUDA GPU"):
        run_sweep(tiny_sweep(), results_dir=tmp_path, device="cuda", progress=False)
    assert main(["sweep", "run", "f_sweep", "--device", "cuda", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --device cuda: torch sees no CUDA GPU") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing recorded, no lock or scratch left


def test_a_missing_device_inside_a_worker_is_an_error_not_a_result(tmp_path, monkeypatch):
    """What a Ray node without a GPU meets: the trainer's device check, below run_sweep's."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    point = tiny_sweep().points()[1]
    record = run_point({"key": point.key, "overrides": point.overrides, "work_dir": str(tmp_path),
                        "device": "cuda", "threads": 1})
    assert record["status"] == "error" and record["reason"].startswith("DeviceError")


def test_an_error_naming_the_scratch_folder_is_recorded_without_this_machines_path(tmp_path, monkeypatch):
    """Records are committed: a reason that names a run folder says `<scratch>`, not where the machine keeps it."""
    point = tiny_sweep().points()[1]

    def broken(config, path, **kwargs):
        raise RuntimeError(f"{path}/config.json: unreadable")

    monkeypatch.setattr(worker, "train", broken)
    record = run_point({"key": point.key, "overrides": point.overrides, "work_dir": str(tmp_path), "threads": 1})
    assert record["status"] == "error"
    assert record["reason"] == f"RuntimeError: <scratch>/{point.key}/config.json: unreadable"


def test_environment_errors_are_retried_and_impossible_configs_are_not(tmp_path, monkeypatch):
    sweep = tiny_sweep()

    def no_device(device):
        raise DeviceError(f"device {device!r} requested but torch sees no CUDA GPU on this machine")

    monkeypatch.setattr(trainer, "resolve_device", no_device)
    assert run_sweep(sweep, results_dir=tmp_path, workers=1, progress=False) == {
        "done": 0, "failed": 1, "error": 1, "skipped": 0}
    first = {r["params"]["task.train_fraction"]: r for r in read_records(results_path(sweep, tmp_path))}
    assert first[0.05]["status"] == "failed" and "out of every training pair" in first[0.05]["reason"]
    assert first[0.9]["status"] == "error" and "DeviceError" in first[0.9]["reason"]

    monkeypatch.undo()  # the device is back: only the error is run again
    assert run_sweep(sweep, results_dir=tmp_path, workers=1, progress=False) == {
        "done": 1, "failed": 0, "error": 0, "skipped": 1}
    latest = {r["params"]["task.train_fraction"]: r["status"] for r in read_records(results_path(sweep, tmp_path))}
    assert latest == {0.05: "failed", 0.9: "done"}
    assert run_sweep(sweep, results_dir=tmp_path, workers=1, progress=False)["skipped"] == 2


def die(task: dict) -> dict:
    os._exit(9)  # as a worker killed by the OOM killer or by hand


def test_a_worker_that_dies_is_an_error_not_a_crash(tmp_path):
    """A dead pool worker breaks the pool: every point it had comes back as an error record."""
    tasks = [{"key": "a"}, {"key": "b"}]
    records = list(_local(tasks, workers=2, threads=1, work=die))
    assert sorted(r["key"] for r in records) == ["a", "b"]
    assert all(r["status"] == "error" and r["reason"].startswith("worker lost: BrokenProcessPool") for r in records)


def test_a_ray_sweep_pointed_at_a_dead_address_stops_within_seconds_and_records_nothing(tmp_path, capsys):
    """Ray itself retries a dead address for minutes, printing connection warnings."""
    import socket
    import time

    from assignadd_core.cli import main
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tic = time.perf_counter()
    assert main(["sweep", "run", "r_sweep", "--executor", "ray", "--address", f"127.0.0.1:{port}",
                 "--results-dir", str(tmp_path)]) == 2
    assert time.perf_counter() - tic < 15
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no Ray cluster at 127.0.0.1:{port}" in err and "ray start --head" in err
    assert not list(tmp_path.iterdir())  # nothing recorded, no lock left


def test_an_address_that_answers_but_is_not_ray_times_out():
    import socket
    import threading

    from assignadd_core.experiments.sweep.executors import ClusterError, check_ray_address
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    try:
        with pytest.raises(ClusterError, match="no Ray cluster answered at .* within 3 s"):
            check_ray_address(f"127.0.0.1:{server.getsockname()[1]}", timeout=3)
    finally:
        server.close()
