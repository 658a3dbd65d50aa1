"""C10's causal test: steering the identity component of the layer-2 QK update (`steer`). The steered component
has the stated share of each update, the sham leaves the identity component alone, runs without steering keep
their hashes, and a steered run is reproducible and resumes exactly."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from assignadd_core.loss import fused_loss
from assignadd_core import steer, trainer
from assignadd_core.config import ConfigError, RunConfig
from assignadd_core.model import initial_model
from test_perturb import SEED42_HASH, assert_resumes_to
from test_trainer import final_weights, metric_rows


def one_step(config: RunConfig):
    """A model after one AdamW step, with W_QK2 from before the step (what `steer.steer` is handed)."""
    torch.manual_seed(0)
    model = initial_model(config)
    optimizer = trainer.make_optimizer(model, config)
    tokens = torch.randint(0, config.task.modulus, (8, 16))
    answers = torch.randint(0, config.task.modulus, (8,))
    loss = fused_loss(model, tokens, answers, config, torch.device("cpu"))
    loss.backward()
    before = steer.qk2(model)
    optimizer.step()
    return model, before


def component(model, before, direction) -> tuple[float, float]:
    update = steer.qk2(model) - before
    return float((update * direction).sum()), float(update.norm())


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_the_identity_component_of_the_update_is_set_to_its_share(share):
    config = RunConfig().replace(steer_from=1, steer_to=5, steer_share=share)
    model, before = one_step(config)
    identity = steer.identity_direction(model)
    free, size = component(model, before, identity)
    assert abs(free) > 1e-6 * size  # a free update has an identity component to remove
    steer.steer(model, config, before)
    moved, _ = component(model, before, identity)
    assert moved == pytest.approx(share * size, abs=1e-6 * size)
    assert torch.equal(steer.identity_direction(model), identity)  # the copies (layer 1) are left alone


def test_the_sham_pushes_another_direction_and_leaves_the_identity_component():
    config = RunConfig().replace(steer_from=1, steer_to=5, steer_share=0.5, steer_sham=True, perturb_seed=1)
    model, before = one_step(config)
    identity = steer.identity_direction(model)
    sham = steer.sham_direction(config, identity)
    assert abs(float((sham * identity).sum())) < 1e-9 and float(sham.norm()) == pytest.approx(1.0)
    free, size = component(model, before, identity)
    steer.steer(model, config, before)
    assert component(model, before, identity)[0] == pytest.approx(free, abs=1e-6 * size)
    assert component(model, before, sham)[0] == pytest.approx(0.5 * size, abs=1e-6 * size)
    other = steer.sham_direction(config.replace(perturb_seed=2), identity)
    assert not torch.allclose(other, sham)  # its own seed


def test_runs_without_steering_keep_their_hash_and_steered_ones_do_not():
    paper = RunConfig()
    assert paper.replace(steer_from=5, steer_share=0.5, steer_sham=False).hash() == SEED42_HASH
    steered = {paper.replace(steer_from=1, steer_to=6000).hash(),
               paper.replace(steer_from=1, steer_to=6000, steer_share=0.5).hash(),
               paper.replace(steer_from=1, steer_to=6000, steer_share=0.5, steer_sham=True, perturb_seed=1).hash()}
    assert len(steered) == 3 and SEED42_HASH not in steered
    assert paper.replace(steer_from=1, steer_to=10).train.perturbed


@pytest.mark.parametrize("overrides, message", [
    ({"steer_from": 0, "steer_to": 10}, "steering needs 1 <= steer_from <= steer_to"),
    ({"steer_from": 20, "steer_to": 10}, "steering needs 1 <= steer_from <= steer_to"),
    ({"steer_from": 1, "steer_to": 50_000}, "steering needs 1 <= steer_from <= steer_to"),
    ({"steer_from": 1, "steer_to": 10, "steer_share": 1.5}, "steer_share must lie in"),
    ({"steer_sham": "yes"}, "steer_sham must be true or false"),
])
def test_bad_steering_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig().replace(**overrides)


def test_a_steered_run_moves_only_inside_its_window_and_resumes_exactly(tiny_config, tiny_run, tmp_path,
                                                                         monkeypatch):
    config = tiny_config.replace(steer_from=12, steer_to=25, steer_share=0.0)
    straight = trainer.train(config, tmp_path / "straight", progress=False)
    mine, plain = metric_rows(straight).set_index("step"), metric_rows(tiny_run).set_index("step")
    pd.testing.assert_frame_equal(mine.loc[[1, 11]], plain.loc[[1, 11]])  # before the window: the same run
    moved = {name: float((weight - final_weights(tiny_run)[name]).abs().max())
             for name, weight in final_weights(straight).items()}
    assert moved["blocks.1.attn.W_Q"] > 1e-3 and moved["blocks.1.attn.W_Q"] > 10 * moved["blocks.0.attn.W_Q"]
    assert_resumes_to(straight, config, tmp_path / "killed", monkeypatch)


def test_a_steered_run_stops_only_once_composition_holds_without_the_steering(tiny_config, tmp_path, monkeypatch):
    real = trainer.eval_row
    monkeypatch.setattr(trainer, "eval_row", lambda *args: {**real(*args), "1var_train": 0.95})
    run = trainer.train(tiny_config.replace(stop_when_composed=1, steer_from=1, steer_to=15, steer_share=0.5),
                        tmp_path / "s", progress=False)
    assert run.final()["steps"] == 21
