"""The committed seed-42 run comes from this code: retraining its first steps reproduces it.

Different CPUs and thread counts round floating point differently, and 200 AdamW steps amplify those
rounding differences chaotically: retrained on another processor (Intel AVX-512 against the committed
run's AMD AVX2), the weights after step 201 differ by 2-13 % per tensor, as much as with a wrong beta2.
So the weights are compared after step 1 only (1e-5 relative: init, data and the first update), and the
optimizer is checked through the training loss at step 201, which is stable to rounding but not to the
optimizer's settings. Measured on that other processor (loss at step 201, relative to the committed run):
this code 3.2e-5 (1 thread) and 9.9e-5 (2 threads); beta2 0.99 instead of 0.999 1.5e-3, beta1 0.85 2.9e-3,
lr 1.1e-3 2.6e-3, eps 1e-6 7.6e-3 (weight decay 0.01 instead of 0.02: 5.7e-5, too small to see this early).
Hence `LOSS_TOLERANCE` = 5e-4 at step 201. Pool accuracies get 0.01 absolute (20 of 2,000 sequences);
the progress measures are argmaxes and top-2s over near-random maps this early, where rounding flips
single rows, so they get 0.1. The checkpoint is part of the committed run: its absence fails the test.
"""
import math

import pandas as pd
import torch

from assignadd_core.core.data import POOL_NAMES
from assignadd_core.core.run_folder import DEFAULT_ROOT, Run
from assignadd_core.experiments.training import train

COMMITTED = Run(DEFAULT_ROOT / "seed42")
CHECK_STEPS = 201  # eval rows at steps 1, 101, 201
WEIGHT_TOLERANCE = {1: 1e-5}  # relative, per parameter tensor
LOSS_TOLERANCE = {101: 1e-4, CHECK_STEPS: 5e-4}  # relative


def test_first_steps_of_committed_run_reproduce(tmp_path):
    assert COMMITTED.metrics_path.is_file(), "the committed run runs/seed42 is missing"
    missing = [s for s in WEIGHT_TOLERANCE if s not in COMMITTED.checkpoint_steps()]
    assert not missing, f"runs/seed42 lacks the checkpoint(s) at step(s) {missing} this test compares against"
    committed = COMMITTED.metrics().set_index("step")
    config = COMMITTED.config.replace(steps=CHECK_STEPS)  # same seed, data and init: steps 1..201 are identical
    # with the committed run's thread count: another count sums in another order, and AdamW turns those
    # rounding differences on near-zero gradients into whole steps (4e-2 relative at step 201 with 2 threads)
    before = torch.get_num_threads()
    torch.set_num_threads(int(COMMITTED.final()["threads"]))
    try:
        # and in the mode it recorded: a compiled step rounds differently from the eager one
        mode = "on" if COMMITTED.final().get("compiled") else "off"
        fresh_run = train(config, tmp_path / "retrain", progress=False, keep_checkpoints="all", compile=mode)
    finally:
        torch.set_num_threads(before)
    fresh = fresh_run.metrics().set_index("step")
    assert list(fresh.index) == [1, 101, 201]

    for step, tolerance in WEIGHT_TOLERANCE.items():
        ours, theirs = fresh_run.load_model(step).state_dict(), COMMITTED.load_model(step).state_dict()
        for name, value in theirs.items():
            change = float((ours[name] - value).norm() / value.norm())
            assert change <= tolerance, f"step {step} {name}: relative difference {change:.2e}"

    for step in fresh.index:
        for column in fresh.columns:
            if column == "elapsed_s":
                continue
            ours, theirs = fresh.loc[step, column], committed.loc[step, column]
            if pd.isna(theirs):  # the probe runs every 1,000 steps (and at a run's last step: 201 here)
                assert column.startswith("m7"), (step, column)
                continue
            tolerance = (LOSS_TOLERANCE.get(step, 1e-5) * abs(theirs) if column == "loss"
                         else 0.01 if column in POOL_NAMES else 0.1)
            assert math.isclose(ours, theirs, abs_tol=tolerance), f"step {step} {column}: {ours} vs {theirs}"
