"""Roles, not indices: the circuit's parts (the copy head, the lookup head, the addition MLP) are declared in
ModelConfig and every measure and analysis finds them through `roles`. The defaults are the paper's layers and
keep every committed hash; a model of another shape that holds the same circuit measures the same."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

import handbuilt
from assignadd_core.analysis import quantities
from assignadd_core.core import trainer
from assignadd_core.experiments import qk_steering, rescue, training
from assignadd_core.measure import roles
from assignadd_core.analysis import addition, theory
from assignadd_core.analysis import interventions as iv
from assignadd_core.core.config import ConfigError, RunConfig
from assignadd_core.measure.measures import MEASURE_NAMES, all_measures, measurement_batch, role_activations
from assignadd_core.core.model import AssignAddTransformer
from tiny import torch_threads

pytestmark = pytest.mark.usefixtures("single_thread")

# (activation, role) -> the hook name the paper's shape has always used
PAPER_HOOKS = {
    ("pattern", "copy"): "blocks.0.attn.hook_pattern", ("attn_out", "copy"): "blocks.0.hook_attn_out",
    ("resid_mid", "copy"): "blocks.0.hook_resid_mid", ("resid_pre", "copy"): "blocks.0.hook_resid_pre",
    ("resid_pre", "lookup"): "blocks.1.hook_resid_pre", ("pattern", "lookup"): "blocks.1.attn.hook_pattern",
    ("attn_scores", "lookup"): "blocks.1.attn.hook_attn_scores", ("attn_out", "lookup"): "blocks.1.hook_attn_out",
    ("resid_mid", "mlp"): "blocks.1.hook_resid_mid", ("pre", "mlp"): "blocks.1.mlp.hook_pre",
}


# ---------------------------------------------------------------------------- the config
def test_default_roles_are_the_paper_layers_and_keep_the_hash():
    paper = RunConfig()
    assert (roles.copy_block(paper), roles.lookup_block(paper), roles.mlp_block(paper)) == (0, 1, 1)
    assert roles.head(paper, "copy") == roles.head(paper, "lookup") == 0 and paper.model.has_circuit
    assert paper.hash() == "35c0d33b9461"  # seed 42's committed run
    declared = paper.replace(copy_block=0, lookup_block=1, mlp_block=1, copy_head=0, lookup_head=0)
    assert declared == paper and declared.hash() == paper.hash()  # a role given at its default is the default
    assert RunConfig.from_json(paper.to_json()) == paper


def test_default_roles_follow_the_shape():
    three = RunConfig().replace(n_layers=3, mlp_layers=[1, 2])
    assert (roles.copy_block(three), roles.lookup_block(three), roles.mlp_block(three)) == (0, 2, 2)
    assert three.replace(lookup_block=2, mlp_block=2) == three
    moved = three.replace(lookup_block=1, mlp_block=1)
    assert (roles.lookup_block(moved), roles.mlp_block(moved)) == (1, 1) and moved.hash() != three.hash()
    assert RunConfig.from_json(moved.to_json()) == moved
    # defaults that do not form the circuit are no error: the measures are undefined there
    one = RunConfig().replace(n_layers=1, mlp_layers=[0])
    assert not one.model.has_circuit
    assert not RunConfig().replace(n_layers=3, mlp_layers=[0]).model.has_circuit  # MLP before the lookup


@pytest.mark.parametrize("overrides, words", [
    ({"copy_block": 2}, "copy_block must be a block index in 0..1, got 2"),
    ({"lookup_block": -1}, "lookup_block must be a block index in 0..1, got -1"),
    ({"mlp_block": True}, "mlp_block must be a block index in 0..1, got True"),
    ({"mlp_block": 0}, "mlp_block must be a block with an MLP (mlp_layers=[1]), got 0"),
    ({"copy_head": 1}, "copy_head must be a head index in 0..0, got 1"),
    ({"n_heads": 2, "lookup_head": 2}, "lookup_head must be a head index in 0..1, got 2"),
    ({"copy_block": 1}, "copy_block (1) must come before lookup_block (1)"),
    ({"n_layers": 3, "mlp_layers": [1, 2], "mlp_block": 1}, "mlp_block (1) must not come before lookup_block (2)"),
    ({"n_layers": 2, "mlp_layers": [], "lookup_block": 1}, "the model has no MLP"),
])
def test_bad_roles_are_one_line_errors(overrides, words):
    with pytest.raises(ConfigError, match=re.escape(words)) as excinfo:
        RunConfig().replace(**overrides)
    assert "\n" not in str(excinfo.value)


def test_the_cli_takes_the_roles(capsys):
    from assignadd_core.cli import main
    assert main(["config", "--n-layers", "3", "--lookup-block", "1", "--n-heads", "2", "--copy-head", "1"]) == 0
    config = RunConfig.from_json(capsys.readouterr().out)
    assert (roles.lookup_block(config), roles.mlp_block(config), roles.head(config, "copy")) == (1, 1, 1)


# ---------------------------------------------------------------------------- hook names and weights
def test_hook_names_are_the_paper_literals(paper_config):
    for (name, role), literal in PAPER_HOOKS.items():
        assert roles.hook(paper_config, name, role) == literal
    assert (addition.MLP_INPUT_HOOK, addition.ATTN_OUT_HOOK) == ("blocks.1.hook_resid_mid", "blocks.1.hook_attn_out")
    assert (iv.LAYER1_OUT, iv.LAYER2_INPUT, iv.LAYER2_PATTERN) == (
        "blocks.0.hook_attn_out", "blocks.1.hook_resid_pre", "blocks.1.attn.hook_pattern")


@pytest.mark.parametrize("shape", [{}, {"n_layers": 3, "mlp_layers": [2]},
                                   {"n_layers": 4, "n_heads": 2, "mlp_layers": [1, 2], "copy_block": 1,
                                    "lookup_block": 2, "lookup_head": 1}])
def test_role_hooks_and_weights_are_the_models(tiny_config, shape):
    config = tiny_config.replace(**shape)
    model = AssignAddTransformer(config)
    for name, role in PAPER_HOOKS:
        assert roles.hook(model, name, role) in model.hook_dict
    for role in ("copy", "lookup"):
        block, head = roles.block(model, role), roles.head(model, role)
        attn = model.blocks[block].attn
        assert roles.attention(model, role) is attn
        assert torch.equal(roles.qk(model, role).AB, attn.W_Q[head] @ attn.W_K[head].T)
        assert torch.equal(roles.ov(model, role).AB, attn.W_V[head] @ attn.W_O[head])
    assert roles.addition_mlp(model) is model.blocks[roles.mlp_block(model)].mlp


def test_the_weights_by_role_are_the_paper_indices(paper_config):
    model = AssignAddTransformer(paper_config)
    assert torch.equal(roles.ov(model, "copy").AB, model.OV[0, 0].AB)
    assert torch.equal(roles.qk(model, "lookup").AB, model.QK[1, 0].AB)
    assert torch.equal(roles.bilinear(model, "copy"), model.attention_bilinear(0))
    assert roles.addition_mlp(model) is model.blocks[1].mlp


# ---------------------------------------------------------------------------- the same circuit in another shape
def _factor(matrix: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(A [d, rank], B [d, rank]) with A Bᵀ = matrix (exact for a matrix of rank <= rank)."""
    u, s, vh = torch.linalg.svd(matrix.double())
    root = s[:rank].sqrt()
    return (u[:, :rank] * root).float(), (vh[:rank].T * root).float()


