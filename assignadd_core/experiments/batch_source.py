"""The batches of a stack's runs, step by step: each run's own `data.TrainStream` (a pure function of its seed and
the step, its chunks built by `fast_data`), stacked on a leading run axis. With `workers` > 0 the next chunks of every stream are built ahead in
worker processes while the device trains (`data_prefetch`); the batches are the same either way."""
from __future__ import annotations

import torch

from ..core.config import RunConfig
from ..core.data import TrainStream
from .fast_data import stream_chunk
from .data_prefetch import ChunkPrefetcher


class BatchSource:
    """`batch(step) -> (tokens [K, B, n], answers [K, B])` for consecutive steps after `start`; `keep(indices)`
    drops the streams of runs that left the stack; `close()` stops the workers (if any)."""

    def __init__(self, configs: list[RunConfig], start: int, workers: int = 0):
        self.streams = [TrainStream(c.task, c.train.batch_size, c.train.stream_seed, chunks=stream_chunk)
                        for c in configs]
        self.prefetcher = None
        if workers > 0:
            self.prefetcher = ChunkPrefetcher(self.streams, workers=workers, start_step=start + 1)

    def __len__(self) -> int:
        return len(self.streams)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.prefetcher is not None:
            return self.prefetcher.batch(step)
        batches = [stream.batch(step) for stream in self.streams]
        return torch.stack([t for t, _ in batches]), torch.stack([a for _, a in batches])

    def keep(self, indices: list[int]) -> None:
        self.streams = [self.streams[i] for i in indices]
        if self.prefetcher is not None:
            self.prefetcher.keep(indices)

    def close(self) -> None:
        if self.prefetcher is not None:
            self.prefetcher.close()
