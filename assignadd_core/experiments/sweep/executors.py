"""Where the points run: a local process pool (or this process) and Ray. Each runs jobs (a point, or a stack of
points trained together: `worker.run_job`) and yields one record per point, in the order they finish; a worker
that dies comes back as an "error" record for each of its points."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from contextlib import contextmanager
from typing import Iterator
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed

from ..threads import set_threads
from .worker import run_job

EXECUTORS = ("local", "ray")
RAY_CONNECT_TIMEOUT_S = 10  # a cluster that answers at all answers well within this


class ClusterError(RuntimeError):
    """The Ray cluster named by --address cannot be reached (an environment problem; nothing was run)."""


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of 'HOST:PORT' or 'ray://HOST:PORT'; None for 'auto' and other forms Ray resolves itself."""
    bare = address.split("://", 1)[-1]
    host, sep, port = bare.rpartition(":")
    return (host.strip("[]"), int(port)) if sep and host and port.isdigit() else None


def check_ray_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """Raise ClusterError within about `timeout` seconds unless a Ray cluster answers at `address`.

    `ray.init` retries a dead address for minutes, printing connection warnings; so first a plain TCP connect
    (a closed port fails at once), then `ray.init` in a child process that is stopped after `timeout`."""
    hint = ("check that the cluster is up there (`ray start --head` on that machine, `ray status` on it) and"
            " that this machine can reach that port")
    target = _host_port(address)
    if target is not None:
        try:
            socket.create_connection(target, timeout=min(5.0, timeout)).close()
        except OSError as err:
            raise ClusterError(f"no Ray cluster at {address}: {err.strerror or err}; {hint}") from None
    probe = f"import ray; ray.init(address={address!r}, logging_level='error', include_dashboard=False)"
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"no Ray cluster answered at {address} within {timeout:.0f} s; {hint}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
        raise ClusterError(f"could not join the Ray cluster at {address} ({last}); {hint}")


def passive_wait(threads: int | None, workers: int) -> bool:
    """Several single-thread workers share the cores: the one case where a passive OpenMP wait helps."""
    return threads == 1 and workers > 1 and "OMP_WAIT_POLICY" not in os.environ


def _lost(job: dict | list[dict], err: BaseException) -> list[dict]:
    """The records of the points of a job whose worker died (killed, out of memory, a lost node): retried next
    time."""
    return [{"key": task["key"], "status": "error", "reason": f"worker lost: {type(err).__name__}: {err}"}
            for task in (job if isinstance(job, list) else [job])]


def _records(result: dict | list[dict]) -> list[dict]:
    return result if isinstance(result, list) else [result]


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


def _local(jobs: list, workers: int, threads: int | None, work=None) -> Iterator[dict]:
    work = work or run_job  # (another function only in tests)
    if workers == 1:  # in this process: no start-up cost, and easy to debug
        set_threads(threads)
        for job in jobs:
            yield from _records(work(job))
        return
    # OpenMP reads its wait policy when torch loads, so it is set for the spawned workers only
    policy = {"OMP_WAIT_POLICY": "PASSIVE"} if passive_wait(threads, workers) else {}
    with _environment(**policy):
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=set_threads, initargs=(threads,))
        try:
            futures = {pool.submit(work, job): job for job in jobs}
            for future in as_completed(futures):
                try:
                    records = _records(future.result())
                except Exception as err:  # noqa: BLE001  (a worker died, e.g. BrokenProcessPool)
                    records = _lost(futures[future], err)
                yield from records
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _ray(jobs: list, threads: int | None, address: str | None, gpus_per_run: float) -> Iterator[dict]:
    import ray  # here, not at the top: a slow import, and Ray is needed only by this executor
    started = not ray.is_initialized()
    if started:  # a local instance, or the cluster at `address` (e.g. "auto" or "ray://host:10001")
        # single-thread tasks share each node's cores: the one case for a passive OpenMP wait
        env = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")} if threads == 1 else {}
        ray.init(address=address, runtime_env={"env_vars": env}, include_dashboard=False, logging_level="warning")
    try:
        # a stack is one task: one process, `threads` threads, the GPUs of one run
        remote = ray.remote(run_job).options(num_cpus=threads or 1, num_gpus=gpus_per_run, max_retries=1)
        pending = {remote.remote(job): job for job in jobs}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                job = pending.pop(ref)
                try:
                    records = ray.get(ref)
                except Exception as err:  # noqa: BLE001  (a worker or node died: report, retry next time)
                    records = _lost(job, err)
                yield from records
    finally:
        for ref in list(pending):
            ray.cancel(ref)
        if started:
            ray.shutdown()
