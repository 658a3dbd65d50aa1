"""Progress measures (book/protocol.md, "Progress measures"): cheap mechanistic read-outs that make the training phases visible.

1–3 read the weights only; 4–7 read the activations of a fixed measurement batch (the first
rows of every evaluation pool). Each returns a fraction in [0, 1] (NaN where undefined). "Layer 1" and
"layer 2" below are the paper's names of the copy and lookup heads (`roles`): the measures read the heads and
the MLP that play those roles, in any declared shape.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import torch.nn.functional as F

from . import roles
from ..core.config import TaskConfig
from ..core.data import Batch, Vocab, eval_pools
from ..core.model import AssignAddTransformer

MEASURE_NAMES = (
    "m1_addition_module",  # OV2(e_a) + OV2(e_b) through MLP2 and W_U gives (a + b) mod N
    "m2_l1_prev_token_qk",  # positional QK of layer 1 peaks on the previous position
    "m3_l2_var_identity_qk",  # layer-2 QK on OV1-copied variable embeddings is diagonal
    "m4_l1_eq_to_operands",  # layer-1 attention from `=` has its top 2 on positions 13, 14
    "m5_l1_value_prev_token",  # layer-1 attention from each prefix value token peaks on its variable
    "m6_l2_eq_to_values",  # layer-2 attention from `=` has its top 2 on the operand values
    "m7_probe_var_identity",  # linear probe on the layer-1 residual at value tokens recovers the variable
)
PROBE = MEASURE_NAMES[-1]  # measure 7, the linear probe: slower, logged every `probe_every` steps only
MEASUREMENT_ROWS_PER_POOL = 256


def operand_pairs(modulus: int) -> torch.Tensor:
    """Every ordered operand pair (n1, n2), n1-major: [N², 2]."""
    grid = torch.arange(modulus)
    return torch.stack([grid.repeat_interleave(modulus), grid.repeat(modulus)], 1)


@torch.no_grad()
def two_operand_input(model: AssignAddTransformer, lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    """[B, d] OV2(W_E[lhs]) + OV2(W_E[rhs]): the layer-2 attention output with equal weight on two clean
    operand embeddings, i.e. the addition module's input read from the weights only (measure 1, C6, C7)."""
    ov = model.W_E[: model.config.task.modulus] @ roles.ov(model, roles.LOOKUP).AB  # the head that fetches values
    return ov[lhs.to(ov.device)] + ov[rhs.to(ov.device)]


@torch.no_grad()
def addition_module_accuracy(model: AssignAddTransformer) -> float:
    """Measure 1: the layer-2 MLP + unembedding alone, fed `two_operand_input` for every (a, b).

    The residual is included (logits = (x + MLP(x)) W_U); with no biases the argmax does not
    depend on the attention weights' scale, so the sum stands for an even split over both operands.
    """
    pairs = operand_pairs(model.config.task.modulus)
    x = two_operand_input(model, pairs[:, 0], pairs[:, 1])
    mlp = roles.addition_mlp(model)
    logits = (x + torch.relu(x @ mlp.W_in) @ mlp.W_out) @ model.W_U
    target = pairs.sum(1) % model.config.task.modulus
    return float((logits.argmax(-1).cpu() == target).float().mean())


@torch.no_grad()
def positional_qk_map(model: AssignAddTransformer, n_pos: int | None = None, causal: bool = True) -> torch.Tensor:
    """[q, k] layer-1 (copy head) score (with the 1/sqrt(d_head) scale) between positional embeddings of the prefix
    (default: positions 0..11); keys after the query are NaN when `causal` (the model never sees them)."""
    n_pos = n_pos or model.config.task.prefix_len
    pos = model.W_pos[:n_pos]
    scores = (pos @ roles.bilinear(model, roles.COPY) @ pos.T).cpu()
    if causal:
        scores = scores.masked_fill(~torch.ones(n_pos, n_pos, dtype=torch.bool).tril(), float("nan"))
    return scores


def previous_token_rows(qk_map: torch.Tensor) -> torch.Tensor:
    """Bool [q-1], measure 2 row by row: for each query q >= 1, among the earlier keys with key q-2
    left out (as book/protocol.md defines the measure), is q-1 the largest score?"""
    hits = []
    for q in range(1, qk_map.shape[0]):
        row = torch.nan_to_num(qk_map[q, :q].clone(), nan=float("-inf"))
        if q >= 2:
            row[q - 2] = float("-inf")
        hits.append(int(row.argmax()) == q - 1)
    return torch.tensor(hits)


