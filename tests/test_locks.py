"""One writer per run and per sweep: a second trainer or sweep driver is refused at once, naming the
first; after the first is killed (SIGKILL: no clean-up runs), the same command resumes."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from assignadd_core.core import trainer
from assignadd_core.experiments import training
from assignadd_core.cli import main
from assignadd_core.core.config import RunConfig
from assignadd_core.core.locks import BusyError, exclusive, holder_path
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.sweep import Sweep, read_records, results_path, run_sweep
from tiny import TINY

pytestmark = pytest.mark.usefixtures("single_thread")
REPO = Path(__file__).resolve().parent.parent
STEPS, EVAL_EVERY = 100, 10
FLAGS = ["--modulus", "7", "--n-vars", "4", "--n-left-only", "1", "--n-right-only", "1", "--d-model", "16",
         "--d-mlp", "32", "--steps", str(STEPS), "--batch-size", "32", "--eval-every", str(EVAL_EVERY),
         "--probe-every", "20", "--pool-size", "50", "--threads", "1", "--no-progress"]
# The first process: the real code with every training step slowed down, so that it is still
# running when the second one starts.
SLOW = """
import sys, time
from assignadd_core.core import trainer
real = trainer.train_step
def slow(*args, **kwargs):
    time.sleep(0.2)
    return real(*args, **kwargs)
trainer.train_step = slow
"""


def start(body: str, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "ASSIGNADD_CLAIMS_DIR"}
    return subprocess.Popen([sys.executable, "-c", SLOW + body, *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(ready, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the first process ended early (rc {proc.returncode}): {proc.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the first process did not get going in time")
        time.sleep(0.1)


def holder_pid(lock: Path) -> int | None:
    try:
        return json.loads(holder_path(lock).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()


def test_a_lock_refuses_a_second_holder_and_is_free_after_release(tmp_path):
    lock = tmp_path / ".lock"
    with exclusive(lock, "run x"):
        assert holder_pid(lock) == os.getpid()
        with pytest.raises(BusyError) as excinfo:
            with exclusive(lock, "run x"):
                pass
        message = str(excinfo.value)
        assert message.startswith("run x is being written by pid ") and str(os.getpid()) in message
        assert "\n" not in message
    assert not holder_path(lock).exists()
    with exclusive(lock, "run x"):  # released: free again
        pass


def test_second_trainer_is_refused_and_a_killed_run_resumes(tmp_path, capsys):
    run = Run(tmp_path / "x")
    args = ["train", *FLAGS, "--root", str(tmp_path), "--name", "x"]
    first = start("from assignadd_core.cli import main\nsys.exit(main(sys.argv[1:]))", *args)
    try:
        wait_for(lambda: holder_pid(run.lock_path) == first.pid and (run.resume_dir / "state.json").is_file(),
                 first)
        assert main(args) == 2  # a second trainer (its own lock handle, as in another process)
        err = capsys.readouterr().err
        assert err.startswith(f"error: run {run.path} is being written by pid {first.pid}") and err.count("\n") == 1
        # the holder's command line (the interpreter is python or python3, as the venv names it)
        assert re.search(r"python[0-9.]* -c ", err) and "--name x" in err
    finally:
        kill(first)
    saved = json.loads((run.resume_dir / "state.json").read_text())["step"]
    assert 0 < saved < STEPS and not run.is_complete()
    first_row = run.metrics_path.read_text().splitlines()[1]
    assert run.lock_path.exists() and holder_path(run.lock_path).exists()  # left behind by the kill

    assert main(args) == 0  # the same command: the stale lock does not block it, and it resumes
    capsys.readouterr()
    assert run.is_complete() and not holder_path(run.lock_path).exists()
    assert run.metrics_path.read_text().splitlines()[1] == first_row  # kept, not retrained from scratch
    straight = training.train(run.config, tmp_path / "straight", progress=False)
    pd.testing.assert_frame_equal(run.metrics().drop(columns="elapsed_s"),
                                  straight.metrics().drop(columns="elapsed_s"))
    assert run.final()["exact"] == straight.final()["exact"]


def test_second_sweep_driver_is_refused_and_a_killed_sweep_resumes(tmp_path):
    grid = {"task.train_fraction": (0.05, 0.6, 0.9)}  # run order 0.05 (fails at once), 0.9, 0.6
    sweep = Sweep("tiny", grid, metric="0var_heldout", base=TINY, seeds=(1,))
    body = (f"from pathlib import Path\nfrom assignadd_core.experiments.sweep import Sweep, run_sweep\n"
            f"run_sweep(Sweep('tiny', {grid!r}, metric='0var_heldout', base={TINY!r}, seeds=(1,)),"
            f" results_dir=Path(sys.argv[1]), workers=1, progress=False)")
    lock = tmp_path / ".tiny.lock"
    second_point = RunConfig().replace(**{**TINY, "task.train_fraction": 0.9, "train.seed": 1}).hash()
    first = start(body, str(tmp_path))
    try:
        wait_for(lambda: holder_pid(lock) == first.pid
                 and (tmp_path / "scratch" / second_point / "resume" / "state.json").is_file(), first)
        with pytest.raises(BusyError) as excinfo:
            run_sweep(sweep, results_dir=tmp_path, workers=1, progress=False)
        message = str(excinfo.value)
        assert message.startswith("sweep tiny") and f"pid {first.pid}" in message and "\n" not in message
    finally:
        kill(first)
    assert [r["status"] for r in read_records(results_path(sweep, tmp_path))] == ["failed"]

    counts = run_sweep(sweep, results_dir=tmp_path, workers=1, progress=False)
    assert counts == {"done": 2, "failed": 0, "error": 0, "skipped": 1}
    records = read_records(results_path(sweep, tmp_path))
    assert len({r["key"] for r in records}) == len(records) == 3  # each point once
    assert not holder_path(lock).exists()
