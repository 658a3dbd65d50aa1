"""Run-steps per second of stacked training, data and evaluation included, for several stack sizes K, on a GPU and
beside it on the CPU of the same machine (README, Performance).

    python benchmarks/gpu_stack.py                      # K in 1 16 64 256 on cuda; K in 1 16 on the CPU
    python benchmarks/gpu_stack.py --ks 1 16 --steps 201 --cpu-ks 1 --json
    python benchmarks/gpu_stack.py --cpu-only --tiny --cpu-ks 1 2 --cpu-steps 11   # the CPU rows only, tiny: a check

Each measurement trains K runs of the paper's configuration (seeds 1..K) from step 0 to `--steps` (an eval step:
the nine pools and the progress measures every 100 steps, as the composition studies log them) in a fresh temporary
folder with `stacked.train_stacked(..., until=steps)`, so the time holds the data (built ahead by `--data-workers`
processes), every evaluation, the CUDA graph's capture and the metrics files; it leaves out the end-of-run work
(the exact sets, final.json), which a run does once. Printed: wall time, run-steps/s, ms per step of the stack,
and the projected time of the committed studies' run-steps (`--study-run-steps`) at the largest K's rate.
`--cpu-only` measures the CPU rows alone (no GPU needed); `--tiny` trains the tests' tiny configuration instead of
the paper's (modulus 7, 4 variables, a 16-wide model, batch 32, evaluation every 10 steps): a check that the
benchmark runs (tests/test_benchmarks.py), not a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assignadd_core.experiments import stacked  # noqa: E402
from assignadd_core.core.config import RunConfig  # noqa: E402

STUDY_RUN_STEPS = 10_600_000  # the committed studies' run-steps (README, Performance): about a day of one CPU core
TINY = dict(modulus=7, n_vars=4, n_left_only=1, n_right_only=1, d_model=16, d_mlp=32, batch_size=32, pool_size=50,
            eval_every=10, probe_every=20)


def measure(k: int, steps: int, device: str, data_workers: int, bf16: bool, tiny: bool = False) -> dict:
    base = RunConfig().replace(**TINY) if tiny else RunConfig()
    configs = [base.replace(seed=s, steps=max(steps + 100, 1000), bf16=bf16) for s in range(1, k + 1)]
    with tempfile.TemporaryDirectory() as folder:
        tic = time.perf_counter()
        stacked.train_stacked(configs, [Path(folder) / f"r{i}" for i in range(k)], device=device, progress=False,
                              keep_checkpoints="none", compile="off", state_every_s=1e9, data_workers=data_workers,
                              until=steps)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        wall = time.perf_counter() - tic
    return {"device": device, "k": k, "steps": steps, "bf16": bf16, "wall_s": round(wall, 2),
            "run_steps_per_s": round(k * steps / wall, 1), "ms_per_stack_step": round(1000 * wall / steps, 3)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 16, 64, 256], help="stack sizes on the GPU")
    parser.add_argument("--cpu-ks", type=int, nargs="*", default=[1, 16], help="stack sizes on the CPU (none: skip)")
    parser.add_argument("--steps", type=int, default=501, help="steps per measurement (an eval step: 1 + 100 n)")
    parser.add_argument("--cpu-steps", type=int, default=101)
    parser.add_argument("--data-workers", type=int, default=max(0, (os.cpu_count() or 1) - 2))
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (the authors' mode) on the GPU")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cpu-only", action="store_true", help="the CPU rows alone (no GPU needed)")
    parser.add_argument("--tiny", action="store_true", help="the tests' tiny configuration: checks the benchmark runs")
    args = parser.parse_args(argv)
    if not args.cpu_only and not torch.cuda.is_available():
        print("error: torch sees no CUDA GPU here; this benchmark measures a GPU (--cpu-only for its CPU rows; use"
              " benchmarks/train_step.py on a CPU)", file=sys.stderr)
        return 2
    gpu_ks = () if args.cpu_only else args.ks
    results = [measure(k, args.steps, "cuda", args.data_workers, args.bf16, args.tiny) for k in gpu_ks]
    results += [measure(k, args.cpu_steps, "cpu", args.data_workers, False, args.tiny) for k in args.cpu_ks]
    best = max(results, key=lambda r: (r["device"] == "cuda", r["run_steps_per_s"]))
    summary = {"gpu": torch.cuda.get_device_name(0) if gpu_ks else None, "cpu_threads": torch.get_num_threads(),
               "results": results, "study_run_steps": STUDY_RUN_STEPS,
               "study_minutes_at_best": round(STUDY_RUN_STEPS / best["run_steps_per_s"] / 60, 1)}
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"{summary['gpu'] or 'no GPU measured'}; CPU rows at {summary['cpu_threads']} threads; data workers"
          f" {args.data_workers}")
    print(f"{'device':6} {'K':>4} {'steps':>6} {'wall s':>8} {'run-steps/s':>12} {'ms/stack step':>14}")
    for r in results:
        print(f"{r['device']:6} {r['k']:>4} {r['steps']:>6} {r['wall_s']:>8.2f} {r['run_steps_per_s']:>12,.0f}"
              f" {r['ms_per_stack_step']:>14.2f}")
    print(f"the committed studies' {STUDY_RUN_STEPS:,} run-steps at K = {best['k']}: about"
          f" {summary['study_minutes_at_best']} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
