"""Model: size, TransformerLens names and hooks, and the fused training path = the full forward."""
from __future__ import annotations

import pytest
import torch
from transformer_lens import ActivationCache, FactoredMatrix

from assignadd_core.core.data import sample_queries
from assignadd_core.core.model import AssignAddTransformer
from assignadd_core.measure import measures

from scopes import shared

pytestmark = pytest.mark.usefixtures("single_thread")

PARAM_SHAPES = {  # the protocol's model: no biases, no LayerNorm, no layer-1 (block 0) MLP
    "embed.W_E": (74, 128), "pos_embed.W_pos": (16, 128),
    **{f"blocks.{i}.attn.W_{m}": (1, 128, 128) for i in (0, 1) for m in "QKVO"},
    "blocks.1.mlp.W_in": (128, 512), "blocks.1.mlp.W_out": (512, 128), "unembed.W_U": (128, 59),
}


@pytest.fixture(scope=shared("module"))
def paper_model(paper_config):
    torch.manual_seed(0)
    return AssignAddTransformer(paper_config)


@pytest.fixture(scope="module")
def paper_batch(paper_config):
    return sample_queries(paper_config.task, 64, torch.Generator().manual_seed(5))


def test_parameter_count_and_names(paper_model):
    assert paper_model.n_params() == 281_216
    assert {n: tuple(p.shape) for n, p in paper_model.named_parameters()} == PARAM_SHAPES
    assert set(paper_model.state_dict()) == set(PARAM_SHAPES)  # the mask buffer is not saved


def test_init_scale(paper_model):
    # TL "gpt2" init: N(0, 0.8 / sqrt(128)) for every weight
    for name, p in paper_model.named_parameters():
        p = p.detach()
        assert abs(float(p.std()) - 0.8 / 128 ** 0.5) < 0.1 * 0.8 / 128 ** 0.5, name
        assert abs(float(p.mean())) < 0.01, name


def test_accessors(paper_model):
    m = paper_model
    assert m.W_E is m.embed.W_E and m.W_pos is m.pos_embed.W_pos and m.W_U is m.unembed.W_U
    assert tuple(m.W_Q.shape) == (2, 1, 128, 128) and tuple(m.W_O.shape) == (2, 1, 128, 128)
    assert torch.equal(m.W_K[1, 0], m.blocks[1].attn.W_K[0])
    assert tuple(m.W_in.shape) == (2, 128, 512) and not bool(m.W_in[0].any())
    assert torch.equal(m.W_out[1], m.blocks[1].mlp.W_out)
    for factored in (m.QK, m.OV):
        assert isinstance(factored, FactoredMatrix)
    qk = m.QK.AB
    assert torch.allclose(qk[0, 0], m.W_Q[0, 0] @ m.W_K[0, 0].T)
    assert torch.allclose(m.OV.AB[1, 0], m.W_V[1, 0] @ m.W_O[1, 0])


def test_run_with_cache_has_transformer_lens_hook_names(paper_model, paper_batch):
    logits, cache = paper_model.run_with_cache(paper_batch.tokens)
    assert isinstance(cache, ActivationCache)
    for name in ("hook_embed", "hook_pos_embed", "blocks.0.attn.hook_q", "blocks.0.attn.hook_attn_scores",
                 "blocks.0.attn.hook_pattern", "blocks.0.hook_resid_pre", "blocks.0.hook_resid_mid",
                 "blocks.1.attn.hook_pattern", "blocks.1.hook_resid_mid", "blocks.1.mlp.hook_pre",
                 "blocks.1.mlp.hook_post", "blocks.1.hook_mlp_out", "blocks.1.hook_resid_post"):
        assert name in cache, name
    assert "blocks.0.mlp.hook_pre" not in cache  # block 0 has no MLP
    assert tuple(cache["blocks.0.attn.hook_pattern"].shape) == (64, 1, 16, 16)
    assert tuple(cache["blocks.1.mlp.hook_pre"].shape) == (64, 16, 512)
    assert tuple(logits.shape) == (64, 16, 59)
    # the cache is consistent with the computation: resid_mid = resid_pre + attention output, causal pattern
    assert torch.allclose(cache["blocks.1.hook_resid_mid"],
                          cache["blocks.1.hook_resid_pre"] + cache["blocks.1.hook_attn_out"], atol=1e-6)
    pattern = cache["blocks.0.attn.hook_pattern"][:, 0]
    assert torch.allclose(pattern.sum(-1), torch.ones(64, 16)) and float(pattern.triu(1).abs().max()) == 0
    # TL's ActivationCache helpers work with our names
    assert tuple(cache["pattern", 0].shape) == (64, 1, 16, 16)


