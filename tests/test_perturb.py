"""Replicates of a cell: the one-time nudge (jitter at jitter_step), the per-step gradient noise, and the early stop
once composition holds. Unperturbed runs keep their hashes; perturbed ones are reproducible and resume exactly."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from assignadd_core.core import trainer
from assignadd_core.experiments import perturb, training
from assignadd_core.core.config import ConfigError, RunConfig
from assignadd_core.core.model import initial_model
from assignadd_core.core.run_folder import Run
from test_trainer import assert_same_weights, final_weights, interrupt_at, metric_rows

SEED42_HASH = "35c0d33b9461"  # the committed seed42's config hash, from before these fields existed


def test_unperturbed_configs_keep_their_hash():
    paper = RunConfig()
    assert paper.hash() == SEED42_HASH
    # settings that do nothing without a size take their defaults: the same config, the same hash
    same = paper.replace(jitter=0, jitter_step=0, grad_noise=0.0, perturb_seed=7, stop_when_composed=0)
    assert same == paper and same.hash() == SEED42_HASH
    assert paper.replace(jitter=0.0, jitter_step=500).hash() == SEED42_HASH
    assert not paper.interventions
    moved = {paper.replace(jitter=1e-4).hash(), paper.replace(jitter=1e-4, perturb_seed=1).hash(),
             paper.replace(jitter=1e-4, jitter_step=1000).hash(), paper.replace(grad_noise=1e-7).hash(),
             paper.replace(stop_when_composed=5).hash()}
    assert len(moved) == 5 and SEED42_HASH not in moved
    assert paper.replace(grad_noise=1e-5).interventions


@pytest.mark.parametrize("overrides, message", [
    ({"jitter": -1e-3}, "jitter must be a finite number >= 0"),
    ({"jitter": float("inf")}, "jitter must be a finite number >= 0"),
    ({"grad_noise": "big"}, "grad_noise must be a finite number >= 0"),
    ({"jitter": 1e-4, "jitter_step": 1.5}, "jitter_step must be an integer >= 0"),
    ({"jitter": 1e-4, "jitter_step": 40_000}, "jitter_step must come before the last step"),
    ({"perturb_seed": -2}, "perturb_seed must be an integer >= 0"),
    ({"stop_when_composed": True}, "stop_when_composed must be an integer >= 0"),
])
def test_bad_perturbation_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig().replace(**overrides)


def test_the_nudge_has_the_stated_relative_size_and_its_own_seed(tiny_config):
    base = initial_model(tiny_config).state_dict()
    nudged = {}
    for seed in (1, 2):
        config = tiny_config.replace(jitter=1e-3, perturb_seed=seed)
        model = initial_model(config)
        perturb.jitter(model, config)
        nudged[seed] = model.state_dict()
    for name, weight in base.items():
        for seed in (1, 2):
            relative = (nudged[seed][name] - weight).std() / weight.std()
            assert 0.6e-3 < float(relative) < 1.4e-3, (name, float(relative))
        assert not torch.equal(nudged[1][name], nudged[2][name])  # two jitter seeds, two replicates
    again = initial_model(tiny_config.replace(jitter=1e-3, perturb_seed=1))
    perturb.jitter(again, tiny_config.replace(jitter=1e-3, perturb_seed=1))
    assert_same_weights(again.state_dict(), nudged[1])  # a pure function of the config


def test_an_unperturbed_run_trains_as_before(tiny_config, tiny_run, tmp_path):
    """jitter = 0 with another perturb seed is the very same run: bit-identical metrics and weights."""
    run = training.train(tiny_config.replace(perturb_seed=9, jitter=0.0), tmp_path / "same", progress=False)
    pd.testing.assert_frame_equal(metric_rows(run), metric_rows(tiny_run))
    assert_same_weights(final_weights(run), final_weights(tiny_run))


@pytest.mark.parametrize("overrides", [{"jitter": 1e-3}, {"jitter": 1e-2, "jitter_step": 15},
                                       {"grad_noise": 1e-3, "perturb_seed": 3}])
def test_a_perturbed_run_moves_and_resumes_to_an_uninterrupted_one(tiny_config, tiny_run, tmp_path, monkeypatch,
                                                                   overrides):
    config = tiny_config.replace(**overrides)
    straight = training.train(config, tmp_path / "straight", progress=False)
    plain = final_weights(tiny_run)
    assert any(not torch.equal(weight, plain[name]) for name, weight in final_weights(straight).items())
    assert_resumes_to(straight, config, tmp_path / "killed", monkeypatch)


def assert_resumes_to(straight, config, path, monkeypatch):
    """A run of `config` killed at step 17 (between the evals at 11 and 21) resumes to `straight`, bit for bit."""
    interrupt_at(monkeypatch, "train_step", lambda call, args: call == 17)
    with pytest.raises(KeyboardInterrupt):
        training.train(config, path, progress=False)
    monkeypatch.undo()
    assert Run(path).metrics()["step"].tolist() == [1, 11]
    resumed = training.train(config, path, progress=False)
    pd.testing.assert_frame_equal(metric_rows(resumed), metric_rows(straight))
    assert_same_weights(final_weights(resumed), final_weights(straight))


def test_the_nudge_at_a_later_step_leaves_the_steps_before_it_alone(tiny_config, tiny_run, tmp_path):
    run = training.train(tiny_config.replace(jitter=1e-2, jitter_step=15), tmp_path / "late", progress=False)
    mine, plain = metric_rows(run).set_index("step"), metric_rows(tiny_run).set_index("step")
    pd.testing.assert_frame_equal(mine.loc[[1, 11]], plain.loc[[1, 11]])  # before step 15: the same run
    assert not mine.loc[[21, 30]].equals(plain.loc[[21, 30]])


def test_stop_when_composed_stops_once_composition_held_and_says_so(tiny_config, tmp_path, monkeypatch):
    """With 1-var train forced to 0.95 from step 11 on, a run asked to stop after 2 composed evals ends at step 21;
    resuming the stopped run trains nothing more."""
    real = trainer.eval_row

    def fake_row(model, config, dev, bf16, step, loss, logged):
        row = real(model, config, dev, bf16, step, loss, logged)
        return {**row, "1var_train": 0.95 if step >= 11 else 0.2}

    monkeypatch.setattr(trainer, "eval_row", fake_row)
    config = tiny_config.replace(stop_when_composed=2)
    run = training.train(config, tmp_path / "stops", progress=False)
    assert run.metrics()["step"].tolist() == [1, 11, 21]
    final = run.final()
    assert (final["last_step"], final["step_budget"], final["stopped_early"]) == (21, 30, "composed")
    steps = interrupt_at(monkeypatch, "train_step", lambda call, args: False)
    training.train(config, tmp_path / "stops", progress=False)
    assert steps == []
    stuck = training.train(tiny_config.replace(stop_when_composed=5), tmp_path / "stuck", progress=False)
    assert stuck.final()["last_step"] == 30 and stuck.final()["stopped_early"] is None  # never held 5 evals


def test_a_stack_takes_perturbed_runs_beside_plain_ones_but_not_another_shape(tiny_config):
    """Nudges apply per run inside a stack (test_stacked checks them bit-identical to runs alone); a stack still
    refuses runs of another shape, in one line."""
    from assignadd_core.experiments import stacked
    stacked.check_stackable([tiny_config, tiny_config.replace(jitter=1e-3)])
    with pytest.raises(ConfigError, match="must share"):
        stacked.check_stackable([tiny_config, tiny_config.replace(d_model=tiny_config.model.d_model * 2)])


def test_a_run_waits_for_its_nudge_before_it_stops(tiny_config, tmp_path, monkeypatch):
    """Composed from step 1 on, a run nudged after step 15 and asked to stop after 2 composed evals stops at 21,
    the second composed eval after the nudge's step, not at 11: a late nudge is always applied."""
    real = trainer.eval_row
    monkeypatch.setattr(trainer, "eval_row", lambda *args: {**real(*args), "1var_train": 0.95})
    run = training.train(tiny_config.replace(stop_when_composed=2, jitter=1e-3, jitter_step=15), tmp_path / "n",
                        progress=False)
    assert run.final()["last_step"] == 21
    plain = training.train(tiny_config.replace(stop_when_composed=2), tmp_path / "p", progress=False)
    assert plain.final()["last_step"] == 11
