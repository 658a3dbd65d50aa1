"""Times the training data: the fast generator on one thread against the reference one, and the chunk prefetcher.

    python benchmarks/data_stream.py [--chunks 5] [--streams 8] [--workers 1 2] [--prefetch-chunks 3] [--json]
                                     [--no-threads] [--keep-freed-memory]

1. Generation on one torch thread, in this process, on the paper's task: ms per 512-sequence batch for
   `fast_data.stream_chunk` (a training chunk of 100 batches, compact tokens), for the same chunk built by the
   reference, all-torch generator (`core.data.stream_chunk`, the generator's first version; the same batches,
   tests/test_data_golden.py), and for
   the random draws alone (the same torch calls on the same generator with nothing done between them: the floor any
   generator that keeps today's batches pays). Each time is the fastest of `--chunks` chunks after one warm-up
   (this process's CPU time, which other processes sharing the cores inflate less than wall time), then their mean.
   `--keep-freed-memory` first gives this process the allocator setting of the prefetch workers
   (`data_prefetch.keep_freed_memory`: no page faults for memory freed by the chunk before).
2. The prefetcher (`data_prefetch.ChunkPrefetcher`) serving `--streams` streams of the paper's task with each of
   `--workers` worker processes (and, unless --no-threads, as many threads instead), the consumer asking for steps
   as fast as it can: steps per second (one step = a [K, 512, 16] batch) and stream batches per second (K x that),
   measured over `--prefetch-chunks` chunks after the first (wall time).

Then the current generator by part: the draws, and the work that replaced torch's sorts and the PAD count
(`breakdown`: ms per batch of each helper on one chunk's inputs); the rest is the picks, the forced keys, the values
and the token assembly.

`--json` prints one object: ms_per_batch ({reference, current, draws_only}: the fastest chunks), mean_ms_per_batch
(the same keys), speedup (fastest against fastest), keep_freed_memory, breakdown ({variables, ranks, pads}) and
prefetch ([{streams, workers, threads, steps_per_s, batches_per_s}]).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from assignadd_core.core import data
from assignadd_core.core.config import TaskConfig
from assignadd_core.core.data import TrainStream, make_split, type_weights
from assignadd_core.experiments import fast_data
from assignadd_core.experiments.data_prefetch import ChunkPrefetcher, keep_freed_memory

BATCH, CHUNK_STEPS = 512, 100


def chunk_generator(index: int) -> torch.Generator:
    return torch.Generator().manual_seed((42 * 1_000_003 + index * 7_919 + 17) % 2**63)


def draws_only(task: TaskConfig, n: int, gen: torch.Generator) -> None:
    """The random calls of one training chunk, in order and shape, and nothing else."""
    split, slots = make_split(task), min(task.max_assignments, task.n_vars)
    torch.multinomial(type_weights(task).float(), n, replacement=True, generator=gen)
    tables = [split.train_pairs, split.two_var_row_pairs, split.left_vars, split.right_vars, split.allowed_var_pairs]
    for rows in tables:
        if rows.shape[0]:
            torch.randint(0, rows.shape[0], (n,), generator=gen)
    torch.randint(1, slots + 1, (n,), generator=gen)
    torch.rand(n, task.n_vars, generator=gen)
    torch.randint(0, task.modulus, (n, slots), generator=gen)
    torch.rand(n, slots, generator=gen)
    torch.rand(n, task.prefix_len - 2, generator=gen)


def per_batch_ms(build, chunks: int, mean: bool = False) -> float:
    """The fastest of `chunks` chunks (after a warm-up), or their mean, in ms of this process's CPU time per batch."""
    build(0)
    times = []
    for index in range(1, chunks + 1):
        start = time.process_time()
        build(index)
        times.append(time.process_time() - start)
    return 1000 * (sum(times) / len(times) if mean else min(times)) / CHUNK_STEPS


def generation(chunks: int) -> dict:
    task = TaskConfig()
    make_split(task)
    torch.set_num_threads(1)
    builders = {
        "reference": lambda i: data.stream_chunk(task, BATCH, 42, i, CHUNK_STEPS),
        "current": lambda i: fast_data.stream_chunk(task, BATCH, 42, i, CHUNK_STEPS),
        "draws_only": lambda i: draws_only(task, CHUNK_STEPS * BATCH, chunk_generator(i)),
    }
    times = {name: per_batch_ms(build, chunks) for name, build in builders.items()}
    means = {name: per_batch_ms(build, chunks, mean=True) for name, build in builders.items()}
    return {"ms_per_batch": times, "mean_ms_per_batch": means, "speedup": times["reference"] / times["current"],
            "breakdown": breakdown(task, chunks)}


