"""The training batches of K streams (`data.TrainStream`), built ahead in worker processes while the device trains.

Each stream's chunk (`fast_data.stream_chunk`: `chunk_steps` batches) is built by one task in a worker, which writes it
into a ring of buffers shared with this process (anonymous shared memory, inherited by the forked workers): the
chunk being read, the one before it (its batches may still be in use) and `ahead` chunks being built. A batch is
a view of the ring, [K, B, n] and contiguous: nothing is copied per step unless a stream was dropped. Tokens and
answers keep the streams' compact dtype (`data.compact_dtype`, uint8 up to 256 tokens): convert on the device.
The batches are exactly the streams' own (`TrainStream.batch`), in any order of steps; consecutive steps never
wait once the workers keep up.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import mmap
import multiprocessing
import os
import threading
import time
import weakref

import numpy as np
import torch

from ..core.config import ConfigError
from ..core.data import TrainStream, compact_dtype
from .fast_data import stream_chunk

# Per process: the prefetchers' shared rings and streams by id, set before the workers are forked (they inherit it).
_RINGS: dict[int, tuple[list[TrainStream], torch.Tensor, torch.Tensor]] = {}


def keep_freed_memory() -> bool:
    """Have this process's allocator (glibc) keep the memory it frees instead of handing it back to the system: a
    chunk's arrays are then built in pages already mapped, where otherwise each chunk faults a few MB in again
    (about 0.02-0.05 ms per batch on this project's CPU). For processes that build chunks and nothing else; True if
    the allocator took the setting."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, 1 << 30)) and bool(mallopt(_M_MMAP_THRESHOLD, 1 << 26))


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def _worker_start(parent: int) -> None:
    """Worker start: one torch thread (the workers are the parallelism; a forked OpenMP pool must not be used), an
    allocator that keeps freed memory, and a watch on the parent: a worker whose consumer was killed outright exits
    instead of waiting for work forever."""
    torch.set_num_threads(1)
    keep_freed_memory()
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def _build(ring_id: int, slot: int, stream: int, chunk: int) -> None:
    """Build chunk `chunk` of stream `stream` into ring slot `slot` (in a worker)."""
    streams, tokens, answers = _RINGS[ring_id]
    s = streams[stream]
    chunk_tokens, chunk_answers = stream_chunk(s.task, s.batch_size, s.seed, chunk, s.chunk_steps)
    tokens[slot, :, stream] = chunk_tokens.view(s.chunk_steps, s.batch_size, -1)
    answers[slot, :, stream] = chunk_answers.view(s.chunk_steps, s.batch_size)


def _shared_tensor(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A zeroed tensor in anonymous shared memory: forked processes write into the same pages."""
    numpy_dtype = torch.empty(0, dtype=dtype).numpy().dtype
    size = int(np.prod(shape)) * numpy_dtype.itemsize
    return torch.from_numpy(np.frombuffer(mmap.mmap(-1, max(size, 1)), numpy_dtype, count=int(np.prod(shape)))
                            .reshape(shape))


class ChunkPrefetcher:
    """`batch(step) -> (tokens [K, B, n], answers [K, B])` of K streams, built ahead by `workers` processes.

    `start_step`: the first step the caller will ask for (its chunk and the `ahead` next ones are started at once).
    `keep(indices)`: go on with those streams only (indices into the current ones, e.g. when runs leave a stack).
    `threads=True` builds in threads of this process instead (for comparison: slower, the builder holds the GIL
    between its numpy calls). `close()` (or leaving a `with` block, or dropping the object) stops the workers;
    a batch stays valid until the caller has asked for a step two chunks later.
    """

    def __init__(self, streams: list[TrainStream], workers: int | None = None, start_step: int = 1, ahead: int = 1,
                 threads: bool = False):
        if not streams:
            raise ConfigError("ChunkPrefetcher needs at least one stream")
        first = streams[0]
        for s in streams:
            shape, first_shape = (s.batch_size, s.chunk_steps, s.task.seq_len), (first.batch_size, first.chunk_steps,
                                                                                  first.task.seq_len)
            if shape != first_shape:
                raise ConfigError("the streams of a ChunkPrefetcher must share batch size, chunk length and sequence"
                                  f" length; got {shape} beside {first_shape}")
        if ahead < 1:
            raise ConfigError(f"ahead must be >= 1, got {ahead}")
        workers = workers if workers is not None else max(1, len(os.sched_getaffinity(0)) - 1)
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}")
        self.streams, self.chunk_steps, self.ahead = list(streams), first.chunk_steps, ahead
        self.live = list(range(len(streams)))  # positions in the ring of the streams still served
        dtype = max((compact_dtype(s.task) for s in streams), key=lambda d: torch.iinfo(d).bits)
        ring = (ahead + 2, first.chunk_steps, len(streams), first.batch_size)
        self.tokens = _shared_tensor(ring + (first.task.seq_len,), dtype)
        self.answers = _shared_tensor(ring, dtype)
        self._id = id(self)
        _RINGS[self._id] = (self.streams, self.tokens, self.answers)
        if threads:
            self._pool = concurrent.futures.ThreadPoolExecutor(workers)
        else:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("fork"), initializer=_worker_start,
                initargs=(os.getpid(),))
        self._chunks: dict[int, list[concurrent.futures.Future]] = {}  # chunk index -> its streams' tasks
        self._ready: set[int] = set()  # chunks whose tasks have all ended well
        self._finalizer = weakref.finalize(self, _stop, self._pool, self._id)
        self._start(self._chunk(start_step))

    def __len__(self) -> int:
        return len(self.live)

    def _chunk(self, step: int) -> int:
        if step < 1:
            raise ConfigError(f"training steps start at 1, got {step}")
        return (step - 1) // self.chunk_steps

    def _start(self, chunk: int) -> None:
        """Have `chunk` and the `ahead` next ones built or being built; forget the others except the one before."""
        wanted = range(chunk, chunk + self.ahead + 1)
        keep = set(wanted) | {chunk - 1}  # ahead + 2 consecutive chunks: each has a ring slot of its own
        stale = [f for c in list(self._chunks) if c not in keep for f in self._chunks.pop(c)]
        self._ready &= keep
        for future in stale:  # after a jump: a task still writing into a slot that a new chunk takes must end first
            future.cancel()
        concurrent.futures.wait(stale)
        for c in wanted:
            if c not in self._chunks:
                slot = c % self.tokens.shape[0]
                self._chunks[c] = [self._pool.submit(_build, self._id, slot, k, c) for k in self.live]

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens [K, B, n] and answers [K, B] of 1-indexed step `step`, in the streams' compact dtype."""
        if not self._finalizer.alive:
            raise RuntimeError("this ChunkPrefetcher is closed")
        chunk = self._chunk(step)
        if chunk not in self._chunks or chunk + self.ahead not in self._chunks:
            self._start(chunk)
        if chunk not in self._ready:
            for future in self._chunks[chunk]:
                future.result()  # waits; re-raises a worker's error here
            self._ready.add(chunk)
        slot, row = chunk % self.tokens.shape[0], (step - 1) % self.chunk_steps
        tokens, answers = self.tokens[slot, row], self.answers[slot, row]
        if len(self.live) < tokens.shape[0]:
            index = torch.tensor(self.live)
            tokens, answers = tokens.index_select(0, index), answers.index_select(0, index)
        return tokens, answers

    def keep(self, indices: list[int]) -> None:
        """Serve only the current streams at `indices` from now on (their order is kept)."""
        if sorted(set(indices)) != list(indices) or any(not 0 <= i < len(self.live) for i in indices):
            raise ConfigError(f"keep needs increasing indices into the {len(self.live)} current streams, got {indices}")
        self.live = [self.live[i] for i in indices]

    def close(self) -> None:
        """Stop the workers (tasks not started are dropped; running ones finish first)."""
        self._finalizer()

    def __enter__(self) -> "ChunkPrefetcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _stop(pool: concurrent.futures.Executor, ring_id: int) -> None:
    pool.shutdown(wait=True, cancel_futures=True)
    _RINGS.pop(ring_id, None)
