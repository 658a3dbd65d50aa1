"""Trainer and run store: metrics, final.json, bit-identical reruns, kill-and-resume, train_or_load."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import torch

from assignadd_core.core import trainer
from assignadd_core.experiments import named_runs, training
from assignadd_core.core.checkpoint import load_model
from assignadd_core.core.config import ConfigError
from assignadd_core.core.data import EXACT_NAMES, POOL_NAMES
from assignadd_core.core.evaluation import evaluate
from assignadd_core.measure.measures import MEASURE_NAMES
from assignadd_core.core.model import initial_model
from assignadd_core.core.run_folder import Run
from assignadd_core.experiments.named_runs import train_or_load

pytestmark = pytest.mark.usefixtures("single_thread")
EVAL_STEPS = [1, 11, 21, 30]  # steps 1, 1 + eval_every, ... and the last of 30


def metric_rows(run: Run) -> pd.DataFrame:
    """Everything in metrics.csv except the wall clock."""
    return run.metrics().drop(columns="elapsed_s")


def final_weights(run: Run) -> dict[str, torch.Tensor]:
    return load_model(run.model_path).state_dict()


def assert_same_weights(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_metrics_columns_and_rows(tiny_run):
    text = tiny_run.metrics_path.read_text().splitlines()
    assert text[0].split(",") == ["step", "loss", *POOL_NAMES, *MEASURE_NAMES, "elapsed_s"]
    metrics = tiny_run.metrics()
    assert metrics["step"].tolist() == EVAL_STEPS
    for name in (*POOL_NAMES, *MEASURE_NAMES[:6]):
        assert metrics[name].between(0, 1).all(), name
    assert (metrics["loss"] > 0).all() and metrics["elapsed_s"].is_monotonic_increasing
    # the probe (measure 7) runs at steps 1, 1 + probe_every (= 21) and the last step only
    assert metrics["m7_probe_var_identity"].notna().tolist() == [True, False, True, True]
    assert tiny_run.checkpoint_steps() == EVAL_STEPS


def test_final_json(tiny_run, tiny_config):
    final = tiny_run.final()
    assert final["last_step"] == 30 and final["device"] == "cpu"
    assert list(final["exact"]) == list(EXACT_NAMES) and list(final["pools"]) == list(POOL_NAMES)
    for key in ("wall_time_s", "torch", "transformer_lens", "python", "git_commit"):
        assert key in final, key
    # the recorded numbers are those of the saved final model
    assert evaluate(tiny_run.load_model()) == {"pools": final["pools"], "exact": final["exact"]}
    # the last metrics row was taken from the same weights
    assert tiny_run.metrics().iloc[-1][list(POOL_NAMES)].tolist() == pytest.approx(
        [final["pools"][n] for n in POOL_NAMES], abs=1e-6)
    assert tiny_run.config == tiny_config


def test_training_lowers_the_loss(tiny_config, tmp_path):
    run = training.train(tiny_config.replace(steps=150, lr=1e-2, eval_every=50), tmp_path / "r", progress=False)
    metrics = run.metrics()
    assert metrics["loss"].iloc[-1] < metrics["loss"].iloc[0] - 0.15  # from about log 7 = 1.95
    assert metrics["0var_train"].iloc[-1] > metrics["0var_train"].iloc[0] + 0.15


def test_rerun_is_bit_identical(tiny_config, tiny_run, tmp_path):
    again = training.train(tiny_config, tmp_path / "again", progress=False)
    pd.testing.assert_frame_equal(metric_rows(again), metric_rows(tiny_run))
    assert_same_weights(final_weights(again), final_weights(tiny_run))
    for step in EVAL_STEPS:
        assert_same_weights(again.load_model(step).state_dict(), tiny_run.load_model(step).state_dict())


def test_another_seed_gives_another_run(tiny_config, tiny_run, tmp_path):
    other = training.train(tiny_config.replace(seed=7), tmp_path / "other", progress=False)
    assert not torch.equal(final_weights(other)["unembed.W_U"], final_weights(tiny_run)["unembed.W_U"])


def interrupt_at(monkeypatch, function: str, when) -> list[int]:
    """Make trainer.<function> raise KeyboardInterrupt on the call where when(call number, args) holds
    (as Ctrl-C or a kill would); returns the list of call numbers seen."""
    real = getattr(trainer, function)
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(len(calls) + 1)
        if when(len(calls), args):
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, function, wrapper)
    return calls


def test_kill_and_resume_matches_a_straight_run(tiny_config, tiny_run, tmp_path, monkeypatch):
    path = tmp_path / "killed"
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 17)  # during step 17
    with pytest.raises(KeyboardInterrupt):
        training.train(tiny_config, path, progress=False)
    monkeypatch.undo()
    run = Run(path)
    assert not run.is_complete()
    assert run.metrics()["step"].tolist() == [1, 11]
    assert json.loads((run.resume_dir / "state.json").read_text())["step"] == 11

    steps_trained = interrupt_at(monkeypatch, "train_step", lambda call, args: False)
    resumed = training.train(tiny_config, path, progress=False)
    assert len(steps_trained) == 30 - 11  # it resumed from step 11, not from scratch
    pd.testing.assert_frame_equal(metric_rows(resumed), metric_rows(tiny_run))
    assert_same_weights(final_weights(resumed), final_weights(tiny_run))
    assert resumed.final()["exact"] == tiny_run.final()["exact"]


def test_kill_between_metrics_row_and_saved_state_resumes_cleanly(tiny_config, tiny_run, tmp_path, monkeypatch):
    """Killed after the step-21 row is written but before its state is saved: the resume drops
    that row and recomputes it, so no row is doubled."""
    path = tmp_path / "killed"
    interrupt_at(monkeypatch, "save_resume_state", lambda call, args: args[3] == 21)
    with pytest.raises(KeyboardInterrupt):
        training.train(tiny_config, path, progress=False)
    monkeypatch.undo()
    assert Run(path).metrics()["step"].tolist() == [1, 11, 21]
    resumed = training.train(tiny_config, path, progress=False)
    pd.testing.assert_frame_equal(metric_rows(resumed), metric_rows(tiny_run))
    assert_same_weights(final_weights(resumed), final_weights(tiny_run))


@pytest.mark.parametrize("seed", [43, 46, 47])
def test_committed_resume_states_load(seed):
    """runs/seed43/resume/ (converted from the earlier flat format, tensors unchanged), seed46's and seed47's load:
    the final weights and AdamW moments of every parameter."""
    run = Run(Path(__file__).resolve().parent.parent / "runs" / f"seed{seed}")
    model = initial_model(run.config)
    optimizer = trainer.make_optimizer(model, run.config)
    info = trainer.load_resume_state(run, model, optimizer)
    assert info["step"] == run.config.train.steps
    assert_same_weights(model.state_dict(), final_weights(run))
    state = optimizer.state_dict()["state"]
    assert len(state) == len(list(model.parameters()))
    assert all(float(s["step"]) == info["step"] and s["exp_avg_sq"].min() >= 0 for s in state.values())


def test_train_refuses_a_run_dir_with_another_config(tiny_config, tiny_run):
    with pytest.raises(ConfigError, match="another config"):
        training.train(tiny_config.replace(seed=5), tiny_run.path, progress=False)


def test_train_or_load_loads_a_finished_run_without_training(tiny_config, tiny_run, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("train_or_load trained a finished run")

    monkeypatch.setattr(named_runs, "train", no_training)
    run = train_or_load(tiny_config, name=tiny_run.name, root=tiny_run.path.parent, progress=False)
    assert run.path == tiny_run.path
    with pytest.raises(ConfigError) as excinfo:
        train_or_load(tiny_config.replace(lr=5e-4), name=tiny_run.name, root=tiny_run.path.parent)
    assert "another config" in str(excinfo.value) and "\n" not in str(excinfo.value)


def test_train_or_load_names_runs_by_config_hash(tiny_config, tmp_path):
    config = tiny_config.replace(steps=3, eval_every=2)
    run = train_or_load(config, root=tmp_path, progress=False)
    assert run.name == config.hash() and run.is_complete()
    assert run.metrics()["step"].tolist() == [1, 3]


def test_keep_no_checkpoints(tiny_config, tmp_path):
    run = training.train(tiny_config.replace(steps=3, eval_every=2), tmp_path / "r", progress=False,
                        keep_checkpoints="none")
    assert run.checkpoint_steps() == [] and run.is_complete()


def test_trains_even_when_gradients_are_globally_off(tiny_config, tmp_path):
    import torch

    from assignadd_core.experiments.training import train
    with torch.no_grad():
        run = train(tiny_config.replace(steps=3, eval_every=2), tmp_path / "r", progress=False,
                    keep_checkpoints="none")
    assert run.is_complete()


# ---------------------------------------------------------------------------- speed defaults
def test_final_json_records_threads_wait_policy_and_bf16(tiny_run):
    final = tiny_run.final()
    assert final["threads"] == 1  # the single_thread fixture's setting, as the run saw it
    assert final["omp_wait_policy"] == os.environ.get("OMP_WAIT_POLICY", "default")
    assert final["bf16_used"] is False and final["bf16_steps"] == 0


def test_bf16_without_native_support_trains_fp32_after_one_warning(tiny_config, tiny_run, tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.setattr(trainer, "native_bf16", lambda device: False)
    run = training.train(tiny_config.replace(bf16=True), tmp_path / "r", progress=False)
    err = capsys.readouterr().err
    assert err.startswith("warning: bf16 requested") and err.count("\n") == 1
    assert run.config.train.bf16 and run.final()["bf16_used"] is False and run.final()["bf16_steps"] == 0
    pd.testing.assert_frame_equal(metric_rows(run), metric_rows(tiny_run))  # exactly the fp32 run


def test_bf16_with_native_support_autocasts(tiny_config, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(trainer, "native_bf16", lambda device: True)
    run = training.train(tiny_config.replace(bf16=True, steps=3, eval_every=2), tmp_path / "r", progress=False)
    assert capsys.readouterr().err == ""
    assert run.final()["bf16_used"] is True and run.final()["bf16_steps"] == 3


def test_native_bf16_probe_needs_torchs_own_check():
    cpu = trainer.native_bf16(torch.device("cpu"))
    assert isinstance(cpu, bool)
    if cpu:
        assert torch.ops.mkldnn._is_mkldnn_bf16_supported()


def test_no_passive_wait_policy_by_default():
    """A passive OpenMP wait made a 2-thread step 2-3x slower: neither the package nor `make` sets it;
    only several single-thread sweep workers get it."""
    import subprocess
    import sys
    from pathlib import Path

    from assignadd_core.experiments.sweep import passive_wait
    repo = Path(__file__).resolve().parent.parent
    assert "OMP_WAIT_POLICY" not in "".join(line for line in (repo / "Makefile").read_text().splitlines(True)
                                            if not line.lstrip().startswith("#"))
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run([sys.executable, "-c", "import os, assignadd_core; print(os.environ.get('OMP_WAIT_POLICY'))"],
                          capture_output=True, text=True, env=env, cwd=repo, timeout=60)
    assert done.stdout.strip() == "None", done.stderr
    if "OMP_WAIT_POLICY" not in os.environ:
        assert passive_wait(threads=1, workers=2)
    assert not passive_wait(threads=2, workers=2) and not passive_wait(threads=1, workers=1)