def relaid_solver() -> AssignAddTransformer:
    """The hand-built solver laid out otherwise: 3 blocks of 2 heads, the copy head is head 1 of block 0, the
    lookup head head 1 of block 1 and the addition MLP sits in block 2; every other head writes nothing."""
    solver = handbuilt.exact_model()
    config = solver.config.replace(n_layers=3, n_heads=2, mlp_layers=[2], lookup_block=1, copy_head=1,
                                   lookup_head=1)
    model = AssignAddTransformer(config)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.embed.W_E.copy_(solver.W_E)
        model.pos_embed.W_pos.copy_(solver.W_pos)
        model.unembed.W_U.copy_(solver.W_U)
        for role, source in (("copy", solver.blocks[0].attn), ("lookup", solver.blocks[1].attn)):
            attn, head = roles.attention(model, role), roles.head(model, role)
            qk = (source.W_Q[0] @ source.W_K[0].T) * (source.scale / attn.scale)  # the same scores at d_head 32
            attn.W_Q[head], attn.W_K[head] = _factor(qk, config.model.d_head)
            w_v, w_o = _factor(source.W_V[0] @ source.W_O[0], config.model.d_head)
            attn.W_V[head], attn.W_O[head] = w_v, w_o.T
        roles.addition_mlp(model).W_in.copy_(solver.blocks[1].mlp.W_in)
        roles.addition_mlp(model).W_out.copy_(solver.blocks[1].mlp.W_out)
    return model.eval()


