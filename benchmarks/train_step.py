"""Times the fused training step against a naive full-forward step, and the thread settings.

    python benchmarks/train_step.py [--reps 30] [--threads N] [--json] [--clock wall|cpu]
                                    [--stack-sizes 1 4 16] [--no-compiled]
                                    [--thread-counts 1 2] [--policies default PASSIVE ACTIVE] [--no-combinations]
                                    [--tiny]

In this process, with the settings training uses by default (torch's thread count and the
inherited OpenMP wait policy, unless --threads): ms/step for the naive fp32 step (full hooked
forward at all 16 positions, as TransformerLens runs it), the fused fp32 and bf16 steps, their
ratio, the achieved GFLOP/s, the share of step time spent generating data, and the projected wall
time of the full 40,000-step paper run with its evaluation every 100 steps. Then the fused fp32
step for every combination of thread count and OMP_WAIT_POLICY; the policy is read only when a
process starts, so each policy runs in a fresh copy of this script. And whether this CPU has
native bf16 (where it does not, `--bf16` training falls back to fp32: the bf16 time shows why).

Then, in this process, the faster paths a run can train with: the fused step compiled (`torch.compile`, as
`--compile on`) and K runs stacked and compiled (`assignadd_core.experiments.stacked`, K = --stack-sizes), each as ms per
step per run and as runs per CPU-hour: 3600 / (threads x the projected wall time of one 40,000-step paper run,
evaluation every 100 steps and the compile time shared by the K runs included). Targets: the fastest fused
step >= 10x the naive one, the best stacked path >= 2x the runs per CPU-hour of the eager fused step (both at
one thread: run with --threads 1). `--clock cpu` times everything as this process's CPU time (then runs per
CPU-hour are 3600 / that time): on a machine other processes keep busy, wall times mostly measure the sharing.

How far any faster step could go: the step's matrix products alone (fused path, forward + backward ≈ 3 x the
forward's FLOPs) at this process's own rate for one large fp32 product (`gemm_gflops`), with data and evaluation
as measured: that floor's runs per CPU-hour over the eager fused step's is `ceiling_gain`, the most a faster fp32
step can give without changing the evaluation.

`--tiny` runs every measurement on the tests' tiny configuration (modulus 7, 4 variables, a 16-wide model, batch
32) instead of the paper's: it checks that the benchmark runs, in seconds (tests/test_benchmarks.py); its times mean
nothing.

`--json` prints one object with the keys naive_fp32_ms, fused_fp32_ms, fused_bf16_ms, ratio_fp32,
data_share, projected_paper_run_min (stable interface) plus detail keys, among them threads,
omp_wait_policy, bf16_native, clock, combinations ([{threads, omp_wait_policy, fused_fp32_ms}]) and fastest; and
compiled_fp32_ms, compile_s, stacked ([{k, ms_per_step, ms_per_run_step, compile_s, runs_per_cpu_hour}]),
runs_per_cpu_hour ({naive, eager_fused, compiled_fused, stacked_K...}), ratio_fastest_fused (naive ms / the
fastest fused ms per run step), stacked_gain (best stacked runs per CPU-hour / eager fused ones), gemm_gflops,
floor_step_ms, ceiling_gain and step_for_2x_ms (the step time at which runs per CPU-hour double, data and
evaluation as measured).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import TrainStream
from assignadd_core.core.evaluation import pool_accuracies
from assignadd_core.measure.measures import all_measures
from assignadd_core.core.model import initial_model
from assignadd_core.experiments.stacked import Stack, StackedStep
from assignadd_core.core.trainer import TrainingStep, make_optimizer, native_bf16, train_step

POLICIES = ("default", "PASSIVE", "ACTIVE")  # "default": OMP_WAIT_POLICY unset
# What a duration is: wall time, or this process's CPU time (all its threads), which other processes
# sharing the cores inflate far less (--clock cpu: the way to measure on a busy machine)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]
TINY = dict(modulus=7, n_vars=4, n_left_only=1, n_right_only=1, d_model=16, d_mlp=32, batch_size=32, pool_size=50)


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


def gemm_gflops(n: int = 1024, reps: int = 5) -> float:
    """This process's rate for one large fp32 matrix product (its threads): what the step's products could reach."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n ** 3 / time_it(lambda: a @ b, reps) / 1e9


