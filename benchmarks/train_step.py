"""Times the fused training step against a naive full-forward step, in one process.

    python benchmarks/train_step.py [--reps 30] [--threads N] [--json]

Prints ms/step for the naive fp32 step (full hooked forward at all 16 positions, as TransformerLens
runs it), the fused fp32 and bf16 steps, their ratio, the achieved GFLOP/s, the share of step
time spent generating data, and the projected wall time of the full 40,000-step paper run with
its evaluation every 100 steps. `--json` prints one object with the keys naive_fp32_ms,
fused_fp32_ms, fused_bf16_ms, ratio_fp32, data_share, projected_paper_run_min (stable interface)
plus extra detail keys.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

from assignadd_core.config import RunConfig
from assignadd_core.data import TrainStream
from assignadd_core.evaluation import pool_accuracies
from assignadd_core.measures import all_measures
from assignadd_core.trainer import make_optimizer, new_model


def matmul_flops(config: RunConfig, fused: bool) -> float:
    """Forward multiply-add FLOPs of one batch (2 per multiply-add), matrix products only."""
    b, n, d, m = config.train.batch_size, config.task.seq_len, config.model.d_model, config.model.d_mlp
    v, out = config.task.vocab_size, config.task.modulus
    if not fused:
        attention = 2 * (2 * b * n * n * d)  # scores and pattern @ values, per layer
        per_layer_proj = 4 * 2 * b * n * d * d  # Q, K, V, O at every position
        return 2 * per_layer_proj + 2 * attention + 2 * (2 * b * n * d * m) + 2 * b * n * d * out
    # The fused path (`model._fused`): batch-independent folds and token/position tables, then
    # per-sequence products with [batch, vocab + pos] tables; d_head = d_model.
    tables = (v + n) * d * d + (v + n) * (v + n) * d + (v + n) * d * d  # W·W_QK1, score tables, W·W_OV1
    folds = 4 * d ** 3  # W_Q W_Kᵀ and W_V W_O of both layers
    per_sequence = (2 * d * d  # query and output of layer 2
                    + 5 * (v + n) * d  # layer-1 output at `=`, layer-2 scores (x0, v1), layer-2 context (x0, v1)
                    + 2 * n * n  # layer-2 reads through the layer-1 pattern
                    + 2 * d * m + d * out)  # MLP and unembedding at `=`
    return 2 * (folds + tables + b * per_sequence)


def time_it(fn, reps: int) -> float:
    for _ in range(3):
        fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    config = RunConfig()
    model = new_model(config)
    optimizer = make_optimizer(model, config)
    stream = TrainStream(config.task, config.train.batch_size, config.train.seed)
    tokens, answers = stream.batch(1)

    def naive_step():
        loss = F.cross_entropy(model(tokens)[:, -1], answers)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def fused_step(bf16: bool):
        with torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else torch.autocast("cpu", enabled=False):
            logits = model.fused_logits(tokens)
        loss = F.cross_entropy(logits.float(), answers)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    naive = time_it(naive_step, args.reps)
    fused = time_it(lambda: fused_step(False), args.reps)
    fused_bf16 = time_it(lambda: fused_step(True), args.reps)

    # Data: a fresh stream per measurement so chunk generation is included, amortised per batch.
    chunk = stream.chunk_steps
    start = time.perf_counter()
    fresh = TrainStream(config.task, config.train.batch_size, seed=7)
    for step in range(1, 3 * chunk + 1):
        fresh.batch(step)
    data = (time.perf_counter() - start) / (3 * chunk)

    evaluation = time_it(lambda: (pool_accuracies(model), all_measures(model, with_probe=False)), 5)
    probe = time_it(lambda: all_measures(model, with_probe=True), 3) - time_it(
        lambda: all_measures(model, with_probe=False), 3)
    steps, evals = config.train.steps, config.train.steps // config.train.eval_every + 1
    probes = config.train.steps // config.train.probe_every + 1
    projected_s = steps * (fused + data) + evals * evaluation + probes * max(probe, 0.0)

    result = {
        "naive_fp32_ms": round(naive * 1e3, 2),
        "fused_fp32_ms": round(fused * 1e3, 2),
        "fused_bf16_ms": round(fused_bf16 * 1e3, 2),
        "ratio_fp32": round(naive / fused, 2),
        "data_share": round(data / (data + fused), 4),
        "projected_paper_run_min": round(projected_s / 60, 1),
        "data_ms_per_batch": round(data * 1e3, 3),
        "eval_ms": round(evaluation * 1e3, 1),
        "naive_gflops": round(3 * matmul_flops(config, False) / naive / 1e9, 1),
        "fused_gflops": round(3 * matmul_flops(config, True) / fused / 1e9, 1),
        "threads": torch.get_num_threads(),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"threads {result['threads']}, batch {config.train.batch_size}, median of {args.reps} steps")
    print(f"naive fp32 step  {result['naive_fp32_ms']:8.2f} ms  ({result['naive_gflops']} GFLOP/s, fwd+bwd ≈ 3× fwd)")
    print(f"fused fp32 step  {result['fused_fp32_ms']:8.2f} ms  ({result['fused_gflops']} GFLOP/s)")
    print(f"fused bf16 step  {result['fused_bf16_ms']:8.2f} ms")
    print(f"ratio naive/fused (fp32)   {result['ratio_fp32']:.2f}×")
    print(f"data generation            {result['data_ms_per_batch']:.3f} ms/batch = {100 * result['data_share']:.1f} % of a step")
    print(f"evaluation (pools+measures) {result['eval_ms']:.0f} ms, {evals} times per run")
    print(f"projected 40,000-step paper run: {result['projected_paper_run_min']} min")


if __name__ == "__main__":
    main()
