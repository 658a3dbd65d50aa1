"""C10 machinery: the gradient w.r.t. the folded layer-2 QK matrix is exact (chain rule against the
ordinary parameter gradients), the projection and the dominance statistics do what they say."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from assignadd_core.analysis import theory
from assignadd_core.data import TrainStream
from assignadd_core.model import AssignAddTransformer

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def model(tiny_config):
    torch.manual_seed(5)
    return AssignAddTransformer(tiny_config)


def test_folded_gradient_obeys_the_chain_rule(model):
    tokens, answers = theory.training_batch(model, step=0, n_batches=2)
    grad = theory.qk2_gradient(model, tokens, answers)
    d = model.config.model.d_model
    assert grad.shape == (d, d) and grad.norm() > 0
    model.zero_grad()
    F.cross_entropy(model(tokens)[:, -1], answers).backward()
    attn = model.blocks[1].attn
    # scores = x W_Q W_Kᵀ xᵀ: dL/dW_Q = G W_K and dL/dW_K = Gᵀ W_Q
    assert torch.allclose(grad @ attn.W_K[0].detach(), attn.W_Q.grad[0], atol=1e-6, rtol=1e-4)
    assert torch.allclose(grad.T @ attn.W_Q[0].detach(), attn.W_K.grad[0], atol=1e-6, rtol=1e-4)
    model.zero_grad()


def test_training_batch_is_what_the_optimizer_sees_next(model):
    tokens, answers = theory.training_batch(model, step=7, n_batches=2)
    cfg = model.config
    stream = TrainStream(cfg.task, cfg.train.batch_size, cfg.train.seed)
    assert torch.equal(tokens[: cfg.train.batch_size], stream.batch(8)[0])
    assert torch.equal(answers[cfg.train.batch_size:], stream.batch(9)[1])


def test_projection_and_dominance():
    basis = torch.eye(4, 6)
    m = torch.randn(6, 6, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(theory.project(m, basis), m[:4, :4])
    dom = theory.dominance(torch.eye(4) + 0.01)
    assert dom["diag_argmax"] == 1.0 and dom["contrast"] > 1
    assert theory.dominance(-torch.eye(4))["contrast"] < 0


def test_gradient_identity_report(model):
    out = theory.gradient_identity(model, step=0, n_batches=1)
    n = model.config.task.n_vars
    assert out["G"].shape == (n, n)
    for key in ("grad_contrast", "grad_diag_argmax", "qk2_contrast", "gram_contrast", "grad_fraction_in_subspace"):
        assert key in out
    assert 0 < out["grad_fraction_in_subspace"] <= 1 + 1e-9
    assert out["gram_contrast"] > 0  # U Uᵀ always favours its diagonal: the baseline is not zero
    # G is the negative gradient seen on the variable copies
    tokens, answers = theory.training_batch(model, 0, 1)
    u = theory.variable_copies(model)
    assert torch.allclose(out["G"], -(u @ theory.qk2_gradient(model, tokens, answers) @ u.T), atol=1e-6)


def test_first_step():
    assert theory.first_step([1, 101, 201], [0.1, 0.6, 0.9], 0.5) == 101
    assert theory.first_step([1, 101], [0.1, 0.2], 0.5) is None


def test_cache_round_trip(tiny_run, tmp_path):
    steps = tiny_run.checkpoint_steps()[:2]
    path = theory.write_cache(tiny_run, steps, n_batches=1, root=tmp_path)
    assert path.is_file()
    table = theory.read_cache(tiny_run, root=tmp_path)
    assert table["step"].tolist() == steps
    fresh = theory.gradient_identity(tiny_run.load_model(steps[1]), steps[1], n_batches=1)
    assert table.loc[1, "grad_contrast"] == pytest.approx(fresh["grad_contrast"], rel=1e-5)
    assert theory.read_cache(tiny_run, root=tmp_path / "elsewhere") is None


def test_c10_summary_windows():
    import pandas as pd
    n = 3
    eye, anti = torch.eye(n), 1 - torch.eye(n)
    steps = [1, 101, 201, 301, 401]
    maps = [anti, anti, eye, eye, eye]
    table = pd.DataFrame([{"step": s, "grad_contrast": theory.dominance(g)["contrast"],
                           **{f"G_{i}_{j}": float(g[i, j]) for i in range(n) for j in range(n)}}
                          for s, g in zip(steps, maps)])
    assert torch.equal(theory.maps_from_table(table)[2], eye)
    metrics = pd.DataFrame({"step": steps, "m5_l1_value_prev_token": [0.2, 0.5, 1.0, 1.0, 1.0],
                            "m4_l1_eq_to_operands": [0.1, 0.2, 0.4, 1.0, 1.0],
                            "m3_l2_var_identity_qk": [0.0, 0.0, 0.1, 0.2, 0.9]})
    out = theory.c10_summary(table, metrics)
    assert out["m3_rise_step"] == 401 and out["copy_step"] == 201 and out["eq_step"] == 301
    # step 201 copies (measure 5) but `=` does not attend to the operands yet (measure 4 0.4): in neither window
    assert out["before_copying_n"] == 2 and out["pre_rise_n"] == 1
    assert out["pre_rise_share_positive"] == 1.0 and out["before_copying_share_positive"] == 0.0
    assert out["pre_rise_mean_G_diag_argmax"] == 1.0 and out["before_copying_mean_G_contrast"] < 0
