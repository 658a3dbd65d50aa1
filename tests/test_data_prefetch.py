"""The chunk prefetcher (assignadd_core.experiments.data_prefetch): exactly the streams' own batches, built in forked worker
processes, and no worker left behind however the consumer stops."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from assignadd_core.experiments import data_prefetch
from assignadd_core.core.config import ConfigError, TaskConfig
from assignadd_core.core.data import TrainStream
from assignadd_core.experiments.data_prefetch import ChunkPrefetcher

pytestmark = pytest.mark.usefixtures("single_thread")

TASK = TaskConfig(modulus=7, n_vars=4, n_left_only=1, n_right_only=1)
ROOT = Path(__file__).resolve().parent.parent


def streams(seeds=(0, 1, 2), task=TASK, batch_size=8, chunk_steps=5) -> list[TrainStream]:
    return [TrainStream(task, batch_size, seed, chunk_steps=chunk_steps) for seed in seeds]


def assert_batches(prefetcher, stream_list, steps):
    for step in steps:
        tokens, answers = prefetcher.batch(step)
        assert tokens.shape == (len(stream_list), 8, TASK.seq_len) and tokens.dtype == torch.uint8
        assert tokens.is_contiguous() and answers.is_contiguous()
        for k, stream in enumerate(stream_list):
            own_tokens, own_answers = stream.batch(step)
            assert torch.equal(tokens[k].long(), own_tokens) and torch.equal(answers[k].long(), own_answers), (step, k)


@pytest.mark.parametrize("threads", [False, True])
def test_batches_are_the_streams_own(threads):
    """From a resumed step, across chunk boundaries, and after jumps back and forth (the ring is refilled)."""
    own = streams()
    with ChunkPrefetcher(own, workers=2, start_step=3, threads=threads) as prefetcher:
        assert len(prefetcher) == 3
        assert_batches(prefetcher, own, [*range(3, 17), 2, 1, 40, 41, 12])


def test_different_tasks_share_a_prefetcher():
    """Runs of a stack differ in f, r and seeds: each stream keeps its own task."""
    own = [TrainStream(TASK, 8, 0, chunk_steps=5),
           TrainStream(TaskConfig(**{**TASK.__dict__, "train_fraction": 0.9, "two_var_rate": 0.3}), 8, 0, chunk_steps=5)]
    with ChunkPrefetcher(own, workers=2) as prefetcher:
        assert_batches(prefetcher, own, range(1, 12))


def test_keep_serves_the_remaining_streams():
    own = streams(seeds=(0, 1, 2, 3))
    with ChunkPrefetcher(own, workers=2) as prefetcher:
        assert_batches(prefetcher, own, range(1, 4))
        prefetcher.keep([0, 2, 3])  # stream 1 leaves
        assert_batches(prefetcher, [own[0], own[2], own[3]], range(4, 13))
        prefetcher.keep([1])  # of the remaining three: stream 2
        assert len(prefetcher) == 1
        assert_batches(prefetcher, [own[2]], range(13, 18))
        with pytest.raises(ConfigError, match="increasing indices into the 1 current streams"):
            prefetcher.keep([1])


def test_bad_settings_fail_with_one_line():
    with pytest.raises(ConfigError, match="must share batch size, chunk length and sequence length"):
        ChunkPrefetcher([TrainStream(TASK, 8, 0), TrainStream(TASK, 16, 1)], workers=1)
    with pytest.raises(ConfigError, match="at least one stream"):
        ChunkPrefetcher([], workers=1)
    with pytest.raises(ConfigError, match="workers must be >= 1"):
        ChunkPrefetcher(streams(), workers=0)
    with ChunkPrefetcher(streams(), workers=1) as prefetcher:
        with pytest.raises(ConfigError, match="training steps start at 1"):
            prefetcher.batch(0)
    with pytest.raises(RuntimeError, match="closed"):
        prefetcher.batch(1)


def worker_pids(before: set[int]) -> set[int]:
    return {p.pid for p in multiprocessing.active_children()} - before


def test_close_and_dropping_the_object_stop_the_workers():
    before = {p.pid for p in multiprocessing.active_children()}
    prefetcher = ChunkPrefetcher(streams(), workers=2)
    prefetcher.batch(1)
    pids = worker_pids(before)
    assert pids, "no worker process was started"
    prefetcher.close()
    assert not worker_pids(before) and not any(alive(pid) for pid in pids)

    abandoned = ChunkPrefetcher(streams(), workers=2)
    abandoned.batch(1)
    pids = worker_pids(before)
    del abandoned  # never closed: collecting it stops its workers
    assert not worker_pids(before) and not any(alive(pid) for pid in pids)


def alive(pid: int) -> bool:
    """Whether process `pid` still exists (and is not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


CONSUMER = """
from assignadd_core.core.config import TaskConfig
from assignadd_core.core.data import TrainStream
from assignadd_core.experiments.data_prefetch import ChunkPrefetcher
prefetcher = ChunkPrefetcher([TrainStream(TaskConfig(), 512, seed) for seed in range(4)], workers=2, ahead=2)
prefetcher.batch(1); prefetcher.batch(2)
print(" ".join(str(p.pid) for p in __import__("multiprocessing").active_children()), flush=True)
"""
ENDINGS = {"return": "", "raise": "raise RuntimeError('consumer failed')", "killed": "__import__('time').sleep(60)"}


def assert_gone(pids: list[int], within_s: float) -> None:
    assert pids
    deadline = time.monotonic() + within_s
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids), "a worker outlived its program"


@pytest.mark.parametrize("ending", ENDINGS)
def test_a_consumer_that_stops_early_leaves_no_worker(ending):
    """A program that stops after two steps while its workers still build chunks ahead, never closing its
    prefetcher (returning, raising, or killed with SIGKILL, which runs no clean-up), ends promptly, and so do its
    workers."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    consumer = subprocess.Popen([sys.executable, "-c", CONSUMER + ENDINGS[ending]], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
    pids = [int(p) for p in consumer.stdout.readline().split()]
    if ending == "killed":
        consumer.kill()
    consumer.wait(timeout=60)
    assert consumer.returncode == {"return": 0, "raise": 1, "killed": -9}[ending], consumer.stderr.read()
    assert_gone(pids, within_s=10)


def test_a_worker_error_reaches_the_consumer(monkeypatch):
    """The workers are forked from this process, so they build with the patched builder and fail; the consumer gets
    the error instead of waiting forever."""
    def broken(*args):
        raise ValueError("builder failed")
    monkeypatch.setattr(data_prefetch, "stream_chunk", broken)
    with ChunkPrefetcher(streams(), workers=1) as prefetcher:
        with pytest.raises(ValueError, match="builder failed"):
            prefetcher.batch(1)