def test_the_same_circuit_in_another_shape_measures_the_same():
    solver, relaid = handbuilt.exact_model(), relaid_solver()
    batch = measurement_batch(solver.config.task)
    assert torch.allclose(relaid(batch.tokens)[:, -1], solver(batch.tokens)[:, -1], atol=1e-3)
    fused, hooked = role_activations(solver, batch.tokens), role_activations(relaid, batch.tokens)
    for a, b in zip(fused, hooked):  # the fused path (paper's shape) and the hooked one read the same activations
        assert torch.allclose(a, b, atol=1e-4)
    expected = all_measures(solver)
    assert all_measures(relaid) == pytest.approx(expected) and expected["m3_l2_var_identity_qk"] == 1.0
    rescaled = qk_steering.qk2(solver) * (solver.blocks[1].attn.scale / roles.attention(relaid, "lookup").scale)
    assert torch.allclose(qk_steering.qk2(relaid), rescaled, atol=1e-2)  # steering writes into the lookup head


def test_a_model_without_the_circuit_has_no_measures(tiny_config):
    model = AssignAddTransformer(tiny_config.replace(n_layers=1, mlp_layers=[0]))
    assert all(math.isnan(v) for v in all_measures(model).values())


def test_a_tiny_three_layer_model_logs_measures_that_move(tiny_config, tmp_path):
    config = tiny_config.replace(n_layers=3, mlp_layers=[2], lr=1e-2, probe_every=tiny_config.train.eval_every)
    with torch_threads(1):
        run = training.train(config, tmp_path / "run", progress=False)
    metrics = run.metrics()
    measures = metrics[[c for c in metrics.columns if re.match(r"m[1-7]_", c)]]
    assert list(measures.columns) == list(MEASURE_NAMES) and len(measures) == 4
    assert np.isfinite(measures.to_numpy()).all()
    assert (measures.nunique() > 1).all(), measures  # each one moves with training


def test_circuit_maps_take_their_size_from_the_task(tiny_config):
    q = quantities.get_quantity("circuit_maps")
    assert q.columns_for(RunConfig()) == q.columns and len(q.columns) == 12 * 12 + 16 * 16
    config = tiny_config.replace(n_layers=3, mlp_layers=[2])
    values = q.compute(AssignAddTransformer(config).eval(), 0)
    assert list(values) == list(q.columns_for(config)) and len(values) == 4 * 4 + 16 * 16


# ---------------------------------------------------------------------------- what writes into the role heads
def test_the_qk2_gradient_is_the_lookup_heads(tiny_config):
    torch.manual_seed(3)
    model = AssignAddTransformer(tiny_config.replace(n_layers=3, n_heads=2, mlp_layers=[2], lookup_block=1,
                                                     lookup_head=1))
    tokens, answers = theory.training_batch(model, step=0, n_batches=1)
    grad = theory.qk2_gradient(model, tokens, answers)
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(tokens)[:, -1], answers).backward()
    attn = model.blocks[1].attn
    assert torch.allclose(grad @ attn.W_K[1].detach(), attn.W_Q.grad[1], atol=1e-6, rtol=1e-4)
    assert not torch.allclose(grad @ attn.W_K[0].detach(), attn.W_Q.grad[0], atol=1e-6, rtol=1e-4)
    model.zero_grad()


@pytest.mark.parametrize("arm, role", [("redraw_layer1_qk", "copy"), ("redraw_layer2_qk", "lookup")])
def test_rescue_redraws_the_role_head_only(tiny_config, arm, role):
    model = AssignAddTransformer(tiny_config.replace(n_layers=3, n_heads=2, mlp_layers=[2], copy_head=1,
                                                     lookup_block=1))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    rescue.EDITS[arm](model, trainer.make_optimizer(model, model.config))
    block, head = roles.block(model, role), roles.head(model, role)
    for name, p in model.named_parameters():
        for h in range(p.shape[0]) if name.endswith(("W_Q", "W_K")) else [None]:
            hit = name in (f"blocks.{block}.attn.W_Q", f"blocks.{block}.attn.W_K") and h == head
            same = torch.equal(p[h], before[name][h]) if h is not None else torch.equal(p, before[name])
            assert same != hit, (name, h)
