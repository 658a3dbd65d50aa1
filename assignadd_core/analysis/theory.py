"""The paper's theory (claim C10), measured: the gradient of the training loss with respect to the
layer-2 QK matrix, seen on the variable-identity subspace.

What is computed. W_QK2 = W_Q2 W_K2ᵀ (d × d) enters the model only through the layer-2 scores
x_q W_QK2 x_kᵀ / sqrt(d). `qk2_gradient` gets ∇_{W_QK2} L by autograd on a *folded* leaf matrix:
a hook recomputes the layer-2 scores from the layer-2 input and a leaf copy of W_QK2, so the
gradient is exact (a test checks ∇_{W_Q2} L = ∇_{W_QK2} L · W_K2). L is the training loss
(cross-entropy at `=`) on the training batches that follow a checkpoint.

The projection: with u_v = W_E[v] OV1 (what layer 1 copies from variable v onto the next position,
and from the query variables onto `=`), G[v, v'] = u_v (−∇_{W_QK2} L) u_v'ᵀ is how a small gradient
step changes the score between a query carrying v and a key carrying v'. A diagonal G means the
step raises "same variable" scores more than "other variable" ones: the associative-memory (identity)
pattern of claim C5. Caveat measured alongside: any positive-definite direction M gives a
diagonal-heavy U M Uᵀ (the Gram matrix U Uᵀ is its isotropic case), so `gradient_identity` also
reports the statistics of M = I (the `gram_*` entries).

"Layer 2" is the lookup head and "layer 1" the copy head (`roles`), whichever blocks play them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..measure import roles
from ..core.data import TrainStream
from ..measure.measures import identity_rows, variable_copies, variable_qk_map
from ..core.model import AssignAddTransformer
from .circuits import diagonal_contrast
from .controls import whitened_contrast
from ..rules.stats import bootstrap_mean_interval


def folded_qk2(model: AssignAddTransformer) -> torch.Tensor:
    """W_QK2 = W_Q2 W_K2ᵀ of the lookup head, whose QK matrix the theory is about."""
    return roles.qk(model, roles.LOOKUP).AB.detach()


def qk2_gradient(model: AssignAddTransformer, tokens: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """∇_{W_QK2} L [d, d] of the mean cross-entropy at `=` (autograd through a folded leaf W_QK2)."""
    device = model.W_E.device
    attn, head = roles.attention(model, roles.LOOKUP), roles.head(model, roles.LOOKUP)
    qk = folded_qk2(model).clone().requires_grad_(True)
    stash = {}

    def keep_input(act, hook):
        stash["x"] = act
        return act

    def refold_scores(scores, hook):  # the lookup head's scores from the leaf; the block's other heads as they are
        x = stash["x"]
        new = torch.einsum("bqd,de,bke->bqk", x, qk, x) * attn.scale
        n = x.shape[1]
        new = new.masked_fill(~attn.mask[:n, :n], float("-inf"))
        if scores.shape[1] == 1:
            return new[:, None]
        return torch.cat([scores[:, :head], new[:, None], scores[:, head + 1:]], 1)

    with torch.enable_grad():
        logits = model.run_with_hooks(tokens.to(device), fwd_hooks=[
            (roles.hook(model, "resid_pre", roles.LOOKUP), keep_input),
            (roles.hook(model, "attn_scores", roles.LOOKUP), refold_scores)])
        loss = F.cross_entropy(logits[:, -1].float(), answers.to(device))
        (grad,) = torch.autograd.grad(loss, qk)
    return grad.detach()


def training_batch(model: AssignAddTransformer, step: int, n_batches: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """The training batches of steps step+1 .. step+n_batches: what the optimizer sees next."""
    cfg = model.config
    stream = TrainStream(cfg.task, cfg.train.batch_size, cfg.train.stream_seed)
    parts = [stream.batch(s) for s in range(step + 1, step + 1 + n_batches)]
    return torch.cat([t for t, _ in parts]), torch.cat([a for _, a in parts])


def project(matrix: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """basis M basisᵀ: the matrix seen on pairs of basis vectors (rows = query side)."""
    return (basis.to(matrix.dtype) @ matrix @ basis.to(matrix.dtype).T).cpu()


def dominance(matrix: torch.Tensor) -> dict[str, float]:
    """Diagonal dominance of a square map: normalised contrast and fraction of rows peaking on the diagonal."""
    return {"contrast": diagonal_contrast(matrix), "diag_argmax": float(identity_rows(matrix).float().mean())}


def gradient_identity(model: AssignAddTransformer, step: int, n_batches: int = 2) -> dict:
    """At a checkpoint: G = U (−∇_{W_QK2} L) Uᵀ, its dominance, and two references: the same statistics
    for the current W_QK2 (= progress measure 3's map) and for the isotropic direction M = I (U Uᵀ)."""
    tokens, answers = training_batch(model, step, n_batches)
    grad = qk2_gradient(model, tokens, answers)
    basis = variable_copies(model)
    g = project(-grad, basis)
    eye = torch.eye(grad.shape[0], dtype=grad.dtype, device=grad.device)
    current = variable_qk_map(model)  # = project(folded_qk2(model), basis)
    out = {"step": step, "G": g}
    out.update({f"grad_{k}": v for k, v in dominance(g).items()})
    out.update({f"qk2_{k}": v for k, v in dominance(current).items()})
    out.update({f"gram_{k}": v for k, v in dominance(project(eye, basis)).items()})
    out["grad_norm"] = float(grad.norm())
    out["grad_white_contrast"] = whitened_contrast(-grad, basis)
    # How much of the gradient (Frobenius norm) lies in span{u_v ⊗ u_v'}: project both sides onto span{u_v}.
    q, _ = torch.linalg.qr(basis.T.double())
    inside = q.T @ (-grad.double()) @ q
    out["grad_fraction_in_subspace"] = float(inside.norm() / grad.double().norm()) if grad.norm() > 0 else float("nan")
    return out


def first_step(steps, values, threshold: float) -> int | None:
    """The first step whose value reaches the threshold (None if never)."""
    for step, value in zip(steps, values):
        if value >= threshold:
            return int(step)
    return None


STAT_COLUMNS = ("grad_contrast", "grad_diag_argmax", "qk2_contrast", "qk2_diag_argmax", "gram_contrast",
                "gram_diag_argmax", "grad_norm", "grad_fraction_in_subspace", "grad_white_contrast")


def update_white_contrast(model: AssignAddTransformer, later: AssignAddTransformer) -> float:
    """The whitened contrast of the step actually taken between two checkpoints: W_QK2 at `later` minus W_QK2 at
    `model` (the AdamW updates in between, weight decay included), seen on `model`'s variable copies."""
    with torch.no_grad():
        return whitened_contrast(folded_qk2(later) - folded_qk2(model), variable_copies(model))


def maps_from_table(table) -> torch.Tensor:
    """The G matrices stored in a table's G_i_j columns: [rows, n, n]."""
    cols = [c for c in table.columns if c.startswith("G_")]
    n = int(round(len(cols) ** 0.5))
    return torch.tensor(table[[f"G_{i}_{j}" for i in range(n) for j in range(n)]].to_numpy()).reshape(-1, n, n)


def c10_summary(table, metrics, copy_level: float = 0.95, rise_level: float = 0.5, eq_level: float = 0.9) -> dict:
    """Split the checkpoints into 'before layer 1 copies' (measure 5 < copy_level) and the pre-rise window
    (measure 5 >= copy_level and measure 4 >= eq_level — layer 1 copies variables onto the values and `=`
    attends to the operands — while measure 3 has not yet reached rise_level); per window: share of
    checkpoints whose G favours the diagonal (contrast > 0), mean contrast, the dominance of the window's
    mean G, and the 95 % bootstrap intervals (over checkpoints) of the mean whitened contrast of the
    gradient and of the update."""
    by_step = metrics.set_index("step")
    m3, m4, m5 = (by_step[c] for c in ("m3_l2_var_identity_qk", "m4_l1_eq_to_operands", "m5_l1_value_prev_token"))
    rise = first_step(m3.index, m3.values, rise_level)
    steps = table["step"]
    copying = (steps.map(m5).fillna(0) >= copy_level) & (steps.map(m4).fillna(0) >= eq_level)
    before_rise = steps < rise if rise is not None else steps == steps
    not_copying = steps.map(m5).fillna(0) < copy_level
    windows = {"before_copying": not_copying & before_rise, "pre_rise": copying & before_rise}
    maps = maps_from_table(table)
    out = {"m3_rise_step": rise, "copy_step": first_step(m5.index, m5.values, copy_level),
           "eq_step": first_step(m4.index, m4.values, eq_level)}
    for name, mask in windows.items():
        mask = mask.to_numpy().copy()
        part = table[mask]
        out[f"{name}_n"] = int(mask.sum())
        if mask.sum() == 0:
            continue
        out[f"{name}_steps"] = (int(part["step"].min()), int(part["step"].max()))
        out[f"{name}_share_positive"] = float((part["grad_contrast"] > 0).mean())
        out[f"{name}_mean_contrast"] = float(part["grad_contrast"].mean())
        mean_map = maps[torch.as_tensor(mask)].mean(0)
        out[f"{name}_mean_G"] = mean_map
        out.update({f"{name}_mean_G_{k}": v for k, v in dominance(mean_map).items()})
        for column in ("grad_white_contrast", "update_white_contrast"):
            if column in part:
                out[f"{name}_{column}_mean"] = float(part[column].mean())
                out[f"{name}_{column}_ci"] = bootstrap_mean_interval(part[column])
    return out

