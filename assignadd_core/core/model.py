"""The 2-layer, 1-head, attention + (layer-2) MLP transformer of the book's protocol page (book/protocol.md, 'The model'), with TransformerLens names.

Built on `HookedRootModule` + `HookPoint`, so `run_with_cache`, `run_with_hooks` and hook names
work as in TransformerLens (`blocks.0.attn.hook_pattern`, `blocks.1.hook_resid_mid`,
`blocks.1.mlp.hook_pre`, ...). Two forward paths share the parameters:

* `forward(tokens)`: the full hooked model at every position, for analysis;
* `fused_logits(tokens)`: only what the loss at `=` needs, for training (see `fused_logits`).
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn
from transformer_lens import ActivationCache, FactoredMatrix, HookedRootModule
from transformer_lens.hook_points import HookPoint

from .config import RunConfig

class Embed(nn.Module):
    def __init__(self, d_vocab: int, d_model: int):
        super().__init__()
        self.W_E = nn.Parameter(torch.empty(d_vocab, d_model))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.W_E[tokens]


class PosEmbed(nn.Module):
    def __init__(self, n_ctx: int, d_model: int):
        super().__init__()
        self.W_pos = nn.Parameter(torch.empty(n_ctx, d_model))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.W_pos[: tokens.shape[1]].expand(tokens.shape[0], -1, -1)


class Attention(nn.Module):
    """Causal heads; weights carry TransformerLens' leading head axis, scores scaled by 1/sqrt(d_head)."""

    def __init__(self, d_model: int, d_head: int, n_ctx: int, n_heads: int = 1):
        super().__init__()
        self.W_Q = nn.Parameter(torch.empty(n_heads, d_model, d_head))
        self.W_K = nn.Parameter(torch.empty(n_heads, d_model, d_head))
        self.W_V = nn.Parameter(torch.empty(n_heads, d_model, d_head))
        self.W_O = nn.Parameter(torch.empty(n_heads, d_head, d_model))
        self.register_buffer("mask", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool)), persistent=False)
        self.scale = 1.0 / math.sqrt(d_head)
        for name in ("hook_q", "hook_k", "hook_v", "hook_attn_scores", "hook_pattern", "hook_z"):
            setattr(self, name, HookPoint())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.hook_q(torch.einsum("bpd,hde->bphe", x, self.W_Q))
        k = self.hook_k(torch.einsum("bpd,hde->bphe", x, self.W_K))
        v = self.hook_v(torch.einsum("bpd,hde->bphe", x, self.W_V))
        scores = torch.einsum("bqhe,bkhe->bhqk", q, k) * self.scale
        n = x.shape[1]
        scores = self.hook_attn_scores(scores.masked_fill(~self.mask[:n, :n], float("-inf")))
        pattern = self.hook_pattern(scores.softmax(-1))
        z = self.hook_z(torch.einsum("bhqk,bkhe->bqhe", pattern, v))
        return torch.einsum("bqhe,hed->bqd", z, self.W_O)


def _plain_attention(attn: "Attention", queries: torch.Tensor, keys: torch.Tensor, project=torch.matmul) -> torch.Tensor:
    """`attn`'s output at the positions of `queries` (the last positions of `keys`), without hooks: the same function
    as Attention.forward, computed with one projection per weight (`project(x, W)`: x @ W, or a table lookup where
    x is the embedding) and PyTorch's fused causal attention."""
    b, n_q, d = queries.shape
    n_k, (h, _, e) = keys.shape[1], attn.W_Q.shape

    def heads(x, W):  # [b, p, d] x [h, d, e] -> [b, h, p, e]
        return project(x, W.permute(1, 0, 2).reshape(d, h * e)).view(b, -1, h, e).transpose(1, 2)

    q, k, v = heads(queries, attn.W_Q), heads(keys, attn.W_K), heads(keys, attn.W_V)
    mask = attn.mask[n_k - n_q:n_k, :n_k]  # query i sits at position n_k - n_q + i
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=attn.scale)
    return z.transpose(1, 2).reshape(b, n_q, h * e) @ attn.W_O.reshape(h * e, d)