def test_run_with_hooks_changes_the_output(paper_model, paper_batch):
    clean = paper_model(paper_batch.tokens)

    def zero(activation, hook):
        return torch.zeros_like(activation)

    ablated = paper_model.run_with_hooks(paper_batch.tokens, fwd_hooks=[("blocks.1.mlp.hook_post", zero)])
    assert not torch.allclose(clean, ablated)
    # with the MLP output zeroed the logits are exactly the residual before the MLP unembedded
    _, cache = paper_model.run_with_cache(paper_batch.tokens)
    assert torch.allclose(ablated, cache["blocks.1.hook_resid_mid"] @ paper_model.W_U, atol=1e-5)
    # hooks are removed afterwards
    assert torch.equal(paper_model(paper_batch.tokens), clean)


def test_loss_return_type(paper_model, paper_batch):
    loss = paper_model(paper_batch.tokens, paper_batch.answers, return_type="loss")
    expected = torch.nn.functional.cross_entropy(paper_model(paper_batch.tokens)[:, -1], paper_batch.answers)
    assert torch.allclose(loss, expected)


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach(), b.detach()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


@pytest.mark.parametrize("which", ["tiny", "paper", "wide", "long", "other task"])
def test_fused_path_equals_full_forward_in_logits_and_gradients(which, tiny_config, paper_config):
    """The fused path is the verified fast path for the paper's shape, at several sizes of it."""
    config = {"tiny": tiny_config, "paper": paper_config, "wide": tiny_config.replace(d_model=48, d_mlp=24),
              "long": tiny_config.replace(seq_len=20), "other task": tiny_config.replace(modulus=11, n_vars=6)}[which]
    torch.manual_seed(1)
    model = AssignAddTransformer(config)
    batch = sample_queries(config.task, 128, torch.Generator().manual_seed(2))

    full = model(batch.tokens)[:, -1]
    fused = model.fused_logits(batch.tokens)
    assert full.dtype == fused.dtype == torch.float32
    assert relative_error(fused, full) <= 1e-5

    def grads(logits):
        model.zero_grad()
        torch.nn.functional.cross_entropy(logits, batch.answers).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters()}

    g_full = grads(model(batch.tokens)[:, -1])
    g_fused = grads(model.fused_logits(batch.tokens))
    assert set(g_full) == set(g_fused) == {n for n, _ in model.named_parameters()}
    for name in g_full:
        assert float(g_full[name].norm()) > 0, name  # every parameter gets a gradient
        assert relative_error(g_fused[name], g_full[name]) <= 1e-5, name


@pytest.mark.parametrize("shape", [dict(n_layers=3, n_heads=2, mlp_layers=(2,)), dict(n_layers=1, mlp_layers=(0,)),
                                   dict(n_layers=3, mlp_layers=(0, 1, 2)), dict(n_layers=2, n_heads=4, mlp_layers=()),
                                   dict(n_layers=2, n_heads=1, mlp_layers=(1,))])
def test_last_position_path_equals_full_forward_for_any_shape(shape, tiny_config):
    """The fast path of every other shape (`_last_position_logits`; the paper's shape is run through it too, though
    its training takes `_fused`) is the full forward's logits at `=` with the same gradients."""
    config = tiny_config.replace(d_model=16, **shape)
    torch.manual_seed(3)
    model = AssignAddTransformer(config)
    tokens = sample_queries(config.task, 64, torch.Generator().manual_seed(4)).tokens
    full, fast = model(tokens)[:, -1], model._last_position_logits(tokens)
    assert relative_error(fast, full) <= 1e-5
    if not config.model.paper_shape:
        assert torch.equal(model.fused_logits(tokens), fast)  # what training and evaluation use for this shape

    def grads(logits):
        model.zero_grad()
        logits.pow(2).sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters()}

    g_full, g_fast = grads(model(tokens)[:, -1]), grads(model._last_position_logits(tokens))
    for name in g_full:
        assert relative_error(g_fast[name], g_full[name]) <= 1e-5, name


