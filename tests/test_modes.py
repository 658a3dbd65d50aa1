"""How the steps are computed, apart from the run's settings: single stages compiled alone (the mode study's
bisection) and an fp64 reference. Neither enters the config or its hash; final.json records both."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from assignadd_core.core.loss import fused_loss
from assignadd_core.core import trainer
from assignadd_core.experiments import training
from assignadd_core.core.config import ConfigError
from assignadd_core.core.data import TrainStream
from assignadd_core.core.model import initial_model
from assignadd_core.core.run_folder import Run
from test_trainer import assert_same_weights, final_weights, interrupt_at, metric_rows
from tiny import torch_threads


def test_stage_settings_are_parsed_and_refused_in_one_line():
    assert training.compile_stages("auto") is None and training.compile_stages("mlp,unembed") == ("mlp", "unembed")
    with pytest.raises(ConfigError, match="comma-separated list of the stages attention, mlp, unembed"):
        training.compile_stages("mlp,softmax")
    with pytest.raises(ConfigError, match="precision must be one of fp32, fp64"):
        training.train(trainer.RunConfig(), "nowhere", precision="fp16")


def test_the_staged_loss_uncompiled_is_the_fused_loss(tiny_config):
    model = initial_model(tiny_config)
    tokens, answers = TrainStream(tiny_config.task, 32, 1).batch(1)
    staged = training.StagedLoss(model, tiny_config, torch.device("cpu"), False, ())
    assert torch.equal(staged(tokens, answers), fused_loss(model, tokens, answers, tiny_config,
                                                                  torch.device("cpu")))


def test_one_stage_compiled_trains_close_to_eager(tiny_config, tiny_run, tmp_path):
    with torch_threads(1):
        run = training.train(tiny_config, tmp_path / "mlp", progress=False, compile="mlp")
    final = run.final()
    assert final["compile"] == "mlp" and final["compiled"] and final["compiled_steps"] == 30
    mine, eager = metric_rows(run), metric_rows(tiny_run)
    assert (mine["loss"] - eager["loss"]).abs().max() < 1e-3  # rounding apart, the same run


def test_an_fp64_run_is_close_to_fp32_and_resumes_exactly(tiny_config, tiny_run, tmp_path, monkeypatch):
    straight = training.train(tiny_config, tmp_path / "fp64", progress=False, precision="fp64")
    assert straight.final()["precision"] == "fp64"
    assert (metric_rows(straight)["loss"] - metric_rows(tiny_run)["loss"]).abs().max() < 1e-3
    assert all(w.dtype == torch.float32 for w in final_weights(straight).values())  # saved models stay fp32
    path = tmp_path / "killed"
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 17)
    with pytest.raises(KeyboardInterrupt):
        training.train(tiny_config, path, progress=False, precision="fp64")
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="resume it in that precision"):
        training.train(tiny_config, path, progress=False)  # an fp64 state is not resumed in fp32
    resumed = training.train(tiny_config, path, progress=False, precision="fp64")
    pd.testing.assert_frame_equal(metric_rows(resumed), metric_rows(straight))
    assert_same_weights(final_weights(resumed), final_weights(straight))
    assert Run(path).final()["precision"] == "fp64"


def test_the_mode_study_trains_its_modes_and_measures_them(tmp_path, monkeypatch):
    """On a tiny config: every mode trains into its folder (same config), the distances and step differences are
    written, compiled-vs-eager differences are small but not all zero."""
    from assignadd_core.experiments import mode_study
    from tiny import TINY
    monkeypatch.setattr(mode_study, "study_config", lambda seed=58: trainer.RunConfig().replace(**TINY, seed=seed))
    monkeypatch.setattr(mode_study, "study_plan", lambda: mode_study.Plan(58, TINY["steps"], (1, 11), 400))
    runs = mode_study.run_modes(5, only=["eager", "compiled", "fp64"], root=tmp_path, progress=False)
    assert [r.final()["precision"] for r in runs] == ["fp32", "fp32", "fp64"] and runs[1].final()["compiled"]
    assert len({r.config.hash() for r in runs}) == 1
    out = mode_study.measure(5, root=tmp_path)
    distances = pd.read_csv(out["distances"])
    assert list(distances["step"]) == [1, 11, 21, 30] and (distances["compiled_vs_eager"] < 1e-2).all()
    diffs = pd.read_csv(out["step_differences"])
    assert list(diffs["batch_step"]) == [*range(2, 10), *range(12, 20)] and (diffs["relative_size"] < 1e-3).all()
    assert diffs["relative_size"].gt(0).any() and diffs["cosine_with_previous"].isna().sum() == 2
    table = mode_study.outcomes(5, root=tmp_path)
    assert list(table["mode"]) == ["eager", "compiled", "fp64"]
    with pytest.raises(ConfigError, match="unknown mode"):
        mode_study.run_modes(5, only=["turbo"], root=tmp_path)


def test_a_clone_without_checkpoints_replays_them_and_the_replay_is_the_run(tmp_path, monkeypatch):
    """Checkpoints are not committed: measure retrains the first steps of each mode with every checkpoint kept, and
    the replay's logged losses are its run's exactly (the step is deterministic, the learning rate constant)."""
    import shutil

    from assignadd_core.experiments import mode_study
    from tiny import TINY
    monkeypatch.setattr(mode_study, "study_config", lambda seed=58: trainer.RunConfig().replace(**TINY, seed=seed))
    monkeypatch.setattr(mode_study, "study_plan", lambda: mode_study.Plan(58, TINY["steps"], (1, 11), 21))
    runs = mode_study.run_modes(5, only=["eager", "compiled"], root=tmp_path, progress=False)
    for run in runs:
        shutil.rmtree(run.checkpoint_dir)
    assert mode_study.replay(5, until=21, modes=("eager", "compiled"), root=tmp_path, progress=False) == {
        "eager": 0.0, "compiled": 0.0}
    distances = mode_study.weight_distances(5, pairs=(("compiled", "eager"),), root=tmp_path)
    assert list(distances["step"]) == [1, 11, 21] and (distances["compiled_vs_eager"] < 1e-2).all()