def previous_token_qk_score(model: AssignAddTransformer) -> float:
    """Measure 2: the fraction of `previous_token_rows` of the positional layer-1 QK map."""
    rows = previous_token_rows(positional_qk_map(model))
    return int(rows.sum()) / len(rows)


@torch.no_grad()
def variable_copies(model: AssignAddTransformer) -> torch.Tensor:
    """U [n_vars, d]: u_v = W_E[v] OV1, each variable's identity as layer 1 copies it onto the next position."""
    var0, n_vars = Vocab(model.config.task).var0, model.config.task.n_vars
    return model.W_E[var0: var0 + n_vars] @ roles.ov(model, roles.COPY).AB


@torch.no_grad()
def variable_qk_map(model: AssignAddTransformer) -> torch.Tensor:
    """[n_vars, n_vars]: u_v QK2 u_v'ᵀ (u = `variable_copies`, no 1/sqrt(d_head) scale), query variable v
    against key variable v'."""
    copied = variable_copies(model)
    return (copied @ roles.qk(model, roles.LOOKUP).AB @ copied.T).cpu()


def identity_rows(qk_map: torch.Tensor) -> torch.Tensor:
    """Bool [n]: does each row of a square map peak on its diagonal?"""
    return qk_map.argmax(-1) == torch.arange(qk_map.shape[0])


def variable_identity_score(model: AssignAddTransformer) -> float:
    """Measure 3: the fraction of `identity_rows` of the variable QK map."""
    return float(identity_rows(variable_qk_map(model)).float().mean())


@functools.lru_cache(maxsize=8)
def measurement_batch(task: TaskConfig) -> Batch:
    """The first rows of every evaluation pool: a fixed, mixed batch for the activation measures."""
    return Batch.cat([pool[:MEASUREMENT_ROWS_PER_POOL] for pool in eval_pools(task).values()])


def top2_match(pattern: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    top = pattern.topk(2, dim=-1).indices
    return ((top == a[:, None]).any(-1) & (top == b[:, None]).any(-1))


def eq_attends_to_operands(eq_rows: torch.Tensor, task: TaskConfig) -> torch.Tensor:
    """Bool [B]: the top 2 of each attention row from `=` are the query's two operand positions (measure 4)."""
    lhs, rhs = (torch.full((eq_rows.shape[0],), position) for position in task.operand_positions)
    return top2_match(eq_rows, lhs, rhs)


def value_positions(batch: Batch, task: TaskConfig) -> torch.Tensor:
    """Bool [B, seq_len]: prefix positions holding an assigned value (a number right after a variable)."""
    vocab = Vocab(task)
    tokens = batch.tokens[:, : task.prefix_len]
    is_var = tokens >= vocab.var0
    mask = torch.zeros_like(batch.tokens, dtype=torch.bool)
    mask[:, 1: task.prefix_len] = is_var[:, :-1]
    return mask


class RoleActivations(NamedTuple):
    copy_pattern: torch.Tensor  # the copy head's attention [batch, query pos, key pos]
    lookup_pattern: torch.Tensor  # the lookup head's attention from `=` [batch, key pos]
    copied_resid: torch.Tensor  # the residual stream after the copy head's block's attention [batch, pos, d_model]


class FusedOutput(NamedTuple):
    logits: torch.Tensor  # [batch, N] at `=`
    pattern1: torch.Tensor  # layer-1 attention [batch, query pos, key pos]
    pattern2: torch.Tensor  # layer-2 attention from `=` [batch, key pos]
    resid_mid0: torch.Tensor  # residual stream after layer-1 attention [batch, pos, d_model]


def fused_forward(model: AssignAddTransformer, tokens: torch.Tensor) -> FusedOutput:
    """The model's fused path (`_fused`): logits at `=` plus the few activations the progress measures read (the
    paper's shape only)."""
    if not model.config.model.paper_shape:
        raise ValueError("fused_forward needs the paper's shape (2 layers, 1 head, an MLP in block 1)")
    logits, pattern1, pattern2 = model._fused(tokens)
    a1 = model.blocks[0].attn
    x0 = F.embedding(tokens, model.embed.W_E) + model.pos_embed.W_pos[:tokens.shape[1]]
    return FusedOutput(logits=logits, pattern1=pattern1, pattern2=pattern2,
                       resid_mid0=x0 + torch.bmm(pattern1, x0 @ (a1.W_V[0] @ a1.W_O[0])))


@torch.no_grad()
def role_activations(model: AssignAddTransformer, tokens: torch.Tensor) -> RoleActivations:
    """The activations measures 4–7 read: through the fused path in the paper's shape (the same activations,
    faster), through the hooked forward in any other."""
    tokens = tokens.to(model.W_E.device)
    if model.config.model.paper_shape:
        out = fused_forward(model, tokens)
        return RoleActivations(out.pattern1, out.pattern2, out.resid_mid0)
    names = {"copy": roles.hook(model, "pattern", roles.COPY), "lookup": roles.hook(model, "pattern", roles.LOOKUP),
             "resid": roles.hook(model, "resid_mid", roles.COPY)}
    _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names.values())
    return RoleActivations(cache[names["copy"]][:, roles.head(model, roles.COPY)],
                           cache[names["lookup"]][:, roles.head(model, roles.LOOKUP), -1], cache[names["resid"]])