def time_it(fn, reps: int) -> float:
    for _ in range(3):
        fn()
    samples = []
    for _ in range(reps):
        start = clock()
        fn()
        samples.append(clock() - start)
    return statistics.median(samples)


def paper_step_setup(tiny: bool = False):
    config = RunConfig().replace(**TINY) if tiny else RunConfig()
    model = initial_model(config)
    optimizer = make_optimizer(model, config)
    stream = TrainStream(config.task, config.train.batch_size, config.train.seed)
    tokens, answers = stream.batch(1)

    def fused_step(bf16: bool):  # the trainer's own step, so the benchmark times what training runs
        train_step(model, optimizer, tokens, answers, config, torch.device("cpu"), bf16)

    return config, model, optimizer, stream, tokens, answers, fused_step


def compiled_step_ms(config: RunConfig, reps: int, k: int | None) -> tuple[float, float]:
    """(ms per step, seconds to compile) of the compiled fused step (k None) or of k runs stacked and compiled."""
    cpu = torch.device("cpu")
    models = [initial_model(config.replace(seed=seed)) for seed in range(42, 42 + (k or 1))]
    batches = [TrainStream(config.task, config.train.batch_size, seed).batch(1) for seed in range(42, 42 + (k or 1))]
    if k is None:
        step = TrainingStep(models[0], make_optimizer(models[0], config), config, cpu, False, compiled=True)
        tokens, answers = batches[0]
    else:
        stack = Stack(models, config, cpu, False)
        step = StackedStep(stack, make_optimizer(stack.weights, config), config, cpu, False, compiled=True)
        tokens, answers = torch.stack([t for t, _ in batches]), torch.stack([a for _, a in batches])
    start = clock()
    step(tokens, answers)  # compiles
    compile_s = clock() - start
    if not step.compiled:
        raise SystemExit("error: torch.compile failed here; the compiled paths cannot be measured")
    return time_it(lambda: step(tokens, answers), reps), compile_s


def child(thread_counts: list[int], reps: int, tiny: bool) -> None:
    """One policy (this process's environment): the fused fp32 step at each thread count, as JSON."""
    *_, fused_step = paper_step_setup(tiny)
    policy = os.environ.get("OMP_WAIT_POLICY", "default")
    rows = []
    for threads in thread_counts:
        torch.set_num_threads(threads)
        rows.append({"threads": threads, "omp_wait_policy": policy,
                     "fused_fp32_ms": round(time_it(lambda: fused_step(False), reps) * 1e3, 2)})
    print(json.dumps(rows))


