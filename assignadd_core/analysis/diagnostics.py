"""Read-outs behind the paper's remaining figures (the appendix diagnostics):

* `eq_query_decomposition`: the layer-1 score from `=` to a variable at an operand position, split into its
  token·token, token·position, position·token and position·position parts (what the refinement changes).
* `token_maps`: `W_E · OV · W_Eᵀ` and `W_E · QK · W_Eᵀ` of a layer over chosen token groups.
* `number_embedding_pca`: the number embeddings projected on their top principal components (circles for the
  key frequencies in a Fourier-feature model).
* `fourier_plane`: the number embeddings projected on the plane of one frequency k (the cos and sin parts of
  their discrete Fourier transform at k), with how much of their variance it holds, how round the points lie
  and whether they go round in the order 2πkn/N; `shuffled_plane_null` gives the same statistics after
  shuffling which embedding belongs to which number.
* `probe_table`: linear probes for the variable identity and the value at value tokens, after each layer.
"""
from __future__ import annotations

import numpy as np
import torch
import pandas as pd

from ..measure import roles
from ..core.data import Batch, Vocab
from ..measure.measures import probe_accuracy, value_positions
from ..core.model import AssignAddTransformer

DECOMPOSITION_PARTS = ("token·token", "token·position", "position·token", "position·position")


@torch.no_grad()
def eq_query_decomposition(model: AssignAddTransformer) -> dict[str, torch.Tensor]:
    """{part: [n_vars, 2]}: the four bilinear parts of the layer-1 score from `=` (token `=` at the last
    position) to variable v at the lhs position (column 0) and the rhs position (column 1). They add up to
    `circuits.eq_to_variable_scores`."""
    task = model.config.task
    vocab = Vocab(task)
    n = task.seq_len
    qk = roles.bilinear(model, roles.COPY)
    e_eq, p_eq = model.W_E[vocab.eq], model.W_pos[n - 1]
    e_var = model.W_E[vocab.var0: vocab.var0 + task.n_vars]
    p_keys = model.W_pos[list(task.operand_positions)]  # lhs, rhs
    tt = (e_var @ (e_eq @ qk))[:, None].expand(-1, 2)
    tp = (p_keys @ (e_eq @ qk))[None, :].expand(task.n_vars, -1)
    pt = (e_var @ (p_eq @ qk))[:, None].expand(-1, 2)
    pp = (p_keys @ (p_eq @ qk))[None, :].expand(task.n_vars, -1)
    return {name: part.cpu().clone() for name, part in zip(DECOMPOSITION_PARTS, (tt, tp, pt, pp))}


@torch.no_grad()
def token_maps(model: AssignAddTransformer, layer: int | str, queries: torch.Tensor, keys: torch.Tensor) -> dict:
    """{"OV": W_E[q] OV W_E[k]ᵀ, "QK": W_E[q] QK W_E[k]ᵀ} of one head, rows = `queries`, columns = `keys`
    (token ids); OV rows read "what attending to token q writes, seen along token k's embedding". `layer`: a role
    ("copy", "lookup") or a block index (its head that plays a role there, `roles.block_head`)."""
    if isinstance(layer, str):
        layer, head = roles.block(model, layer), roles.head(model, layer)
    else:
        head = roles.block_head(model, layer)
    e_q, e_k = model.W_E[queries], model.W_E[keys]
    qk = model.attention_bilinear(layer, head)
    return {"OV": (e_q @ model.OV[layer, head].AB @ e_k.T).cpu(), "QK": (e_q @ qk @ e_k.T).cpu()}