def test_fused_forward_activations_match_the_cache(paper_model, paper_batch):
    out = measures.fused_forward(paper_model, paper_batch.tokens)
    _, cache = paper_model.run_with_cache(paper_batch.tokens)
    assert torch.allclose(out.pattern1, cache["blocks.0.attn.hook_pattern"][:, 0], atol=1e-6)
    assert torch.allclose(out.pattern2, cache["blocks.1.attn.hook_pattern"][:, 0, -1], atol=1e-6)
    assert torch.allclose(out.resid_mid0, cache["blocks.0.hook_resid_mid"], atol=1e-5)


def reference_logits(model: AssignAddTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """The protocol's forward pass written out from its definition, independent of the model's code: both of the
    model's paths share the attention scale, the mask and the weights' layout, so agreeing with each other alone
    cannot show that either is the protocol's model."""
    p = dict(model.named_parameters())
    n, d_head = tokens.shape[1], p["blocks.0.attn.W_Q"].shape[-1]
    x = p["embed.W_E"][tokens] + p["pos_embed.W_pos"][:n]
    causal = torch.ones(n, n).tril().bool()
    for layer in (0, 1):
        w = {m: p[f"blocks.{layer}.attn.W_{m}"][0] for m in "QKVO"}
        scores = (x @ w["Q"]) @ (x @ w["K"]).transpose(1, 2) / d_head ** 0.5
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        x = x + weights @ (x @ w["V"]) @ w["O"]
        if layer == 1:  # the only MLP: ReLU, no biases
            x = x + torch.relu(x @ p["blocks.1.mlp.W_in"]) @ p["blocks.1.mlp.W_out"]
    return x @ p["unembed.W_U"]


@pytest.mark.parametrize("which", ["tiny", "paper"])
def test_both_paths_equal_the_protocols_forward_written_out(which, tiny_config, paper_config):
    config = {"tiny": tiny_config, "paper": paper_config}[which]
    torch.manual_seed(3)
    model = AssignAddTransformer(config)
    tokens = sample_queries(config.task, 32, torch.Generator().manual_seed(4)).tokens
    expected = reference_logits(model, tokens).detach()
    assert relative_error(model(tokens), expected) <= 1e-5
    assert relative_error(model.fused_logits(tokens), expected[:, -1]) <= 1e-5
    out = measures.fused_forward(model, tokens)
    assert relative_error(out.logits, expected[:, -1]) <= 1e-5


def test_a_shorter_prefix_is_the_same_causal_computation(paper_model, paper_batch):
    # position i only sees positions <= i, so the first 9 positions' logits do not depend on what follows
    prefix = paper_batch.tokens[:, :9]
    assert tuple(paper_model.pos_embed(prefix).shape) == (64, 9, 128)
    assert relative_error(paper_model(prefix), reference_logits(paper_model, prefix).detach()) <= 1e-5
    assert relative_error(paper_model(prefix), paper_model(paper_batch.tokens)[:, :9]) <= 1e-5


def test_transformer_lens_config_fields(paper_config):
    model = AssignAddTransformer(paper_config)
    expected = dict(n_layers=2, n_heads=1, d_model=128, d_head=128, d_mlp=512, n_ctx=16, d_vocab=74,
                    d_vocab_out=59, act_fn="relu", normalization_type=None, attn_only=False,
                    positional_embedding_type="standard", use_attn_result=False, default_prepend_bos=False,
                    device=None)
    assert vars(model.cfg) == expected


def test_forward_return_types(paper_model, paper_batch):
    assert paper_model(paper_batch.tokens, return_type=None) is None
    with pytest.raises(ValueError) as error:
        paper_model(paper_batch.tokens, return_type="loss")
    assert str(error.value) == "return_type='loss' needs the answers"


def test_run_with_cache_passes_its_options_and_knows_its_model(paper_model, paper_batch):
    _, cache = paper_model.run_with_cache(paper_batch.tokens, names_filter=lambda name: name.endswith("hook_pattern"))
    assert set(cache) == {"blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"}
    assert cache.model is paper_model


def test_attention_bilinear_gives_the_attention_scores(paper_model, paper_batch):
    _, cache = paper_model.run_with_cache(paper_batch.tokens)
    for layer in (0, 1):
        x = cache[f"blocks.{layer}.hook_resid_pre"]
        scores = x @ paper_model.attention_bilinear(layer) @ x.transpose(1, 2)
        expected = cache[f"blocks.{layer}.attn.hook_attn_scores"][:, 0]
        causal = torch.ones(16, 16, dtype=torch.bool).tril()
        assert relative_error(scores[:, causal], expected[:, causal]) <= 1e-5