def combinations(thread_counts: list[int], policies: list[str], reps: int, tiny: bool) -> list[dict]:
    """Each policy in a fresh process (one at a time, so they do not compete for the cores)."""
    rows = []
    for policy in policies:
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        if policy != "default":
            env["OMP_WAIT_POLICY"] = policy
        done = subprocess.run([sys.executable, __file__, "--child", "--reps", str(reps), "--thread-counts",
                               *map(str, thread_counts), *(["--tiny"] if tiny else [])], env=env, capture_output=True,
                              text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise SystemExit(f"error: the OMP_WAIT_POLICY={policy} measurement failed: {last}")
        rows += json.loads(done.stdout.strip().splitlines()[-1])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None, help="threads of the main measurement"
                                                                  " (default: torch's, as training uses)")
    parser.add_argument("--thread-counts", type=int, nargs="+", default=None,
                        help="thread counts to combine with each policy (default: 1 and torch's default)")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES,
                        help="OpenMP wait policies to try ('default': unset)")
    parser.add_argument("--no-combinations", action="store_true", help="only the main measurement")
    parser.add_argument("--stack-sizes", type=int, nargs="+", default=[1, 4, 16],
                        help="K of the stacked compiled measurements (default 1 4 16)")
    parser.add_argument("--no-compiled", action="store_true", help="skip the compiled and stacked measurements")
    parser.add_argument("--clock", choices=CLOCKS, default="wall",
                        help="time durations as wall time (default) or as this process's CPU time, which other"
                             " processes on the cores inflate far less")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="the tests' tiny configuration: checks the benchmark runs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    default_threads = torch.get_num_threads()
    thread_counts = args.thread_counts or sorted({1, default_threads})
    if args.child:
        child(thread_counts, args.reps, args.tiny)
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    config, model, optimizer, stream, tokens, answers, fused_step = paper_step_setup(args.tiny)

    def naive_step():
        loss = F.cross_entropy(model(tokens)[:, -1], answers)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    naive = time_it(naive_step, args.reps)
    fused = time_it(lambda: fused_step(False), args.reps)
    fused_bf16 = time_it(lambda: fused_step(True), args.reps)

    # Data: a fresh stream per measurement so chunk generation is included, amortised per batch.
    chunk = stream.chunk_steps
    start = clock()
    fresh = TrainStream(config.task, config.train.batch_size, seed=7)
    for step in range(1, 3 * chunk + 1):
        fresh.batch(step)
    data = (clock() - start) / (3 * chunk)

    evaluation = time_it(lambda: (pool_accuracies(model), all_measures(model, with_probe=False)), 5)
    probe = time_it(lambda: all_measures(model, with_probe=True), 3) - time_it(
        lambda: all_measures(model, with_probe=False), 3)
    steps, evals = config.train.steps, config.train.steps // config.train.eval_every + 1
    probes = config.train.steps // config.train.probe_every + 1

    def projected(step_s: float, compile_s: float = 0.0, k: int = 1) -> float:
        """Seconds of one paper run: its steps, data, evaluations and probes, and its share of compiling."""
        return steps * (step_s + data) + evals * evaluation + probes * max(probe, 0.0) + compile_s / k

    def per_cpu_hour(seconds: float) -> float:  # CPU time already counts every thread
        return round(3600 / (seconds * (torch.get_num_threads() if args.clock == "wall" else 1)), 2)

    projected_s = projected(fused)

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
        "default_threads": default_threads,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
        "bf16_native": native_bf16(torch.device("cpu")),
        "clock": args.clock,
    }
    if not args.no_compiled:
        compiled, compile_s = compiled_step_ms(config, args.reps, None)
        per_hour = {"naive": per_cpu_hour(projected(naive)), "eager_fused": per_cpu_hour(projected_s),
                    "compiled_fused": per_cpu_hour(projected(compiled, compile_s))}
        stacked = []
        for k in args.stack_sizes:
            step_s, k_compile_s = compiled_step_ms(config, max(3, args.reps // k), k)
            per_hour[f"stacked_{k}"] = per_cpu_hour(projected(step_s / k, k_compile_s, k))
            stacked.append({"k": k, "ms_per_step": round(step_s * 1e3, 2), "compile_s": round(k_compile_s, 1),
                            "ms_per_run_step": round(step_s / k * 1e3, 2),
                            "runs_per_cpu_hour": per_hour[f"stacked_{k}"]})
        fastest = min([fused, compiled] + [row["ms_per_run_step"] / 1e3 for row in stacked])
        result.update(compiled_fp32_ms=round(compiled * 1e3, 2), compile_s=round(compile_s, 1), stacked=stacked,
                      runs_per_cpu_hour=per_hour, ratio_fastest_fused=round(naive / fastest, 2),
                      stacked_gain=round(max([r["runs_per_cpu_hour"] for r in stacked], default=math.nan)
                                         / per_hour["eager_fused"], 2))
    rate = gemm_gflops()
    floor = 3 * matmul_flops(config, True) / (rate * 1e9)  # the step's products alone, at that rate
    for_2x = (projected_s / 2 - projected(0.0)) / steps  # the step at which a run takes half the eager one's time
    result.update(gemm_gflops=round(rate, 1), floor_step_ms=round(floor * 1e3, 2),
                  ceiling_gain=round(per_cpu_hour(projected(floor)) / per_cpu_hour(projected_s), 2),
                  step_for_2x_ms=round(for_2x * 1e3, 2))
    if not args.no_combinations:
        rows = combinations(thread_counts, args.policies, args.reps, args.tiny)
        result["combinations"] = rows
        result["fastest"] = min(rows, key=lambda r: r["fused_fp32_ms"])
    if args.json:
        print(json.dumps(result))
        return
    print(f"threads {result['threads']}, OMP_WAIT_POLICY {result['omp_wait_policy']},"
          f" batch {config.train.batch_size}, median of {args.reps} steps, {args.clock} clock")
    print(f"naive fp32 step  {result['naive_fp32_ms']:8.2f} ms  ({result['naive_gflops']} GFLOP/s, fwd+bwd ≈ 3× fwd)")
    print(f"fused fp32 step  {result['fused_fp32_ms']:8.2f} ms  ({result['fused_gflops']} GFLOP/s)")
    print(f"fused bf16 step  {result['fused_bf16_ms']:8.2f} ms  (native bf16 on this CPU: "
          f"{'yes' if result['bf16_native'] else 'no; --bf16 training falls back to fp32'})")
    print(f"ratio naive/fused (fp32)   {result['ratio_fp32']:.2f}×")
    print(f"data generation            {result['data_ms_per_batch']:.3f} ms/batch = {100 * result['data_share']:.1f} % of a step")
    print(f"evaluation (pools+measures) {result['eval_ms']:.0f} ms, {evals} times per run")
    print(f"projected 40,000-step paper run: {result['projected_paper_run_min']} min")
    if "stacked" in result:
        hours = result["runs_per_cpu_hour"]
        print(f"compiled fused step {result['compiled_fp32_ms']:8.2f} ms  (compiling took {result['compile_s']} s)")
        for row in result["stacked"]:
            print(f"stacked K={row['k']:<3} compiled {row['ms_per_step']:8.2f} ms/step ="
                  f" {row['ms_per_run_step']:6.2f} ms per run step  (compiling {row['compile_s']} s)")
        print("paper runs (40,000 steps, evaluation included) per CPU-hour: "
              + ", ".join(f"{name} {value}" for name, value in hours.items()))
        print(f"fastest fused step vs naive {result['ratio_fastest_fused']:.2f}× (target ≥ 10× at one thread);"
              f" best stacked vs eager fused runs per CPU-hour {result['stacked_gain']:.2f}× (target ≥ 2×)")
    floor, needed = result["floor_step_ms"], result["step_for_2x_ms"]
    print(f"the step's matrix products alone at this process's large-product rate ({result['gemm_gflops']} GFLOP/s):"
          f" {floor:.2f} ms; with today's data and evaluation that is {result['ceiling_gain']:.2f}× the eager fused"
          f" step's runs per CPU-hour, the most any faster fp32 step gives; 2× needs a step of {needed:.2f} ms"
          f" ({needed / floor:.2f}× the products alone)")
    if "combinations" in result:
        print("fused fp32 step by threads and OMP_WAIT_POLICY (each policy in a fresh process):")
        for row in result["combinations"]:
            mark = "  <- fastest" if row is result["fastest"] else ""
            print(f"  {row['threads']:>2} thread(s)  {row['omp_wait_policy']:<8} {row['fused_fp32_ms']:8.2f} ms{mark}")


if __name__ == "__main__":
    main()
