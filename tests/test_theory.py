"""C10 machinery: the gradient w.r.t. the folded layer-2 QK matrix is exact (chain rule against the
ordinary parameter gradients), the projection and the dominance statistics do what they say."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from assignadd_core.analysis import theory
from assignadd_core.core.checkpoint import CheckpointError
from assignadd_core.core.data import TrainStream
from assignadd_core.core.model import AssignAddTransformer

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
    assert theory.first_step([1, 101], [0.5, 0.9], 0.5) == 1  # reaching the threshold counts


def test_gradient_identity_statistics_are_what_they_say(model):
    """Each statistic against an independent computation: QK2 from the parameters, the subspace share
    through the orthogonal projector Uᵀ(UUᵀ)⁻¹U onto span{u_v}."""
    out = theory.gradient_identity(model, step=3, n_batches=1)
    tokens, answers = theory.training_batch(model, 3, 1)
    grad = theory.qk2_gradient(model, tokens, answers).double()
    attn0, attn1 = model.blocks[0].attn, model.blocks[1].attn
    var0 = model.config.task.modulus + 3
    u = (model.W_E[var0: var0 + model.config.task.n_vars] @ attn0.W_V[0] @ attn0.W_O[0]).detach().double()
    qk2 = (attn1.W_Q[0] @ attn1.W_K[0].T).detach().double()
    assert out["qk2_contrast"] == pytest.approx(theory.diagonal_contrast(u @ qk2 @ u.T), rel=1e-4)
    assert out["qk2_diag_argmax"] == theory.dominance(u @ qk2 @ u.T)["diag_argmax"]
    assert out["gram_contrast"] == pytest.approx(theory.diagonal_contrast(u @ u.T), rel=1e-4)
    assert out["grad_contrast"] == pytest.approx(theory.diagonal_contrast(-(u @ grad @ u.T)), rel=1e-4)
    assert out["grad_norm"] == pytest.approx(float(grad.norm()), rel=1e-5)
    projector = u.T @ torch.linalg.inv(u @ u.T) @ u
    share = float((projector @ grad @ projector).norm() / grad.norm())
    assert 0.05 < share < 0.95  # neither trivially all nor nothing
    assert out["grad_fraction_in_subspace"] == pytest.approx(share, rel=1e-4)


def fake_run(path, config, seeds):
    """A run folder holding untrained checkpoints (one seed each) at steps 1, 11, 21, ..."""
    from assignadd_core.core.checkpoint import save_model
    from assignadd_core.core.run_folder import Run
    run = Run(path)
    run.checkpoint_dir.mkdir(parents=True)
    run.config_path.write_text(config.to_json())
    steps = []
    for i, seed in enumerate(seeds):
        torch.manual_seed(seed)
        steps.append(1 + 10 * i)
        save_model(AssignAddTransformer(config), run.checkpoint_path(steps[-1]))
    return run, steps


def test_gradient_table_rows_are_each_checkpoints(tiny_config, tmp_path):
    from assignadd_core.analysis.controls import whitened_contrast
    from assignadd_core.analysis.gradient_table import gradient_table
    from assignadd_core.analysis.quantities import THEORY_BATCHES
    run, steps = fake_run(tmp_path / "fake", tiny_config, seeds=(11, 12, 13))
    table = gradient_table(run, steps)
    assert table["step"].tolist() == steps and (table["n_batches"] == THEORY_BATCHES).all()
    n = tiny_config.task.n_vars
    for i, step in enumerate(steps):
        model = run.load_model(step)
        out = theory.gradient_identity(model, step, n_batches=THEORY_BATCHES)
        for column in theory.STAT_COLUMNS:
            assert table.loc[i, column] == pytest.approx(out[column], rel=1e-6, abs=1e-9), (step, column)
        assert torch.allclose(theory.maps_from_table(table)[i].float(), out["G"], atol=1e-6)
        if i + 1 < len(steps):
            following = run.load_model(steps[i + 1])
            update = theory.folded_qk2(following) - theory.folded_qk2(model)
            assert table.loc[i, "update_white_contrast"] == pytest.approx(
                whitened_contrast(update, theory.variable_copies(model)), rel=1e-5)
            assert table.loc[i, "update_steps"] == steps[i + 1] - step
    assert table["update_steps"].isna().tolist() == [False, False, True]
    assert len({round(float(v), 6) for v in table["grad_contrast"]}) == 3  # the checkpoints differ
    assert theory.maps_from_table(table).shape == (3, n, n)


def test_the_table_is_read_back_once_its_checkpoints_are_gone(tiny_config, tmp_path):
    from assignadd_core.analysis.gradient_table import cached_gradient_steps, gradient_table
    run, steps = fake_run(tmp_path / "fake", tiny_config, seeds=(21, 22))
    first = gradient_table(run, steps)
    for step in steps:
        run.checkpoint_path(step).unlink()
    assert cached_gradient_steps(run) == steps
    again = gradient_table(run, steps)
    assert again.equals(first)
    other = tiny_config.replace(seed=tiny_config.train.seed + 1)  # values of another run are never read
    run.config_path.write_text(other.to_json())
    with pytest.raises(CheckpointError, match="no weights"):
        gradient_table(type(run)(run.path), steps)


def test_values_computed_before_fingerprints_are_read_only_where_weights_are_gone(tiny_config, tmp_path):
    from assignadd_core.analysis import series as cache
    run, steps = fake_run(tmp_path / "fake", tiny_config, seeds=(31, 32))
    old = cache.series(run, "qk2_update", [tuple(steps)])
    old.loc[steps[0], "update_white_contrast"] += 1.0  # mark the recorded value
    assert cache.record_unfingerprinted(run, "qk2_update", old.assign(to=steps[1])) == 1
    fresh = cache.series(run, "qk2_update", [tuple(steps)])  # weights on disk: their own value
    assert fresh.iloc[0, 0] == pytest.approx(old.iloc[0, 0] - 1.0)
    assert cache.recorded(run, "qk2_update", [tuple(steps)]).iloc[0, 0] == pytest.approx(old.iloc[0, 0])
    run.checkpoint_path(steps[1]).unlink()  # weights gone: the value with a fingerprint is read, not the older one
    assert cache.series(run, "qk2_update", [tuple(steps)]).iloc[0, 0] == pytest.approx(fresh.iloc[0, 0])
    with pytest.raises(ValueError, match="pairs"):
        cache.series(run, "qk2_update", steps)


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


def test_c10_share_positive_is_strict():
    """A checkpoint whose G is flat (contrast exactly 0) does not favour the diagonal."""
    import pandas as pd
    n = 3
    maps = [torch.eye(n), torch.ones(n, n), torch.eye(n), torch.ones(n, n)]
    steps = [1, 101, 201, 301]
    table = pd.DataFrame([{"step": s, "grad_contrast": theory.dominance(g)["contrast"],
                           **{f"G_{i}_{j}": float(g[i, j]) for i in range(n) for j in range(n)}}
                          for s, g in zip(steps, maps)])
    assert table["grad_contrast"].tolist()[1] == 0.0
    metrics = pd.DataFrame({"step": steps, "m5_l1_value_prev_token": [1.0] * 4, "m4_l1_eq_to_operands": [1.0] * 4,
                            "m3_l2_var_identity_qk": [0.0, 0.0, 0.0, 0.0]})
    out = theory.c10_summary(table, metrics)
    assert out["m3_rise_step"] is None and out["pre_rise_n"] == 4 and out["before_copying_n"] == 0
    assert out["pre_rise_share_positive"] == 0.5
    assert out["pre_rise_mean_contrast"] == pytest.approx(theory.diagonal_contrast(torch.eye(n)) / 2)
