"""Where the points run: a local process pool (or this process) and Ray. Each yields one record per task,
in the order they finish; a worker that dies comes back as an "error" record."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from ..threads import set_threads
from .worker import run_point

EXECUTORS = ("local", "ray")


def passive_wait(threads: int | None, workers: int) -> bool:
    """Several single-thread workers share the cores: the one case where a passive OpenMP wait helps."""
    return threads == 1 and workers > 1 and "OMP_WAIT_POLICY" not in os.environ


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


def _local(tasks: list[dict], workers: int, threads: int | None, work=None) -> Iterator[dict]:
    work = work or run_point  # (another function only in tests)
    if workers == 1:  # in this process: no start-up cost, and easy to debug
        set_threads(threads)
        for task in tasks:
            yield work(task)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    # OpenMP reads its wait policy when torch loads, so it is set for the spawned workers only
    policy = {"OMP_WAIT_POLICY": "PASSIVE"} if passive_wait(threads, workers) else {}
    with _environment(**policy):
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=set_threads, initargs=(threads,))
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
