"""Circuit read-outs from the weights and from attention patterns (claims C4, C5).

* `positional_qk_map`: layer-1 scores between prefix positions, W_pos QK1 W_posᵀ (previous-token head).
* `variable_qk_map` (from `measures`): layer-2 scores between OV1-copied variable embeddings.
* `eq_to_variable_scores`: the layer-1 score from `=` to each variable sitting at the lhs / rhs
  position, i.e. how strongly `=` copies each variable's identity (what the refinement phase fixes).
* `attention_patterns` / `example_batch`: both layers' patterns for one sequence per query type.
Scores are pre-softmax and include the 1/sqrt(d_head) scale, as the model computes them.
"""
from __future__ import annotations

import torch

from ..data import QUERY_TYPE_NAMES, Batch, Vocab, eval_pools
from ..measures import variable_qk_map  # noqa: F401  (re-exported: the 12 x 12 layer-2 map)
from ..model import AssignAddTransformer


def _qk(model: AssignAddTransformer, layer: int) -> torch.Tensor:
    attn = model.blocks[layer].attn
    return attn.W_Q[0] @ attn.W_K[0].T * attn.scale


@torch.no_grad()
def positional_qk_map(model: AssignAddTransformer, n_pos: int | None = None, causal: bool = True) -> torch.Tensor:
    """[q, k] layer-1 score between positional embeddings of the prefix (default: positions 0..11);
    keys after the query are NaN when `causal` (the model never sees them)."""
    n_pos = n_pos or model.config.task.prefix_len
    pos = model.W_pos[:n_pos]
    scores = (pos @ _qk(model, 0) @ pos.T).cpu()
    if causal:
        scores = scores.masked_fill(~torch.ones(n_pos, n_pos, dtype=torch.bool).tril(), float("nan"))
    return scores


def previous_token_rows(qk_map: torch.Tensor) -> torch.Tensor:
    """Bool [q-1], progress measure 2 row by row: for each query q >= 1, among the earlier keys
    with key q-2 left out (as the spec defines the measure), is q-1 the largest score?"""
    hits = []
    for q in range(1, qk_map.shape[0]):
        row = torch.nan_to_num(qk_map[q, :q].clone(), nan=float("-inf"))
        if q >= 2:
            row[q - 2] = float("-inf")
        hits.append(int(row.argmax()) == q - 1)
    return torch.tensor(hits)


def identity_rows(qk_map: torch.Tensor) -> torch.Tensor:
    """Bool [n]: does each row of a square map peak on its diagonal?"""
    return qk_map.argmax(-1) == torch.arange(qk_map.shape[0])


def diagonal_contrast(matrix: torch.Tensor) -> float:
    """(mean diagonal - mean off-diagonal) / RMS of all entries: > 0 when the diagonal stands out,
    independent of the matrix' overall scale."""
    m = matrix.double()
    n = m.shape[0]
    off = ~torch.eye(n, dtype=torch.bool)
    rms = m.pow(2).mean().sqrt()
    return float((m.diagonal().mean() - m[off].mean()) / rms) if rms > 0 else float("nan")


@torch.no_grad()
def eq_to_variable_scores(model: AssignAddTransformer) -> torch.Tensor:
    """[n_vars, 2] layer-1 score from `=` (at the last position) to variable v at the lhs position
    (column 0) and the rhs position (column 1): token + position embeddings on both sides."""
    task = model.config.task
    vocab = Vocab(task)
    n = task.seq_len
    query = model.W_E[vocab.eq] + model.W_pos[n - 1]
    var_emb = model.W_E[vocab.var0: vocab.var0 + task.n_vars]
    keys = torch.stack([var_emb + model.W_pos[n - 3], var_emb + model.W_pos[n - 2]], 1)  # [v, side, d]
    return (keys @ (query @ _qk(model, 0))).cpu()  # score = x_query QK x_keyᵀ


def example_batch(task, pools: dict[str, Batch] | None = None) -> Batch:
    """One sequence per query type (0-var, 1-var left, 1-var right, 2-var), the first of its kind in
    the training-pair pools, so every chapter shows the same examples."""
    pools = pools or eval_pools(task)
    source = Batch.cat([pools["0var_train"], pools["1var_train"], pools["2var_train"]])
    picks = []
    for qtype in range(len(QUERY_TYPE_NAMES)):
        hits = torch.nonzero(source.query_type == qtype).flatten()
        if len(hits):
            picks.append(int(hits[0]))
    return source[torch.tensor(picks)]


@torch.no_grad()
def attention_patterns(model: AssignAddTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """[batch, layer, q, k] attention patterns of both layers (full hooked forward)."""
    names = [f"blocks.{i}.attn.hook_pattern" for i in range(len(model.blocks))]
    _, cache = model.run_with_cache(tokens.to(model.W_E.device), names_filter=lambda name: name in names)
    return torch.stack([cache[name][:, 0] for name in names], 1).float().cpu()


def token_labels(task, tokens: torch.Tensor) -> list[str]:
    """Axis labels 'pos:token' for one sequence (positions keep repeated tokens apart)."""
    vocab = Vocab(task)
    return [f"{i}:{vocab.names[int(t)]}" for i, t in enumerate(tokens)]
