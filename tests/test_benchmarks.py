"""Every benchmark the README documents runs, at a tiny size: `train_step.py` (its compiled and stacked
measurements with torch.compile standing in as the identity, compiling being minutes on a busy CPU, and as a
separate process with --no-compiled), `data_stream.py` and `gpu_stack.py` (its CPU rows; on a GPU, its GPU rows)."""
from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run(script: str, *args: str, timeout: int = 600) -> dict:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args, "--json"], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout[done.stdout.index("{"):])


def test_train_step_measures_every_path_of_the_readme_s_command(monkeypatch, capsys):
    """The README's `python benchmarks/train_step.py` (every measurement, the stacked steps included: it once
    stopped on StackedStep's signature), on the tiny configuration, in this process."""
    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: fn)  # the compiled paths' code, without compiling
    monkeypatch.setattr(sys, "argv", ["train_step.py", "--tiny", "--reps", "2", "--stack-sizes", "1", "2",
                                      "--thread-counts", "1", "--policies", "default", "--json"])
    runpy.run_path(str(BENCHMARKS / "train_step.py"), run_name="__main__")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["naive_fp32_ms"] > 0 and result["fused_fp32_ms"] > 0 and result["compiled_fp32_ms"] > 0
    assert [row["k"] for row in result["stacked"]] == [1, 2] and all(r["ms_per_run_step"] > 0 for r in result["stacked"])
    assert set(result["runs_per_cpu_hour"]) == {"naive", "eager_fused", "compiled_fused", "stacked_1", "stacked_2"}
    assert [(r["threads"], r["omp_wait_policy"]) for r in result["combinations"]] == [(1, "default")]


def test_train_step_runs_as_a_command():
    result = run("train_step.py", "--tiny", "--reps", "2", "--no-compiled", "--no-combinations", timeout=300)
    assert result["ratio_fp32"] > 0 and 0 < result["data_share"] < 1 and "stacked" not in result


def test_data_stream_times_both_generators_and_the_prefetcher():
    result = run("data_stream.py", "--chunks", "1", "--streams", "2", "--workers", "1", "--prefetch-chunks", "1",
                 "--no-threads")
    assert set(result["ms_per_batch"]) == {"reference", "current", "draws_only"} and result["speedup"] > 0
    assert [(r["streams"], r["workers"]) for r in result["prefetch"]] == [(2, 1)] and result["prefetch"][0]["steps_per_s"] > 0


def test_gpu_stack_measures_its_cpu_rows():
    result = run("gpu_stack.py", "--cpu-only", "--tiny", "--cpu-ks", "1", "--cpu-steps", "11", "--data-workers", "0")
    row, = result["results"]
    assert (row["device"], row["k"], row["steps"]) == ("cpu", 1, 11) and row["run_steps_per_s"] > 0
    assert result["gpu"] is None


def test_gpu_stack_without_a_gpu_says_so_in_one_line():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = subprocess.run([sys.executable, str(BENCHMARKS / "gpu_stack.py")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--cpu-only" in done.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch sees none here)")
def test_gpu_stack_measures_its_gpu_rows():
    result = run("gpu_stack.py", "--tiny", "--ks", "1", "2", "--steps", "11", "--cpu-ks", "--data-workers", "0")
    assert [(r["device"], r["k"]) for r in result["results"]] == [("cuda", 1), ("cuda", 2)] and result["gpu"]