class MLP(nn.Module):
    def __init__(self, d_model: int, d_mlp: int):
        super().__init__()
        self.W_in = nn.Parameter(torch.empty(d_model, d_mlp))
        self.W_out = nn.Parameter(torch.empty(d_mlp, d_model))
        self.hook_pre, self.hook_post = HookPoint(), HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        post = self.hook_post(F.relu(self.hook_pre(x @ self.W_in)))
        return post @ self.W_out


class Block(nn.Module):
    def __init__(self, d_model: int, d_mlp: int, n_ctx: int, has_mlp: bool, n_heads: int = 1):
        super().__init__()
        self.attn = Attention(d_model, d_model // n_heads, n_ctx, n_heads)
        self.mlp = MLP(d_model, d_mlp) if has_mlp else None
        for name in ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_resid_post"):
            setattr(self, name, HookPoint())
        if has_mlp:
            self.hook_mlp_out = HookPoint()

    def forward(self, resid: torch.Tensor) -> torch.Tensor:
        resid = self.hook_resid_pre(resid)
        resid = self.hook_resid_mid(resid + self.hook_attn_out(self.attn(resid)))
        if self.mlp is not None:
            resid = resid + self.hook_mlp_out(self.mlp(resid))
        return self.hook_resid_post(resid)


class Unembed(nn.Module):
    def __init__(self, d_model: int, d_out: int):
        super().__init__()
        self.W_U = nn.Parameter(torch.empty(d_model, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.W_U


class AssignAddTransformer(HookedRootModule):
    """The paper's shape by default (2 layers, 1 head, d_model = d_head = 128, d_mlp = 512, an MLP in the last
    layer only), ReLU, no LayerNorm, no biases; `ModelConfig` sets layers, heads and which blocks have an MLP."""

    def __init__(self, config: RunConfig):
        super().__init__()
        task, m = config.task, config.model
        self.config = config
        d, n_ctx = m.d_model, task.seq_len
        self.cfg = SimpleNamespace(  # the fields TransformerLens utilities look for
            n_layers=m.n_layers, n_heads=m.n_heads, d_model=d, d_head=m.d_head, d_mlp=m.d_mlp, n_ctx=n_ctx,
            d_vocab=task.vocab_size, d_vocab_out=task.modulus, act_fn="relu", normalization_type=None,
            attn_only=False, positional_embedding_type="standard", use_attn_result=False,
            default_prepend_bos=False, device=None,
        )
        self.embed = Embed(task.vocab_size, d)
        self.pos_embed = PosEmbed(n_ctx, d)
        self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()
        self.blocks = nn.ModuleList([Block(d, m.d_mlp, n_ctx, has_mlp=(i in m.mlp_layers), n_heads=m.n_heads)
                                     for i in range(m.n_layers)])
        self.unembed = Unembed(d, task.modulus)
        self.init_weights()
        self.setup()

    def init_weights(self, generator: torch.Generator | None = None) -> None:
        """TransformerLens' "gpt2" init: every weight ~ N(0, init_std_scale / sqrt(d_model))."""
        std = self.config.model.init_std_scale / math.sqrt(self.config.model.d_model)
        with torch.no_grad():
            for _, param in self.named_parameters():
                param.normal_(0.0, std, generator=generator)

    # ------------------------------------------------------------------ full hooked forward
    def forward(self, tokens: torch.Tensor, answers: torch.Tensor | None = None,
                return_type: str | None = "logits") -> torch.Tensor | None:
        """Logits [batch, pos, N] at every position; return_type='loss' gives the loss at `=`."""
        resid = self.hook_embed(self.embed(tokens)) + self.hook_pos_embed(self.pos_embed(tokens))
        for block in self.blocks:
            resid = block(resid)
        logits = self.unembed(resid)
        if return_type == "loss":
            if answers is None:
                raise ValueError("return_type='loss' needs the answers")
            return F.cross_entropy(logits[:, -1].float(), answers)
        return logits if return_type == "logits" else None

    def run_with_cache(self, *args, **kwargs):
        out, cache = super().run_with_cache(*args, **kwargs)
        return out, ActivationCache(cache, self)

    # ------------------------------------------------------------------ fused training path
    def fused_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits at `=`, [batch, N]: the same function as forward()[:, -1], computing only what the loss needs:
        folded for the paper's shape (`_fused`), the last block at `=` only for any other (`_last_position_logits`)."""
        if not self.config.model.paper_shape:
            return self._last_position_logits(tokens)
        return self._fused(tokens)[0]

    def _last_position_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """forward()[:, -1] for any shape, about 3x faster, no hooks: the last block's query, MLP and unembedding at `=`
        only; the first block's projections are lookups in token and position tables (as in `_fused`); heads are one
        GEMM per projection and one fused attention kernel."""
        n = tokens.shape[1]
        W_E, W_pos = self.embed.W_E, self.pos_embed.W_pos[:n]
        resid = F.embedding(tokens, W_E) + W_pos
        for i, block in enumerate(self.blocks):
            last = i == len(self.blocks) - 1
            if i == 0:
                def project(x, W):  # x0 @ W = (W_E @ W)[t] + W_pos @ W
                    return F.embedding(tokens[:, -x.shape[1]:], W_E @ W) + W_pos[n - x.shape[1]:] @ W
            else:
                project = torch.matmul
            queries = resid[:, -1:] if last else resid
            out = queries + _plain_attention(block.attn, queries, resid, project)
            resid = out if block.mlp is None else out + block.mlp(out)
        return self.unembed(resid[:, -1])

    def _fused(self, tokens: torch.Tensor):
        """(logits at `=`, pattern1, pattern2): the stages `_fused_attention`, `_fused_mlp`, `_fused_unembed` in
        turn (stages, so that one of them can be compiled alone: `experiments.training.StagedLoss`)."""
        resid, pattern1, pattern2 = self._fused_attention(tokens)
        return self._fused_unembed(self._fused_mlp(resid)), pattern1, pattern2

    def _fused_attention(self, tokens: torch.Tensor):
        """The forward pass folded down to what the logits at `=` depend on; exact, autograd-friendly. This
        first stage gives the residual at `=` after both attention layers, and both layers' patterns.

        * Single-head attention only needs W_QK = W_Q W_Kᵀ and W_OV = W_V W_O.
        * The layer-1 input is x0 = W_E[t] + W_pos, so its layer-1 scores x0_i W_QK x0_jᵀ are sums of
          lookups in small token/position tables (no per-sequence matrix products, which are slow
          as batched small GEMMs on CPU), and its values are v1 = x0 W_OV = (W_E W_OV)[t] + W_pos W_OV.
        * Layer 2, the MLP and the unembedding run at `=` only. Layer 2 reads the layer-1 residual
          x1_j = x0_j + Σ_k p1[j,k] v1_k only through q·x1_j and Σ_j p2_j x1_j, and both x0 and v1 are
          "token table + position table", so neither x0, v1 nor x1 is materialised per position:
          q·(table[t_j] + P_j) = (q tableᵀ)[t_j] + q P_jᵀ, and Σ_j w_j (table[t_j] + P_j) =
          (w scattered onto the vocabulary) @ table + w @ P. Products with [batch, pos, d] tensors
          were two thirds of a step's time; these are [batch, vocab] GEMMs and gathers.
        """
        b, n = tokens.shape
        W_E, W_pos = self.embed.W_E, self.pos_embed.W_pos[:n]
        a1, a2 = self.blocks[0].attn, self.blocks[1].attn
        qk1 = a1.W_Q[0] @ a1.W_K[0].T
        ov1 = a1.W_V[0] @ a1.W_O[0]
        EQ, PQ = W_E @ qk1, W_pos @ qk1
        key_tokens = tokens[:, None, :].expand(b, n, n)
        scores1 = (torch.gather(F.embedding(tokens, EQ @ W_E.T), 2, key_tokens)  # token -> token
                   + F.embedding(tokens, EQ @ W_pos.T)  # token -> position
                   + F.embedding(tokens, (PQ @ W_E.T).T).transpose(1, 2)  # position -> token
                   + PQ @ W_pos.T) * a1.scale  # position -> position
        pattern1 = scores1.masked_fill(~a1.mask[:n, :n], float("-inf")).softmax(-1)
        EV, PV = W_E @ ov1, W_pos @ ov1  # v1 = EV[t] + PV

        def on_vocab(weights):  # [b, n] weights per position -> [b, vocab] weights per token
            return torch.zeros(b, W_E.shape[0], dtype=weights.dtype, device=weights.device).scatter_add(
                1, tokens, weights)

        p1_last = pattern1[:, -1]
        last = W_E[tokens[:, -1]] + W_pos[-1] + on_vocab(p1_last) @ EV + p1_last @ PV
        q2 = last @ (a2.W_Q[0] @ a2.W_K[0].T)
        q2_x0 = torch.gather(q2 @ W_E.T, 1, tokens) + q2 @ W_pos.T  # q2·x0_j
        q2_v1 = torch.gather(q2 @ EV.T, 1, tokens) + q2 @ PV.T  # q2·v1_k
        scores2 = q2_x0 + torch.bmm(pattern1, q2_v1[:, :, None])[:, :, 0]
        pattern2 = (scores2 * a2.scale).softmax(-1)
        through_v1 = torch.bmm(pattern2[:, None, :], pattern1)[:, 0]  # weight of each v1_k in Σ_j p2_j x1_j
        ctx = (on_vocab(pattern2) @ W_E + pattern2 @ W_pos
               + on_vocab(through_v1) @ EV + through_v1 @ PV)  # Σ_j p2_j x1_j
        resid = last + ctx @ (a2.W_V[0] @ a2.W_O[0])
        return resid, pattern1, pattern2

    def _fused_mlp(self, resid: torch.Tensor) -> torch.Tensor:
        """The second stage of `_fused`: the layer-2 MLP at `=`, added to the residual."""
        mlp = self.blocks[self.config.model.role_block("mlp")].mlp  # the paper's shape: the last block's
        return resid + F.relu(resid @ mlp.W_in) @ mlp.W_out

    def _fused_unembed(self, resid: torch.Tensor) -> torch.Tensor:
        """The last stage of `_fused`: the logits at `=`."""
        return resid @ self.unembed.W_U

    # ------------------------------------------------------------------ TransformerLens-style accessors
    W_E = property(lambda self: self.embed.W_E)
    W_pos = property(lambda self: self.pos_embed.W_pos)
    W_U = property(lambda self: self.unembed.W_U)
    # [n_layers, n_heads, ...]: each attention weight of every block
    W_Q, W_K, W_V, W_O = (property(lambda self, name=name: torch.stack([getattr(b.attn, name) for b in self.blocks]))
                          for name in ("W_Q", "W_K", "W_V", "W_O"))

    def _stack_mlp(self, name: str) -> torch.Tensor:
        """[n_layers, ...] of an MLP weight; a block without an MLP gives zeros, as in the authors' checkpoints."""
        m = self.config.model
        zeros = self.W_E.new_zeros((m.d_model, m.d_mlp) if name == "W_in" else (m.d_mlp, m.d_model))
        return torch.stack([getattr(b.mlp, name) if b.mlp is not None else zeros for b in self.blocks])

    W_in = property(lambda self: self._stack_mlp("W_in"))  # [n_layers, d_model, d_mlp]
    W_out = property(lambda self: self._stack_mlp("W_out"))

    @property
    def QK(self) -> FactoredMatrix:
        return FactoredMatrix(self.W_Q, self.W_K.transpose(-2, -1))

    @property
    def OV(self) -> FactoredMatrix:
        return FactoredMatrix(self.W_V, self.W_O)

    def attention_bilinear(self, layer: int, head: int = 0) -> torch.Tensor:
        """W_Q W_Kᵀ / sqrt(d_head) of one head of `layer` [d_model, d_model]: x_q · it · x_k is its score."""
        return self.QK[layer, head].AB * self.blocks[layer].attn.scale

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def initial_model(config: RunConfig) -> AssignAddTransformer:
    """The model at step 0 of a run: TransformerLens' "gpt2" init drawn from the run's weights seed."""
    model = AssignAddTransformer(config)
    model.init_weights(torch.Generator().manual_seed(config.train.weights_seed))
    return model