@torch.no_grad()
def number_embedding_pca(model: AssignAddTransformer, n_components: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates [N, n_components], explained variance ratios) of the centred number embeddings."""
    e = model.W_E[: model.config.task.modulus].double().cpu()
    e = e - e.mean(0)
    _, s, vh = torch.linalg.svd(e, full_matrices=False)
    ratio = (s ** 2 / (s ** 2).sum())[:n_components]
    return (e @ vh[:n_components].T).numpy(), ratio.numpy()


@torch.no_grad()
def fourier_plane(model: AssignAddTransformer, k: int, embeddings: np.ndarray | None = None) -> dict:
    """The centred number embeddings on the plane of frequency k: {"coords" [N, 2], "variance_share",
    "radius_spread" (std/mean of the distance to the centre), "order" (|mean_n exp(i(θ_n ∓ 2πkn/N))|, the
    better sense of rotation: 1 when the numbers go round k times in their own order)}.

    The plane is spanned by Σ_n cos(2πkn/N) e_n and Σ_n sin(2πkn/N) e_n (axis 1 along the first, axis 2 the
    rest of the second): the directions in which the embedding carries frequency k. The variance share is
    frequency k's share of the embedding's power (as in the Fourier chapter's spectrum). A PCA mixes the planes of frequencies of nearly equal
    power; this plane does not. With d_model ≥ N even noise has a plane for every k, so compare the order
    with `shuffled_plane_null`."""
    e = (model.W_E[: model.config.task.modulus].double().cpu().numpy() if embeddings is None
         else np.asarray(embeddings, dtype=np.float64))
    n = e.shape[0]
    if not 1 <= k <= (n - 1) // 2:
        raise ValueError(f"frequency k must be in 1..{(n - 1) // 2}, got {k}")
    e = e - e.mean(0)
    angle = 2 * np.pi * k * np.arange(n) / n
    parts = e.T @ np.stack([np.cos(angle), np.sin(angle)], axis=1)  # [d, 2]: the DFT at k, real and imaginary
    basis, r = np.linalg.qr(parts)
    coords = e @ (basis * np.sign(np.diag(r)))
    z = coords[:, 0] + 1j * coords[:, 1]
    order = max(float(np.abs(np.mean(np.exp(1j * (np.angle(z) - sign * angle))))) for sign in (1, -1))
    power = 2 * (parts ** 2).sum() / n  # frequency k's part of Σ_n |e_n|² (Parseval)
    return {"coords": coords, "variance_share": float(power / (e ** 2).sum()),
            "radius_spread": float(np.abs(z).std() / np.abs(z).mean()), "order": order}


@torch.no_grad()
def shuffled_plane_null(model: AssignAddTransformer, k: int, n_shuffles: int = 200, seed: int = 0) -> dict:
    """Median and 99th percentile of `fourier_plane`'s variance share and order when the embeddings are
    handed to the numbers in a random order: what the statistics give when nothing ties a number's
    embedding to its value."""
    e = model.W_E[: model.config.task.modulus].double().cpu().numpy()
    rng = np.random.default_rng(seed)
    stats = [fourier_plane(model, k, e[rng.permutation(len(e))]) for _ in range(n_shuffles)]
    out = {}
    for key in ("variance_share", "order"):
        values = np.array([s[key] for s in stats])
        out[key] = {"median": float(np.median(values)), "p99": float(np.quantile(values, 0.99))}
    return out


@torch.no_grad()
def probe_table(model: AssignAddTransformer, batch: Batch, hooks: tuple[str, ...] | None = None) -> "pd.DataFrame":
    """Held-out accuracy of ridge linear probes at the prefix value tokens, per residual-stream point (default:
    before and after the copy head's block, layer 1): which variable precedes the token (n_vars classes) and which
    number it is (N classes). Before layer 1 the stream holds the token and its position, not the variable; after
    layer 1 both should be readable."""
    hooks = hooks or (roles.hook(model, "resid_pre", roles.COPY), roles.hook(model, "resid_post", roles.COPY))
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


# ---------------------------------------------------------------------------- the appendix chapter's readings
def ov_diagonal(ov: torch.Tensor) -> dict:
    """A number-to-number OV map's mean diagonal and mean off-diagonal, and whether it moves numbers unchanged (the
    diagonal above zero and the rest below, or the diagonal clearly above the rest)."""
    diag = float(torch.diagonal(ov).mean())
    off = float(ov[~torch.eye(ov.shape[0], dtype=torch.bool)].mean())
    return {"diagonal": diag, "off": off, "moves": diag > 0 > off or diag > off + 1}


def pca_rings(coords: np.ndarray, ratio: np.ndarray, pcs=(0, 2, 4)) -> dict:
    """Each plane of principal components (pcs[i], pcs[i] + 1): its share of the variance and its radius spread (the
    standard deviation of the distance to the centre over its mean); a clean circle has a spread near 0."""
    spreads = [float(np.hypot(coords[:, pc], coords[:, pc + 1]).std() / np.hypot(coords[:, pc], coords[:, pc + 1]).mean())
               for pc in pcs]
    return {"shares": [float(ratio[pc] + ratio[pc + 1]) for pc in pcs], "spreads": spreads}


def plane_table(model: AssignAddTransformer, ks, extra: int | None = None) -> "pd.DataFrame":
    """One row per frequency (`ks`, then `extra`, the weakest, for contrast): its plane's share of the power, order and
    radius spread, beside the shuffled embeddings' 99th percentiles (`shuffled_plane_null`)."""
    import pandas as pd
    rows = []
    for k in [*ks, *([extra] if extra is not None and extra not in ks else [])]:
        plane, null = fourier_plane(model, k), shuffled_plane_null(model, k)
        rows.append({"frequency": k, "power share": plane["variance_share"], "null 99th pct": null["variance_share"]["p99"],
                     "order": plane["order"], "order null 99th pct": null["order"]["p99"],
                     "radius spread": plane["radius_spread"], "order null median": null["order"]["median"]})
    return pd.DataFrame(rows).set_index("frequency")


def repaired_at(values, level: float) -> int | None:
    """The first checkpoint (of a series by step) from which the accuracy stays at or above `level` to the end; None
    when it never does."""
    low = [int(s) for s, v in values.items() if v < level]
    later = [int(s) for s in values.index if not low or int(s) > max(low)]
    return min(later) if later else None
