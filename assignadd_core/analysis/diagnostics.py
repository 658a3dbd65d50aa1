"""Read-outs behind the paper's remaining figures (the appendix diagnostics):

* `eq_query_decomposition`: the layer-1 score from `=` to a variable at an operand position, split into its
  token·token, token·position, position·token and position·position parts (what the refinement changes).
* `token_maps`: `W_E · OV · W_Eᵀ` and `W_E · QK · W_Eᵀ` of a layer over chosen token groups.
* `number_embedding_pca`: the number embeddings projected on their top principal components (circles for the
  key frequencies in a Fourier-feature model).
* `probe_table`: linear probes for the variable identity and the value at value tokens, after each layer.
"""
from __future__ import annotations

import numpy as np
import torch

from ..data import Batch, Vocab
from ..measures import probe_accuracy, value_positions
from ..model import AssignAddTransformer

DECOMPOSITION_PARTS = ("token·token", "token·position", "position·token", "position·position")


@torch.no_grad()
def eq_query_decomposition(model: AssignAddTransformer) -> dict[str, torch.Tensor]:
    """{part: [n_vars, 2]}: the four bilinear parts of the layer-1 score from `=` (token `=` at the last
    position) to variable v at the lhs position (column 0) and the rhs position (column 1). They add up to
    `circuits.eq_to_variable_scores`."""
    task = model.config.task
    vocab = Vocab(task)
    n = task.seq_len
    qk = model.QK[0, 0].AB * model.blocks[0].attn.scale
    e_eq, p_eq = model.W_E[vocab.eq], model.W_pos[n - 1]
    e_var = model.W_E[vocab.var0: vocab.var0 + task.n_vars]
    p_keys = torch.stack([model.W_pos[n - 3], model.W_pos[n - 2]])  # lhs, rhs
    tt = (e_var @ (e_eq @ qk))[:, None].expand(-1, 2)
    tp = (p_keys @ (e_eq @ qk))[None, :].expand(task.n_vars, -1)
    pt = (e_var @ (p_eq @ qk))[:, None].expand(-1, 2)
    pp = (p_keys @ (p_eq @ qk))[None, :].expand(task.n_vars, -1)
    return {name: part.cpu().clone() for name, part in zip(DECOMPOSITION_PARTS, (tt, tp, pt, pp))}


@torch.no_grad()
def token_maps(model: AssignAddTransformer, layer: int, queries: torch.Tensor, keys: torch.Tensor) -> dict:
    """{"OV": W_E[q] OV W_E[k]ᵀ, "QK": W_E[q] QK W_E[k]ᵀ} of one layer, rows = `queries`, columns = `keys`
    (token ids); OV rows read "what attending to token q writes, seen along token k's embedding"."""
    e_q, e_k = model.W_E[queries], model.W_E[keys]
    qk = model.QK[layer, 0].AB * model.blocks[layer].attn.scale
    return {"OV": (e_q @ model.OV[layer, 0].AB @ e_k.T).cpu(), "QK": (e_q @ qk @ e_k.T).cpu()}


@torch.no_grad()
def number_embedding_pca(model: AssignAddTransformer, n_components: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates [N, n_components], explained variance ratios) of the centred number embeddings."""
    e = model.W_E[: model.config.task.modulus].double().cpu()
    e = e - e.mean(0)
    _, s, vh = torch.linalg.svd(e, full_matrices=False)
    ratio = (s ** 2 / (s ** 2).sum())[:n_components]
    return (e @ vh[:n_components].T).numpy(), ratio.numpy()


@torch.no_grad()
def probe_table(model: AssignAddTransformer, batch: Batch,
                hooks: tuple[str, ...] = ("blocks.0.hook_resid_pre", "blocks.0.hook_resid_post")) -> "pd.DataFrame":
    """Held-out accuracy of ridge linear probes at the prefix value tokens, per residual-stream point:
    which variable precedes the token (12 classes) and which number it is (N classes). Before layer 1 the
    stream holds the token and its position, not the variable; after layer 1 both should be readable."""
    import pandas as pd
    task = model.config.task
    vocab = Vocab(task)
    mask = value_positions(batch, task)
    rows_, cols = torch.nonzero(mask, as_tuple=True)
    variable = batch.tokens[rows_, cols - 1] - vocab.var0
    number = batch.tokens[rows_, cols]
    _, cache = model.run_with_cache(batch.tokens.to(model.W_E.device), names_filter=lambda name: name in hooks)
    out = []
    for hook in hooks:
        features = cache[hook][rows_, cols].float().cpu()
        out.append({"point": hook, "variable identity": probe_accuracy(features, variable, task.n_vars),
                    "value": probe_accuracy(features, number, task.modulus), "n": int(len(features))})
    return pd.DataFrame(out).set_index("point")