@torch.no_grad()
def activation_measures(model: AssignAddTransformer, batch: Batch, with_probe: bool = True) -> dict[str, float]:
    """Measures 4–7 on one batch (`role_activations`)."""
    task = model.config.task
    out = role_activations(model, batch.tokens)
    p1, p2, resid = out.copy_pattern.float().cpu(), out.lookup_pattern.float().cpu(), out.copied_resid.float().cpu()
    qtype_vars = (batch.lhs_var >= 0).long() + (batch.rhs_var >= 0).long()
    few_vars = qtype_vars <= 1
    m4 = eq_attends_to_operands(p1[few_vars, -1], task).float().mean()

    values = value_positions(batch, task)
    rows, cols = torch.nonzero(values, as_tuple=True)
    m5 = (p1[rows, cols].argmax(-1) == cols - 1).float().mean()
    m6 = top2_match(p2, batch.lhs_src, batch.rhs_src).float().mean()
    result = {"m4_l1_eq_to_operands": float(m4), "m5_l1_value_prev_token": float(m5),
              "m6_l2_eq_to_values": float(m6), "m7_probe_var_identity": float("nan")}
    if with_probe:
        labels = batch.tokens[rows, cols - 1] - Vocab(task).var0
        result["m7_probe_var_identity"] = probe_accuracy(resid[rows, cols], labels, task.n_vars)
    return result


def probe_accuracy(features: torch.Tensor, labels: torch.Tensor, n_classes: int, ridge: float = 1e-3) -> float:
    """Measure 7: a ridge-regression linear probe (one-hot targets, closed form, deterministic),
    fitted on the even rows and scored on the odd rows."""
    x = torch.cat([features.double(), torch.ones(features.shape[0], 1, dtype=torch.float64)], 1)
    y = torch.nn.functional.one_hot(labels, n_classes).double()
    fit, test = x[0::2], x[1::2]
    if fit.shape[0] == 0 or test.shape[0] == 0:
        return float("nan")
    gram = fit.T @ fit + ridge * fit.shape[0] * torch.eye(x.shape[1], dtype=torch.float64)
    weights = torch.linalg.solve(gram, fit.T @ y[0::2])
    return float(((test @ weights).argmax(-1) == labels[1::2]).double().mean())


def all_measures(model: AssignAddTransformer, with_probe: bool = True) -> dict[str, float]:
    """Every progress measure, in MEASURE_NAMES order (NaN for a model whose roles do not form the circuit, e.g. a
    1-layer model: there the measures are not defined)."""
    if not model.config.model.has_circuit:
        return {name: float("nan") for name in MEASURE_NAMES}
    result = {
        "m1_addition_module": addition_module_accuracy(model),
        "m2_l1_prev_token_qk": previous_token_qk_score(model),
        "m3_l2_var_identity_qk": variable_identity_score(model),
    }
    result.update(activation_measures(model, measurement_batch(model.config.task), with_probe))
    return {name: result[name] for name in MEASURE_NAMES}