def breakdown(task: TaskConfig, chunks: int) -> dict:
    """ms per batch of the current generator's parts on one chunk's inputs: the random draws, the first slots of
    the variables' sort, the assignments' ranks, the PAD counts; `rest` (the training rows' picks, forced keys,
    values, token assembly) is the whole less these."""
    layout, n = fast_data._layout(task), CHUNK_STEPS * BATCH
    g = chunk_generator(0)
    keys = torch.rand(n, task.n_vars, generator=g).numpy()
    n_assign = torch.randint(1, layout.slots + 1, (n,), generator=g).numpy()
    order = torch.rand(n, layout.slots, generator=g).numpy()
    pad_draws = torch.rand(n, layout.pads, generator=g).numpy()
    used = [n_assign > s for s in range(layout.slots)]
    rank = fast_data._ranks(order, used)
    parts = {
        "variables": per_batch_ms(lambda i: fast_data._first_variables(keys.copy(), layout.slots), chunks),
        "ranks": per_batch_ms(lambda i: fast_data._ranks(order, used), chunks),
        "pads": per_batch_ms(lambda i: fast_data._pads_before(pad_draws, n_assign, task.prefix_len, rank, layout),
                             chunks),
    }
    copy = per_batch_ms(lambda i: keys.copy(), chunks)  # the variables' timing copies its input first
    parts["variables"] -= copy
    return parts


def prefetch_rate(streams: int, workers: int, threads: bool, chunks: int) -> dict:
    task = TaskConfig()
    stream_list = [TrainStream(task, BATCH, seed, chunks=fast_data.stream_chunk) for seed in range(streams)]
    with ChunkPrefetcher(stream_list, workers=workers, threads=threads) as prefetcher:
        for step in range(1, CHUNK_STEPS + 1):  # the first chunk: the pool starting, nothing built ahead yet
            prefetcher.batch(step)
        start = time.perf_counter()
        steps = range(CHUNK_STEPS + 1, (chunks + 1) * CHUNK_STEPS + 1)
        for step in steps:
            prefetcher.batch(step)
        rate = len(steps) / (time.perf_counter() - start)
    return {"streams": streams, "workers": workers, "threads": threads, "steps_per_s": rate,
            "batches_per_s": rate * streams}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5, help="chunks timed per generator (after one warm-up)")
    parser.add_argument("--streams", type=int, nargs="+", default=[8], help="streams served by the prefetcher")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to time")
    parser.add_argument("--prefetch-chunks", type=int, default=3, help="chunks timed per prefetcher setting")
    parser.add_argument("--no-threads", action="store_true", help="time worker processes only")
    parser.add_argument("--keep-freed-memory", action="store_true",
                        help="time generation with the allocator setting of the prefetch workers")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if min(args.chunks, args.prefetch_chunks, *args.streams, *args.workers) < 1:
        parser.error("--chunks, --prefetch-chunks, --streams and --workers must be >= 1")

    if args.keep_freed_memory and not keep_freed_memory():
        parser.error("--keep-freed-memory: this allocator is not glibc's")
    result = generation(args.chunks)
    result["keep_freed_memory"] = args.keep_freed_memory
    if not args.json:
        times = result["ms_per_batch"]
        print(f"one thread, ms per {BATCH}-sequence batch (fastest of {args.chunks} chunks of {CHUNK_STEPS}):")
        print(f"  first version {times['reference']:.4f}   current {times['current']:.4f}"
              f"   ({result['speedup']:.2f}x)   the random draws alone {times['draws_only']:.4f}")
        means = result["mean_ms_per_batch"]
        print(f"  (means: first version {means['reference']:.4f}   current {means['current']:.4f}"
              f"   the random draws alone {means['draws_only']:.4f})")
        parts = result["breakdown"]
        rest = times["current"] - times["draws_only"] - sum(parts.values())
        print("  current, by part: draws {:.4f}, variables' sort {:.4f}, ranks {:.4f}, PAD counts {:.4f}, the rest"
              " {:.4f}".format(times["draws_only"], parts["variables"], parts["ranks"], parts["pads"], rest))
    result["prefetch"] = []
    for streams in args.streams:
        for workers in args.workers:
            for threads in (False,) if args.no_threads else (False, True):
                row = prefetch_rate(streams, workers, threads, args.prefetch_chunks)
                result["prefetch"].append(row)
                if not args.json:
                    print(f"prefetch: {streams} streams, {workers} worker {'threads' if threads else 'processes'}:"
                          f" {row['steps_per_s']:.1f} steps/s = {row['batches_per_s']:.0f} batches/s")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
