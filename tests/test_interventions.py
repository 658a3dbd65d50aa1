"""Ablation and patching hooks: they do what they say on a tiny model, and on the authors' weights
(when present) the layer-1 head is needed for variables only and the answer follows the patched value."""
from __future__ import annotations

import pytest
import torch

from assignadd_core.analysis import interventions as iv
from assignadd_core.checkpoint import load_tl_state_dict, reference_weights_path
from assignadd_core.data import Vocab, eval_pools, sample_queries
from assignadd_core.model import AssignAddTransformer

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def model(tiny_config):
    torch.manual_seed(4)
    return AssignAddTransformer(tiny_config).eval()


@pytest.fixture(scope="module")
def batch(tiny_config):
    return sample_queries(tiny_config.task, 200, torch.Generator().manual_seed(2))


def test_predict_without_hooks_is_the_fused_answer(model, batch):
    assert torch.equal(iv.predict(model, batch.tokens), model.fused_logits(batch.tokens).argmax(-1))


def test_zero_ablation_equals_a_model_without_layer1_output(model, batch, tiny_config):
    hooked = model.run_with_hooks(batch.tokens, fwd_hooks=[(iv.LAYER1_OUT, iv.ablation_hook("zero"))])[:, -1]
    silent = AssignAddTransformer(tiny_config).eval()
    silent.load_state_dict(model.state_dict())
    with torch.no_grad():
        silent.blocks[0].attn.W_O.zero_()
    assert torch.allclose(hooked, silent.fused_logits(batch.tokens), atol=1e-5)
    assert not torch.allclose(hooked, model.fused_logits(batch.tokens), atol=1e-3)  # the head does matter


def test_mean_ablation_writes_the_per_position_mean(model, batch):
    mean = iv.mean_activation(model, iv.LAYER1_OUT, n=256)
    assert mean.shape == (model.config.task.seq_len, model.config.model.d_model)
    seen = {}

    def look(act, hook):
        seen["act"] = act.clone()

    model.run_with_hooks(batch.tokens, fwd_hooks=[(iv.LAYER1_OUT, iv.ablation_hook("mean", mean)),
                                                  (iv.LAYER1_OUT, look)])
    assert torch.allclose(seen["act"], mean.expand_as(seen["act"]))
    with pytest.raises(ValueError, match="mode"):
        iv.ablation_hook("half")
    with pytest.raises(ValueError, match="mean"):
        iv.ablation_hook("mean")


def test_ablation_table_shape(model, tiny_config):
    pools = {k: v[:40] for k, v in eval_pools(tiny_config.task).items()}
    table = iv.ablation_table(model, pools)
    assert list(table.columns) == ["clean", "zero-ablated", "mean-ablated"]
    assert list(table.index) == list(pools)
    assert ((table >= 0) & (table <= 1)).all().all()


def test_patching_an_identical_value_changes_nothing(model, batch):
    clean = float((iv.predict(model, batch.tokens) == batch.answers).float().mean())
    same = iv.patch_value_residual(model, batch, "lhs", new_value=batch.lhs_val)
    assert same["original"] == pytest.approx(clean) and same["patched"] == pytest.approx(clean)
    moved = iv.patch_value_residual(model, batch, "rhs")
    assert moved["original"] + moved["patched"] + moved["other"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="operand"):
        iv.patch_value_residual(model, batch, "middle")


def test_distractor_positions_hold_other_variables_values(batch, tiny_config):
    task = tiny_config.task
    vocab = Vocab(task)
    target = iv.distractor_positions(batch, task)
    has = target >= 0
    n_query_vars = (batch.lhs_var >= 0).long() + (batch.rhs_var >= 0).long()
    assert torch.equal(has, batch.n_assign > n_query_vars)
    rows = torch.nonzero(has).flatten()
    t = target[rows]
    assert bool((batch.tokens[rows, t] < task.modulus).all())  # a number ...
    var = batch.tokens[rows, t - 1] - vocab.var0
    assert bool((var >= 0).all())  # ... right after a variable ...
    assert bool(((var != batch.lhs_var[rows]) & (var != batch.rhs_var[rows])).all())  # ... not a query variable


def test_redirect_fractions(model, batch):
    out = iv.redirect_layer2_attention(model, batch)
    assert 0 < out["n"] <= len(batch)
    assert out["original"] + out["patched"] + out["other"] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def reference():
    path = reference_weights_path()
    if path is None:
        pytest.skip("the authors' reference weights are not available (set ASSIGNADD_REFERENCE)")
    return load_tl_state_dict(path).eval()


def test_reference_layer1_is_needed_for_variables_only(reference):
    pools = eval_pools(reference.config.task)
    pools = {k: pools[k][:200] for k in ("0var_train", "1var_train", "1var_var_restricted")}
    table = iv.ablation_table(reference, pools, modes=("zero",))
    assert table.loc["0var_train", "zero-ablated"] >= 0.9
    assert table.loc["1var_train", "zero-ablated"] <= 0.5
    assert table.loc["1var_var_restricted", "zero-ablated"] <= 0.5


def test_reference_answer_follows_the_patched_value(reference):
    batch = eval_pools(reference.config.task)["2var_train"][:200]
    assert iv.patch_value_residual(reference, batch, "lhs")["patched"] >= 0.9
    assert iv.redirect_layer2_attention(reference, batch, "rhs")["patched"] >= 0.9


def test_ablation_by_distractor(model, tiny_config):
    pools = {k: v[:60] for k, v in eval_pools(tiny_config.task).items() if k.startswith("1var")}
    table = iv.ablation_table(model, pools, modes=("zero",), by_distractor=True)
    assert {"clean, with distractor", "zero-ablated, with distractor", "share with distractor"} <= set(table.columns)
    batch = pools["1var_train"]
    assert table.loc["1var_train", "share with distractor"] == pytest.approx(
        float((batch.n_assign > 1).float().mean()))
